"""Test-session settings. One torch thread per process: tests start subprocesses (torchrun ranks, CLI runs,
sandboxed tools) next to the test process on 2 cores, and oversubscribed intra-op threads spin-wait for each
other — measured here at several times slower than one thread each."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # inherited by every subprocess a test starts
# chat / fix / eval without --model use $ICLAW_MODEL: the tiny `demo` models the tests publish. test_builtin.py
# unsets it to exercise the real default, the shipped policy.
os.environ["ICLAW_MODEL"] = "demo"

import torch  # noqa: E402

torch.set_num_threads(1)

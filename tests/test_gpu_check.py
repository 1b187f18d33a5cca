"""benchmarks/gpu_check.py keeps working: its CPU dry run (tiny shapes, gloo) prints every row, and a failing
check ends the run with one line naming it and exit code 1."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
ROWS = [
    ("ddp", "world 1"),
    ("sample", "tiny-1x32"),
    ("sft", "tiny-1x32"),
    ("grpo", "tiny-1x32"),
    ("sample", "tiny-2x64"),
    ("sft", "tiny-2x64"),
    ("grpo", "tiny-2x64"),
    ("distill-sampled", "tiny-1x32<-tiny-2x64"),
    ("distill-full", "tiny-1x32<-tiny-2x64"),
    ("pretrain", "tiny"),
]


def gpu_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--dry-run", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_dry_run_prints_every_check_ok():
    p = gpu_check()
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert cells(lines[1], lines[2]) == ["check", "shape", "speed", "peak mem", "status"]
    body = [cells(line, lines[2]) for line in lines[3:-1]]
    assert [(r[0], r[1]) for r in body] == ROWS
    assert all(r[-1] == "ok" and r[2] for r in body), p.stdout
    assert lines[-1].startswith("gpu_check: all checks passed in ")
    assert "tok/s, unknown peak" in body[-1][2]  # a CPU is not in the peak table


def cells(line: str, rule: str) -> list[str]:
    """A table row cut at the columns of the dashed rule under the header."""
    starts = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")]
    return [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]


@pytest.mark.skipif(torch.distributed.is_nccl_available(), reason="nccl is built in here: the check may pass")
def test_a_failing_check_is_one_line_and_exit_code_1():
    p = gpu_check("--only", "ddp", "--backend", "nccl")
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1].split()[:2] == ["ddp", "world"] and p.stdout.rstrip().endswith("FAIL")
    failed = [line for line in p.stderr.splitlines() if line.startswith("gpu_check: FAILED")]
    assert failed == [p.stderr.strip().splitlines()[-1]], (
        p.stderr
    )  # one line, the last (torch may warn first)
    assert (
        failed[0].startswith("gpu_check: FAILED ddp world 1: RuntimeError: ") and "Traceback" not in p.stderr
    )

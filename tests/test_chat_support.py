"""Shared helpers for the chat / fix tests (no tests here): tiny models published into a temporary
ICLAW_HOME, a "bash emitter" policy trained in-process for a few steps, and a small pty driver.

The emitter exists because an untrained GPT almost never writes `<|bash|>...<|end|>`, so with it alone the
confirm / edit / verify paths would never run. Overfitting one demonstration (the exact request chat builds
for `ehco hi`, then `echo hi`, then done) takes a few seconds on two cores and makes greedy sampling
deterministic.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import torch
from prompt_toolkit.output import DummyOutput

from iclaw.agent.protocol import (
    action_tokens,
    format_output,
    format_request,
    observation_tokens,
    request_tokens,
)
from iclaw.model import registry
from iclaw.model.gpt import GPT, preset
from iclaw.tools.sandbox import Sandbox

TINY = dict(n_layer=1, n_head=2, n_embd=32, block_size=256)
BROKEN, FIXED = "ehco hi", "echo hi"


def tiny_model(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(preset("tiny", **TINY))


@lru_cache(maxsize=1)
def _emitter_state() -> dict:
    """Weights of a tiny GPT that answers the `ehco hi` request with `<|bash|>echo hi<|end|>`, then `<|done|>`."""
    sandbox = Sandbox(workspace=True)
    with tempfile.TemporaryDirectory() as d:
        broken, fixed = sandbox.run("bash", BROKEN, d), sandbox.run("bash", FIXED, d)
    request = format_request(
        "bash", BROKEN, format_output(broken.stdout, broken.stderr, broken.exit_code, 300)
    )
    parts = [
        (request_tokens(request), 0),
        (action_tokens("bash", FIXED), 1),
        (observation_tokens(format_output(fixed.stdout, fixed.stderr, fixed.exit_code, 300)), 0),
        (action_tokens("done", None), 1),
    ]
    toks = [t for p, _ in parts for t in p]
    mask = [m for p, m in parts for _ in p]
    model = tiny_model(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.tensor([toks[:-1]])
    where = torch.tensor([i for i, m in enumerate(mask[1:]) if m])  # loss on the policy tokens only
    y = torch.tensor(toks[1:])[where]
    with one_thread():
        for _ in range(80):
            h = model.hidden(x)[0, where]  # the 50k-wide head only at those few positions: cheap steps
            loss = torch.nn.functional.cross_entropy(model.lm_head(h), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if loss.item() < 0.02:
                break
    assert loss.item() < 0.2, f"emitter did not fit: loss {loss.item():.3f}"
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@contextmanager
def one_thread():
    """One torch thread for the block: on a busy 2-core machine, two spinning intra-op threads make these
    tiny models ~10x slower (measured), and the tests only need correctness."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def subprocess_env(home: Path, **extra: str) -> dict:
    """Environment for `python -m iclaw ...` children: the test's ICLAW_HOME, one torch thread (see above)."""
    return dict(os.environ, ICLAW_HOME=str(home), OMP_NUM_THREADS="1", TERM="xterm", COLUMNS="120", **extra)


def emitter_model() -> GPT:
    model = tiny_model(1)
    model.load_state_dict(_emitter_state())
    return model


def use_home(monkeypatch, path: Path) -> Path:
    monkeypatch.setenv("ICLAW_HOME", str(path))
    return path


def publish(name: str, model: GPT) -> str:
    return registry.publish(name, model)


def send_later(inp, keys: list[str | bytes], delay: float = 0.0) -> threading.Thread:
    """Feed keys to a prompt-toolkit pipe input from a thread (a write over the pipe's 64 KiB buffer would
    block the test thread, which is the one reading)."""

    def feed() -> None:
        if delay:
            time.sleep(delay)
        for k in keys:
            inp.send_bytes(k if isinstance(k, bytes) else k.encode("utf-8"))

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return t


class Screen(DummyOutput):
    """A prompt-toolkit output that keeps what each prompt draws, so that a test types only once the prompt
    it means is up: keys sent earlier are typed ahead, and a confirmation never takes those as its answer."""

    def __init__(self):
        self.text = ""
        self.starts: list[int] = []  # where in `text` each prompt's drawing begins

    def write(self, data: str) -> None:
        self.text += data

    write_raw = write

    def enable_bracketed_paste(self) -> None:  # once per prompt, at its first drawing (its input is attached)
        self.starts.append(len(self.text))

    def drawn(self, i: int) -> str:
        """What the i-th prompt drew so far ("" if it has not started)."""
        if i >= len(self.starts):
            return ""
        return self.text[self.starts[i] : self.starts[i + 1] if i + 1 < len(self.starts) else None]


def type_at_prompts(inp, screen: Screen, steps: list[tuple[str, object]], timeout: float = 120) -> list[str]:
    """From a thread: for the i-th (text, keys) step wait until the i-th prompt shows `text`, then type
    `keys`: a str or bytes, a float (a pause, in seconds), a callable (called then, its result typed) or a
    list of these. Returns a list that receives an error if a prompt never shows its text (the input is
    then closed, so the chat ends instead of hanging)."""
    errors: list[str] = []

    def send(keys) -> None:
        if callable(keys):
            send(keys())
        elif isinstance(keys, list):
            for k in keys:
                send(k)
        elif isinstance(keys, float):
            time.sleep(keys)
        else:
            inp.send_bytes(keys if isinstance(keys, bytes) else keys.encode("utf-8"))

    def feed() -> None:
        for i, (text, keys) in enumerate(steps):
            deadline = time.monotonic() + timeout
            while text not in screen.drawn(i):
                if time.monotonic() > deadline:
                    errors.append(f"prompt {i} never showed {text!r}; it drew {screen.drawn(i)[-300:]!r}")
                    inp.close()
                    return
                time.sleep(0.01)
            send(keys)

    threading.Thread(target=feed, daemon=True).start()
    return errors


def paste(text: str | bytes) -> bytes:
    """A terminal's bracketed paste of `text` (what a real paste into the prompt sends)."""
    body = text if isinstance(text, bytes) else text.encode("utf-8")
    return b"\x1b[200~" + body + b"\x1b[201~"


ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


class Pty:
    """A process on a pseudo-terminal: read what it prints, answer cursor-position requests as a terminal
    would (prompt-toolkit asks), type keys."""

    def __init__(self, argv: list[str], env: dict, cwd: Path):
        self.master, slave = pty.openpty()
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
        )
        os.close(slave)
        self.raw = b""

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def _read(self, timeout: float) -> bool:
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the child exited and closed the terminal
            return False
        if b"\x1b[6n" in chunk:
            os.write(self.master, b"\x1b[1;1R")
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout: float = 60.0, start: int = 0) -> re.Match:
        """Wait until `pattern` (a regex over the text, escape codes removed) appears after offset `start`."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.compile(pattern).search(self.text, start)
            if m:
                return m
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 1.0)) and self.proc.poll() is not None):
                raise AssertionError(
                    f"timed out waiting for {pattern!r}; output so far:\n{self.text[-3000:]}"
                )

    def send(self, data: str | bytes) -> None:
        os.write(self.master, data if isinstance(data, bytes) else data.encode("utf-8"))

    def close(self, timeout: float = 30.0) -> int:
        try:
            while self.proc.poll() is None and self._read(0.2):
                pass
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)


def iclaw_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "iclaw", *args]

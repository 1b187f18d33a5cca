"""Run one prepared sandbox command and record what happened (a `ToolResult`).

iclaw/tools/sandbox.py builds the argv (isolation, rlimits, cgroup); this module starts it in its own
process group and watches it until it is done: stdout and stderr read as they come and capped per stream
(a process printing forever costs CPU until the timeout, never memory), the wall clock, and the size of
the task directory. Either limit kills the whole group. Then the exit status becomes the shell's
convention: 128+N for signal N, 124 for our timeout.
"""

from __future__ import annotations

import os
import selectors
import signal as signals
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from iclaw.tools.limits import dir_over_limit, kill_group

if TYPE_CHECKING:
    from iclaw.tools.limits import Limits

TRUNCATION_MARKER = "\n[... output truncated ...]"
TIMEOUT_EXIT = 124  # what coreutils `timeout` returns; the contract uses it for "killed by our clock"
GUARD_INTERVAL_S = 0.05  # a writer at page-cache speed put 282 MiB past a 32 MiB cap between 0.2 s looks


@dataclass
class ToolResult:
    tool: str  # "bash" | "python"
    input: str  # the command / code as given
    exit_code: int  # 128+N when killed by signal N (shell convention); 124 on timeout
    stdout: str  # decoded utf-8 with errors="replace", capped
    stderr: str
    duration_ms: float
    timed_out: bool
    signal: int | None
    stdout_truncated: bool
    stderr_truncated: bool

    def to_dict(self) -> dict:
        return asdict(self)

    def row(self, turn: int, cwd) -> dict:
        """This call as a store tool_calls row (schema.TOOL_CALL_COLUMNS; store/schema.py call_rows)."""
        return self.to_dict() | {"turn": turn, "cwd": None if cwd is None else str(cwd)}


class _Capture:
    """Bytes from one pipe, kept up to `cap`; the rest is read and dropped so the writer never blocks."""

    def __init__(self, cap: int):
        self.cap = cap
        self.buf = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.buf)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.buf += chunk

    def text(self) -> str:
        s = self.buf.decode("utf-8", errors="replace")
        return s + TRUNCATION_MARKER if self.truncated else s


def execute(
    tool, code, argv, env, workdir, timeout, preexec, guard_roots, limits: Limits, level: str
) -> ToolResult:
    """Run argv to completion under `timeout` and the size guard on `guard_roots` (none: no guard)."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=workdir,
            start_new_session=True,  # own process group, no controlling terminal: killpg gets it all
            close_fds=True,
            preexec_fn=preexec,
        )
    except (OSError, ValueError) as e:
        # Model text can be unrunnable as an argv: a NUL byte, or one argument over the kernel's
        # 128 KiB limit. That is the command's failure (exit 126, "cannot execute"), not ours.
        return not_started(tool, code, f"iclaw: cannot run this {tool} input: {e}", start)
    out, err = _Capture(limits.max_output), _Capture(limits.max_output)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:  # a pidfd turns readable when the process exits, even if children still hold the pipes
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, None)
    except (AttributeError, OSError):
        pidfd = None
    guard = bool(guard_roots)
    deadline = start + timeout
    next_guard = start + GUARD_INTERVAL_S
    open_pipes, exited_at, killed_at, end = 2, None, None, None
    timed_out = over_disk = False
    try:
        while open_pipes or exited_at is None:
            now = time.monotonic()
            if killed_at is not None and now - killed_at > 1.0:
                break  # killed, and something still holds a pipe: stop waiting for it
            if exited_at is not None and killed_at is None and now - exited_at > 0.5:
                break  # exited; a detached child keeps the pipe open (level "none" only)
            if killed_at is None and now >= deadline:
                kill_group(proc.pid)
                timed_out, killed_at = True, now
            if guard and killed_at is None and exited_at is None and now >= next_guard:
                next_guard = now + GUARD_INTERVAL_S
                if dir_over_limit(guard_roots, limits.disk_bytes, limits.max_files):
                    kill_group(proc.pid)
                    over_disk, killed_at = True, now
            wait = 0.05 if killed_at is not None or exited_at is not None else deadline - now
            if guard and killed_at is None:
                wait = min(wait, max(next_guard - now, 0.0))
            if pidfd is None:
                wait = min(wait, 0.02)
            for key, _ in sel.select(max(wait, 0.0)):
                if key.data is None:  # the process exited (a zombie until we reap it below)
                    sel.unregister(pidfd)
                    exited_at = end = time.monotonic()
                    kill_group(proc.pid)  # stragglers left in the group; with bwrap already gone
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
            if pidfd is None and exited_at is None and proc.poll() is not None:
                exited_at = end = time.monotonic()
                kill_group(proc.pid)
    finally:
        if exited_at is None:
            kill_group(proc.pid)
        rc = proc.wait()
        end = end or time.monotonic()
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if pidfd is not None:
            os.close(pidfd)

    sig: int | None = None
    if timed_out:
        exit_code, sig = TIMEOUT_EXIT, signals.SIGKILL
    elif rc < 0:  # killed by a signal (level "none", or prlimit/sh killed directly)
        exit_code, sig = 128 - rc, -rc
    else:
        exit_code = rc
        # bwrap (and bash) report a child killed by signal N as 128+N.
        if level == "bwrap" and 128 < rc <= 128 + 64:
            sig = rc - 128
    stderr = err.text()
    if over_disk:
        exit_code, sig = 128 + signals.SIGKILL, signals.SIGKILL
        stderr += (
            f"\n[iclaw: files written by the call grew past {limits.disk_bytes >> 20} MiB "
            f"or {limits.max_files} entries; killed]"
        )
    return ToolResult(
        tool=tool,
        input=code,
        exit_code=int(exit_code),
        stdout=out.text(),
        stderr=stderr,
        duration_ms=round((end - start) * 1000.0, 3),
        timed_out=timed_out,
        signal=int(sig) if sig is not None else None,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
    )


def not_started(tool: str, code: str, why: str, start: float | None = None) -> ToolResult:
    """A call that never ran (exit 126, "cannot execute"), with `why` as its stderr."""
    start = time.monotonic() if start is None else start
    return ToolResult(
        tool=tool,
        input=code,
        exit_code=126,
        stdout="",
        stderr=why + "\n",
        duration_ms=round((time.monotonic() - start) * 1000.0, 3),
        timed_out=False,
        signal=None,
        stdout_truncated=False,
        stderr_truncated=False,
    )

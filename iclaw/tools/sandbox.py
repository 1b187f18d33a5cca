"""Run model-written bash and Python in a sandbox and capture what happened.

A small policy will type anything (`rm -rf ~`, `:(){ :|:& };:`, `cat /dev/urandom`), and it does so
unattended during training, so every tool call goes through here. Two levels:

  "bwrap"  bubblewrap: read-only root, one writable task directory, private /tmp, the real home
           directories hidden, a fresh HOME, no network (own network namespace), own pid namespace
           (killing bwrap tears the whole tree down), --die-with-parent, a cleared environment, and
           every capability dropped (bwrap run by root keeps them by default, and a sandboxed
           CAP_SYS_ADMIN can remount / read-write: tests/test_sandbox_escape.py checks this).
  "none"   no bubblewrap: rlimits + own process group + wall-clock timeout + clean environment only.
           Commands can read and write anything the user can. Reported loudly; training and eval
           refuse it unless the user passes --unsafe-no-sandbox (see require_safe).

Both levels add rlimits (CPU seconds, address space, processes, file size, open files), a
wall-clock timeout that SIGKILLs the whole process group, a cap on the bytes written into the task
directory, and output capped per stream while it is read (a process printing forever costs CPU
until the timeout, never memory). Where a pids cgroup is writable (we are root), each call also
gets its own cgroup with pids.max, because RLIMIT_NPROC does not apply to root and a fork bomb
could otherwise exhaust the host's pid table before the timeout fires.

Calls share no mutable state, so many can run at once (run_many: a GRPO group runs its episodes
together).

The python tool runs its code as a program called main.py. In task mode (the default) that file is
written INTO the task directory and run there as `python3 main.py`, as a user would run their own script:
the fixture's modules import, `__file__` is in the task directory, and the file stays there after the call
(a fixture's own main.py is replaced by the call's code). In workspace mode (chat, fix: the directory is
the user's real one) nothing is written there: the code file lives in the call's scratch dir (inside
bwrap it is /tmp/iclaw/main.py, read-only) and runs with the user's directory as its cwd.

This module is the public API (Sandbox, Limits, ToolResult, detect_level, require_safe) and puts one call
together; the pieces live next to it: isolation.py (the bwrap command line, the clean environment),
limits.py (rlimits, the pids cgroup, the size guard), process.py (run, watch, capture the output).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iclaw.errors import IclawError
from iclaw.tools import isolation  # as a module: a test may patch isolation.bwrap_has_size for every caller
from iclaw.tools.limits import Limits, apply_rlimits, make_cgroup, prlimit_prefix, remove_cgroup, rlimits
from iclaw.tools.process import ToolResult, execute, not_started

TOOLS = ("bash", "python")
LEVELS = ("bwrap", "none")
MAIN = "main.py"  # the python tool's program, in the task directory (task mode)


# ---------------------------------------------------------------------------------------------------
# Level detection: is bubblewrap here, and does it actually work (user namespaces may be disabled)?


@functools.cache
def detect_level() -> tuple[str, str]:
    """("bwrap", how) when a real bwrap sandbox starts here, else ("none", why not). Cached per process."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "none", "bwrap not found on PATH (install the 'bubblewrap' package)"
    probe = tempfile.mkdtemp(prefix="iclaw-probe-")
    try:
        argv = isolation.bwrap_argv(
            bwrap, Path(probe), Limits(), net=False, code_file=None, scratch=Path(probe)
        )
        argv += ["/bin/sh", "-c", "echo ok > probe && test -f probe"]
        p = subprocess.run(argv, capture_output=True, timeout=30, env=isolation.host_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return "none", f"bwrap failed: {e}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return "none", f"bwrap failed: {err[-1] if err else f'exit code {p.returncode}'}"
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    return "bwrap", f"{version or 'bwrap'} at {bwrap}; user, pid, net and mount namespaces work"


# ---------------------------------------------------------------------------------------------------


class Sandbox:
    """Runs one tool call per `run`; safe to share across threads (it holds configuration only)."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        level: str | None = None,
        net: bool = False,
        workspace: bool = False,
    ):
        self.limits = limits or Limits()
        self.net = net
        # workspace=True (chat): the user's own directory is the writable one: no size guard on it.
        self.workspace = workspace
        detected, why = detect_level()
        if level is None:
            self.level, self.reason = detected, why
        elif level == "bwrap":
            if detected != "bwrap":
                raise IclawError(f"sandbox: level 'bwrap' requested but unavailable ({why})")
            self.level, self.reason = "bwrap", why
        elif level == "none":
            self.level, self.reason = "none", "level 'none' requested explicitly"
        else:
            raise IclawError(f"sandbox: unknown level {level!r} (expected one of {', '.join(LEVELS)})")
        self._bwrap = shutil.which("bwrap") if self.level == "bwrap" else None
        self._bash = shutil.which("bash", path=isolation.SANDBOX_PATH) or "/bin/bash"
        self._python = shutil.which("python3", path=isolation.SANDBOX_PATH) or sys.executable
        self._setpriv = isolation.setpriv_with_pdeathsig() if self.level == "none" else None

    def __repr__(self) -> str:
        return f"Sandbox(level={self.level!r}, reason={self.reason!r})"

    def run(self, tool: str, code: str, workdir: str | Path, timeout: float | None = None) -> ToolResult:
        if tool not in TOOLS:
            raise IclawError(f"tool: unknown tool {tool!r} (expected one of {', '.join(TOOLS)})")
        workdir = Path(workdir).resolve()
        if not workdir.is_dir():
            raise IclawError(f"{workdir}: task directory does not exist")
        if workdir == Path("/"):
            raise IclawError("/: the task directory cannot be the root directory")
        timeout = self.limits.timeout_s if timeout is None else float(timeout)
        # The python tool's program: main.py in the task directory (task mode), or in the scratch dir
        # (workspace mode: never write into the user's real directory).
        in_workdir = tool == "python" and not self.workspace
        if in_workdir:
            why = _write_main(workdir, code)
            if why is not None:
                return not_started(tool, code, why)
        # Host-side scratch space, outside the task directory: the python tool's code file in workspace
        # mode, and at level "none" the fresh HOME and TMPDIR. On /dev/shm when possible (creating and
        # removing directories on a busy disk costs milliseconds); only made when needed; removed after.
        scratch = None
        if (tool == "python" and not in_workdir) or self.level != "bwrap" or not isolation.bwrap_has_size():
            scratch = Path(
                tempfile.mkdtemp(prefix=f"iclaw-call-{os.getpid()}-", dir=isolation.scratch_base())
            )
        cgroup = None
        try:
            code_file = None  # the scratch copy (workspace mode only)
            if tool == "python" and not in_workdir:
                code_file = scratch / "main.py"
                code_file.write_text(code, encoding="utf-8", errors="surrogateescape")
            if tool == "bash":
                prog = [self._bash, "-c", code]
            elif in_workdir:
                prog = [self._python, MAIN]  # relative: the cwd is the task directory at both levels
            else:
                prog = [self._python, isolation.SANDBOX_CODE if self.level == "bwrap" else str(code_file)]
            if self.level == "bwrap":
                argv = isolation.bwrap_argv(
                    self._bwrap, workdir, self.limits, net=self.net, code_file=code_file, scratch=scratch
                )
                argv += prog
                env = isolation.host_env()
                # The scratch dir only holds writable data when /tmp could not be a capped tmpfs.
                guard_roots = [] if isolation.bwrap_has_size() else [scratch]
            else:
                (scratch / "home").mkdir()
                (scratch / "tmp").mkdir()
                argv = list(prog)
                if self._setpriv is not None:  # no bwrap --die-with-parent here: at least the top dies
                    argv = [self._setpriv, "--pdeathsig", "KILL", "--"] + argv
                env = isolation.sandbox_env(str(scratch / "home")) | {"TMPDIR": str(scratch / "tmp")}
                guard_roots = [scratch]  # HOME and TMPDIR are real host directories here
            prefix = prlimit_prefix(self.limits)
            preexec = None
            if prefix is not None:
                argv = prefix + argv
            else:
                preexec = functools.partial(apply_rlimits, rlimits(self.limits))
            cgroup = make_cgroup(self.limits)
            if cgroup is not None:
                # Enter the cgroup before anything else runs, so every descendant is counted. If the
                # join fails the call still runs (rlimits, namespaces and the clock still apply).
                join = '{ echo $$ > "$0/cgroup.procs"; } 2>/dev/null; exec "$@"'
                argv = ["/bin/sh", "-c", join, cgroup] + argv
            if not self.workspace:  # task mode: the task dir is ours to cap; a user's workspace is not
                guard_roots.append(workdir)
            return execute(
                tool, code, argv, env, workdir, timeout, preexec, guard_roots, self.limits, self.level
            )
        finally:
            remove_cgroup(cgroup)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def run_many(
        self, calls: list[tuple[str, str, Path]], max_workers: int | None = None
    ) -> list[ToolResult]:
        """Run calls concurrently on a bounded thread pool; results come back in input order.

        Each element is (tool, code, workdir) or (tool, code, workdir, timeout)."""
        if not calls:
            return []
        workers = max(1, min(max_workers or 8, len(calls)))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="iclaw-sandbox")
        try:
            futures = [pool.submit(self.run, *call) for call in calls]
            return [f.result() for f in futures]
        finally:  # on Ctrl-C the calls already running finish (each within its timeout); queued ones never start
            pool.shutdown(wait=True, cancel_futures=True)


def _write_main(workdir: Path, code: str) -> str | None:
    """Write the python tool's code as workdir/main.py; None, or why it could not be written.

    This runs on the host, outside the sandbox, in a directory earlier calls could write to: never follow
    a link there (a `ln -s ~/.bashrc main.py` left by the policy must not make us overwrite ~/.bashrc).
    An existing main.py (the fixture's, or an earlier call's) is unlinked, and the new one is created
    exclusively, relative to a descriptor of the directory itself."""
    data = code.encode("utf-8", errors="surrogateescape")
    try:
        dfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        return f"iclaw: cannot open the task directory to write {MAIN}: {e.strerror}"
    try:
        try:  # a file or a link (never followed); a directory stays, and the create below says so
            os.unlink(MAIN, dir_fd=dfd)
        except OSError:
            pass
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(MAIN, flags, 0o644, dir_fd=dfd)
        except OSError as e:
            what = "it is a directory" if os.path.isdir(os.path.join(workdir, MAIN)) else e.strerror
            return f"iclaw: cannot write {MAIN} in the task directory: {what}"
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    finally:
        os.close(dfd)
    return None


def require_safe(sandbox: Sandbox, allow_unsafe: bool) -> None:
    """Refuse to run model-written commands without a real sandbox, unless the user said so explicitly."""
    if sandbox.level == "bwrap":
        return
    if not allow_unsafe:
        raise IclawError(
            f"sandbox level is '{sandbox.level}' ({sandbox.reason}): refusing to run model-written "
            "commands; pass --unsafe-no-sandbox to override"
        )
    print(
        f"WARNING: sandbox level is '{sandbox.level}' ({sandbox.reason}); model-written commands run "
        "with your own permissions (--unsafe-no-sandbox)",
        file=sys.stderr,
    )

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
"""

from __future__ import annotations

import functools
import os
import resource
import selectors
import shutil
import signal as signals
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from iclaw.errors import IclawError

TOOLS = ("bash", "python")
LEVELS = ("bwrap", "none")
TRUNCATION_MARKER = "\n[... output truncated ...]"
TIMEOUT_EXIT = 124  # what coreutils `timeout` returns; the contract uses it for "killed by our clock"
# The PATH inside the sandbox: system directories only, never the user's (which may point into $HOME).
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_HOME = "/tmp/home"  # inside bwrap: on the private, size-capped /tmp, fresh for every call
SANDBOX_CODE = "/tmp/iclaw/main.py"  # inside bwrap: where the python tool's code file appears (read-only)
GUARD_INTERVAL_S = 0.2  # how often a long call's task directory is measured


@dataclass
class Limits:
    timeout_s: float = 10.0  # wall clock; kills the whole process group (and with bwrap the pid namespace)
    cpu_s: int = 10  # RLIMIT_CPU
    mem_bytes: int = 1 << 30  # RLIMIT_AS
    # Processes: pids.max of the call's cgroup where we may make one, and RLIMIT_NPROC counted on top
    # of what the uid already runs (the kernel never applies RLIMIT_NPROC to root).
    nproc: int = 256
    fsize_bytes: int = 16 << 20  # RLIMIT_FSIZE: largest single file a call can write
    nofile: int = 256  # RLIMIT_NOFILE
    max_output: int = 64 * 1024  # per stream, then TRUNCATION_MARKER
    disk_bytes: int = 256 << 20  # total size of the task directory; over it the call is killed
    max_files: int = 20_000  # entries in the task directory; over it the call is killed
    tmpfs_bytes: int = 64 << 20  # size of the private /tmp (and /dev/shm) inside bwrap (it is RAM)


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
        argv = _bwrap_argv(bwrap, Path(probe), Limits(), net=False, code_file=None, scratch=Path(probe))
        argv += ["/bin/sh", "-c", "echo ok > probe && test -f probe"]
        p = subprocess.run(argv, capture_output=True, timeout=30, env=_host_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return "none", f"bwrap failed: {e}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return "none", f"bwrap failed: {err[-1] if err else f'exit code {p.returncode}'}"
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    return "bwrap", f"{version or 'bwrap'} at {bwrap}; user, pid, net and mount namespaces work"


@functools.cache
def _scratch_base() -> str:
    """/dev/shm (tmpfs: fast to create and delete in) if usable, else the default temp dir.

    Scratch dirs are named iclaw-call-<pid>-*; the first call of a process removes those of
    processes that died mid-call (their finally: never ran)."""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else tempfile.gettempdir()
    try:
        for name in os.listdir(base):
            parts = name.split("-")
            if name.startswith("iclaw-call-") and len(parts) >= 4 and parts[2].isdigit():
                if int(parts[2]) != os.getpid() and not os.path.exists(f"/proc/{parts[2]}"):
                    shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    except OSError:
        pass
    return base


def _hidden_homes() -> list[str]:
    """Directories that hold users' private files; hidden behind an empty tmpfs inside bwrap."""
    homes = {os.path.expanduser("~"), "/root", "/home"}
    return sorted(h for h in homes if h not in ("/", "") and os.path.isdir(h))


@functools.cache
def _bwrap_help() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return ""
    p = subprocess.run([bwrap, "--help"], capture_output=True, text=True)
    return p.stdout + p.stderr


def _bwrap_has(option: str) -> bool:
    return f"{option} " in _bwrap_help()


def _bwrap_has_size() -> bool:
    """bwrap >= 0.7 can cap a tmpfs (--size); older ones (Ubuntu 22.04 ships 0.6) cannot."""
    return _bwrap_has("--size")


def _bwrap_argv(
    bwrap: str, workdir: Path, limits: Limits, *, net: bool, code_file: Path | None, scratch: Path | None
) -> list[str]:
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if _bwrap_has_size():
        # Private, size-capped tmpfs for /tmp and /dev/shm: writes there are RAM, so they need a cap.
        size = str(limits.tmpfs_bytes)
        argv += ["--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm"]
    else:
        # No --size: private /tmp and /dev/shm are directories in the call's scratch dir, which the
        # size guard watches (an uncapped tmpfs would let a call fill the host's RAM).
        for sub in ("tmp", "shm"):
            (scratch / sub).mkdir(exist_ok=True)
        argv += ["--bind", str(scratch / "tmp"), "/tmp", "--bind", str(scratch / "shm"), "/dev/shm"]
    for home in _hidden_homes():  # the user's secrets (ssh keys, tokens) are not for the model
        argv += ["--tmpfs", home]
    # The task directory goes back on top (it may live under /tmp or under the hidden home).
    argv += ["--bind", str(workdir), str(workdir), "--dir", SANDBOX_HOME]
    if code_file is not None:
        argv += ["--ro-bind", str(code_file), SANDBOX_CODE]
    argv += ["--unshare-all", "--unshare-user"] + (["--share-net"] if net else [])
    # Run as (real) root, bwrap KEEPS every capability unless told otherwise, and a sandboxed root
    # with CAP_SYS_ADMIN can simply remount / read-write. Drop them all, always; and forbid nested
    # user namespaces (where a process would get a fresh set of capabilities) where bwrap can.
    argv += ["--cap-drop", "ALL"] + (["--disable-userns"] if _bwrap_has("--disable-userns") else [])
    argv += ["--die-with-parent", "--hostname", "sandbox", "--clearenv"]
    for k, v in _sandbox_env(SANDBOX_HOME).items():
        argv += ["--setenv", k, v]
    argv += ["--chdir", str(workdir), "--"]
    return argv


def _sandbox_env(home: str) -> dict[str, str]:
    # Nothing from the host environment gets in: no tokens, no proxies, no PYTHONPATH.
    return {
        "PATH": SANDBOX_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONHASHSEED": "0",  # set/dict-of-str ordering must not differ between reference and candidate
        "PYTHONDONTWRITEBYTECODE": "1",  # keep __pycache__ out of the task directory
    }


def _host_env() -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"}


# ---------------------------------------------------------------------------------------------------
# Resource limits. Applied by exec'ing through util-linux `prlimit` (no Python in the forked child,
# which is unsafe with threads); a preexec_fn is the fallback where prlimit is missing.


def _uid_task_count(uid: int) -> int:
    """Processes+threads owned by uid: RLIMIT_NPROC counts these host-wide, so the limit is relative."""
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                pass
    return n


def _rlimits(limits: Limits) -> list[tuple[int, int]]:
    # The kernel never applies RLIMIT_NPROC to host root (real uid 0), so don't pay for the count
    # there; root gets the pids cgroup and the pid namespace instead.
    uid = os.getuid()
    nproc = limits.nproc if uid == 0 else _uid_task_count(uid) + limits.nproc
    return [
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_AS, limits.mem_bytes),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits.fsize_bytes),
        (resource.RLIMIT_NOFILE, limits.nofile),
        (resource.RLIMIT_CORE, 0),
    ]


_PRLIMIT_FLAG = {
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_AS: "--as",
    resource.RLIMIT_NPROC: "--nproc",
    resource.RLIMIT_FSIZE: "--fsize",
    resource.RLIMIT_NOFILE: "--nofile",
    resource.RLIMIT_CORE: "--core",
}


def _prlimit_prefix(limits: Limits) -> list[str] | None:
    prlimit = shutil.which("prlimit", path=SANDBOX_PATH)
    if prlimit is None:
        return None
    # CPU: soft limit sends SIGXCPU, the hard limit one second later SIGKILL.
    out = [prlimit]
    for res, value in _rlimits(limits):
        hard = value + 1 if res == resource.RLIMIT_CPU else value
        out.append(f"{_PRLIMIT_FLAG[res]}={value}:{hard}")
    return out + ["--"]


# ---------------------------------------------------------------------------------------------------
# Optional pids cgroup (v1 "pids" hierarchy or v2 with the pids controller), when we may create one.


@functools.cache
def _pids_cgroup_root() -> str | None:
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        parent = os.path.join(root, "iclaw")
        try:
            if root != "/sys/fs/cgroup/pids":
                with open(os.path.join(root, "cgroup.controllers")) as f:
                    if "pids" not in f.read().split():
                        continue
                with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                    f.write("+pids")
            os.makedirs(parent, exist_ok=True)
            if root != "/sys/fs/cgroup/pids":
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+pids")
            probe = os.path.join(parent, f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            os.mkdir(probe)
            ok = os.path.exists(os.path.join(probe, "pids.max"))
            os.rmdir(probe)
            if ok:
                _sweep_stale_cgroups(parent)
                return parent
        except OSError:
            continue
    return None


def _sweep_stale_cgroups(parent: str) -> None:
    """Clean up after iclaw processes that died mid-call (e.g. killed with SIGKILL): whatever their
    calls left running (possible at level "none") is killed, and the call cgroups removed."""
    for name in os.listdir(parent):
        parts = name.split("-")
        if parts[0] != "call" or len(parts) < 3 or not parts[1].isdigit():
            continue
        if int(parts[1]) != os.getpid() and not os.path.exists(f"/proc/{parts[1]}"):
            _remove_cgroup(os.path.join(parent, name), wait_s=0.5)


def _make_cgroup(limits: Limits) -> str | None:
    parent = _pids_cgroup_root()
    if parent is None:
        return None
    path = os.path.join(parent, f"call-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(limits.nproc))
    except OSError:
        return None
    return path


def _remove_cgroup(path: str | None, wait_s: float = 2.0) -> None:
    if path is None:
        return
    delay, deadline = 0.0005, time.monotonic() + wait_s
    while True:  # the last processes of a torn-down pid namespace take a moment to be reaped
        try:
            # Anything still in the cgroup escaped the process group (setsid): kill it by pid.
            with open(os.path.join(path, "cgroup.procs")) as f:
                for pid in f.read().split():
                    _kill_pid(int(pid))
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # leave the empty-ish cgroup behind rather than hang the call
            time.sleep(delay)
            delay = min(delay * 2, 0.02)


# ---------------------------------------------------------------------------------------------------
# Task-directory size guard: RLIMIT_FSIZE caps one file; this caps the directory as a whole.


def _dir_over_limit(roots: list[Path], max_bytes: int, max_files: int) -> bool:
    used, files, stack = 0, 0, [str(r) for r in roots]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                files += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                if used > max_bytes or files > max_files:
                    return True
    return False


def _kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signals.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signals.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
        self._bash = shutil.which("bash", path=SANDBOX_PATH) or "/bin/bash"
        self._python = shutil.which("python3", path=SANDBOX_PATH) or sys.executable
        self._setpriv = _setpriv_with_pdeathsig() if self.level == "none" else None

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
        # Host-side scratch space, outside the task directory: the python tool's code file, and at
        # level "none" the fresh HOME and TMPDIR. On /dev/shm when possible (creating and removing
        # directories on a busy disk costs milliseconds); only made when needed; removed after.
        scratch = None
        if tool == "python" or self.level != "bwrap" or not _bwrap_has_size():
            scratch = Path(tempfile.mkdtemp(prefix=f"iclaw-call-{os.getpid()}-", dir=_scratch_base()))
        cgroup = None
        try:
            code_file = None
            if tool == "python":
                code_file = scratch / "main.py"
                code_file.write_text(code, encoding="utf-8", errors="surrogateescape")
            if self.level == "bwrap":
                prog = [self._bash, "-c", code] if tool == "bash" else [self._python, SANDBOX_CODE]
                argv = _bwrap_argv(
                    self._bwrap, workdir, self.limits, net=self.net, code_file=code_file, scratch=scratch
                )
                argv += prog
                env = _host_env()
                # The scratch dir only holds writable data when /tmp could not be a capped tmpfs.
                guard_roots = [] if _bwrap_has_size() else [scratch]
            else:
                (scratch / "home").mkdir()
                (scratch / "tmp").mkdir()
                argv = [self._bash, "-c", code] if tool == "bash" else [self._python, str(code_file)]
                if self._setpriv is not None:  # no bwrap --die-with-parent here: at least the top dies
                    argv = [self._setpriv, "--pdeathsig", "KILL", "--"] + argv
                env = _sandbox_env(str(scratch / "home")) | {"TMPDIR": str(scratch / "tmp")}
                guard_roots = [scratch]  # HOME and TMPDIR are real host directories here
            prefix = _prlimit_prefix(self.limits)
            preexec = None
            if prefix is not None:
                argv = prefix + argv
            else:
                preexec = functools.partial(_apply_rlimits, _rlimits(self.limits))
            cgroup = _make_cgroup(self.limits)
            if cgroup is not None:
                # Enter the cgroup before anything else runs, so every descendant is counted. If the
                # join fails the call still runs (rlimits, namespaces and the clock still apply).
                join = '{ echo $$ > "$0/cgroup.procs"; } 2>/dev/null; exec "$@"'
                argv = ["/bin/sh", "-c", join, cgroup] + argv
            if not self.workspace:  # task mode: the task dir is ours to cap; a user's workspace is not
                guard_roots.append(workdir)
            return self._execute(tool, code, argv, env, workdir, timeout, preexec, guard_roots)
        finally:
            _remove_cgroup(cgroup)
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
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="iclaw-sandbox") as pool:
            futures = [pool.submit(self.run, *call) for call in calls]
            return [f.result() for f in futures]

    # -----------------------------------------------------------------------------------------------

    def _execute(self, tool, code, argv, env, workdir, timeout, preexec, guard_roots) -> ToolResult:
        limits = self.limits
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
            return _not_started(tool, code, f"iclaw: cannot run this {tool} input: {e}", start)
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
                    _kill_group(proc.pid)
                    timed_out, killed_at = True, now
                if guard and killed_at is None and exited_at is None and now >= next_guard:
                    next_guard = now + GUARD_INTERVAL_S
                    if _dir_over_limit(guard_roots, limits.disk_bytes, limits.max_files):
                        _kill_group(proc.pid)
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
                        _kill_group(proc.pid)  # stragglers left in the group; with bwrap already gone
                        continue
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        key.data.add(chunk)
                    else:
                        sel.unregister(key.fileobj)
                        open_pipes -= 1
                if pidfd is None and exited_at is None and proc.poll() is not None:
                    exited_at = end = time.monotonic()
                    _kill_group(proc.pid)
        finally:
            if exited_at is None:
                _kill_group(proc.pid)
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
            if self.level == "bwrap" and 128 < rc <= 128 + 64:
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


def _not_started(tool: str, code: str, why: str, start: float) -> ToolResult:
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


@functools.cache
def _setpriv_with_pdeathsig() -> str | None:
    """util-linux setpriv >= 2.33 can set the parent-death signal before exec'ing the command."""
    setpriv = shutil.which("setpriv", path=SANDBOX_PATH)
    if setpriv is None:
        return None
    p = subprocess.run([setpriv, "--help"], capture_output=True, text=True)
    return setpriv if "--pdeathsig" in p.stdout else None


def _apply_rlimits(limits: list[tuple[int, int]]) -> None:  # fallback only (runs in the forked child)
    for res, value in limits:
        hard = value + 1 if res == resource.RLIMIT_CPU else value
        resource.setrlimit(res, (value, hard))


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

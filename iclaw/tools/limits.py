"""The resource limits of one sandbox call (`Limits`), and the host mechanisms that enforce them.

No single mechanism covers everything, so there are three: rlimits on the process (CPU, memory, file
size, ...), a pids cgroup where we may create one (the kernel never applies RLIMIT_NPROC to root, so
only the cgroup stops a root-run fork bomb before the timeout does), and a size guard on the task
directory (RLIMIT_FSIZE caps one file, not how many). iclaw/tools/sandbox.py wires them into a call;
iclaw/tools/process.py polls the size guard and kills the process group.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal as signals
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from iclaw.tools.isolation import SANDBOX_PATH


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


def rlimits(limits: Limits) -> list[tuple[int, int]]:
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


def prlimit_prefix(limits: Limits) -> list[str] | None:
    prlimit = shutil.which("prlimit", path=SANDBOX_PATH)
    if prlimit is None:
        return None
    # CPU: soft limit sends SIGXCPU, the hard limit one second later SIGKILL.
    out = [prlimit]
    for res, value in rlimits(limits):
        hard = value + 1 if res == resource.RLIMIT_CPU else value
        out.append(f"{_PRLIMIT_FLAG[res]}={value}:{hard}")
    return out + ["--"]


def apply_rlimits(limits: list[tuple[int, int]]) -> None:  # fallback only (runs in the forked child)
    for res, value in limits:
        hard = value + 1 if res == resource.RLIMIT_CPU else value
        resource.setrlimit(res, (value, hard))


# ---------------------------------------------------------------------------------------------------
# Optional pids cgroup (v1 "pids" hierarchy or v2 with the pids controller), when we may create one.


@functools.cache
def pids_cgroup_root() -> str | None:
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
            remove_cgroup(os.path.join(parent, name), wait_s=0.5)


def make_cgroup(limits: Limits) -> str | None:
    parent = pids_cgroup_root()
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


def remove_cgroup(path: str | None, wait_s: float = 2.0) -> None:
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


def dir_over_limit(roots: list[Path], max_bytes: int, max_files: int) -> bool:
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


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signals.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

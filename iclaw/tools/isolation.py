"""How a sandbox call is walled off from the host, per level (see iclaw/tools/sandbox.py for the levels).

"bwrap": the bubblewrap command line (`bwrap_argv`): read-only root, private /tmp, hidden homes, fresh
HOME, no network, every capability dropped. "none": only what can be done without namespaces: a clean
environment, a fresh HOME and TMPDIR in the call's scratch dir, and a parent-death signal (`setpriv`).
Both levels share the scratch dir on the host (`scratch_base`) and the environment (`sandbox_env`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # limits.py imports SANDBOX_PATH from here
    from iclaw.tools.limits import Limits

# The PATH inside the sandbox: system directories only, never the user's (which may point into $HOME).
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_HOME = "/tmp/home"  # inside bwrap: on the private, size-capped /tmp, fresh for every call
SANDBOX_CODE = "/tmp/iclaw/main.py"  # inside bwrap: where the python tool's code file appears (read-only)


@functools.cache
def scratch_base() -> str:
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


# ---------------------------------------------------------------------------------------------------
# Level "bwrap"


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


def bwrap_has_size() -> bool:
    """bwrap >= 0.7 can cap a tmpfs (--size); older ones (Ubuntu 22.04 ships 0.6) cannot."""
    return _bwrap_has("--size")


def bwrap_argv(
    bwrap: str, workdir: Path, limits: Limits, *, net: bool, code_file: Path | None, scratch: Path | None
) -> list[str]:
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if bwrap_has_size():
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
    for k, v in sandbox_env(SANDBOX_HOME).items():
        argv += ["--setenv", k, v]
    argv += ["--chdir", str(workdir), "--"]
    return argv


# ---------------------------------------------------------------------------------------------------
# The environment (both levels), and level "none"'s stand-in for --die-with-parent


def sandbox_env(home: str) -> dict[str, str]:
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


def host_env() -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"}


@functools.cache
def setpriv_with_pdeathsig() -> str | None:
    """util-linux setpriv >= 2.33 can set the parent-death signal before exec'ing the command."""
    setpriv = shutil.which("setpriv", path=SANDBOX_PATH)
    if setpriv is None:
        return None
    p = subprocess.run([setpriv, "--help"], capture_output=True, text=True)
    return setpriv if "--pdeathsig" in p.stdout else None

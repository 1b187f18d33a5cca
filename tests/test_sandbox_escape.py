"""Escape probes: hostile commands run through the bash tool, then the HOST is checked.

Each probe must be contained (host canaries intact), return within its timeout + 1 s, and record
what happened (exit code, timed_out, truncation). The destructive probes only run at level "bwrap",
and only after a harmless check that the root really is read-only in there."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from iclaw.tools.limits import pids_cgroup_root
from iclaw.tools.process import TRUNCATION_MARKER
from iclaw.tools.sandbox import Limits, Sandbox, detect_level

TIMEOUT = 2.0
LEVEL, WHY = detect_level()
needs_bwrap = pytest.mark.skipif(LEVEL != "bwrap", reason=f"bwrap sandbox unavailable: {WHY}")


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox(Limits(timeout_s=TIMEOUT), level="bwrap")


@pytest.fixture
def task(tmp_path) -> Path:
    d = tmp_path / "task"
    d.mkdir()
    (d / "fixture.txt").write_text("fixture\n")
    return d


@pytest.fixture
def host_canary(tmp_path):
    """A secret file in the real home directory and one in a host directory next to the task dir."""
    token = secrets.token_hex(8)
    home_file = Path.home() / f".iclaw_canary_{token}"
    home_file.write_text(f"home-secret-{token}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    side_file = outside / "canary.txt"
    side_file.write_text(f"side-secret-{token}\n")
    yield {"token": token, "home": home_file, "side": side_file, "outside": outside}
    home_file.unlink(missing_ok=True)


def intact(c) -> bool:
    return (
        c["home"].read_text() == f"home-secret-{c['token']}\n"
        and c["side"].read_text() == f"side-secret-{c['token']}\n"
        and sorted(p.name for p in c["outside"].iterdir()) == ["canary.txt"]
    )


def run_timed(sandbox: Sandbox, code: str, task: Path, tool: str = "bash"):
    t0 = time.monotonic()
    r = sandbox.run(tool, code, task)
    elapsed = time.monotonic() - t0
    assert elapsed < sandbox.limits.timeout_s + 1.0, f"took {elapsed:.2f}s"
    return r


def _assert_root_read_only(sandbox: Sandbox, task: Path, c) -> None:
    # Guard before anything destructive: a write outside the task dir must fail, harmlessly.
    r = sandbox.run("bash", f"touch {c['outside']}/probe /usr/iclaw_probe", task)
    assert r.exit_code != 0
    assert not (c["outside"] / "probe").exists() and not Path("/usr/iclaw_probe").exists()


@needs_bwrap
def test_fork_bomb(sandbox, task, host_canary):
    before = len([p for p in os.listdir("/proc") if p.isdigit()])
    # The classic bomb, kept alive by a foreground sleep so it runs until our clock kills it.
    r = run_timed(sandbox, ":(){ :|:& };:; sleep 30", task)
    assert r.timed_out and r.exit_code == 124
    if pids_cgroup_root() is not None:  # the process cap was hit long before the timeout
        assert "Resource temporarily unavailable" in r.stderr
    time.sleep(0.3)
    leftover = [p for p in os.listdir("/proc") if p.isdigit()]
    assert len(leftover) < before + 50, "fork bomb processes outlived the call"
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork
    assert intact(host_canary)


@needs_bwrap
def test_rm_rf_home_and_root(sandbox, task, host_canary):
    _assert_root_read_only(sandbox, task, host_canary)
    r = run_timed(
        sandbox, 'rm -rf "$HOME" ~/ /root /home; echo rc=$?; rm -rf --no-preserve-root /; echo done', task
    )
    assert r.stdout.startswith("rc=")  # the homes "went away" (inside the sandbox's tmpfs only)
    # Walking the whole read-only tree may outlast the clock; either way the call is recorded.
    assert r.timed_out or r.stdout.strip().endswith("done")
    assert "Read-only file system" in r.stderr
    assert intact(host_canary)
    assert Path("/usr/bin/bash").exists() and Path.home().is_dir()


@needs_bwrap
def test_write_outside_task_dir(sandbox, task, host_canary):
    out = host_canary["outside"]
    code = (
        f"echo x > {out}/new.txt; echo x > {host_canary['side']}; echo x > /etc/iclaw_probe; "
        "echo x > /var/tmp/iclaw_probe; echo x > ../escaped.txt; echo ok > inside.txt"
    )
    r = run_timed(sandbox, code, task)
    assert r.exit_code == 0  # recorded: the last command (inside the task dir) succeeded
    # /etc and /var/tmp are read-only; paths under /tmp land in the private tmpfs and vanish.
    assert r.stderr.count("Read-only file system") >= 2
    assert (task / "inside.txt").read_text() == "ok\n"  # the task dir IS writable
    assert not Path("/etc/iclaw_probe").exists() and not Path("/var/tmp/iclaw_probe").exists()
    assert not (task.parent / "escaped.txt").exists()
    assert intact(host_canary)


@needs_bwrap
def test_read_secret_in_real_home(sandbox, task, host_canary):
    home = host_canary["home"]
    code = (
        f"cat {home}; cat ~/{home.name}; ls -la {home.parent}; grep -rs home-secret /root /home /tmp ~ | head"
    )
    r = run_timed(sandbox, code, task)
    assert "home-secret" not in r.stdout and "home-secret" not in r.stderr
    assert intact(host_canary)


@needs_bwrap
def test_no_network_to_host_loopback(sandbox, task, host_canary):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        # Sanity: the server really is reachable from the host.
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"host")
        time.sleep(0.3)
        assert accepted == [b"host"]
        code = f"echo leak > /dev/tcp/127.0.0.1/{port}; echo rc=$?"
        r = run_timed(sandbox, code, task)
        assert "rc=1" in r.stdout
        py = (
            "import socket\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "s.sendall(b'leak-py')\n"
        )
        r2 = run_timed(sandbox, py, task, tool="python")
        assert r2.exit_code != 0 and ("refused" in r2.stderr or "unreachable" in r2.stderr)
        time.sleep(0.3)
        assert accepted == [b"host"], "the sandbox reached the host's loopback"
    finally:
        stop.set()
        t.join(timeout=2)
        server.close()
    assert intact(host_canary)


@needs_bwrap
def test_print_forever(sandbox, task, host_canary):
    r = run_timed(sandbox, "yes iclaw; cat /dev/urandom >&2", task)
    assert r.timed_out and r.exit_code == 124
    assert r.stdout_truncated and r.stdout.endswith(TRUNCATION_MARKER)
    assert len(r.stdout) <= sandbox.limits.max_output + len(TRUNCATION_MARKER)
    assert intact(host_canary)


@needs_bwrap
def test_sleep_forever(sandbox, task, host_canary):
    r = run_timed(sandbox, "sleep infinity", task)
    assert r.timed_out and r.exit_code == 124 and r.signal == 9
    assert intact(host_canary)


@needs_bwrap
def test_unbounded_memory(sandbox, task, host_canary):
    # Reserving address space without touching it hits RLIMIT_AS at once.
    code = "import mmap\nx = []\nwhile True:\n    x.append(mmap.mmap(-1, 100_000_000))\n"
    r = run_timed(sandbox, code, task, tool="python")
    assert r.exit_code == 1 and not r.timed_out and "Cannot allocate memory" in r.stderr
    # Touching memory page by page: RLIMIT_AS at ~1 GiB, or the clock on a slow machine.
    r1 = run_timed(sandbox, "x = []\nwhile True:\n    x.append(bytearray(50_000_000))\n", task, tool="python")
    assert r1.exit_code != 0 and ("MemoryError" in r1.stderr or r1.timed_out)
    r2 = run_timed(sandbox, "head -c 4G /dev/zero | sort > /dev/null; echo rc=${PIPESTATUS[1]}", task)
    assert "rc=0" not in r2.stdout or r2.timed_out
    assert intact(host_canary)


@needs_bwrap
def test_fill_the_disk(task, host_canary):
    limits = Limits(timeout_s=TIMEOUT, fsize_bytes=4 << 20, disk_bytes=32 << 20, tmpfs_bytes=8 << 20)
    sandbox = Sandbox(limits, level="bwrap")
    free_before = shutil.disk_usage(task).free
    # One ever-growing file stops at RLIMIT_FSIZE; many files stop at the task-directory cap.
    r1 = run_timed(sandbox, "cat /dev/zero > big; echo rc=$?", task)
    assert (task / "big").stat().st_size <= limits.fsize_bytes
    assert "rc=153" in r1.stdout  # 128 + SIGXFSZ, recorded by the shell
    r2 = run_timed(sandbox, "i=0; while :; do head -c 4M /dev/zero > f$i; i=$((i+1)); done", task)
    assert r2.exit_code != 0 and (r2.signal == 9 or r2.timed_out)
    used = sum(p.stat().st_blocks * 512 for p in task.rglob("*") if p.is_file())
    assert used < 8 * limits.disk_bytes, f"task dir grew to {used >> 20} MiB"
    r3 = run_timed(
        sandbox, "head -c 100M /dev/zero > /tmp/fill; echo rc=$?; head -c 100M /dev/zero > /dev/shm/f", task
    )
    assert "rc=0" not in r3.stdout  # private /tmp is size-capped (No space left on device)
    assert shutil.disk_usage(task).free > free_before - (1 << 30)
    assert intact(host_canary)


@needs_bwrap
def test_environment_secrets(sandbox, task, host_canary, monkeypatch):
    secret = f"env-secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("ICLAW_CANARY_TOKEN", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    code = "env; cat /proc/self/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/*/environ 2>/dev/null"
    r = run_timed(sandbox, code, task)
    assert secret not in r.stdout and secret not in r.stderr
    assert intact(host_canary)


@needs_bwrap
def test_workspace_under_hidden_home(host_canary):
    # Chat mode: the user's own directory (here under the real home) is writable and visible,
    # the rest of the home stays hidden.
    ws = Path.home() / f".iclaw_ws_{host_canary['token']}"
    ws.mkdir()
    try:
        (ws / "notes.txt").write_text("mine\n")
        sb = Sandbox(Limits(timeout_s=TIMEOUT), level="bwrap", workspace=True)
        r = run_timed(sb, f"cat notes.txt; echo new > made.txt; cat {host_canary['home']}", ws)
        assert r.stdout == "mine\n" and "No such file" in r.stderr
        assert (ws / "made.txt").read_text() == "new\n"
    finally:
        shutil.rmtree(ws)
    assert intact(host_canary)


@needs_bwrap
def test_tmp_on_disk_when_bwrap_cannot_size_a_tmpfs(task, host_canary, monkeypatch):
    # bwrap < 0.7 has no --size: /tmp then lives in the call's scratch dir, under the size guard.
    import iclaw.tools.isolation as isolation

    monkeypatch.setattr(isolation, "bwrap_has_size", lambda: False)
    limits = Limits(timeout_s=TIMEOUT, fsize_bytes=4 << 20, disk_bytes=16 << 20)
    sb = Sandbox(limits, level="bwrap")
    r = run_timed(
        sb,
        "echo hi > /tmp/x && cat /tmp/x; i=0; while :; do head -c 4M /dev/zero > /tmp/f$i; i=$((i+1)); done",
        task,
    )
    assert r.stdout == "hi\n" and r.signal == 9 and "grew past" in r.stderr
    assert intact(host_canary)


@needs_bwrap
def test_no_capabilities_no_remount(sandbox, task, host_canary):
    # As root, bwrap keeps all capabilities unless told otherwise; with CAP_SYS_ADMIN a sandboxed
    # process could remount / read-write and write to the host. None of that may work.
    probe = f"/usr/iclaw_escape_{host_canary['token']}"
    code = (
        "grep CapEff /proc/self/status; "
        f"mount -o remount,bind,rw / ; mount -o remount,rw /usr; touch {probe}; "
        "mount -t tmpfs none /mnt && echo MOUNTED; "
        f"unshare -r sh -c 'mount -o remount,bind,rw / && touch {probe}' ; "
        f"unshare -m sh -c 'mount -o remount,bind,rw / && touch {probe}' ; "
        "echo end"
    )
    try:
        r = run_timed(sandbox, code, task)
        assert r.stdout.splitlines()[0].split() == ["CapEff:", "0000000000000000"]
        assert "MOUNTED" not in r.stdout and r.stdout.rstrip().endswith("end")
        assert not Path(probe).exists()
    finally:
        Path(probe).unlink(missing_ok=True)
    assert intact(host_canary)

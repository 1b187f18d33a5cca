"""The sandbox's plain behaviour at both levels: results, limits, timeouts, truncation, concurrency."""

from __future__ import annotations

import time

import pytest

from iclaw.errors import IclawError
from iclaw.tools.process import TRUNCATION_MARKER
from iclaw.tools.sandbox import Limits, Sandbox, ToolResult, detect_level, require_safe

HAS_BWRAP = detect_level()[0] == "bwrap"
LEVELS = ["none"] + (["bwrap"] if HAS_BWRAP else [])


@pytest.fixture(params=LEVELS)
def sandbox(request) -> Sandbox:
    return Sandbox(Limits(timeout_s=2.0), level=request.param)


def test_result_fields_and_separate_streams(sandbox, tmp_path):
    r = sandbox.run("bash", "echo out; echo err >&2; exit 3", tmp_path)
    assert isinstance(r, ToolResult)
    assert (r.tool, r.input, r.exit_code) == ("bash", "echo out; echo err >&2; exit 3", 3)
    assert r.stdout == "out\n" and r.stderr == "err\n"
    assert not r.timed_out and r.signal is None
    assert not r.stdout_truncated and not r.stderr_truncated
    assert 0 < r.duration_ms < 2000
    assert r.to_dict()["exit_code"] == 3


def test_cwd_is_workdir_and_files_persist(sandbox, tmp_path):
    (tmp_path / "names.txt").write_text("a\na\nb\n")
    r = sandbox.run("bash", "uniq names.txt > out.txt && pwd", tmp_path)
    assert r.exit_code == 0 and r.stdout.strip() == str(tmp_path.resolve())
    assert (tmp_path / "out.txt").read_text() == "a\nb\n"


def test_python_tool_runs_main_py_in_the_task_directory(sandbox, tmp_path):
    """Task mode: the code is main.py in the task directory, run there, so the fixture's modules import and
    __file__ is next to them; a fixture's own main.py is replaced by the call's code."""
    (tmp_path / "helper.py").write_text("def f():\n    return 42\n")
    (tmp_path / "main.py").write_text("print('the fixture main')\n")
    code = "import os, sys, helper\nprint(helper.f())\nprint(os.path.dirname(__file__))\nprint(sys.argv[0])\n"
    r = sandbox.run("python", code, tmp_path)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["42", str(tmp_path.resolve()), "main.py"]
    assert (tmp_path / "main.py").read_text() == code
    r = sandbox.run("python", "1 / 0\n", tmp_path)
    assert f'File "{tmp_path.resolve()}/main.py", line 1' in r.stderr


def test_python_tool_never_follows_a_link_named_main_py(sandbox, tmp_path):
    """main.py is written on the host: a link left there by an earlier call must not redirect the write."""
    target = tmp_path / "outside.txt"
    target.write_text("precious\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").symlink_to(target)
    r = sandbox.run("python", "print('hi')\n", work)
    assert r.exit_code == 0 and r.stdout == "hi\n"
    assert target.read_text() == "precious\n" and not (work / "main.py").is_symlink()
    (work / "main.py").unlink()
    (work / "main.py").mkdir()
    r = sandbox.run("python", "print('hi')\n", work)
    assert r.exit_code == 126 and "main.py" in r.stderr and "directory" in r.stderr


def test_workspace_python_code_file_lives_outside_the_directory(tmp_path):
    """Workspace mode (chat, fix: the user's real directory): nothing is written there, and a user's own
    main.py is left alone."""
    (tmp_path / "data.txt").write_text("x")
    (tmp_path / "main.py").write_text("users own\n")
    for level in LEVELS:
        sb = Sandbox(Limits(timeout_s=2.0), level=level, workspace=True)
        code = "import os, sys\nprint(sorted(os.listdir('.')))\nprint(sys.argv[0])\n"
        r = sb.run("python", code, tmp_path)
        assert r.exit_code == 0, r.stderr
        listing, script = r.stdout.splitlines()
        assert listing == "['data.txt', 'main.py']"
        assert not script.startswith(str(tmp_path.resolve()))
        assert (tmp_path / "main.py").read_text() == "users own\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "main.py"]


def test_python_syntax_error_is_reported(sandbox, tmp_path):
    r = sandbox.run("python", "n = 0\nwhile n < 2\n    n += 1\n", tmp_path)
    assert r.exit_code == 1 and "SyntaxError" in r.stderr


def test_command_not_found_exit_127(sandbox, tmp_path):
    r = sandbox.run("bash", "uinq names.txt", tmp_path)
    assert r.exit_code == 127 and "command not found" in r.stderr


def test_non_utf8_output_is_replaced(sandbox, tmp_path):
    r = sandbox.run("bash", r"printf 'ok \xff\xfe end\n'", tmp_path)
    assert r.exit_code == 0 and r.stdout == "ok \ufffd\ufffd end\n"


def test_output_is_capped_with_marker(tmp_path):
    sb = Sandbox(Limits(timeout_s=5, max_output=1000))
    r = sb.run("bash", "head -c 5000 /dev/zero | tr '\\0' a; head -c 10 /dev/zero | tr '\\0' b >&2", tmp_path)
    assert r.exit_code == 0
    assert r.stdout_truncated and not r.stderr_truncated
    assert r.stdout == "a" * 1000 + TRUNCATION_MARKER
    assert r.stderr == "b" * 10
    exact = sb.run("bash", "head -c 1000 /dev/zero | tr '\\0' a", tmp_path)
    assert not exact.stdout_truncated and exact.stdout == "a" * 1000


def test_timeout_kills_the_whole_process_group(sandbox, tmp_path):
    # A background child that would write a file after the timeout must die with its parent.
    t0 = time.monotonic()
    r = sandbox.run("bash", "(sleep 1.5; touch late) & sleep 30", tmp_path, timeout=0.5)
    assert time.monotonic() - t0 < 1.5
    assert r.timed_out and r.exit_code == 124 and r.signal == 9
    time.sleep(1.5)
    assert not (tmp_path / "late").exists()


def test_background_children_do_not_outlive_the_call(sandbox, tmp_path):
    t0 = time.monotonic()
    r = sandbox.run("bash", "(sleep 1.5; touch late) & echo started", tmp_path)
    assert r.exit_code == 0 and r.stdout == "started\n" and not r.timed_out
    assert time.monotonic() - t0 < 1.2  # did not wait for the background child
    time.sleep(1.7)
    assert not (tmp_path / "late").exists()


def test_killed_by_signal_is_128_plus_n(sandbox, tmp_path):
    r = sandbox.run("python", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", tmp_path)
    assert r.exit_code == 128 + 15 and r.signal == 15 and not r.timed_out


def test_cpu_limit(tmp_path):
    # CPU seconds, not wall seconds: on a loaded machine the wall clock may run well past 1 s.
    sb = Sandbox(Limits(timeout_s=15, cpu_s=1))
    r = sb.run("python", "while True: pass\n", tmp_path)
    assert not r.timed_out and r.exit_code in (128 + 24, 128 + 9)  # SIGXCPU, then SIGKILL at the hard limit


def test_clean_environment(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_TEST_TOKEN", "hunter2-env")
    r = sandbox.run("bash", "env", tmp_path)
    assert "hunter2-env" not in r.stdout
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert env["PYTHONHASHSEED"] == "0" and env["LANG"] == "C.UTF-8"
    assert "/root" not in env["PATH"] and env["HOME"] != str(tmp_path)


def test_python_hash_seed_is_fixed(sandbox, tmp_path):
    code = "print(list({'alpha', 'beta', 'gamma', 'delta', 'epsilon'}))"
    outs = {sandbox.run("python", code, tmp_path).stdout for _ in range(3)}
    assert len(outs) == 1


def test_run_many_is_concurrent_and_ordered(sandbox, tmp_path):
    dirs = []
    for i in range(8):
        d = tmp_path / f"ep{i}"
        d.mkdir()
        (d / "id").write_text(str(i))
        dirs.append(d)
    calls = [("bash", f"sleep 0.5; cat id; echo {i} > mine", d) for i, d in enumerate(dirs)]
    t0 = time.monotonic()
    results = sandbox.run_many(calls, max_workers=8)
    elapsed = time.monotonic() - t0
    assert [r.stdout for r in results] == [str(i) for i in range(8)]
    assert all((d / "mine").read_text() == f"{i}\n" for i, d in enumerate(dirs))
    assert elapsed < 8 * 0.5 * 0.75  # ran side by side, not one after another (serial: >= 4 s)
    assert sandbox.run_many([]) == []


RUN_MANY_THEN_CTRL_C = r"""
import signal, sys
from pathlib import Path
from iclaw.tools.sandbox import Limits, Sandbox
# Python's own Ctrl-C handler even when started from a background job, which inherits SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
d = Path(sys.argv[1])
calls = [("bash", f"echo {i} > started-{i}; sleep 0.5", d) for i in range(40)]
print("go", flush=True)
Sandbox(Limits(timeout_s=5), level=sys.argv[2]).run_many(calls, max_workers=2)
"""


@pytest.mark.parametrize("level", LEVELS)
def test_ctrl_c_in_run_many_starts_no_more_calls(level, tmp_path):
    """Ctrl-C while 40 calls wait for 2 workers: the running ones finish, the queued ones never start."""
    import signal
    import subprocess
    import sys

    cmd = [sys.executable, "-c", RUN_MANY_THEN_CTRL_C, str(tmp_path), level]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "go\n"
    while len(list(tmp_path.glob("started-*"))) < 2:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "KeyboardInterrupt" in err
    assert 2 <= len(list(tmp_path.glob("started-*"))) <= 6  # 40 without the cancel


def test_bad_input_raises_iclaw_error(sandbox, tmp_path):
    with pytest.raises(IclawError, match="unknown tool"):
        sandbox.run("ruby", "puts 1", tmp_path)
    with pytest.raises(IclawError, match="does not exist"):
        sandbox.run("bash", "true", tmp_path / "missing")
    with pytest.raises(IclawError, match="unknown level"):
        Sandbox(level="docker")


def test_require_safe():
    weak = Sandbox(level="none")
    assert weak.level == "none" and weak.reason
    with pytest.raises(IclawError, match="--unsafe-no-sandbox"):
        require_safe(weak, allow_unsafe=False)
    require_safe(weak, allow_unsafe=True)  # warns on stderr, does not raise
    if HAS_BWRAP:
        strong = Sandbox()
        assert strong.level == "bwrap" and "bwrap" in strong.reason
        require_safe(strong, allow_unsafe=False)


def test_size_guard_at_level_none(tmp_path):
    # Level "none" cannot stop writes elsewhere, but the task dir and its HOME/TMPDIR are capped.
    sb = Sandbox(Limits(timeout_s=3, fsize_bytes=2 << 20, disk_bytes=8 << 20), level="none")
    r = sb.run("bash", 'i=0; while :; do head -c 2M /dev/zero > "$TMPDIR/f$i"; i=$((i+1)); done', tmp_path)
    assert r.signal == 9 and not r.timed_out and "grew past" in r.stderr


def test_unrunnable_input_is_a_failed_call_not_a_crash(sandbox, tmp_path):
    r = sandbox.run("bash", "echo a\x00b", tmp_path)
    assert r.exit_code == 126 and "null byte" in r.stderr
    r = sandbox.run("bash", "echo " + "x" * 200_000, tmp_path)  # one argv string over 128 KiB
    assert r.exit_code == 126 and "too long" in r.stderr
    r = sandbox.run("python", "print(1)\x00", tmp_path)  # python itself decides (3.11 stops at the NUL)
    assert r.exit_code in (0, 1) and not r.timed_out
    r = sandbox.run(
        "python", "print(len('" + "x" * 200_000 + "'))", tmp_path
    )  # code files have no such limit
    assert r.exit_code == 0 and r.stdout == "200000\n"


DIES_WITH_PARENT = """
import sys
from iclaw.tools.sandbox import Limits, Sandbox
sb = Sandbox(Limits(timeout_s=30), level=sys.argv[2])
print("started", flush=True)
sb.run("bash", "sleep 1.5; touch late", sys.argv[1])
"""


@pytest.mark.parametrize("level", LEVELS)
def test_call_dies_with_its_parent(level, tmp_path):
    import signal
    import subprocess
    import sys

    p = subprocess.Popen(
        [sys.executable, "-c", DIES_WITH_PARENT, str(tmp_path), level], stdout=subprocess.PIPE
    )
    assert p.stdout.readline() == b"started\n"
    time.sleep(0.5)
    p.send_signal(signal.SIGKILL)  # the agent dies hard mid-call
    p.wait()
    p.stdout.close()
    time.sleep(1.6)
    assert not (tmp_path / "late").exists()

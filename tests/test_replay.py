"""`iclaw replay`, `iclaw runs` and `iclaw exec` end to end, on real databases.

Normal output goes through typer's CliRunner on iclaw.cli:app (fast, in-process); error paths go
through `python -m iclaw` so that main()'s one-line error handling is what is tested."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from iclaw.cli import app
from iclaw.store import Store

runner = CliRunner()


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as s:
        s.log_episode(
            source="eval",
            task_id="uniq-typo-1",
            model="124m",
            status="passed",
            reward=1.0,
            final_command="uniq names.txt",
            turns=[
                {"turn": 0, "role": "user", "text": "fix: uinq names.txt"},
                {"turn": 0, "role": "assistant", "text": "uniq names.txt"},
                {"turn": 0, "role": "obs", "text": "a\nb\n"},
            ],
            tool_calls=[
                {"turn": 0, "tool": "bash", "input": "uniq names.txt", "stdout": "a\nb\n", "exit_code": 0}
            ],
        )
        s.log_episode(
            source="train",
            task_id="py-colon-1",
            model="760m",
            status="failed",
            reward=0.0,
            final_command="print(n",
            tool_calls=[
                {
                    "turn": 0,
                    "tool": "python",
                    "input": "print(n",
                    "stderr": "SyntaxError: '(' was never closed",
                    "exit_code": 1,
                }
            ],
        )
        s.log_metrics("run-7", 0, {"loss": 1.25, "reward_mean": 0.1})
        s.log_metrics("run-7", 1, {"loss": 1.0, "reward_mean": 0.3, "kl": 0.002})
    return path


def invoke(*args: str):
    r = runner.invoke(app, list(args), catch_exceptions=False)
    return r


def test_list_and_filters(db):
    r = invoke("replay", "--db", str(db))
    assert r.exit_code == 0 and "uniq-typo-1" in r.output and "py-colon-1" in r.output
    r = invoke("replay", "--db", str(db), "--failed")
    assert "py-colon-1" in r.output and "uniq-typo-1" not in r.output
    r = invoke("replay", "--db", str(db), "--passed", "--model", "124m", "--source", "eval", "--since", "1d")
    assert "uniq-typo-1" in r.output and "py-colon-1" not in r.output
    r = invoke("replay", "--db", str(db), "--grep", "never closed")
    assert "py-colon-1" in r.output and "uniq-typo-1" not in r.output
    r = invoke("replay", "--db", str(db), "--task", "nothing-like-this")
    assert "no episodes match" in r.output


def test_show_transcript(db):
    r = invoke("replay", "--db", str(db), "1")
    assert r.exit_code == 0
    for text in ("episode 1", "fix: uinq names.txt", "uniq names.txt", "exit 0", "passed", "reward 1"):
        assert text in r.output
    r = invoke("replay", "--db", str(db), "2")
    assert "exit 1" in r.output and "never closed" in r.output and "failed" in r.output


def test_rate(db):
    r = invoke("replay", "--db", str(db), "2", "--rate", "bad")
    assert r.exit_code == 0 and "rating bad" in r.output
    assert Store(db).episode(2)["rating"] == "bad"
    r = invoke("replay", "--db", str(db), "2", "--rate", "none")
    assert Store(db).episode(2)["rating"] is None


def test_json_exports(db):
    r = invoke("replay", "--db", str(db), "--json")
    eps = json.loads(r.output)
    assert [e["id"] for e in eps] == [2, 1] and eps[1]["tool_calls"][0]["input"] == "uniq names.txt"
    r = invoke("replay", "--db", str(db), "--jsonl", "--passed")
    (ep,) = [json.loads(line) for line in r.output.splitlines()]
    assert ep["task_id"] == "uniq-typo-1" and ep["turns"][0]["role"] == "user"
    r = invoke("replay", "--db", str(db), "2", "--json")
    assert json.loads(r.output)["tool_calls"][0]["exit_code"] == 1


def test_runs_list_and_show(db):
    r = invoke("runs", "list", "--db", str(db))
    assert r.exit_code == 0 and "run-7" in r.output
    r = invoke("runs", "show", "run-7", "--db", str(db))
    assert r.exit_code == 0 and "reward_mean" in r.output and "1.25" in r.output and "0.002" in r.output
    r = invoke("runs", "show", "run-7", "--db", str(db), "--json")
    assert [row["step"] for row in json.loads(r.output)] == [0, 1]


def _cli(*args: str, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "iclaw", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def test_errors_are_one_line(db, tmp_path):
    for args in (
        ("replay", "--db", str(db), "99"),
        ("replay", "--db", str(db), "--since", "last tuesday"),
        ("replay", "--db", str(tmp_path / "missing.db")),
        ("runs", "show", "no-such-run", "--db", str(db)),
        ("replay", "--db", str(db), "1", "--rate", "great"),
    ):
        p = _cli(*args)
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_exec_runs_shows_and_logs(tmp_path):
    db = tmp_path / "exec.db"
    r = invoke("exec", "--db", str(db), "--", "echo hello-exec; echo to-stderr >&2; exit 3")
    assert r.exit_code == 3
    assert "exit 3" in r.output and "hello-exec" in r.output and "to-stderr" in r.output
    r = invoke("exec", "--python", "--db", str(db), "--cwd", str(tmp_path), "--", "print(6 * 7)")
    assert r.exit_code == 0 and "42" in r.output
    with Store(db) as s:
        eps = s.episodes(source="exec")
        assert len(eps) == 2
        last = s.episode(eps[0]["id"])
        assert last["tool_calls"][0]["tool"] == "python" and last["tool_calls"][0]["stdout"] == "42\n"
        assert last["tool_calls"][0]["cwd"] == str(tmp_path.resolve())
        first = s.episode(eps[1]["id"])
        assert first["tool_calls"][0]["exit_code"] == 3 and first["tool_calls"][0]["stderr"] == "to-stderr\n"


def test_doctor(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    r = invoke("doctor", "--db", str(tmp_path / "none.db"))
    assert r.exit_code == 0
    for text in ("sandbox", "torch", "store", "ICLAW_HOME", str(tmp_path / "home"), "self-test"):
        assert text in r.output
    from iclaw.model.gpt import bf16_supported, default_device

    assert ("bf16 autocast" if bf16_supported(default_device()) else "fp32 (no fast bf16 here)") in r.output

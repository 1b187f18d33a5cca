"""`iclaw fix "CMD"`: run it, let the model fix it, verify the fix by its run, print it. Real sandbox, real
SQLite file, real tiny models (an untrained one and the in-process-trained "emitter" that answers `ehco hi`
with `echo hi`); the JSON path and the error path run as real processes."""

from __future__ import annotations

import json
import subprocess

import pytest
from test_chat_support import (
    BROKEN,
    emitter_model,
    iclaw_argv,
    one_thread,
    publish,
    subprocess_env,
    tiny_model,
    use_home,
)
from typer.testing import CliRunner

from iclaw.cli import app
from iclaw.store import Store

runner = CliRunner()
NO_HINT = "qqzzy hi"  # no command is within two edits of qqzzy: only the model could fix it


def here(ep: dict, ws) -> list[tuple]:
    """(input, exit code) of the calls that ran in the user's folder, not in a throwaway copy."""
    return [(c["input"], c["exit_code"]) for c in ep["tool_calls"] if c["cwd"] == str(ws)]


@pytest.fixture
def ws(tmp_path, monkeypatch):
    d = tmp_path / "ws"
    d.mkdir()
    monkeypatch.chdir(d)  # fix works in the current directory, like the user's shell
    return d


def fix(args: list[str]):
    with one_thread():
        return runner.invoke(app, ["fix", *args, "--temperature", "0"])


def test_untrained_model_json_not_fixed(tmp_path, ws, monkeypatch):
    """The issue's command, as a process: valid JSON on stdout (nothing else), exit code 1, episode logged."""
    home = use_home(monkeypatch, tmp_path / "home")
    publish("demo", tiny_model(0))  # untrained: nonsense every turn
    env = subprocess_env(home)
    db = tmp_path / "t.db"
    p = subprocess.run(
        iclaw_argv("fix", NO_HINT, "--yes", "--json", "--db", str(db), "--max-turns", "2"),
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)  # stdout is exactly one JSON object
    assert out["fixed"] is False and out["exit_code"] == 127 and out["command"] == NO_HINT
    assert out["changed"] is False and isinstance(out["episode"], int)
    assert "command not found" in p.stderr and "no working fix" in p.stderr
    with Store(db) as store:
        ep = store.episode(out["episode"])
    assert ep["source"] == "fix" and ep["model"] == "demo" and ep["checkpoint"]
    assert ep["tool_calls"][0]["input"] == NO_HINT and ep["meta"]["fixed"] is False
    assert here(ep, ws) == [(NO_HINT, 127)]  # the model's tries ran in copies only


def test_fixed_path_json_and_plain(tmp_path, ws, monkeypatch):
    """A model that does fix it: exit 0, the JSON says fixed with the command that ran; without --json the
    fixed command is all that stdout gets."""
    use_home(monkeypatch, tmp_path / "home")
    ckpt = publish("demo", emitter_model())
    db = tmp_path / "t.db"
    r = fix([BROKEN, "--yes", "--json", "--db", str(db), "--max-turns", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out == {"fixed": True, "command": "echo hi", "exit_code": 0, "episode": 1, "changed": True}
    with Store(db) as store:
        ep = store.episode(1)
    assert ep["source"] == "fix" and ep["checkpoint"] == ckpt and ep["final_command"] == "echo hi"
    assert here(ep, ws) == [(BROKEN, 127), ("echo hi", 0)]
    assert ep["meta"]["end"] in ("submitted", "max_turns")  # the model's episode, in a copy
    cands = {c["code"]: c for c in ep["meta"]["candidates"]}
    assert cands["echo hi"]["exit_code"] == 0 and cands["echo hi"]["source"] in ("hint", "greedy")

    r = fix([BROKEN, "--yes", "--db", str(db), "--max-turns", "1"])
    assert r.exit_code == 0 and r.stdout == "echo hi\n"


def test_no_tty_without_yes_declines(tmp_path, ws, monkeypatch):
    """Nobody to ask (stdin is not a terminal) and no --yes: every model command is declined, with a message,
    instead of hanging on a prompt."""
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    db = tmp_path / "t.db"
    r = fix([BROKEN, "--json", "--db", str(db), "--max-turns", "1"])
    assert r.exit_code == 1
    assert "stdin is not a terminal" in r.stderr and "pass --yes" in r.stderr
    assert json.loads(r.stdout)["fixed"] is False
    with Store(db) as store:
        ep = store.episode(1)
    assert here(ep, ws) == [(BROKEN, 127)]  # nothing the model wrote ran in the folder
    assert ep["meta"]["approvals"][0] == {
        "turn": 1,
        "proposed": "echo hi",
        "decision": "declined",
        "ran": None,
    }
    assert {a["decision"] for a in ep["meta"]["approvals"]} == {"declined"}


def test_nothing_to_fix_and_bad_flags(tmp_path, ws, monkeypatch):
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", tiny_model(0))
    db = tmp_path / "t.db"
    r = fix(["echo ok", "--yes", "--json", "--db", str(db)])
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {
        "fixed": True,
        "command": "echo ok",
        "exit_code": 0,
        "episode": 1,
        "changed": False,
    }
    r = fix(["print(1 +)", "--python", "--yes", "--json", "--db", str(db), "--max-turns", "1"])
    assert r.exit_code == 1 and json.loads(r.stdout)["exit_code"] == 1
    with Store(db) as store:
        assert store.episode(2)["tool_calls"][0]["tool"] == "python"

    env = subprocess_env(tmp_path / "home")
    for args, msg in [
        (["fix", "ls", "--model", "missing"], "error: unknown model 'missing' (known: demo"),
        (["fix", "ls", "--max-turns", "0"], "error: --max-turns: must be at least 1, got 0"),
        (["fix", "  "], "error: COMMAND: empty command"),
    ]:
        p = subprocess.run(
            iclaw_argv(*args, "--db", str(db)),
            env=env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert p.stderr.startswith(msg), p.stderr


def test_replay_passed_failed_cover_fix_episodes(tmp_path, ws, monkeypatch):
    """`iclaw replay --passed/--failed` covers fix episodes: passed when the final command exited 0 (a fix
    that worked, or a command that worked as given), failed when it did not."""
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    publish("other", tiny_model(0))  # untrained: no fix
    db = str(tmp_path / "t.db")
    assert fix([BROKEN, "--yes", "--db", db, "--max-turns", "2"]).exit_code == 0  # 1: fixed
    assert fix(["echo ok", "--yes", "--db", db]).exit_code == 0  # 2: nothing to fix
    assert fix([NO_HINT, "--yes", "--db", db, "--max-turns", "1", "--model", "other"]).exit_code == 1  # 3

    def ids(*flags: str) -> list[int]:
        r = runner.invoke(app, ["replay", "--db", db, "--source", "fix", "--json", *flags])
        assert r.exit_code == 0, r.output
        return [e["id"] for e in json.loads(r.stdout)]

    assert ids("--passed") == [2, 1] and ids("--failed") == [3] and ids() == [3, 2, 1]
    with Store(db) as store:
        ends = [store.episode(i)["meta"]["end"] for i in (1, 2, 3)]
    assert (
        ends[0] in ("submitted", "max_turns")
        and ends[1] == "nothing_to_fix"
        and ends[2] in ("no_fix", "max_turns", "truncated")
    )


def test_overwrite_guard_asks_even_under_yes(tmp_path):
    """A model command that would truncate a file that exists (`wc -l notes.txt > notes.txt` empties it
    before wc reads it) is never run unasked: declined under --yes with no terminal, asked about at a real
    prompt-toolkit prompt otherwise; harmless commands under --yes run as before."""
    import io

    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console
    from test_chat_support import send_later

    from iclaw.agent.episode import new_episode
    from iclaw.agent.protocol import Action
    from iclaw.agent.terminal import Confirm, overwritten_files

    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    (tmp_path / "a b").write_text("x\n")
    cases = {
        "wc -l notes.txt > notes.txt": ["notes.txt"],
        "sort notes.txt>notes.txt;ls": ["notes.txt"],
        "ls 2> notes.txt": ["notes.txt"],
        "ls &> notes.txt": ["notes.txt"],
        "ls >| notes.txt": ["notes.txt"],
        'echo hi > "a b"': ["a b"],
        "cat notes.txt >> notes.txt": [],  # appends
        'echo "> notes.txt"': [],  # quoted: no redirection
        "ls 2>&1": [],
        "ls > new.txt": [],  # a new file loses nothing
        "echo > /dev/null": [],
    }
    for code, want in cases.items():
        assert overwritten_files(code, tmp_path) == want, code

    ep = new_episode("fix it", "bash", tmp_path)
    out = io.StringIO()
    bad, ok = Action("bash", "wc -l notes.txt > notes.txt"), Action("bash", "wc -l notes.txt")
    yes = Confirm(Console(file=out, width=200), auto=True)  # `iclaw fix --yes`, stdin not a terminal
    assert yes(ep, ok) is ok
    assert yes(ep, bad) is None
    assert "would overwrite notes.txt" in out.getvalue() and "declined" in out.getvalue()
    for key, want in (("n", None), ("y", bad)):
        with create_pipe_input() as inp:
            asked = Confirm(Console(file=out, width=200), auto=True, input=inp, output=DummyOutput())
            send_later(inp, [key], delay=0.5)  # after the question is up: typed-ahead keys never answer
            assert asked(ep, bad) is want
    assert (tmp_path / "notes.txt").read_text() == "one\ntwo\n"


def test_a_final_look_is_not_a_fix(tmp_path, ws, monkeypatch):
    """`ls` exits 0 but fixes nothing: the user edits the model's `echo hi` into `ls` at the confirmation, and
    the episode is logged as failed, through the real sandbox. A look is the fix only of a mistyped look, or
    a look at what the user named."""
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.fix import Fixer, FixResult
    from iclaw.agent.protocol import Action
    from iclaw.agent.terminal import load_policy
    from iclaw.tools.hints import distance
    from iclaw.tools.sandbox import Sandbox

    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    cfg = EpisodeConfig(max_turns=1, temperature=0.0)
    with Store(tmp_path / "t.db") as store, one_thread():
        fixer = Fixer(load_policy("demo"), Sandbox(workspace=True), store, cfg, ws, source="fix")
        res = fixer.run("bash", BROKEN, approve=lambda ep, a: Action("bash", "ls"))
        ep = store.episode(res.episode_id)
    assert res.final == "ls" and res.final_exit == 0 and res.only_looked and not res.fixed
    assert ep["status"] == "failed" and ep["meta"]["fixed"] is False

    def verdict(broken: str, final: str) -> bool:
        return FixResult("bash", broken, None, final=final, final_exit=0).only_looked

    assert verdict("gerp milk notes.txt", "ls") and verdict("cta notes.txt", "ls -la")
    assert not verdict("sl", "ls") and not verdict("ls -j", "ls -l") and not verdict("pdw", "pwd")
    assert not verdict("cat notes.tx", "ls | head") and not verdict("cta notes.txt", "cat notes.txt")
    assert not verdict("cat src", "ls src") and verdict("cat src", "ls -la")  # a look at what was named
    assert [distance(a, b) for a, b in [("ehco", "echo"), ("gti", "git"), ("lss", "ls"), ("less", "ls")]] == [
        1,
        1,
        1,
        2,
    ]


FIRST_TRIES = {  # what anyone types first (issue #56's table), each -> what must be proposed and run
    "gti status": "git status",
    "git stauts": "git status",  # git itself prints "The most similar command is status"
    "ehco hello": "echo hello",
    "sl": "ls",
    "grpe milk notes.txt": "grep milk notes.txt",
    "cd scr": "cd src",
    "python src/ap.py": "python3 src/app.py",
    "sort fruit.txt": "sort fruits.txt",  # never `sort notes.txt`, which also exits 0
    "ls -la | grpe txt": "ls -la | grep txt",
    "cta notes.txt": "cat notes.txt",
    "cat note.txt": "cat notes.txt",
    "pyhton3 src/app.py": "python3 src/app.py",
    "mkdir src": "mkdir -p src",
}


def test_the_first_things_anyone_types(tmp_path, ws, monkeypatch):
    """Each row fixed by `iclaw fix --yes` with the built-in policy (no --model), through the real sandbox,
    in a git repository with notes.txt, fruits.txt and src/app.py; the folder's files are unchanged."""
    monkeypatch.delenv("ICLAW_MODEL", raising=False)
    use_home(monkeypatch, tmp_path / "home")
    (ws / "notes.txt").write_text("milk\neggs\nbread\n")
    (ws / "fruits.txt").write_text("pear\napple\nfig\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text('print("app")\n')
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q", "."], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(git + args, cwd=ws, check=True)
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts}
    got = {}
    for typed in FIRST_TRIES:
        with one_thread():
            r = runner.invoke(app, ["fix", typed, "--yes", "--json", "--db", str(tmp_path / "t.db")])
        got[typed] = json.loads(r.stdout)["command"] if r.exit_code == 0 else f"exit {r.exit_code}"
    assert got == FIRST_TRIES
    assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts} == before

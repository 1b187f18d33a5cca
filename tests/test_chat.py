"""`iclaw chat` driven for real: the REPL reads keys from a prompt-toolkit pipe input (in-process) or from a
pseudo-terminal (a separate process), runs commands in the bwrap sandbox, samples a tiny GPT, and writes a real
SQLite file whose rows the tests check. Nothing is mocked."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from prompt_toolkit.input import create_pipe_input
from rich.console import Console
from test_chat_support import (
    BROKEN,
    Pty,
    Screen,
    emitter_model,
    iclaw_argv,
    one_thread,
    paste,
    publish,
    send_later,
    subprocess_env,
    tiny_model,
    type_at_prompts,
    use_home,
)

from iclaw.agent.chat import Chat
from iclaw.agent.fix import classify
from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.store import Store

ENTER, CTRL_C, CTRL_D, CTRL_U, ESC_ENTER = "\r", "\x03", "\x04", "\x15", "\x1b\r"
PROMPT, ASK = "iclaw>", "run it? [Y]es"  # the input line; a confirmation with nothing typed ahead


def here(ep: dict, ws) -> list[tuple]:
    """(input, exit code) of the calls that ran in the user's folder, not in one of the search's copies."""
    return [(c["input"], c["exit_code"]) for c in ep["tool_calls"] if c["cwd"] == str(ws)]


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def run_chat(tmp_path, ws, keys, **kw) -> tuple[Chat, str]:
    """Run a whole chat over a pipe input; returns (chat, printed text). `keys`: (prompt text, keys) steps,
    each typed once the next prompt shows that text (see type_at_prompts), or a plain list of keys, all typed
    ahead at once (only for chats that never ask to confirm: a confirmation discards typed-ahead keys)."""
    out, screen = io.StringIO(), Screen()
    with create_pipe_input() as inp, one_thread():
        chat = Chat(
            kw.pop("model", "demo"),
            db=tmp_path / "t.db",
            cwd=ws,
            console=Console(file=out, width=400, highlight=False),
            input=inp,
            output=screen,
            history_path=tmp_path / "history",
            **{"max_turns": 1, "temperature": 0.0, **kw},
        )
        if keys and isinstance(keys[0], tuple):
            errors = type_at_prompts(inp, screen, keys)
        else:
            errors = []
            send_later(inp, keys)
        chat.run()
    assert not errors, errors[0] + "\n" + out.getvalue()
    return chat, out.getvalue()


def test_classify_rule():
    assert classify("ehco hi") == ("bash", "ehco hi")
    assert classify("/py print(1)") == ("python", "print(1)")
    assert classify("python: print(1)") == ("python", "print(1)")
    assert classify("python:\nx = 1\nprint(x)") == ("python", "x = 1\nprint(x)")
    assert classify("x = 1\nprint(x)") == ("python", "x = 1\nprint(x)")  # multi-line → a pasted snippet
    assert classify("/sh cd /tmp\nls") == ("bash", "cd /tmp\nls")
    assert classify("/py") == ("python", "") and classify("/usr/bin/pyhton -V") == (
        "bash",
        "/usr/bin/pyhton -V",
    )


def test_session_edit_approve_rate_logged(tmp_path, ws, monkeypatch):
    """Type a broken command; the fix that worked in a copy is proposed; the user edits it (`e`), it runs;
    /rate good; Ctrl-D. The rows: one chat episode (model, checkpoint, rating good), its user turn, the user's
    own run at turn 0 (exit 127), the model's try in a copy, then the edited command (exit 0) in the folder —
    and `tasks mine` turns it into a task."""
    use_home(monkeypatch, tmp_path / "home")
    ckpt = publish("demo", emitter_model())
    keys = [
        (PROMPT, BROKEN + ENTER),
        (ASK, "e"),
        ("edit>", CTRL_U + "echo hi there" + ENTER),
        (PROMPT, "/rate good" + ENTER),
        (PROMPT, "/history" + ENTER),
        (PROMPT, CTRL_D),
    ]
    chat, out = run_chat(tmp_path, ws, keys)
    assert "model (turn 1)" in out and "worked in a copy" in out and "you (edited)" in out, out
    assert "fixed: echo hi there" in out
    assert "rated good" in out and "bye" in out

    with Store(tmp_path / "t.db") as store:
        (row,) = store.episodes(source="chat")
        ep = store.episode(row["id"])
    assert ep["model"] == "demo" and ep["checkpoint"] == ckpt and ep["rating"] == "good"
    assert ep["final_command"] == "echo hi there"
    assert here(ep, ws) == [(BROKEN, 127), ("echo hi there", 0)]
    assert ep["tool_calls"][-1]["stdout"] == "hi there\n" and ep["tool_calls"][-1]["cwd"] == str(ws)
    assert [c["input"] for c in ep["tool_calls"][1:-1]] == ["echo hi"]  # the model's try, in a copy
    assert ep["meta"]["fixed"] is True and ep["meta"]["sandbox"] in ("bwrap", "none")
    assert ep["meta"]["approvals"] == [
        {"turn": 1, "proposed": "echo hi", "decision": "edited", "ran": "echo hi there"}
    ]
    assert [t["role"] for t in ep["turns"]][:2] == ["user", "assistant"] and BROKEN in ep["turns"][0]["text"]
    assert (tmp_path / "history").read_text().count(BROKEN) == 1  # persistent prompt history

    from iclaw.tasks.mine import mine_tasks

    mined = mine_tasks(tmp_path / "t.db", check=False)
    assert [(t.broken, t.reference) for t in mined] == [(BROKEN, "echo hi there")]


def test_yes_decline_and_multiline_python(tmp_path, ws, monkeypatch):
    """Ctrl-C at the confirmation cancels the turn (logged as cancelled), Ctrl-C at the prompt only clears
    the line; `n` declines (nothing runs); `a` approves this and every later command; a trailing backslash
    and Esc+Enter make a multi-line input, which is Python."""
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    keys = [
        (PROMPT, BROKEN + ENTER),
        (ASK, CTRL_C),  # at "run it?": the turn is cancelled, the session goes on
        (PROMPT, "half-typed" + CTRL_C),  # at the prompt: the line is dropped
        (PROMPT, BROKEN + ENTER),
        (ASK, "n"),  # declined: only the user's own run is logged
        (PROMPT, BROKEN + ENTER),
        (ASK, "a"),  # always: runs, and auto-approve is on from here
        (PROMPT, "x = 1\\" + ENTER + "print(x +" + ESC_ENTER + ")" + ENTER),  # python: a SyntaxError
        (PROMPT, "/yes" + ENTER),
        (PROMPT, "/quit" + ENTER),
    ]
    chat, out = run_chat(tmp_path, ws, keys)
    assert "cancelled · logged as episode 1" in out
    assert "declined" in out and "auto-approve on" in out and "auto-approve off" in out
    with Store(tmp_path / "t.db") as store:
        eps = [store.episode(r["id"]) for r in reversed(store.episodes(source="chat"))]
    assert [len(here(e, ws)) for e in eps] == [1, 1, 2, 1]
    assert eps[0]["meta"]["end"] == "interrupted" and eps[0]["meta"]["approvals"] == []
    assert [e["status"] for e in eps] == ["failed", "failed", "passed", "failed"]
    assert eps[1]["meta"]["approvals"][0]["decision"] == "declined" and eps[1]["final_command"] is None
    assert eps[2]["final_command"] == "echo hi" and here(eps[2], ws)[1] == ("echo hi", 0)
    py = eps[3]["tool_calls"][0]
    assert py["tool"] == "python" and py["input"] == "x = 1\nprint(x +\n)" and py["exit_code"] == 1
    assert "SyntaxError" in py["stderr"]


def test_bad_input_keeps_session_up(tmp_path, ws, monkeypatch):
    """Empty lines, a 1 MB paste, binary garbage, a model that only writes nonsense, a command printing
    100 MB, unknown slash commands, a missing model: each gets a message, the session goes on to /quit, and
    what ran is logged."""
    use_home(monkeypatch, tmp_path / "home")
    first = publish("demo", tiny_model(0))  # untrained: every turn is nonsense
    flood = "head -c 100000000 /dev/zero | tr '\\0' x; exit 3"
    keys = [
        ENTER,
        "   " + ENTER,
        paste("y" * 1_000_000) + ENTER.encode(),
        paste(b"\x00\xff\xfe garbage \x01\x02\x7f") + ENTER.encode(),
        flood + ENTER,
        "/model missing" + ENTER,
        "/frobnicate" + ENTER,
        "/rate meh" + ENTER,
        "/replay 999" + ENTER,
        "/reload" + ENTER,
        "echo works" + ENTER,
        "/quit" + ENTER,
    ]
    chat, out = run_chat(tmp_path, ws, keys, max_turns=2)

    assert "input is 1,000,000 characters; the limit is 65,536" in out
    assert "unknown model 'missing'" in out and "still using demo@" in out
    assert "unknown command /frobnicate" in out and "usage: /rate good|bad" in out
    assert "episode 999: no such episode" in out and f"demo@{first} is the latest checkpoint" in out
    assert "invalid action" in out and "no working fix" in out
    assert "output capped by the sandbox" in out and "more characters" in out
    assert "works as is" in out and "bye" in out

    with Store(tmp_path / "t.db") as store:
        eps = [store.episode(r["id"]) for r in reversed(store.episodes(source="chat"))]
    inputs = [e["tool_calls"][0]["input"] for e in eps]  # undecodable bytes logged as U+FFFD
    assert inputs == ["\x00\ufffd\ufffd garbage \x01\x02\x7f", flood, "echo works"]
    garbage, flooded, works = eps
    assert garbage["tool_calls"][0]["exit_code"] == 126  # a NUL byte cannot be an argv: not run, said so
    assert all(e["checkpoint"] == first and e["model"] == "demo" for e in eps)
    assert flooded["tool_calls"][0]["exit_code"] == 3
    assert len(flooded["tool_calls"][0]["stdout"]) < 70_000  # the sandbox kept 64 KiB, not 100 MB
    # nonsense turns of up to 160 tokens fill the tiny model's 512-token context: the episode ends there
    assert flooded["meta"]["end"] in ("no_fix", "truncated") and flooded["meta"]["invalid"] >= 1
    assert works["meta"]["end"] == "nothing_to_fix" and works["tool_calls"][0]["stdout"] == "works\n"


def test_failed_loads_keep_the_session(tmp_path, ws, monkeypatch):
    """`latest` moves to a checkpoint that cannot be read: the reload fails, says why, keeps the old model
    (and its id in the log). A chat that starts on such a checkpoint stays up until /model gives it one."""
    home = use_home(monkeypatch, tmp_path / "home")
    first = publish("demo", tiny_model(0))
    out = io.StringIO()
    chat = Chat("demo", db=tmp_path / "t.db", cwd=ws, console=Console(file=out, width=400), max_turns=1)
    assert chat.policy.ckpt_id == first
    bad = home / "models" / "demo" / "checkpoints" / "broken-1"
    bad.mkdir(parents=True)
    (bad / "config.json").write_text("{}")
    (bad / "model.safetensors").write_bytes(b"not safetensors")
    (home / "models" / "demo" / "latest").write_text("broken-1\n")
    chat.handle("/reload")
    assert f"reload of demo → broken-1 failed, keeping demo@{first}" in out.getvalue()
    with one_thread():
        res = chat.turn("bash", "echo ok")
    assert chat.policy.ckpt_id == first and out.getvalue().count("failed, keeping") == 1  # not every turn
    chat.close()

    out = io.StringIO()
    chat = Chat("demo", db=tmp_path / "t.db", cwd=ws, console=Console(file=out, width=400), max_turns=1)
    assert chat.handle("echo hi") is None and chat.policy is None
    assert "cannot load demo:" in out.getvalue() and "load one with /model NAME" in out.getvalue()
    publish("other", tiny_model(1))
    chat.handle("/model other")
    assert chat.policy.name == "other" and "now using other@" in out.getvalue()
    chat.close()
    with Store(tmp_path / "t.db") as store:
        assert store.episode(res.episode_id)["checkpoint"] == first


def test_missing_model_is_one_line_error(tmp_path, monkeypatch):
    use_home(monkeypatch, tmp_path / "home")
    with pytest.raises(IclawError, match="unknown model 'nope'"):
        Chat("nope", db=tmp_path / "t.db", cwd=tmp_path)
    p = subprocess.run(
        iclaw_argv("chat", "--model", "nope", "--db", str(tmp_path / "t.db")),
        env=subprocess_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 2 and p.stdout == ""
    (line,) = p.stderr.strip().splitlines()  # the built-in policy is the only model this home knows
    assert line.startswith("error: unknown model 'nope' (known: iclaw-small; import one with"), line


def test_hot_reload_in_a_running_chat(tmp_path, ws, monkeypatch):
    """Chat runs in its own process on a pty; another process publishes a new checkpoint under the same name;
    the next turn says `reloaded demo → <id>` and its episode logs the new checkpoint id, with no restart."""
    home = use_home(monkeypatch, tmp_path / "home")
    first = publish("demo", tiny_model(0))
    db = tmp_path / "t.db"
    env = subprocess_env(home)
    term = Pty(iclaw_argv("chat", "--yes", "--max-turns", "1", "--db", str(db)), env, ws)
    try:
        term.expect(r"iclaw>")
        startup = time.perf_counter() - term.t0
        print(f"time to the first chat prompt (pty, tiny model): {startup:.2f} s")
        term.send(BROKEN + ENTER)
        done1 = term.expect(r"episode 1 · demo@" + first)
        # A second process (a trainer, say) publishes a new checkpoint of `demo`.
        code = (
            "import torch; from iclaw.model import registry; from iclaw.model.gpt import GPT, preset; "
            "torch.manual_seed(5); print(registry.publish('demo', GPT(preset('tiny', n_layer=1, n_head=2, "
            "n_embd=32, block_size=256))))"
        )
        term.expect(r"iclaw>", start=done1.end())  # the next prompt is up (keys go to it, not the tty)
        second = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
        assert second != first and registry.latest_id("demo") == second
        term.send(BROKEN + ENTER)
        term.expect(r"reloaded demo → " + second, start=done1.end())
        done2 = term.expect(r"episode 2 · demo@" + second, start=done1.end())
        term.expect(r"iclaw>", start=done2.end())
        term.send(CTRL_D)
        term.expect(r"bye")
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    with Store(db) as store:
        rows = list(reversed(store.episodes(source="chat")))
    assert [r["checkpoint"] for r in rows] == [first, second]
    assert all(r["model"] == "demo" for r in rows)
    assert json.dumps(rows[1]["meta"])  # logged and readable


TYPED = 'pyhton3 -c "print(1)"'  # the user's next broken command, typed while the model works


def test_typed_ahead_keys_never_answer(tmp_path, ws, monkeypatch):
    """Keys typed before a confirmation is up (here: the next command and its Enter, sent with the first
    one) are not its answer: Enter then does not say yes, and an answer letter counts only after a pause.
    Keys typed at the question in one stream are typing too. Either way the proposed `echo hi` never runs,
    and what was typed comes back in the next input line, which only the user's own Enter submits."""
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    typed2 = 'pyhton3 -c "print(2)"'  # its `y` would answer yes if typing counted
    keys = [
        (PROMPT, BROKEN + ENTER + TYPED + ENTER),  # all at once: TYPED is typed ahead of the question
        ("kept for the next line", [ENTER, 0.5, "n"]),  # Enter: no answer; `n` after a pause: declined
        (f"{PROMPT} {TYPED}", ENTER),  # back in the line, not submitted until this Enter
        (ASK, [typed2 + ENTER, 0.5, "n"]),  # typed at the question: typing, not answers
        (ASK, [0.5, "n"]),  # the next fix that worked in a copy (the model's echo hi)
        (f"{PROMPT} {typed2}", CTRL_U + CTRL_D),
    ]
    chat, out = run_chat(tmp_path, ws, keys)
    with Store(tmp_path / "t.db") as store:
        eps = [store.episode(r["id"]) for r in reversed(store.episodes(source="chat"))]
    assert [c for e in eps for c in here(e, ws)] == [(BROKEN, 127), (TYPED, 127)], out  # no fix ran here
    assert [a["decision"] for e in eps for a in e["meta"]["approvals"]] == ["declined"] * 3
    assert [a["proposed"] for a in eps[1]["meta"]["approvals"]] == ['python3 -c "print(1)"', "echo hi"]


def test_typed_ahead_in_a_terminal_never_answers(tmp_path, ws, monkeypatch):
    """The issue, on a real terminal: the next command typed while the model works sits in the tty (cooked
    mode, not yet read by anyone). The confirmation takes it off the input before it asks; the pending
    command does not run; the typed command comes back, whole, in the next line."""
    home = use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    db = tmp_path / "t.db"
    term = Pty(
        iclaw_argv("chat", "--max-turns", "1", "--temperature", "0", "--db", str(db)),
        subprocess_env(home),
        ws,
    )
    try:
        term.expect(PROMPT)
        term.send(BROKEN + ENTER)
        time.sleep(0.3)  # the input line is done: these keys wait in the terminal
        term.send(TYPED + ENTER)
        asked = term.expect(r"run it\? press y/n/e/a \(what you typed is kept for the next line\)")
        time.sleep(0.5)
        term.send("n")
        line = term.expect(re.escape(f"{PROMPT} {TYPED}"), start=asked.end())
        term.send(CTRL_U + CTRL_D)
        term.expect("bye", start=line.end())
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    with Store(db) as store:
        (ep,) = store.episodes(source="chat")
        ep = store.episode(ep["id"])
    assert here(ep, ws) == [(BROKEN, 127)]
    assert ep["status"] == "failed" and ep["meta"]["approvals"][0]["decision"] == "declined"


def calls_so_far(db) -> list[tuple]:
    """(status, input, exit code, in a copy?) of every logged call, read by another connection while the chat
    runs."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT e.status, c.input, c.exit_code, c.cwd FROM tool_calls c JOIN episodes e ON e.id = c.episode_id "
            "ORDER BY c.id"
        ).fetchall()
    finally:
        conn.close()
    return [(status, code, exit_code, "/iclaw-try-" in cwd) for status, code, exit_code, cwd in rows]


def test_every_call_is_logged_as_it_runs(tmp_path, ws, monkeypatch):
    """The issue's lost calls: the user's command runs, the search tries fixes in copies, `n` at the first
    proposal, Ctrl-D at the next. Each call is in the store (another connection reads it) while the episode
    still runs, and the ended episode has every call, a status and how it ended."""
    use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    db = tmp_path / "t.db"
    seen = []

    def look(keys):
        return lambda: (seen.append(calls_so_far(db)), keys)[1]

    keys = [
        (PROMPT, TYPED + ENTER),
        (ASK, look("n")),  # python3 -c "print(1)", the hint's fix
        (ASK, look(CTRL_D)),  # echo hi, the model's: Ctrl-D declines it, and the turn stops
        (PROMPT, CTRL_D),
    ]
    chat, out = run_chat(tmp_path, ws, keys, max_turns=3)
    running = [("running", TYPED, 127, False), ("running", "echo hi", 0, True)]  # the model's try, in a copy
    assert seen[0][:2] == running and seen[1] == seen[0], seen
    with Store(db) as store:
        (row,) = store.episodes(source="chat")
        ep = store.episode(row["id"])
    assert here(ep, ws) == [(TYPED, 127)]
    assert [(c["turn"], c["input"]) for c in ep["tool_calls"]][:2] == [(0, TYPED), (0, "echo hi")]
    assert ep["status"] == "failed" and ep["meta"]["end"] == "eof" and ep["final_command"] is None
    assert [a["decision"] for a in ep["meta"]["approvals"]] == ["declined", "declined"]
    assert {c["code"]: c["exit_code"] for c in ep["meta"]["candidates"]} == {
        'python3 -c "print(1)"': 0,
        "echo hi": 0,
    }
    assert [t["role"] for t in ep["turns"]][:3] == ["user", "assistant", "obs"]
    assert ep["ended_at"] and "no working fix (eof)" in out


def test_kill_9_keeps_every_call(tmp_path, ws, monkeypatch):
    """A chat process killed with SIGKILL while it waits at the second proposal: the user's call and the
    search's tries in copies are in the store, with their exit codes, and the episode says "running" (it
    never ended)."""
    home = use_home(monkeypatch, tmp_path / "home")
    publish("demo", emitter_model())
    db = tmp_path / "t.db"
    argv = iclaw_argv("chat", "--max-turns", "3", "--temperature", "0", "--db", str(db))
    term = Pty(argv, subprocess_env(home), ws)
    try:
        term.expect(PROMPT)
        term.send(TYPED + ENTER)
        asked = term.expect(r"run it\?")
        term.send("n")
        term.expect(r"run it\?", start=term.expect("declined", start=asked.end()).end())  # the next fix waits
        term.proc.send_signal(signal.SIGKILL)
        term.proc.wait(timeout=30)
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
        os.close(term.master)
    with Store(db) as store:
        (row,) = store.episodes(source="chat")
        ep = store.episode(row["id"])
    assert [(c["input"], c["exit_code"]) for c in ep["tool_calls"]][:2] == [(TYPED, 127), ("echo hi", 0)]
    assert here(ep, ws) == [(TYPED, 127)]  # the rest: the model's tries, in a copy
    assert ep["status"] == "running" and ep["ended_at"] is None
    assert ep["meta"]["broken_exit"] == 127 and ep["model"] == "demo" and ep["checkpoint"]

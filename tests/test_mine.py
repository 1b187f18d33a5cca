"""Mining tasks from the trajectory store (`iclaw tasks mine`): real sqlite files, a real sandbox that checks
each mined task, the CLI as a subprocess."""

from __future__ import annotations

import re

import pytest
from helpers import run_iclaw

from iclaw.errors import IclawError
from iclaw.tasks import Task, Verifier, load_tasks, mine_tasks, save_tasks
from iclaw.tools.sandbox import Limits, Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(timeout_s=5.0))


def call(turn, tool, inp, exit_code, stdout="", stderr="", cwd=None):
    return {
        "turn": turn,
        "tool": tool,
        "input": inp,
        "stdout": stdout,
        "stderr": stderr,
        "exit_code": exit_code,
        "duration_ms": 3.0,
        "timed_out": False,
        "signal": None,
        "cwd": cwd,
    }


def test_mine_tasks_from_store(tmp_path, sandbox):
    from iclaw.store import Store

    work = tmp_path / "work"
    work.mkdir()
    (work / "names.txt").write_text("b\na\nc\n")
    (work / ".secret").write_text("hidden files are not copied")
    store = Store(tmp_path / "traj.db")
    fixed = [
        call(0, "bash", "sotr names.txt", 127, stderr="bash: sotr: command not found", cwd=str(work)),
        call(1, "bash", "ls", 0, stdout="names.txt\n", cwd=str(work)),
        call(2, "bash", "sort names.txt", 0, stdout="a\nb\nc\n", cwd=str(work)),
    ]
    e1 = store.log_episode(source="chat", tool_calls=fixed)
    store.log_episode(source="chat", tool_calls=fixed)  # the same fix again: a duplicate
    e3 = store.log_episode(
        source="chat",
        final_command='print("hi")',
        tool_calls=[
            call(0, "python", 'print("hi"', 1, stderr="SyntaxError: '(' was never closed"),
            call(1, "python", 'print("hi")', 0, stdout="hi\n"),
        ],
    )
    store.rate(e3, "good")
    # only successes: nothing to learn
    store.log_episode(source="chat", tool_calls=[call(0, "bash", "echo ok", 0, stdout="ok\n")])
    # the fixture is gone (cwd deleted) and the "fix" needs it: dropped by the re-run check
    store.log_episode(
        source="grpo",
        tool_calls=[
            call(0, "bash", "cta gone.txt", 127, cwd=str(tmp_path / "deleted")),
            call(1, "bash", "cat gone.txt", 0, stdout="x\n", cwd=str(tmp_path / "deleted")),
        ],
    )
    # the fixture comes from the task file the episode was generated from
    task_file = tmp_path / "src.jsonl"
    save_tasks(
        [
            Task(
                id="src-1",
                kind="bash",
                family="wrong-file",
                broken="cat notes.txt",
                reference="cat notes_7b.txt",
                files={"notes_7b.txt": "hello\n"},
            )
        ],
        task_file,
    )
    store.log_episode(
        source="grpo",
        task_id="src-1",
        tool_calls=[
            call(0, "bash", "cat notes.txt", 1, stderr="cat: notes.txt: No such file or directory"),
            call(1, "bash", "ls", 0, stdout="notes_7b.txt\n"),
            call(2, "bash", "cat notes_7b.txt", 0, stdout="hello\n"),
        ],
    )
    store.close()

    unchecked = mine_tasks(tmp_path / "traj.db", tasks_file=task_file, check=False)
    report: dict = {}
    mined = mine_tasks(tmp_path / "traj.db", tasks_file=task_file, check=True, sandbox=sandbox, report=report)
    assert len(unchecked) == 4 and len(mined) == 3
    assert report == {  # the task whose folder is gone: said, not trained on
        "found": 4,
        "kept": 3,
        "dropped": {
            "the fix fails or prints nothing in the rebuilt folder (its files could not be recovered)": 1
        },
        "by_kind": {"bash": 2, "python": 1},
    }
    by_broken = {t.broken: t for t in mined}
    t = by_broken["sotr names.txt"]
    assert t.reference == "sort names.txt" and t.kind == "bash"  # the fix, not the `ls` in between
    assert t.files == {"names.txt": "b\na\nc\n"} and t.multi_turn and t.broken_exit == 127
    assert "command not found" in t.error
    p = by_broken['print("hi"']
    assert p.kind == "python" and p.reference == 'print("hi")' and p.files == {}
    w = by_broken["cat notes.txt"]
    assert w.reference == "cat notes_7b.txt" and w.files == {"notes_7b.txt": "hello\n"} and w.multi_turn
    assert all(t.id.startswith("mined-") and t.family == "mined" for t in mined)
    assert e1 >= 1

    # the mined file is an ordinary task file: oracle passes, broken fails
    save_tasks(mined, tmp_path / "mined.jsonl")
    loaded = load_tasks(tmp_path / "mined.jsonl")
    verdicts = Verifier(sandbox).verify_many([(t, c) for t in loaded for c in (t.reference, t.broken)])
    assert [v.passed for v in verdicts] == [True, False] * len(loaded)

    r = run_iclaw(
        "tasks",
        "mine",
        "--db",
        str(tmp_path / "traj.db"),
        "--tasks",
        str(task_file),
        "--out",
        str(tmp_path / "cli.jsonl"),
    )
    assert r.returncode == 0, r.stderr
    assert load_tasks(tmp_path / "cli.jsonl") == loaded
    assert "mined 3 task(s)" in r.stdout and "(bash 2, python 1); dropped 1 of 4: 1 the fix fails" in r.stdout


def test_mine_a_fix_the_user_typed_by_hand(tmp_path, sandbox):
    """The policy failed on `cta notes.txt`, the user then typed `cat notes.txt` themselves: that pair is a
    task. A next command that is another request (`sotr` -> `cat`), or runs elsewhere, is not."""
    from iclaw.store import Store

    work, other = tmp_path / "work", tmp_path / "other"
    for d in (work, other):
        d.mkdir()
        (d / "notes.txt").write_text("milk\neggs\n")
    (work / "t.db-wal").write_text("")  # the store's own files are never part of a fixture
    failed = [
        call(0, "bash", "cta notes.txt", 127, stderr="bash: cta: command not found", cwd=str(work)),
        call(0, "bash", "ls", 0, stdout="notes.txt\n", cwd=str(work)),
        call(1, "bash", "touch notes.txt", 0, cwd=str(work)),  # the policy's wrong "fix" exits 0 too
    ]
    by_hand = [call(0, "bash", "cat notes.txt", 0, stdout="milk\neggs\n", cwd=str(work))]
    with Store(tmp_path / "traj.db") as store:
        store.log_episode(source="chat", tool_calls=failed)
        store.log_episode(source="fix", tool_calls=by_hand)
        store.log_episode(source="chat", tool_calls=[{**failed[0], "input": "sotr notes.txt"}])
        store.log_episode(source="chat", tool_calls=by_hand)  # not a small edit of `sotr notes.txt`
        store.log_episode(source="chat", tool_calls=[{**failed[0], "cwd": str(other)}])
        store.log_episode(source="chat", tool_calls=by_hand)  # another directory
    (t,) = mine_tasks(tmp_path / "traj.db", check=True, sandbox=sandbox)
    assert (t.broken, t.reference, t.kind, t.multi_turn) == ("cta notes.txt", "cat notes.txt", "bash", False)
    assert t.files == {"notes.txt": "milk\neggs\n"} and "command not found" in t.error


def test_mine_rejects_missing_or_foreign_db(tmp_path):
    with pytest.raises(IclawError, match="no such trajectory database"):
        mine_tasks(tmp_path / "none.db")
    junk = tmp_path / "junk.db"
    junk.write_text("this is not sqlite" * 100)
    with pytest.raises(IclawError, match="not an iclaw trajectory database"):
        mine_tasks(junk)
    import sqlite3

    other = tmp_path / "other.db"  # another project's tables of the same names
    with sqlite3.connect(other) as conn:
        conn.execute("create table episodes (id integer primary key, title text)")
        conn.execute("create table tool_calls (id integer primary key, name text)")
    with pytest.raises(IclawError, match="table episodes has no column"):
        mine_tasks(other)


def test_train_from_a_store_with_no_failures_is_one_line(tmp_path):
    """`train grpo --from-db` on a store where nothing failed and then worked: one clear line, nothing trained."""
    from iclaw.store import Store

    with Store(tmp_path / "t.db") as store:
        store.log_episode(
            source="fix", tool_calls=[call(0, "bash", "echo ok", 0, stdout="ok\n", cwd=str(tmp_path))]
        )
    r = run_iclaw(
        "train", "grpo", "--model", "iclaw-small", "--from-db", "--db", str(tmp_path / "t.db"), "--out", "x"
    )
    assert (
        r.returncode == 2 and "nothing to train on: no failed command followed by one that worked" in r.stderr
    )
    assert "mined 0 task(s)" in r.stdout and "Traceback" not in r.stderr


def test_sft_imitates_the_fixes_in_the_store(tmp_path, monkeypatch):
    """`train sft --model iclaw-small --from-db`: the user's own correction (`cta` failed, they typed `cat`) is
    mined, re-run in its rebuilt folder and imitated; the result is a checkpoint that loads. A store with
    nothing mined is one line, nothing trained."""
    from iclaw.model import registry
    from iclaw.store import Store

    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("milk\neggs\n")
    failed = call(0, "bash", "cta notes.txt", 127, stderr="bash: cta: command not found", cwd=str(work))
    by_hand = call(0, "bash", "cat notes.txt", 0, stdout="milk\neggs\n", cwd=str(work))
    with Store(tmp_path / "t.db") as store:
        store.log_episode(source="fix", tool_calls=[failed])
        store.log_episode(source="fix", tool_calls=[by_hand])
    args = ("train", "sft", "--model", "iclaw-small", "--from-db", "--db", str(tmp_path / "t.db"))
    r = run_iclaw(*args, "--steps", "2", "--batch-size", "2", "--out", "mine")
    assert r.returncode == 0, r.stderr
    assert "mined 1 task(s)" in r.stdout and "from the trajectory store → mine" in r.stdout
    model, _ = registry.load("mine")
    assert model.config.to_dict() == registry.load("iclaw-small")[0].config.to_dict()
    with Store(tmp_path / "empty.db") as store:
        store.log_episode(source="fix", tool_calls=[by_hand])
    r = run_iclaw(*args[:5], "--db", str(tmp_path / "empty.db"), "--out", "none")
    assert r.returncode == 2 and "nothing to train on" in r.stderr and "Traceback" not in r.stderr
    assert not registry.is_registered("none")


def test_train_grpo_from_db_scores_a_held_out_slice_of_the_mined_tasks(tmp_path, monkeypatch):
    """Ten corrections typed by hand are mined; every fifth (by a hash of its id, the same slice each run) is
    held out of `train grpo --from-db` and scored greedy before and after; fewer than ten: no slice."""
    from iclaw.store import Store
    from iclaw.tasks.task import Task
    from iclaw.train.common import hold_out_mined

    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    work.mkdir()
    with Store(tmp_path / "t.db") as store:
        for i in range(10):
            (work / f"list{i}.txt").write_text(f"item {i}\n")
            err = "bash: cta: command not found"
            store.log_episode(
                source="fix", tool_calls=[call(0, "bash", f"cta list{i}.txt", 127, stderr=err, cwd=str(work))]
            )
            ok = call(0, "bash", f"cat list{i}.txt", 0, stdout=f"item {i}\n", cwd=str(work))
            store.log_episode(source="fix", tool_calls=[ok])
    args = ("train", "grpo", "--model", "iclaw-small", "--from-db", "--db", str(tmp_path / "t.db"))
    r = run_iclaw(*args, "--steps", "1", "--group-size", "2", "--tasks-per-step", "2", "--out", "mine")
    assert r.returncode == 0, r.stderr
    assert "mined 10 task(s)" in r.stdout
    assert "held-out slice of the mined tasks (2, never trained on): pass@1" in r.stdout, r.stdout
    m = re.search(
        r"pass@1 ([\d.]+) → ([\d.]+) % \(([-+][\d.]+) points, 95 % \[([-+][\d.]+), ([-+][\d.]+)\]",
        " ".join(r.stdout.split()),
    )
    before, after, delta, lo, hi = map(float, m.groups())  # points, not points x 100
    assert abs(after - before - delta) < 0.11 and -100 <= lo <= delta <= hi <= 100, r.stdout

    tasks = [Task(id=f"m{i}", kind="bash", family="mined", broken="x", reference="y") for i in range(10)]
    generated = [Task(id="g0", kind="bash", family="cmd-typo", broken="x", reference="y")]
    train, held = hold_out_mined(tasks + generated)
    assert len(held) == 2 and not {t.id for t in train} & {t.id for t in held}
    assert generated[0] in train and hold_out_mined(tasks + generated) == (train, held)
    assert hold_out_mined(tasks[:9]) == (tasks[:9], [])

"""The trajectory store on real SQLite files: round trips, filters, FTS, metrics, migrations,
two writers at once, a writer killed with SIGKILL, and files that are not ours."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
import sqlite_utils

from iclaw.errors import IclawError
from iclaw.store import SCHEMA_VERSION, Store, parse_since


def call(i: int = 0, **kw) -> dict:
    c = {
        "turn": i,
        "tool": "bash",
        "input": f"echo item{i}",
        "stdout": f"item{i}\n",
        "stderr": "",
        "exit_code": 0,
        "duration_ms": 1.5,
        "timed_out": False,
        "signal": None,
        "cwd": "/tmp/task",
    }
    c.update(kw)
    return c


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "t.db")
    yield s
    s.close()


def test_round_trip(store):
    eid = store.log_episode(
        source="eval",
        task_id="uniq-typo-1",
        family="typo",
        model="124m",
        checkpoint="ckpt/step-10",
        run_id="r1",
        step=10,
        reward=1,
        status="passed",
        final_command="uniq names.txt",
        meta={"group": 3, "temperature": 0.7},
        turns=[
            {"turn": 0, "role": "user", "text": "fix: uinq names.txt"},
            {"turn": 0, "role": "assistant", "text": "<|bash|>uniq names.txt<|end|>"},
            {"turn": 0, "role": "obs", "text": "a\nb\n"},
        ],
        tool_calls=[
            call(0, input="uniq names.txt", stdout="a\nb\n", timed_out=True, signal=9, exit_code=124)
        ],
    )
    ep = store.episode(eid)
    assert ep["task_id"] == "uniq-typo-1" and ep["reward"] == 1.0 and ep["status"] == "passed"
    assert ep["meta"] == {"group": 3, "temperature": 0.7}
    assert [t["role"] for t in ep["turns"]] == ["user", "assistant", "obs"]
    assert ep["turns"][1]["text"] == "<|bash|>uniq names.txt<|end|>"
    (c,) = ep["tool_calls"]
    assert (
        c["input"] == "uniq names.txt"
        and c["exit_code"] == 124
        and c["timed_out"] is True
        and c["signal"] == 9
    )
    assert ep["started_at"] and ep["ended_at"] and c["created_at"]
    with pytest.raises(IclawError, match="no such episode"):
        store.episode(eid + 100)


def test_accepts_tool_result_dicts(store, tmp_path):
    from iclaw.tools.sandbox import Sandbox

    r = Sandbox(level="none").run("bash", "echo hi", tmp_path)
    eid = store.log_episode(source="exec", tool_calls=[r.to_dict() | {"turn": 0, "cwd": str(tmp_path)}])
    assert store.episode(eid)["tool_calls"][0]["stdout"] == "hi\n"


def test_validation(store):
    with pytest.raises(IclawError, match="source"):
        store.log_episode(source="")
    with pytest.raises(IclawError, match="status"):
        store.log_episode(source="x", status="great")
    with pytest.raises(IclawError, match="role"):
        store.log_episode(source="x", turns=[{"turn": 0, "role": "system", "text": ""}])
    eid = store.log_episode(source="x")
    store.rate(eid, "good")
    assert store.episode(eid)["rating"] == "good"
    store.rate(eid, "bad")
    assert store.episode(eid)["rating"] == "bad"
    with pytest.raises(IclawError, match="rating"):
        store.rate(eid, "meh")
    with pytest.raises(IclawError, match="no such episode"):
        store.rate(9999, "good")


def test_filters_and_grep(store):
    store.log_episode(source="chat", model="124m", status=None, tool_calls=[call(0, input="ls -la")])
    store.log_episode(source="eval", task_id="t1", model="124m", status="passed", tool_calls=[call(0)])
    store.log_episode(
        source="eval",
        task_id="t2",
        model="760m",
        status="failed",
        tool_calls=[call(0, input="grpe foo", stderr="grpe: command not found", exit_code=127)],
    )
    store.log_episode(source="train", task_id="t1", status="error", started_at="2020-01-01T00:00:00+00:00")
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    assert ids(store.episodes()) == [4, 3, 2, 1]
    assert ids(store.episodes(source="eval")) == [3, 2]
    assert ids(store.episodes(passed=True)) == [2]
    assert ids(store.episodes(passed=False)) == [4, 3]
    assert ids(store.episodes(task="t1")) == [4, 2]
    assert ids(store.episodes(model="760m")) == [3]
    assert ids(store.episodes(since="2021-01-01")) == [3, 2, 1]
    assert ids(store.episodes(since="1h")) == [3, 2, 1]
    assert ids(store.episodes(grep="command not found")) == [3]
    assert ids(store.episodes(grep="grpe")) == [3]
    assert ids(store.episodes(grep='ls -la "quoted')) == []  # user text never breaks the FTS syntax
    assert ids(store.episodes(limit=2)) == [4, 3]
    assert store.episodes(source="eval")[0]["n_tool_calls"] == 1
    with pytest.raises(IclawError, match="--since"):
        store.episodes(since="yesterday-ish")


def test_parse_since():
    assert parse_since("2026-01-31").startswith("2026-01-31T00:00:00")
    assert parse_since("7d") < parse_since("1h") < parse_since("1s")


def test_fts_is_browsable_with_sqlite_utils_and_kept_in_sync(store):
    store.log_episode(source="x", tool_calls=[call(0, input="needle-alpha"), call(1, stdout="needle-beta")])
    db = sqlite_utils.Database(store.path)
    assert db["tool_calls"].detect_fts() == "tool_calls_fts"
    assert {r["input"] for r in db["tool_calls"].search("needle*")} == {"needle-alpha", "echo item1"}
    db.execute("UPDATE tool_calls SET stdout = 'changed' WHERE stdout = 'needle-beta'")
    db.execute("DELETE FROM tool_calls WHERE input = 'needle-alpha'")
    db.conn.commit()
    assert list(db["tool_calls"].search("needle*")) == []
    assert [r["stdout"] for r in db["tool_calls"].search("changed")] == ["changed"]
    assert set(db.table_names()) >= {"episodes", "tool_calls", "turns", "train_metrics", "schema_version"}


def test_log_episodes_is_one_transaction(store):
    good = {"source": "train", "run_id": "r", "step": 1, "reward": 0.5, "tool_calls": [call(0)]}
    ids = store.log_episodes([good, dict(good, reward=1.0)])
    assert len(ids) == 2 and store.count("episodes") == 2
    with pytest.raises(IclawError):
        store.log_episodes([good, dict(good, status="bogus")])  # validated up front: nothing written
    assert store.count("episodes") == 2 and store.count("tool_calls") == 2


def test_metrics_and_runs(store):
    store.log_metrics("run-a", 0, {"loss": 1.5, "reward/mean": 0.25})
    store.log_metrics("run-a", 1, {"loss": 1.0, "kl": 0.01, "note": [1, 2]})
    store.log_metrics("run-a", 1, {"loss": 0.9, "kl": 0.02})  # a re-logged step replaces the old row
    store.log_metrics("run-b", 5, {"loss": 2.0})
    rows = store.metrics("run-a")
    assert [r["step"] for r in rows] == [0, 1]
    assert rows[0]["reward/mean"] == 0.25 and rows[0]["kl"] is None
    assert rows[1]["loss"] == 0.9 and rows[1]["kl"] == 0.02
    runs = {r["run_id"]: r for r in store.runs()}
    assert runs["run-a"]["steps"] == 2 and runs["run-a"]["last_step"] == 1 and runs["run-b"]["steps"] == 1
    assert store.metrics("nope") == []


def test_wal_schema_version_and_reopen(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as s:
        s.log_episode(source="x", tool_calls=[call(0)])
        assert s.schema_version() == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with Store(path) as s:  # reopening migrates nothing and keeps the data
        assert s.schema_version() == SCHEMA_VERSION and s.count("tool_calls") == 1


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "t.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(IclawError, match="newer"):
        Store(path)


def test_default_path_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_DB", str(tmp_path / "env.db"))
    with Store() as s:
        assert s.path == tmp_path / "env.db"
    monkeypatch.delenv("ICLAW_DB")
    monkeypatch.chdir(tmp_path)
    with Store() as s:
        assert s.path.name == "trajectories.db"
    assert (tmp_path / "trajectories.db").exists()


@pytest.mark.parametrize(
    "content",
    [b"this is plain text, not a database\n" * 10, b"SQLite format 3\x00" + b"\x07" * 200, b"\x00" * 4096],
    ids=["text", "truncated-sqlite", "zeros"],
)
def test_corrupt_file_gives_one_clear_error(tmp_path, content):
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    with pytest.raises(IclawError) as e:
        Store(bad)
    assert str(bad) in str(e.value) and "not an iclaw trajectory database" in str(e.value)


def test_foreign_sqlite_and_directory_refused(tmp_path):
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(IclawError, match="invoices"):
        Store(other)
    with pytest.raises(IclawError, match="directory"):
        Store(tmp_path)


def test_cli_bad_db_is_one_error_line(tmp_path):
    bad = tmp_path / "badfile"
    bad.write_text("definitely not sqlite\n")
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", "replay", "--db", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode != 0
    assert "Traceback" not in p.stderr + p.stdout
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "badfile" in lines[0]


WRITER = textwrap.dedent(
    """
    import sys, time, pathlib
    from iclaw.store import Store
    path, tag, episodes, calls, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    store = Store(path)
    while not pathlib.Path(go).exists():   # start together
        time.sleep(0.005)
    for e in range(episodes):
        tcs = [{"turn": i, "tool": "bash", "input": f"{tag} ep{e} call{i}", "stdout": "x" * 200,
                "stderr": "", "exit_code": 0, "duration_ms": 1.0} for i in range(calls)]
        eid = store.log_episode(source=tag, meta={"n": calls}, tool_calls=tcs)
        print(eid, flush=True)
    """
)


def test_two_processes_append_at_once(tmp_path):
    path, go = tmp_path / "shared.db", tmp_path / "go"
    Store(path).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, "100", "10", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta")
    ]
    time.sleep(0.5)  # both have opened the store
    go.touch()
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert len(out.split()) == 100
    with Store(path) as s:
        assert s.count("tool_calls") == 2000 and s.count("episodes") == 200
        per_source = dict(
            s.db.execute(
                "SELECT source, count(*) FROM tool_calls JOIN episodes e ON e.id = episode_id GROUP BY source"
            ).fetchall()
        )
        assert per_source == {"alpha": 1000, "beta": 1000}
        assert s.db.execute("SELECT count(*) FROM tool_calls_fts").fetchone()[0] == 2000
        assert len(s.episodes(grep="alpha ep99 call9")) == 1


CRASHER = textwrap.dedent(
    """
    import sys
    from iclaw.store import Store
    store = Store(sys.argv[1])
    for e in range(3):
        calls = [{"turn": i, "input": f"small ep{e} call{i}", "stdout": "x" * 100} for i in range(50)]
        print(store.log_episode(source="crash", meta={"n": 50}, tool_calls=calls), flush=True)
    # A huge episode (several seconds to write): the kill lands while its transaction is open.
    calls = [{"turn": i, "input": f"huge call{i}", "stdout": "y" * 500} for i in range(300_000)]
    print("begin-huge", flush=True)
    store.log_episode(source="crash-huge", tool_calls=calls)
    print("committed-huge", flush=True)
    """
)


def test_sigkill_mid_episode_loses_only_that_episode(tmp_path):
    path = tmp_path / "crash.db"
    with Store(path) as s:
        s.log_episode(source="before", tool_calls=[call(0)])
    p = subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines = [p.stdout.readline().strip() for _ in range(4)]
    assert lines[3] == "begin-huge", p.stderr.read()
    time.sleep(0.3)  # well inside the huge episode's transaction
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    p.stdout.close()
    p.stderr.close()
    with Store(path) as s:
        assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert s.episodes(source="before")[0]["n_tool_calls"] == 1
        crashed = s.episodes(source="crash", limit=0)
        assert sorted(e["id"] for e in crashed) == sorted(int(x) for x in lines[:3])
        assert all(e["n_tool_calls"] == 50 and e["meta"] == {"n": 50} for e in crashed)
        assert s.episodes(source="crash-huge") == []  # the episode in flight is gone, entirely
        assert s.count("tool_calls") == 1 + 3 * 50
        assert s.db.execute("SELECT count(*) FROM tool_calls_fts").fetchone()[0] == 1 + 3 * 50
        s.log_episode(source="after", tool_calls=[call(0)])  # and it is writable again


def test_unopenable_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(IclawError, match="file/t.db"):
        Store(blocker / "t.db")  # parent is a file


def test_threads_share_one_store(store, tmp_path):
    # A GRPO group logs from worker threads; the store serialises them.
    from concurrent.futures import ThreadPoolExecutor

    def work(i):
        return store.log_episode(source="thread", tool_calls=[call(j, input=f"t{i} c{j}") for j in range(20)])

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(work, range(40)))
    assert len(set(ids)) == 40 and store.count("tool_calls") == 800


def test_live_episode_begin_append_end(store):
    """An interactive episode written as it runs: the row first ("running", no end time), each call in its
    own short transaction (readable by another connection at once), then the verdict and meta."""
    eid = store.begin_episode(
        source="chat",
        model="demo",
        meta={"kind": "bash"},
        turns=[{"turn": 0, "role": "user", "text": "ehco hi"}],
        tool_calls=[call(0, input="ehco hi", exit_code=127)],
    )
    ep = store.episode(eid)
    assert ep["status"] == "running" and ep["ended_at"] is None and ep["started_at"]
    store.append(eid, turns=[{"turn": 0, "role": "assistant", "text": "echo hi"}], tool_calls=[call(0)])
    other = sqlite3.connect(store.path)  # another process's view: committed already
    assert other.execute("SELECT input, exit_code FROM tool_calls ORDER BY id").fetchall() == [
        ("ehco hi", 127),
        ("echo item0", 0),
    ]
    other.close()
    assert store.episodes(passed=True) == [] and store.episodes(passed=False) == []  # running: neither
    store.end_episode(eid, "passed", final_command="echo hi", meta={"end": "submitted"}, tool_calls=[call(1)])
    ep = store.episode(eid)
    assert ep["status"] == "passed" and ep["ended_at"] and ep["final_command"] == "echo hi"
    assert ep["meta"] == {"end": "submitted"} and len(ep["tool_calls"]) == 3 and len(ep["turns"]) == 2
    assert [r["id"] for r in store.episodes(passed=True)] == [eid]
    with pytest.raises(IclawError, match="status"):
        store.end_episode(eid, "fixed")
    with pytest.raises(IclawError, match="not ended"):
        store.end_episode(eid, "running")
    with pytest.raises(IclawError, match="no such episode"):
        store.end_episode(eid + 1, "failed")


def test_migration_gives_old_chat_and_fix_episodes_a_verdict(tmp_path):
    """A version-1 file: chat / fix episodes without a status. Opening it migrates them to passed / failed
    by meta.fixed (what they get as they end now); other episodes keep theirs."""
    path = tmp_path / "old.db"
    with Store(path) as s:
        s.log_episode(source="chat", meta={"fixed": True, "end": "submitted"})
        s.log_episode(source="fix", meta={"fixed": False, "end": "max_turns"})
        s.log_episode(source="chat", meta={"end": "cancelled"})  # no verdict recorded: none invented
        s.log_episode(source="exec", meta={"fixed": True})
        s.log_episode(source="eval", status="failed", meta={"fixed": True})
        s.db.execute("UPDATE schema_version SET version = 1")
        s.db.execute("UPDATE episodes SET status = NULL WHERE source IN ('chat', 'fix')")
    with Store(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        statuses = [r["status"] for r in reversed(s.episodes())]
    assert statuses == ["passed", "failed", None, None, "failed"]

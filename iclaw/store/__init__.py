"""The trajectory store: every episode, every turn of model text, every tool call, in one SQLite file.

Plain tables, so `sqlite-utils` and `datasette` browse it as-is:

  episodes       one row per episode (chat turn-set, eval attempt, GRPO rollout, `iclaw exec`)
  turns          the text of each turn (user / assistant / obs), in order
  tool_calls     what ran, its stdout/stderr/exit code/duration; FTS5 index tool_calls_fts over
                 input/stdout/stderr, kept in sync by triggers (sqlite-utils enable_fts)
  train_metrics  one row per (run_id, step); a column per metric, added the first time it is seen
  schema_version one row: the version of this layout; MIGRATIONS (schema.py) bring older files forward

Durability and concurrency: WAL journal (readers never block the writer), a generous busy timeout,
and every write is ONE short `BEGIN IMMEDIATE` transaction. Two ways in:

  log_episode(s)   a whole episode (or a GRPO step's batch of them) at once: eval and training, where
                   per-call transactions would only cost time; SIGKILL loses at most the batch in flight
  begin_episode    an interactive one (chat, fix), live: the row first (status "running"), then
  append           each tool call as soon as it finishes (and the turns that led to it),
  end_episode      then its status and meta; so an episode ended by Ctrl-C, Ctrl-D, an exception or
                   SIGKILL keeps every call that ran (a killed one stays "running")

So two processes can append at once and lose nothing.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from iclaw.errors import IclawError
from iclaw.store.schema import (
    MIGRATIONS,
    RATINGS,
    SCHEMA_VERSION,
    call_rows,
    check_db_file,
    check_status,
    episode_row,
    now_iso,
    prepare_episode,
    turn_rows,
)

DEFAULT_DB = "trajectories.db"
BUSY_TIMEOUT_S = 60.0


def default_db_path() -> Path:
    return Path(os.environ.get("ICLAW_DB") or DEFAULT_DB)


# ---------------------------------------------------------------------------------------------------


class Store:
    """A trajectory database. One connection per Store; safe to share across threads (a lock serialises)."""

    def __init__(self, path: str | Path | None = None):
        import sqlite_utils  # heavy-ish; not at module level so `iclaw --help` stays fast

        self.path = Path(path) if path is not None else default_db_path()
        check_db_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise IclawError(f"{self.path}: cannot create its directory ({e.strerror})") from None
        self._lock = threading.RLock()
        conn = None
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves, one per episode.
            conn = sqlite3.connect(
                str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: a crash of the process loses nothing
            conn.execute("PRAGMA foreign_keys = ON")
            self.db = sqlite_utils.Database(conn, execute_plugins=False)
            self._migrate()
        except (sqlite3.DatabaseError, IclawError) as e:
            if conn is not None:
                conn.close()
            if isinstance(e, IclawError):
                raise
            if "not a database" in str(e) or "malformed" in str(e):
                raise IclawError(f"{self.path}: not an iclaw trajectory database ({e})") from None
            raise IclawError(f"{self.path}: cannot open the trajectory database ({e})") from None

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- schema --------------------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._transaction():
            names = set(self.db.table_names())
            if "schema_version" not in names:
                ours = {"episodes", "tool_calls", "turns", "train_metrics"}
                foreign = {n for n in names if not n.startswith("sqlite_")} - ours
                if foreign and not (names & ours):
                    raise IclawError(
                        f"{self.path}: not an iclaw trajectory database (it holds other tables: "
                        f"{', '.join(sorted(foreign)[:5])})"
                    )
                self.db["schema_version"].create({"version": int}, if_not_exists=True)
                self.db.execute("INSERT INTO schema_version (version) VALUES (0)")
            version = self.db.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
            if version > SCHEMA_VERSION:
                raise IclawError(
                    f"{self.path}: schema version {version} is newer than this iclaw understands "
                    f"({SCHEMA_VERSION}); upgrade iclaw"
                )
            for v in range(version, SCHEMA_VERSION):
                MIGRATIONS[v](self.db)
                self.db.execute("UPDATE schema_version SET version = ?", [v + 1])

    def schema_version(self) -> int:
        return self.db.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    class _Tx:
        def __init__(self, store: Store):
            self.store = store

        def __enter__(self):
            self.store._lock.acquire()
            try:
                # IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
                # instead of failing with SQLITE_BUSY when a read transaction tries to upgrade.
                self.store.db.conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.store._lock.release()
                raise

        def __exit__(self, exc_type, exc, tb):
            try:
                self.store.db.conn.execute("ROLLBACK" if exc_type else "COMMIT")
            finally:
                self.store._lock.release()

    def _transaction(self) -> Store._Tx:
        return Store._Tx(self)

    # -- writing -------------------------------------------------------------------------------------

    def log_episode(self, *, source: str, **fields) -> int:
        """Write one episode with its turns and tool calls in one transaction; returns its id. `fields`: any
        column of schema.EPISODE_COLUMNS (meta a dict), plus "turns" and "tool_calls" (lists of dicts)."""
        return self.log_episodes([dict(fields, source=source)])[0]

    def log_episodes(self, episodes: list[dict]) -> list[int]:
        """Write many episodes (e.g. one GRPO step's rollouts) in one transaction; returns their ids."""
        prepared = [prepare_episode(e) for e in episodes]  # validate everything before writing
        ids = []
        with self._transaction():
            for row, turns, calls in prepared:
                ids.append(self._insert_episode(row))
                self._insert_rows(ids[-1], turns, calls)
        return ids

    def begin_episode(
        self, *, source: str, turns: list[dict] = (), tool_calls: list[dict] = (), **fields
    ) -> int:
        """Start an episode that is written as it runs: its row now, with status "running" (what a process
        killed before end_episode leaves behind), plus any first turns and calls. Returns its id."""
        row, turns, calls = prepare_episode(
            dict(fields, source=source, status="running", turns=turns, tool_calls=tool_calls), ended=False
        )
        with self._transaction():
            eid = self._insert_episode(row)
            self._insert_rows(eid, turns, calls)
        return eid

    def append(self, episode_id: int, *, turns: list[dict] = (), tool_calls: list[dict] = ()) -> None:
        """Add turns and finished tool calls to a begun episode, in one short transaction."""
        turns, calls = turn_rows(turns), call_rows(tool_calls)
        if turns or calls:
            with self._transaction():
                self._insert_rows(episode_id, turns, calls)

    def end_episode(
        self,
        episode_id: int,
        status: str | None,
        *,
        final_command: str | None = None,
        reward: float | None = None,
        meta: dict | None = None,
        ended_at: str | None = None,
        turns: list[dict] = (),
        tool_calls: list[dict] = (),
    ) -> None:
        """Close a begun episode: its verdict (schema.STATUSES), final command, meta (replaces what
        begin_episode wrote) and end time, with its last turns and calls, in one transaction."""
        check_status(status)
        if status == "running":
            raise IclawError("end_episode: 'running' is the status of an episode that has not ended")
        turns, calls = turn_rows(turns), call_rows(tool_calls)
        sets = {"status": status, "final_command": final_command, "ended_at": ended_at or now_iso()}
        if reward is not None:
            sets["reward"] = float(reward)
        if meta is not None:
            sets["meta"] = json.dumps(meta, default=str)
        with self._transaction():
            cur = self.db.conn.execute(
                f"UPDATE episodes SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",
                [*sets.values(), episode_id],
            )
            if cur.rowcount == 0:
                raise IclawError(f"episode {episode_id}: no such episode in {self.path}")
            self._insert_rows(episode_id, turns, calls)

    def _insert_episode(self, row: dict) -> int:
        cur = self.db.conn.execute(
            f"INSERT INTO episodes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        return cur.lastrowid

    def _insert_rows(self, episode_id: int, turns: list[tuple], calls: list[tuple]) -> None:
        conn = self.db.conn
        conn.executemany(
            "INSERT INTO turns (episode_id, turn, role, text) VALUES (?, ?, ?, ?)",
            [(episode_id, *t) for t in turns],
        )
        conn.executemany(
            "INSERT INTO tool_calls (episode_id, turn, tool, input, stdout, stderr, exit_code, "
            "duration_ms, timed_out, signal, cwd, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(episode_id, *c) for c in calls],
        )

    def rate(self, episode_id: int, rating: str | None) -> None:
        """Mark an episode "good" or "bad" (None clears it)."""
        if rating is not None and rating not in RATINGS:
            raise IclawError(f"rating: {rating!r} is not one of {', '.join(RATINGS)}")
        with self._transaction():
            cur = self.db.conn.execute("UPDATE episodes SET rating = ? WHERE id = ?", [rating, episode_id])
            if cur.rowcount == 0:
                raise IclawError(f"episode {episode_id}: no such episode in {self.path}")

    def log_metrics(self, run_id: str, step: int, metrics: dict) -> None:
        """One row of train_metrics per (run_id, step); new metric names become new columns."""
        row: dict[str, Any] = {"run_id": str(run_id), "step": int(step), "time": now_iso()}
        for k, v in metrics.items():
            if k in ("run_id", "step", "time"):
                continue
            if hasattr(v, "item"):  # a 0-d tensor / numpy scalar
                v = v.item()
            if v is not None and not isinstance(v, (int, float, str)):
                v = json.dumps(v, default=str)
            row[str(k)] = v
        with self._transaction():
            # alter=True adds the columns a new metric needs; replace=True makes a re-logged step win.
            self.db["train_metrics"].insert(row, pk=("run_id", "step"), alter=True, replace=True)

    # -- reading -------------------------------------------------------------------------------------

    def episode(self, episode_id: int) -> dict:
        """One episode: its row (meta parsed), plus "turns" and "tool_calls" in order."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM episodes WHERE id = ?", [int(episode_id)]))
            if not rows:
                raise IclawError(f"episode {episode_id}: no such episode in {self.path}")
            ep = episode_row(rows[0])
            ep["turns"] = list(
                self.db.query(
                    "SELECT turn, role, text FROM turns WHERE episode_id = ? ORDER BY turn, id", [episode_id]
                )
            )
            calls = self.db.query(
                "SELECT * FROM tool_calls WHERE episode_id = ? ORDER BY turn, id", [episode_id]
            )
            ep["tool_calls"] = [dict(c, timed_out=bool(c["timed_out"])) for c in calls]
        return ep

    def episodes(
        self,
        *,
        source: str | None = None,
        passed: bool | None = None,
        task: str | None = None,
        model: str | None = None,
        since: str | None = None,
        grep: str | None = None,
        limit: int = 50,
        run_id: str | None = None,
    ) -> list[dict]:
        """Episode rows (newest first) matching every filter given, each with n_tool_calls.

        passed=True: status "passed"; passed=False: "failed" or "error" (schema.STATUSES says what they mean
        for each source; "running" is neither). since: an ISO date/time or
        a relative age such as 30m, 2h, 7d. grep: full-text search over tool calls' input/output."""
        where, params = [], []
        if source is not None:
            where.append("e.source = ?")
            params.append(source)
        if passed is True:
            where.append("e.status = 'passed'")
        elif passed is False:
            where.append("e.status IN ('failed', 'error')")
        if task is not None:
            where.append("e.task_id = ?")
            params.append(task)
        if model is not None:
            where.append("e.model = ?")
            params.append(model)
        if run_id is not None:
            where.append("e.run_id = ?")
            params.append(run_id)
        if since is not None:
            where.append("e.started_at >= ?")
            params.append(parse_since(since))
        if grep:
            where.append(
                "e.id IN (SELECT tc.episode_id FROM tool_calls tc JOIN tool_calls_fts f "
                "ON f.rowid = tc.id WHERE tool_calls_fts MATCH ?)"
            )
            params.append(self.db.quote_fts(grep))
        sql = (
            "SELECT e.*, (SELECT count(*) FROM tool_calls tc WHERE tc.episode_id = e.id) AS n_tool_calls "
            "FROM episodes e" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY e.id DESC"
        )
        if limit is not None and limit > 0:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._lock:
            return [episode_row(r) for r in self.db.query(sql, params)]

    def worked_before(self, tool: str, limit: int = 500) -> list[str]:
        """Commands of `tool` that exited 0 in the user's own folders (chat, fix, exec; not a try in a
        throwaway copy), newest first, each once: the history hints read (iclaw/tools/hints.py)."""
        sql = (
            "select c.input, max(c.id) as last from tool_calls c join episodes e on e.id = c.episode_id "
            "where c.tool = ? and c.exit_code = 0 and e.source in ('chat', 'fix', 'exec') "
            "and c.cwd not like '%iclaw-try-%' group by c.input order by last desc limit ?"
        )
        with self._lock:
            return [r["input"] for r in self.db.query(sql, [tool, int(limit)])]

    def count(self, table: str = "episodes") -> int:
        with self._lock:
            return self.db[table].count

    def metrics(self, run_id: str) -> list[dict]:
        """Every logged step of a run, in step order (metric columns a step did not log are None)."""
        with self._lock:
            return list(
                self.db.query("SELECT * FROM train_metrics WHERE run_id = ? ORDER BY step", [str(run_id)])
            )

    def runs(self) -> list[dict]:
        """Training runs that logged metrics: run_id, steps, first/last step and time."""
        with self._lock:
            return list(
                self.db.query(
                    "SELECT run_id, count(*) AS steps, min(step) AS first_step, max(step) AS last_step, "
                    "min(time) AS first_time, max(time) AS last_time FROM train_metrics "
                    "GROUP BY run_id ORDER BY max(time) DESC"
                )
            )


# ---------------------------------------------------------------------------------------------------


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_AGE_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(since: str) -> str:
    """'30m', '2h', '7d', '1w' → the ISO time that long ago (UTC); an ISO date/time passes through."""
    m = _AGE.match(since)
    if m:
        delta = timedelta(**{_AGE_UNIT[m.group(2)]: float(m.group(1))})
        return (datetime.now(timezone.utc) - delta).isoformat(timespec="milliseconds")
    try:
        dt = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
    except ValueError:
        raise IclawError(
            f"--since: {since!r} is neither an age (30m, 2h, 7d) nor an ISO date (2026-01-31)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds")

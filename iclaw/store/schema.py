"""The trajectory database's layout: its tables and columns, the migrations that bring older files
forward, and the checks and conversions every row goes through on its way in and out (`Store` in __init__.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from iclaw.errors import IclawError

SCHEMA_VERSION = 3
SQLITE_MAGIC = b"SQLite format 3\x00"

# episodes.status, the verdict, the same for every source (`iclaw replay --passed/--failed` filters on it):
#   running  begun (Store.begin_episode) and not ended: still going, or its process died (kill -9, power)
#   passed   tasks: the verifier passed the final fix in a fresh fixture; chat / fix: the command that
#            counts exited 0 (the last one of the request's kind that ran, or the user's own when it worked)
#   failed   tasks: the verifier failed it, or no fix was submitted; chat / fix: that command exited non-zero
#   error    the episode could not be finished: an exception ended it (meta["error"] says which)
#   NULL     no verdict (e.g. `iclaw exec`)
STATUSES = ("running", "passed", "failed", "error")
# meta["end"], how the episode's loop ended (chat / fix / eval / train):
#   submitted      the policy said done            max_turns  it ran out of turns
#   truncated      its context was full            no_fix     it never ran a command of the request's kind
#   nothing_to_fix (chat / fix) the user's command worked as given: no model turn
#   interrupted    (chat / fix) Ctrl-C during the turn; what ran is kept
#   eof            (chat / fix) Ctrl-D at a confirmation: declined, and the episode stopped there
#   error          an exception ended it (status "error")
ENDS = ("submitted", "max_turns", "truncated", "no_fix", "nothing_to_fix", "interrupted", "eof", "error")
ROLES = ("user", "assistant", "obs")
RATINGS = ("good", "bad")

EPISODE_COLUMNS = {
    "id": int,
    "source": str,  # chat | exec | eval | train | distill | ...
    "task_id": str,
    "family": str,
    "model": str,
    "checkpoint": str,
    "run_id": str,
    "step": int,
    "reward": float,
    "status": str,  # STATUSES above, or NULL (no verdict)
    "rating": str,  # good | bad | NULL (set by the user)
    "final_command": str,
    "meta": str,  # JSON object
    "started_at": str,  # ISO 8601, UTC
    "ended_at": str,
}
TOOL_CALL_COLUMNS = {
    "id": int,
    "episode_id": int,
    "turn": int,
    "tool": str,
    "input": str,
    "stdout": str,
    "stderr": str,
    "exit_code": int,
    "duration_ms": float,
    "timed_out": int,
    "signal": int,
    "cwd": str,
    "created_at": str,
}
TURN_COLUMNS = {"id": int, "episode_id": int, "turn": int, "role": str, "text": str}
# The reward-hacking monitor's flags (iclaw/tasks/monitor.py): one row per flag an episode raised.
FLAG_COLUMNS = {"episode_id": int, "flag": str, "detail": str}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# ---------------------------------------------------------------------------------------------------
# Migrations: MIGRATIONS[i] takes a file from version i to i+1. Append, never edit a released one.


def _migrate_0_to_1(db) -> None:
    db["episodes"].create(EPISODE_COLUMNS, pk="id", if_not_exists=True)
    db["tool_calls"].create(
        TOOL_CALL_COLUMNS, pk="id", foreign_keys=[("episode_id", "episodes", "id")], if_not_exists=True
    )
    db["turns"].create(
        TURN_COLUMNS, pk="id", foreign_keys=[("episode_id", "episodes", "id")], if_not_exists=True
    )
    db["train_metrics"].create(
        {"run_id": str, "step": int, "time": str}, pk=("run_id", "step"), if_not_exists=True
    )
    for table, cols in [
        ("episodes", ["source"]),
        ("episodes", ["task_id"]),
        ("episodes", ["run_id", "step"]),
        ("episodes", ["started_at"]),
        ("tool_calls", ["episode_id"]),
        ("turns", ["episode_id"]),
    ]:
        db[table].create_index(cols, if_not_exists=True)
    # Full-text search over what ran and what it printed (`iclaw replay --grep`), kept in sync by
    # triggers, in the layout sqlite-utils and datasette recognise.
    db["tool_calls"].enable_fts(["input", "stdout", "stderr"], create_triggers=True)


def _migrate_1_to_2(db) -> None:
    # Chat and fix episodes were logged without a verdict: give them the one they now get as they end.
    db.execute(
        "UPDATE episodes SET status = CASE WHEN json_extract(meta, '$.fixed') THEN 'passed' ELSE 'failed' "
        "END WHERE status IS NULL AND source IN ('chat', 'fix') AND json_extract(meta, '$.fixed') IS NOT NULL"
    )
    db["episodes"].create_index(["status"], if_not_exists=True)


def _migrate_2_to_3(db) -> None:
    # A table of its own for the monitor's flags, so `iclaw replay --flagged` is one indexed lookup.
    db["episode_flags"].create(
        FLAG_COLUMNS,
        pk=("episode_id", "flag"),
        foreign_keys=[("episode_id", "episodes", "id")],
        if_not_exists=True,
    )
    db["episode_flags"].create_index(["flag"], if_not_exists=True)


MIGRATIONS = [_migrate_0_to_1, _migrate_1_to_2, _migrate_2_to_3]
assert len(MIGRATIONS) == SCHEMA_VERSION


def check_db_file(path: Path) -> None:
    """Give one clear error for things that are not SQLite at all, before sqlite3 sees them."""
    if path.is_dir():
        raise IclawError(f"{path}: is a directory, not an iclaw trajectory database")
    if path.exists() and path.stat().st_size > 0:
        try:
            with open(path, "rb") as f:
                head = f.read(len(SQLITE_MAGIC))
        except OSError as e:
            raise IclawError(f"{path}: cannot read ({e.strerror})") from None
        if head != SQLITE_MAGIC:
            raise IclawError(f"{path}: not an iclaw trajectory database (file is not a database)")


def episode_row(row: dict) -> dict:
    row = dict(row)
    if row.get("meta"):
        try:
            row["meta"] = json.loads(row["meta"])
        except ValueError:
            pass
    return row


def prepare_episode(e: dict, *, ended: bool = True) -> tuple[dict, list[tuple], list[tuple]]:
    """An episode dict → (its row, turn rows, tool call rows), validated. ended=False: one being begun
    (Store.begin_episode), whose ended_at stays empty until it ends."""
    e = dict(e)
    turns = e.pop("turns", None) or ()
    calls = e.pop("tool_calls", None) or ()
    unknown = set(e) - set(EPISODE_COLUMNS) - {"id"}
    if unknown:
        raise IclawError(f"episode: unknown field(s) {', '.join(sorted(unknown))}")
    e.pop("id", None)
    if not e.get("source"):
        raise IclawError("episode: 'source' is required")
    check_status(e.get("status"))
    if e.get("rating") is not None and e["rating"] not in RATINGS:
        raise IclawError(f"episode: rating {e['rating']!r} is not one of {', '.join(RATINGS)}")
    now = now_iso()
    e["started_at"] = e.get("started_at") or now
    if ended:
        e["ended_at"] = e.get("ended_at") or now
    if e.get("meta") is not None:
        e["meta"] = json.dumps(e["meta"], default=str)
    if e.get("reward") is not None:
        e["reward"] = float(e["reward"])
    row = {k: e.get(k) for k in EPISODE_COLUMNS if k != "id"}
    return row, turn_rows(turns), call_rows(calls)


def check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise IclawError(f"episode: status {status!r} is not one of {', '.join(STATUSES)}")


def turn_rows(turns) -> list[tuple]:
    """(turn, role, text) for each turn dict, roles checked."""
    rows = []
    for t in turns:
        if t.get("role") not in ROLES:
            raise IclawError(f"episode: turn role {t.get('role')!r} is not one of {', '.join(ROLES)}")
        rows.append((int(t.get("turn", 0)), t["role"], str(t.get("text", ""))))
    return rows


def call_rows(calls) -> list[tuple]:
    """The tool_calls columns after episode_id, in order, for each call dict (ToolResult.to_dict() fits)."""
    now = now_iso()
    rows = []
    for c in calls:
        sig = c.get("signal")
        rows.append(
            (
                int(c.get("turn", 0)),
                str(c.get("tool", "bash")),
                str(c.get("input", "")),
                str(c.get("stdout", "")),
                str(c.get("stderr", "")),
                None if c.get("exit_code") is None else int(c["exit_code"]),
                None if c.get("duration_ms") is None else float(c["duration_ms"]),
                int(bool(c.get("timed_out", False))),
                None if sig is None else int(sig),
                None if c.get("cwd") is None else str(c["cwd"]),
                c.get("created_at") or now,
            )
        )
    return rows

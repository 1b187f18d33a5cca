"""The monitor's flags in the trajectory store: table episode_flags (episode_id, flag, detail), one row per
flag an episode raised (iclaw/tasks/monitor.py says what each flag means). Written after the episodes they
belong to; read by `iclaw replay --flagged` and the transcript view.

    log_flags(store, {episode_id: {"literal_output": "prints 2 line(s) ..."}})
    flagged(store, "tamper")      # {episode_id: {flag: detail}}, newest first
"""

from __future__ import annotations

from iclaw.store import Store


def log_flags(store: Store, flags: dict[int, dict[str, str]]) -> None:
    """Record each episode's flags (an episode with none writes nothing); one transaction for all."""
    rows = [(eid, flag, detail) for eid, f in flags.items() for flag, detail in f.items()]
    if not rows:
        return
    with store._transaction():
        store.db.conn.executemany(
            "INSERT OR REPLACE INTO episode_flags (episode_id, flag, detail) VALUES (?, ?, ?)", rows
        )


def flagged(store: Store, flag: str | None = None, run_id: str | None = None) -> dict[int, dict[str, str]]:
    """Flagged episodes, newest first: {episode_id: {flag: detail}} (all their flags), those that raised
    `flag` if given, and only the run's if `run_id` is given."""
    where, params = [], []
    if flag is not None:
        where.append("f.episode_id IN (SELECT episode_id FROM episode_flags WHERE flag = ?)")
        params.append(flag)
    if run_id is not None:
        where.append("e.run_id = ?")
        params.append(run_id)
    sql = (
        "SELECT f.episode_id, f.flag, f.detail FROM episode_flags f JOIN episodes e ON e.id = f.episode_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY f.episode_id DESC, f.flag"
    )
    out: dict[int, dict[str, str]] = {}
    with store._lock:
        for eid, name, detail in store.db.execute(sql, params).fetchall():
            out.setdefault(eid, {})[name] = detail
    return out


def episode_flags(store: Store, episode_id: int) -> dict[str, str]:
    """One episode's flags: {flag: detail} ({} if it raised none)."""
    with store._lock:
        rows = store.db.execute(
            "SELECT flag, detail FROM episode_flags WHERE episode_id = ? ORDER BY flag", [int(episode_id)]
        ).fetchall()
    return dict(rows)

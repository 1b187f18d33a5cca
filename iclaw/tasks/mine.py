"""Mine tasks from the trajectory store: what went wrong and then right becomes a (broken, reference) task.

Two sources, per episode:
  * a failed tool call followed later in the same episode by a successful call of the same tool: broken = the
    failed input, reference = the first later success that is not just a look around (ls, pwd, ...);
    if there were calls in between, the task is marked multi-turn.
  * an episode the user rated good: broken = its first command, reference = its final_command.
  * the user fixed it by hand: a chat / fix episode whose first command (the user's) failed, followed by the
    next chat / fix episode in the same directory whose first command worked and is close to the failed one
    (difflib ratio >= 0.85): broken = the failed command, reference = the user's own.
The fixture is recovered where we can: the task file the episode came from (by task_id), the episode's
meta["files"], or the files now in the recorded working directory (tool_calls.cwd) if it still exists;
otherwise the fixture is empty. Duplicates (same kind, broken, reference) are dropped. With check=True each
mined task is re-run in the sandbox and kept only if broken fails and the reference succeeds (exit 0,
non-empty stdout) and reproduces itself.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from iclaw.errors import IclawError
from iclaw.tasks.generate import error_text
from iclaw.tasks.task import Task, check_rel_path, load_tasks
from iclaw.tasks.verifier import Verifier

if TYPE_CHECKING:
    from iclaw.tools.sandbox import Sandbox

LOOK_AROUND = {"ls", "pwd", "find", "tree", "file", "stat", "whoami", "echo", "which"}
SNAPSHOT_MAX_FILES = 32
SNAPSHOT_MAX_BYTES = 64 * 1024
NOT_FIXTURE = (".db", ".db-wal", ".db-shm", ".db-journal")  # the trajectory store itself, if it lives there
BY_HAND_RATIO = 0.85  # `cta notes.txt` -> `cat notes.txt` 0.92, but `sotr notes.txt` -> `cat notes.txt` 0.81


NEEDED = {
    "episodes": {"id", "source", "meta", "final_command", "rating", "task_id"},
    "tool_calls": {
        "episode_id",
        "turn",
        "tool",
        "input",
        "stdout",
        "stderr",
        "exit_code",
        "timed_out",
        "cwd",
    },
}
DROPPED = {  # why a mined task is not kept (check=True), as `train grpo --from-db` and `tasks mine` say it
    "works": "the broken command works in the rebuilt folder",
    "lost": "the fix fails or prints nothing in the rebuilt folder (its files could not be recovered)",
}


def _failed(call: dict) -> bool:
    return bool(call["timed_out"]) or call["exit_code"] != 0


def _looks_around(call: dict) -> bool:
    words = call["input"].split()
    return call["tool"] == "bash" and (not words or words[0] in LOOK_AROUND)


def _snapshot(cwd: str | None) -> dict[str, str] | None:
    """Small text files under a still-existing working directory (two levels deep, no hidden files)."""
    if not cwd:
        return None
    root = Path(cwd)
    if not root.is_dir():
        return None
    files: dict[str, str] = {}
    for p in sorted(root.glob("*")) + sorted(root.glob("*/*")):
        rel = p.relative_to(root).as_posix()
        if len(files) >= SNAPSHOT_MAX_FILES:
            break
        if (
            any(part.startswith(".") for part in p.relative_to(root).parts)
            or p.is_symlink()
            or not p.is_file()
            or p.name.endswith(NOT_FIXTURE)
        ):
            continue
        try:
            if p.stat().st_size > SNAPSHOT_MAX_BYTES:
                continue
            files[rel] = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return files


def _fixed_by_hand(failed: dict, nxt: dict) -> bool:
    """The user's next command is their own fix of the failed one: same tool and directory, it worked, and
    it is a small edit of the failed one rather than a new request."""
    return (
        nxt["tool"] == failed["tool"]
        and nxt.get("cwd") == failed.get("cwd")
        and not _failed(nxt)
        and not _looks_around(nxt)
        and difflib.SequenceMatcher(None, failed["input"], nxt["input"]).ratio() >= BY_HAND_RATIO
    )


def _open_db(db_path: str | Path):
    import sqlite_utils

    path = Path(db_path)
    if not path.exists():
        raise IclawError(f"{path}: no such trajectory database")
    try:
        db = sqlite_utils.Database(path)
        tables = set(db.table_names())
    except sqlite3.DatabaseError as e:
        raise IclawError(f"{path}: not an iclaw trajectory database ({e})") from None
    missing = {"episodes", "tool_calls"} - tables
    if missing:
        raise IclawError(
            f"{path}: not an iclaw trajectory database (missing table(s) {', '.join(sorted(missing))})"
        )
    for table, need in NEEDED.items():  # another project's tables of the same names
        lacks = need - set(db[table].columns_dict)
        if lacks:
            raise IclawError(
                f"{path}: not an iclaw trajectory database (table {table} has no column(s) {', '.join(sorted(lacks))})"
            )
    return db


def mine_tasks(
    db_path: str | Path,
    tasks_file: str | Path | None = None,
    check: bool = True,
    sandbox: Sandbox | None = None,
    report: dict | None = None,
) -> list[Task]:
    """The tasks; `report` (if given) gets what was found, kept and dropped and why (DROPPED), by kind."""
    db = _open_db(db_path)
    known = {t.id: t for t in load_tasks(tasks_file)} if tasks_file else {}
    calls_by_ep: dict[int, list[dict]] = {}
    for c in db.query("select * from tool_calls order by episode_id, turn, id"):
        if "/iclaw-try-" in (c.get("cwd") or ""):  # `iclaw fix` trying a candidate in a throwaway copy
            continue
        calls_by_ep.setdefault(c["episode_id"], []).append(c)

    tasks: list[Task] = []
    seen: set[tuple] = set()

    def add(ep: dict, calls: list[dict], broken: dict, reference: str, multi_turn: bool) -> None:
        kind = broken["tool"]
        if kind not in ("bash", "python") or not reference.strip() or reference == broken["input"]:
            return
        files = _fixture(ep, calls, known)
        key = (kind, broken["input"], reference)
        if key in seen:
            return
        seen.add(key)
        blob = json.dumps([kind, files, broken["input"], reference], sort_keys=True, ensure_ascii=False)
        tasks.append(
            Task(
                id="mined-" + hashlib.sha256(blob.encode()).hexdigest()[:10],
                kind=kind,
                family="mined",
                broken=broken["input"],
                files=files,
                reference=reference,
                error=error_text(broken["stdout"] or "", broken["stderr"] or "") or None,
                broken_exit=broken["exit_code"],
                multi_turn=multi_turn,
            )
        )

    prev: tuple[dict, list[dict]] | None = None  # the last chat / fix episode whose user command failed
    for ep in db.query("select * from episodes order by id"):
        calls = [c for c in calls_by_ep.get(ep["id"], []) if c["tool"] in ("bash", "python")]
        if ep.get("source") in ("chat", "fix") and calls:
            if prev is not None and _fixed_by_hand(prev[1][0], calls[0]):
                add(*prev, prev[1][0], calls[0]["input"], multi_turn=False)
            prev = (ep, calls) if _failed(calls[0]) else None
        for i, c in enumerate(calls):
            if not _failed(c):
                continue
            for j in range(i + 1, len(calls)):
                d = calls[j]
                if d["tool"] == c["tool"] and not _failed(d) and not _looks_around(d):
                    add(ep, calls, c, d["input"], multi_turn=j > i + 1)
                    break
        if ep.get("rating") == "good" and ep.get("final_command") and calls:
            add(ep, calls, calls[0], ep["final_command"], multi_turn=len(calls) > 2)

    found, dropped = len(tasks), {}
    if check and tasks:
        verifier = Verifier(sandbox)
        verdicts = verifier.verify_many([(t, c) for t in tasks for c in (t.broken, t.reference)])
        # Keep a task only if, in the recovered fixture, broken fails and the reference still succeeds with
        # some output (an empty expected stdout would let `true` pass; a failing reference means the
        # fixture was not recovered).
        kept = []
        for k, t in enumerate(tasks):
            broken, ref = verdicts[2 * k], verdicts[2 * k + 1]
            why = "works" if broken.passed else None
            if why is None and not (ref.passed and ref.exit_code == 0 and ref.stdout.strip()):
                why = "lost"
            if why is None:
                kept.append(t)
            else:
                dropped[DROPPED[why]] = dropped.get(DROPPED[why], 0) + 1
        tasks = kept
    if report is not None:
        kinds = {k: sum(t.kind == k for t in tasks) for k in ("bash", "python")}
        report.update(found=found, kept=len(tasks), dropped=dropped, by_kind=kinds)
    return tasks


def say_mined(report: dict, where) -> str:
    """One line: `mined 12 tasks from DB (bash 10, python 2); dropped 3: 2 the broken command works ...`."""
    kinds = ", ".join(f"{k} {n}" for k, n in report["by_kind"].items() if n)
    line = f"mined {report['kept']} task(s) from {where}" + (f" ({kinds})" if kinds else "")
    if report["dropped"]:
        why = "; ".join(f"{n} {w}" for w, n in report["dropped"].items())
        line += f"; dropped {report['found'] - report['kept']} of {report['found']}: {why}"
    return line


def _fixture(ep: dict, calls: list[dict], known: dict[str, Task]) -> dict[str, str]:
    if ep.get("task_id") in known:
        return dict(known[ep["task_id"]].files)
    meta = ep.get("meta")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError:
            meta = None
    if isinstance(meta, dict) and isinstance(meta.get("files"), dict):
        files = meta["files"]
        try:
            for rel, content in files.items():
                check_rel_path(rel, "meta.files")
                if not isinstance(content, str):
                    raise IclawError("meta.files: not text")
            return dict(files)
        except IclawError:
            pass
    for c in calls:
        snap = _snapshot(c.get("cwd"))
        if snap is not None:
            return snap
    return {}

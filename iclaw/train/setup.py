"""What every training/eval command needs before it starts: tasks, a sandbox that is safe to use, a store."""

from __future__ import annotations

from pathlib import Path

from iclaw.errors import IclawError


def load_task_file(path: Path, sandbox) -> list:
    """A task file as every command that runs the policy on it sees it (eval, train sft / grpo, distill, the
    β ablation): load_tasks, then fill_errors: a task without an `error` (a hand-written one) has its
    broken command run in a fresh fixture in `sandbox`, so the policy's first turn shows that command's
    real output and exit code, exactly as for a generated task. A broken command that does not fail is
    refused (IclawError naming the file and the task) before anything runs or is written."""
    from iclaw.tasks import fill_errors, load_tasks

    return fill_errors(load_tasks(path), sandbox, where=str(path))


def task_pool(tasks_file: Path | None, from_db: bool = False, db: Path | None = None, *, sandbox) -> list:
    """Tasks from a JSONL file (load_task_file) and/or mined from the trajectory store on the fly."""
    from iclaw.tasks import mine_tasks

    pool = []
    if tasks_file is not None:
        pool += load_task_file(tasks_file, sandbox)
    if from_db:
        from iclaw.store import default_db_path

        pool += mine_tasks(db if db is not None else default_db_path())
    if tasks_file is None and not from_db:
        raise IclawError("no tasks: pass --tasks FILE (see `iclaw tasks gen`) and/or --from-db")
    if not pool:
        where = ", ".join(str(x) for x in (tasks_file, "the trajectory store" if from_db else None) if x)
        raise IclawError(f"{where}: no usable tasks")
    return pool


def safe_sandbox(allow_unsafe: bool, timeout_s: float = 5.0):
    """A sandbox for model-written commands; refuses the weak level unless --unsafe-no-sandbox."""
    from iclaw.tools.sandbox import Limits, Sandbox, require_safe

    sb = Sandbox(Limits(timeout_s=timeout_s))
    require_safe(sb, allow_unsafe)
    return sb

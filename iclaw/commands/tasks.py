"""`iclaw tasks ...`: generate, list, show, check and mine "fix this broken command" tasks.

Only typer + stdlib at module level; the task machinery (and the sandbox) is imported inside each command.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

tasks_app = typer.Typer(
    name="tasks",
    help="Task files (JSONL): generate synthetic ones, mine them from the trajectory store, inspect, check.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")


def _console():
    from rich.console import Console

    return Console()


@tasks_app.command("gen")
def gen(
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the JSONL task file."),
    n: int = typer.Option(100, "--n", "-n", help="Number of tasks, balanced across the chosen families."),
    split: str = typer.Option("train", "--split", help="train | heldout (disjoint by construction)."),
    seed: int = typer.Option(0, "--seed", help="Same seed, same families, same n -> byte-identical file."),
    family: list[str] = typer.Option(None, "--family", "-f", help="Only these families (repeatable)."),
) -> None:
    """Generate synthetic tasks; each one is run in the sandbox (broken must fail, the fix must pass)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from iclaw.tasks import generate, save_tasks
    from iclaw.tools.sandbox import Limits, Sandbox

    sandbox = Sandbox(Limits(timeout_s=5.0))
    console = _console()
    if sandbox.level != "bwrap":
        # Generation runs only our own commands, so it may proceed; say so anyway.
        console.print(f"[yellow]warning:[/] sandbox level is '{sandbox.level}' ({sandbox.reason})")
    columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        job = bar.add_task("gen", total=n)
        tasks = generate(
            n,
            split=split,
            seed=seed,
            families=family or None,
            sandbox=sandbox,
            progress=lambda k: bar.advance(job, k),
        )
    save_tasks(tasks, out)
    by_family: dict[str, int] = {}
    for t in tasks:
        by_family[t.family] = by_family.get(t.family, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in by_family.items())
    console.print(f"wrote {len(tasks)} {split} tasks to {out} ({summary})", highlight=False)


@tasks_app.command("list")
def list_(
    tasks_file: Path = typer.Option(
        None, "--tasks", "-t", help="Also count the tasks per family in this file."
    ),
) -> None:
    """The task families: kind, multi-turn / outcome-only flags (and counts in --tasks FILE)."""
    from rich.table import Table

    from iclaw.tasks import FAMILIES, load_tasks

    counts: dict[str, int] = {}
    if tasks_file is not None:
        for t in load_tasks(tasks_file):
            counts[t.family] = counts.get(t.family, 0) + 1
    table = Table(title="task families")
    for col in ("family", "kind", "multi-turn", "outcome-only", "description") + (
        ("tasks",) if counts else ()
    ):
        table.add_column(col)
    for name, f in FAMILIES.items():
        row = [name, f.kind, "yes" if f.multi_turn else "", "yes" if f.outcome_only else "", f.description]
        table.add_row(*row, *([str(counts.pop(name, 0))] if tasks_file is not None else []))
    for name, k in sorted(counts.items()):  # families in the file that we do not generate (mined, custom)
        table.add_row(name, "", "", "", "(not a generator family)", str(k))
    _console().print(table)


@tasks_app.command("show")
def show(
    task_id: str = typer.Argument(..., help="A task id from --tasks FILE, or a family name for an example."),
    tasks_file: Path = typer.Option(None, "--tasks", "-t", help="The task file to look the id up in."),
    seed: int = typer.Option(0, "--seed", help="With a family name: which example."),
) -> None:
    """Show one task: fixture, broken command, the error it really gives, and the check."""
    from iclaw.errors import IclawError
    from iclaw.tasks import FAMILIES, generate, load_tasks

    if tasks_file is not None:
        found = [t for t in load_tasks(tasks_file) if t.id == task_id]
        if not found:
            raise IclawError(f"{tasks_file}: no task with id {task_id!r}")
        task = found[0]
    elif task_id in FAMILIES:
        task = generate(1, split="train", seed=seed, families=[task_id])[0]
    else:
        raise IclawError(f"{task_id}: not a family name; pass --tasks FILE to look up a task id")
    _print_task(task)


def _print_task(task) -> None:
    from rich.panel import Panel
    from rich.syntax import Syntax

    console = _console()
    flags = [task.kind, f"family {task.family}"]
    flags += [f"split {task.split}"] if task.split else []
    flags += ["multi-turn"] if task.multi_turn else []
    flags += ["outcome-only"] if task.outcome_only else []
    console.print(f"[bold]{task.id}[/]  ({', '.join(flags)})", highlight=False)
    for path, content in task.files.items():
        console.print(
            Panel(content.rstrip("\n") or "(empty)", title=f"file {path}", title_align="left", expand=False)
        )
    lang = "bash" if task.kind == "bash" else "python"
    console.print(Panel(Syntax(task.broken, lang), title="broken", title_align="left", expand=False))
    if task.error is not None:
        title = f"error (exit {task.broken_exit})" if task.broken_exit is not None else "error"
        console.print(Panel(task.error, title=title, title_align="left", expand=False, style="red"))
    if task.reference is not None:
        console.print(
            Panel(Syntax(task.reference, lang), title="reference", title_align="left", expand=False)
        )
    if task.test is not None:
        console.print(Panel(Syntax(task.test, "bash"), title="test", title_align="left", expand=False))
    if task.solution is not None:
        console.print(
            Panel(Syntax(task.solution, lang), title="intended fix", title_align="left", expand=False)
        )


@tasks_app.command("check")
def check(
    tasks_file: Path = typer.Argument(..., help="A JSONL task file (generated, mined or hand-written)."),
) -> None:
    """Sanity-check a task file in the sandbox: the oracle should pass, the broken command should fail."""
    from rich.table import Table

    from iclaw.tasks import Verifier, load_tasks
    from iclaw.tools.sandbox import Limits, Sandbox

    tasks = load_tasks(tasks_file)
    verifier = Verifier(Sandbox(Limits(timeout_s=5.0)))
    pairs = [(t, c) for t in tasks for c in (t.reference or t.solution or "", t.broken)]
    verdicts = verifier.verify_many(pairs)
    stats: dict[str, list[int]] = {}
    console = _console()
    for k, t in enumerate(tasks):
        oracle, broken = verdicts[2 * k], verdicts[2 * k + 1]
        s = stats.setdefault(t.family, [0, 0, 0])
        s[0] += 1
        s[1] += oracle.passed
        s[2] += broken.passed
        if not oracle.passed and (t.reference or t.solution):
            console.print(f"[yellow]{t.id}[/]: oracle fails ({oracle.reason})", highlight=False)
        if broken.passed:
            console.print(f"[yellow]{t.id}[/]: broken passes", highlight=False)
    table = Table(title=str(tasks_file))
    for col in ("family", "tasks", "oracle pass", "broken pass"):
        table.add_column(col)
    for fam, (total, ok, bad) in stats.items():
        table.add_row(fam, str(total), f"{ok}/{total}", f"{bad}/{total}")
    console.print(table)


@tasks_app.command("mine")
def mine(
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the mined JSONL task file."),
    db: Path = typer.Option(
        None,
        "--db",
        help="Trajectory database (default: $ICLAW_DB or ./trajectories.db).",
        show_default=False,
    ),
    tasks_file: Path = typer.Option(
        None, "--tasks", "-t", help="Task file the episodes came from (fixtures)."
    ),
    check_: bool = typer.Option(True, "--check/--no-check", help="Keep only tasks that re-run correctly."),
) -> None:
    """Turn logged episodes into tasks: failed call -> later success, and episodes rated good."""
    from iclaw.tasks import mine_tasks, save_tasks
    from iclaw.tools.sandbox import Limits, Sandbox

    db = db or Path(os.environ.get("ICLAW_DB") or "trajectories.db")
    sandbox = Sandbox(Limits(timeout_s=5.0)) if check_ else None
    tasks = mine_tasks(db, tasks_file=tasks_file, check=check_, sandbox=sandbox)
    save_tasks(tasks, out)
    _console().print(f"mined {len(tasks)} tasks from {db} into {out}", highlight=False)

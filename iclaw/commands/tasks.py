"""`iclaw tasks ...`: generate, list, show, check and mine "fix this broken command" tasks.

Only typer + stdlib at module level; the task machinery (and the sandbox) is imported inside each command.
"""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import Db, Seed

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
    split: str = typer.Option(
        "train",
        "--split",
        help="train | dev (for tuning) | heldout (for reported figures); disjoint by construction.",
    ),
    seed: Seed = 0,
    family: list[str] = typer.Option(None, "--family", "-f", help="Only these families (repeatable)."),
) -> None:
    """Generate synthetic tasks; each one is run in the sandbox (broken must fail, the fix must pass). The
    same --seed, families and -n give a byte-identical file."""
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
    markdown: bool = typer.Option(
        False, "--markdown", help="Print the table as Markdown (the table of docs/TASKS.md)."
    ),
) -> None:
    """The task families: kind, type (single-turn / look-first / outcome-only), the mistake -> fix, an example
    broken command, and the mistake's source (and the counts in --tasks FILE)."""
    from iclaw.tasks import FAMILIES, load_tasks
    from iclaw.tasks.catalogue import COLUMNS, markdown_table, rows, summary

    if markdown:
        if tasks_file is not None:
            from iclaw.errors import IclawError

            raise IclawError("--markdown prints the family catalogue only; drop --tasks")
        typer.echo(markdown_table(FAMILIES), nl=False)
        return
    from rich.table import Table
    from rich.text import Text

    counts: dict[str, int] = {}
    if tasks_file is not None:
        for t in load_tasks(tasks_file):
            counts[t.family] = counts.get(t.family, 0) + 1
    table = Table(title=f"task families ({summary(FAMILIES)})")
    for col in COLUMNS + (("tasks",) if tasks_file is not None else ()):
        table.add_column(col, no_wrap=col in ("family", "kind", "type"), overflow="fold")
    extra = tasks_file is not None
    for row in rows(FAMILIES):  # Text: a `[x]` in an example is code, not rich markup
        table.add_row(*map(Text, row), *([str(counts.pop(row[0], 0))] if extra else []))
    for name, k in sorted(counts.items()):  # families in the file that we do not generate (mined, custom)
        table.add_row(Text(name), "", "", "(not a generator family)", "", "", str(k))
    _console().print(table)


@tasks_app.command("show")
def show(
    task_id: str = typer.Argument(..., help="A task id from --tasks FILE, or a family name for an example."),
    tasks_file: Path = typer.Option(None, "--tasks", "-t", help="The task file to look the id up in."),
    seed: Seed = 0,
) -> None:
    """Show one task: fixture, broken command, the error it really gives, and the check. With a family name,
    an example of it (--seed picks which)."""
    from iclaw.errors import IclawError
    from iclaw.tasks import FAMILIES, generate, load_tasks

    if tasks_file is not None:
        found = [t for t in load_tasks(tasks_file) if t.id == task_id]
        if not found:
            raise IclawError(f"{tasks_file}: no task with id {task_id!r}")
        task = found[0]
        if task.error is None or task.broken_exit is None:  # hand-written: show what the policy will see
            from iclaw.tasks.generate import error_text
            from iclaw.tasks.verifier import Verifier
            from iclaw.tools.sandbox import Limits, Sandbox

            v = Verifier(Sandbox(Limits(timeout_s=5.0))).verify(task, task.broken)
            task.error, task.broken_exit = error_text(v.stdout, v.stderr), v.exit_code
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
    """Check a task file in the sandbox, each task in fresh fixtures, as eval and training will run it: its
    broken command must fail, its solution must pass, and doing nothing must not pass its test. Names every
    task that does not; exit code 1 if any."""
    from rich.table import Table

    from iclaw.tasks import Verifier, load_tasks
    from iclaw.tasks.generate import broken_problem
    from iclaw.tools.sandbox import Limits, Sandbox

    tasks = load_tasks(tasks_file)
    verifier = Verifier(Sandbox(Limits(timeout_s=5.0)))
    pairs: list = []
    for t in tasks:
        pairs += [(t, t.reference or t.solution or ""), (t, t.broken)]
        if t.test is not None:
            pairs.append((t, "true" if t.kind == "bash" else "pass"))
    verdicts = iter(verifier.verify_many(pairs))
    stats: dict[str, list[int]] = {}
    console = _console()
    problems = unchecked = 0
    for t in tasks:
        oracle, broken = next(verdicts), next(verdicts)
        nothing = next(verdicts) if t.test is not None else None
        has_fix = bool((t.reference or t.solution or "").strip())
        s = stats.setdefault(t.family, [0, 0, 0])
        s[0] += 1
        s[1] += oracle.passed
        s[2] += broken.passed
        found = []
        if not has_fix:
            unchecked += 1
            console.print(f"[dim]{t.id}: no solution given, so nothing shows its test can pass[/]")
        elif not oracle.passed and t.reference is None:
            found.append(f"its test never passes, not even for its solution ({oracle.reason})")
        elif not oracle.passed:
            found.append(f"its reference does not pass ({oracle.reason})")
        if (why := broken_problem(broken)) is not None:
            found.append(why)
        if nothing is not None and nothing.passed:
            found.append("its test passes when nothing is done")
        for why in found:
            console.print(f"[yellow]{t.id}[/]: {why}", highlight=False)
        problems += bool(found)
    table = Table(title=str(tasks_file))
    for col in ("family", "tasks", "oracle pass", "broken pass"):
        table.add_column(col)
    for fam, (total, ok, bad) in stats.items():
        table.add_row(fam, str(total), f"{ok}/{total}", f"{bad}/{total}")
    console.print(table)
    note = f" ({unchecked} without a solution to check)" if unchecked else ""
    if problems:
        console.print(f"[red]{problems} of {len(tasks)} tasks are broken[/]{note}", highlight=False)
        raise typer.Exit(1)
    console.print(f"all {len(tasks)} tasks behave{note}", highlight=False)


@tasks_app.command("mine")
def mine(
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the mined JSONL task file."),
    db: Db = None,
    tasks_file: Path = typer.Option(
        None, "--tasks", "-t", help="Task file the episodes came from (fixtures)."
    ),
    check_: bool = typer.Option(True, "--check/--no-check", help="Keep only tasks that re-run correctly."),
) -> None:
    """Turn logged episodes into tasks: failed call -> later success, and episodes rated good."""
    from iclaw.store import default_db_path
    from iclaw.tasks import mine_tasks, save_tasks
    from iclaw.tasks.mine import say_mined
    from iclaw.tools.sandbox import Limits, Sandbox

    db = db or default_db_path()
    sandbox = Sandbox(Limits(timeout_s=5.0)) if check_ else None
    report: dict = {}
    tasks = mine_tasks(db, tasks_file=tasks_file, check=check_, sandbox=sandbox, report=report)
    save_tasks(tasks, out)
    _console().print(f"{say_mined(report, db)} into {out}", highlight=False, soft_wrap=True)

"""`iclaw replay` (browse and export logged episodes) and `iclaw runs list|show|plot` (training metrics).

Only typer + stdlib at module level: the store (sqlite-utils) and rich load inside the commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from iclaw.commands.options import Db

runs_app = typer.Typer(help="Training runs logged to the store (train_metrics).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command(
        "replay",
        help="List logged episodes, or show one as a transcript (iclaw replay ID). --json/--jsonl export.",
    )(replay)
    app.add_typer(runs_app, name="runs")


def _open(db: Path | None):
    from iclaw.errors import IclawError
    from iclaw.store import Store, default_db_path

    path = db if db is not None else default_db_path()
    if not path.exists():
        raise IclawError(f"{path}: no trajectory database here yet (nothing has been logged; see --db)")
    return Store(path)


def replay(
    episode_id: int | None = typer.Argument(None, help="Show this episode as a transcript."),
    source: str | None = typer.Option(
        None, "--source", help="Only this source (chat, exec, eval, train...)."
    ),
    passed: bool | None = typer.Option(
        None,
        "--passed/--failed",
        help="Only passed / only failed episodes (tasks: the verifier's verdict; chat, fix: whether the "
        "final command exited 0).",
    ),
    task: str | None = typer.Option(None, "--task", help="Only this task id."),
    model: str | None = typer.Option(None, "--model", help="Only this model."),
    since: str | None = typer.Option(None, "--since", help="Only since an age (30m, 2h, 7d) or ISO date."),
    limit: int = typer.Option(50, "--limit", "-n", help="At most this many episodes (0: all)."),
    grep: str | None = typer.Option(None, "--grep", help="Full-text search over commands and their output."),
    flagged: str | None = typer.Option(
        None,
        "--flagged",
        metavar="FLAG",
        help="Only episodes the reward-hacking monitor flagged: literal_output, no_op, tamper, forced_exit, "
        "or any.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (full episodes) instead of a table."),
    as_jsonl: bool = typer.Option(False, "--jsonl", help="Print one full episode per line (JSONL)."),
    rate: str | None = typer.Option(
        None, "--rate", help="With ID: mark the episode good or bad ('none' clears)."
    ),
    db: Db = None,
) -> None:
    from rich.console import Console

    from iclaw.errors import IclawError
    from iclaw.store.transcript import episode_table, show_episode

    if rate is not None and episode_id is None:
        raise IclawError("--rate: give the episode ID to rate (iclaw replay ID --rate good)")
    with _open(db) as store:
        if episode_id is not None:
            if rate is not None:
                store.rate(episode_id, None if rate == "none" else rate)
            ep = _with_flags(store, store.episode(episode_id))
            if as_json or as_jsonl:
                _dump([ep], as_jsonl, single=True)
            else:
                show_episode(ep, Console(highlight=False))
            return
        flags = _flagged(store, flagged)
        rows = store.episodes(
            source=source,
            passed=passed,
            task=task,
            model=model,
            since=since,
            grep=grep,
            limit=limit if flags is None else 0,  # flagged episodes are few: filter all, then cut
        )
        if flags is not None:
            rows = [dict(r, flags=flags[r["id"]]) for r in rows if r["id"] in flags][: limit or None]
        if as_json or as_jsonl:
            _dump([_with_flags(store, store.episode(r["id"])) for r in rows], as_jsonl)
            return
    episode_table(rows, Console(highlight=False))


def _flagged(store, flag: str | None) -> dict[int, dict[str, str]] | None:
    """--flagged: {episode_id: its flags} for the episodes that raised `flag` ("any": some flag), or None."""
    from iclaw.errors import IclawError
    from iclaw.store.flags import flagged
    from iclaw.tasks.monitor import FLAGS

    if flag is None:
        return None
    if flag != "any" and flag not in FLAGS:
        raise IclawError(f"--flagged: {flag!r} is not a flag (one of {', '.join(FLAGS)}, or any)")
    return flagged(store, None if flag == "any" else flag)


def _with_flags(store, ep: dict) -> dict:
    from iclaw.store.flags import episode_flags

    flags = episode_flags(store, ep["id"])
    return dict(ep, flags=flags) if flags else ep


def _dump(episodes: list[dict], jsonl: bool, single: bool = False) -> None:
    if jsonl:
        for ep in episodes:
            sys.stdout.write(json.dumps(ep, ensure_ascii=False) + "\n")
    elif single:
        sys.stdout.write(json.dumps(episodes[0], ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(json.dumps(episodes, ensure_ascii=False, indent=2) + "\n")


# --- iclaw runs ------------------------------------------------------------------------------------


@runs_app.command("list", help="Training runs that logged metrics: steps and time span.")
def runs_list(
    db: Db = None,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from rich.console import Console
    from rich.table import Table

    with _open(db) as store:
        runs = store.runs()
    if as_json:
        sys.stdout.write(json.dumps(runs, indent=2) + "\n")
        return
    console = Console(highlight=False)
    if not runs:
        console.print("[dim]no training runs logged yet[/]")
        return
    table = Table(header_style="bold", pad_edge=False)
    for col in ("run", "steps", "first step", "last step", "started", "last update"):
        table.add_column(col)
    for r in runs:
        table.add_row(
            r["run_id"],
            str(r["steps"]),
            str(r["first_step"]),
            str(r["last_step"]),
            (r["first_time"] or "")[:19].replace("T", " "),
            (r["last_time"] or "")[:19].replace("T", " "),
        )
    console.print(table)


@runs_app.command("show", help="Per-step metrics of one run, as a table.")
def runs_show(
    run: str = typer.Argument(..., help="The run id (see `iclaw runs list`)."),
    columns: str | None = typer.Option(
        None, "--columns", "-c", help="Comma-separated metric names to show (default: all)."
    ),
    last: int = typer.Option(0, "--last", help="Only the last N steps (0: all)."),
    db: Db = None,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from rich.console import Console
    from rich.table import Table

    from iclaw.errors import IclawError
    from iclaw.store.transcript import fmt

    with _open(db) as store:
        rows = store.metrics(run)
    if not rows:
        raise IclawError(f"run {run!r}: no metrics logged (see `iclaw runs list`)")
    if last > 0:
        rows = rows[-last:]
    names = [k for k in rows[0] if k not in ("run_id", "step", "time")]
    names = [k for k in names if any(r.get(k) is not None for r in rows)]  # skip all-empty columns
    if columns:
        wanted = [c.strip() for c in columns.split(",") if c.strip()]
        missing = [c for c in wanted if c not in rows[0]]
        if missing:
            raise IclawError(f"--columns: no metric named {', '.join(missing)} in run {run!r}")
        names = wanted
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=f"run {run}", header_style="bold", pad_edge=False)
    table.add_column("step", justify="right")
    for n in names:
        table.add_column(n, justify="right")
    for r in rows:
        table.add_row(str(r["step"]), *[fmt(r.get(n), 4) for n in names])
    Console(highlight=False).print(table)


@runs_app.command("plot", help="Plot metrics of one or more runs (reward, KL, ...) to a PNG.")
def runs_plot(
    runs: list[str] = typer.Argument(..., help="Run ids (see `iclaw runs list`)."),
    out: Path = typer.Option(Path("runs.png"), "--out", help="PNG file to write."),
    metrics: str = typer.Option(
        "reward_mean,kl", "--metrics", help="Comma-separated metric names, one panel each."
    ),
    db: Db = None,
) -> None:
    from iclaw.errors import IclawError
    from iclaw.store import Store
    from iclaw.train.common import console, plot_series

    with Store(db) as store:
        series = {}
        for r in runs:
            rows = store.metrics(r)
            if not rows:
                raise IclawError(f"run {r!r}: no metrics logged (see `iclaw runs list`)")
            series[r] = rows
    plot_series(series, [m.strip() for m in metrics.split(",") if m.strip()], out)
    console.print(f"wrote {out}")

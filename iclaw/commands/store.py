"""`iclaw replay` (browse and export logged episodes) and `iclaw runs list|show` (training metrics).

Only typer + stdlib at module level: the store (sqlite-utils) and rich load inside the commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

DB_OPTION_HELP = "Trajectory database (default ./trajectories.db)."

# `iclaw runs ...`: list and show now; the lead adds `runs plot` to this sub-app (see the end of the file).
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
    db: Path | None = typer.Option(None, "--db", envvar="ICLAW_DB", help=DB_OPTION_HELP),
) -> None:
    from rich.console import Console

    from iclaw.errors import IclawError

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
    _episode_table(rows, Console(highlight=False))


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


def _status(status: str | None) -> str:
    colours = {"passed": "green", "failed": "red", "error": "magenta", "running": "yellow"}
    colour = colours.get(status or "", "dim")
    return f"[{colour}]{status or '-'}[/]"


def _fmt(v, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _episode_table(rows: list[dict], console) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    if not rows:
        console.print("[dim]no episodes match[/]")
        return
    # Optional columns only when some row has them, so the table fits an 80-column terminal.
    has = {k: any(r.get(k) not in (None, "") for r in rows) for k in ("model", "reward", "rating")}
    cols = [("id", "right"), ("started", "left"), ("source", "left"), ("task", "left")]
    cols += [("model", "left")] if has["model"] else []
    cols += [("status", "left")]
    cols += [("reward", "right")] if has["reward"] else []
    cols += [("rating", "left")] if has["rating"] else []
    cols += [("calls", "right"), ("final command", "left")]
    table_rows = []
    for r in rows:
        cells = {
            "id": str(r["id"]),
            "started": (r.get("started_at") or "")[5:16].replace("T", " "),
            "source": escape(r.get("source") or "-"),
            "task": escape(r.get("task_id") or "-"),
            "model": escape(r.get("model") or "-"),
            "status": _status(r.get("status")) + "".join(f" [red]{f}[/]" for f in r.get("flags") or {}),
            "reward": _fmt(r.get("reward")),
            "rating": {"good": "[green]good[/]", "bad": "[red]bad[/]"}.get(r.get("rating") or "", "-"),
            "calls": str(r.get("n_tool_calls", 0)),
            "final command": escape((r.get("final_command") or "").replace("\n", " ⏎ ")),
        }
        table_rows.append([cells[name] for name, _ in cols])
    table = Table(header_style="bold", pad_edge=False, box=None)
    for i, (name, justify) in enumerate(cols):
        if name == "final command":  # takes what is left, cut with an ellipsis
            table.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis")
        else:  # never squeezed: these are short
            width = max([len(name)] + [Text.from_markup(row[i]).cell_len for row in table_rows])
            table.add_column(name, justify=justify, no_wrap=True, min_width=width)
    for row in table_rows:
        table.add_row(*row)
    console.print(table)
    console.print(f"[dim]{len(rows)} episode(s); `iclaw replay ID` shows one[/]")


def show_episode(ep: dict, console) -> None:
    """A transcript: header, then each turn's text and tool calls (syntax-highlighted, exit codes coloured)."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax

    head = [f"[bold]episode {ep['id']}[/]", escape(ep.get("source") or "-")]
    for key in ("task_id", "family", "model", "checkpoint", "run_id"):
        if ep.get(key):
            head.append(f"{key.replace('_id', '')} {escape(str(ep[key]))}")
    if ep.get("step") is not None:
        head.append(f"step {ep['step']}")
    console.print(" · ".join(head))
    console.print(f"[dim]{ep.get('started_at') or ''} → {ep.get('ended_at') or ''}[/]")

    # Turn by turn: what the user and the model wrote, then what ran (the tool calls, which carry
    # exit codes and timings; the "obs" text is shown only for turns without a logged call).
    texts: dict[int, list[dict]] = {}
    for t in ep.get("turns", []):
        texts.setdefault(t.get("turn") or 0, []).append(t)
    calls: dict[int, list[dict]] = {}
    for c in ep.get("tool_calls", []):
        calls.setdefault(c.get("turn") or 0, []).append(c)
    styles = {"user": "blue", "assistant": "magenta"}
    for n in sorted(set(texts) | set(calls)):
        for t in texts.get(n, []):
            if t["role"] in styles:
                title = f"{t['role']} · turn {n}"
                console.print(
                    Panel(
                        escape(t.get("text") or ""),
                        title=title,
                        title_align="left",
                        border_style=styles[t["role"]],
                    )
                )
        if n in calls:
            for c in calls[n]:
                _show_call(c, console, Syntax)
        else:
            for t in texts.get(n, []):
                if t["role"] == "obs":
                    text = escape(t.get("text") or "")
                    console.print(Panel(text, title="observation", title_align="left", border_style="dim"))

    tail = [f"status {_status(ep.get('status'))}", f"reward {_fmt(ep.get('reward'))}"]
    if ep.get("rating"):
        tail.append(f"rating {'[green]' if ep['rating'] == 'good' else '[red]'}{ep['rating']}[/]")
    if ep.get("final_command"):
        tail.append(f"final: [bold]{escape(ep['final_command'])}[/]")
    console.print(" · ".join(tail))
    for flag, why in (ep.get("flags") or {}).items():
        console.print(f"[bold red]flagged {flag}[/]: {escape(why)}")
    if ep.get("meta"):
        console.print(f"[dim]meta {escape(json.dumps(ep['meta'], ensure_ascii=False))}[/]")


def _show_call(c: dict, console, Syntax) -> None:
    from rich.markup import escape

    lexer = "python" if c.get("tool") == "python" else "bash"
    console.print(f"[bold cyan]{c.get('tool')}[/] [dim]turn {c.get('turn')}[/]")
    console.print(
        Syntax(c.get("input") or "", lexer, theme="ansi_dark", background_color="default", word_wrap=True)
    )
    code = c.get("exit_code")
    colour = "green" if code == 0 else "red"
    info = [f"[bold {colour}]exit {code}[/]", f"{_fmt(c.get('duration_ms'), 4)} ms"]
    if c.get("timed_out"):
        info.append("[bold red]timed out[/]")
    if c.get("signal") is not None and not c.get("timed_out"):
        info.append(f"[red]signal {c['signal']}[/]")
    console.print("  " + " · ".join(info))
    if c.get("stdout"):
        console.print(escape(c["stdout"].rstrip("\n")), soft_wrap=True)
    if c.get("stderr"):
        console.print(f"[red]{escape(c['stderr'].rstrip(chr(10)))}[/]", soft_wrap=True)


# --- iclaw runs ------------------------------------------------------------------------------------


@runs_app.command("list", help="Training runs that logged metrics: steps and time span.")
def runs_list(
    db: Path | None = typer.Option(None, "--db", envvar="ICLAW_DB", help=DB_OPTION_HELP),
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
    db: Path | None = typer.Option(None, "--db", envvar="ICLAW_DB", help=DB_OPTION_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from rich.console import Console
    from rich.table import Table

    from iclaw.errors import IclawError

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
        table.add_row(str(r["step"]), *[_fmt(r.get(n), 4) for n in names])
    Console(highlight=False).print(table)


# `iclaw runs plot RUN` (matplotlib figure of the metrics) belongs here; the lead adds it as
# @runs_app.command("plot") reading `Store(db).metrics(run)` like runs_show above.

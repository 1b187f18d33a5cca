"""How stored episodes look on a terminal: the table `iclaw replay` lists them in, and the transcript of one
(`iclaw replay ID`, and `/replay` inside `iclaw chat`). rich loads inside the functions."""

from __future__ import annotations

import json


def status_markup(status: str | None) -> str:
    """An episode status in its colour (rich markup)."""
    colours = {"passed": "green", "failed": "red", "error": "magenta", "running": "yellow"}
    colour = colours.get(status or "", "dim")
    return f"[{colour}]{status or '-'}[/]"


def fmt(v: object, digits: int = 3) -> str:
    """A stored value as a table cell: None as "-", floats to `digits` significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def episode_table(rows: list[dict], console) -> None:
    """Episode rows (Store.episodes) as one table that fits an 80-column terminal."""
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
            "status": status_markup(r.get("status")) + "".join(f" [red]{f}[/]" for f in r.get("flags") or {}),
            "reward": fmt(r.get("reward")),
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
                show_call(c, console, Syntax)
        else:
            for t in texts.get(n, []):
                if t["role"] == "obs":
                    text = escape(t.get("text") or "")
                    console.print(Panel(text, title="observation", title_align="left", border_style="dim"))

    tail = [f"status {status_markup(ep.get('status'))}", f"reward {fmt(ep.get('reward'))}"]
    if ep.get("rating"):
        tail.append(f"rating {'[green]' if ep['rating'] == 'good' else '[red]'}{ep['rating']}[/]")
    if ep.get("final_command"):
        tail.append(f"final: [bold]{escape(ep['final_command'])}[/]")
    console.print(" · ".join(tail))
    for flag, why in (ep.get("flags") or {}).items():
        console.print(f"[bold red]flagged {flag}[/]: {escape(why)}")
    if ep.get("meta"):
        console.print(f"[dim]meta {escape(json.dumps(ep['meta'], ensure_ascii=False))}[/]")


def show_call(c: dict, console, Syntax) -> None:
    """One tool call: tool, input (highlighted), exit code and time, stdout and stderr."""
    from rich.markup import escape

    lexer = "python" if c.get("tool") == "python" else "bash"
    console.print(f"[bold cyan]{c.get('tool')}[/] [dim]turn {c.get('turn')}[/]")
    console.print(
        Syntax(c.get("input") or "", lexer, theme="ansi_dark", background_color="default", word_wrap=True)
    )
    code = c.get("exit_code")
    colour = "green" if code == 0 else "red"
    info = [f"[bold {colour}]exit {code}[/]", f"{fmt(c.get('duration_ms'), 4)} ms"]
    if c.get("timed_out"):
        info.append("[bold red]timed out[/]")
    if c.get("signal") is not None and not c.get("timed_out"):
        info.append(f"[red]signal {c['signal']}[/]")
    console.print("  " + " · ".join(info))
    if c.get("stdout"):
        console.print(escape(c["stdout"].rstrip("\n")), soft_wrap=True)
    if c.get("stderr"):
        console.print(f"[red]{escape(c['stderr'].rstrip(chr(10)))}[/]", soft_wrap=True)

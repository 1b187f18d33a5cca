"""`iclaw eval`: the agent on tasks, pass@1 / pass@k overall and per family (or --oracle / --broken to check
the verifier). Only typer + stdlib at module level."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer

from iclaw.commands.options import Db, Device, Seed, Unsafe


def register(app: typer.Typer) -> None:
    app.command("eval", help="Run the agent on tasks and report pass@1 / pass@k overall and per family.")(
        eval_cmd
    )


def eval_cmd(
    model: str | None = typer.Option(
        None,
        "--model",
        help="Registry name or checkpoint path (default: $ICLAW_MODEL, else the built-in policy).",
    ),
    tasks: Path | None = typer.Option(None, "--tasks", help="Any JSONL task file."),
    split: str = typer.Option(
        "heldout", "--split", help="Generate tasks of this split when --tasks is not given."
    ),
    n: int = typer.Option(60, "--n", help="How many tasks to generate when --tasks is not given."),
    family: list[str] | None = typer.Option(None, "--family", help="Only these families (repeatable)."),
    k: int = typer.Option(
        1, "-k", help="pass@k; samples k episodes per task (temperature must then be > 0)."
    ),
    temperature: float | None = typer.Option(
        None, "--temperature", help="Default: 0 (greedy) for k=1, 0.8 otherwise."
    ),
    max_turns: int = typer.Option(2, "--max-turns"),
    hints: bool = typer.Option(
        True,
        "--hints/--no-hints",
        help="End each failed run's output with the hint line (iclaw/tools/hints.py).",
    ),
    oracle: bool = typer.Option(
        False, "--oracle", help="Submit each task's reference (verifier sanity check)."
    ),
    broken: bool = typer.Option(
        False, "--broken", help="Submit each task's broken command (should score 0)."
    ),
    seed: Seed = 0,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON report."),
    device: Device = None,
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from rich.console import Console

    from iclaw.errors import IclawError
    from iclaw.tasks import Verifier, fill_errors, generate, load_tasks
    from iclaw.train.common import live_progress, safe_sandbox

    if oracle and broken:
        raise IclawError("--oracle and --broken are exclusive")
    if not (oracle or broken) and model is None:
        from iclaw.model.registry import DEFAULT_MODEL

        model = os.environ.get("ICLAW_MODEL") or DEFAULT_MODEL  # the built-in policy unless configured
    if k < 1:
        raise IclawError(f"-k: must be >= 1, got {k}")
    temp = temperature if temperature is not None else (0.0 if k == 1 else 0.8)
    if k > 1 and temp == 0:
        raise IclawError("-k > 1 needs --temperature > 0 (greedy samples are all the same)")
    sandbox = safe_sandbox(unsafe_no_sandbox)
    if model is not None and not (oracle or broken):
        from iclaw.model import registry

        registry.resolve(model)
    if tasks is not None:
        task_list = load_tasks(tasks)
        if family:
            task_list = [t for t in task_list if t.family in family]
        # A hand-written task's broken command runs first, so its first turn shows the real output.
        fill_errors(task_list, sandbox, where=str(tasks))
    else:
        task_list = generate(n, split=split, seed=seed, families=family, sandbox=sandbox)
    if not task_list:
        raise IclawError(f"{tasks}: no tasks to evaluate")
    verifier = Verifier(sandbox)
    console = Console(highlight=False, stderr=as_json)
    with live_progress(len(task_list), "eval", enabled=not as_json) as progress:
        if oracle or broken:
            from iclaw.agent.evaluate import evaluate_fixed

            cands = [(t.reference or t.solution) if oracle else t.broken for t in task_list]
            report = evaluate_fixed(task_list, cands, verifier=verifier, progress=lambda m: progress(m))
        else:
            from iclaw.agent.episode import EpisodeConfig
            from iclaw.agent.evaluate import evaluate
            from iclaw.agent.policy import Policy
            from iclaw.store import Store

            policy = Policy.load(model, device=device)
            with Store(db) as store:
                report = evaluate(
                    policy,
                    task_list,
                    sandbox=sandbox,
                    verifier=verifier,
                    k=k,
                    seed=seed,
                    store=store,
                    cfg=EpisodeConfig(max_turns=max_turns, temperature=temp, hints=hints),
                    progress=lambda m: progress(m),
                )
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
        return
    from rich.table import Table

    t = Table(
        title=f"{'oracle' if oracle else 'broken' if broken else model}: {report.tasks} tasks",
        header_style="bold",
    )
    cols = ("family", "tasks", "pass@1") + ((f"pass@{k}",) if k > 1 else ())  # pass@1 once when k = 1
    for c in cols:
        t.add_column(c, justify="right" if c != "family" else "left")
    rows = [(f, r["tasks"], r["pass_at_1"], r["pass_at_k"]) for f, r in report.by_family.items()]
    rows.append(("[bold]overall[/]", report.tasks, report.pass_at_1, report.pass_at_k))
    for f, n, p1, pk in rows:
        t.add_row(f, str(n), f"{p1:.3f}", *((f"{pk:.3f}",) if k > 1 else ()))
    console.print(t)

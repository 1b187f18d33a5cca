"""`iclaw chat` (the interactive agent) and `iclaw fix "CMD"` (one command, fixed non-interactively).

Only typer + stdlib at module level: torch, rich and prompt-toolkit load inside the commands."""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import Db

YES_HELP = (
    "Run the fix without asking (still sandboxed), except one whose dry run deleted, emptied, replaced or "
    "changed a file that exists."
)
MODEL_HELP = (
    "Registered model name (see `iclaw models list`) or a checkpoint path; default: the built-in policy."
)


def register(app: typer.Typer) -> None:
    app.command(
        "chat",
        help="Interactive agent: type a broken command (or paste a Python snippet); it runs in the sandbox "
        "in your current directory and the model fixes it, asking before each command. /help inside.",
    )(chat)
    app.command(
        "fix",
        help="Run one command; if it fails, try fixes (the hints' nearest names, the model's likeliest fix, "
        "samples) in throwaway copies of this folder, propose the one that worked and stays closest to what you "
        "typed, run it here once approved, print it. Exit 0 when it exited 0 (a final `ls` or `pwd` that only "
        "looked does not count). Example: iclaw fix 'gti status' --yes",
    )(fix)


def chat(
    model: str = typer.Option("iclaw-small", "--model", "-m", envvar="ICLAW_MODEL", help=MODEL_HELP),
    yes: bool = typer.Option(False, "--yes", "-y", help=YES_HELP),
    db: Db = None,
    net: bool = typer.Option(False, "--net", help="Allow network access inside the sandbox."),
    max_turns: int = typer.Option(3, "--max-turns", help="Model turns (tool calls) per fix attempt."),
    temperature: float = typer.Option(
        0.7,
        "--temperature",
        help="Sampling temperature once you decline a proposal (the first is always the likeliest; 0 = greedy).",
    ),
) -> None:
    from iclaw.agent.chat import Chat
    from iclaw.errors import IclawError

    if max_turns < 1:
        raise IclawError(f"--max-turns: must be at least 1, got {max_turns}")
    Chat(model, db=db, net=net, yes=yes, max_turns=max_turns, temperature=temperature).run()


def fix(
    command: str = typer.Argument(..., help="The broken command (multi-line text or --python: Python code)."),
    model: str = typer.Option("iclaw-small", "--model", "-m", envvar="ICLAW_MODEL", help=MODEL_HELP),
    yes: bool = typer.Option(False, "--yes", "-y", help=YES_HELP),
    as_json: bool = typer.Option(
        False, "--json", help='Print {"fixed", "command", "exit_code", "episode", "changed"} on stdout.'
    ),
    db: Db = None,
    max_turns: int = typer.Option(3, "--max-turns", help="Model turns (tool calls) for the fix."),
    net: bool = typer.Option(False, "--net", help="Allow network access inside the sandbox."),
    python: bool = typer.Option(False, "--python", help="COMMAND is Python code."),
    temperature: float = typer.Option(
        0.7,
        "--temperature",
        help="Temperature of the sampled fixes, tried only when neither a hint nor the likeliest fix works "
        "(0: none).",
    ),
) -> None:
    """`iclaw fix` exits 0: fixed (see FixResult.fixed), 1: not fixed, 130: cancelled. The transcript goes to
    stderr; stdout gets only the fixed command (or, with --json, one JSON object), so `$(iclaw fix ...)` and
    `iclaw fix ... --json | jq` work."""
    import json
    import os
    import sys

    from rich.console import Console

    from iclaw.agent.fix import MAX_INPUT_CHARS, Fixer, classify, clean_text
    from iclaw.agent.terminal import Confirm, Transcript, load_policy, stdin_is_tty
    from iclaw.errors import IclawError
    from iclaw.model import registry
    from iclaw.store import Store
    from iclaw.tools.sandbox import Sandbox

    command = clean_text(command)
    kind, code = ("python", command) if python else classify(command)
    if not code.strip():
        raise IclawError("COMMAND: empty command")
    if len(code) > MAX_INPUT_CHARS:
        raise IclawError(f"COMMAND: {len(code):,} characters; the limit is {MAX_INPUT_CHARS:,}")
    if max_turns < 1:
        raise IclawError(f"--max-turns: must be at least 1, got {max_turns}")
    registry.resolve(model)  # an unknown model: one line, before torch loads
    err = Console(stderr=True, highlight=False)
    sandbox = Sandbox(workspace=True, net=net)
    if sandbox.level != "bwrap":
        err.print(
            f"[bold yellow]warning:[/] no bwrap sandbox ({sandbox.reason}): commands run with rlimits "
            "only and can touch your files"
        )
    if yes:
        approve = Confirm(err, auto=True)
    elif stdin_is_tty():
        from prompt_toolkit.output import create_output

        approve = Confirm(err, output=create_output(stdout=sys.stderr))  # keep stdout for the result
    else:
        err.print(
            "[yellow]stdin is not a terminal, so nobody can confirm model commands: each one is "
            "declined (pass --yes to run them, still inside the sandbox)[/]"
        )

        def approve(ep, action):  # noqa: ARG001 — the loop's approve signature
            return None

    with Store(db) as store:
        policy = load_policy(model)
        from iclaw.agent.episode import EpisodeConfig

        cfg = EpisodeConfig(max_turns=max_turns, temperature=temperature)
        fixer = Fixer(policy, sandbox, store, cfg, Path(os.getcwd()), source="fix", model_name=model)
        view = Transcript(err, policy.label, rate_hint="iclaw replay {id} --rate good")
        res = fixer.run(
            kind,
            code,
            approve=approve,
            on_event=view.on_event,
            on_first=lambda r: view.on_first(kind, code, r),
        )
        view.summary(res)
    if as_json:
        print(json.dumps(res.to_json(), ensure_ascii=False))
    elif res.fixed:
        print(res.command)
    raise typer.Exit(130 if res.cancelled else 0 if res.fixed else 1)

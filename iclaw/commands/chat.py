"""`iclaw chat` (the interactive agent) and `iclaw fix "CMD"` (one command, fixed non-interactively).

Only typer + stdlib at module level: torch, rich and prompt-toolkit load inside the commands."""

from __future__ import annotations

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
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help=YES_HELP,
    ),
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
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help=YES_HELP,
    ),
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
    from iclaw.agent.fix import fix_main

    raise typer.Exit(
        fix_main(
            command,
            model=model,
            yes=yes,
            as_json=as_json,
            db=db,
            max_turns=max_turns,
            net=net,
            python=python,
            temperature=temperature,
        )
    )

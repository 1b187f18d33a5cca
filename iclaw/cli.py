"""The `iclaw` command line. Thin on purpose: each area registers its commands from iclaw/commands/,
and those modules import torch and friends only inside the command bodies, so `iclaw --help` is fast."""

from __future__ import annotations

import sys

import typer

from iclaw.errors import IclawError

app = typer.Typer(
    name="iclaw",
    help="A terminal agent with a local GPT-2-family policy: fixes broken commands with real, sandboxed "
    "tools, logs every call to SQLite, and trains itself (SFT, GRPO with a KL term, distillation).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from iclaw import __version__

        print(f"iclaw {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """A terminal agent with a local GPT-2-family policy (see `iclaw COMMAND --help`)."""


# Each module of iclaw/commands/ is named after the (first) command it defines; this order is the order in
# `iclaw --help` (commands first, then groups, each in the order registered).
COMMAND_MODULES = (
    "chat",
    "exec",
    "replay",
    "tasks",
    "eval",
    "train",
    "demo",
    "distill",
    "models",
    "pretrain",
    "bench",
)


def _register_all() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"iclaw.commands.{name}").register(app)


_register_all()


def main() -> None:
    """Entry point: run the app; bad input becomes one `error:` line and exit code 2, never a traceback."""
    try:
        app()
    except IclawError as e:
        from rich.console import Console

        Console(stderr=True).print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)

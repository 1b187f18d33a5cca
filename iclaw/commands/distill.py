"""Placeholder: `iclaw distill` is registered here."""

import typer


def register(app: typer.Typer) -> None:
    return None

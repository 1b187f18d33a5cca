"""Placeholder: commands for this area are registered here."""

import typer


def register(app: typer.Typer) -> None:
    return None

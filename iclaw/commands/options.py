"""The options several commands share, defined once (typer Annotated aliases: `db: Db = None`), the flags
that removed options left behind, and the one count parser. Each command keeps its own default; only typer
and the stdlib here (`iclaw --help` stays fast)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from iclaw.errors import IclawError

Db = Annotated[
    Path | None,
    typer.Option("--db", envvar="ICLAW_DB", help="Trajectory database (default ./trajectories.db)."),
]
Device = Annotated[
    str | None, typer.Option("--device", help="cuda, cuda:N, mps or cpu (default: the best available).")
]
Seed = Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same result.")]
Unsafe = Annotated[
    bool,
    typer.Option("--unsafe-no-sandbox", help="Run model-written commands without bubblewrap (dangerous)."),
]


def removed_flag(flag: str) -> typer.Option:
    """A flag an option no run kept left behind: hidden from --help; given, refuse_removed says what replaced it."""
    return typer.Option(None, flag, hidden=True)


def refuse_removed(**given) -> None:
    """One clear error for a removed flag that was given (its value is not None): `curriculum=True` ->
    '--curriculum: removed: ...' (the reasons: iclaw/train/config.py REMOVED)."""
    from iclaw.train.config import REMOVED

    for field, value in given.items():
        if value is not None:
            raise IclawError(f"--{field.replace('_', '-')}: {REMOVED[field]}")


_SUFFIX = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9}


def parse_count(text: str, flag: str) -> int:
    """'2000000', '2_000_000', '2e6', '2M', '1.5k' -> an int; IclawError naming the flag otherwise."""
    s = text.strip().lower().replace("_", "").replace(",", "")
    m = re.fullmatch(r"(\d+(?:\.\d*)?(?:e\d+)?)([kmbg]?)", s)
    if not m:
        raise IclawError(f"{flag} {text!r}: expected a number such as 2000000, 2e6 or 2M")
    n = int(float(m.group(1)) * _SUFFIX.get(m.group(2), 1))
    if n <= 0:
        raise IclawError(f"{flag} {text!r}: must be positive")
    return n

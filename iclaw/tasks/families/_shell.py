"""Small fixture helpers shared by the shell families (no FAMILY here: this module is not a family).

Everything comes from iclaw/tasks/pools.py, so file names, directory names and contents vary from draw to
draw; `files()` returns a fixture dict whose keys are the paths, sorted so their order leaks nothing."""

from __future__ import annotations

import random

from iclaw.tasks import pools

# Directory names people really use (plus pools.WORDS, drawn half the time).
DIRS = """src docs data notes logs backup config project photos reports old archive drafts music build site
assets lib scripts shared inbox work export uploads templates tests output results images misc""".split()


def body(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def fresh(rng: random.Random, make, taken: set[str]) -> str:
    """A name from make(rng) that is not in `taken` (and is added to it)."""
    for _ in range(50):
        name = make(rng)
        if name not in taken:
            taken.add(name)
            return name
    raise ValueError("no fresh name")


def file_name(rng: random.Random, taken: set[str], exts: list[str] | None = None) -> str:
    return fresh(rng, lambda r: pools.filename(r, exts or ["txt"]), taken)


def dir_name(rng: random.Random, taken: set[str]) -> str:
    return fresh(rng, lambda r: r.choice(DIRS) if r.random() < 0.5 else r.choice(pools.WORDS), taken)


def list_file(rng: random.Random, taken: set[str], exts: list[str] | None = None) -> tuple[str, list[str]]:
    """(a fresh file name, its 3-8 distinct lines)."""
    return file_name(rng, taken, exts), pools.lines(rng)


def content_for(rng: random.Random, name: str) -> str:
    """Content that fits the extension: a CSV for .csv, log lines for .log, else a list."""
    if name.endswith(".csv"):
        return pools.csv_text(rng)
    if name.endswith(".log"):
        return pools.log_text(rng)
    return body(pools.lines(rng))


def extra_files(rng: random.Random, taken: set[str], k: int, prefix: str = "") -> dict[str, str]:
    """k more small text files (under `prefix`), so a listing is a real listing."""
    out = {}
    for _ in range(k):
        name = file_name(rng, taken, pools.TEXT_EXTS[:4])
        out[prefix + name] = content_for(rng, name)
    return out

"""grep-order: grep's pattern and file given the wrong way round.

    fixture: notes.txt            broken: grep notes.txt milk
    error:   grep: milk: No such file or directory                 reference: grep milk notes.txt

grep takes the first word as the pattern, so it looks for a file named like the pattern; the request shows
an existing file name where the pattern goes, and the fix swaps the two (options stay in front).
Source: thefuck grep_arguments_order.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, extra_files, list_file
from iclaw.tasks.family import Family, Instance

OPTS = ["", "", "", "-n ", "-i ", "-c ", "-v ", "-w ", "-o ", "-in ", "-x ", "-m 1 ", "-A 1 ", "-B 1 "]


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    f, lines = list_file(rng, taken, rng.choice([["txt"], ["txt"], pools.TEXT_EXTS]))
    if rng.random() < 0.3:  # a pattern that matches part of a word, or a csv-like line
        lines = [f"{a},{rng.randint(1, 99)}" for a in lines]
    w = rng.choice(lines).split(",")[0]
    opt = rng.choice(OPTS)
    if opt == "-v " and all(w in x for x in lines):
        raise ValueError("-v would print nothing")
    if opt == "-x " and w not in lines:
        opt = "-w "
    if rng.random() < 0.3:
        w = w[: rng.randint(2, max(2, len(w) - 1))]  # part of a word: grep finds it inside lines
        if opt in ("-w ", "-x "):
            opt = ""
    pattern = w.upper() if opt in ("-i ", "-in ") and rng.random() < 0.5 else w
    if rng.random() < 0.2:
        pattern = f"'^{pattern}'"
    files = {f: body(lines)}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    return Instance(
        broken=f"grep {opt}{f} {pattern}",
        reference=f"grep {opt}{pattern} {f}",
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="grep-order",
    kind="bash",
    make=make,
    description="grep FILE PATTERN -> grep PATTERN FILE",
    error_mentions=("No such file or directory",),
    source="thefuck: grep_arguments_order",
)

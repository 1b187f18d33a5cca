"""pipe: a broken pipeline. Three shapes, each named by its error:

cat names.txt | sotr       "sotr: command not found"                 -> cat names.txt | sort
cat names.txt sort         "cat: sort: No such file or directory"    -> cat names.txt | sort
cat names.txt | | sort     "syntax error near unexpected token `|'"  -> cat names.txt | sort
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import list_fixture, typo
from iclaw.tasks.family import Family, Instance

# (producer, consumer) with FILE / W placeholders
PIPES = [
    ("cat FILE", "sort"),
    ("cat FILE", "sort -r"),
    ("cat FILE", "wc -l"),
    ("cat FILE", "head -n 2"),
    ("cat FILE", "tail -n 2"),
    ("sort FILE", "uniq"),
    ("sort FILE", "uniq -c"),
    ("grep W FILE", "wc -l"),
    ("cat FILE", "tac"),
]


def make(rng: random.Random) -> Instance:
    left, right = rng.choice(PIPES)
    fname, lines = list_fixture(rng)
    left = left.replace("FILE", fname).replace("W", rng.choice(lines))
    shape = rng.choice(("typo", "typo", "missing", "double"))
    if shape == "missing" and " " in right:
        shape = "typo"  # `cat f wc -l` fails on the option, not the missing pipe: not clearly determined
    if shape == "typo":
        cmd, _, args = right.partition(" ")
        broken = f"{left} | {typo(rng, cmd)} {args}".rstrip()
    elif shape == "missing":
        broken = f"{left} {right}"
    else:
        broken = f"{left} | | {right}"
    return Instance(broken=broken, reference=f"{left} | {right}", files={fname: "\n".join(lines) + "\n"})


FAMILY = Family(
    name="pipe",
    kind="bash",
    make=make,
    description="broken pipeline: typo after |, missing |, doubled |",
    source="bash: command not found / syntax error in a pipeline",
)

"""option-value: an option's value typed after the file name, so the option takes the file name as its value.

    broken: head -n names.txt 3      error: head: invalid number of lines: 'names.txt'
    reference: head -n 3 names.txt

The error quotes the file name as the bad value and the request holds the real value right after it: the fix
swaps the two. Same for tail -n / -c, head -c, fold -w, fmt -w, nl -w, cut -c / -f and sort -k.
Source: coreutils "invalid number of lines", "invalid field value", "invalid number at field start".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

# (the command and options before the one that wants a value, that option, a value maker, the input: list or csv)
OPTIONS = [
    ("head", "-n", lambda r: str(r.randint(1, 5)), "list"),
    ("tail", "-n", lambda r: str(r.randint(1, 5)), "list"),
    ("tail", "-n", lambda r: f"+{r.randint(2, 3)}", "list"),
    ("head", "-c", lambda r: str(r.randint(3, 20)), "list"),
    ("tail", "-c", lambda r: str(r.randint(3, 12)), "list"),
    ("fold", "-w", lambda r: str(r.randint(2, 6)), "list"),
    ("fmt", "-w", lambda r: str(r.randint(10, 30)), "list"),
    ("nl", "-w", lambda r: str(r.randint(1, 4)), "list"),
    ("cut", "-c", lambda r: r.choice(["1", "1-3", "2-4", "-2", "3-"]), "list"),
    ("cut -d,", "-f", lambda r: r.choice(["1", "2", "1,2", "2-3", "1,3"]), "csv"),
    ("sort -t,", "-k", lambda r: r.choice(["2", "2n", "2,2", "1r", "2nr"]), "csv"),
    ("sort -r -t,", "-k", lambda r: r.choice(["1", "2n"]), "csv"),
]


def make(rng: random.Random) -> Instance:
    cmd, opt, value, kind = rng.choice(OPTIONS)
    if kind == "csv":
        fname, content = pools.filename(rng, ["csv"]), pools.csv_text(rng)
    else:
        fname, content = pools.filename(rng, ["txt", "md", "log", "list"]), "\n".join(pools.lines(rng)) + "\n"
    v = value(rng)
    files = {fname: content}
    if rng.random() < 0.3:
        files[pools.filename(rng)] = pools.text_content(rng)
    return Instance(
        broken=f"{cmd} {opt} {fname} {v}",
        reference=f"{cmd} {opt} {v} {fname}",
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="option-value",
    kind="bash",
    make=make,
    description="an option's value typed after the file (head -n names.txt 3 -> head -n 3 names.txt)",
    error_mentions=("invalid",),
    source="coreutils: invalid number of lines / invalid field value",
)

"""py-delimiter (multi-turn): the program splits each line of a data file on the wrong separator.

    fixture: scores.txt        bob;42
                               erin;17
    code:    for line in open("scores.txt"):
                 name, score = line.strip().split(",")
    error:   ValueError: not enough values to unpack (expected 2, got 1)
             (or IndexError: list index out of range, for line.split(",")[1])

The error says only that the split found one field; which separator the file uses (; | : tab space ,) only a
look at the file shows (`cat scores.txt` / `head -2 scores.txt`), then the fix is split(";").
Source: Python: ValueError / IndexError (str.split).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

SEPS = [",", ";", "|", ":", "\t", " "]
STEMS = ["scores", "ages", "stock", "data", "points", "records", "inventory", "results", "votes", "levels"]
CODES = [  # @P = the separator the program uses, @F = the file
    'for line in open("@F"):\n    name, n = line.strip().split(@P)\n    print(name, int(n) * @K)',
    'total = 0\nwith open("@F") as f:\n    for line in f:\n        total += int(line.split(@P)[1])\nprint(total)',
    'with open("@F") as f:\n    rows = [line.strip().split(@P) for line in f]\nprint(max(int(r[1]) for r in rows))',
    'for line in open("@F"):\n    parts = line.strip().split(@P)\n    print(parts[1], parts[0].upper())',
    'd = {}\nfor line in open("@F"):\n    k, v = line.strip().split(@P)\n    d[k] = int(v)\nprint(sorted(d.items()))',
]


def _lit(sep: str) -> str:
    return '"\\t"' if sep == "\t" else f'"{sep}"'


def make(rng: random.Random) -> Instance:
    real, wrong = rng.sample(SEPS, 2)
    if real == " " and rng.random() < 0.5:
        real = "\t"  # split on a space is rarer in data files than a tab
    if real == wrong:
        raise ValueError("same separator")
    names = rng.sample(pools.NAMES + pools.WORDS, rng.randint(2, 5))
    content = "".join(f"{w}{real}{rng.randint(1, 99)}\n" for w in names)
    fname = (
        rng.choice(STEMS)
        + rng.choice(["", "_" + pools.stem(rng)])
        + rng.choice([".txt", ".dat", ".csv", ".tsv"])
    )
    if fname.endswith(".csv") and real != "," or fname.endswith(".tsv") and real != "\t":
        fname = fname[:-4] + ".txt"  # a .csv / .tsv name only where it tells the truth
    files = {fname: content}
    for _ in range(rng.randint(0, 2)):
        files.setdefault(pools.filename(rng, ["md", "log", "txt"]), "\n".join(pools.lines(rng)) + "\n")
    code = rng.choice(CODES).replace("@F", fname).replace("@K", str(rng.randint(2, 5)))
    return Instance(
        broken=code.replace("@P", _lit(wrong)),
        reference=code.replace("@P", _lit(real)),
        files=files,
        look=f"head -n 3 {fname}",  # the separator shows in the first lines
    )


FAMILY = Family(
    name="py-delimiter",
    kind="python",
    make=make,
    description="code splits a data file's lines on the wrong separator; look at the file to see the real one",
    multi_turn=True,
    error_mentions=("ValueError", "IndexError"),
    source="Python: ValueError / IndexError (str.split)",
)

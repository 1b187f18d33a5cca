"""mkdir-outcome (outcome-only): write into a directory that does not exist yet.

    broken: mkdir out/logs       error: mkdir: cannot create directory 'out/logs': No such file or directory
    test:   test -d out/logs     (intended fix: mkdir -p out/logs)

There is no reference output to compare with -- the `test` command checks the resulting state, and any fix
that produces it passes. The test is a string the verifier holds, so a candidate cannot change it.
"""

from __future__ import annotations

import random

from iclaw.tasks.family import FRUITS, WORDS, Family, Instance

DIRS = ["out", "build", "backup", "logs", "tmp2", "cache", "data", "site", "dist", "archive"]
SUBDIRS = ["logs", "old", "v1", "v2", "2024", "daily", "raw", "img", "tmp", "new"]
FILES = ["a.txt", "b.txt", "notes.txt", "run.log", "out.txt", "list.txt", "x.csv"]


def make(rng: random.Random) -> Instance:
    top, sub = rng.choice(DIRS), rng.choice(SUBDIRS)
    fname = rng.choice(FILES)
    shape = rng.randrange(4)
    if shape == 0:
        path = f"{top}/{sub}"
        return Instance(broken=f"mkdir {path}", test=f"test -d {path}", solution=f"mkdir -p {path}")
    if shape == 1:
        path = f"{top}/{fname}"
        return Instance(
            broken=f"touch {path}", test=f"test -f {path}", solution=f"mkdir -p {top} && touch {path}"
        )
    if shape == 2:
        word = rng.choice(WORDS + FRUITS)
        path = f"{top}/{sub}/{fname}"
        return Instance(
            broken=f"echo {word} > {path}",
            test=f'test "$(cat {path})" = {word}',
            solution=f"mkdir -p {top}/{sub} && echo {word} > {path}",
        )
    # cp into a missing directory: the test checks the copy's content literally, not against the source
    # file, so rewriting the source does not help.
    word = rng.choice(WORDS + FRUITS)
    return Instance(
        broken=f"cp {fname} {top}/",
        files={fname: word + "\n"},
        test=f'test "$(cat {top}/{fname})" = {word}',
        solution=f"mkdir -p {top} && cp {fname} {top}/",
    )


FAMILY = Family(
    name="mkdir-outcome",
    kind="bash",
    make=make,
    description="write into a missing directory; a test checks the result (no reference)",
    outcome_only=True,
)

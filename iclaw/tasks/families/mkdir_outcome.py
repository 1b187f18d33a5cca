"""mkdir-outcome (outcome-only): create a path whose parent directory does not exist yet.

    broken: mkdir out/logs       error: mkdir: cannot create directory 'out/logs': No such file or directory
    test:   test -d out/logs     (intended fix: mkdir -p out/logs)

There is no reference output to compare with -- the `test` command checks the resulting state, and any fix
that produces it passes. The test is a string the verifier holds, so a candidate cannot change it. Three
shapes are fixed by one mkdir with parents (`mkdir a/b`, `mkdir a/b/c`, `mkdir -v a/b`); the fourth
(`touch a/f.txt`) needs the directory made first, a composition no demonstration shows.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import MKDIR_DIRS, MKDIR_SUBDIRS
from iclaw.tasks.family import Family, Instance

FILES = ["a.txt", "b.txt", "notes.txt", "run.log", "out.txt", "list.txt", "x.csv"]


def make(rng: random.Random) -> Instance:
    top, sub = rng.choice(MKDIR_DIRS), rng.choice(MKDIR_SUBDIRS)
    shape = rng.randrange(4)
    if shape == 0:
        path = f"{top}/{sub}"
        return Instance(broken=f"mkdir {path}", test=f"test -d {path}", solution=f"mkdir -p {path}")
    if shape == 1:
        leaf = rng.choice([d for d in MKDIR_SUBDIRS if d != sub])
        path = f"{top}/{sub}/{leaf}"
        return Instance(broken=f"mkdir {path}", test=f"test -d {path}", solution=f"mkdir -p {path}")
    if shape == 2:
        path = f"{top}/{sub}"
        return Instance(broken=f"mkdir -v {path}", test=f"test -d {path}", solution=f"mkdir -pv {path}")
    # the one shape a single mkdir cannot fix: the file needs its directory first (a composed command)
    path = f"{top}/{rng.choice(FILES)}"
    return Instance(
        broken=f"touch {path}", test=f"test -f {path}", solution=f"mkdir -p {top} && touch {path}"
    )


FAMILY = Family(
    name="mkdir-outcome",
    kind="bash",
    make=make,
    description="write into a missing directory; a test checks the result (no reference)",
    outcome_only=True,
    source="thefuck: mkdir_p (mkdir: No such file or directory)",
)

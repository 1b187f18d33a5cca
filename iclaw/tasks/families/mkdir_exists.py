"""mkdir-exists: the directory is already there, so plain mkdir fails and the rest of the line never runs.

    fixture: build/notes.txt     broken: mkdir build && ls build
    error:   mkdir: cannot create directory 'build': File exists      reference: mkdir -p build && ls build

Single-turn, with a reference: `-p` makes mkdir succeed whether or not the directory exists. It is the one
family whose demonstrations answer mkdir's own error by adding `-p` (cmd-typo's `mkdri -pv D` keeps a flag
that was already there). mkdir-outcome (outcome-only, no demonstrations) needs the same flag for another error,
"No such file or directory" (a missing parent). Without this family, 0 of 688 GRPO rollouts passed
mkdir-outcome in three demos; with it, 27 % of the seed-0 demo's did and GRPO took the family from 0 to 16.7 %
held-out: reward teaches *when* to reach for the flag, the demonstrations only that it exists.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import MKDIR_DIRS, MKDIR_SUBDIRS, list_fixture
from iclaw.tasks.family import Family, Instance

# what the line does once the directory exists; DIR is the directory, FILE a file in it
AFTER = ["ls DIR", "ls DIR", "cat DIR/FILE", "wc -l DIR/FILE", "sort DIR/FILE"]


def make(rng: random.Random) -> Instance:
    d = (
        rng.choice(MKDIR_DIRS)
        if rng.random() < 0.7
        else f"{rng.choice(MKDIR_DIRS)}/{rng.choice(MKDIR_SUBDIRS)}"
    )
    fname, lines = list_fixture(rng)
    files = {f"{d}/{fname}": "\n".join(lines) + "\n"}
    if rng.random() < 0.5:  # sometimes a second file, so `ls` output is a real listing
        other, more = list_fixture(rng)
        if other != fname:
            files[f"{d}/{other}"] = "\n".join(more) + "\n"
    flag = rng.choice(["", "", "-v "])  # -v: still silent when the directory exists
    after = rng.choice(AFTER).replace("DIR", d).replace("FILE", fname)
    return Instance(
        broken=f"mkdir {flag}{d} && {after}",
        reference=f"mkdir -p{flag[1:2]} {d} && {after}",  # -p, or -pv
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="mkdir-exists",
    kind="bash",
    make=make,
    description="mkdir on a directory that exists (mkdir build && ls build -> mkdir -p build && ls build)",
    error_mentions=("File exists",),
    source="thefuck: mkdir_p (mkdir: cannot create directory: File exists)",
)

"""copy-missing-dir (outcome-only): cp or mv into a directory that does not exist yet.

    broken: cp notes.txt backup/     error: cp: cannot create regular file 'backup/': Not a directory
    test:   test -f backup/notes.txt (intended fix: mkdir -p backup && cp notes.txt backup/)

The trailing slash says the target is a directory, the error says it is not there: make it first, then copy.
With two files bash says "target 'backup/': No such file or directory"; with a new name inside the missing
directory, "cannot create regular file 'backup/new.txt'". mv's test also checks the file left its old place.
Source: coreutils cp/mv "Not a directory" / "No such file or directory" on the target.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import MKDIR_DIRS, MKDIR_SUBDIRS
from iclaw.tasks.family import Family, Instance

EXTS = ["txt", "md", "csv", "log", "json", "cfg"]


def make(rng: random.Random) -> Instance:
    names = sorted({pools.filename(rng, EXTS) for _ in range(rng.randint(1, 2))})
    files = {n: pools.text_content(rng) for n in names}
    if rng.random() < 0.3:
        files[pools.filename(rng, EXTS)] = pools.text_content(rng)  # one that stays where it is
    top = rng.choice(MKDIR_DIRS) if rng.random() < 0.6 else rng.choice(pools.WORDS)
    d = f"{top}/{rng.choice(MKDIR_SUBDIRS)}" if rng.random() < 0.3 else top
    cmd = rng.choice(["cp", "cp", "cp -v", "mv", "mv -v"])
    if len(names) == 1 and rng.random() < 0.3:  # a new name inside the missing directory
        new = f"{names[0].rsplit('.', 1)[0]}_{rng.choice(['copy', 'bak', 'old', '1'])}.{names[0].rsplit('.', 1)[1]}"
        target, landed = f"{d}/{new}", [f"{d}/{new}"]
    else:
        target, landed = f"{d}/", [f"{d}/{n}" for n in names]
    checks = [f"test -f {p}" for p in landed]
    if cmd.startswith("mv"):
        checks += [f"test ! -e {n}" for n in names]
    else:
        checks += [f"cmp -s {n} {p}" for n, p in zip(names, landed)]
    broken = f"{cmd} {' '.join(names)} {target}"
    return Instance(
        broken=broken,
        files=dict(sorted(files.items())),
        test=" && ".join(checks),
        solution=f"mkdir -p {d} && {broken}",
    )


FAMILY = Family(
    name="copy-missing-dir",
    kind="bash",
    make=make,
    description="cp/mv into a missing directory (cp a.txt backup/ -> mkdir -p backup && cp ...); a test checks",
    outcome_only=True,
    error_mentions=("Not a directory", "No such file or directory"),
    source="coreutils: cp/mv 'Not a directory' on a missing target directory",
)

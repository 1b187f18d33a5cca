"""name-case (multi-turn): the file exists, but its name has other letter case than the one typed.

    fixture: README.md, notes_v2.txt     broken: cat readme.md
    error:   cat: readme.md: No such file or directory      reference: cat README.md

Linux file names are case-sensitive and the error says nothing about the case; a guess (README? Readme?) is
a gamble, one `ls` shows the exact name to copy. Also the other way round (Notes.txt typed, notes.txt real).
Source: a shell error ("No such file or directory") on a case-sensitive file system.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import FILE_COMMANDS
from iclaw.tasks.family import Family, Instance

UPPER_STEMS = [
    "readme",
    "todo",
    "changelog",
    "license",
    "notes",
    "install",
    "authors",
    "contributing",
    "data",
]
EXTS = ["txt", "md", "csv", "log"]


def recase(rng: random.Random, stem: str, ext: str) -> str:
    """A name with capitals, as people and tools write them: README.md, Notes.txt, DATA.CSV, Site_Plan.txt."""
    shape = rng.randrange(4)
    if shape == 0:
        return f"{stem.upper()}.{ext}"
    if shape == 1:
        return f"{stem[:1].upper()}{stem[1:]}.{ext}"
    if shape == 2:
        return f"{stem.upper()}.{ext.upper()}"
    return f"{stem.title()}.{ext}"  # Site_Plan.txt, Photos-2024.md


def make(rng: random.Random) -> Instance:
    stem = rng.choice(UPPER_STEMS) if rng.random() < 0.4 else pools.stem(rng)
    ext = rng.choice(EXTS)
    if rng.random() < 0.7:  # typed in lower case, the file has capitals
        real = recase(rng, stem, ext)
        typed = real.lower()
    else:  # typed with a capital, the file is all lower case
        real = f"{stem.lower()}.{ext}"
        typed = recase(rng, stem, ext)
    if typed == real or typed.lower() != real.lower():
        raise ValueError("the case change did nothing (or more than the case)")
    files = {real: "\n".join(pools.lines(rng)) + "\n"}
    for _ in range(rng.randint(1, 3)):
        other = pools.filename(rng, EXTS)
        if rng.random() < 0.3:
            other = recase(rng, other.rsplit(".", 1)[0], other.rsplit(".", 1)[1])
        if other.lower() != real.lower():
            files[other] = pools.text_content(rng)
    cmd = rng.choice(FILE_COMMANDS)
    return Instance(
        broken=cmd.replace("FILE", typed),
        reference=cmd.replace("FILE", real),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="name-case",
    kind="bash",
    make=make,
    description="the file's name has other letter case (cat readme.md -> cat README.md; ls first)",
    multi_turn=True,
    error_mentions=("No such file or directory",),
    source="bash: No such file or directory (case-sensitive names)",
)

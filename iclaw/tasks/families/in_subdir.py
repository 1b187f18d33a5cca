"""in-subdir (multi-turn): the file is not here but in the one subdirectory next to the other files.

    fixture: docs/notes.txt, todo_v2.md, data.csv      broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory   reference: cat docs/notes.txt

The error only says the name is not here. `ls` shows one directory among plain files (or `find -name` shows
the path): the fix puts that directory in front of the name.
Source: a shell error ("No such file or directory"): the file was moved into a folder.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import FILE_COMMANDS
from iclaw.tasks.family import Family, Instance

DIRS = [
    "docs",
    "data",
    "notes",
    "src",
    "old",
    "archive",
    "backup",
    "reports",
    "files",
    "input",
    "tmp",
    "misc",
    "shared",
    "work",
    "drafts",
    "2024",
    "2025",
    "inbox",
    "export",
    "lists",
]
EXTS = ["txt", "md", "csv", "log"]


def make(rng: random.Random) -> Instance:
    d = rng.choice(DIRS) if rng.random() < 0.7 else pools.stem(rng)
    name = pools.filename(rng, EXTS)
    files = {f"{d}/{name}": "\n".join(pools.lines(rng)) + "\n"}
    for _ in range(rng.randint(0, 2)):  # neighbours in the directory: `ls d` lists more than the target
        files[f"{d}/{pools.filename(rng, EXTS)}"] = pools.text_content(rng)
    for _ in range(rng.randint(1, 3)):  # plain files here, none of them the target
        other = pools.filename(rng, EXTS)
        if other != name and other != d:
            files[other] = pools.text_content(rng)
    cmd = rng.choice(FILE_COMMANDS)
    return Instance(
        broken=cmd.replace("FILE", name),
        reference=cmd.replace("FILE", f"{d}/{name}"),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="in-subdir",
    kind="bash",
    make=make,
    description="the file is in a subdirectory (cat notes.txt -> cat docs/notes.txt; ls or find first)",
    multi_turn=True,
    error_mentions=("No such file or directory",),
    source="bash: No such file or directory (file in a subdirectory)",
)

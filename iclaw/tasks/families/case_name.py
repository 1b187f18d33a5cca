"""case-name (look first): the file exists, spelled with other capitals.

    fixture: README.md, Notes_2024.txt, plan.csv       broken: cat notes_2024.txt
    error:   cat: notes_2024.txt: No such file or directory       reference: cat Notes_2024.txt

Linux file names are case-sensitive; the request has the right letters in the wrong case, and only a listing
says which capitals (a capital first letter, all capitals, a capital extension, camelCase): `ls` first, then
copy the name it shows. Source: "No such file or directory" on a case-sensitive file system (names made on
macOS / Windows, whose file systems ignore case).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, extra_files
from iclaw.tasks.family import Family, Instance

# fmt: off
CONVENTIONAL = [
    "README.md", "TODO.md", "CHANGELOG.md", "NOTES.txt", "INSTALL.txt", "LICENSE", "Makefile", "AUTHORS",
    "TODO.txt", "README.txt", "Notes.md", "Dockerfile", "Procfile", "CONTRIBUTING.md",
]
COMMANDS = [
    "cat @", "cat @", "wc -l @", "head -n 2 @", "tail -n 1 @", "sort @", "sort -r @", "grep -c e @",
    "cat -n @", "nl @", "tac @", "wc -w @", "uniq @", "cut -c1-4 @", "md5sum @", "rev @",
]
# fmt: on


def recase(rng: random.Random, name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    shape = rng.randrange(5)
    if shape == 0:
        return stem.capitalize() + dot + ext
    if shape == 1:
        return stem.upper() + dot + ext
    if shape == 2:
        return stem + dot + ext.upper()
    if shape == 3:
        return stem.upper() + dot + ext.upper()
    parts = stem.replace("-", "_").split("_")
    return (
        "_".join(p.capitalize() for p in parts) + dot + ext
        if len(parts) > 1
        else stem.capitalize() + dot + ext
    )


def make(rng: random.Random) -> Instance:
    if rng.random() < 0.2:
        real = rng.choice(CONVENTIONAL)
    else:
        real = recase(rng, pools.filename(rng, ["txt", "txt", "md", "csv", "log"]))
    guessed = real.lower()
    if guessed == real:
        raise ValueError("no capitals")
    taken = {real, guessed}
    files = extra_files(rng, taken, rng.randint(1, 3))
    if any(k.lower() == guessed for k in files):
        raise ValueError("another file has the same name in lower case")
    files[real] = body(pools.lines(rng)) if rng.random() < 0.7 else pools.text_content(rng)
    cmd = rng.choice(COMMANDS)
    return Instance(
        broken=cmd.replace("@", guessed), reference=cmd.replace("@", real), files=dict(sorted(files.items()))
    )


FAMILY = Family(
    name="case-name",
    kind="bash",
    make=make,
    description="file name in the wrong case; ls shows the real capitals (Notes.txt)",
    multi_turn=True,
    error_mentions=("No such file or directory",),
    source="bash: No such file or directory (case-sensitive file names)",
)

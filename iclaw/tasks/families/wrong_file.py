"""wrong-file (multi-turn): the command names a file that is not there; the real one has a random suffix.

    fixture: notes_7b.txt, todo-q3.md, data2k.csv      broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory  reference: cat notes_7b.txt

The suffix is unguessable, so the agent has to run `ls` first and pick the one file whose stem matches.
"""

from __future__ import annotations

import random

from iclaw.tasks.family import Family, Instance, list_fixture, tag

STEMS = ["notes", "data", "report", "todo", "log", "names", "list", "items"]
EXTS = ["txt", "csv", "log", "md"]
COMMANDS = ["cat FILE", "wc -l FILE", "head -n 2 FILE", "sort FILE", "tail -n 1 FILE", "sort -r FILE"]


def random_name(rng: random.Random, stem: str) -> tuple[str, str]:
    ext = rng.choice(EXTS)
    return f"{stem}{rng.choice(['_', '-', ''])}{tag(rng)}.{ext}", f"{stem}.{ext}"


def make(rng: random.Random) -> Instance:
    stems = rng.sample(STEMS, rng.randint(2, 4))  # distinct stems: exactly one file matches the broken name
    real, guessed = random_name(rng, stems[0])
    files = {}
    for stem in stems[1:]:
        _, lines = list_fixture(rng)
        files[random_name(rng, stem)[0]] = "\n".join(lines) + "\n"
    _, lines = list_fixture(rng)
    files[real] = "\n".join(lines) + "\n"
    files = dict(sorted(files.items()))  # order must not leak which one is the target
    cmd = rng.choice(COMMANDS)
    return Instance(broken=cmd.replace("FILE", guessed), reference=cmd.replace("FILE", real), files=files)


FAMILY = Family(
    name="wrong-file",
    kind="bash",
    make=make,
    description="file name is wrong; the real one has a random suffix (ls first)",
    multi_turn=True,
    accept=lambda error, exit_code: "No such file or directory" in error,
)

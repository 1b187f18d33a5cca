"""wrong-file (multi-turn): the command names a file that is not there; the real one carries a suffix.

    fixture: notes_old.txt, todo_v2.md, data_bak.csv   broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory  reference: cat notes_old.txt

The suffix is one of eight everyday words (old, new, v2, ...), so a guess is right one time in eight and a
second guess after a failure one time in seven; running `ls` first and taking the one file whose stem
matches is right every time. Measured (2026-11-30, docs/LOG.md): with two random characters as the suffix the tiny policy
had p(copying them out of the listing) ~ 1e-9, so reward never came and GRPO had nothing to reinforce.
"""

from __future__ import annotations

import random

from iclaw.tasks.family import Family, Instance, list_fixture

STEMS = ["notes", "data", "report", "todo", "log", "names", "list", "items"]
EXTS = ["txt", "csv", "log", "md"]
COMMANDS = ["cat FILE", "wc -l FILE", "head -n 2 FILE", "sort FILE", "tail -n 1 FILE", "sort -r FILE"]


SUFFIXES = ["old", "new", "v2", "2024", "final", "bak", "copy", "draft"]


def random_name(rng: random.Random, stem: str) -> tuple[str, str]:
    """(the real name, the name a user would guess): notes_old.txt, notes.txt."""
    ext = rng.choice(EXTS)
    return f"{stem}_{rng.choice(SUFFIXES)}.{ext}", f"{stem}.{ext}"


def suffix_fixture(rng: random.Random, n_max: int) -> tuple[str, str, dict[str, str]]:
    """(the real name, the guessed name, files): 2..n_max list files with suffixed names and distinct stems,
    so exactly one file matches the guessed name's stem."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    real, guessed = random_name(rng, stems[0])
    files = {}
    for stem in stems[1:]:
        _, lines = list_fixture(rng)
        files[random_name(rng, stem)[0]] = "\n".join(lines) + "\n"
    _, lines = list_fixture(rng)
    files[real] = "\n".join(lines) + "\n"
    return real, guessed, dict(sorted(files.items()))  # sorted: the order must not leak the target


def make(rng: random.Random) -> Instance:
    real, guessed, files = suffix_fixture(rng, 4)
    cmd = rng.choice(COMMANDS)
    return Instance(broken=cmd.replace("FILE", guessed), reference=cmd.replace("FILE", real), files=files)


FAMILY = Family(
    name="wrong-file",
    kind="bash",
    make=make,
    description="file name is wrong; the real one has a suffix (ls first, or guess twice)",
    multi_turn=True,
    accept=lambda error, exit_code: "No such file or directory" in error,
    source="bash: No such file or directory (the name carries a suffix)",
)

"""wrong-ext (multi-turn): the file exists, under another extension.

    fixture: notes.md, todo_v2.csv       broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory      reference: cat notes.md

The request names the right stem; only a listing says which of the other extensions it has (a guess is right
one time in three). As in wrong-file, `ls` first is what works.
"""

from __future__ import annotations

import random

from iclaw.tasks.families.wrong_file import COMMANDS, EXTS, STEMS, random_name
from iclaw.tasks.family import Family, Instance, list_fixture


def ext_fixture(rng: random.Random, n_max: int) -> tuple[str, str, dict[str, str]]:
    """(the real name, the guessed name, files): one file `stem.ext`, 1..n_max-1 others with other stems."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    ext, guessed_ext = rng.sample(EXTS, 2)
    real, guessed = f"{stems[0]}.{ext}", f"{stems[0]}.{guessed_ext}"
    files = {}
    for stem in stems[1:]:
        name = random_name(rng, stem)[0] if rng.random() < 0.5 else f"{stem}.{rng.choice(EXTS)}"
        files[name] = "\n".join(list_fixture(rng)[1]) + "\n"
    files[real] = "\n".join(list_fixture(rng)[1]) + "\n"
    return real, guessed, dict(sorted(files.items()))


def make(rng: random.Random) -> Instance:
    real, guessed, files = ext_fixture(rng, 4)
    cmd = rng.choice(COMMANDS)
    return Instance(broken=cmd.replace("FILE", guessed), reference=cmd.replace("FILE", real), files=files)


FAMILY = Family(
    name="wrong-ext",
    kind="bash",
    make=make,
    description="the file exists under another extension (notes.txt -> notes.md; ls first)",
    multi_turn=True,
    accept=lambda error, exit_code: "No such file or directory" in error,
    source="bash: No such file or directory (the extension differs)",
)

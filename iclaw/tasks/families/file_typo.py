"""file-typo: a misspelled file name. `cat ntoes.txt` -> `cat notes.txt`.

    fixture: notes.txt, data.csv       broken: cat ntoes.txt
    error:   cat: ntoes.txt: No such file or directory      reference: cat notes.txt

Single-turn: the name is a common word, so the error alone says which file was meant (unlike wrong-file,
where the real name has a random suffix and only `ls` can tell). Both families answer "No such file or
directory"; telling them apart -- fix it now, or look first -- is what reinforcement learning has to learn.
"""

from __future__ import annotations

import random

from iclaw.tasks.families.wrong_file import COMMANDS, EXTS, STEMS
from iclaw.tasks.family import Family, Instance, list_fixture, typo


def plain_fixture(rng: random.Random, n_max: int = 3) -> tuple[str, dict[str, str]]:
    """2..n_max list files with distinct stems and plain names (`notes.txt`); returns (target, files)."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    files = {}
    for stem in stems:
        _, lines = list_fixture(rng)
        files[f"{stem}.{rng.choice(EXTS)}"] = "\n".join(lines) + "\n"
    target = next(f for f in files if f.startswith(stems[0] + "."))
    return target, dict(sorted(files.items()))


def misspelled(rng: random.Random, templates: list[str], n_files: int) -> Instance:
    """A FILE template from `templates` run on a typo of one of 2..n_files plain-named fixture files."""
    target, files = plain_fixture(rng, n_files)
    stem, ext = target.split(".")
    template = rng.choice(templates)
    return Instance(
        broken=template.replace("FILE", f"{typo(rng, stem)}.{ext}"),
        reference=template.replace("FILE", target),
        files=files,
    )


def make(rng: random.Random) -> Instance:
    return misspelled(rng, COMMANDS, 3)


FAMILY = Family(
    name="file-typo",
    kind="bash",
    make=make,
    description="misspelled file name (cat ntoes.txt -> cat notes.txt)",
    accept=lambda error, exit_code: "No such file or directory" in error,
)

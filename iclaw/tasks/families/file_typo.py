"""file-typo / py-file-typo: a misspelled file name. `cat ntoes.txt` -> `cat notes.txt`.

    fixture: notes.txt, data.csv       broken: cat ntoes.txt
    error:   cat: ntoes.txt: No such file or directory      reference: cat notes.txt
    code:    print(open("dtaa.csv").read().strip())   FileNotFoundError: ... 'dtaa.csv'   fix: open("data.csv")

Single-turn: the typo is in a common word, so the error alone says which file was meant -- also when the name
carries a suffix (`cat ntoes_old.txt` -> `cat notes_old.txt`), which the request shows. In wrong-file the
suffix is what the request does not show, and only `ls` can tell. Both families answer "No such file or
directory"; telling them apart -- fix it now, or look first -- is what reinforcement learning has to learn.
The Python twin opens the file the same way py-wrong-file does.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import (
    EXTS,
    FILE_CODES,
    FILE_COMMANDS,
    STEMS,
    list_fixture,
    random_name,
    typo,
)
from iclaw.tasks.family import Family, Instance


def typo_fixture(rng: random.Random, n_max: int) -> tuple[str, str, dict[str, str]]:
    """2..n_max list files with distinct stems; returns (the target's stem, its name, files). Half the names carry a
    suffix (`notes_old.txt`), like wrong-file's -- here the request shows it, so the fix copies it."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    suffixed = rng.random() < 0.5
    files, names = {}, []
    for stem in stems:
        name = random_name(rng, stem)[0] if suffixed else f"{stem}.{rng.choice(EXTS)}"
        _, lines = list_fixture(rng)
        files[name] = "\n".join(lines) + "\n"
        names.append(name)
    return stems[0], names[0], dict(sorted(files.items()))


def misspelled(rng: random.Random, templates: list[str], n_files: int) -> Instance:
    """A FILE template from `templates` run on a typo of one of 2..n_files fixture files (typo in the stem)."""
    stem, target, files = typo_fixture(rng, n_files)
    template = rng.choice(templates)
    return Instance(
        broken=template.replace("FILE", typo(rng, stem) + target[len(stem) :]),
        reference=template.replace("FILE", target),
        files=files,
    )


FAMILIES = (
    Family(
        name="file-typo",
        kind="bash",
        make=lambda rng: misspelled(rng, FILE_COMMANDS, 3),
        description="misspelled file name (cat ntoes.txt -> cat notes.txt)",
        error_mentions=("No such file or directory",),
        source="bash: No such file or directory (a typo of a name in the directory)",
    ),
    Family(
        name="py-file-typo",
        kind="python",
        make=lambda rng: misspelled(rng, FILE_CODES, 2),
        description="code opens a misspelled file name (open('dtaa.csv') -> open('data.csv'))",
        error_mentions=("FileNotFoundError",),
        source="Python: FileNotFoundError (a typo of a file in the directory)",
    ),
)

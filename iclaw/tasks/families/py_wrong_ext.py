"""py-wrong-ext (multi-turn): the Python twin of wrong-ext -- the code opens `data.txt`, the file is `data.csv`.

fixture: data.csv, notes_old.md      code: print(open("data.txt").read().strip())
FileNotFoundError: [Errno 2] No such file or directory: 'data.txt'
"""

from __future__ import annotations

import random

from iclaw.tasks.families.py_wrong_file import CODES
from iclaw.tasks.families.wrong_ext import ext_fixture
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    real, guessed, files = ext_fixture(rng, 3)
    code = rng.choice(CODES)
    return Instance(broken=code.replace("FILE", guessed), reference=code.replace("FILE", real), files=files)


FAMILY = Family(
    name="py-wrong-ext",
    kind="python",
    make=make,
    description="code opens a file whose extension is wrong (data.txt -> data.csv; ls first)",
    multi_turn=True,
    accept=lambda error, exit_code: "FileNotFoundError" in error,
    source="Python: FileNotFoundError (the extension differs)",
)

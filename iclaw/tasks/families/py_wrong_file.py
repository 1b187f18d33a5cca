"""py-wrong-file (multi-turn): the code opens a file that is not there; the real one carries a suffix.

    fixture: data_old.txt, notes_v2.md         code: print(open("data.txt").read().strip())
    FileNotFoundError: [Errno 2] No such file or directory: 'data.txt'

The agent has to look (`ls`, or os.listdir) before it can name the file.
"""

from __future__ import annotations

import random

from iclaw.tasks.families.wrong_file import suffix_fixture
from iclaw.tasks.family import Family, Instance

CODES = [
    'print(open("FILE").read().strip())',
    'with open("FILE") as f:\n    print(len(f.readlines()))',
    'lines = open("FILE").read().split()\nprint(sorted(lines)[0])',
    'with open("FILE") as f:\n    print(f.readline().strip().upper())',
]


def make(rng: random.Random) -> Instance:
    real, guessed, files = suffix_fixture(rng, 3)
    code = rng.choice(CODES)
    return Instance(broken=code.replace("FILE", guessed), reference=code.replace("FILE", real), files=files)


FAMILY = Family(
    name="py-wrong-file",
    kind="python",
    make=make,
    description="code opens a file that is not there; the real one has a suffix (ls first, or guess twice)",
    multi_turn=True,
    accept=lambda error, exit_code: "FileNotFoundError" in error,
    source="Python: FileNotFoundError (the name carries a suffix)",
)

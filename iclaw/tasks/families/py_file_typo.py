"""py-file-typo: code opens a misspelled file name. `open("dtaa.csv")` -> `open("data.csv")`.

    fixture: data.csv, todo.txt        code: print(open("dtaa.csv").read().strip())
    FileNotFoundError: [Errno 2] No such file or directory: 'dtaa.csv'

Single-turn, the Python twin of file-typo: the name is a common word, so the error says which file was meant.
"""

from __future__ import annotations

import random

from iclaw.tasks.families.file_typo import misspelled
from iclaw.tasks.families.py_wrong_file import CODES
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    return misspelled(rng, CODES, 2)


FAMILY = Family(
    name="py-file-typo",
    kind="python",
    make=make,
    description="code opens a misspelled file name (open('dtaa.csv') -> open('data.csv'))",
    accept=lambda error, exit_code: "FileNotFoundError" in error,
    source="Python: FileNotFoundError (a typo of a file in the directory)",
)

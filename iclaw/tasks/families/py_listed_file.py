"""py-listed-file: the program prints the directory listing, then opens a file that is not there.

    fixture: data_old.txt, notes_v2.md
    code:    import os
             print(sorted(os.listdir(".")))
             print(open("data.txt").read().strip())
    output:  ['data_old.txt', 'notes_v2.md'] / FileNotFoundError: ... 'data.txt'

Single-turn, the Python twin of listed-file: the printed listing holds the real name to copy (a suffixed
name as in py-wrong-file, or half the time another extension as in py-wrong-ext).
"""

from __future__ import annotations

import random

from iclaw.tasks.families import py_wrong_ext, py_wrong_file
from iclaw.tasks.family import Family, Instance

LIST = 'import os\nprint(sorted(os.listdir(".")))\n'


def make(rng: random.Random) -> Instance:
    inst = (py_wrong_file if rng.random() < 0.5 else py_wrong_ext).make(rng)
    return Instance(broken=LIST + inst.broken, reference=LIST + inst.reference, files=inst.files)


FAMILY = Family(
    name="py-listed-file",
    kind="python",
    make=make,
    description="the program prints the listing, then opens a wrong name; copy the real one from the listing",
    accept=lambda error, exit_code: "FileNotFoundError" in error,
    source="Python: FileNotFoundError after a listing in the output",
)

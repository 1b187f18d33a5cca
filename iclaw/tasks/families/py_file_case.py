"""py-file-case (multi-turn): the code opens `report.txt`; the file on disk is `Report.txt` (or REPORT.txt,
report.TXT, ...). Linux file names are case-sensitive.

    fixture: Report.txt, todo-list.md      code: print(open("report.txt").read().strip())
    FileNotFoundError: [Errno 2] No such file or directory: 'report.txt'    fix: open("Report.txt")

Only a listing says which capitalisation the file has (py-wrong-file / py-wrong-ext cover a suffix or an
extension). Source: Python FileNotFoundError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import CASE_EXTS, FILE_CODES, others, recase
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    guessed = pools.filename(rng, CASE_EXTS).lower()
    real = recase(rng, guessed)
    if rng.random() < 0.25:  # the other way round: the code capitalises, the file does not
        guessed, real = real, guessed
    files = others(rng, real, rng.randint(1, 3))
    files[real] = "\n".join(pools.lines(rng)) + "\n"
    code = rng.choice(FILE_CODES)
    return Instance(
        broken=code.replace("FILE", guessed),
        reference=code.replace("FILE", real),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="py-file-case",
    kind="python",
    make=make,
    description="code opens report.txt, the file is Report.txt (case differs; ls first)",
    multi_turn=True,
    error_mentions=("FileNotFoundError",),
    source="Python: FileNotFoundError",
)

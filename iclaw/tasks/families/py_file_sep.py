"""py-file-sep (multi-turn): the code opens `sales_report.csv`; the file is `sales-report.csv` (or
`sales report.csv`, `salesreport.csv`, `sales.report.csv`): the words are right, the separator is not.

    fixture: sales-report.csv, todo.md      code: print(open("sales_report.csv").read().strip())
    FileNotFoundError: [Errno 2] No such file or directory: 'sales_report.csv'

Only a listing says how the words are joined; a name with a space needs no escaping in a Python string.
Source: Python FileNotFoundError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import CASE_EXTS, FILE_CODES, others
from iclaw.tasks.family import Family, Instance

SEPS = ["_", "-", " ", "", "."]


def make(rng: random.Random) -> Instance:
    words = rng.sample(pools.WORDS, rng.randint(2, 3))
    if rng.random() < 0.3:
        words.append(str(rng.randint(2019, 2026)))
    sep, real_sep = rng.sample(SEPS[:3] if rng.random() < 0.6 else SEPS, 2)
    ext = rng.choice(CASE_EXTS)
    guessed, real = f"{sep.join(words)}.{ext}", f"{real_sep.join(words)}.{ext}"
    files = others(rng, real, rng.randint(1, 3))
    files[real] = "\n".join(pools.lines(rng)) + "\n"
    code = rng.choice(FILE_CODES)
    return Instance(
        broken=code.replace("FILE", guessed),
        reference=code.replace("FILE", real),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="py-file-sep",
    kind="python",
    make=make,
    description="code opens sales_report.csv, the file is sales-report.csv (ls first)",
    multi_turn=True,
    error_mentions=("FileNotFoundError",),
    source="Python: FileNotFoundError",
)

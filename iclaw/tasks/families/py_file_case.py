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
from iclaw.tasks.families.py_wrong_file import CODES
from iclaw.tasks.family import Family, Instance

EXTS = ["txt", "csv", "md", "log"]


def recase(rng: random.Random, name: str) -> str:
    """The same name with another capitalisation (never equal to `name`)."""
    stem, ext = name.rsplit(".", 1)
    for _ in range(20):
        shape = rng.randrange(5)
        if shape == 0:
            out = f"{stem.capitalize()}.{ext}"
        elif shape == 1:
            out = f"{stem.upper()}.{ext}"
        elif shape == 2:
            out = f"{stem}.{ext.upper()}"
        elif shape == 3:
            out = f"{stem.upper()}.{ext.upper()}"
        else:  # every word capitalised: Sales_Report.csv
            out = f"{stem.title()}.{ext}"
        if out != name:
            return out
    raise ValueError(f"no other capitalisation of {name!r}")


def _key(name: str) -> str:
    return "".join(ch for ch in name.rsplit(".", 1)[0].lower() if ch.isalnum())


def others(rng: random.Random, target: str, k: int) -> dict[str, str]:
    """k more files whose stems differ from `target`'s even ignoring case and separators."""
    files: dict[str, str] = {}
    while len(files) < k:
        name = pools.filename(rng, EXTS)
        if _key(name) != _key(target):
            files[name if rng.random() < 0.6 else recase(rng, name)] = pools.text_content(rng)
    return files


def make(rng: random.Random) -> Instance:
    guessed = pools.filename(rng, EXTS).lower()
    real = recase(rng, guessed)
    if rng.random() < 0.25:  # the other way round: the code capitalises, the file does not
        guessed, real = real, guessed
    files = others(rng, real, rng.randint(1, 3))
    files[real] = "\n".join(pools.lines(rng)) + "\n"
    code = rng.choice(CODES)
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
    accept=lambda error, exit_code: "FileNotFoundError" in error,
    source="Python: FileNotFoundError",
)

"""cd-typo (multi-turn): cd into a misspelled directory; `ls` shows the one it was meant to be.

    fixture: build_v2/, site-2024/, notes.txt     broken: cd biuld_v2 && ls
    error:   bash: cd: biuld_v2: No such file or directory      reference: cd build_v2 && ls

The directory names are compounds with numbers and separators (site-2024, kite_map), so the typo (which may
be in the number) cannot be undone from the request alone; one `ls` shows the real name to copy.
Source: bash "cd: NAME: No such file or directory" (thefuck: cd_correction).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import typo
from iclaw.tasks.family import Family, Instance

AFTER = [
    "ls",
    "ls -1",
    "cat FILE",
    "wc -l FILE",
    "head -n 2 FILE",
    "sort FILE",
    "tail -n 1 FILE",
    "ls && cat FILE",
]
EXTS = ["txt", "md", "csv", "log"]


def dirname(rng: random.Random) -> str:
    base = rng.choice(
        ["build", "src", "docs", "data", "backup", "site", "project", "photos", "music", "logs"]
    )
    shape = rng.randrange(3)
    if shape == 0:
        return f"{base}{rng.choice(['_', '-'])}{rng.choice(['v1', 'v2', 'old', 'new', str(rng.randint(2019, 2026))])}"
    if shape == 1:
        return f"{rng.choice(pools.WORDS)}_{base}"
    return pools.stem(rng)


def make(rng: random.Random) -> Instance:
    dirs = sorted({dirname(rng) for _ in range(rng.randint(2, 4))})
    target = rng.choice(dirs)
    files: dict[str, str] = {}
    for d in dirs:
        for _ in range(rng.randint(1, 2)):
            files[f"{d}/{pools.filename(rng, EXTS)}"] = "\n".join(pools.lines(rng)) + "\n"
    for _ in range(rng.randint(0, 2)):
        files[pools.filename(rng, EXTS)] = pools.text_content(rng)
    wrong = typo(rng, target)
    taken = {p.split("/")[0] for p in files}
    if wrong in taken or wrong.lower() in {t.lower() for t in taken}:
        raise ValueError("the typo is another name in the fixture")
    inner = rng.choice(sorted(p.split("/", 1)[1] for p in files if p.startswith(target + "/")))
    after = rng.choice(AFTER).replace("FILE", inner)
    return Instance(
        broken=f"cd {wrong} && {after}",
        reference=f"cd {target} && {after}",
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="cd-typo",
    kind="bash",
    make=make,
    description="cd into a misspelled directory (cd biuld_v2 -> cd build_v2; ls first)",
    multi_turn=True,
    accept=lambda error, exit_code: "cd:" in error and "No such file or directory" in error,
    source="thefuck: cd_correction (bash: cd: No such file or directory)",
)

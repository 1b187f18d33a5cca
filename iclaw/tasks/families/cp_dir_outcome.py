"""cp-dir-outcome (outcome-only): copy a directory without -r; a test checks the copy is there.

    fixture: photos/a.jpg.txt, photos/raw/b.txt     broken: cp photos photos_bak
    error:   cp: -r not specified; omitting directory 'photos'
    test:    test -f photos_bak/a.jpg.txt && test -f photos_bak/raw/b.txt && cmp -s photos/a.jpg.txt ...
    (intended fix: cp -r photos photos_bak)

No reference output: any command that leaves the copied files in place passes (cp -r, cp -a, rsync -a...).
When the destination is an existing directory (`cp notes archive/`), the copy lands inside it
(archive/notes/...), as cp -r does. Source: thefuck cp_omitting_directory (here checked by outcome).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, file_name
from iclaw.tasks.family import Family, Instance

BACKUP = ["{}_bak", "{}_backup", "{}.old", "{}2", "backup_{}", "old_{}", "{}-copy", "{}.orig", "{}_2026"]


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    d = dir_name(rng, taken)
    rel = [file_name(rng, taken, pools.TEXT_EXTS[:5]) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.4:  # a subdirectory: only a recursive copy brings it along
        rel.append(f"{dir_name(rng, taken)}/{file_name(rng, taken)}")
    files = {f"{d}/{r}": body(pools.lines(rng)) for r in rel}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    shape = rng.randrange(5)
    slash = "/" if rng.random() < 0.2 else ""
    if shape == 0:  # into an existing directory: the copy lands inside it
        into = dir_name(rng, taken)
        files[f"{into}/{file_name(rng, taken)}"] = pools.text_content(rng)
        dst, where = into + "/", f"{into}/{d}"
        slash = ""
    else:
        dst = where = rng.choice(BACKUP).format(d)
    opt = rng.choice(["", "", "", "-v ", "-p ", "-i "])
    test = " && ".join([f"test -f {where}/{r}" for r in rel] + [f"cmp -s {d}/{rel[0]} {where}/{rel[0]}"])
    return Instance(
        broken=f"cp {opt}{d}{slash} {dst}",
        test=test,
        solution=f"cp -r{opt[1:2]} {d}{slash} {dst}",
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="cp-dir-outcome",
    kind="bash",
    make=make,
    description="cp a directory without -r; a test checks the copy (no reference)",
    outcome_only=True,
    error_mentions=("-r not specified",),
    source="thefuck: cp_omitting_directory",
)

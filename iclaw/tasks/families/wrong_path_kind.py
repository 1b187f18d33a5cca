"""wrong-path-kind: a file command on a directory, or `cd` into a file.

    broken: cat reports              error: cat: reports: Is a directory          reference: ls reports
    broken: cd src/app.py && ls      error: bash: line 1: cd: src/app.py: Not a directory
    reference: cd src && ls          (the user pasted a file's path; cd goes to the directory holding it)

A directory is listed, not printed (thefuck cat_dir: `cat dir` -> `ls dir`); `cd` takes the file's directory,
which the request spells out (its path minus the last part). Sources: thefuck cat_dir; bash cd "Not a
directory".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, file_name
from iclaw.tasks.family import Family, Instance

EXTS = pools.TEXT_EXTS + ["py", "sh", "js", "html"]


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    path = dir_name(rng, taken)
    if rng.random() < 0.3:
        path += "/" + dir_name(rng, taken)
    inside = [file_name(rng, taken, EXTS) for _ in range(rng.randint(1, 4))]
    files = {f"{path}/{n}": body(pools.lines(rng)) for n in inside}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    shape = rng.randrange(6)
    slash = "/" if rng.random() < 0.2 else ""
    if shape <= 2:  # cat / head / tail on a directory
        cmd = ["cat", "cat", "head", "tail"][rng.randrange(4)] if shape else "cat"
        broken, ref = f"{cmd} {path}{slash}", f"ls {path}{slash}"
    elif shape == 3:  # a cat with options: the listing is still what was wanted
        broken, ref = f"cat {rng.choice(['-n', '-A', '-v'])} {path}{slash}", f"ls {path}{slash}"
    else:  # cd into a file's path
        f = rng.choice(inside)
        after = rng.choice(["ls", "ls", "pwd && ls", f"cat {f}", f"wc -l {f}", "ls -1"])
        broken, ref = f"cd {path}/{f} && {after}", f"cd {path} && {after}"
    return Instance(broken=broken, reference=ref, files=dict(sorted(files.items())))


FAMILY = Family(
    name="wrong-path-kind",
    kind="bash",
    make=make,
    description="cat a directory -> ls it; cd into a file -> cd to its directory",
    error_mentions=("Is a directory", "Not a directory"),
    source="thefuck: cat_dir; bash: cd: Not a directory",
)

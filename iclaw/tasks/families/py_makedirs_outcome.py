"""py-makedirs-outcome (outcome-only): a program creates a directory the way that fails -- os.mkdir of a
nested path, os.mkdir of one that is already there, or a copy into a directory that does not exist yet.

    os.mkdir("out/logs")              FileNotFoundError: [Errno 2] No such file or directory: 'out/logs'
                                      -> os.makedirs("out/logs")
    os.mkdir("cache")  (it exists)    FileExistsError: [Errno 17] File exists: 'cache'
                                      -> os.makedirs("cache", exist_ok=True)
    Path("a/b").mkdir()               FileNotFoundError ...           -> Path("a/b").mkdir(parents=True)
    shutil.copy("notes.txt", "backup/notes.txt")   FileNotFoundError: ... 'backup/notes.txt'
                                      -> os.makedirs("backup", exist_ok=True) first

The Python twin of mkdir-outcome: the `test` checks the directory (and the file written into it) afterwards.
Source: Python: FileNotFoundError / FileExistsError (os.mkdir, pathlib, shutil).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import tag
from iclaw.tasks.family import Family, Instance

TOPS = [
    "out",
    "build",
    "backup",
    "logs",
    "cache",
    "data",
    "site",
    "dist",
    "archive",
    "reports",
    "tmp2",
    "export",
]
SUBS = ["logs", "old", "v1", "v2", "2024", "daily", "raw", "img", "new", "csv", "june", "final"]


def make(rng: random.Random) -> Instance:
    top, sub = rng.choice(TOPS), rng.choice(SUBS)
    if rng.random() < 0.3:
        top = f"{top}_{tag(rng)}"
    fname = pools.filename(rng, ["txt", "log", "csv", "md"])
    word = rng.choice(pools.WORDS)
    write = f'open("{{d}}/{fname}", "w").write("{word}\\n")'
    shape = rng.randrange(5)
    if shape == 0:
        d = f"{top}/{sub}" if rng.random() < 0.7 else f"{top}/{sub}/{rng.choice(SUBS)}"
        tail = rng.choice(["", "\n" + write.format(d=d)])
        broken, fix, files = f'import os\nos.mkdir("{d}"){tail}', f'import os\nos.makedirs("{d}"){tail}', {}
    elif shape == 1:
        d, tail = top, "\n" + write.format(d=top)
        files = {f"{top}/{pools.filename(rng)}": "\n".join(pools.lines(rng)) + "\n"}
        broken, fix = (
            f'import os\nos.mkdir("{d}"){tail}',
            f'import os\nos.makedirs("{d}", exist_ok=True){tail}',
        )
    elif shape == 2:
        d, files = f"{top}/{sub}", {}
        tail = rng.choice(["", "\n" + write.format(d=d)])
        code = f'from pathlib import Path\nPath("{d}").mkdir(@){tail}'
        broken, fix = code.replace("@", ""), code.replace("@", "parents=True")
    elif shape == 3:
        d, tail = top, "\n" + write.format(d=top)
        files = {f"{top}/{pools.filename(rng)}": "\n".join(pools.lines(rng)) + "\n"}
        code = f'from pathlib import Path\nPath("{d}").mkdir(@){tail}'
        broken, fix = code.replace("@", ""), code.replace("@", "exist_ok=True")
    else:
        d, src = top, pools.filename(rng)
        files = {src: "\n".join(pools.lines(rng)) + "\n"}
        copy = f'shutil.copy("{src}", "{d}/{src}")'
        broken, fix = (
            f"import shutil\n{copy}",
            f'import os\nimport shutil\nos.makedirs("{d}", exist_ok=True)\n{copy}',
        )
        return Instance(broken=broken, files=files, solution=fix, test=f"cmp -s {src} {d}/{src}")
    test = f"test -d {d}" + (f' && test "$(cat {d}/{fname})" = {word}' if "open(" in fix else "")
    return Instance(broken=broken, files=files, test=test, solution=fix)


FAMILY = Family(
    name="py-makedirs-outcome",
    kind="python",
    make=make,
    description="os.mkdir / Path.mkdir of a nested or existing dir, or a copy into a missing one -> makedirs",
    outcome_only=True,
    error_mentions=("FileNotFoundError", "FileExistsError"),
    source="Python: FileNotFoundError / FileExistsError (os.mkdir, pathlib, shutil)",
)

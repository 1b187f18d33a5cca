"""cd-wrong-dir (look first): the directory exists under a variant of the name the user typed.

    fixture: docs/intro.md, src/main.py, notes.txt       broken: cd doc && ls
    error:   bash: line 1: cd: doc: No such file or directory      reference: cd docs && ls

Singular or plural, short or long, capitalised or not (doc/docs/Docs/documentation, test/tests, conf/config,
img/images, ...): the request cannot say which one this project uses, a listing does, so `ls` first and
then copy the real name. Also `ls DIR` and `cat DIR/FILE`, which fail the same way. Source: bash cd "No
such file or directory".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, extra_files, file_name
from iclaw.tasks.family import Family, Instance

# fmt: off
VARIANTS = [
    ["doc", "docs", "Docs", "documentation"], ["test", "tests", "Tests", "testing"],
    ["util", "utils", "Utils"], ["lib", "libs", "Lib", "library"], ["script", "scripts", "Scripts"],
    ["config", "configs", "conf", "cfg", "Config"], ["img", "images", "Images", "imgs", "image"],
    ["src", "source", "Source", "sources"], ["log", "logs", "Logs"], ["tmp", "temp", "Temp"],
    ["pkg", "packages", "package"], ["asset", "assets", "Assets"], ["example", "examples", "Examples"],
    ["tool", "tools", "Tools"], ["report", "reports", "Reports"], ["backup", "backups", "bak", "Backup"],
    ["photo", "photos", "Photos", "pics", "pictures"], ["download", "downloads", "Downloads"],
    ["data", "Data", "dataset", "datasets"], ["note", "notes", "Notes"], ["project", "projects", "Projects"],
    ["build", "builds", "Build"], ["testdata", "test_data", "test-data"],
    ["template", "templates", "Templates", "tpl"], ["fixture", "fixtures", "Fixtures"],
    ["bin", "Bin", "bins"], ["music", "Music", "songs"], ["video", "videos", "Videos"],
    ["draft", "drafts", "Drafts"], ["archive", "archives", "Archive"], ["static", "Static", "public"],
    ["output", "outputs", "out", "Output"],
]
# fmt: on
AFTER = ["ls", "ls", "ls", "ls -1", "cat @F", "wc -l @F", "head -n 2 @F", "ls && cat @F"]


def make(rng: random.Random) -> Instance:
    group = rng.choice(VARIANTS)
    real, guessed = rng.sample(group, 2)
    taken = set(group)
    inside = [file_name(rng, taken, pools.TEXT_EXTS + ["py", "sh"]) for _ in range(rng.randint(1, 3))]
    files = {f"{real}/{n}": body(pools.lines(rng)) for n in inside}
    for _ in range(rng.randint(1, 3)):  # other directories, from other groups
        other = rng.choice([g for g in VARIANTS if g is not group])[0]
        files[f"{other}/{file_name(rng, taken)}"] = body(pools.lines(rng))
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    f = rng.choice(inside)
    shape = rng.randrange(5)
    if shape <= 2:
        line = "cd @D && " + rng.choice(AFTER).replace("@F", f)
    elif shape == 3:
        line = rng.choice(["ls @D", "ls @D", "ls -1 @D"])
    else:
        line = rng.choice(["cat @D/@F", "wc -l @D/@F", "sort @D/@F"]).replace("@F", f)
    return Instance(
        broken=line.replace("@D", guessed),
        reference=line.replace("@D", real),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="cd-wrong-dir",
    kind="bash",
    make=make,
    description="directory name is a variant of the real one (doc vs docs); ls shows it",
    multi_turn=True,
    error_mentions=("No such file or directory", "cannot access"),
    source="bash: cd: No such file or directory",
)

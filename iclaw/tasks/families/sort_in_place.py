"""sort-in-place (outcome-only): sort a file in place; -o given no file name, or a --in-place sort does not have.

    broken: sort names.txt -o          error: sort: option requires an argument -- 'o'
    broken: sort --in-place names.txt  error: sort: unrecognized option '--in-place'
    test:   names.txt holds its lines sorted    (intended fix: sort -o names.txt names.txt)

`sort f > f` would empty the file (the shell truncates it before sort reads it); sort's own -o FILE writes
the result after reading, so `sort -o f f` is the in-place sort. The test checks the file's new content.
Source: sort "option requires an argument -- 'o'" / "unrecognized option '--in-place'" (a sed -i habit).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import content_test
from iclaw.tasks.family import Family, Instance

# option -> how sort orders the lines (C locale: byte order, what Python's sorted does for ASCII)
OPTIONS = {
    "": sorted,
    "-r": lambda ls: sorted(ls, reverse=True),
    "-u": lambda ls: sorted(set(ls)),
    "-n": lambda ls: sorted(ls, key=int),
    "-rn": lambda ls: sorted(ls, key=int, reverse=True),
    "-nu": lambda ls: sorted(set(ls), key=int),
}


def make(rng: random.Random) -> Instance:
    opt = rng.choice(sorted(OPTIONS))
    if "n" in opt:
        lines = [str(x) for x in rng.sample(range(1, 500), rng.randint(4, 8))]
        name = pools.filename(rng, ["txt", "list", "dat"])
    else:
        lines = pools.lines(rng, rng.randint(4, 8))
        name = pools.filename(rng, ["txt", "list", "md"])
    if rng.random() < 0.4:
        lines.insert(rng.randrange(len(lines)), rng.choice(lines))
    want = OPTIONS[opt](lines)
    if want == lines:
        raise ValueError("already in order: doing nothing would pass")
    pre = f"sort {opt} " if opt else "sort "
    broken = rng.choice(
        [f"{pre}{name} -o", f"{pre}{name} -o", f"{pre}{name} --output", f"{pre}--in-place {name}"]
    )
    files = {name: "\n".join(lines) + "\n"}
    if rng.random() < 0.3:
        files[pools.filename(rng)] = pools.text_content(rng)
    return Instance(
        broken=broken,
        files=dict(sorted(files.items())),
        test=content_test(name, want),
        solution=f"{pre}-o {name} {name}",
    )


FAMILY = Family(
    name="sort-in-place",
    kind="bash",
    make=make,
    description="sort a file in place: -o needs the file name (sort f -o -> sort -o f f); a test checks",
    outcome_only=True,
    error_mentions=("option",),
    source="sort: option requires an argument -- 'o'; unrecognized option '--in-place'",
)

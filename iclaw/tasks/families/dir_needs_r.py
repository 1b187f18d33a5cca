"""dir-needs-r: cp / rm / grep given a directory without -r; the fix adds -r.

    broken: cp photos photos_bak && ls photos_bak   error: cp: -r not specified; omitting directory 'photos'
    reference: cp -r photos photos_bak && ls photos_bak
    broken: rm drafts && ls          error: rm: cannot remove 'drafts': Is a directory
    reference: rm -r drafts && ls    (ls shows what is left: the check is in the reference's output)
    broken: grep -n milk notes       error: grep: notes: Is a directory      reference: grep -rn milk notes

The word occurs in one file of the directory only, so `grep -r`'s output does not depend on the order the
directory is read in. Sources: thefuck cp_omitting_directory, rm_dir, grep_recursive.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, file_name
from iclaw.tasks.family import Family, Instance

BACKUP = ["{}_bak", "{}_backup", "{}.old", "{}2", "backup_{}", "old_{}", "{}-copy", "copy_of_{}"]
GREP_OPTS = ["", "", "-n ", "-i ", "-l ", "-w ", "-h "]  # not -c: it lists every file, in readdir order


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    d = dir_name(rng, taken)
    inner = {file_name(rng, taken, pools.TEXT_EXTS[:4]): pools.lines(rng) for _ in range(rng.randint(1, 3))}
    files = {f"{d}/{n}": body(ls) for n, ls in inner.items()}
    if rng.random() < 0.3:  # a subdirectory too: -r is what copies / removes / searches it
        sub = dir_name(rng, taken)
        files[f"{d}/{sub}/{file_name(rng, taken)}"] = pools.text_content(rng)
    files.update(extra_files(rng, taken, rng.randint(1, 3)))
    shape = rng.randrange(3)
    if shape == 0:
        dst = rng.choice(BACKUP).format(d)
        after = rng.choice(
            [f"ls {dst}", f"ls {dst}", f"ls -R {dst}", f"cat {dst}/{rng.choice(sorted(inner))}"]
        )
        flag = rng.choice(["-r", "-r", "-R", "-a"])
        broken, ref = f"cp {d} {dst} && {after}", f"cp {flag} {d} {dst} && {after}"
    elif shape == 1:
        after = rng.choice(["ls", "ls", "ls -1", "ls && echo done"])
        broken, ref = f"rm {d} && {after}", f"rm {rng.choice(['-r', '-r', '-rf', '-R'])} {d} && {after}"
    else:
        first = f"{d}/{next(iter(inner))}"
        others = "".join(c for k, c in files.items() if k.startswith(d + "/") and k != first).lower()
        words = [w for w in inner[first[len(d) + 1 :]] if w.lower() not in others]
        if not words:
            raise ValueError("no word unique to one file")
        w, opt = rng.choice(words), rng.choice(GREP_OPTS)
        broken, ref = f"grep {opt}{w} {d}", f"grep -r{opt[1:2]} {w} {d}" if opt else f"grep -r {w} {d}"
    return Instance(broken=broken, reference=ref, files=dict(sorted(files.items())))


FAMILY = Family(
    name="dir-needs-r",
    kind="bash",
    make=make,
    description="cp / rm / grep on a directory without -r -> add -r",
    error_mentions=("-r not specified", "Is a directory"),
    source="thefuck: cp_omitting_directory, rm_dir, grep_recursive",
)

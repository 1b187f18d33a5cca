"""ln-exists: `ln` onto a name that already exists; the fix forces it with -f.

    fixture: current.txt, notes_v2.txt     broken: ln -s notes_v2.txt current.txt && cat current.txt
    error:   ln: failed to create symbolic link 'current.txt': File exists
    reference: ln -sf notes_v2.txt current.txt && cat current.txt

The fixture can only hold plain files, so the name in the way is a plain file (an old copy the user now
wants to be a link); the line prints through the new link (`cat`, `readlink`, or `ln -v`'s own report), so
the reference's output shows the link really points at the new target. Hard links (`ln a b`, "failed to
create hard link") are fixed the same way. Source: ln "File exists" (cf. thefuck ln_no_hard_link, ln_s_order).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shell import body, dir_name, extra_files
from iclaw.tasks.family import Family, Instance

LINK_NAMES = ["current", "latest", "active", "live", "main", "default", "today", "stable", "config", "notes"]
VERSIONS = ["_v2", "_v3", "_new", "-2", "_2025", "_2026", ".new", "_final", "_next", "-b"]


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    ext = rng.choice(pools.TEXT_EXTS)
    base = rng.choice(LINK_NAMES) if rng.random() < 0.5 else pools.stem(rng)
    link = f"{base}.{ext}"
    target = f"{base if rng.random() < 0.5 else pools.stem(rng)}{rng.choice(VERSIONS)}.{ext}"
    if rng.random() < 0.3:  # the new version lives in a directory: releases/notes_v2.txt
        target = f"{dir_name(rng, taken)}/{target}"
    if target == link:
        raise ValueError("same name")
    taken |= {link, target}
    files = {link: body(pools.lines(rng)), target: body(pools.lines(rng))}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    shape = rng.randrange(5)
    if shape == 0:
        line = f"ln -sFLAG {target} {link} && cat {link}"
    elif shape == 1:
        line = f"ln -sFLAG {target} {link} && readlink {link}"
    elif shape == 2:
        line = f"ln -svFLAG {target} {link}"
    elif shape == 3:
        line = f"ln -sFLAG {target} {link} && head -n 2 {link}"
    else:  # a hard link
        line = f"lnFLAG {target} {link} && cat {link}"
    force = " -f" if shape == 4 else "f"
    return Instance(
        broken=line.replace("FLAG", ""),
        reference=line.replace("FLAG", force),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="ln-exists",
    kind="bash",
    make=make,
    description="ln onto an existing name: File exists -> ln -sf",
    accept=lambda error, exit_code: "File exists" in error,
    source="ln: failed to create symbolic link: File exists",
)

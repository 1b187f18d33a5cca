"""Two families of `ln` onto a name that is already taken, on one fixture builder, link_and_target().

ln-exists: `ln` onto a name that already exists; the fix forces it with -f.

    fixture: current.txt, notes_v2.txt     broken: ln -s notes_v2.txt current.txt && cat current.txt
    error:   ln: failed to create symbolic link 'current.txt': File exists
    reference: ln -sf notes_v2.txt current.txt && cat current.txt

The fixture can only hold plain files, so the name in the way is a plain file (an old copy the user now
wants to be a link); the line prints through the new link (`cat`, `readlink`, or `ln -v`'s own report), so
the reference's output shows the link really points at the new target. Hard links (`ln a b`, "failed to
create hard link") are fixed the same way. Source: ln "File exists" (cf. thefuck ln_no_hard_link, ln_s_order).

ln-outcome (outcome-only): point a link name that is already taken at a new target; a test checks it.

    fixture: current.txt, notes_v2.txt      broken: ln -s notes_v2.txt current.txt
    error:   ln: failed to create symbolic link 'current.txt': File exists
    test:    test "$(readlink current.txt)" = notes_v2.txt    (intended fix: ln -sf notes_v2.txt current.txt)

No reference output: any command that leaves the link pointing at the new target passes (ln -sf, ln -sfn,
rm then ln -s). Hard links (`ln new old`) are checked with `test new -ef old` (same file). The name in the
way is a plain file: a fixture holds no links. Source: ln "File exists" (checked by outcome).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files
from iclaw.tasks.family import Family, Instance

LINK_NAMES = ["current", "latest", "active", "live", "main", "default", "today", "stable", "config", "notes"]
VERSIONS = ["_v2", "_v3", "_new", "-2", "_2025", "_2026", ".new", "_final", "_next", "-b"]


def link_and_target(rng: random.Random, taken: set[str]) -> tuple[str, str]:
    """(the link name in the way, the new target): current.txt, notes_v2.txt or releases/notes_v2.txt."""
    ext = rng.choice(pools.TEXT_EXTS)
    base = rng.choice(LINK_NAMES) if rng.random() < 0.5 else pools.stem(rng)
    link = f"{base}.{ext}"
    target = f"{base if rng.random() < 0.5 else pools.stem(rng)}{rng.choice(VERSIONS)}.{ext}"
    if rng.random() < 0.3:  # the new version lives in a directory: releases/notes_v2.txt
        target = f"{dir_name(rng, taken)}/{target}"
    return link, target


def ln_exists(rng: random.Random) -> Instance:
    taken: set[str] = set()
    link, target = link_and_target(rng, taken)
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


def ln_outcome(rng: random.Random) -> Instance:
    taken: set[str] = set()
    link, target = link_and_target(rng, taken)
    if rng.random() < 0.2:  # the link lives in a directory too: its target is relative to that directory
        where = dir_name(rng, taken)
        link, target, rel = f"{where}/{link}", target, f"../{target}"
    else:
        rel = target
    if target == link:
        raise ValueError("same name")
    taken |= {link, target}
    files = {link: body(pools.lines(rng)), target: body(pools.lines(rng))}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    if rng.random() < 0.2:  # a hard link: same file afterwards
        return Instance(
            broken=f"ln {target} {link}",
            test=f"test {target} -ef {link}",
            solution=f"ln -f {target} {link}",
            files=dict(sorted(files.items())),
        )
    v = "v" if rng.random() < 0.2 else ""
    return Instance(
        broken=f"ln -s{v} {rel} {link}",
        test=f'test "$(readlink {link})" = {rel} && test -f {link}',
        solution=f"ln -sf{v} {rel} {link}",
        files=dict(sorted(files.items())),
    )


FAMILIES = (
    Family(
        name="ln-exists",
        kind="bash",
        make=ln_exists,
        description="ln onto an existing name: File exists -> ln -sf",
        error_mentions=("File exists",),
        source="ln: failed to create symbolic link: File exists",
    ),
    Family(
        name="ln-outcome",
        kind="bash",
        make=ln_outcome,
        description="ln onto an existing name; a test checks where the link points (no reference)",
        outcome_only=True,
        error_mentions=("File exists",),
        source="ln: failed to create link: File exists",
    ),
)

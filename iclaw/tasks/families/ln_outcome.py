"""ln-outcome (outcome-only): point a link name that is already taken at a new target; a test checks it.

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
from iclaw.tasks.families._shell import body, dir_name, extra_files
from iclaw.tasks.families.ln_exists import LINK_NAMES, VERSIONS
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    ext = rng.choice(pools.TEXT_EXTS)
    base = rng.choice(LINK_NAMES) if rng.random() < 0.5 else pools.stem(rng)
    link = f"{base}.{ext}"
    target = f"{base if rng.random() < 0.5 else pools.stem(rng)}{rng.choice(VERSIONS)}.{ext}"
    if rng.random() < 0.3:
        target = f"{dir_name(rng, taken)}/{target}"
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


FAMILY = Family(
    name="ln-outcome",
    kind="bash",
    make=make,
    description="ln onto an existing name; a test checks where the link points (no reference)",
    outcome_only=True,
    accept=lambda error, exit_code: "File exists" in error,
    source="ln: failed to create link: File exists",
)

"""listed-file: the line lists the directory, then names a file that is not there; the listing shows the real one.

    fixture: notes_old.txt, todo_v2.md         broken: ls && cat notes.txt
    output:  notes_old.txt / todo_v2.md / cat: notes.txt: No such file or directory
    reference: ls && cat notes_old.txt

Single-turn: the output in the request already holds the listing, so the fix copies the real name from it.
It is wrong-file (or, half the time, wrong-ext: `ls && cat notes.txt` -> `ls && cat notes.md`) with the look
already taken by the user: a demonstration that a listing is something to copy names from, suffix or
extension. wrong-file and wrong-ext themselves stay multi-turn -- there the policy has to decide to look.
Without the extension half, no demonstration ever changed an extension, and the policy that ran `ls` in a
wrong-ext task re-typed the old name after it: not one pass in any GRPO rollout (2026-11-30, docs/LOG.md).
"""

from __future__ import annotations

import random

from iclaw.tasks.families import wrong_ext, wrong_file
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    inst = (wrong_file if rng.random() < 0.5 else wrong_ext).make(rng)
    return Instance(broken=f"ls && {inst.broken}", reference=f"ls && {inst.reference}", files=inst.files)


FAMILY = Family(
    name="listed-file",
    kind="bash",
    make=make,
    description="the listing in the output shows the real name (ls && cat notes.txt -> notes_old.txt, notes.md)",
    accept=lambda error, exit_code: "No such file or directory" in error,
    source="bash: No such file or directory after an ls (thefuck: no_such_file)",
)

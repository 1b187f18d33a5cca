"""cmd-typo: a misspelled command name. `sotr names.txt` -> `sort names.txt`.

bash says "sotr: command not found" (exit 127); the fix is the nearest common command. The broken run
prints nothing on stdout, the fix prints the (non-empty) result, so the two are always distinguishable.
"""

from __future__ import annotations

import random

from iclaw.tasks.families.mkdir_outcome import DIRS, SUBDIRS
from iclaw.tasks.family import Family, Instance, list_fixture, typo

# (command, argument template); FILE is the fixture, K a small count, W a word that occurs in the file.
COMMANDS = [
    ("sort", "FILE"),
    ("sort", "-r FILE"),
    ("cat", "FILE"),
    ("head", "-n K FILE"),
    ("tail", "-n K FILE"),
    ("wc", "-l FILE"),
    ("uniq", "FILE"),
    ("grep", "W FILE"),
    ("tac", "FILE"),
    ("echo", "W"),
    ("ls", ""),
    ("mkdir", "-pv D"),  # verbose, so the fix prints what it created and the verifier can compare it
]


def make(rng: random.Random) -> Instance:
    cmd, args = rng.choice(COMMANDS)
    fname, lines = list_fixture(rng)
    args = args.replace("FILE", fname).replace("K", str(rng.randint(1, 3))).replace("W", rng.choice(lines))
    if "D" in args:
        args = args.replace("D", f"{rng.choice(DIRS)}/{rng.choice(SUBDIRS)}")
    files = {fname: "\n".join(lines) + "\n"} if fname in args or cmd == "ls" else {}
    return Instance(broken=f"{typo(rng, cmd)} {args}".strip(), reference=f"{cmd} {args}".strip(), files=files)


FAMILY = Family(
    name="cmd-typo",
    kind="bash",
    make=make,
    description="misspelled command name (sotr -> sort)",
    accept=lambda error, exit_code: exit_code == 127 and "command not found" in error,
)

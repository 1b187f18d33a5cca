"""py-indent: an IndentationError with one obvious fix.

def f(x):\nreturn x + 1     "expected an indented block after function definition on line 1"
x = 3\n    print(x)          "unexpected indent"
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import FRUITS, NAMES
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    k, n = rng.randint(2, 9), rng.randint(2, 4)
    shape = rng.randrange(4)
    if shape == 0:  # body of a def not indented
        name = rng.choice(["add", "inc", "bump", "plus"])
        fixed = f"def {name}(x):\n    return x + {k}\nprint({name}({n}))"
        broken = fixed.replace("\n    return", "\nreturn")
    elif shape == 1:  # body of a for not indented
        fixed = f"for i in range({n}):\n    print(i + {k})"
        broken = fixed.replace("\n    print", "\nprint")
    elif shape == 2:  # body of an if not indented
        word = rng.choice(NAMES + FRUITS)
        fixed = f'x = {n + k}\nif x > {n}:\n    print("{word}")'  # always true: the print must run
        broken = fixed.replace("\n    print", "\nprint")
    else:  # a stray indent on a top-level line
        var = rng.choice(["x", "n", "total", "size"])
        fixed = f"{var} = {k}\nprint({var} * {n})"
        broken = fixed.replace("\nprint", "\n    print")
    return Instance(broken=broken, reference=fixed)


FAMILY = Family(
    name="py-indent",
    kind="python",
    make=make,
    description="IndentationError: missing or stray indent",
    error_mentions=("IndentationError",),
    source="Python: IndentationError (expected an indented block / unexpected indent)",
)

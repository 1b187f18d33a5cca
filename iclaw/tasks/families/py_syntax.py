"""py-syntax: a SyntaxError with a one-character fix. Python 3.11 names the fix in the message:

missing colon     "SyntaxError: expected ':'"
missing paren     "SyntaxError: '(' was never closed"
Python-2 print    "Missing parentheses in call to 'print'. Did you mean print(...)?"
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import FRUITS, NAMES, WORDS
from iclaw.tasks.family import Family, Instance


def missing_colon(rng: random.Random) -> tuple[str, int]:
    """Returns (fixed code, index of the line whose trailing ':' is dropped)."""
    n, k = rng.randint(2, 4), rng.randint(2, 9)
    shape = rng.randrange(4)
    if shape == 0:
        return f"for i in range({n}):\n    print(i * {k})", 0
    if shape == 1:
        m = rng.randint(1, 9)
        return f'x = {k}\nif x > {m}:\n    print("big")\nelse:\n    print("small")', 1
    if shape == 2:
        name = rng.choice(["double", "triple", "scale", "grow"])
        return f"def {name}(x):\n    return x * {k}\nprint({name}({n}))", 0
    return f"n = 0\nwhile n < {k}:\n    n += {n}\nprint(n)", 1


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(3)
    if shape == 0:
        fixed, i = missing_colon(rng)
        lines = fixed.split("\n")
        lines[i] = lines[i][:-1]
        return Instance(broken="\n".join(lines), reference=fixed)
    word = rng.choice(NAMES + FRUITS + WORDS)
    if shape == 1:
        fixed = rng.choice(
            [
                f'print(len("{word}"))',
                f'print("{word}".upper())',
                f"total = sum([{rng.randint(1, 9)}, {rng.randint(1, 9)}, {rng.randint(1, 9)}])\nprint(total)",
                f'print("{word}" * {rng.randint(2, 3)})',
            ]
        )
        lines = fixed.split("\n")
        lines[0] = lines[0][:-1]  # drop the closing paren of the first line
        return Instance(broken="\n".join(lines), reference=fixed)
    if rng.random() < 0.5:
        return Instance(broken=f'print "{word}"', reference=f'print("{word}")')
    k = rng.randint(2, 9)
    return Instance(broken=f"x = {k}\nprint x * 2", reference=f"x = {k}\nprint(x * 2)")


FAMILY = Family(
    name="py-syntax",
    kind="python",
    make=make,
    description="SyntaxError: missing ':' or ')', Python-2 print",
    error_mentions=("SyntaxError",),
    source="Python: SyntaxError (expected ':', '(' was never closed, print without parentheses)",
)

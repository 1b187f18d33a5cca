"""py-if-syntax: a condition written the way it reads in English or in another language.

    `=` for `==`     if size = 3:        SyntaxError: invalid syntax. Maybe you meant '==' or ':=' instead of '='?
                     if len(xs) = 3:     SyntaxError: cannot assign to function call here. Maybe you meant '==' ...
    `else if`        else if size > 2:   SyntaxError: expected ':'  (the caret points at `if`) -> `elif`

Fix: `==` in the condition, or `elif`. The values are drawn so that `:=` (the other suggestion) prints
something else, loops forever or is itself an error in most shapes. Source: Python SyntaxError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _words(rng: random.Random, k: int) -> list[str]:
    return [f'"{w}"' for w in rng.sample(pools.WORDS + pools.NAMES, k)]


def _eq(rng: random.Random) -> tuple[str, str]:
    """(broken, fixed) for `=` written for `==`; @ marks the comparison."""
    v = pools.identifier(rng)
    a, b = rng.sample(range(1, 30), 2)  # a != b: `:=` would take the other branch
    yes, no = _words(rng, 2)
    shape = rng.randrange(5)
    if shape == 0:
        code = f"{v} = {a}\nif {v} @ {b}:\n    print({yes})\nelse:\n    print({no})"
    elif shape == 1:
        w, x = rng.sample(pools.WORDS, 2)
        code = f'{v} = "{w}"\nif {v} @ "{x}":\n    print({yes})\nelse:\n    print({v})'
    elif shape == 2:
        code = f"{v} = {a}\nif {v} > {a + 5}:\n    print({yes})\nelif {v} @ {a}:\n    print({no})"
    elif shape == 3:
        items = [rng.randint(1, 9) for _ in range(rng.randint(2, 5))]
        lhs, rhs = rng.choice([(f"len({v})", len(items)), (f"{v}[0]", items[0]), (f"{v}[-1]", items[-1])])
        code = f"{v} = {items}\nif {lhs} @ {rhs}:\n    print({yes})"
    else:
        code = f"{v} = {a}\nwhile {v} @ {a}:\n    {v} += {b}\nprint({v})"
    return code.replace("@", "="), code.replace("@", "==")


def _elif(rng: random.Random) -> tuple[str, str]:
    v = pools.identifier(rng)
    a, b = sorted(rng.sample(range(1, 40), 2))
    x = rng.choice([rng.randint(a + 1, b), rng.randint(a + 1, b), rng.randint(b + 1, 50)])  # something prints
    first, second = _words(rng, 2)
    code = f"{v} = {x}\nif {v} > {b}:\n    print({first})\n@ {v} > {a}:\n    print({second})"
    return code.replace("@", rng.choice(["else if", "else if", "elseif", "elsif"])), code.replace("@", "elif")


def make(rng: random.Random) -> Instance:
    broken, fixed = _eq(rng) if rng.random() < 0.65 else _elif(rng)
    return Instance(broken=broken, reference=fixed)


FAMILY = Family(
    name="py-if-syntax",
    kind="python",
    make=make,
    description="`if x = 3:` -> `==`, `else if` -> `elif`",
    error_mentions=("SyntaxError",),
    source="Python: SyntaxError (Maybe you meant '==')",
)

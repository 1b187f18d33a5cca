"""py-name: a NameError from a misspelled name. Python 3.11 adds the fix to the message:

    NameError: name 'cout' is not defined. Did you mean: 'count'?

Instances where Python has no suggestion are dropped, so the error always determines the fix.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import FRUITS, NAMES, typo
from iclaw.tasks.family import Family, Instance

VARS = [
    "count",
    "total",
    "name",
    "items",
    "value",
    "result",
    "numbers",
    "words",
    "price",
    "score",
    "message",
    "letters",
    "fruit",
    "city",
    "answer",
]
FUNCS = ["greet", "double", "shout", "square", "label", "wrap"]


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(4)
    if shape == 0:
        var = rng.choice(VARS)
        value = rng.choice([str(rng.randint(2, 99)), f'"{rng.choice(NAMES + FRUITS)}"'])
        code = f"{var} = {value}\nprint(@)"
        good, bad = var, typo(rng, var)
    elif shape == 1:
        var = rng.choice(["items", "numbers", "values", "scores", "data"])
        nums = ", ".join(str(rng.randint(1, 20)) for _ in range(3))
        code = f"{var} = [{nums}]\nfor x in @:\n    print(x * 2)"
        good, bad = var, typo(rng, var)
    elif shape == 2:
        fn = rng.choice(FUNCS)
        body = {
            "greet": '"hi " + x',
            "double": "x * 2",
            "shout": "x.upper()",
            "square": "x * x",
            "label": '"<" + x + ">"',
            "wrap": '"[" + x + "]"',
        }[fn]
        arg = str(rng.randint(2, 12)) if fn in ("double", "square") else f'"{rng.choice(NAMES)}"'
        code = f"def {fn}(x):\n    return {body}\nprint(@({arg}))"
        good, bad = fn, typo(rng, fn)
    else:  # a misspelled builtin: prnt, lne, sroted ...
        fn = rng.choice(["print", "len", "sorted", "sum", "max"])
        nums = ", ".join(str(rng.randint(1, 20)) for _ in range(3))
        code = {"print": f'@("{rng.choice(NAMES)}")', "len": f'print(@("{rng.choice(FRUITS)}"))'}.get(
            fn, f"print(@([{nums}]))"
        )
        good, bad = fn, typo(rng, fn)
    return Instance(broken=code.replace("@", bad), reference=code.replace("@", good))


FAMILY = Family(
    name="py-name",
    kind="python",
    make=make,
    description="NameError from a typo (Python suggests the right name)",
    accept=lambda error, exit_code: "NameError" in error and "Did you mean" in error,
    source="Python: NameError with a 'Did you mean'",
)

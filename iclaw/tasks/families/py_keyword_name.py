"""py-keyword-name: a Python keyword used as a variable or parameter name (`class`, `from`, `pass`, `global`,
`lambda`, ...): the name is natural in the domain (a pupil's class, a message's sender) but reserved.

    for name, class in pupils:      SyntaxError: invalid syntax (the caret under the keyword)
    def move(item, from, to):       SyntaxError: invalid syntax

Fix: rename it everywhere it is used; PEP 8's convention is a trailing underscore (`class_`, `from_`),
which is what the reference does (any other free name prints the same and passes).
Source: Python: SyntaxError (keyword.kwlist); PEP 8, "Descriptive: Naming Styles".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    names = rng.sample(pools.NAMES, 3)
    shape = rng.randrange(4)
    if shape == 0:  # a loop over pairs
        kw, vals = rng.choice(
            [
                ("class", [f"{rng.randint(1, 6)}{rng.choice('ABC')}" for _ in names]),
                ("from", [rng.choice(pools.NAMES) for _ in names]),
                ("global", [str(rng.randint(1, 99)) for _ in names]),
                ("with", [rng.choice(pools.NAMES) for _ in names]),
            ]
        )
        pairs = ", ".join(f'("{a}", "{b}")' for a, b in zip(names, vals))
        label = {"class": "is in", "from": "got mail from", "global": "ranks", "with": "works with"}[kw]
        code = f'rows = [{pairs}]\nfor name, @ in rows:\n    print(name, "{label}", @)'
        if rng.random() < 0.5:
            code += '\nprint("last:", @)'
    elif shape == 1:  # a parameter
        kw = rng.choice(["from", "in", "is", "lambda", "del"])
        other = {"from": "to", "in": "out", "is": "was", "lambda": "mu", "del": "add"}[kw]
        a, b = rng.randint(1, 50), rng.randint(1, 50)
        code = (
            f'def step(@, {other}):\n    print("from", @, "to", {other})\n    return {other} - @\n\n'
            f'total = step({a}, {b}) + step({b}, {a + b})\nprint("moved", total)'
        )
    elif shape == 2:  # a plain assignment
        kw, val = rng.choice(
            [
                ("pass", f'"{rng.choice(pools.WORDS)}{rng.randint(10, 99)}"'),
                ("import", f'"{pools.filename(rng)}"'),
                ("yield", str(rng.randint(2, 40))),
                ("raise", str(rng.randint(2, 9))),
                ("class", f'"{rng.randint(1, 6)}B"'),
            ]
        )
        user = rng.choice(pools.NAMES)
        code = f'user = "{user}"\n@ = {val}\nprint(user, @)\nprint(len(str(@)))'
    else:  # a dict entry read into a variable
        kw = rng.choice(["class", "from", "global", "async"])
        rec = ", ".join(f'"{k}": "{v}"' for k, v in [("name", names[0]), (kw, rng.choice(pools.WORDS))])
        code = f'record = {{{rec}}}\n@ = record["{kw}"]\nname = record["name"]\nprint(name + ": " + @)'
    return Instance(broken=code.replace("@", kw), reference=code.replace("@", kw + "_"))


FAMILY = Family(
    name="py-keyword-name",
    kind="python",
    make=make,
    description="a keyword (class, from, pass, lambda, ...) as a variable or parameter name -> `class_`",
    error_mentions=("SyntaxError",),
    source="Python: SyntaxError (a keyword as a name); PEP 8: a trailing underscore avoids the clash",
)

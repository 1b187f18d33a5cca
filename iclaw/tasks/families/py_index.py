"""py-index: an off-by-one IndexError, or a format string with more {} than arguments.

    for i in range(len(xs) + 1): print(xs[i])         IndexError: list index out of range -> range(len(xs))
    print(xs[len(xs)])                                IndexError: list index out of range -> xs[-1]
    for i in range(1, len(xs) + 1): print(i, xs[i])   IndexError: list index out of range -> xs[i - 1]
    for i in range(len(xs)): ... xs[i + 1]            IndexError: list index out of range -> range(len(xs) - 1)
    while i <= len(xs): ...                           IndexError: list index out of range -> while i < len(xs)
    "{} is {}".format(name)                           IndexError: Replacement index 1 out of range ... -> (name, age)

The traceback's source line shows the index or bound that is one too far; the fix is the standard correction.
Source: Python: IndexError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

LISTS = ["xs", "items", "names", "scores", "words", "nums", "rows", "values", "queue", "tasks"]


def make(rng: random.Random) -> Instance:
    var = rng.choice(LISTS)
    if var in ("names", "words", "tasks", "rows"):
        vals = rng.sample(pools.NAMES if var == "names" else pools.WORDS, rng.randint(3, 5))
    else:
        vals = [rng.randint(1, 99) for _ in range(rng.randint(3, 6))]
    head = f"{var} = {vals}\n".replace("'", '"')
    shape = rng.randrange(6)
    if shape == 0:
        body = rng.choice([f"print({var}[i])", f"print(i, {var}[i])"])
        code = head + f"for i in range(len({var})@):\n    {body}"
        return Instance(broken=code.replace("@", " + 1"), reference=code.replace("@", ""))
    if shape == 1:
        use = rng.choice(
            ['print("last:", {v}[@])', "last = {v}[@]\nprint(last)", 'print("{v} ends with", {v}[@])']
        )
        code = head + use.format(v=var)
        return Instance(broken=code.replace("@", f"len({var})"), reference=code.replace("@", "-1"))
    if shape == 2:
        sep = rng.choice(['". "', '")"', '":"', '"-"'])
        code = head + f"for i in range(1, len({var}) + 1):\n    print(str(i) + {sep}, {var}[i@])"
        return Instance(broken=code.replace("@", ""), reference=code.replace("@", " - 1"))
    if shape == 3:
        op = rng.choice(["+", ""] if isinstance(vals[0], str) else ["-", "+", "*", ""])
        body = f"print({var}[i + 1] {op} {var}[i])" if op else f"print({var}[i] == {var}[i + 1])"
        code = head + f"for i in range(len({var})@):\n    {body}"
        return Instance(broken=code.replace("@", ""), reference=code.replace("@", " - 1"))
    if shape == 4:
        code = head + f"i = 0\nwhile i <@ len({var}):\n    print({var}[i])\n    i += 1"
        return Instance(broken=code.replace("@", "="), reference=code.replace("@", ""))
    a, b = rng.choice(
        [("name", "age"), ("city", "year"), ("item", "price"), ("user", "score"), ("pet", "legs")]
    )
    word = rng.choice(pools.WORDS + pools.NAMES)
    fmt = rng.choice(['"{} is {}"', '"{}: {}"', '"{} ({})"', '"{0} has {1}"', '"{} -> {}"'])
    code = f'{a} = "{word}"\n{b} = {rng.randint(1, 99)}\nprint({fmt}.format({a}@))'
    return Instance(broken=code.replace("@", ""), reference=code.replace("@", f", {b}"))


FAMILY = Family(
    name="py-index",
    kind="python",
    make=make,
    description="IndexError: one past the end (range(len+1), xs[len(xs)], 1-based, i+1, <=) or {} without an argument",
    error_mentions=("IndexError",),
    source="Python: IndexError",
)

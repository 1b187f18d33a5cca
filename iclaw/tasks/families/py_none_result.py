"""py-none-result: the result of a method that changes its object in place (and returns None) assigned back,
or a str changed in place as if it were a list.

    nums = nums.sort()         TypeError: 'NoneType' object is not subscriptable   -> nums.sort()
    names = names.append(x)    AttributeError: 'NoneType' object has no attribute 'append'  -> names.append(x)
    words = words.reverse()    TypeError: 'NoneType' object is not iterable        -> words.reverse()
    stock = stock.update(d)    TypeError: 'NoneType' object is not subscriptable   -> stock.update(d)
    name[0] = "B"              TypeError: 'str' object does not support item assignment -> name = "B" + name[1:]

The error names None (or str) and the traceback shows the line that uses the value; the assignment a few
lines above is the mistake. Fix: call the method for its effect and keep the object (or build a new str).
Source: Python: TypeError / AttributeError ("list.sort() ... returns None", the Python FAQ and tutorial).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _nums(rng: random.Random) -> str:
    return "[" + ", ".join(str(rng.randint(1, 99)) for _ in range(rng.randint(4, 6))) + "]"


def make(rng: random.Random) -> Instance:
    var = rng.choice(["nums", "scores", "prices", "values", "ages", "data", "items", "results"])
    shape = rng.randrange(5)
    if shape == 0:  # sort
        use = rng.choice(
            [
                f'print("first:", {var}[0])\nprint("last:", {var}[-1])',
                f"print({var}[:3])",
                f"print({var}[len({var}) // 2])",
            ]
        )
        rev = rng.choice(["", "reverse=True"])
        code = f"{var} = {_nums(rng)}\n@{var}.sort({rev})\n{use}"
        return Instance(broken=code.replace("@", f"{var} = "), reference=code.replace("@", ""))
    if shape == 1:  # append in a loop
        src = rng.sample(pools.WORDS, rng.randint(4, 6))
        n = sorted(map(len, src))[rng.randint(1, 2)]  # two or more words pass: the second append fails
        out = rng.choice(["short", "picked", "kept", "found", "selected"])
        code = (
            f"words = {src!r}\n{out} = []\nfor w in words:\n    if len(w) <= {n}:\n        @{out}.append(w)\n"
            f"print(len({out}), {out})"
        ).replace("'", '"')
        return Instance(broken=code.replace("@", f"{out} = "), reference=code.replace("@", ""))
    if shape == 2:  # reverse, then iterate
        src = rng.sample(pools.NAMES, rng.randint(3, 5))
        code = f"queue = {src!r}\n@queue.reverse()\nfor i, name in enumerate(queue):\n    print(i + 1, name)".replace(
            "'", '"'
        )
        return Instance(broken=code.replace("@", "queue = "), reference=code.replace("@", ""))
    if shape == 3:  # dict.update
        keys = rng.sample(pools.WORDS, 3)
        stock = "{" + ", ".join(f'"{k}": {rng.randint(1, 20)}' for k in keys[:2]) + "}"
        code = (
            f'stock = {stock}\n@stock.update({{"{keys[2]}": {rng.randint(1, 20)}}})\n'
            f"for key in sorted(stock):\n    print(key, stock[key])"
        )
        return Instance(broken=code.replace("@", "stock = "), reference=code.replace("@", ""))
    # str item assignment
    name = rng.choice(pools.NAMES + pools.WORDS)
    if rng.random() < 0.5:
        code = f'name = "{name}"\n@\nprint("Hello, " + name)'
        return Instance(
            broken=code.replace("@", "name[0] = name[0].upper()"),
            reference=code.replace("@", "name = name[0].upper() + name[1:]"),
        )
    k = rng.randrange(len(name))
    code = f'word = "{name}"\n@\nprint(word)'
    return Instance(
        broken=code.replace("@", f'word[{k}] = "*"'),
        reference=code.replace("@", f'word = word[:{k}] + "*" + word[{k + 1}:]'),
    )


FAMILY = Family(
    name="py-none-result",
    kind="python",
    make=make,
    description="`xs = xs.sort()` (an in-place method's None kept), `s[0] = c` on a str -> call it, keep xs",
    error_mentions=("TypeError", "AttributeError"),
    source="Python: TypeError / AttributeError on None (list.sort, append, reverse, dict.update return None)",
)

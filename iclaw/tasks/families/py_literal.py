"""py-literal: a list / dict / call literal with a missing comma or a missing closing bracket.

    xs = [4, 7 9]              SyntaxError: invalid syntax. Perhaps you forgot a comma?
    d = {"a": 1 "b": 2}        SyntaxError: invalid syntax. Perhaps you forgot a comma?
    xs = [4, 7, 9  (no `]`)    SyntaxError: '[' was never closed

Fix: put the comma back (the caret spans the two items), or close the bracket at the end of its line.
Only items where a missing comma is an error (numbers; a dict's value before the next key): two adjacent
string literals concatenate silently. py-syntax covers a missing `)`. Source: Python SyntaxError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

# What to print about a list `v` of numbers / a dict `v` of str -> int
LIST_USES = [
    *("print(sum(V))", "print(max(V))", "print(sorted(V))", "print(len(V))", "print(V[-1])", "print(V)"),
]
DICT_USES = ["print(V)", 'print(V["K"])', "print(sorted(V))", "print(sum(V.values()))", "print(len(V))"]


def _numbers(rng: random.Random) -> list[str]:
    k = rng.randint(3, 6)
    if rng.random() < 0.2:
        return [f"{rng.randint(0, 9)}.{rng.randint(1, 9)}" for _ in range(k)]
    return [str(rng.randint(0, 120)) for _ in range(k)]


def make(rng: random.Random) -> Instance:
    v = pools.identifier(rng)
    missing = rng.choice(["comma", "comma", "bracket"])
    if rng.random() < 0.55:  # a list of numbers
        items = _numbers(rng)
        opener, closer = "[", "]"
        use = rng.choice(LIST_USES)
        if rng.random() < 0.2:  # a call instead: print(max(3, 7 9))
            items, opener, closer = items[:4], f"print({rng.choice(['max', 'min', 'sorted', 'len'])}([", "]))"
            use = ""
    else:  # a dict of word -> number
        keys = rng.sample(pools.WORDS + pools.NAMES, rng.randint(2, 4))
        items = [f'"{k}": {rng.randint(0, 99)}' for k in keys]
        opener, closer = "{", "}"
        use = rng.choice(DICT_USES).replace("K", rng.choice(keys))
    i = rng.randrange(1, len(items))
    fixed_line = opener + ", ".join(items) + closer
    if missing == "comma":
        broken_line = opener + ", ".join(items[:i]) + " " + ", ".join(items[i:]) + closer
    else:
        if not use:
            raise ValueError("a call's closers are several brackets")
        broken_line = fixed_line[: -len(closer)]
    if use:
        fixed_line, broken_line = f"{v} = {fixed_line}", f"{v} = {broken_line}"
        use = "\n" + use.replace("V", v)
    return Instance(broken=broken_line + use, reference=fixed_line + use)


FAMILY = Family(
    name="py-literal",
    kind="python",
    make=make,
    description="missing comma or missing ] / } in a list / dict literal -> add it",
    error_mentions=("forgot a comma", "was never closed"),
    source="Python: SyntaxError (Perhaps you forgot a comma?)",
)

"""py-dedent: a line indented to a level no block opened, or with a tab among spaces.

    if x > 3:\n    print(1)\n  else:      IndentationError: unindent does not match any outer indentation level
    def f(x):\n    y = x\n  return y     (the same error: the return belongs to the body)
    for i in ..:\n    a\n\tb             TabError: inconsistent use of tabs and spaces in indentation

Fix: indent the line like the lines it belongs with (`else`/`elif` under their `if`, a body line like the
body, a tab as four spaces). Only shapes where one level makes sense (`else` at the `if`'s column, `return`
inside its function), so the error determines the fix. py-indent covers missing and stray indents.
Source: Python IndentationError / TabError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _program(rng: random.Random, shape: int) -> tuple[list[str], list[int]]:
    """(fixed lines, indices of the lines that may be dedented too little: only one level fits them)."""
    v, w = pools.identifier(rng), rng.sample(pools.WORDS + pools.NAMES, 3)
    a, k = rng.randint(1, 30), rng.randint(2, 9)
    if shape == 0:
        x = rng.randint(0, 40)
        lines = [f"{v} = {x}", f"if {v} > {a}:", f'    print("{w[0]}")', "else:", f'    print("{w[1]}")']
        return lines, [3]
    if shape == 1:
        x = rng.randint(a + 1, 60)  # one of the two branches prints
        lines = [
            f"{v} = {x}",
            f"if {v} > {a + 10}:",
            f'    print("{w[0]}")',
            f"elif {v} > {a}:",
            f'    print("{w[1]}")',
        ]
        return lines, [3]
    if shape == 2:
        name = rng.choice(["scale", "grow", "shift", "bump", "calc", "step", "twice", "add_some"])
        lines = [
            f"def {name}({v}):",
            f"    {v} = {v} * {k}",
            f"    {v} = {v} + {a}",
            f"    return {v}",
            f"print({name}({rng.randint(1, 20)}))",
        ]
        return lines, [2, 3]
    acc = rng.choice(["total", "acc", "result", "count_all", "summed"])
    lines = [f"{acc} = 0", f"for {v} in range({k}):", f"    {acc} += {v} * {a}", f"    print({v}, {acc})"]
    return lines, []  # the print may belong in the loop or after it: only a tab is unambiguous


def make(rng: random.Random) -> Instance:
    tab = rng.random() < 0.35
    lines, spots = _program(rng, rng.choice([2, 3] if tab else [0, 1, 2]))
    broken = list(lines)
    if tab:  # a tab on a body line after one with four spaces (a tab first gives the 'unindent' error)
        j = rng.choice([j for j in range(1, len(lines)) if lines[j - 1][:4] == lines[j][:4] == "    "])
        broken[j] = "\t" + lines[j][4:]
    else:
        i = rng.choice(spots)
        broken[i] = " " * rng.randint(1, 3) + lines[i].lstrip()  # between the block's level and the outer one
    return Instance(broken="\n".join(broken), reference="\n".join(lines))


FAMILY = Family(
    name="py-dedent",
    kind="python",
    make=make,
    description="unindent does not match / tab among spaces -> align the line with its block",
    error_mentions=("unindent does not match", "TabError"),
    source="Python: IndentationError / TabError",
)

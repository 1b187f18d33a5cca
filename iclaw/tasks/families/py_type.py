"""py-type: str + int. `print("total: " + n)` -> `print("total: " + str(n))`.

    TypeError: can only concatenate str (not "int") to str

Only shapes where string concatenation is clearly what was meant (a label plus a number), so the fix is
determined: wrap the number in str(...). An f-string gives the same output and passes too.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import FRUITS
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    k = rng.randint(2, 99)
    label = rng.choice(["total", "count", "age", "score", "size", "items", "level", "year"])
    shape = rng.randrange(4)
    if shape == 0:
        code = f'n = {k}\nprint("{label}: " + @n@)'
    elif shape == 1:
        code = f'{label} = {k}\nmsg = "{label} is " + @{label}@\nprint(msg)'
    elif shape == 2:
        fruits = ", ".join(f'"{f}"' for f in rng.sample(FRUITS, rng.randint(2, 4)))
        code = f'fruits = [{fruits}]\nprint("{label}: " + @len(fruits)@)'
    else:
        code = f'a = {k}\nb = {rng.randint(2, 9)}\nprint("sum " + @a + b@)'
        return Instance(broken=code.replace("@", ""), reference=code.replace("@a + b@", "str(a + b)"))
    broken = code.replace("@", "")
    fixed = code.replace("@", "str(", 1).replace("@", ")", 1)
    return Instance(broken=broken, reference=fixed)


FAMILY = Family(
    name="py-type",
    kind="python",
    make=make,
    description="TypeError str + int -> str(...)",
    error_mentions=("TypeError",),
    source='Python: TypeError: can only concatenate str (not "int") to str',
)

"""py-value: a ValueError from parsing a string whose format the program did not expect. The error quotes
the string, which shows what to do with it.

    int("3.5")                        ValueError: invalid literal for int() with base 10: '3.5'   -> int(float(s))
    int("1,250")                      ValueError: invalid literal for int() with base 10: '1,250' -> s.replace(",", "")
    float("3,75")                     ValueError: could not convert string to float: '3,75'      -> s.replace(",", ".")
    int("0x1f")                       ValueError: invalid literal for int() with base 10: '0x1f'  -> int(s, 16)
    int("40%")                        ValueError: invalid literal for int() with base 10: '40%'   -> s.rstrip("%")
    strptime("25/01/2024", "%Y-%m-%d")   ValueError: time data '25/01/2024' does not match format -> "%d/%m/%Y"
    name, age = "bob;42".split(",")   ValueError: not enough values to unpack (expected 2, got 1) -> split(";")

The int() call stays (the program wants an int); dates use a day above 12, so day-first and month-first
cannot both fit.
Source: Python: ValueError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

VARS = ["s", "raw", "text", "price", "amount", "value", "field", "cell", "reading", "qty"]
DATES = {
    "%Y-%m-%d": "{y}-{m:02d}-{d:02d}",
    "%d/%m/%Y": "{d:02d}/{m:02d}/{y}",
    "%m/%d/%Y": "{m:02d}/{d:02d}/{y}",
    "%d.%m.%Y": "{d:02d}.{m:02d}.{y}",
    "%Y/%m/%d": "{y}/{m:02d}/{d:02d}",
}


def make(rng: random.Random) -> Instance:
    var, k = rng.choice(VARS), rng.randint(2, 9)
    a, b = rng.randint(1, 99), rng.randint(1, 9)
    use = rng.choice(["print(@ * K)", "print(@ + K)", "n = @\nprint(n * K)", 'print("got", @)'])
    use = use.replace("K", str(k))
    shape = rng.randrange(7)
    if shape == 0:
        text, fix = rng.choice([f"{a}.{b}", f"{a}.0", f"{a}.{b}5"]), f"int(float({var}))"
        broken = f"int({var})"
    elif shape == 1:
        text, broken, fix = f"{a},{rng.randint(100, 999)}", f"int({var})", f'int({var}.replace(",", ""))'
    elif shape == 2:
        text, broken, fix = f"{a},{b}{rng.randint(0, 9)}", f"float({var})", f'float({var}.replace(",", "."))'
    elif shape == 3:
        prefix, base, fmt = rng.choice([("0x", 16, "x"), ("0X", 16, "X"), ("0b", 2, "b"), ("0o", 8, "o")])
        text, broken, fix = prefix + format(rng.randint(5, 255), fmt), f"int({var})", f"int({var}, {base})"
    elif shape == 4:
        unit, how = rng.choice(
            [
                ("%", 'rstrip("%")'),
                ("$", 'lstrip("$")'),
                ("px", 'removesuffix("px")'),
                ("kg", 'removesuffix("kg")'),
                ("#", 'lstrip("#")'),
            ]
        )
        text = f"{unit}{a}" if unit in "$#" else f"{a}{unit}"
        broken, fix = f"int({var})", f"int({var}.{how})"
    elif shape == 5:
        fmts = rng.sample(sorted(DATES), 2)
        y, m, d = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(13, 28)
        date = DATES[fmts[0]].format(y=y, m=m, d=d)
        code = f'from datetime import datetime\nday = datetime.strptime("{date}", "@")\nprint(day.date())'
        return Instance(broken=code.replace("@", fmts[1]), reference=code.replace("@", fmts[0]))
    else:
        sep, wrong = rng.sample([",", ";", " ", "|", ":", "\\t"], 2)
        x, y = rng.choice([("name", "age"), ("city", "pop"), ("item", "qty"), ("user", "score")])
        line = f"{rng.choice(pools.NAMES + pools.WORDS)}{sep}{a}"
        code = f'line = "{line}"\n{x}, {y} = line.split("@")\nprint({x}, int({y}) * {k})'
        return Instance(broken=code.replace("@", wrong), reference=code.replace("@", sep))
    head = f'{var} = "{text}"\n'
    return Instance(broken=head + use.replace("@", broken), reference=head + use.replace("@", fix))


FAMILY = Family(
    name="py-value",
    kind="python",
    make=make,
    description="ValueError parsing a string (3.5, 1,250, 0x1f, 40%, a date, a delimiter) -> convert it so",
    error_mentions=("ValueError",),
    source="Python: ValueError",
)

"""py-undefined: a name used before it exists -- not a typo (py-name has those): the order, or a missing line.

    print(double(4))            NameError: name 'double' is not defined     -> move the call below the def
    def double(x): ...
    for x in nums:              NameError: name 'total' is not defined      -> `total = 0` before the loop
        total += x
    print(math.sqrt(16))        NameError: name 'math' is not defined       -> `import math` first
    city = oslo                 NameError: name 'oslo' is not defined       -> city = "oslo"
    getTotal(3) / get_total     NameError: ... Did you mean: 'get_total'?   -> the snake_case name

Each error names the missing name, and the program shows what it should be (the def below, the module, the
word to quote); the accumulator's start value follows from its use (+= number: 0, *=: 1, .append: []).
(UnboundLocalError -> `global x` is left out.)
Source: Python: NameError.
"""

from __future__ import annotations

import builtins
import keyword
import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

FUNCS = {  # name -> (body using x, an argument)
    "double": ("x * 2", "N"),
    "square": ("x * x", "N"),
    "add_tax": ("x + x // 10", "N0"),
    "shout": ('x.upper() + "!"', '"W"'),
    "greet": ('"hello " + x', '"W"'),
    "initial": ("x[0]", '"W"'),
    "half": ("x / 2", "N"),
    "wrap": ('"[" + x + "]"', '"W"'),
    "cube": ("x ** 3", "N"),
}
MODULES = [  # (import line, expression using it)
    ("math", "math.sqrt(N * N)"),
    ("math", "math.factorial(N)"),
    ("math", "math.gcd(N * 4, N * 6)"),
    ("json", 'json.dumps({"W": N})'),
    ("string", "string.ascii_lowercase[:N]"),
    ("statistics", "statistics.median([N, 1, N + 5])"),
    ("textwrap", 'textwrap.shorten("W W W", width=N + 4)'),
    ("collections", 'collections.Counter("W").most_common(1)'),
    ("calendar", "calendar.isleap(20N0)"),
    ("itertools", "list(itertools.permutations([1, N]))"),
    ("keyword", 'keyword.iskeyword("W")'),
    ("os", 'os.path.basename("/tmp/W.txt")'),
    ("re", 're.sub("[aeiou]", "_", "W")'),
]
CAMEL = "get_total count_words make_label find_max to_upper add_item print_row read_name".split()


def _camel(s: str) -> str:
    a, *rest = s.split("_")
    return a + "".join(w.capitalize() for w in rest)


def make(rng: random.Random) -> Instance:
    n, word = rng.randint(2, 9), rng.choice(pools.WORDS)
    nums = ", ".join(str(rng.randint(1, 20)) for _ in range(rng.randint(3, 5)))
    shape = rng.randrange(5)
    if shape == 0:
        fn = rng.choice(sorted(FUNCS))
        body, arg = FUNCS[fn]
        call = f"print({fn}({arg.replace('N', str(n)).replace('W', word)}))"
        defn = f"def {fn}(x):\n    return {body}"
        return Instance(broken=f"{call}\n\n{defn}", reference=f"{defn}\n\n{call}")
    if shape == 1:
        var = rng.choice(
            ["total", "result", "acc", "answer", "tally", "joined", "buf", "collected", "running", "memo"]
        )
        init, line, items = rng.choice(
            [
                ("0", f"{var} += x", f"[{nums}]"),
                ("0", f"{var} = {var} + x * 2", f"[{nums}]"),
                ("1", f"{var} *= x", f"[{nums}]"),
                ("[]", f"{var}.append(x * {n})", f"[{nums}]"),
                ('""', f"{var} += x[0]", repr(rng.sample(pools.WORDS, 3)).replace("'", '"')),
                ("{}", f"{var}[x] = len(x)", repr(rng.sample(pools.WORDS, 3)).replace("'", '"')),
            ]
        )
        loop = f"for x in {items}:\n    {line}\nprint({var})"
        return Instance(broken=loop, reference=f"{var} = {init}\n{loop}")
    if shape == 2:
        mod, expr = rng.choice(MODULES)
        code = f"print({expr.replace('N', str(n)).replace('W', word)})"
        return Instance(broken=code, reference=f"import {mod}\n{code}")
    if shape == 3:
        var = rng.choice(["city", "name", "fruit", "color", "user", "word", "label", "pet"])
        val = rng.choice(pools.NAMES + pools.WORDS)
        if keyword.iskeyword(val) or hasattr(builtins, val):
            raise ValueError("a keyword or builtin is not an undefined name")
        use = rng.choice([f'print("hello " + {var})', f"print({var}.upper())", f"print(len({var}))"])
        return Instance(broken=f"{var} = {val}\n{use}", reference=f'{var} = "{val}"\n{use}')
    snake = rng.choice(CAMEL)
    defined, called = (snake, _camel(snake)) if rng.random() < 0.7 else (_camel(snake), snake)
    code = f"def {defined}(x):\n    return x * {n}\n\nprint(@({rng.randint(2, 30)}))"
    return Instance(broken=code.replace("@", called), reference=code.replace("@", defined))


FAMILY = Family(
    name="py-undefined",
    kind="python",
    make=make,
    description="a name used before it exists (def below, no start value, no import, no quotes, camelCase)",
    error_mentions=("NameError",),
    source="Python: NameError",
)

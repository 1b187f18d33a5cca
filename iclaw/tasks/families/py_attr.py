"""py-attr: a misspelled module, method or module attribute.

    from colections import Counter   ModuleNotFoundError: No module named 'colections'
    "abc".startwith("a")             AttributeError: 'str' object has no attribute 'startwith'. Did you mean: 'startswith'?
    math.sqroot(16)                  AttributeError: module 'math' has no attribute 'sqroot'. Did you mean: 'sqrt'?

Attribute typos are kept only when Python suggests the right name.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import FRUITS, NAMES, typo
from iclaw.tasks.family import Family, Instance

# Module imports: (module, code using it with @ where the module name goes)
IMPORTS = [
    ("collections", 'from @ import Counter\nprint(Counter("W").most_common(1))'),
    ("itertools", "from @ import permutations\nprint(len(list(permutations(range(N)))))"),
    ("string", "from @ import ascii_lowercase\nprint(ascii_lowercase[:N])"),
    ("textwrap", 'from @ import shorten\nprint(shorten("W W W W", width=N + 8))'),
    ("json", "import @ as j\nprint(j.dumps([N, N]))"),
    ("math", "from @ import factorial\nprint(factorial(N))"),
]
# Methods on a str / list: (method, code with @ for the method name)
METHODS = [
    ("upper", 'print("W".@())'),
    ("lower", 'print("W".upper().@())'),
    ("startswith", 'print("W".@("W"[0]))'),
    ("endswith", 'print("W".@("x"))'),
    ("replace", 'print("W".@("a", "o"))'),
    ("split", 'print("W,W".@(","))'),
    ("strip", 'print("  W  ".@())'),
    ("count", 'print("W".@("a"))'),
    ("append", "xs = [N]\nxs.@(N + 1)\nprint(xs)"),
    ("reverse", "xs = [1, 2, N]\nxs.@()\nprint(xs)"),
]
# Module attributes: (module, attr, code)
ATTRS = [
    ("math", "sqrt", "import math\nprint(math.@(N * N))"),
    ("math", "floor", "import math\nprint(math.@(N + 0.5))"),
    ("math", "factorial", "import math\nprint(math.@(N))"),
    ("math", "gcd", "import math\nprint(math.@(N * 2, N * 3))"),
    ("string", "digits", "import string\nprint(string.@[:N])"),
    ("os.path", "basename", 'import os\nprint(os.path.@("/tmp/W.txt"))'),
]


def make(rng: random.Random) -> Instance:
    word = rng.choice(NAMES + FRUITS)
    n = str(rng.randint(2, 6))
    shape = rng.randrange(3)
    if shape == 0:
        name, code = rng.choice(IMPORTS)
    elif shape == 1:
        name, code = rng.choice(METHODS)
    else:
        _, name, code = rng.choice(ATTRS)
    code = code.replace("W", word).replace("N", n)
    return Instance(broken=code.replace("@", typo(rng, name)), reference=code.replace("@", name))


def _accept(error: str, exit_code: int) -> bool:
    return "No module named" in error or ("AttributeError" in error and "Did you mean" in error)


FAMILY = Family(
    name="py-attr",
    kind="python",
    make=make,
    description="misspelled module / method / attribute name",
    accept=_accept,
    source="Python: ModuleNotFoundError / AttributeError with a 'Did you mean'",
)

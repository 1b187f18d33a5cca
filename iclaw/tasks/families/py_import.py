"""py-import: an import of a stdlib name with the wrong case or number, or under its Python 2 name.

    import Json                          ModuleNotFoundError: No module named 'Json'      -> import json
    import maths                         ModuleNotFoundError: No module named 'maths'     -> import math
    from collections import counter      ImportError: cannot import name 'counter' from 'collections' -> Counter
    from urllib2 import Request          ModuleNotFoundError: No module named 'urllib2'   -> from urllib.request ...
    import ConfigParser                  ModuleNotFoundError: No module named 'ConfigParser' -> configparser

The rest of the program already uses the right name (json.dumps, Counter(...)), or for a Python 2 module the
name is the standard Python 3 rename (ConfigParser -> configparser, Queue -> queue, urllib2 -> urllib.request).
Source: Python: ModuleNotFoundError / ImportError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

MODULES = [  # (module, wrong spellings, a line using it)
    ("json", ["Json", "JSON"], 'print(json.dumps({"W": N}))'),
    ("math", ["Math", "maths", "MATH"], "print(math.sqrt(N * N))"),
    ("collections", ["Collections", "collection"], 'print(collections.Counter("W").most_common(1))'),
    (
        "itertools",
        ["Itertools", "itertool", "IterTools"],
        "print(list(itertools.combinations(range(N), 2))[:3])",
    ),
    ("string", ["String", "strings"], "print(string.ascii_uppercase[:N])"),
    ("statistics", ["Statistics", "statistic"], "print(statistics.mean([N, N + 2, N + 4]))"),
    ("textwrap", ["Textwrap", "textwraps", "TextWrap"], 'print(textwrap.fill("W W W W", width=N + 4))'),
    ("datetime", ["Datetime", "DateTime"], "print(datetime.date(2024, N, 1).isoformat())"),
    ("os", ["OS", "Os"], 'print(os.path.splitext("W.txt")[0])'),
    ("re", ["Re", "RE"], 'print(re.findall("[aeiou]", "W"))'),
    ("calendar", ["Calendar", "calender"], "print(calendar.isleap(20N0))"),
    ("random", ["Random"], "print(random.Random(N).randint(1, 6))"),
]
NAMES = [  # (module, right name, wrong name, a line using it)
    ("collections", "Counter", "counter", 'print(Counter("W").most_common(2))'),
    ("collections", "defaultdict", "defaultDict", 'd = defaultdict(int)\nd["W"] += N\nprint(dict(d))'),
    ("collections", "OrderedDict", "OrderDict", "print(list(OrderedDict(W=N)))"),
    ("datetime", "date", "Date", "print(date(2024, N, 2).isoformat())"),
    ("math", "pi", "PI", "print(round(pi * N, 2))"),
    ("fractions", "Fraction", "fraction", "print(Fraction(N, N * 2))"),
    ("decimal", "Decimal", "decimal", 'print(Decimal("N.5") * 2)'),
    ("pathlib", "Path", "path", 'print(Path("W/notes.txt").name)'),
    ("string", "Template", "template", 'print(Template("hi $who").substitute(who="W"))'),
    ("functools", "reduce", "Reduce", "print(reduce(lambda a, b: a * b, [N, 2, 3]))"),
    ("os.path", "join", "Join", 'print(join("W", "N.txt"))'),
]
PY2 = [  # (Python 2 import, Python 3 import, a line using it)
    (
        "import ConfigParser as cp",
        "import configparser as cp",
        'c = cp.ConfigParser()\nc.read_string("[main]\\nW = N\\n")\nprint(c["main"]["W"])',
    ),
    ("from Queue import Queue", "from queue import Queue", 'q = Queue()\nq.put("W")\nprint(q.get())'),
    ("from StringIO import StringIO", "from io import StringIO", 'print(StringIO("W\\nN").readlines())'),
    ("import cPickle as pickle", "import pickle", 'print(pickle.loads(pickle.dumps(["W", N])))'),
    (
        "from urlparse import urlparse",
        "from urllib.parse import urlparse",
        'print(urlparse("http://W.org/N").netloc)',
    ),
    (
        "from urllib2 import Request",
        "from urllib.request import Request",
        'print(Request("http://W.org/N").get_full_url())',
    ),
    ("from urllib import urlencode", "from urllib.parse import urlencode", 'print(urlencode({"W": N}))'),
    ("from urllib import quote", "from urllib.parse import quote", 'print(quote("W N"))'),
    ("import __builtin__", "import builtins", 'print(builtins.len("W") * N)'),
    ("from UserDict import UserDict", "from collections import UserDict", "print(UserDict(W=N))"),
    (
        "from itertools import izip_longest",
        "from itertools import zip_longest",
        'print(list(zip_longest("W", range(N))))',
    ),
    (
        "from htmlentitydefs import name2codepoint",
        "from html.entities import name2codepoint",
        'print(name2codepoint["amp"] + N)',
    ),
]


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(3)
    if shape == 0:
        mod, wrongs, use = rng.choice(MODULES)
        broken, fixed = f"import {rng.choice(wrongs)}", f"import {mod}"
    elif shape == 1:
        mod, right, wrong, use = rng.choice(NAMES)
        broken, fixed = f"from {mod} import {wrong}", f"from {mod} import {right}"
    else:
        broken, fixed, use = rng.choice(PY2)
    use = use.replace("W", rng.choice(pools.WORDS)).replace("N", str(rng.randint(2, 9)))
    return Instance(broken=f"{broken}\n{use}", reference=f"{fixed}\n{use}")


FAMILY = Family(
    name="py-import",
    kind="python",
    make=make,
    description="import of a stdlib name in the wrong case / number or under its Python 2 name -> the right one",
    error_mentions=("ModuleNotFoundError", "ImportError"),
    source="Python: ModuleNotFoundError / ImportError",
)

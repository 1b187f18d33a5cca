"""py-py2: a Python 2 habit (beyond print) that Python 3.11 rejects with an error naming what is gone.

    for i in xrange(3): ...           NameError: name 'xrange' is not defined. Did you mean: 'range'?
    if d.has_key("oslo"): ...         AttributeError: 'dict' object has no attribute 'has_key'  -> "oslo" in d
    for k, v in d.iteritems(): ...    AttributeError: 'dict' object has no attribute 'iteritems' -> d.items()
    print >>f, "hi"                   TypeError: ... Did you mean "print(<message>, file=<output_stream>)"?
    d.keys()[0]                       TypeError: 'dict_keys' object is not subscriptable -> list(d.keys())[0]

Also unicode() -> str(), string.letters -> string.ascii_letters, sys.maxint -> sys.maxsize, reduce without
import, map(...)[0], string.join, range(n) + [x]. Every fix is the standard 2-to-3 rewrite (what `2to3`
does). `except E, e:` and backticks are left out: their SyntaxError does not point at `as` / repr().
Source: Python 2 -> 3 porting (2to3 fixers); Python: NameError / AttributeError / TypeError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _dict(rng: random.Random, k: int = 3) -> tuple[str, list[str]]:
    keys = rng.sample(pools.WORDS, k)
    return "{" + ", ".join(f'"{w}": {rng.randint(1, 99)}' for w in keys) + "}", keys


def make(rng: random.Random) -> Instance:
    var = rng.choice(["d", "data", "stock", "prices", "ages", "counts", "scores", "table", "sizes"])
    lit, keys = _dict(rng, rng.randint(2, 4))
    key, n, k = rng.choice(keys), rng.randint(2, 9), rng.randint(2, 9)
    word = rng.choice(pools.WORDS + pools.NAMES)
    head = f"{var} = {lit}\n"
    shape = rng.randrange(13)
    if shape == 0:
        code = f"for i in @x@range({n}):\n    print(i * {k})"
        return Instance(broken=code.replace("@x@", "x"), reference=code.replace("@x@", ""))
    if shape == 1:
        return Instance(
            broken=f"print(list(xrange({n}, {n + k})))", reference=f"print(list(range({n}, {n + k})))"
        )
    if shape == 2:
        body = f'    print({var}["{key}"])\nelse:\n    print("missing")'
        return Instance(
            broken=f'{head}if {var}.has_key("{key}"):\n{body}',
            reference=f'{head}if "{key}" in {var}:\n{body}',
        )
    if shape == 3:
        probe = rng.choice([key, rng.choice(pools.WORDS)])
        return Instance(
            broken=f'{head}print({var}.has_key("{probe}"))', reference=f'{head}print("{probe}" in {var})'
        )
    if shape == 4:
        old, new = rng.choice([("iteritems", "items"), ("viewitems", "items")])
        code = f"{head}for k, v in {var}.@():\n    print(k, v)"
        return Instance(broken=code.replace("@", old), reference=code.replace("@", new))
    if shape == 5:
        old, new, fn = rng.choice(
            [("itervalues", "values", "sum"), ("iterkeys", "keys", "sorted"), ("itervalues", "values", "max")]
        )
        code = f"{head}print({fn}({var}.@()))"
        return Instance(broken=code.replace("@", old), reference=code.replace("@", new))
    if shape == 6:
        code = rng.choice(
            [f'n = {n}{k}\nprint(@(n) + "!")', f"print(@({n}) * {k})", f"x = @({n}.5)\nprint(x)"]
        )
        return Instance(broken=code.replace("@", "unicode"), reference=code.replace("@", "str"))
    if shape == 7:
        old = rng.choice(["letters", "lowercase", "uppercase"])
        code = f"import string\nprint(string.@[:{n + k}])"
        return Instance(broken=code.replace("@", old), reference=code.replace("@", "ascii_" + old))
    if shape == 8:
        fname = pools.filename(rng, ["txt", "log"])
        tail = f'f.close()\nprint(open("{fname}").read().strip())'
        return Instance(
            broken=f'f = open("{fname}", "w")\nprint >>f, "{word}"\n{tail}',
            reference=f'f = open("{fname}", "w")\nprint("{word}", file=f)\n{tail}',
        )
    if shape == 9:
        view = rng.choice(["keys", "values", "items"])
        i = rng.randrange(len(keys))
        return Instance(
            broken=f"{head}print({var}.{view}()[{i}])", reference=f"{head}print(list({var}.{view}())[{i}])"
        )
    if shape == 10:
        nums = " ".join(str(rng.randint(1, 99)) for _ in range(rng.randint(3, 5)))
        code = f'xs = @map(int, "{nums}".split())@\nprint(xs[{rng.randrange(3)}] * {k})'
        return Instance(
            broken=code.replace("@", ""), reference=code.replace("@", "list(", 1).replace("@", ")")
        )
    if shape == 11:
        words = ", ".join(f'"{w}"' for w in rng.sample(pools.WORDS, 3))
        sep = rng.choice([",", "-", " ", ":", "/"])
        return Instance(
            broken=f'import string\nprint(string.join([{words}], "{sep}"))',
            reference=f'import string\nprint("{sep}".join([{words}]))',
        )
    r = rng.randrange(3)
    if r == 0:
        return Instance(
            broken=f"print(range({n}) + [{k * 10}])", reference=f"print(list(range({n})) + [{k * 10}])"
        )
    if r == 1:
        code = f"import sys\nprint(sys.@ > {n}{k})"
        return Instance(broken=code.replace("@", "maxint"), reference=code.replace("@", "maxsize"))
    op = rng.choice(["a + b", "a * b", "max(a, b)"])
    code = f"print(reduce(lambda a, b: {op}, [{n}, {k}, {n + k}]))"
    return Instance(broken=code, reference="from functools import reduce\n" + code)


FAMILY = Family(
    name="py-py2",
    kind="python",
    make=make,
    description="a Python 2 habit (xrange, has_key, iteritems, unicode, print >>f, ...) -> its Python 3 form",
    error_mentions=("NameError", "AttributeError", "TypeError"),
    source="Python: 2to3 (NameError / AttributeError / TypeError on Python 3)",
)

"""py-except: Python 2's `except E, e:` and `raise E, "msg"`, or two exception types without parentheses,
in a script of a function, a try block and a loop that calls it.

    except ValueError, e:          SyntaxError: multiple exception types must be parenthesized  -> except ValueError as e:
    except KeyError, IndexError:   (the same error)                                             -> except (KeyError, IndexError):
    raise ValueError, "too big"    SyntaxError: invalid syntax                                  -> raise ValueError("too big")

The handler's body shows which was meant: it uses `e` (a name bound by `as`) or it does not (a second type).
Every fix is the standard 2-to-3 rewrite. Source: Python 2 -> 3 porting (2to3's except and raise fixers);
Python: SyntaxError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

# (exception, a function body that raises it on some inputs, the inputs, a second type the body can raise)
GUARDS = [
    (
        "ValueError",
        "return int({arg})",
        lambda r: [str(r.randint(1, 99)), r.choice(pools.WORDS), "7.5"],
        "TypeError",
    ),
    ("KeyError", "return {table}[{arg}]", None, "TypeError"),
    (
        "IndexError",
        "return {items}[int({arg})]",
        lambda r: [str(r.randint(0, 2)), "9", str(r.randint(0, 2))],
        "ValueError",
    ),
    (
        "ZeroDivisionError",
        "return {k} // int({arg})",
        lambda r: [str(r.randint(1, 9)), "0", str(r.randint(2, 9))],
        "ValueError",
    ),
]


def make(rng: random.Random) -> Instance:
    fn = rng.choice(["parse", "lookup", "convert", "read_value", "get", "safe_get", "to_number", "fetch"])
    arg = rng.choice(["text", "key", "value", "s", "item", "raw"])
    exc, body, draw, other = rng.choice(GUARDS)
    keys = rng.sample(pools.WORDS, 3)
    table = "{" + ", ".join(f'"{w}": {rng.randint(1, 99)}' for w in keys) + "}"
    items = "[" + ", ".join(str(rng.randint(1, 99)) for _ in range(3)) + "]"
    if exc == "KeyError":
        inputs = [keys[0], rng.choice([w for w in pools.WORDS if w not in keys]), keys[2]]
    else:
        inputs = draw(rng)
    k, default = rng.randint(10, 99), rng.choice(["0", "-1", "None"])
    call = body.format(arg=arg, table="TABLE", items="ITEMS", k=k)
    head = {"KeyError": f"TABLE = {table}\n\n", "IndexError": f"ITEMS = {items}\n\n"}.get(exc, "")
    loop = f"for x in {inputs!r}:\n    print({fn}(x))".replace("'", '"')
    shape = rng.randrange(3)
    if shape == 0:  # py2 `except E, e:` -- the handler uses e
        handler = rng.choice(['print("bad input:", e)', f'print("skipping", {arg}, "-", e)', "print(e)"])
        code = f"{head}def {fn}({arg}):\n    try:\n        {call}\n    except {exc}#:\n        {handler}\n\n{loop}"
        return Instance(broken=code.replace("#", ", e"), reference=code.replace("#", " as e"))
    if shape == 1:  # two types, no name
        code = f"{head}def {fn}({arg}):\n    try:\n        {call}\n    except #:\n        return {default}\n\n{loop}"
        a, b = (exc, other) if rng.random() < 0.5 else (other, exc)
        return Instance(broken=code.replace("#", f"{a}, {b}"), reference=code.replace("#", f"({a}, {b})"))
    # py2 raise with a message
    limit, word = (
        rng.randint(20, 60),
        rng.choice(["too big", "out of range", "over the limit", "not allowed"]),
    )
    nums = [rng.randint(1, limit - 1), rng.randint(limit + 1, 99), rng.randint(1, limit - 1)]
    code = (
        f"def check(n):\n    if n > {limit}:\n        raise ValueError#\n    return n\n\n"
        f"for n in {nums}:\n    try:\n        print(check(n))\n    except ValueError as e:\n        print(n, e)"
    )
    return Instance(broken=code.replace("#", f', "{word}"'), reference=code.replace("#", f'("{word}")'))


FAMILY = Family(
    name="py-except",
    kind="python",
    make=make,
    description="Python 2's `except E, e:` / `raise E, msg`, or two types unparenthesized -> `as e`, (A, B), E(msg)",
    error_mentions=("SyntaxError",),
    source="Python 2 -> 3 porting (2to3: except, raise); Python: SyntaxError: multiple exception types must be parenthesized",
)

"""py-type-call: a TypeError from how a value is used -- a call with an argument short, a method without
`self`, len() of a number, a str as a repeat count, a function that forgot to `return`, a number in a for.

    def area(w, h): ...; area(w)      TypeError: area() missing 1 required positional argument: 'h' -> area(w, h)
    class Dog: def speak(): ...       TypeError: Dog.speak() takes 0 positional arguments but 1 was given -> (self)
    n = 2024; print(len(n))           TypeError: object of type 'int' has no len()          -> len(str(n))
    n = "3"; print("-" * n)           TypeError: can't multiply sequence by non-int of type 'str' -> int(n)
    def double(x): x * 2              TypeError: unsupported operand type(s) for +: 'NoneType' and 'int' -> return
    for i in n:                       TypeError: 'int' object is not iterable                 -> range(n)
    "%s is %d" % name                 TypeError: not enough arguments for format string       -> % (name, age)

The missing argument is a variable of the parameter's name already in the program, so the call is determined.
Source: Python: TypeError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

FUNCS = [  # (name, params, body)
    ("area", ["width", "height"], "width * height"),
    ("volume", ["w", "h", "d"], "w * h * d"),
    ("add", ["a", "b"], "a + b"),
    ("power", ["base", "exp"], "base ** exp"),
    ("clamp", ["x", "low", "high"], "max(low, min(x, high))"),
    ("scale", ["value", "factor"], "value * factor"),
    ("label", ["name", "count"], 'name + ": " + str(count)'),
    ("repeat", ["text", "times"], "text * times"),
    ("price", ["qty", "unit", "tax"], "qty * unit + tax"),
    ("mean2", ["x", "y"], "(x + y) / 2"),
]
CLASSES = ["Dog", "Cat", "Robot", "Shop", "Player", "Counter", "Greeter", "Car", "Bird", "Timer"]
METHODS = ["speak", "describe", "hello", "status", "name", "show", "info", "sound", "report"]


def _value(rng: random.Random, param: str) -> str:
    return f'"{rng.choice(pools.WORDS)}"' if param in ("name", "text") else str(rng.randint(2, 9))


def make(rng: random.Random) -> Instance:
    n, k, word = rng.randint(2, 9), rng.randint(10, 9999), rng.choice(pools.WORDS + pools.NAMES)
    shape = rng.randrange(7)
    if shape == 0:
        fn, params, body = rng.choice(FUNCS)
        drop = rng.randint(1, len(params) - 1)
        values = ", ".join(_value(rng, p) for p in params)
        lines = [f"def {fn}({', '.join(params)}):\n    return {body}", f"{', '.join(params)} = {values}"]
        call = "print({}({}))"
        return Instance(
            broken="\n".join(lines + [call.format(fn, ", ".join(params[:drop]))]),
            reference="\n".join(lines + [call.format(fn, ", ".join(params))]),
        )
    if shape == 1:
        cls, meth = rng.choice(CLASSES), rng.choice(METHODS)
        if rng.random() < 0.5:
            code = f'class {cls}:\n    def {meth}(@):\n        return "{word}"\n\nprint({cls}().{meth}())'
            return Instance(broken=code.replace("@", ""), reference=code.replace("@", "self"))
        code = f"class {cls}:\n    def {meth}(@x):\n        return x * {n}\n\nprint({cls}().{meth}({k}))"
        return Instance(broken=code.replace("@", ""), reference=code.replace("@", "self, "))
    if shape == 2:
        var = rng.choice(["n", "year", "pin", "code", "number", "zip_code", "total"])
        code = f'{var} = {k}\nprint("digits:", len(@{var}@))'
        return Instance(
            broken=code.replace("@", ""), reference=code.replace("@", "str(", 1).replace("@", ")")
        )
    if shape == 3:
        var = rng.choice(["n", "width", "count", "times", "size", "reps"])
        piece = rng.choice(["-", "=", "*", "ab", word[:3], "#"])
        code = f'{var} = "{n}"\nprint("{piece}" * @{var}@)'
        return Instance(
            broken=code.replace("@", ""), reference=code.replace("@", "int(", 1).replace("@", ")")
        )
    if shape == 4:
        fn, op = rng.choice([("double", "x * 2"), ("square", "x * x"), ("inc", "x + 1"), ("triple", "x * 3")])
        use = rng.choice([f"print({fn}({n}) + {k})", f"total = {fn}({n}) * {n}\nprint(total)"])
        code = f"def {fn}(x):\n    @{op}\n\n{use}"
        return Instance(broken=code.replace("@", ""), reference=code.replace("@", "return "))
    if shape == 5:
        var = rng.choice(["n", "count", "times", "rows", "steps"])
        code = f"{var} = {n}\nfor i in @{var}@:\n    print(i * {rng.randint(2, 9)})"
        return Instance(
            broken=code.replace("@", ""), reference=code.replace("@", "range(", 1).replace("@", ")")
        )
    age = rng.randint(2, 99)
    fmt = rng.choice(['"%s is %d"', '"%s: %d years"', '"%s has %d points"', '"name=%s n=%d"'])
    head = f'name = "{word}"\nage = {age}\n'
    return Instance(broken=f"{head}print({fmt} % name)", reference=f"{head}print({fmt} % (name, age))")


FAMILY = Family(
    name="py-type-call",
    kind="python",
    make=make,
    description="TypeError: an argument short, no self, len(int), str as a count, no return, for over an int",
    error_mentions=("TypeError",),
    source="Python: TypeError",
)

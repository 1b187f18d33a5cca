"""py-c-habit: syntax from C, Java or JavaScript in a Python script: `++`, `&&` / `||`, `!`, `true` / `null`,
`//` comments, the `?:` conditional.

    count++                  SyntaxError: invalid syntax                               -> count += 1
    if a > 0 && b > 0:       SyntaxError: invalid syntax (the caret under the `&`)     -> and   (|| -> or)
    if !found:               SyntaxError: invalid syntax                               -> if not found:
    done = false             NameError: name 'false' is not defined. Did you mean: 'False'?
    result = null            NameError: name 'null' is not defined                     -> None
    // add the tax           SyntaxError: invalid syntax                               -> # add the tax
    big = a > b ? a : b      SyntaxError: invalid syntax                               -> big = a if a > b else b

The error's source line shows the foreign token; each has one Python spelling. Scripts are a loop or a
function of four to nine lines, as people write them. Source: Python: SyntaxError / NameError
(the differences a C or JavaScript programmer meets first).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _nums(rng: random.Random, k: int | None = None) -> str:
    return "[" + ", ".join(str(rng.randint(1, 99)) for _ in range(k or rng.randint(4, 7))) + "]"


def make(rng: random.Random) -> Instance:
    xs = rng.choice(["nums", "scores", "values", "prices", "ages", "sizes", "counts", "marks"])
    n = rng.choice(["count", "total", "hits", "n", "seen", "found_count", "matches", "k"])
    t = rng.randint(10, 90)
    shape = rng.randrange(6)
    if shape == 0:  # ++ / --
        op, py = rng.choice([("++", "+= 1"), ("++", "+= 1"), ("--", "-= 1")])
        start = 0 if op == "++" else rng.randint(10, 20)
        cmp = rng.choice([">", "<", ">=", "!="])
        code = (
            f"{xs} = {_nums(rng)}\n{n} = {start}\nfor x in {xs}:\n    if x {cmp} {t}:\n        {n}@\n"
            f'print("{rng.choice(["matched", "result", "count"])}:", {n})'
        )
        return Instance(broken=code.replace("@", op), reference=code.replace("@", " " + py))
    if shape == 1:  # && / ||
        op, py = rng.choice([("&&", "and"), ("||", "or")])
        lo, hi = sorted(rng.sample(range(5, 95), 2))
        code = (
            f'{xs} = {_nums(rng)}\nfor x in {xs}:\n    if x > {lo} @ x < {hi}:\n        print(x, "in")\n'
            f'    else:\n        print(x, "out")'
        )
        if op == "||":
            code = code.replace(f"x > {lo} @ x < {hi}", f"x < {lo} @ x > {hi}")
        return Instance(broken=code.replace("@", op), reference=code.replace("@", py))
    if shape == 2:  # !flag
        words = rng.sample(pools.WORDS, rng.randint(4, 6))
        word = words.pop() if rng.random() < 0.5 else words[0]  # absent or present
        items = ", ".join(f'"{w}"' for w in words)
        code = (
            f'words = [{items}]\nfound = False\nfor w in words:\n    if w == "{word}":\n        found = True\n'
            f'if @found:\n    print("no {word}")\nelse:\n    print("{word} is there")'
        )
        return Instance(broken=code.replace("@", "!"), reference=code.replace("@", "not "))
    if shape == 3:  # true / false / null
        lit, py = rng.choice([("true", "True"), ("false", "False"), ("null", "None")])
        if py == "None":
            code = (
                f"{xs} = {_nums(rng)}\nbest = @\nfor x in {xs}:\n    if best is None or x > best:\n"
                f'        best = x\nprint("best:", best)'
            )
        else:
            flip = "False" if py == "True" else "True"
            code = (
                f"{xs} = {_nums(rng)}\nok = @\nfor x in {xs}:\n    if x {'>' if py == 'True' else '<'} {t}:\n"
                f'        ok = {flip}\nprint("all fine" if ok else "check {xs}")'
            )
            if py == "False":
                code = code.replace("all fine", "some").replace(f"check {xs}", "none")
        return Instance(broken=code.replace("@", lit), reference=code.replace("@", py))
    if shape == 4:  # // comments
        note = rng.choice(
            ["add the tax", "sum them up", "start at zero", "the main loop", "print the result"]
        )
        rate = rng.randint(5, 25)
        code = (
            f"{xs} = {_nums(rng)}\n@ {note}\ntotal = 0\nfor x in {xs}:\n    total += x\n"
            f"print(total * {100 + rate} // 100)"
        )
        return Instance(broken=code.replace("@", "//"), reference=code.replace("@", "#"))
    # a ? b : c
    a, b = rng.sample(["a", "b", "x", "y", "first", "second", "left", "right"], 2)
    out = rng.choice(["big", "bigger", "best", "top", "m"])
    code = (
        f"def pick({a}, {b}):\n    {out} = @\n    return {out}\n\n"
        f"print(pick({rng.randint(1, 50)}, {rng.randint(51, 99)}))\nprint(pick({rng.randint(51, 99)}, {rng.randint(1, 50)}))"
    )
    return Instance(
        broken=code.replace("@", f"{a} > {b} ? {a} : {b}"),
        reference=code.replace("@", f"{a} if {a} > {b} else {b}"),
    )


FAMILY = Family(
    name="py-c-habit",
    kind="python",
    make=make,
    description="C / JavaScript syntax in Python (x++, &&, ||, !x, true, null, // comment, a ? b : c) -> Python's",
    error_mentions=("SyntaxError", "NameError"),
    source="Python: SyntaxError / NameError (habits from C, Java, JavaScript)",
)

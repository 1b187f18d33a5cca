"""py-write-outcome (outcome-only): a program that should write its results to a file fails while writing.

    with open("out.txt", "r") as f: f.write(...)    io.UnsupportedOperation: not writable     -> mode "w"
    open("out.txt", "write") / "W" / "rw"           ValueError: invalid mode: 'write' / must have exactly one
                                                    of create/read/write/append mode        -> "w"
    f.write(total)                                  TypeError: write() argument must be str, not int -> str(total)
    f.write("\\n".join(squares))                    TypeError: sequence item 0: expected str instance, int found
                                                                                 -> "\\n".join(map(str, squares))

There is no reference output: the `test` checks what the file holds afterwards (the fixture's stale out file
must be replaced), so any program that writes the right lines passes.
Source: Python: io.UnsupportedOperation / ValueError / TypeError (file writes).
"""

from __future__ import annotations

import random
import shlex

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

OUTS = [
    "out.txt",
    "result.txt",
    "output.txt",
    "squares.txt",
    "report.txt",
    "totals.txt",
    "lines.txt",
    "log.txt",
]
MAPS = {  # an expression over x -> (its value, whether x is a number)
    "x * x": (lambda x: x * x, True),
    "x * 2": (lambda x: x * 2, True),
    "x + 1": (lambda x: x + 1, True),
    "x.upper()": (str.upper, False),
    "len(x)": (len, False),
    "x[::-1]": (lambda x: x[::-1], False),
}
AGGS = {"sum": sum, "max": max, "min": min, "len": len}


def make(rng: random.Random) -> Instance:
    out = rng.choice(OUTS + [pools.stem(rng) + ".txt"])
    files = {out: rng.choice(["old\n", "", "1\n2\n", "TODO\n"])} if rng.random() < 0.7 else {}
    shape = rng.randrange(5)
    expr = rng.choice(["x * x", "x * 2", "x + 1", "len(x)"] if shape == 2 else sorted(MAPS))
    fn, numeric = MAPS[expr]
    xs = [rng.randint(1, 20) for _ in range(rng.randint(3, 5))] if numeric else rng.sample(pools.WORDS, 3)
    vals = [str(fn(x)) for x in xs]
    lit = str(xs).replace("'", '"')
    if shape in (0, 1):
        mode = "r" if files and shape == 0 else rng.choice(["write", "W", "rw", "wr"])
        body = rng.choice(
            [
                f'f.write({expr if expr.startswith("x.") or "[" in expr else f"str({expr})"} + "\\n")',
                f"print({expr}, file=f)",
            ]
        )
        code = f'xs = {lit}\nwith open("{out}", "@") as f:\n    for x in xs:\n        {body}'
        broken, solution = code.replace("@", mode), code.replace("@", "w")
    elif shape == 2:
        code = f'xs = {lit}\nvals = [{expr} for x in xs]\nwith open("{out}", "w") as f:\n    f.write("\\n".join(@))'
        broken, solution = code.replace("@", "vals"), code.replace("@", "map(str, vals)")
    else:
        agg = rng.choice(sorted(AGGS))
        xs = [rng.randint(1, 99) for _ in range(rng.randint(2, 5))]
        vals = [str(AGGS[agg](xs))]
        code = f'xs = {xs}\ntotal = {agg}(xs)\nf = open("{out}", "w")\nf.write(@)\nf.close()'
        broken, solution = code.replace("@", "total"), code.replace("@", "str(total)")
    args = " ".join(shlex.quote(v) for v in vals)
    test = f'test "$(cat {out})" = "$(printf \'%s\\n\' {args})"'
    return Instance(broken=broken, files=files, test=test, solution=solution)


FAMILY = Family(
    name="py-write-outcome",
    kind="python",
    make=make,
    description="writing results to a file fails (mode 'r'/'write', write(int), join of ints); a test checks the file",
    outcome_only=True,
    error_mentions=("UnsupportedOperation", "ValueError", "TypeError"),
    source="Python: io.UnsupportedOperation / ValueError / TypeError (file writes)",
)

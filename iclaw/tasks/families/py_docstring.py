"""py-docstring: a docstring that is never closed, or closed with the other kind of triple quote, so the
string runs to the end of the file.

    def area(w, h):
        \"\"\"Return the area of a w by h room.       SyntaxError: unterminated triple-quoted string literal
        return w * h                                  (detected at line 6)

Python reports the line where the string starts (the caret under its opening quotes) and the line the file
ends on. Fix: close the docstring where its sentence ends, with the quotes it opened with. Source: Python:
SyntaxError: unterminated triple-quoted string literal; PEP 257 (docstring conventions).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

# (signature, docstring, body lines, a call's arguments)
FUNCS = [
    (
        "area(w, h)",
        "Return the area of a w by h room.",
        ["return w * h"],
        lambda r: f"{r.randint(2, 9)}, {r.randint(2, 9)}",
    ),
    ("double(n)", "Return twice n.", ["return n * 2"], lambda r: str(r.randint(2, 99))),
    (
        "average(xs)",
        "Return the mean of the numbers in xs.",
        ["return sum(xs) / len(xs)"],
        lambda r: "[" + ", ".join(str(r.randint(1, 9)) for _ in range(4)) + "]",
    ),
    (
        "shout(word)",
        "Return word in capitals with an exclamation mark.",
        ['return word.upper() + "!"'],
        lambda r: f'"{r.choice(pools.WORDS)}"',
    ),
    (
        "count_long(words, n)",
        "Count the words longer than n letters.",
        ["total = 0", "for w in words:", "    if len(w) > n:", "        total += 1", "return total"],
        lambda r: "[" + ", ".join(f'"{w}"' for w in r.sample(pools.WORDS, 4)) + f"], {r.randint(3, 5)}",
    ),
    (
        "initials(name)",
        "Return the initials of a full name.",
        ["parts = name.split()", 'return "".join(p[0].upper() for p in parts)'],
        lambda r: f'"{r.choice(pools.NAMES)} {r.choice(pools.NAMES)}"',
    ),
    (
        "clamp(x, lo, hi)",
        "Keep x between lo and hi.",
        ["return max(lo, min(x, hi))"],
        lambda r: f"{r.randint(-20, 120)}, 0, {r.randint(50, 100)}",
    ),
]


def make(rng: random.Random) -> Instance:
    picks = rng.sample(FUNCS, 1 if rng.random() < 0.6 else 2)
    # two functions only when both are short: a fix stays under ~150 tokens
    if sum(len(f[1]) + len("".join(f[2])) for f in picks) > 110:
        picks = picks[:1]
    broken_i = rng.randrange(len(picks))
    q = rng.choice(['"""', "'''"])
    wrong = rng.choice(
        ["", "", "other", "two"]
    )  # never closed, closed with the other quotes, or with two quotes
    other = "'''" if q == '"""' else '"""'
    defs, broken_defs, calls = [], [], []
    for i, (sig, doc, body, args) in enumerate(picks):
        name = sig.split("(")[0]
        lines = [f"def {sig}:", f"    {q}{doc}@{q}"] + [f"    {b}" for b in body]
        text = "\n".join(lines)
        defs.append(text.replace("@", ""))
        close = {"": "", "other": other, "two": q[:2]}[wrong]
        broken_defs.append(text.replace(f"@{q}", close) if i == broken_i else text.replace("@", ""))
        calls += [f"print({name}({args(rng)}))" for _ in range(rng.randint(1, 2))]
    head = ""
    if rng.random() < 0.4:
        head = (
            f"{q}{rng.choice(['Small helpers', 'Helpers for the report', 'Room and word utilities'])}.{q}\n\n"
        )
    tail = "\n\n" + "\n".join(calls)
    return Instance(broken=head + "\n\n".join(broken_defs) + tail, reference=head + "\n\n".join(defs) + tail)


FAMILY = Family(
    name="py-docstring",
    kind="python",
    make=make,
    description="a docstring never closed (or closed with the other quotes) -> close it where its sentence ends",
    error_mentions=("SyntaxError",),
    source="Python: SyntaxError: unterminated triple-quoted string literal; PEP 257",
)

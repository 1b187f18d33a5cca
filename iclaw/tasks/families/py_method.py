"""py-method: a method from another language (JavaScript, Java, Ruby) called on a Python list / str / dict.

    xs.push(4)                AttributeError: 'list' object has no attribute 'push'     -> xs.append(4)
    print(xs.length)          AttributeError: 'list' object has no attribute 'length'   -> print(len(xs))
    print(s.contains("a"))    AttributeError: 'str' object has no attribute 'contains'  -> print("a" in s)
    print(xs.join(", "))      AttributeError: 'list' object has no attribute 'join'     -> print(", ".join(xs))
    print(s.trim())           AttributeError: 'str' object has no attribute 'trim'. Did you mean: 'strip'?

Unlike py-attr (a misspelled Python name), the name is right in another language; the error names the type
and the foreign method, and the Python idiom for it is universal (append, len, in, upper, ", ".join(xs)).
Source: Python: AttributeError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

# (broken, fixed), str.format templates: {L} a list, {S} a str, {D} a dict, {W} a list of words; {N} a
# number ({N} in {L} where it matters), {C} a piece of {S}, {K} a key of {D}, {K2} a new key, {P} a separator.
SHAPES = [
    ("{L}.push({N})\nprint({L})", "{L}.append({N})\nprint({L})"),
    ("{L}.add({N})\nprint({L})", "{L}.append({N})\nprint({L})"),
    ("{L}.pushBack({N})\nprint({L})", "{L}.append({N})\nprint({L})"),
    ("print({L}.length)", "print(len({L}))"),
    ("print({L}.size())", "print(len({L}))"),
    ("print({L}.len())", "print(len({L}))"),
    ("print({S}.length)", "print(len({S}))"),
    ("print({S}.size())", "print(len({S}))"),
    ('print({S}.contains("{C}"))', 'print("{C}" in {S})'),
    ("print({L}.contains({N}))", "print({N} in {L})"),
    ('print({D}.containsKey("{K}"))', 'print("{K}" in {D})'),
    ('print({D}.has("{K}"))', 'print("{K}" in {D})'),
    ("print({S}.toUpperCase())", "print({S}.upper())"),
    ("print({S}.toLowerCase())", "print({S}.lower())"),
    ("print({S}.trim())", "print({S}.strip())"),
    ('print({S}.startsWith("{C}"))', 'print({S}.startswith("{C}"))'),
    ('print({S}.endsWith("{C}"))', 'print({S}.endswith("{C}"))'),
    ('print({S}.replaceAll("{C}", "_"))', 'print({S}.replace("{C}", "_"))'),
    ("print({S}.charAt({I}))", "print({S}[{I}])"),
    ("print({S}.substring(0, {I}))", "print({S}[0:{I}])"),
    ("print({S}.isEmpty())", 'print({S} == "")'),
    ("print({L}.last())", "print({L}[-1])"),
    ("print({L}.first())", "print({L}[0])"),
    ("print({L}.sum())", "print(sum({L}))"),
    ("print({L}.max())", "print(max({L}))"),
    ("print({L}.min())", "print(min({L}))"),
    ('print({W}.join("{P}"))', 'print("{P}".join({W}))'),
    ('{D}.put("{K2}", {N})\nprint({D})', '{D}["{K2}"] = {N}\nprint({D})'),
    ('{D}.add("{K2}", {N})\nprint({D})', '{D}["{K2}"] = {N}\nprint({D})'),
    ('{D}.remove("{K}")\nprint({D})', 'del {D}["{K}"]\nprint({D})'),
    ('print({S}.equals("{C}"))', 'print({S} == "{C}")'),
    ("print({S}.reverse())", "print({S}[::-1])"),
]


def make(rng: random.Random) -> Instance:
    broken, fixed = rng.choice(SHAPES)
    nums = [rng.randint(1, 50) for _ in range(rng.randint(2, 5))]
    s = rng.choice(pools.WORDS + pools.NAMES)
    keys = rng.sample(pools.WORDS, 3)
    v = {
        "L": rng.choice(["xs", "nums", "items", "values", "scores", "queue", "stack", "data"]),
        "S": rng.choice(["s", "name", "word", "text", "line", "title", "msg", "city"]),
        "D": rng.choice(["d", "ages", "stock", "prices", "config", "counts", "user", "totals"]),
        "W": rng.choice(["words", "names", "parts", "tags", "labels"]),
    }
    if "trim" in broken:
        s = rng.choice([" ", "  ", "\\t"]) + s + rng.choice(["", " ", "\\n"])
    i = rng.randint(1, max(1, len(s) - 1))
    c = rng.choice([s[:i], s[i:], s[i - 1 : i + 1], s, rng.choice(pools.WORDS)[:2]])
    if "equals" in broken:
        c = rng.choice([s, rng.choice(pools.WORDS)])
    subs = dict(v, N=rng.choice(nums + [rng.randint(1, 60)]), C=c, I=i, K=keys[0], K2=keys[2])
    subs["P"] = rng.choice([", ", "-", " ", "/", ":", "; ", " | "])
    defs = ""
    if "{L}" in broken:
        defs += f"{v['L']} = {nums}\n"
    if "{S}" in broken:
        defs += f'{v["S"]} = "{s}"\n'
    if "{D}" in broken:
        defs += f"{v['D']} = " + "{" + ", ".join(f'"{k}": {rng.randint(1, 99)}' for k in keys[:2]) + "}\n"
    if "{W}" in broken:
        defs += (
            f"{v['W']} = "
            + str(rng.sample(pools.WORDS + pools.NAMES, rng.randint(2, 4))).replace("'", '"')
            + "\n"
        )
    return Instance(broken=defs + broken.format(**subs), reference=defs + fixed.format(**subs))


FAMILY = Family(
    name="py-method",
    kind="python",
    make=make,
    description="a method from another language (push, length, contains, toUpperCase, xs.join) -> Python's",
    error_mentions=("AttributeError",),
    source="Python: AttributeError",
)

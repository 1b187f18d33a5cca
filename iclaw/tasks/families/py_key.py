"""py-key: a KeyError -- a key spelled differently from the dict literal above it, or a counter / group
updated before its key exists.

    prices = {"apple": 3, "pear": 5}
    print(prices["aple"])             KeyError: 'aple'          -> prices["apple"] (copy the key from the literal)
    counts[w] += 1                    KeyError: 'oslo'          -> counts[w] = counts.get(w, 0) + 1
    groups[k].append(x)               KeyError: 'b'             -> groups.setdefault(k, []).append(x)

The misspelt key is a typo or the wrong case of a key written in the program, so the right one is there to
copy; the counter and the grouping fixes are the standard idioms (dict.get with a default, setdefault).
Source: Python: KeyError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import typo
from iclaw.tasks.family import Family, Instance

DICTS = ["prices", "ages", "stock", "scores", "config", "user", "sizes", "colors", "capitals", "limits"]


def _wrong(rng: random.Random, key: str, keys: list[str]) -> str:
    for _ in range(20):
        bad = key.capitalize() if rng.random() < 0.2 else typo(rng, key)
        if bad not in keys:
            return bad
    raise ValueError("no misspelling of the key that is not itself a key")


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(5)
    if shape <= 2:
        var = rng.choice(DICTS)
        keys = rng.sample(pools.WORDS + pools.NAMES, rng.randint(2, 4))
        as_str = rng.random() < 0.3
        vals = [f'"{rng.choice(pools.WORDS)}"' if as_str else str(rng.randint(1, 99)) for _ in keys]
        lit = f"{var} = " + "{" + ", ".join(f'"{a}": {b}' for a, b in zip(keys, vals)) + "}\n"
        key = rng.choice(keys)
        bad = _wrong(rng, key, keys)
        if shape == 0:
            code = lit + f'print({var}["@"])'
        elif shape == 1:
            code = lit + f'value = {var}["@"]\nprint("{key}:", value)'
        else:
            other = rng.choice([k for k in keys if k != key])
            code = lit + f'for k in ["{other}", "@"]:\n    print(k, {var}[k])'
        return Instance(broken=code.replace("@", bad), reference=code.replace("@", key))
    words = [rng.choice(pools.WORDS[:40]) for _ in range(rng.randint(3, 7))]
    if shape == 3:
        var = rng.choice(["counts", "seen", "freq", "tally", "hits"])
        src = rng.choice([f'"{" ".join(words)}".split()', str(words).replace("'", '"')])
        head = f"{var} = {{}}\nfor w in {src}:\n"
        return Instance(
            broken=f"{head}    {var}[w] += 1\nprint({var})",
            reference=f"{head}    {var}[w] = {var}.get(w, 0) + 1\nprint({var})",
        )
    var = rng.choice(["groups", "by_letter", "index", "buckets"])
    key = rng.choice(["w[0]", "len(w)", "w[-1]"])
    head = f"{var} = {{}}\nfor w in {str(words).replace(chr(39), chr(34))}:\n"
    return Instance(
        broken=f"{head}    {var}[{key}].append(w)\nprint({var})",
        reference=f"{head}    {var}.setdefault({key}, []).append(w)\nprint({var})",
    )


FAMILY = Family(
    name="py-key",
    kind="python",
    make=make,
    description="KeyError: a key misspelt against the dict literal, or a counter/group key that is not there yet",
    error_mentions=("KeyError",),
    source="Python: KeyError",
)

"""py-quote: a string literal whose quotes do not pair up.

    print("hello)                 SyntaxError: unterminated string literal (detected at line 1)
    print("hello')                (mismatched quotes: the same error)
    print(f"{row["name"]} ok")    SyntaxError: f-string: unmatched '['   (Python < 3.12)

Fix: close the string with the quote it opened with; inside an f-string, use the other kind of quote for
the key (`f"{row['name']} ok"`). Source: Python SyntaxError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance


def _text(rng: random.Random) -> str:
    return " ".join(rng.sample(pools.WORDS + pools.NAMES, rng.randint(1, 3)))


def _unterminated(rng: random.Random) -> tuple[str, str]:
    """(code with QTE where the string goes, the text between its quotes)."""
    text, v = _text(rng), pools.identifier(rng)
    shape = rng.randrange(5)
    if shape == 0:
        return "print(QTE)", text
    if shape == 1:
        return f"{v} = QTE\nprint({v})", text
    if shape == 2:
        return f"{v} = QTE\nprint({v}.upper())", text
    if shape == 3:
        return f'{v} = "{rng.choice(pools.NAMES)}"\nprint("{text} " + {v} + QTE)', rng.choice(["!", ".", "?"])
    return f"{v} = [{', '.join(repr(w) for w in rng.sample(pools.WORDS, 2))}, QTE]\nprint({v})", text


def _fstring(rng: random.Random) -> tuple[str, str]:
    v, keys = pools.identifier(rng), rng.sample(["name", "city", "age", "size", "total", "id", "color"], 2)
    vals = [rng.choice(pools.WORDS + pools.NAMES) if rng.random() < 0.6 else rng.randint(1, 99) for _ in keys]
    d = "{" + ", ".join(f'"{k}": {val!r}'.replace("'", '"') for k, val in zip(keys, vals)) + "}"
    label = rng.choice(pools.WORDS)
    if rng.random() < 0.5:
        body = f"{label}: {{{v}[@{keys[0]}@]}}"
    else:
        body = f"{{{v}[@{keys[0]}@]}} {label} {{{v}[@{keys[1]}@]}}"
    code = f'{v} = {d}\nprint(f"{body}")'
    return code.replace("@", '"'), code.replace("@", "'")


def make(rng: random.Random) -> Instance:
    if rng.random() < 0.3:
        broken, fixed = _fstring(rng)
        return Instance(broken=broken, reference=fixed)
    code, text = _unterminated(rng)
    q = rng.choice(['"', '"', "'"])
    fixed = code.replace("QTE", q + text + q)
    # forgot the closing quote, or closed with the other kind
    end = "" if rng.random() < 0.7 else {'"': "'", "'": '"'}[q]
    return Instance(broken=code.replace("QTE", q + text + end), reference=fixed)


FAMILY = Family(
    name="py-quote",
    kind="python",
    make=make,
    description="unterminated string / same quotes inside an f-string -> close it / use other quotes",
    error_mentions=("unterminated string", "f-string: unmatched"),
    source="Python: SyntaxError (unterminated string literal)",
)

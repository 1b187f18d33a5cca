"""quote: an unbalanced quote. `echo "hello world` -> `echo "hello world"`.

bash reports "unexpected EOF while looking for matching `\"'" (exit 2); the fix closes the quote at the end
of the line, with the same kind of quote the error names.
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import CITIES, FRUITS, NAMES, WORDS
from iclaw.tasks.family import Family, Instance


def make(rng: random.Random) -> Instance:
    q = rng.choice(['"', "'"])
    words = [rng.choice(WORDS), rng.choice(NAMES + FRUITS + CITIES)]
    if rng.random() < 0.5:
        words.insert(0, rng.choice(["hello", "hi", "bye", "see", "meet"]))
    phrase = " ".join(words)
    shape = rng.randrange(3)
    if shape == 0:  # echo "a b
        fixed = f"echo {q}{phrase}{q}"
    elif shape == 1:  # echo first "rest of it
        first, rest = phrase.split(" ", 1)
        fixed = f"echo {first} {q}{rest}{q}"
    else:  # printf '%s\n' "a b   (the format string is balanced; the argument is not)
        fixed = f"printf '%s\\n' {q}{phrase}{q}"
    return Instance(broken=fixed[:-1], reference=fixed)


FAMILY = Family(
    name="quote",
    kind="bash",
    make=make,
    description='unbalanced quote (echo "hi -> echo "hi")',
    error_mentions=("unexpected EOF",),
    source="thefuck: quotation_marks (bash: unexpected EOF while looking for matching quote)",
)

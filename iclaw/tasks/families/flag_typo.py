"""flag-typo: a misspelled long option. `sort --reverce names.txt` -> `sort --reverse names.txt`.

GNU tools answer "unrecognized option '--reverce'". getopt accepts unambiguous prefixes (`--rev`), so a
typo that is a prefix of a real option would not fail; the generator drops those instances.
"""

from __future__ import annotations

import random

from iclaw.tasks.family import Family, Instance, list_fixture, typo

# (command, option word, how the option is written, rest of the line)
OPTIONS = [
    ("sort", "reverse", "--{}", "FILE"),
    ("sort", "unique", "--{}", "FILE"),
    ("uniq", "count", "--{}", "FILE"),
    ("wc", "lines", "--{}", "FILE"),
    ("wc", "words", "--{}", "FILE"),
    ("head", "lines", "--{}=K", "FILE"),
    ("tail", "lines", "--{}=K", "FILE"),
    ("cat", "number", "--{}", "FILE"),
    ("grep", "count", "--{}", "W FILE"),
    ("grep", "ignore-case", "--{}", "W FILE"),
    ("mkdir", "parents", "--{}", "--verbose DIR"),
]


def make(rng: random.Random) -> Instance:
    cmd, word, form, rest = rng.choice(OPTIONS)
    fname, lines = list_fixture(rng)
    rest = (
        rest.replace("FILE", fname)
        .replace("DIR", f"{rng.choice(['out', 'build', 'logs', 'tmp2'])}/{rng.choice(lines)}")
        .replace("W", rng.choice(lines).upper() if "ignore" in word else rng.choice(lines))
    )
    k = str(rng.randint(1, 3))
    good = form.format(word).replace("K", k)
    bad = form.format(typo(rng, word)).replace("K", k)
    return Instance(
        broken=f"{cmd} {bad} {rest}",
        reference=f"{cmd} {good} {rest}",
        files={fname: "\n".join(lines) + "\n"},
    )


FAMILY = Family(
    name="flag-typo",
    kind="bash",
    make=make,
    description="misspelled long option (sort --reverce -> --reverse)",
    accept=lambda error, exit_code: "unrecognized option" in error,
)

"""What a task family is: a seeded recipe for (fixture, broken, fix) instances.

A family's `make(rng)` draws one instance from a `random.Random`; everything random must come from that rng
so a seed fixes the output. The generator (generate.py) runs every instance in the sandbox and drops the
ones that do not behave (broken must fail, the fix must pass), so a recipe may be a little sloppy -- e.g.
a typo that happens to be a real command is simply discarded.

Design constraint (the GRPO demo depends on it): the policy is a tiny GPT trained from scratch, so a fix is
one short shell line or a Python program of at most a dozen lines (it must fit one turn's 160 tokens), and
the error message determines the fix -- except in multi-turn families, where one look around (`ls`)
determines it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Instance:
    broken: str
    files: dict[str, str] = field(default_factory=dict)
    reference: str | None = None  # a fix whose stdout + exit code is the target
    test: str | None = None  # outcome-only families: a shell check run after the candidate
    solution: str | None = None  # outcome-only families: the intended fix (oracle checks, SFT warm-up)
    look: str | None = None  # look-first families: the call that reveals what the fix needs (default `ls`)


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # "bash" | "python": the tool the broken command and its fix run with
    make: Callable[[random.Random], Instance]
    description: str
    multi_turn: bool = False  # needs a look around first (ls) before the fix is determined
    outcome_only: bool = False  # instances have a test and no reference
    # Extra generation-time filter on the broken run: (error text, exit code) -> keep?
    accept: Callable[[str, int], bool] | None = None
    source: str = ""  # where the mistake comes from (a thefuck rule, a Python exception, a shell error)
    # How the verifier varies a fixture to check that a fix's output follows its files (vary.py):
    # (files, rng) -> files. None: the generic vary_text; vary.no_variation opts out.
    vary: Callable[[dict[str, str], random.Random], dict[str, str]] | None = None


# ---------------------------------------------------------------------------------------------------------
# Small shared vocabularies and helpers for the family modules.

NAMES = [
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
    "ivan",
    "judy",
    "mallory",
    "nina",
    "oscar",
    "peggy",
    "quinn",
    "rupert",
    "sybil",
    "trent",
    "ursula",
    "victor",
    "wendy",
]
FRUITS = [
    "apple",
    "banana",
    "cherry",
    "grape",
    "kiwi",
    "lemon",
    "mango",
    "melon",
    "orange",
    "peach",
    "pear",
    "plum",
]
CITIES = [
    "berlin",
    "cairo",
    "delhi",
    "lagos",
    "lima",
    "madrid",
    "oslo",
    "paris",
    "quito",
    "rome",
    "seoul",
    "tokyo",
]
WORDS = [
    "red",
    "green",
    "blue",
    "fast",
    "slow",
    "tiny",
    "huge",
    "quiet",
    "loud",
    "happy",
    "sunny",
    "cold",
    "warm",
    "bright",
    "dark",
    "soft",
]
# Fixture files of "one item per line" lists; the file name hints at the content.
LIST_FILES = {"names.txt": NAMES, "fruits.txt": FRUITS, "cities.txt": CITIES, "words.txt": WORDS}


def list_fixture(rng: random.Random, dupes: bool = True) -> tuple[str, list[str]]:
    """A file name and 4-8 lines drawn from its vocabulary, unsorted, sometimes with adjacent duplicates
    (so `uniq` and `sort` both change the output). Half the names carry a random suffix (`names_k3.txt`), as
    real file names do: a fix then has to copy the name from the request rather than recall it, the skill a
    policy needs to use any name it has only seen in its context (e.g. in what `ls` printed)."""
    base = rng.choice(sorted(LIST_FILES))
    vocab = LIST_FILES[base]
    fname = base
    if rng.random() < 0.5:
        stem, ext = base.split(".")
        fname = f"{stem}{rng.choice(['_', '-', ''])}{tag(rng)}.{ext}"
    lines = rng.sample(vocab, rng.randint(4, 7))
    if dupes and rng.random() < 0.6:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    return fname, lines


def typo(rng: random.Random, word: str) -> str:
    """One human-looking typo: swap two neighbours, drop a letter, or double one. Never returns `word`."""
    for _ in range(50):
        op = rng.choice(("swap", "drop", "double"))
        if op == "swap" and len(word) >= 2:
            i = rng.randrange(len(word) - 1)
            out = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif op == "drop" and len(word) >= 3:
            i = rng.randrange(len(word))
            out = word[:i] + word[i + 1 :]
        else:
            i = rng.randrange(len(word))
            out = word[: i + 1] + word[i] + word[i + 1 :]
        if out != word:
            return out
    raise ValueError(f"cannot make a typo of {word!r}")


def tag(rng: random.Random, n: int = 2) -> str:
    """A short random suffix such as '7b' that makes a file name unguessable without `ls`."""
    return "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(n))

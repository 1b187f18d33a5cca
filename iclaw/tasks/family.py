"""What a task family is: a seeded recipe for (fixture, broken, fix) instances.

A family's `make(rng)` draws one instance from a `random.Random`; everything random must come from that rng
so a seed fixes the output. The generator (generate.py) runs every instance in the sandbox and drops the
ones that do not behave (broken must fail, the fix must pass), so a recipe may be a little sloppy -- e.g.
a typo that happens to be a real command is simply discarded.

Design constraint (the GRPO demo depends on it): the policy is a tiny GPT trained from scratch, so a fix is
one short shell line or a Python program of at most a dozen lines (it must fit one turn's 160 tokens), and
the error message determines the fix -- except in multi-turn families, where one look around (`ls`)
determines it. What several families share (vocabularies, fixture builders) is in families/_shared.py.
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
    # Generation-time filters on the broken run: its error must mention one of these strings ...
    error_mentions: tuple[str, ...] = ()
    # ... and pass this check, where a family needs more: (error text, exit code) -> keep?
    accept: Callable[[str, int], bool] | None = None
    source: str = ""  # where the mistake comes from (a thefuck rule, a Python exception, a shell error)
    # How the verifier varies a fixture to check that a fix's output follows its files (vary.py):
    # (files, rng) -> files. None: the generic vary_text; vary.no_variation opts out.
    vary: Callable[[dict[str, str], random.Random], dict[str, str]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.error_mentions, str):  # a bare string would be read letter by letter
            raise TypeError(f"family {self.name}: error_mentions must be a tuple of strings")

"""win-habit (a Windows command, switch or path in bash) and shell-syntax (bash grammar typed wrong): on
seeded draws the broken command holds the family's mistake and the fix only undoes it; a small sandboxed
generate() checks that each really fails and is really fixed."""

from __future__ import annotations

import re

import pytest
from helpers import draws

from iclaw.tasks import generate
from iclaw.tools.sandbox import Limits, Sandbox

WINDOWS = set("type findstr find where copy xcopy move ren del erase md rd py".split())
KEYWORDS = {"do", "done", "then", "fi"}


def test_win_habit_swaps_the_windows_word_for_the_unix_one():
    for inst in draws("win-habit"):
        first = inst.broken.split()[0]
        switch = re.search(r" /[a-z]( |$)", inst.broken)
        cmdlet = re.search(r"\b[A-Z][a-z]+-[A-Z][a-zA-Z]+", inst.broken)
        assert first in WINDOWS or "\\" in inst.broken or switch or cmdlet, inst.broken
        assert "\\" not in inst.reference and not re.search(r"[A-Z][a-z]+-[A-Z]", inst.reference)
        assert not re.search(r"(^| )/[a-z]( |$)", inst.reference)  # no cmd.exe switch survives
        if "\\" in inst.broken and first not in WINDOWS:  # a backslash path: only the separator changes
            assert inst.broken.replace("\\", "/") == inst.reference


def test_shell_syntax_fix_only_adds_grammar():
    def words(line: str) -> list[str]:
        return [w for w in re.findall(r"[A-Za-z0-9_.#$-]+", line) if w not in KEYWORDS]

    for inst in draws("shell-syntax"):
        # the fix adds ; ) ] a space or a keyword, or drops the spaces around =; the other words stay
        assert inst.broken != inst.reference and words(inst.broken) == words(inst.reference), inst.broken


def test_both_families_generate_checked_tasks():
    names = ["shell-syntax", "win-habit"]
    ts = generate(6, "train", seed=1, families=names, sandbox=Sandbox(Limits(timeout_s=5.0)))
    assert sorted({t.family for t in ts}) == names
    assert all(t.broken_exit not in (None, 0) and t.error for t in ts)


@pytest.mark.parametrize("name", ["win-habit", "shell-syntax"])
def test_variety(name):
    assert len({i.broken for i in draws(name, 200)}) >= 150

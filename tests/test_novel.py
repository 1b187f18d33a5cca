"""Tasks with made-up names (tasks/novel.py): the renaming is consistent across command, fix, file names and
contents, keeps what a command or program means, skips a task whose mistake is a near-miss of a renamed word,
and the copies `novel_tasks` keeps really fail and are really fixed, in the real sandbox."""

from __future__ import annotations

import random
import re

from iclaw.tasks import Task, Verifier, generate
from iclaw.tasks.novel import POOL, novel_tasks, renamed
from iclaw.tools.sandbox import Limits, Sandbox


def shell_task() -> Task:
    return Task(
        id="t1",
        kind="bash",
        family="file-typo",
        broken="sort -r Notes.tx",
        reference="sort -r Notes.txt",
        files={"Notes.txt": "milk\ncake\nnotes\n", "docs/garden_plan.md": "GARDEN\n"},
    )


def test_renaming_is_consistent_and_keeps_commands():
    t = renamed(shell_task(), random.Random(0))
    new = re.match(r"sort -r ([A-Z][a-z]+)\.tx$", t.broken).group(1)  # Title case stays Title case
    assert new.lower() not in POOL and t.reference == f"sort -r {new}.txt"
    body = t.files[f"{new}.txt"].split()
    assert "milk" not in body and "cake" not in body and body[2] == new.lower()  # one word, one new name
    (other,) = [p for p in t.files if p.startswith("docs/")]
    g, p = re.match(r"docs/([a-z]+)_([a-z]+)\.md$", other).groups()
    assert {g, p}.isdisjoint({"garden", "plan"}) and t.files[other] == g.upper() + "\n"
    assert t.id == "t1-novel" and t.error is None and t.broken_exit is None  # to be run again


def test_python_names_are_renamed_and_python_is_kept():
    prog = (
        'total = 0\nfor line in open("budget.txt"):\n    total += float(line.split(",")[1])\n'
        'if __name__ == "__main__":\n    print(sorted([total]), end="\\n")\n'
    )
    t = Task(
        id="p", kind="python", family="py-type", broken=prog, reference=prog, files={"budget.txt": "a,1\n"}
    )
    r = renamed(t, random.Random(1))
    for kept in (
        "open(",
        ".split(",
        "float(",
        '__name__ == "__main__"',
        "print(sorted(",
        'end="\\n"',
        "for ",
    ):
        assert kept in r.broken, kept
    assert "total" not in r.broken and " line " not in r.broken and "budget" not in r.broken
    assert r.broken == r.reference


def test_a_typo_of_a_renamed_word_skips_the_task():
    t = Task(id="x", kind="bash", family="file-typo", broken="cat noets.txt", reference="cat notes.txt",
             files={"notes.txt": "x\n"})  # fmt: skip
    assert renamed(t, random.Random(0)) is None
    assert (
        renamed(Task(id="y", kind="bash", family="f", broken="ls -l", reference="ls"), random.Random(0))
        is None
    )


def test_novel_copies_behave_and_are_deterministic():
    sb = Sandbox(Limits(timeout_s=5))
    fams = ["file-typo", "cmd-typo", "wrong-file", "py-key", "py-type-call"]
    tasks = generate(4 * len(fams), "dev", seed=3, families=fams, sandbox=sb)
    copies = novel_tasks(tasks, sb, seed=0)
    assert len(copies) >= len(tasks) // 2 and {c.family for c in copies} >= {"file-typo", "py-key"}
    assert [c.to_json() for c in copies] == [c.to_json() for c in novel_tasks(tasks, sb, seed=0)]
    v = Verifier(sb)
    for c, fixed, broken in zip(
        copies,
        v.verify_many([(c, c.reference or c.solution) for c in copies]),
        v.verify_many([(c, c.broken) for c in copies]),
    ):
        assert fixed.passed and not broken.passed and c.error, c.id
        original = next(t for t in tasks if f"{t.id}-novel" == c.id)
        assert c.broken != original.broken or c.files != original.files  # something was renamed


def test_half_the_python_copies_begin_with_silent_filler():
    prog = 'name = "ada"\nprint(name.upper())\n'
    t = Task(id="f", kind="python", family="py-attr", broken=prog, reference=prog)
    grown = [renamed(t, random.Random(s)) for s in range(40)]
    longer = [r for r in grown if len(r.broken.splitlines()) > 2]
    assert 10 <= len(longer) <= 30 and all(r.broken == r.reference for r in grown)
    for r in grown:  # the program itself is the last two lines, renamed
        assert re.search(r'\n?([a-z]+) = "([a-z]+)"\nprint\(\1\.upper\(\)\)\n$', r.broken), r.broken
        assert "print" not in r.broken.rsplit("\n", 3)[0]  # the filler prints nothing

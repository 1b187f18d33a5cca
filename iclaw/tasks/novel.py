"""Tasks with made-up names: the same mistake and the same fix, with the pool words renamed to words nobody has.

The families draw file names, identifiers and contents from a few hundred pool words (pools.py), so a policy
can pass every generated split by knowing those words, while a user's files have names it has never seen
(`shopping.txt`, `class Account`). `renamed(task, rng)` renames every pool word of a task -- in its command,
fix, test, file names and contents alike, lower, Title and UPPER forms together -- to a made-up word, so
the task still holds together; `novel_tasks` keeps the renamed tasks that still behave, checked exactly as
the generator checks its own (the broken command fails, the fix passes, doing nothing does not).

A word keeps its name where renaming it could change what a command or program means: shell commands,
Python keywords, builtins, modules and methods, a word right after `.`, `-`, `=`, `\\` or `__` (an attribute,
a flag, an option's value, an escape) or right before `=` (a keyword argument). A task where a renamed word
sits next to a near-miss of itself (`noets.txt` beside `notes.txt`: the typo is the mistake) is skipped,
since renaming one and not the other would change the mistake. Half the Python copies also begin with one to
three statements of made-up code that print nothing (`filler`), so that programs are longer than the
families write them.
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
import sys
from dataclasses import replace

from iclaw.tasks import pools
from iclaw.tasks.families.cmd_typo import COMMANDS as CMD_TYPO
from iclaw.tasks.task import Task

POOL = frozenset(pools.WORDS) | frozenset(pools.NAMES)
# pool words that are also commands on a Debian system, the files Python tasks run as, and file extensions
COMMANDS = frozenset(
    "date file free gold head join last link make more nice node size sort tail test time view wall main "
    "copy find help list next pass read".split()
) | frozenset(c for c, *_ in CMD_TYPO)
EXTS = frozenset(pools.TEXT_EXTS) | {"py", "sh", "json", "txt", "gz", "tar", "zip", "bak", "html", "pdf"}
_METHODS = {m for t in (str, list, dict, set, int, float, bytes, tuple) for m in dir(t)}
PROTECTED = (
    COMMANDS
    | EXTS
    | frozenset(keyword.kwlist)
    | frozenset(dir(builtins))
    | frozenset(_METHODS)
    | frozenset(sys.stdlib_module_names)
)
RUN = re.compile(r"(?<![A-Za-z])[A-Za-z]+(?![A-Za-z])")  # `notes_old`: `notes` and `old`
# the names a Python program binds (assignments, loops, defs and their parameters, classes, `as`): its own words
BOUND = re.compile(
    r"^\s*([\w, ]+?)\s*=(?!=)|\bfor\s+([\w, ]+?)\s+in\b|\b(?:def|class)\s+(\w+)\s*\(?([^)]*)|\bas\s+(\w+)",
    re.M,
)
ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gl gr pl pr sk sl sn st tr th sh ch".split()
VOWELS = "a e i o u a e i o ai ea oo ou".split()
CODAS = ["", "", "", "n", "r", "s", "l", "t", "k", "m", "nd", "st", "x"]


def made_up(rng: random.Random) -> str:
    """A pronounceable word of 3 to 10 letters, such as `tramos` or `plixen`."""
    while True:
        w = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.randint(1, 3)))
        w += rng.choice(CODAS)
        if 3 <= len(w) <= 10 and w not in POOL and w not in PROTECTED:
            return w


FILLERS = (
    "{a} = {n}",
    '{a} = "{w} {v}"',
    "{a} = [{n}, {m}, {n}{m}]",
    "# {w} {v} {u}",
    "def {a}({b}):\n    return {b} * {n}",
    '{a} = {{"{w}": {n}, "{v}": {m}}}',
    "{a} = {n}\n{b} = {a} + {m}",
)


def filler(rng: random.Random) -> str:
    """One to three statements of made-up code that print nothing: a Python task's program grows longer,
    as a user's programs are, and the fix still changes only what it changed."""
    parts = []
    for _ in range(rng.randint(1, 3)):
        w = {k: made_up(rng) for k in "abwvu"}
        parts.append(rng.choice(FILLERS).format(n=rng.randint(2, 99), m=rng.randint(2, 9), **w))
    return "\n".join(parts) + "\n"


def _texts(t: Task) -> list[str]:
    """Everything of a task the renaming touches (not `error`: the broken command's output is run again)."""
    return [t.broken, t.reference or "", t.test or "", t.solution or "", t.look or ""] + [
        s for path, body in t.files.items() for s in (path, body)
    ]


def _bound(t: Task) -> frozenset[str]:
    """The lowercase names of three letters or more a Python task's programs bind."""
    if t.kind != "python":
        return frozenset()
    found = set()
    for prog in (t.broken, t.reference or "", t.solution or ""):
        for m in BOUND.finditer(prog):
            found.update(re.findall(r"[A-Za-z]+", " ".join(g for g in m.groups() if g)))
    return frozenset(w for w in found if len(w) >= 3 and w.islower())


def _renamable(text: str, m: re.Match, own: frozenset[str] = frozenset()) -> bool:
    before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 2]
    w = m.group()
    return (
        (w.lower() in POOL or w in own)
        and w.lower() not in PROTECTED
        and w in (w.lower(), w.capitalize(), w.upper())
        and before not in (".", "-", "=", "\\")
        and text[m.start() - 2 : m.start()] != "__"  # `__name__`
        and not (after.startswith("=") and after != "==")
    )


def _near(a: str, b: str) -> bool:
    """One typo apart (a letter dropped, added, changed, or two swapped), and not equal."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def renamed(task: Task, rng: random.Random) -> Task | None:
    """The task with its pool words renamed consistently (see the module docstring), its error cleared for
    a fresh run; None when it has no pool word to rename or a near-miss of one."""
    texts, own = _texts(task), _bound(task)
    words, others = set(), set()
    for text in texts:
        for m in RUN.finditer(text):
            w = m.group().lower()
            if _renamable(text, m, own):
                words.add(w)
            elif (
                len(w) >= 3
                and w not in PROTECTED
                and w not in POOL
                and text[m.start() - 1 : m.start()] != "."
            ):
                others.add(w)
    if not words or any(_near(o, w) for o in others for w in words):
        return None
    new: dict[str, str] = {}
    for w in sorted(words):
        while (n := made_up(rng)) in new.values() or n in others:
            pass
        new[w] = n

    def sub(text: str) -> str:
        def one(m: re.Match) -> str:
            if not _renamable(text, m, own):
                return m.group()
            w, n = m.group(), new[m.group().lower()]
            return n.upper() if w.isupper() and len(w) > 1 else n.capitalize() if w[0].isupper() else n

        return RUN.sub(one, text)

    def opt(text: str | None) -> str | None:
        return None if text is None else sub(text)

    files = {sub(path): sub(body) for path, body in task.files.items()}
    if len(files) != len(task.files):
        return None
    top = filler(rng) if task.kind == "python" and rng.random() < 0.5 else ""

    def prog(text: str | None) -> str | None:
        return None if text is None else top + sub(text)

    return replace(
        task,
        id=f"{task.id}-novel",
        broken=prog(task.broken),
        reference=prog(task.reference),
        test=opt(task.test),
        solution=prog(task.solution),
        look=opt(task.look),
        files=files,
        error=None,
        broken_exit=None,
    )


def novel_tasks(tasks: list[Task], sandbox, seed: int) -> list[Task]:
    """A renamed copy of each task that has one and still behaves (checked as the generator checks)."""
    from iclaw.tasks.generate import keep_behaving

    copies = [c for t in tasks if (c := renamed(t, random.Random(f"novel:{seed}:{t.id}"))) is not None]
    return keep_behaving(copies, sandbox)

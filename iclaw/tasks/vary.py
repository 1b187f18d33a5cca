"""Varied fixtures: a task's files with other contents, so that an output copied from one run cannot pass another.

The verifier (verifier.py) runs a reference task's reference in its fixture AND in a varied copy of it. Where
the two outputs differ, the output follows the files, and a candidate must match the reference in both copies:
`printf 'milk\\neggs\\n'` after a look at shopping.txt passes the first and fails the second.

A variation must be safe: the reference still works in it, the way it did (same exit code), and a fix that is
right on the real files is right on the varied ones. The generic one, `vary_text`, used for every family that
says nothing, keeps every structure a program could depend on and changes the data:

    every lowercase word renamed, consistently across the fixture (equal words stay equal: uniq, sort -u,
    grep and join agree as before), except the words the task's commands or file names mention (a `grep apple`
    still finds its apples); numbers, punctuation, capitalised and UPPER words kept; one more line appended, a
    copy of one that names a command's word (a grep then selects one line more), else of the first, with its
    other words renamed afresh (a new item, not a duplicate: wc -l, tail, sums change); the header line of a
    .csv / .tsv kept (DictReader keys); JSON kept valid (string values renamed, keys kept, every list one
    element longer); programs (.py, .sh) and empty files left alone.

A family whose fixtures need another treatment declares `Family.vary(files, rng) -> files` (family.py);
`no_variation` is the explicit opt-out. A task from no known family (hand-written, mined) gets the generic one.
"""

from __future__ import annotations

import json
import random
import re

from iclaw.tasks import pools
from iclaw.tasks.task import Task

WORD = re.compile(r"\b[a-z]+\b")  # not inside identifiers: notes_old, x1 and data-2 stay whole
PROGRAMS = (".py", ".sh")  # a renamed word in a program is a changed program, not changed data
HEADERS = (".csv", ".tsv")  # the first line names the columns a program reads by


def no_variation(files: dict[str, str], rng: random.Random) -> dict[str, str]:
    """The opt-out: the fixture as it is (the verifier then checks the task in one copy only)."""
    return dict(files)


def command_words(task: Task) -> frozenset[str]:
    """The letter runs of the task's commands and file names, lowercased: a variation keeps what they name."""
    text = " ".join([task.broken, task.reference or "", task.test or "", task.solution or "", *task.files])
    return frozenset(re.findall(r"[a-z]+", text.lower()))


def vary_text(
    files: dict[str, str], rng: random.Random, keep: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The generic variation (see the module docstring). A word keeps its name if it is in `keep`, or holds
    a piece of `keep` that is no word of the files (a grep pattern such as `hin` or `^bo`)."""
    used = {w for text in files.values() for w in WORD.findall(text)}
    pieces = [k for k in keep - used if len(k) > 1]
    kept = {w for w in used if w in keep or any(k in w for k in pieces)}
    fresh = [w for w in pools.WORDS if w not in used and w not in keep]
    rng.shuffle(fresh)
    renamed = sorted(used - kept)
    rename = dict(zip(renamed, fresh))  # one bijection for the whole fixture
    # the added line (or JSON element) gets names of its own, so it is a new item, not a duplicate
    # (`xargs mkdir` of a list must not meet a name twice); past the pool's end it shares the fixture's
    again = {**rename, **dict(zip(renamed, fresh[len(rename) :]))}

    def sub(s: str, names: dict[str, str] = rename) -> str:
        return WORD.sub(lambda m: names.get(m.group(), m.group()), s)

    def sub_again(s: str) -> str:
        return sub(s, again)

    return {path: _vary_file(path, text, sub, sub_again, rng, kept) for path, text in files.items()}


def _vary_file(path: str, text: str, sub, sub_again, rng: random.Random, keep: set[str]) -> str:
    if path.endswith(PROGRAMS) or not text.strip():
        return text
    if path.endswith(".json") and (varied := _vary_json(text, sub, sub_again)) is not None:
        return varied
    lines = text.splitlines()
    head = lines[:1] if path.endswith(HEADERS) and any(c in lines[0] for c in ",;\t") else []
    data = lines[len(head) :]
    if not data:
        return text
    # one more line: a copy of one a command names a word of (what a grep selects), else of the first one
    named = [line for line in data if set(WORD.findall(line)) & keep]
    added = sub_again(rng.choice(named) if named else data[0])
    out = "\n".join(head + [sub(line) for line in data] + [added])
    return out + "\n" if text.endswith("\n") else out


def _vary_json(text: str, sub, sub_again) -> str | None:
    """The file with its data varied and its structure kept, or None if it is not JSON (then it is text)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None

    def walk(v, sub=sub):
        if isinstance(v, str):
            return sub(v)
        if isinstance(v, list):  # one element more: len(), sums and v[-1] change
            return [walk(x) for x in v] + [walk(x, sub_again) for x in v[:1]]
        if isinstance(v, dict):
            return {k: walk(x, sub) for k, x in v.items()}  # keys are what programs index by
        return v

    return dump_json(walk(data), like=text)


def dump_json(data: object, like: str) -> str:
    """`data` as JSON laid out as the text `like` was (indented or on one line, a final newline or not)."""
    indent = 2 if like.lstrip()[:2] in ("{\n", "[\n") else None
    return json.dumps(data, indent=indent) + ("\n" if like.endswith("\n") else "")


def varied_files(task: Task, seed: str) -> dict[str, str] | None:
    """The task's fixture varied as its family declares (else generically), or None where nothing changes.
    `seed` fixes the draw, so a task's varied copy is the same on every run."""
    from iclaw.tasks.families import FAMILIES  # here: the families import this package's modules

    if not task.files:
        return None
    rng = random.Random(seed)
    family = FAMILIES.get(task.family)
    if family is not None and family.vary is not None:
        files = family.vary(dict(task.files), rng)
    else:
        files = vary_text(task.files, rng, keep=command_words(task))
    return None if files == task.files else files

"""spaced-name: a file or directory name with spaces, typed without quotes, so the shell splits it in two.

    fixture: "shopping list.txt"     broken: cat shopping list.txt
    error:   cat: shopping: No such file or directory / cat: list.txt: No such file or directory
    reference: cat "shopping list.txt"

The error names the pieces the name was split into, and the request shows them side by side: the fix quotes
them back together. For `cd my project && ls` bash says "cd: too many arguments"; the same fix applies.
Source: bash word splitting (a shell error: "No such file or directory", "cd: too many arguments").
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

LEADS = ["my", "old", "new", "final", "draft", "shared", "team", "copy of", "meeting", "project", "home"]
EXTS = ["txt", "md", "csv", "log"]
COMMANDS = [
    "cat FILE",
    "wc -l FILE",
    "head -n K FILE",
    "tail -n K FILE",
    "sort FILE",
    "sort -r FILE",
    "grep W FILE",
    "nl FILE",
    "tac FILE",
    "wc -w FILE",
]
AFTER_CD = ["ls", "cat FILE", "wc -l FILE", "head -n K FILE", "sort FILE"]


def spaced(rng: random.Random) -> str:
    """Two or three words joined by spaces, sometimes capitalised or with a year: 'my notes', 'Old Photos 2023'."""
    words = [rng.choice(LEADS)] if rng.random() < 0.5 else []
    words += rng.sample(pools.WORDS, 2 if not words else 1 if " " in words[0] else rng.randint(1, 2))
    if rng.random() < 0.25:
        words.append(str(rng.randint(2019, 2026)))
    if rng.random() < 0.3:
        words = [w.capitalize() for w in words]
    return " ".join(words)


def make(rng: random.Random) -> Instance:
    lines = pools.lines(rng)
    content = "\n".join(lines) + "\n"
    k, w = str(rng.randint(1, 3)), rng.choice(lines)
    files = {pools.filename(rng): pools.text_content(rng) for _ in range(rng.randint(0, 2))}
    if rng.random() < 0.3:  # a directory with spaces: cd gets two arguments
        d, inner = spaced(rng), pools.filename(rng, EXTS)
        files[f"{d}/{inner}"] = content
        after = rng.choice(AFTER_CD).replace("K", k).replace("W", w).replace("FILE", inner)
        broken, reference = f"cd {d} && {after}", f'cd "{d}" && {after}'
    else:
        name = f"{spaced(rng)}.{rng.choice(EXTS)}"
        if any(piece in files for piece in name.split()):
            raise ValueError("a piece of the split name is another fixture file")
        files[name] = content
        cmd = rng.choice(COMMANDS).replace("K", k).replace("W", w)
        broken, reference = cmd.replace("FILE", name), cmd.replace("FILE", f'"{name}"')
    return Instance(broken=broken, reference=reference, files=dict(sorted(files.items())))


FAMILY = Family(
    name="spaced-name",
    kind="bash",
    make=make,
    description='a name with spaces typed unquoted (cat my notes.txt -> cat "my notes.txt")',
    error_mentions=("No such file or directory", "too many arguments"),
    source="bash: word splitting (No such file or directory; cd: too many arguments)",
)

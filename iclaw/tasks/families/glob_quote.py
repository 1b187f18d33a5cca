"""glob-quote: a wildcard quoted where the shell should expand it, bare where it should not, or split by a space.

    cat "*.txt"                 cat: '*.txt': No such file or directory              -> cat *.txt
    find . -name *.log          find: paths must precede expression: `b.log'         -> find . -name "*.log"
    wc -l *.{csv, md}           wc: '*.{csv,': No such file or directory             -> wc -l *.{csv,md}

Quotes stop the shell's glob, so the command looks for a file literally named *.txt; find's -name wants the
pattern itself, so it must be quoted (unquoted, the shell expands it to the file names here); a space inside
braces makes two words. Each error quotes the word that went wrong.
Source: bash globbing (No such file or directory); find "paths must precede expression".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

EXTS = ["txt", "md", "csv", "log", "json", "cfg", "ini"]
COMMANDS = [
    "cat G",
    "wc -l G",
    "ls G",
    "head -n 1 G",
    "ls -1 G",
    "grep -c W G",
    "wc -w G",
    "tail -n 1 G",
    "sort G",
    "sort -u G",
    "grep -l W G",
    "grep -h W G",
    "wc -c G",
    "sort -r G",
    "nl G",
]


def fixture(rng: random.Random, exts: list[str], n_min: int, prefix: str) -> tuple[dict[str, str], list[str]]:
    """n_min..3 files `prefix...ext` per extension and 1-2 others; returns (files, the words in the matches)."""
    files: dict[str, str] = {}
    words: list[str] = []
    for ext in exts:
        for _ in range(rng.randint(n_min, 3)):
            lines = pools.lines(rng)
            files[f"{prefix}{pools.stem(rng)}.{ext}"] = "\n".join(lines) + "\n"
            words += lines
    for _ in range(rng.randint(1, 2)):  # another extension, or the same one without the prefix
        ext = rng.choice([e for e in EXTS if e not in exts]) if not prefix or rng.random() < 0.5 else exts[0]
        files[f"{pools.stem(rng)}.{ext}"] = pools.text_content(rng)
    if sum(1 for f in files if f.startswith(prefix) and f.rsplit(".", 1)[1] in exts) < n_min * len(exts):
        raise ValueError("two drawn names collided")
    return dict(sorted(files.items())), words


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(3)
    prefix = rng.choice(pools.WORDS) + rng.choice(["_", "-"]) if rng.random() < 0.5 else ""
    q = rng.choice(['"', "'"])
    if shape == 1:  # find: two or more matches here, one more in a subdirectory
        ext = rng.choice(EXTS)
        files, _ = fixture(rng, [ext], 2, prefix)
        files[f"{rng.choice(['docs', 'old', 'sub', 'data', 'src'])}/{prefix}{pools.stem(rng)}.{ext}"] = "x\n"
        tail = rng.choice(["", "", " -type f", " -print"])
        pat = f"{prefix}*.{ext}"
        return Instance(
            broken=f"find . -name {pat}{tail}",
            reference=f"find . -name {q}{pat}{q}{tail}",
            files=dict(sorted(files.items())),
        )
    exts = rng.sample(EXTS, 2 if shape == 2 else 1)
    files, words = fixture(rng, exts, 1, prefix)
    cmd = rng.choice(COMMANDS).replace("W", rng.choice(words))
    if shape == 2:  # a space after the comma in a brace list
        good, bad = f"{prefix}*.{{{exts[0]},{exts[1]}}}", f"{prefix}*.{{{exts[0]}, {exts[1]}}}"
    else:  # the glob quoted
        good = f"{prefix}*.{exts[0]}"
        bad = f"{q}{good}{q}"
    return Instance(broken=cmd.replace("G", bad), reference=cmd.replace("G", good), files=files)


FAMILY = Family(
    name="glob-quote",
    kind="bash",
    make=make,
    description='a wildcard quoted, left bare for find, or split by a space (cat "*.txt" -> cat *.txt)',
    error_mentions=("No such file or directory", "paths must precede", "cannot access"),
    source="bash: globbing; find: paths must precede expression",
)

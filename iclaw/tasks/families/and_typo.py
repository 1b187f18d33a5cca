"""and-typo: `&&`, `||` or `;` typed with a space inside or twice, so bash stops on a syntax error.

    mkdir -p out & & ls        syntax error near unexpected token `&'    -> mkdir -p out && ls
    cd docs && && cat a.txt    syntax error near unexpected token `&&'   -> cd docs && cat a.txt
    grep -q x f || || echo no  syntax error near unexpected token `||'   -> grep -q x f || echo no

Nothing runs (bash parses the whole line first); the error names the stray token and the fix is the one
operator the line meant. (`| |` is left to pipe.py, where it means a single pipe.)
Source: bash "syntax error near unexpected token `&'".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

EXTS = ["txt", "md", "csv", "log"]
TYPOS = {"&&": ["& &", "&& &&", "&&&", "& &&"], "||": ["|| ||", "||||"], ";": ["; ;", ";;;"]}


def make(rng: random.Random) -> Instance:
    name, lines = pools.filename(rng, EXTS), pools.lines(rng)
    d, w = rng.choice(pools.WORDS), rng.choice(lines)
    missing = rng.choice([x for x in pools.WORDS if x not in lines])
    files = {name: "\n".join(lines) + "\n"}
    out = f"{d}.txt"
    pairs = [  # (operator, first command, second command): the second prints something
        ("&&", f"mkdir -p {d}", "ls"),
        ("&&", f"mkdir -v {d}", f"cp {name} {d}/"),
        ("&&", f"cp {name} {out}", f"cat {out}"),
        ("&&", f"sort {name} > {out}", f"cat {out}"),
        ("&&", f"grep -q {w} {name}", "echo found"),
        ("&&", f"test -f {name}", f"wc -l {name}"),
        ("&&", f"touch {out}", "ls"),
        ("&&", f"cd {d}", "ls"),
        ("||", f"grep {missing} {name}", "echo not found"),
        ("||", f"test -d {d}", f"mkdir -v {d}"),
        ("||", f"cat {out}", "echo no file"),
        (";", f"echo {w}", f"wc -l {name}"),
        (";", f"sort {name}", "echo done"),
        (";", "ls", f"head -n 2 {name}"),
    ]
    op, first, second = rng.choice(pairs)
    if first.startswith("cd "):
        files[f"{d}/{pools.filename(rng, EXTS)}"] = pools.text_content(rng)
    if rng.random() < 0.3:
        files[pools.filename(rng, EXTS)] = pools.text_content(rng)
    bad = rng.choice(TYPOS[op])
    return Instance(
        broken=f"{first} {bad} {second}",
        reference=f"{first} {op} {second}",
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="and-typo",
    kind="bash",
    make=make,
    description="&&, || or ; typed with a space or twice (mkdir out & & ls -> mkdir out && ls)",
    error_mentions=("syntax error near unexpected token",),
    source="bash: syntax error near unexpected token `&'",
)

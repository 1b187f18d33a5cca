"""redirect (outcome-only): a redirection typed wrong; a test checks the file it was meant to write.

    sort names.txt > > sorted.txt     syntax error near unexpected token `>'   -> sort names.txt >> sorted.txt
    echo done >> > log.txt            syntax error near unexpected token `>'   -> echo done >> log.txt
    sort names.txt < sorted.txt       sorted.txt: No such file or directory    -> sort names.txt > sorted.txt
    tr a-z A-Z names.txt > up.txt     tr: extra operand 'names.txt'            -> tr a-z A-Z < names.txt > up.txt

A stray space splits `>>` in two (the fix joins them: append, which is also right when the file is new); `<`
points the wrong way at a file that does not exist yet; tr reads only stdin, so its file needs `<`. The test
compares the output file with the content the intended command writes (held in the test as printf lines).
Source: bash redirection syntax errors; coreutils tr "extra operand".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import content_test
from iclaw.tasks.family import Family, Instance

OUT_WORDS = ["out", "sorted", "result", "output", "top", "clean", "new", "copy", "final", "saved"]
# command template -> what it prints for the input lines (K a count, W a word of the file)
COMMANDS = {
    "sort FILE": sorted,
    "sort -r FILE": lambda ls: sorted(ls, reverse=True),
    "sort -u FILE": lambda ls: sorted(set(ls)),
    "uniq FILE": lambda ls: [x for i, x in enumerate(ls) if i == 0 or ls[i - 1] != x],
    "cat FILE": list,
    "tac FILE": lambda ls: ls[::-1],
    "head -n K FILE": None,  # filled in make(): they depend on K / W
    "tail -n K FILE": None,
    "grep W FILE": None,
}


def out_name(rng: random.Random, src: str) -> str:
    word = rng.choice(OUT_WORDS)
    return rng.choice(
        [f"{word}.txt", f"{src.rsplit('.', 1)[0]}_{word}.txt", f"{word}{rng.randint(1, 9)}.txt"]
    )


def make(rng: random.Random) -> Instance:
    src, lines = pools.filename(rng, ["txt", "list", "log", "md"]), pools.lines(rng)
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines)), rng.choice(lines))  # a duplicate, so uniq / sort -u differ
    files = {src: "\n".join(lines) + "\n"}
    out = out_name(rng, src)
    shape = rng.randrange(4)
    if shape == 3:  # tr reads stdin only
        up = rng.random() < 0.6
        tr = (
            rng.choice(["tr a-z A-Z", "tr '[:lower:]' '[:upper:]'"]) if up else "tr -d " + rng.choice("aeiou")
        )
        want = [x.upper() for x in lines] if up else [x.replace(tr[-1], "") for x in lines]
        return Instance(
            broken=f"{tr} {src} > {out}",
            files=files,
            test=content_test(out, want),
            solution=f"{tr} < {src} > {out}",
        )
    k, w = rng.randint(1, 3), rng.choice(lines)
    tmpl = rng.choice(sorted(COMMANDS))
    fn = (
        COMMANDS[tmpl]
        or {
            "head": lambda ls: ls[:k],
            "tail": lambda ls: ls[-k:],
            "grep": lambda ls: [x for x in ls if w in x],
        }[tmpl.split()[0]]
    )
    cmd = tmpl.replace("K", str(k)).replace("W", w).replace("FILE", src)
    want = fn(lines)
    if shape == 2:  # `<` for `>`: the output file does not exist yet
        return Instance(
            broken=f"{cmd} < {out}", files=files, test=content_test(out, want), solution=f"{cmd} > {out}"
        )
    if rng.random() < 0.4:  # append a line, the everyday use of >>
        cmd, want = f"echo {w}", [w]
    old = pools.lines(rng, rng.randint(1, 3)) if rng.random() < 0.6 else []
    if old:
        files[out] = "\n".join(old) + "\n"
    return Instance(
        broken=f"{cmd} {rng.choice(['> >', '>> >'])} {out}",
        files=dict(sorted(files.items())),
        test=content_test(out, old + want),
        solution=f"{cmd} >> {out}",
    )


FAMILY = Family(
    name="redirect",
    kind="bash",
    make=make,
    description="a redirection typed wrong (> >, < for >, tr FILE); a test checks the written file",
    outcome_only=True,
    source="bash: syntax error near unexpected token `>'; tr: extra operand",
)

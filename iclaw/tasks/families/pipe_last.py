"""pipe-last: the last stage of a pipeline is what fails. Two shapes pipe.py does not have:

    grep kiwi fruits.txt wc -l      grep: wc: No such file or directory   -> grep kiwi fruits.txt | wc -l
    ls *.log | rm -v                rm: missing operand                   -> ls *.log | xargs rm -v

With the `|` left out the producer reads the consumer's name as a file, and the error names it (pipe.py keeps
its missing-pipe shape to consumers without options; here the producer is grep or sort, which take any extra
word as a file, so the error names the consumer however many options follow). rm, mkdir and rmdir take
their operands as arguments, not on stdin: xargs turns the piped lines into arguments.
Source: grep/sort "No such file or directory" on a command name; coreutils "missing operand" (use xargs).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

PRODUCERS = ["grep W FILE", "grep -v W FILE", "grep -i W FILE", "sort FILE", "sort -r FILE", "sort -u FILE"]
CONSUMERS = ["wc -l", "head -n K", "tail -n K", "uniq", "uniq -c", "sort", "sort -r", "nl", "tac", "wc -w"]
JUNK_EXTS = ["log", "tmp", "bak", "old", "out"]


def missing_pipe(rng: random.Random) -> Instance:
    fname, lines = pools.filename(rng, ["txt", "list", "md", "log"]), pools.lines(rng)
    left = rng.choice(PRODUCERS).replace("W", rng.choice(lines)).replace("FILE", fname)
    right = rng.choice(CONSUMERS).replace("K", str(rng.randint(1, 3)))
    if left.startswith("sort") and right.split()[0] in ("sort", "wc"):
        right = rng.choice(["uniq", "uniq -c", "nl", "tac"])  # sort would take -l / -w / -r as its own
    return Instance(
        broken=f"{left} {right}", reference=f"{left} | {right}", files={fname: "\n".join(lines) + "\n"}
    )


def no_xargs(rng: random.Random) -> Instance:
    """Names on stdin for a command that wants arguments; -v (or a final ls) prints what it did."""
    ext = rng.choice(JUNK_EXTS)
    keep_exts = [e for e in pools.TEXT_EXTS if e != ext]
    files = {pools.filename(rng, keep_exts): pools.text_content(rng) for _ in range(rng.randint(1, 2))}
    if rng.random() < 0.5:  # remove the junk files
        files.update({f"{pools.stem(rng)}.{ext}": pools.text_content(rng) for _ in range(rng.randint(1, 3))})
        left = rng.choice([f"ls *.{ext}", f"ls *.{ext} | sort", f"find . -name '*.{ext}' | sort"])
        right = rng.choice(["rm -v", "rm -rv"])
    else:  # make the directories (or files) a list file names
        listing = pools.filename(rng, ["txt", "list"])
        files[listing] = "\n".join(rng.sample(pools.WORDS, rng.randint(1, 3))) + "\n"
        left, right = f"cat {listing}", rng.choice(["mkdir -v", "mkdir -pv", "touch && ls", "mkdir && ls"])
    return Instance(
        broken=f"{left} | {right}", reference=f"{left} | xargs {right}", files=dict(sorted(files.items()))
    )


def make(rng: random.Random) -> Instance:
    return missing_pipe(rng) if rng.random() < 0.5 else no_xargs(rng)


FAMILY = Family(
    name="pipe-last",
    kind="bash",
    make=make,
    description="the pipe before the last command is missing, or the last one needs xargs (ls *.log | xargs rm -v)",
    error_mentions=("missing", "No such file or directory", "extra operand"),
    source="bash: pipeline; coreutils 'missing operand' (xargs)",
)

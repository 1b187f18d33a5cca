"""missing-space: no space between a command and what follows, so bash looks for a command of that name.

    sort-r names.txt          bash: line 1: sort-r: command not found       -> sort -r names.txt
    cd logs && cd.. && ls     bash: line 1: cd..: command not found         -> cd logs && cd .. && ls
    echo$(cat todo.txt)       bash: line 1: echomilk: command not found     -> echo $(cat todo.txt)
    python3main.py            bash: line 1: python3main.py: command not found  -> python3 main.py

The fix is the space the request is missing: the command name is a prefix of the unknown word.
Sources: thefuck cd_parent, missing_space_before_subshell; bash "command not found".
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, list_file
from iclaw.tasks.family import Family, Instance

# (command, glued, rest): the broken line glues an option (or the first argument) to the command.
# @F a list file, @W a word of it, @D a directory, @K 1-3.
# fmt: off
GLUED = [
    ("ls", "-a", ""), ("ls", "-1", ""), ("ls", "-R", ""), ("ls", "-r", ""), ("ls", "-A", ""),
    ("ls", "-F", ""), ("cat", "-n", "@F"), ("cat", "-A", "@F"), ("sort", "-r", "@F"), ("sort", "-u", "@F"),
    ("uniq", "-c", "@F"), ("head", "-n", "@K @F"), ("head", "-@K", "@F"), ("tail", "-n", "@K @F"),
    ("tail", "-@K", "@F"), ("wc", "-l", "@F"), ("wc", "-w", "@F"), ("wc", "-c", "@F"),
    ("grep", "-i", "@W @F"), ("grep", "-n", "@W @F"), ("grep", "-c", "@W @F"), ("grep", "-v", "@W @F"),
    ("nl", "-ba", "@F"), ("cut", "-c1-3", "@F"), ("du", "-b", "@F"), ("tac", "-b", "@F"), ("rev", "@F", ""),
    ("mkdir", "-pv", "@D/@W"), ("cp", "-v", "@F @W.bak"), ("rm", "-v", "@F"), ("echo", "@W", ""),
    ("cat", "@F", ""), ("sort", "@F", ""), ("tr", "a-z", "A-Z < @F"), ("sed", "-n", "@Kp @F"),
]
# fmt: on


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    f, lines = list_file(rng, taken)
    d = dir_name(rng, taken)
    w = rng.choice(lines)
    files = {f: body(lines), f"{d}/{pools.filename(rng)}": body(pools.lines(rng))}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    shape = rng.randrange(10)
    if shape < 6:
        cmd, glued, rest = rng.choice(GLUED)
        fixed, broken = f"{cmd} {glued} {rest}".strip(), f"{cmd}{glued} {rest}".strip()
    elif shape < 8:  # cd..
        after = rng.choice(["ls", "ls", "ls -1", f"cat {f}", f"wc -l {f}"])
        fixed = f"cd {d} && cd .. && {after}"
        broken = fixed.replace("cd ..", "cd..")
    elif shape == 8:  # echo$(...)
        fixed = f"echo {rng.choice(['$(cat @F)', '$(wc -l < @F)', '$(ls)', '$(head -n 1 @F)', '$(sort @F)'])}"
        broken = fixed.replace("echo ", "echo")
    else:  # python3main.py
        script = pools.stem(rng) + ".py"
        files[script] = f"print({', '.join(repr(x) for x in pools.lines(rng, 2))})\n"
        fixed = f"python3 {script}"
        broken = f"python3{script}"
    subs = {"@F": f, "@W": w, "@D": d, "@K": str(rng.randint(1, 3))}
    for k, v in subs.items():
        fixed, broken = fixed.replace(k, v), broken.replace(k, v)
    return Instance(broken=broken, reference=fixed, files=dict(sorted(files.items())))


FAMILY = Family(
    name="missing-space",
    kind="bash",
    make=make,
    description="no space after the command (sort-r, cd.., echo$(...)) -> insert it",
    accept=lambda error, exit_code: exit_code == 127 and "command not found" in error,
    source="thefuck: cd_parent, missing_space_before_subshell",
)

"""win-habit: a Windows (cmd.exe or PowerShell) command typed into bash; the fix is the Unix command.

    broken: type notes.txt              error: bash: line 1: type: notes.txt: not found   reference: cat notes.txt
    broken: findstr /n milk list.txt    error: findstr: command not found       reference: grep -n milk list.txt
    broken: copy a.txt a_old.txt && ls  error: copy: command not found    reference: cp a.txt a_old.txt && ls
    broken: cat docs\\notes.txt          error: cat: docsnotes.txt: No such file or directory
                                                                              reference: cat docs/notes.txt

People who also work on Windows carry its commands, its switches (/i, /s) and its backslash paths over. Only
habits that really fail in bash are here: `dir` and `more` exist on Debian, and `mkdir a\\b` succeeds
(making `ab`), so none of those. A command that prints nothing is followed by `&& ls` (or `ls DIR`), so the
reference's output shows that it worked.
Source: cmd.exe / PowerShell vs coreutils (command not found; a backslash path loses its separators).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, list_file
from iclaw.tasks.family import Family, Instance

# (broken, reference); @F a list file, @G another, @D a directory holding @E, @W a word of @F, @N a new
# name, @P a python script, @K 1-3, @C a command name for where/which
HABITS = [
    ("type @F", "cat @F"),
    ("type @D\\@E", "cat @D/@E"),
    ("findstr @W @F", "grep @W @F"),
    ("findstr /i @W @F", "grep -i @W @F"),
    ("findstr /n @W @F", "grep -n @W @F"),
    ("findstr /v @W @F", "grep -v @W @F"),
    ("findstr /c @W @F", "grep -c @W @F"),
    ('find "@W" @F', "grep @W @F"),
    ('find /c "@W" @F', "grep -c @W @F"),
    ("where @C", "which @C"),
    ("copy @F @N && ls", "cp @F @N && ls"),
    ("copy @F @D && ls @D", "cp @F @D && ls @D"),
    ("xcopy @D @N && ls @N", "cp -r @D @N && ls @N"),
    ("move @F @D && ls @D", "mv @F @D && ls @D"),
    ("ren @F @N && ls", "mv @F @N && ls"),
    ("del @F && ls", "rm @F && ls"),
    ("erase @G && ls", "rm @G && ls"),
    ("md @N && ls", "mkdir @N && ls"),
    ("rd /s /q @D && ls", "rm -r @D && ls"),
    ("sort /r @F", "sort -r @F"),
    ("py @P", "python3 @P"),
    ("cat @D\\@E", "cat @D/@E"),
    ("head -n @K @D\\@E", "head -n @K @D/@E"),
    ("wc -l @D\\@E", "wc -l @D/@E"),
    ("ls @D\\@E", "ls @D/@E"),
    ("cd @D && cat ..\\@F", "cd @D && cat ../@F"),
    ("Get-Content @F", "cat @F"),
    ("Get-Content @F -Head @K", "head -n @K @F"),
    ("Get-Content @F -Tail @K", "tail -n @K @F"),
    ("cat @F | Select-String @W", "grep @W @F"),
    ("Select-String @W @F", "grep -n @W @F"),
    ("Copy-Item @F @N && ls", "cp @F @N && ls"),
    ("Remove-Item @F && ls", "rm @F && ls"),
    ("Move-Item @F @D && ls @D", "mv @F @D && ls @D"),
    ("cat @F | Sort-Object", "sort @F"),
]
COMMANDS = ["python3", "sort", "grep", "ls", "cat", "sed", "awk", "tar", "gzip", "find", "bash", "wc"]


def _script(rng: random.Random) -> str:
    items = pools.lines(rng, 3)
    return f"items = {items!r}\nfor x in sorted(items):\n    print(x.upper())\n"


def make(rng: random.Random) -> Instance:
    broken, ref = rng.choice(HABITS)
    taken: set[str] = set()
    f, lines = list_file(rng, taken)
    g, more = list_file(rng, taken)
    d = dir_name(rng, taken)
    e, inner = list_file(rng, set(taken))
    # @N: a new file name, a copy of @D for xcopy, a directory name for md
    n = f"{d}_{rng.choice(['copy', 'bak', 'old'])}" if "@D" in broken else pools.filename(rng, ["txt", "bak"])
    if broken.startswith("md "):
        n = pools.stem(rng)
    p = pools.stem(rng) + ".py"
    w = rng.choice(lines)
    if n in taken or p in taken or w == d:
        raise ValueError("name clash")
    subs = {
        "@F": f,
        "@G": g,
        "@D": d,
        "@E": e,
        "@W": w,
        "@N": n,
        "@P": p,
        "@K": str(rng.randint(1, 3)),
        "@C": rng.choice(COMMANDS),
    }
    files = {f: body(lines), g: body(more), f"{d}/{e}": body(inner)}
    files.update(extra_files(rng, taken | {e, n, p}, rng.randint(0, 2)))
    if "@P" in broken:
        files[p] = _script(rng)
    for k, v in subs.items():
        broken, ref = broken.replace(k, v), ref.replace(k, v)
    return Instance(broken=broken, reference=ref, files=dict(sorted(files.items())))


FAMILY = Family(
    name="win-habit",
    kind="bash",
    make=make,
    description="a Windows command, switch or backslash path in bash (type -> cat, findstr -> grep, del -> rm)",
    source="cmd.exe / PowerShell vs coreutils (command not found; a backslash path loses its separators)",
)

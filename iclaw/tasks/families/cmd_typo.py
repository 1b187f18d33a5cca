"""cmd-typo: a misspelled command name. `sotr notes_2024.txt` -> `sort notes_2024.txt`.

    broken: sotr notes_2024.txt    error: bash: line 1: sotr: command not found (exit 127)
    reference: sort notes_2024.txt    (also `gerp -n milk list.txt`, `echo '12 * 7' | bcc`, `pyhton3 app.py`)

The command is drawn from ~80 everyday commands of a Debian system (coreutils, grep, sed, awk, find, tar,
gzip, diff, python3, make, cd, ...), each with realistic argument templates over a small fixture; the typo
(swap, drop or double a letter) is the only mistake. Every fixed command prints something deterministic (no dates,
pids or block sizes). A typo that is itself a real command is dropped by the generator's accept filter.
Source: thefuck no_command.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, list_file, typo
from iclaw.tasks.family import Family, Instance

# (command, arguments); CMD marks where the command goes when it is not first. Placeholders: @F / @G list
# files, @C a csv, @J a json file, @P a python script, @D a directory (holding one file), @W a word of @F,
# @N a count 1-3, @M a number 4-9, @K a number 12-99; make runs a Makefile whose first target is @W.
# fmt: off
COMMANDS = [
    ("cat", "@F"), ("cat", "-n @F"), ("tac", "@F"), ("sort", "@F"), ("sort", "-r @F"), ("sort", "-u @G"),
    ("sort", "-t, -k2 -n @C"), ("uniq", "@F"), ("uniq", "-c @F"), ("head", "-n @N @F"), ("head", "-@N @C"),
    ("tail", "-n @N @F"), ("tail", "-n +2 @C"), ("wc", "-l @F"), ("wc", "-w @G"), ("wc", "-c @F"),
    ("wc", "@F @G"), ("grep", "@W @F"), ("grep", "-n @W @F"), ("grep", "-c @W @F"), ("grep", "-v @W @F"),
    ("grep", "-o @W @F"), ("nl", "@F"), ("rev", "@F"), ("tr", "a-z A-Z < @F"), ("tr", "-d aeiou < @G"),
    ("cut", "-d, -f1 @C"), ("cut", "-c1-3 @F"), ("paste", "-sd, @F"), ("paste", "@F @G"),
    ("column", "-t -s, @C"), ("awk", "-F, '{print $1}' @C"), ("awk", "'END {print NR}' @F"),
    ("awk", "'{print length($0)}' @G"), ("sed", "-n @Np @F"), ("sed", "'s/@W/X/' @F"), ("sed", "'1d' @C"),
    ("fold", "-w 3 @F"), ("fmt", "@F"), ("expand", "@F"), ("od", "-c @F"), ("xxd", "@F"),
    ("hexdump", "-C @F"), ("md5sum", "@F"), ("sha1sum", "@F"), ("sha256sum", "@G"), ("cksum", "@F"),
    ("sum", "@F"), ("base64", "@F"), ("basename", "@D/@F"), ("dirname", "@D/@F"), ("realpath", "@F"),
    ("readlink", "-f @G"), ("ls", ""), ("ls", "-1"), ("ls", "-a"), ("ls", "@D"), ("find", ". -name @F"),
    ("find", "@D -type f"), ("stat", "-c %s @F"), ("du", "-b @F"), ("file", "@F"), ("echo", "@W"),
    ("printf", "'%s\\n' @W"), ("seq", "@N @M"), ("expr", "@N + @M"), ("factor", "@K"),
    ("numfmt", "--to=si @K000"), ("bc", "", "echo '@K * @M' | CMD"), ("diff", "@F @G"), ("cmp", "@F @G"),
    ("comm", "<(sort @F) <(sort @G)"), ("tar", "-cvf @W.tar @F"), ("zcat", "", "gzip @F && CMD @F.gz"),
    ("gzip", "-k @F && ls"), ("zip", "@W.zip @F"), ("bzip2", "-k @F && ls"), ("xz", "-k @G && ls"),
    ("touch", "@W.txt && ls"), ("mkdir", "-pv @D/@W"), ("cp", "-v @F @W.txt"), ("mv", "-v @F @D/"),
    ("rm", "-v @F"), ("ln", "-sv @F @W.txt"), ("install", "-v @F @D/"),
    ("rmdir", "-v @D/@W", "mkdir @D/@W && CMD -v @D/@W"), ("chmod", "-c 600 @F"),
    ("test", "-f @F && echo yes"), ("xargs", "echo < @F"), ("tee", "@W.txt < @F"), ("python3", "@P"),
    ("python3", "-c 'print(@K * @M)'"), ("perl", "-ne 'print if /@W/' @F"), ("jq", "-r .name @J"),
    ("strings", "@F"), ("iconv", "-f utf-8 -t ascii @G"), ("split", "-l 2 @F part_ && ls"),
    ("pr", "-t -2 @F"), ("truncate", "-s 0 @F && wc -c @F"), ("join", "<(sort @F) <(sort @F)"),
    ("nproc", "--ignore=999"), ("cd", "@D && ls"), ("cd", "@D && cat *"), ("make", "-s @W"), ("make", ""),
]
# fmt: on
# typos that are real commands or shell words: the line would not say "command not found"
TAKEN = {c for c, *_ in COMMANDS} | set(
    "tc ar do cpp as cc ld dd df id ps sl gcc su sh ip lp ex vi ed fc fg bg dc".split()
)


def script(rng: random.Random) -> str:
    items = pools.lines(rng, 3)
    shape = rng.randrange(3)
    if shape == 0:
        return f"items = {items!r}\nfor x in sorted(items):\n    print(x)\n"
    if shape == 1:
        return f"nums = {[rng.randint(1, 50) for _ in range(4)]}\nprint(sum(nums), max(nums))\n"
    return f"name = {items[0]!r}\nprint('hello', name.upper())\n"


def make(rng: random.Random) -> Instance:
    cmd, args, *form = rng.choice(COMMANDS)
    line = form[0] if form else (f"CMD {args}" if args else "CMD")
    taken: set[str] = set()
    f, lines = list_file(rng, taken)
    g, more = list_file(rng, taken)
    d = dir_name(rng, taken)
    csv, js, py = pools.filename(rng, ["csv"]), pools.filename(rng, ["json"]), pools.stem(rng) + ".py"
    w = rng.choice(lines)
    if w in taken or f"{w}.txt" in taken or w == d:
        raise ValueError("name clash")
    subs = {
        "@F": f,
        "@G": g,
        "@C": csv,
        "@J": js,
        "@P": py,
        "@D": d,
        "@W": w,
        "@N": str(rng.randint(1, 3)),
        "@M": str(rng.randint(4, 9)),
        "@K": str(rng.randint(12, 99)),
    }
    files = {f: body(lines), g: body(more), f"{d}/{pools.filename(rng)}": pools.text_content(rng)}
    if "@C" in line:
        files[csv] = pools.csv_text(rng)
    if "@J" in line:
        files[js] = f'{{"name": "{rng.choice(pools.NAMES)}", "id": {rng.randint(1, 999)}}}\n'
    if "@P" in line:
        files[py] = script(rng)
    if cmd == "make":  # the first target is the default one
        files["Makefile"] = f"{w}:\n\t@echo made {w}\n\nclean:\n\t@echo clean\n"
    for k, v in subs.items():
        line = line.replace(k, v)
    bad = typo(rng, cmd)
    if bad in TAKEN:
        raise ValueError("the typo is another command")
    return Instance(
        broken=line.replace("CMD", bad), reference=line.replace("CMD", cmd), files=dict(sorted(files.items()))
    )


FAMILY = Family(
    name="cmd-typo",
    kind="bash",
    make=make,
    description="misspelled command name (sotr -> sort)",
    accept=lambda error, exit_code: exit_code == 127 and "command not found" in error,
    source="thefuck: no_command",
)

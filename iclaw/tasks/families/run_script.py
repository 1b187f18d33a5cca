"""run-script: a script run as if it were an executable command; the fix names its interpreter.

    report.py            bash: line 1: report.py: command not found      -> python3 report.py
    ./report.py          bash: line 1: ./report.py: Permission denied    -> python3 report.py
    ./build.sh alice     bash: line 1: ./build.sh: Permission denied     -> bash build.sh alice
                                           (or chmod +x build.sh && ./build.sh alice: the same output)

Fixture files carry no executable bit, and the task directory is not on PATH, so both shapes fail the way
they do on a fresh checkout. The extension says which interpreter. Sources: thefuck python_command, chmod_x.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import extra_files
from iclaw.tasks.family import Family, Instance

# fmt: off
PY_NAMES = [
    "main", "app", "run", "report", "stats", "hello", "tool", "process", "convert", "check", "count",
]
SH_NAMES = [
    "run", "build", "deploy", "setup", "install", "start", "test", "backup", "clean", "greet", "make_report",
]
# fmt: on


def py_script(rng: random.Random, data: str | None) -> str:
    items = pools.lines(rng, 3)
    shape = rng.randrange(4)
    if shape == 0 and data:
        return (
            f"with open({data!r}) as f:\n    words = f.read().split()\nprint(len(words), sorted(words)[0])\n"
        )
    if shape == 1:
        return (
            f"import sys\nname = sys.argv[1] if len(sys.argv) > 1 else {items[0]!r}\nprint('hello,', name)\n"
        )
    if shape == 2:
        return f"nums = {[rng.randint(1, 99) for _ in range(4)]}\nprint('total:', sum(nums))\n"
    return f"for item in {items!r}:\n    print(item.upper())\n"


def sh_script(rng: random.Random, data: str | None) -> str:
    shebang = "#!/bin/bash\n" if rng.random() < 0.7 else ""
    shape = rng.randrange(3)
    if shape == 0 and data:
        return f'{shebang}echo "lines: $(wc -l < {data})"\nsort {data} | head -n 2\n'
    if shape == 1:
        return f'{shebang}name=${{1:-{rng.choice(pools.NAMES)}}}\necho "hello $name"\n'
    return shebang + "".join(f"echo {w}\n" for w in pools.lines(rng, 2))


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    files = extra_files(rng, taken, rng.randint(0, 2))
    data = next((k for k in sorted(files) if k.endswith(".txt")), None)
    python = rng.random() < 0.6
    stem = rng.choice(PY_NAMES if python else SH_NAMES) if rng.random() < 0.4 else pools.stem(rng)
    script = f"{stem}.{'py' if python else 'sh'}"
    if rng.random() < 0.3:  # in a directory: scripts/report.py, tools/build.sh
        script = f"{rng.choice(['scripts', 'tools', 'bin', 'src', 'utils', pools.stem(rng)])}/{script}"
    files[script] = (py_script if python else sh_script)(rng, data)
    arg = f" {rng.choice(pools.NAMES)}" if rng.random() < 0.3 else ""
    call = rng.choice([script, f"./{script}", f"./{script}"])
    if python:
        fix = f"python3 {script}{arg}"
    else:
        fix = rng.choice(
            [f"bash {script}{arg}", f"bash {script}{arg}", f"chmod +x {script} && ./{script}{arg}"]
        )
    return Instance(broken=f"{call}{arg}", reference=fix, files=dict(sorted(files.items())))


FAMILY = Family(
    name="run-script",
    kind="bash",
    make=make,
    description="script run as a command (main.py / ./run.sh) -> python3 main.py / bash run.sh",
    error_mentions=("command not found", "Permission denied"),
    source="thefuck: python_command, chmod_x",
)

"""Assertions, drivers and small shared fixtures (a tiny GPT size, four echo tasks) for several test modules."""

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from iclaw.tasks import FAMILIES, Task
from iclaw.tasks.family import Instance


def run_iclaw(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m iclaw ARGS` as a subprocess, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "iclaw", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def draws(name: str, n: int = 40, seed: object = None) -> list[Instance]:
    """n seeded instances of a family (seed: the family's name unless given), skipping the draws its make()
    refuses with ValueError, as the generator does."""
    rng, out = random.Random(name if seed is None else seed), []
    while len(out) < n:
        try:
            out.append(FAMILIES[name].make(rng))
        except ValueError:
            pass
    return out


def sampled_tokens_by_step(store, run_id: str) -> list[int]:
    """The run's logged `sampled_tokens`, checked against the store: monotone, and after step s exactly the
    policy tokens of the episodes rolled out at steps < s."""
    per_step: dict[int, int] = {}
    for e in store.episodes(run_id=run_id, limit=0):
        per_step[e["step"]] = per_step.get(e["step"], 0) + e["meta"]["policy_tokens"]
    rows = store.metrics(run_id)
    counts = [r["sampled_tokens"] for r in rows]
    assert counts == [sum(n for s, n in per_step.items() if s < r["step"]) for r in rows]
    assert counts[0] > 0 and all(b > a for a, b in zip(counts, counts[1:]))
    return counts


def ctrl_c_when(cmd: list[str], ready: Callable[[Path, Path], bool], *, cwd: Path, env: dict):
    """Run `cmd` (stdout and stderr to files in `cwd`); once ready(stdout_file, stderr_file) holds, press
    Ctrl-C once (SIGINT, as a terminal sends it) and wait for the process to end. Returns the completed
    process with its output as text."""
    out_f, err_f = cwd / "ctrl-c.out", cwd / "ctrl-c.err"
    with open(out_f, "w") as out, open(err_f, "w") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        deadline = time.time() + 240
        while proc.poll() is None and time.time() < deadline and not ready(out_f, err_f):
            time.sleep(0.2)
        assert proc.poll() is None, f"ended before Ctrl-C: {out_f.read_text()} {err_f.read_text()}"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=240)
    return subprocess.CompletedProcess(cmd, proc.returncode, out_f.read_text(), err_f.read_text())


SMALL = dict(n_layer=1, n_head=2, n_embd=32, block_size=256)  # a GPT small enough for many tests
ECHO_TASKS = [  # four single-turn tasks with a reference fix: `ehco red` -> `echo red`
    Task(
        id=f"echo-{w}",
        kind="bash",
        family="cmd-typo",
        broken=f"ehco {w}",
        reference=f"echo {w}",
        error="bash: line 1: ehco: command not found",
        broken_exit=127,
    )
    for w in ("red", "blue", "green", "gold")
]


def metrics_rows(cwd: Path, n: int):
    """ready() for ctrl_c_when: the run's metrics.jsonl holds at least n steps."""

    def ready(out, err) -> bool:
        logs = list((cwd / "runs").glob("*/metrics.jsonl"))
        return bool(logs) and len(logs[0].read_text().splitlines()) >= n

    return ready


# a shopping list read with a typo: the example of a fix a printed copy could fake
SHOPPING = Task(
    id="shopping",
    kind="bash",
    family="custom",
    files={"shopping.txt": "milk\neggs\n", "notes.md": "buy milk\n"},
    broken="cat shoping.txt",
    reference="cat shopping.txt",
    error="cat: shoping.txt: No such file or directory",
    broken_exit=1,
)
SHOPPING_PY = Task(
    id="shopping-py",
    kind="python",
    family="custom",
    files=SHOPPING.files,
    broken='print(open("shoping.txt").read())',
    reference='print(open("shopping.txt").read().strip())',
)

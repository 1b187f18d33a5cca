"""How fast the interface is: hint latency, and `iclaw fix` end to end, next to thefuck on the same cases.

    python benchmarks/bench_fix_latency.py            # needs `pip install thefuck` for the peer column

Three figures, each p50 / p95 over the cases:
  hints      find_hints on the real output of every task of benchmarks/outside.jsonl, shell and Python apart
             (each run once in the sandbox first; only the hint computation is timed)
  in-process one Fixer.run per case of the first-tries table (tests/test_fix.py FIRST_TRIES) with the built-in
             policy loaded once, next to thefuck's get_corrected_commands on the same output in the same
             process (its rules read the same folder)
  cold       `iclaw fix CASE --yes` as a user runs it (a new process: Python, torch, the policy), per case
and one fix in a folder of 100,000 files.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_thefuck import load_thefuck

from iclaw.tasks import load_tasks
from iclaw.tasks.task import write_fixture
from iclaw.tools import hints as H
from iclaw.tools.sandbox import Sandbox

CASES = [
    "gti status",
    "git stauts",
    "ehco hello",
    "sl",
    "grpe milk notes.txt",
    "cd scr",
    "python src/ap.py",
    "sort fruit.txt",
    "ls -la | grpe txt",
    "cta notes.txt",
    "cat note.txt",
    "pyhton3 src/app.py",
    "mkdir src",
]


def pct(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return f"p50 {statistics.median(xs) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  (n={len(xs)})"


def folder(root: Path) -> Path:
    d = root / "ws"
    d.mkdir()
    (d / "notes.txt").write_text("milk\neggs\nbread\n")
    (d / "fruits.txt").write_text("pear\napple\nfig\n")
    (d / "src").mkdir()
    (d / "src" / "app.py").write_text('print("app")\n')
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q", "."], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(git + args, cwd=d, check=True)
    return d


def main() -> None:
    sandbox = Sandbox(workspace=True)
    usage = H.usage_in(sandbox)
    with tempfile.TemporaryDirectory(prefix="iclaw-bench-latency-") as tmp:
        root = Path(tmp)
        times: dict[str, list[float]] = {"bash": [], "python": []}
        H.executables()  # the PATH listing is read once per process; its cost is in the first fix
        for i, t in enumerate(load_tasks(Path(__file__).with_name("outside.jsonl"))):
            d = root / f"o{i}"
            d.mkdir()
            write_fixture(t.files, d)
            r = sandbox.run(t.kind, t.broken, d)
            start = time.perf_counter()
            H.find_hints(t.kind, t.broken, r.stdout, r.stderr, r.exit_code, d, usage=usage)
            times[t.kind].append(time.perf_counter() - start)
        print(f"hints shell  {pct(times['bash'])}")
        print(f"hints python {pct(times['python'])}")

        from iclaw.agent.episode import EpisodeConfig
        from iclaw.agent.fix import Fixer
        from iclaw.agent.terminal import load_policy
        from iclaw.store import Store

        ws = folder(root)
        policy = load_policy("iclaw-small")
        (root / "thefuck-home").mkdir()
        first = load_thefuck(root / "thefuck-home")
        ic, tf = [], []
        with Store(root / "b.db") as store:
            for case in CASES:
                start = time.perf_counter()
                Fixer(
                    policy, sandbox, store, EpisodeConfig(max_turns=3, temperature=0.7), ws, source="bench"
                ).run("bash", case)
                ic.append(time.perf_counter() - start)
                if first is not None:
                    r = sandbox.run("bash", case, ws)
                    start = time.perf_counter()
                    first(case, "\n".join(s for s in (r.stdout, r.stderr) if s), ws)
                    tf.append(time.perf_counter() - start)
        print(f"iclaw fix    {pct(ic)}   in-process, policy loaded")
        big = root / "big"  # a folder of 100,000 files: listing and copy are capped, not proportional
        big.mkdir()
        for i in range(100_000):
            (big / f"f{i:06d}.log").touch()
        (big / "notes.txt").write_text("milk\n")
        with Store(root / "big.db") as store:
            start = time.perf_counter()
            res = Fixer(
                policy, sandbox, store, EpisodeConfig(max_turns=3, temperature=0.7), big, source="bench"
            ).run("bash", "cat note.txt")
            print(
                f"100,000 files: `cat note.txt` -> {res.final!r} in {(time.perf_counter() - start) * 1000:.0f} ms"
            )
        if tf:
            print(
                f"thefuck      {pct(tf)}   in-process, rules loaded   ratio iclaw/thefuck p50 "
                f"{statistics.median(ic) / statistics.median(tf):.1f}x"
            )
        cold = []
        for case in CASES:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "iclaw", "fix", case, "--yes", "--db", str(root / "c.db")],
                cwd=ws,
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )
            cold.append(time.perf_counter() - start)
        print(f"iclaw fix    {pct(cold)}   a new process per case (as typed)")


if __name__ == "__main__":
    main()

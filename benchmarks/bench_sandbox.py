"""Overhead of one sandboxed tool call over a bare subprocess.

    python benchmarks/bench_sandbox.py [--n 200]

Prints the median (and p90) wall time of subprocess.run(["true"]) and of Sandbox.run("bash", "true")
at each available level, and the overhead (target: median <= 20 ms at level bwrap). Calls alternate
between the variants so a busy machine affects all of them alike. Then 8 calls at once through
run_many, as a GRPO group runs them."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time

from iclaw.tools.sandbox import Sandbox, detect_level


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()

    variants = {"bare subprocess.run(['true'])": None}
    for level in ["bwrap", "none"] if detect_level()[0] == "bwrap" else ["none"]:
        variants[f"Sandbox(level={level!r}).run('bash', 'true')"] = Sandbox(level=level)
    times: dict[str, list[float]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as workdir:
        for sb in variants.values():  # warm up (level detection, page cache)
            for _ in range(3):
                sb.run("bash", "true", workdir) if sb else subprocess.run(["true"])
        for _ in range(args.n):
            for name, sb in variants.items():
                t0 = time.perf_counter()
                if sb is None:
                    subprocess.run(["true"])
                else:
                    r = sb.run("bash", "true", workdir)
                    assert r.exit_code == 0, r
                times[name].append((time.perf_counter() - t0) * 1000)

    # A GRPO group: 8 calls at once through run_many (the batch's wall time, and per call).
    batch: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name, sb in variants.items():
            if sb is None:
                continue
            xs = []
            for _ in range(max(args.n // 8, 5)):
                t0 = time.perf_counter()
                sb.run_many([("bash", "true", workdir)] * 8)
                xs.append((time.perf_counter() - t0) * 1000)
            batch[name] = xs

    bare = statistics.median(times["bare subprocess.run(['true'])"])
    print(f"sandbox level detected: {detect_level()[0]} ({detect_level()[1]})")
    print(f"{'variant':<45} {'median ms':>10} {'p90 ms':>8} {'overhead ms':>12}")
    for name, xs in times.items():
        med = statistics.median(xs)
        p90 = statistics.quantiles(xs, n=10)[-1]
        print(f"{name:<45} {med:>10.2f} {p90:>8.2f} {med - bare:>12.2f}")
    for name, xs in batch.items():
        med = statistics.median(xs)
        print(f"run_many, 8 at once: {name:<45} {med:>7.2f} ms per batch, {med / 8:.2f} ms per call")


if __name__ == "__main__":
    main()

"""Verifier throughput: oracle verification of N generated tasks, in tasks/s, on this machine.

    python benchmarks/bench_verify.py            # 500 tasks, all families
    python benchmarks/bench_verify.py --n 200 --workers 4

Three numbers:
  cold   the first pass: every task's reference runs too (2 sandbox calls per task, 3 for test tasks)
  warm   the same candidates again: references come from the per-task cache (1-2 calls per task)
  grpo   a GRPO-shaped batch: 8 tasks x 8 candidates = 64 verifications per step, references cached
Generation time is reported separately and not counted.
"""

from __future__ import annotations

import argparse
import os
import time

from iclaw.tasks import Verifier, generate
from iclaw.tools.sandbox import Limits, Sandbox


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="sandbox threads (default: run_many's)")
    args = ap.parse_args()

    sandbox = Sandbox(Limits(timeout_s=5.0))
    print(f"sandbox level: {sandbox.level} ({sandbox.reason}); cpus: {os.cpu_count()}")
    t0 = time.perf_counter()
    tasks = generate(args.n, "train", seed=args.seed, sandbox=sandbox)
    print(f"generated {len(tasks)} tasks in {time.perf_counter() - t0:.1f} s (not counted below)")

    def oracle(t):
        return t.reference if t.reference is not None else t.solution

    verifier = Verifier(sandbox, workers=args.workers)
    pairs = [(t, oracle(t)) for t in tasks]
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        verdicts = verifier.verify_many(pairs)
        dt = time.perf_counter() - t0
        assert all(v.passed for v in verdicts), [v.reason for v in verdicts if not v.passed][:5]
        print(f"{label}: {len(pairs)} oracle verifications in {dt:.2f} s = {len(pairs) / dt:.1f} tasks/s")

    # GRPO-shaped: 8 tasks, 8 candidates each (half oracle, half broken), several steps.
    steps = max(1, len(tasks) // 64)
    t0 = time.perf_counter()
    for s in range(steps):
        group = tasks[(8 * s) % len(tasks) : (8 * s) % len(tasks) + 8]
        batch = [(t, oracle(t) if k % 2 else t.broken) for t in group for k in range(8)]
        verifier.verify_many(batch)
    dt = time.perf_counter() - t0
    print(
        f"grpo: {steps} steps x 64 candidates in {dt:.2f} s = {64 * steps / dt:.1f} verifications/s "
        f"({dt / steps * 1000:.0f} ms per step)"
    )


if __name__ == "__main__":
    main()

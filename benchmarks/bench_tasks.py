"""Task families: how varied each one is, and what it costs to generate, on this machine.

    python benchmarks/bench_tasks.py                          # every family
    python benchmarks/bench_tasks.py --families cmd-typo py-name --n 50

Per family:
  distinct   distinct broken commands in --draws (1,000) draws of make() (no sandbox): how many different
             problems the family can pose; a draw that raises ValueError ("no instance this time") counts
             as a draw. Low numbers mean the policy sees the same few requests again and again.
  no-inst    how many of those draws raised ValueError
  gen s      wall-clock seconds of the real generate(--n, families=[family]) with the sandbox: every
             candidate's broken command, fix (and do-nothing, for test tasks) run in fresh fixtures
  tasks/s    --n / gen s
The last row sums the generation times (every family, one after the other).
"""

from __future__ import annotations

import argparse
import os
import random
import time

from iclaw.errors import IclawError
from iclaw.tasks import FAMILIES, generate
from iclaw.tasks.catalogue import family_type
from iclaw.tasks.generate import resolve_families
from iclaw.tools.sandbox import Limits, Sandbox


def distinct_broken(family, draws: int, seed: int) -> tuple[int, int]:
    rng = random.Random(f"bench-tasks:{seed}:{family.name}")
    seen: set[str] = set()
    failed = 0
    for _ in range(draws):
        try:
            seen.add(family.make(rng).broken)
        except Exception:  # ValueError: no instance this time; anything else, generate() names below
            failed += 1
    return len(seen), failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", default=None, help="only these families (default: all)")
    ap.add_argument("--draws", type=int, default=1000, help="make() draws per family for `distinct`")
    ap.add_argument("--n", type=int, default=100, help="tasks generated per family for `gen s`")
    ap.add_argument("--split", default="train")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fams = resolve_families(args.families)
    sandbox = Sandbox(Limits(timeout_s=5.0))
    print(f"sandbox level: {sandbox.level} ({sandbox.reason}); cpus: {os.cpu_count()}; {len(fams)} families")
    header = (
        f"{'family':<22} {'kind':<6} {'type':<13} {'distinct':>8} {'no-inst':>7} {'gen s':>7} {'tasks/s':>7}"
    )
    print(header)
    print("-" * len(header))
    total_s = total_tasks = 0.0
    for f in fams:
        distinct, failed = distinct_broken(f, args.draws, args.seed)
        typ = family_type(f).replace("look-first + outcome-only", "look+outcome")
        t0 = time.perf_counter()
        try:
            tasks = generate(args.n, args.split, seed=args.seed, families=[f.name], sandbox=sandbox)
        except IclawError as e:  # a family that cannot make its tasks: say so, and go on with the others
            print(f"{f.name:<22} {f.kind:<6} {typ:<13} {distinct:>8} {failed:>7}  FAILED: {e}", flush=True)
            continue
        dt = time.perf_counter() - t0
        total_s += dt
        total_tasks += len(tasks)
        print(
            f"{f.name:<22} {f.kind:<6} {typ:<13} {distinct:>8} {failed:>7} {dt:>7.1f} {len(tasks) / dt:>7.1f}",
            flush=True,
        )
    print("-" * len(header))
    rate = total_tasks / total_s if total_s else 0.0
    print(f"{'all':<22} {'':<6} {'':<13} {'':>8} {'':>7} {total_s:>7.1f} {rate:>7.1f}")
    print(
        f"({int(total_tasks)} tasks of {len(fams)} families in {total_s:.0f} s; {len(FAMILIES)} families exist)"
    )


if __name__ == "__main__":
    main()

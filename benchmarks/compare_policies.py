"""Two policies on the same tasks, paired: the figure a new iclaw-small must beat before it replaces the shipped one.

    python benchmarks/compare_policies.py --new runs/recipe/... --split dev          # decide on dev
    python benchmarks/compare_policies.py --new NEW --tasks runs/recipe/heldout.jsonl  # report on held-out
    python benchmarks/compare_policies.py --new NEW --split dev --novel   # dev with made-up names
    python benchmarks/compare_policies.py --new NEW --tasks T --all-hints new  # NEW trained with every hint shown

Tasks: a task file, or `generate(N, SPLIT, seed)` (dev by default: the split tuning decisions look at; the
recipe's held-out is for reporting). --novel renames their pool words to made-up ones (tasks/novel.py), as a
user's own file names and identifiers are, keeping the tasks that still behave. Each policy plays every task once, greedy, up to 3 turns, as the recipe
evaluates; prints pass@1 of both, new - base with a paired bootstrap 95 % interval over the tasks, and the
families that moved. Writes --out (JSON).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate, paired_bootstrap
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.tasks import FAMILIES, Verifier, generate, load_tasks
from iclaw.tasks.novel import novel_tasks
from iclaw.tools import hints
from iclaw.train.common import console, live_progress, safe_sandbox
from iclaw.train.config import GRPOConfig


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--base", default="iclaw-small", help="registry name or checkpoint path (default: shipped)"
    )
    ap.add_argument("--new", required=True, help="registry name or checkpoint path")
    ap.add_argument("--tasks", help="a task file (else generated)")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--n", type=int, default=15 * len(FAMILIES), help="generated tasks (15 a family)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--novel", action="store_true", help="the tasks with made-up names")
    ap.add_argument("--out", default="runs/compare.json")
    ap.add_argument(
        "--all-hints",
        choices=("base", "new", "both"),
        help="this side sees every hint (hints.SEARCH_ONLY off): weights trained on them against weights that were not",
    )
    args = ap.parse_args()

    sandbox = safe_sandbox(False)
    verifier = Verifier(sandbox)
    if args.tasks:
        tasks, where = load_tasks(Path(args.tasks)), args.tasks
    else:
        with live_progress(args.n, f"{args.split} tasks") as progress:
            tasks = generate(args.n, args.split, seed=args.seed, sandbox=sandbox, progress=progress)
        where = f"generate({args.n}, {args.split!r}, seed={args.seed})"
    if args.novel:
        tasks, where = novel_tasks(tasks, sandbox, args.seed), f"{where}, made-up names"
    ep = EpisodeConfig(
        max_turns=GRPOConfig.max_turns, max_new_tokens=GRPOConfig.max_new_tokens, temperature=0.0
    )
    reports = {}
    for side in ("base", "new"):
        pol = Policy.load(getattr(args, side))
        if args.all_hints:
            hints.SEARCH_ONLY = args.all_hints not in (side, "both")
        with live_progress(len(tasks), f"{side}: {getattr(args, side)}") as progress:
            reports[side] = evaluate(
                pol, tasks, sandbox=sandbox, verifier=verifier, cfg=ep, progress=progress
            )
    base, new = reports["base"], reports["new"]
    g = paired_bootstrap(base, new)
    shown = f", every hint shown to {args.all_hints}" if args.all_hints else ""
    console.print(f"{len(tasks)} tasks ({where}), greedy, {ep.max_turns} turns{shown}")
    console.print(
        f"pass@1: base {100 * base.pass_at_1:.1f} %, new {100 * new.pass_at_1:.1f} %; "
        f"new - base {g['delta']:+.1f} points, 95 % interval [{g['lo']:+.1f}, {g['hi']:+.1f}]"
    )
    moved = []
    for fam, r in new.by_family.items():
        b = base.by_family.get(fam, {}).get("pass_at_1", 0.0)
        if abs(r["pass_at_1"] - b) > 1e-9:
            moved.append((r["pass_at_1"] - b, fam, b, r["pass_at_1"]))
    for _, fam, b, n in sorted(moved, reverse=True):
        console.print(f"  {fam}: {100 * b:.1f} -> {100 * n:.1f}")
    write_json(
        Path(args.out),
        {
            "args": vars(args),
            "tasks": where,
            "base": base.to_dict(),
            "new": new.to_dict(),
            "new_minus_base": g,
        },
    )


if __name__ == "__main__":
    main()

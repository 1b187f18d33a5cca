"""The loop's figures after benchmarks/user_day.py and one `train grpo --from-db` per β: gain on new mistakes of
the mined kinds, forgetting on the other families, the outside set, each paired per task with the starting
policy (bootstrap 95 %), and the KL to the reference per step; one plot.

    python benchmarks/user_day_report.py runs/day --arms iclaw-small day-b0 day-b0.04 day-b0.2 --plot docs/loop.png

Reads DIR/{gain,others,outside}-ARM.json (`iclaw eval --json`, the first arm named "base" in the file names)
and the runs' KL from DIR/trajectories.db (train_metrics, in the order the runs were made).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import torch

SETS = ("gain", "others", "outside")


def per_task(path: Path) -> dict[str, float]:
    return {k: float(v[1]) for k, v in json.loads(path.read_text())["per_task"].items()}


def paired(base: dict, new: dict, n: int = 2000, seed: int = 0) -> str:
    ids = sorted(set(base) & set(new))
    d = torch.tensor([new[i] - base[i] for i in ids], dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    means = d[torch.randint(len(ids), (n, len(ids)), generator=g)].mean(1) * 100
    lo, hi = means.quantile(0.025).item(), means.quantile(0.975).item()
    return f"{d.mean().item() * 100:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument(
        "--arms", nargs="+", required=True, help="the starting policy's tag first, then each run's"
    )
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    tags = ["base"] + [a.removeprefix("day-") for a in args.arms[1:]]
    res = {t: {s: per_task(args.dir / f"{s}-{t}.json") for s in SETS} for t in tags}
    print(f"{'arm':<12}" + "".join(f"{s + ' %':>12}{'vs start':>20}" for s in SETS))
    for t in tags:
        row = f"{t:<12}"
        for s in SETS:
            r = res[t][s]
            row += f"{100 * sum(r.values()) / len(r):>12.1f}{'' if t == 'base' else paired(res['base'][s], r):>20}"
        print(row)
    with sqlite3.connect(args.dir / "trajectories.db") as db:
        runs = [
            r[0] for r in db.execute("select run_id from train_metrics group by run_id order by min(time)")
        ]
        kl = {
            run: [
                r[0] for r in db.execute("select kl from train_metrics where run_id = ? order by step", [run])
            ]
            for run in runs
        }
    for t, run in zip(tags[1:], runs):
        k = kl[run]
        print(
            f"{t}: {run}, {len(k)} steps, KL mean {sum(k) / len(k):.3f}, last 5 {sum(k[-5:]) / len(k[-5:]):.3f}"
        )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        for t, run in zip(tags[1:], runs):
            b.plot(range(1, len(kl[run]) + 1), kl[run], label=t)
        for s in SETS:
            base = 100 * sum(res["base"][s].values()) / len(res["base"][s])
            a.plot(
                tags[1:],
                [100 * sum(res[t][s].values()) / len(res[t][s]) - base for t in tags[1:]],
                "o-",
                label=s,
            )
        a.axhline(0, color="grey", lw=0.5)
        a.set(title="pass@1 − start (points)", xlabel="arm")
        b.set(title="KL to the start, per step", xlabel="step")
        a.legend()
        b.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=80)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()

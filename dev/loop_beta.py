"""The loop's β sweep (issue #57): a simulated day of mistakes, the store's fixes imitated with a rehearsal of the
other families (the step that gained on the day's kinds, docs/LOG.md), then `iclaw train grpo --from-db` at each
β and seed from that SFT, which is also its KL reference. Every arm is scored greedy on new mistakes of the day's
kinds (gain), the other families' held-out tasks (forgetting) and the outside set, paired per task against the
shipped policy and against the SFT the GRPO runs start from.

    python dev/loop_beta.py --out runs/loop --plot docs/loop-beta.png     # β 0, 0.04, 0.2 at seeds 0, 1, 2
    python dev/loop_beta.py --out runs/loop --betas 0,0.2 --seeds 0,1 --tag hot --grpo-flags "--lr 3e-4 --steps 100"

Every command is the CLI a user would type. Each GRPO run mines its own copy of the day's store, so no run's
training episodes become the next run's tasks. Finished steps are skipped on a rerun (their files exist).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from iclaw.agent.evaluate import paired_bootstrap
from iclaw.tasks.families import FAMILIES

SFT = [
    "--steps",
    "100",
    "--lr",
    "3e-4",
    "--retry",
    "0.25",
    "--look-first",
    "0.15",
]  # chosen on dev, LOG 2026-12-07


def sh(cmd: list[str], log: Path | None = None) -> float:
    """Run one command, its output appended to `log`; stop the sweep if it fails. Returns its seconds."""
    t0 = time.time()
    print("$ " + " ".join(cmd), flush=True)
    with open(log or "/dev/null", "a") as f:
        p = subprocess.run(
            cmd, stdout=f if log else None, stderr=subprocess.STDOUT if log else None, text=True
        )
    if p.returncode:
        sys.exit(f"error: exit {p.returncode}: {' '.join(cmd)}" + (f" (see {log})" if log else ""))
    return time.time() - t0


def evaluate(model: str, sets: dict[str, Path], out: Path) -> dict[str, SimpleNamespace]:
    reports = {}
    for name, tasks in sets.items():
        path = out / "eval" / f"{name}-{model}.json"
        if not path.exists():
            cmd = ["iclaw", "eval", "--model", model, "--tasks", str(tasks), "--max-turns", "3", "--json"]
            p = subprocess.run(cmd + ["--db", str(out / "eval.db")], capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"error: {' '.join(cmd)}: {p.stderr.strip()[-500:]}")
            path.write_text(p.stdout)
        reports[name] = SimpleNamespace(per_task=json.loads(path.read_text())["per_task"])
    return reports


def pass_rate(r: SimpleNamespace) -> float:
    return 100 * sum(v[1] for v in r.per_task.values()) / len(r.per_task)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/loop"))
    ap.add_argument("--betas", default="0,0.04,0.2")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--grpo-flags", default="", help='more `train grpo` flags, e.g. "--lr 3e-4 --steps 100"')
    ap.add_argument("--tag", default="", help="in the GRPO runs' names, to keep a second sweep's apart")
    args = ap.parse_args()
    out, log = args.out, args.out / "commands.log"
    (out / "eval").mkdir(parents=True, exist_ok=True)
    db = out / "trajectories.db"
    if not db.exists():
        sh([sys.executable, "benchmarks/user_day.py", "--out", str(out)])
    kinds = json.loads((out / "day.json").read_text())["families"]
    others = [f for f in FAMILIES if f not in kinds]
    fam = lambda fs: [a for f in fs for a in ("-f", f)]  # noqa: E731
    sets = {
        "gain": out / "gain.jsonl",
        "others": out / "others.jsonl",
        "outside": Path("benchmarks/outside.jsonl"),
    }
    gen = {
        "gain.jsonl": ["--split", "heldout", "--n", "150", "--seed", "1", *fam(kinds)],
        "others.jsonl": ["--split", "heldout", "--n", str(5 * len(others)), "--seed", "1", *fam(others)],
        "replay.jsonl": ["--split", "train", "--n", str(5 * len(others)), "--seed", "3", *fam(others)],
    }
    for name, a in gen.items():
        if not (out / name).exists():
            sh(["iclaw", "tasks", "gen", *a, "-o", str(out / name)], log)
    seconds: dict[str, float] = (
        json.loads((out / "seconds.json").read_text()) if (out / "seconds.json").exists() else {}
    )
    arms = ["iclaw-small", "loop-sft"]
    if "loop-sft" not in seconds:
        shutil.copy(db, out / "sft.db")
        seconds["loop-sft"] = sh(
            ["iclaw", "train", "sft", "--model", "iclaw-small", "--from-db", "--db", str(out / "sft.db")]
            + ["--tasks", str(out / "replay.jsonl"), *SFT, "--seed", "0", "--out", "loop-sft"],
            log,
        )
        (out / "seconds.json").write_text(json.dumps(seconds, indent=1))
    runs = {}
    for beta in args.betas.split(","):
        for seed in args.seeds.split(","):
            name = f"loop-{args.tag + '-' if args.tag else ''}b{beta}-s{seed}"
            arms.append(name)
            runs[name] = (float(beta), out / f"{name}.db")
            if name not in seconds:
                shutil.copy(db, runs[name][1])
                seconds[name] = sh(
                    ["iclaw", "train", "grpo", "--model", "loop-sft", "--from-db", "--db", str(runs[name][1])]
                    + ["--beta", beta, "--seed", seed, "--out", name, *args.grpo_flags.split()],
                    log,
                )
                (out / "seconds.json").write_text(json.dumps(seconds, indent=1))
    reports = {a: evaluate(a, sets, out) for a in arms}

    rows = []
    print(
        f"\n{'arm':<18}"
        + "".join(f"{s + ' %':>9}{'vs start':>19}{'vs SFT':>19}" for s in sets)
        + "  KL mean (last 5)"
    )
    for a in arms:
        row = {"arm": a, "seconds": seconds.get(a)}
        line = f"{a:<18}"
        for s in sets:
            r = reports[a][s]
            row[s] = pass_rate(r)
            line += f"{row[s]:>9.1f}"
            for base in ("iclaw-small", "loop-sft"):
                if a in ("iclaw-small", base):
                    line += " " * 19
                    continue
                d = paired_bootstrap(reports[base][s], r)
                row[f"{s}_vs_{base}"] = d
                line += f"{d['delta']:>+7.1f} [{d['lo']:+.1f},{d['hi']:+.1f}]".rjust(19)
        if a in runs:
            with sqlite3.connect(runs[a][1]) as con:
                kl = [k for (k,) in con.execute("select kl from train_metrics order by step")]
            row.update(beta=runs[a][0], kl=kl)
            line += f"  {sum(kl) / len(kl):.3f} ({sum(kl[-5:]) / len(kl[-5:]):.3f})"
        rows.append(row)
        print(line)
    report = out / f"report{'-' + args.tag if args.tag else ''}.json"
    report.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {report}")
    if args.plot:
        plot(rows, args.plot)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    grpo = [r for r in rows if "beta" in r]
    for s, c in (("gain", "C0"), ("others", "C1"), ("outside", "C2")):
        xs = [r["beta"] for r in grpo]
        a.scatter(xs, [r[f"{s}_vs_loop-sft"]["delta"] for r in grpo], color=c, s=12)
        betas = sorted(set(xs))
        mean = [
            sum(r[f"{s}_vs_loop-sft"]["delta"] for r in grpo if r["beta"] == x) / xs.count(x) for x in betas
        ]
        a.plot(betas, mean, "-", color=c, label=s)
    for r in grpo:
        b.plot(
            range(1, len(r["kl"]) + 1),
            r["kl"],
            color=f"C{sorted({g['beta'] for g in grpo}).index(r['beta'])}",
            lw=0.8,
        )
    for i, x in enumerate(sorted({g["beta"] for g in grpo})):
        b.plot([], [], color=f"C{i}", label=f"β = {x:g}")
    a.axhline(0, color="grey", lw=0.5)
    a.set(title="GRPO − its SFT start (points), per seed and mean", xlabel="β")
    b.set(title="KL to the reference, per step", xlabel="step")
    a.legend()
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

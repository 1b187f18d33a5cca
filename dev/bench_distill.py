"""On-policy distillation vs GRPO alone, from the same small student, at equal sampled tokens (CPU).

    python dev/bench_distill.py --seeds 0,1,2          # teacher: the shipped iclaw-small

1. tasks: the recipe's families, --train-per-family for SFT, --pool-per-family more for the RL arms (train
   split, tasks SFT never saw) and --heldout-per-family of each (generated once, seed 0, into --tasks-dir)
2. student: a GPT whose body is about a quarter of the teacher's (tiny width, --student-layers), on the
   teacher's vocabulary, SFT from scratch for --sft-steps on the recipe's demonstrations  → `student-sft-S`
3. distillation: reverse KL to the teacher on the student's own tokens, --steps steps, a checkpoint every
   --every                                                                        → `student-distill-S`
4. GRPO alone from the same `student-sft-S`, stopped at distillation's sampled tokens  → `student-grpo-S`
5. held-out pass@1 (greedy) of every checkpoint of both, against the sampled tokens it had seen

Budgets are steps, so a seed gives the same figures on any machine. Prints the table, writes --out (JSON)
and the curve beside it (PNG): held-out pass@1 against sampled tokens, one line per arm and seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate, paired_bootstrap
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.model import registry
from iclaw.model.gpt import GPT, default_device, preset
from iclaw.store import Store
from iclaw.tasks import Verifier, generate, load_tasks, save_tasks
from iclaw.tasks.families import FAMILIES
from iclaw.train.common import console, safe_sandbox
from iclaw.train.distill import DistillConfig, train_distill
from iclaw.train.grpo import GRPOConfig, train_grpo
from iclaw.train.recipe import RecipeConfig, recipe_demos
from iclaw.train.sft import SFTConfig, train_sft

RECIPE = RecipeConfig()  # the teacher's own recipe: its demonstrations and SFT
GRPO = GRPOConfig()  # and its GRPO settings (train/config.py): turns, their length, groups


def body_params(model: GPT) -> int:
    """Parameters in the transformer blocks: what a smaller student gives up (the vocabulary is shared)."""
    return sum(p.numel() for p in model.transformer.h.parameters())


def tasks(args) -> tuple[list, list, list]:
    """(SFT tasks, the RL pool, held-out). The pool is the train split's next tasks, ones SFT never saw: on the
    tasks it was fitted to, the student's rollouts already pass 50-90 % and there is little left to learn."""
    d = Path(args.tasks_dir)
    if not (d / "pool.jsonl").exists():
        n, k = len(FAMILIES), args.train_per_family * len(FAMILIES)
        both = generate(k + args.pool_per_family * n, "train", seed=0)  # any prefix is balanced
        save_tasks(both[:k], d / "train.jsonl")
        save_tasks(both[k:], d / "pool.jsonl")
        save_tasks(generate(args.heldout_per_family * n, "heldout", seed=0), d / "heldout.jsonl")
    return load_tasks(d / "train.jsonl"), load_tasks(d / "pool.jsonl"), load_tasks(d / "heldout.jsonl")


def curve(name: str, history: list[dict], heldout: list, run_kw: dict, ep: EpisodeConfig) -> list[dict]:
    """Held-out pass@1 of every published checkpoint of `name`, with the sampled tokens it had seen."""
    points = []
    for cid in registry.checkpoint_ids(name):
        step = int(cid.removeprefix("step").split("-")[0])
        policy = Policy.load(registry.checkpoint_path(name, cid))
        report = evaluate(policy, heldout, cfg=ep, **run_kw)
        points.append({"step": step, "tokens": history[step - 1]["sampled_tokens"], "report": report})
    return points


def one_seed(seed: int, args, teacher: GPT, train: list, pool: list, heldout: list, run_kw: dict) -> dict:
    dev = default_device()
    demos = recipe_demos(train, run_kw["sandbox"], dataclasses.replace(RECIPE, seed=seed))
    torch.manual_seed(seed)
    student = GPT(
        preset(
            "tiny", n_layer=args.student_layers, pos=teacher.config.pos, block_size=teacher.config.block_size
        ),
        teacher.vocab,
    ).to(dev)
    t0 = time.time()
    sft = train_sft(
        student,
        demos,
        SFTConfig(
            lr=RECIPE.sft_lr,
            batch_size=RECIPE.batch_size,
            steps=args.sft_steps,
            optimizer=RECIPE.sft_optimizer,
            seed=seed,
        ),
        device=dev,
    )
    names = {arm: f"student-{arm}-{seed}" for arm in ("sft", "distill", "grpo")}
    registry.publish(names["sft"], student, meta={"source": "bench-distill", "step": sft["steps"]})
    sft_seconds = time.time() - t0

    common = dict(
        group_size=GRPO.group_size,
        tasks_per_step=GRPO.tasks_per_step,
        lr=args.lr,
        max_turns=GRPO.max_turns,
        max_new_tokens=GRPO.max_new_tokens,
        save_every=args.every,
        seed=seed,
    )
    trainer_kw = dict(**run_kw, device=str(dev), show_progress=False, echo=console.print)
    d = train_distill(
        DistillConfig(
            teacher=args.teacher,
            student=names["sft"],
            out=names["distill"],
            steps=args.steps,
            kl=args.kl,
            **common,
        ),
        pool,
        **trainer_kw,
    )
    tokens = d["history"][-1]["sampled_tokens"]
    g = train_grpo(
        GRPOConfig(
            model=names["sft"],
            out=names["grpo"],
            steps=10 * args.steps,
            max_tokens=tokens,
            # the KL limit is a safety stop for users; here it ended GRPO at lr 1e-3 before its first checkpoint
            kl_max=float("inf"),
            sft_coef=0.0,  # GRPO alone, as this comparison has always run it: no imitation term
            **common,
        ),
        pool,
        **trainer_kw,
    )

    ep = EpisodeConfig(max_turns=GRPO.max_turns, temperature=0.0, max_new_tokens=GRPO.max_new_tokens)
    eval_kw = dict(sandbox=run_kw["sandbox"], verifier=run_kw["verifier"], store=run_kw["store"])
    start = evaluate(Policy.load(names["sft"]), heldout, cfg=ep, **eval_kw)
    arms = {
        "distill": curve(names["distill"], d["history"], heldout, eval_kw, ep),
        "grpo": curve(names["grpo"], g["history"], heldout, eval_kw, ep),
    }
    return {
        "seed": seed,
        "sft_steps": sft["steps"],
        "seconds": {"sft": sft_seconds, "distill": d["seconds"], "grpo": g["seconds"]},
        "kl_to_teacher": [d["history"][0]["kl_to_teacher"], d["history"][-1]["kl_to_teacher"]],
        "start": start,
        "arms": arms,
    }


def summarize(r: dict, teacher_report) -> dict:
    """The issue's two targets for one seed, plus the endpoints with paired intervals."""
    dist, grpo = r["arms"]["distill"], r["arms"]["grpo"]
    g_final = grpo[-1]["report"].pass_at_1
    sft, t = r["start"].pass_at_1, teacher_report.pass_at_1
    # tokens distillation needed to match GRPO's final pass rate; meaningless where GRPO gained nothing
    points = [(p["tokens"], p["report"].pass_at_1) for p in dist]
    reach = next((tok for tok, pass_at_1 in points if pass_at_1 >= g_final), None) if g_final > sft else None
    return {
        "seed": r["seed"],
        "student_sft": sft,
        "distill": dist[-1]["report"].pass_at_1,
        "grpo": g_final,
        "teacher": t,
        "tokens": {"distill": dist[-1]["tokens"], "grpo": grpo[-1]["tokens"]},
        # sampled tokens distillation needed to match GRPO's final pass rate, as a fraction of GRPO's
        "tokens_to_grpo_final": None if reach is None else reach / grpo[-1]["tokens"],
        "gap_closed": None if t <= sft else (dist[-1]["report"].pass_at_1 - sft) / (t - sft),
        "distill_minus_grpo": paired_bootstrap(grpo[-1]["report"], dist[-1]["report"]),
        "distill_minus_sft": paired_bootstrap(r["start"], dist[-1]["report"]),
        "kl_to_teacher": r["kl_to_teacher"],
        "seconds": r["seconds"],
        "curve": {
            arm: [{"step": 0, "tokens": 0, "pass_at_1": sft}]
            + [{"step": p["step"], "tokens": p["tokens"], "pass_at_1": p["report"].pass_at_1} for p in pts]
            for arm, pts in r["arms"].items()
        },
    }


def plot(rows: list[dict], teacher: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for row, marker in zip(rows, "osd^v<>"):
        for arm, label, color in (
            ("distill", "distillation", "tab:blue"),
            ("grpo", "GRPO alone", "tab:orange"),
        ):
            pts = row["curve"][arm]
            xs, ys = [p["tokens"] for p in pts], [100 * p["pass_at_1"] for p in pts]
            ax.plot(xs, ys, marker=marker, color=color, alpha=0.7, label=f"{label}, seed {row['seed']}")
    ax.axhline(100 * teacher, color="gray", ls="--", label="teacher")
    ax.set_xlabel("sampled policy tokens")
    ax.set_ylabel("held-out pass@1 (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--teacher", default="iclaw-small")
    ap.add_argument("--tasks-dir", default="runs/bench-distill")
    ap.add_argument("--train-per-family", type=int, default=30)
    ap.add_argument("--pool-per-family", type=int, default=10, help="RL tasks SFT never saw")
    ap.add_argument("--heldout-per-family", type=int, default=3)
    ap.add_argument("--student-layers", type=int, default=3, help="at width 128: a quarter of 6 x 192's body")
    ap.add_argument("--sft-steps", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=40, help="distillation steps; GRPO gets their tokens")
    ap.add_argument("--every", type=int, default=10, help="a checkpoint (and a point on the curve) every N")
    ap.add_argument("--lr", type=float, default=2e-4, help="the same for distillation and GRPO")
    ap.add_argument(
        "--kl",
        choices=("sampled", "full"),
        default="sampled",
        help="distillation's KL: on the sampled token, or over the whole shared vocabulary at each position",
    )
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", default="runs/bench-distill.json")
    args = ap.parse_args()

    out = Path(args.out)
    sandbox = safe_sandbox(False)
    run_kw = dict(sandbox=sandbox, verifier=Verifier(sandbox), store=Store(out.with_suffix(".db")))
    t0 = time.time()
    train, pool, heldout = tasks(args)
    teacher = registry.load(args.teacher, device="cpu")[0]
    probe = GPT(
        preset(
            "tiny", n_layer=args.student_layers, pos=teacher.config.pos, block_size=teacher.config.block_size
        ),
        teacher.vocab,
    )
    console.print(
        f"teacher {args.teacher}: body {body_params(teacher) / 1e6:.2f}M of {teacher.num_params() / 1e6:.2f}M; "
        f"student body {body_params(probe) / 1e6:.2f}M of {probe.num_params() / 1e6:.2f}M "
        f"({body_params(probe) / body_params(teacher):.2f} of the teacher's); "
        f"{len(train)} SFT, {len(pool)} RL pool, {len(heldout)} held-out"
    )
    ep = EpisodeConfig(max_turns=GRPO.max_turns, temperature=0.0, max_new_tokens=GRPO.max_new_tokens)
    teacher_report = evaluate(
        Policy.load(args.teacher),
        heldout,
        cfg=ep,
        sandbox=sandbox,
        verifier=run_kw["verifier"],
        store=run_kw["store"],
    )
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        rows.append(summarize(one_seed(seed, args, teacher, train, pool, heldout, run_kw), teacher_report))
        console.print(json.dumps({k: v for k, v in rows[-1].items() if k != "curve"}, default=str))
        write_json(out, {"args": vars(args), "seconds": time.time() - t0, "rows": rows})
        plot(rows, teacher_report.pass_at_1, out.with_suffix(".png"))

    console.print("seed  student-sft  distill  GRPO alone  teacher  tokens to GRPO's final  gap closed")
    for r in rows:
        frac = (
            f"{r['tokens_to_grpo_final']:.2f} of GRPO's" if r["tokens_to_grpo_final"] is not None else "never"
        )
        if r["grpo"] <= r["student_sft"]:
            frac = "GRPO gained nothing"
        gap = "-" if r["gap_closed"] is None else f"{r['gap_closed']:.2f}"
        console.print(
            f"{r['seed']:>4}  {100 * r['student_sft']:11.1f}  {100 * r['distill']:7.1f}  {100 * r['grpo']:10.1f}"
            f"  {100 * r['teacher']:7.1f}  {frac:>22}  {gap:>10}"
        )


if __name__ == "__main__":
    main()

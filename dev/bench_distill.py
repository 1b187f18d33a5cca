"""On-policy distillation vs GRPO from the same small student (CPU), with a positive control first.

    python dev/bench_distill.py --seeds 0,1,2                  # teacher: the shipped iclaw-small
    python dev/bench_distill.py --probe-lrs 3e-4,1e-3,3e-3     # the regime: probe KL and dev pass@1 per lr
    python dev/bench_distill.py --teacher-sft 200              # SFT on the teacher's passing episodes, on dev

1. tasks: --train-per-family for the student's SFT, --pool-per-family more for the on-policy arms (train
   split, tasks SFT never saw), --dev-per-family (dev split: the lr probe) and --heldout-per-family of each
   (generated once into --tasks-dir). The teacher is measured on held-out greedy and at temperature 1.
2. student: a GPT whose body is about a quarter of the teacher's, on the teacher's vocabulary, SFT'd from
   scratch on the recipe's demonstrations; its checkpoint at a quarter of the steps is kept too.
3. positive control (first seed only): distil `student-sft` into its own earlier checkpoint (same size) for
   --control-steps. The probe KL must fall below 0.2x its start and held-out pass@1 reach the teacher's
   (student-sft's: the paired interval of the difference reaches 0), or the benchmark stops: a pipeline
   that cannot do this cannot be judged on the real pair.
4. distillation from `student-sft` (DistillConfig's defaults: full KL, many tasks a step, G = 1, warm-up),
   --steps steps; GRPO alone from the same start for --grpo-steps (GRPOConfig's group and tasks a step).
5. held-out pass@1 (greedy) of the start, the distilled student, GRPO's checkpoint at distillation's sampled
   tokens (the last one at or below them) and GRPO's last; paired intervals; the probe KL curve.

Budgets are steps, so a seed gives the same figures on any machine. Writes --out (JSON) and two plots beside
it: the probe KL against steps, and held-out pass@1 against sampled tokens.
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
from iclaw.train.rollout import rollout
from iclaw.train.sft import SFTConfig, train_sft

RECIPE = RecipeConfig()  # the teacher's own recipe: its demonstrations and SFT
GRPO = GRPOConfig()  # and its GRPO settings (train/config.py): turns, their length, groups
GREEDY = EpisodeConfig(max_turns=GRPO.max_turns, temperature=0.0, max_new_tokens=GRPO.max_new_tokens)


def body_params(model: GPT) -> int:
    """Parameters in the transformer blocks: what a smaller student gives up (the vocabulary is shared)."""
    return sum(p.numel() for p in model.transformer.h.parameters())


def task_sets(args) -> dict[str, list]:
    """SFT tasks, the on-policy pool (train-split tasks SFT never saw), dev and held-out."""
    d = Path(args.tasks_dir)
    if not (d / "heldout.jsonl").exists():
        n = len(FAMILIES)
        k = args.train_per_family * n
        both = generate(k + args.pool_per_family * n, "train", seed=0)  # any prefix is balanced
        save_tasks(both[:k], d / "train.jsonl")
        save_tasks(both[k:], d / "pool.jsonl")
        save_tasks(generate(args.dev_per_family * n, "dev", seed=0), d / "dev.jsonl")
        save_tasks(generate(args.heldout_per_family * n, "heldout", seed=0), d / "heldout.jsonl")
    return {s: load_tasks(d / f"{s}.jsonl") for s in ("train", "pool", "dev", "heldout")}


def train_student(seed: int, args, teacher: GPT, train: list, run_kw: dict) -> dict:
    """SFT from scratch; publishes student-early-S (a quarter of the steps) and student-sft-S (kept if there)."""
    if f"student-sft-{seed}" in registry.names():
        return {"reused": f"student-sft-{seed}"}
    dev = default_device()
    t0 = time.time()
    demos = recipe_demos(train, run_kw["sandbox"], dataclasses.replace(RECIPE, seed=seed))
    torch.manual_seed(seed)
    cfg = preset(
        "tiny", n_layer=args.student_layers, pos=teacher.config.pos, block_size=teacher.config.block_size
    )
    student = GPT(cfg, teacher.vocab).to(dev)
    early = args.sft_steps // 4
    for name, steps in ((f"student-early-{seed}", early), (f"student-sft-{seed}", args.sft_steps - early)):
        sft = SFTConfig(
            lr=RECIPE.sft_lr,
            batch_size=RECIPE.batch_size,
            steps=steps,
            optimizer=RECIPE.sft_optimizer,
            seed=seed,
        )
        train_sft(student, demos, sft, device=dev)
        registry.publish(name, student, meta={"source": "bench-distill", "demos": len(demos)})
    return {"demos": len(demos), "seconds": time.time() - t0}


def distill(
    teacher: str, student: str, out: str, steps: int, pool: list, seed: int, run_kw: dict, **kw
) -> dict:
    demos = kw.pop("demos", None)
    cfg = DistillConfig(teacher=teacher, student=student, out=out, steps=steps, seed=seed, **kw)
    return train_distill(
        cfg,
        pool,
        **run_kw,
        device=str(default_device()),
        show_progress=False,
        echo=console.print,
        demos=demos,
    )


_scored: dict = {}  # (model, temperature, task set) -> report: the start is scored once, for the control and the arms


_demos: list = []


def ptx_kw(args, sets: dict) -> dict:
    """--sft-coef > 0: the ptx term imitates the student's own SFT demonstrations (made once)."""
    if not args.sft_coef:
        return {}
    if not _demos:
        _demos.extend(recipe_demos(sets["train"], safe_sandbox(False), dataclasses.replace(RECIPE, seed=0)))
    return {"sft_coef": args.sft_coef, "demos": _demos}


def held_out(name: str, heldout: list, eval_kw: dict, cfg: EpisodeConfig = GREEDY):
    key = (str(registry.resolve(name)), cfg.temperature, len(heldout), heldout[0].id)
    if key not in _scored:
        _scored[key] = evaluate(Policy.load(name), heldout, cfg=cfg, **eval_kw)
    return _scored[key]


def positive_control(seed: int, args, sets: dict, run_kw: dict, eval_kw: dict) -> dict:
    """Distil student-sft-S into student-early-S (same size): the KL must fall and pass@1 catch up."""
    t0 = time.time()
    d = distill(
        f"student-sft-{seed}",
        f"student-early-{seed}",
        f"control-{seed}",
        args.control_steps,
        sets["pool"],
        seed,
        run_kw,
        save_every=args.control_steps,
        lr=args.lr,
    )
    probes = d["probes"]
    reports = {
        "early": held_out(f"student-early-{seed}", sets["heldout"], eval_kw),
        "distilled": held_out(f"control-{seed}", sets["heldout"], eval_kw),
        "teacher": held_out(f"student-sft-{seed}", sets["heldout"], eval_kw),
    }
    kl_ratio = probes[-1]["probe_kl"] / probes[0]["probe_kl"]
    # "reached": the teacher is not above it by a paired interval that excludes 0 (511 tasks: +-3 points)
    gap = paired_bootstrap(reports["teacher"], reports["distilled"])
    return {
        "ok": kl_ratio < 0.2 and gap["hi"] >= 0,
        "kl_ratio": kl_ratio,
        "probes": probes,
        "pass_at_1": {k: r.pass_at_1 for k, r in reports.items()},
        "distilled_minus_teacher": gap,
        "seconds": time.time() - t0,
    }


def one_seed(seed: int, args, sets: dict, run_kw: dict, eval_kw: dict) -> dict:
    start = f"student-sft-{0 if args.one_student else seed}"
    t0 = time.time()
    d = distill(
        args.teacher,
        start,
        f"student-distill-{seed}",
        args.steps,
        sets["pool"],
        seed,
        run_kw,
        save_every=args.steps,
        lr=args.lr,
        **ptx_kw(args, sets),
    )
    t1 = time.time()
    g = train_grpo(
        GRPOConfig(
            model=start,
            out=f"student-grpo-{seed}",
            steps=args.grpo_steps,
            save_every=args.grpo_every,
            seed=seed,
            sft_coef=0.0,
            kl_max=float("inf"),
        ),  # GRPO alone, as this comparison always ran it
        sets["pool"],
        **run_kw,
        device=str(default_device()),
        show_progress=False,
        echo=console.print,
    )
    t2 = time.time()
    tokens = d["history"][-1]["sampled_tokens"]
    grpo_ckpts = []  # (sampled tokens seen, checkpoint id)
    for cid in registry.checkpoint_ids(f"student-grpo-{seed}"):
        step = int(cid.removeprefix("step").split("-")[0])
        grpo_ckpts.append((g["history"][step - 1]["sampled_tokens"], step, cid))
    at_equal = max((c for c in grpo_ckpts if c[0] <= tokens), default=None)
    last = max(grpo_ckpts)
    r = {
        "start": held_out(start, sets["heldout"], eval_kw),
        "distill": held_out(f"student-distill-{seed}", sets["heldout"], eval_kw),
        "grpo_last": held_out(
            str(registry.checkpoint_path(f"student-grpo-{seed}", last[2])), sets["heldout"], eval_kw
        ),
    }
    if at_equal is not None:
        ckpt = registry.checkpoint_path(f"student-grpo-{seed}", at_equal[2])
        r["grpo_equal"] = held_out(str(ckpt), sets["heldout"], eval_kw)
    return {
        "seed": seed,
        "pass_at_1": {k: v.pass_at_1 for k, v in r.items()},
        "tokens": {"distill": tokens, "grpo_equal": at_equal and at_equal[0], "grpo_last": last[0]},
        "steps": {"grpo_equal": at_equal and at_equal[1], "grpo_last": last[1]},
        "distill_minus_start": paired_bootstrap(r["start"], r["distill"]),
        "distill_minus_grpo_equal": paired_bootstrap(r["grpo_equal"], r["distill"]) if at_equal else None,
        "distill_minus_grpo_last": paired_bootstrap(r["grpo_last"], r["distill"]),
        "grpo_last_minus_start": paired_bootstrap(r["start"], r["grpo_last"]),
        "probes": d["probes"],
        "kl_to_teacher_steps": [h["kl_to_teacher"] for h in d["history"]],
        "seconds": {"distill": t1 - t0, "grpo": t2 - t1, "eval": time.time() - t2},
    }


def probe_lrs(args, sets: dict, run_kw: dict) -> list[dict]:
    """The regime on dev: distil into student-sft-0 at each lr on the pool, as the comparison does, and read
    the probe KL and dev pass@1 (greedy) against the start's, paired. Dev, never held-out, picks the lr."""
    start = held_out("student-sft-0", sets["dev"], run_kw)
    rows = []
    for lr in [float(x) for x in args.probe_lrs.split(",")]:
        d = distill(
            args.teacher,
            "student-sft-0",
            "student-lrprobe",
            args.steps,
            sets["pool"],
            0,
            run_kw,
            save_every=args.steps,
            lr=lr,
            **ptx_kw(args, sets),
        )
        dev = evaluate(Policy.load("student-lrprobe"), sets["dev"], cfg=GREEDY, **run_kw)
        rows.append(
            {
                "lr": lr,
                "sft_coef": args.sft_coef,
                "probes": d["probes"],
                "dev_pass_at_1": {"start": start.pass_at_1, "distilled": dev.pass_at_1},
                "distilled_minus_start": paired_bootstrap(start, dev),
                "seconds": d["seconds"],
            }
        )
        console.print(json.dumps(rows[-1]))
    return rows


def teacher_sft(args, sets: dict, run_kw: dict) -> dict:
    """The off-policy arm, and the student's ceiling: the teacher's own greedy episodes on the pool, those that
    passed, imitated by student-sft-0 for --teacher-sft more SFT steps (its own recipe: Muon, recipe lr);
    beside it the same steps on the student's own demonstrations (more SFT alone: the control). Dev pass@1 of
    both against the start, paired."""
    t0 = time.time()
    teacher, pool = Policy.load(args.teacher), sets["pool"]
    eps = [
        e
        for i in range(0, len(pool), 128)  # in chunks: a batch of episodes advances together
        for e in rollout(teacher, pool[i : i + 128], 1, run_kw["sandbox"], run_kw["verifier"], GREEDY)
    ]
    shown = [(e.tokens, e.mask) for e in eps if e.passed]
    start = held_out("student-sft-0", sets["dev"], run_kw)
    out = {"teacher_pool_pass": len(shown) / len(eps), "rollout_seconds": time.time() - t0}
    own = ptx_kw(argparse.Namespace(sft_coef=1.0), sets)["demos"]
    for arm, examples in (("teacher", shown), ("own", own)):
        t1 = time.time()
        model = registry.load("student-sft-0", device=default_device())[0]
        sft = SFTConfig(
            lr=RECIPE.sft_lr,
            batch_size=RECIPE.batch_size,
            steps=args.teacher_sft,
            optimizer=RECIPE.sft_optimizer,
            seed=0,
        )
        res = train_sft(model, examples, sft, device=default_device())
        name = f"student-tsft-{arm}"
        registry.publish(name, model, meta={"source": "bench-distill", "examples": len(examples)})
        dev = evaluate(Policy.load(name), sets["dev"], cfg=GREEDY, **run_kw)
        out[arm] = {
            "examples": len(examples),
            "loss": res["loss"],
            "dev_pass_at_1": {"start": start.pass_at_1, "after": dev.pass_at_1},
            "after_minus_start": paired_bootstrap(start, dev),
            "seconds": time.time() - t1,
        }
        console.print(json.dumps({arm: out[arm]}))
    return out


def plot(out: Path, control: dict | None, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if control:
        ps = control["probes"]
        ax.plot([p["step"] for p in ps], [p["probe_kl"] for p in ps], "k--", label="positive control")
    for r, marker in zip(rows, "osd^v"):
        ps = r["probes"]
        ax.plot(
            [p["step"] for p in ps], [p["probe_kl"] for p in ps], marker=marker, label=f"seed {r['seed']}"
        )
    ax.set_xlabel("distillation step")
    ax.set_ylabel("probe KL(student || teacher), nats/token")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.with_name(out.stem + "-kl.png"), dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--teacher", default="iclaw-small")
    ap.add_argument("--tasks-dir", default="runs/bench-distill")
    ap.add_argument("--train-per-family", type=int, default=60)
    ap.add_argument("--pool-per-family", type=int, default=20, help="on-policy tasks SFT never saw")
    ap.add_argument("--dev-per-family", type=int, default=4)
    ap.add_argument("--heldout-per-family", type=int, default=7, help="7 x 73 families = 511 tasks")
    ap.add_argument("--student-layers", type=int, default=3, help="at width 128: a quarter of 6 x 192's body")
    ap.add_argument("--sft-steps", type=int, default=2000)
    ap.add_argument("--control-steps", type=int, default=30)
    ap.add_argument(
        "--steps", type=int, default=60, help="distillation steps: 60 x 32 episodes = 1/3 of GRPO's 90 x 64"
    )
    ap.add_argument("--lr", type=float, default=DistillConfig.lr)
    ap.add_argument(
        "--sft-coef",
        type=float,
        default=DistillConfig.sft_coef,
        help="PPO-ptx on the student's SFT demonstrations",
    )
    ap.add_argument("--grpo-steps", type=int, default=90)
    ap.add_argument("--grpo-every", type=int, default=10)
    ap.add_argument("--seeds", default="0")
    ap.add_argument(
        "--teacher-sft",
        type=int,
        default=0,
        help="only the off-policy arm: SFT on the teacher's passing episodes",
    )
    ap.add_argument(
        "--probe-lrs",
        default=None,
        help="only the lr probe: distil student-sft-0 on the pool at each lr, score dev",
    )
    ap.add_argument(
        "--no-control", action="store_true", help="skip the positive control (a rerun's later seeds)"
    )
    ap.add_argument(
        "--one-student", action="store_true", help="every seed starts from student-sft-0 (SFT once)"
    )
    ap.add_argument("--keep-going", action="store_true", help="run the comparison even if the control fails")
    ap.add_argument("--out", default="runs/bench-distill.json")
    args = ap.parse_args()

    out = Path(args.out)
    sandbox = safe_sandbox(False)
    store = Store(out.with_suffix(".db"))
    run_kw = dict(sandbox=sandbox, verifier=Verifier(sandbox), store=store)
    eval_kw = run_kw
    t0 = time.time()
    sets = task_sets(args)
    teacher = registry.load(args.teacher, device="cpu")[0]
    if args.teacher_sft:
        write_json(out, {"args": vars(args), "teacher_sft": teacher_sft(args, sets, run_kw)})
        return
    if args.probe_lrs:
        student = train_student(0, args, teacher, sets["train"], run_kw)
        write_json(out, {"args": vars(args), "student": student, "lr_probe": probe_lrs(args, sets, run_kw)})
        return
    shape = preset(
        "tiny", n_layer=args.student_layers, pos=teacher.config.pos, block_size=teacher.config.block_size
    )
    console.print(
        f"teacher {args.teacher}: body {body_params(teacher) / 1e6:.2f}M; student body "
        f"{body_params(GPT(shape, teacher.vocab)) / 1e6:.2f}M; "
        + ", ".join(f"{len(v)} {k}" for k, v in sets.items())
    )
    report = {"args": vars(args)}
    report["teacher"] = {
        "greedy": held_out(args.teacher, sets["heldout"], eval_kw).pass_at_1,
        "t1": held_out(
            args.teacher, sets["heldout"], eval_kw, dataclasses.replace(GREEDY, temperature=1.0)
        ).pass_at_1,
    }
    console.print(
        f"teacher on held-out: greedy {report['teacher']['greedy']:.3f}, T=1 {report['teacher']['t1']:.3f}"
    )
    rows, control = [], None
    for i, seed in enumerate(int(s) for s in args.seeds.split(",")):
        s_seed = 0 if args.one_student else seed
        report.setdefault("students", {})[s_seed] = train_student(
            s_seed, args, teacher, sets["train"], run_kw
        )
        if i == 0 and not args.no_control:
            control = report["control"] = positive_control(s_seed, args, sets, run_kw, eval_kw)
            console.print(f"positive control: {json.dumps(control, default=str)}")
            write_json(out, report)
            if not control["ok"]:
                console.print(
                    f"[red]positive control failed[/] (probe KL x{control['kl_ratio']:.2f}, pass@1 "
                    f"{control['pass_at_1']}): the pipeline is broken"
                    + ("; going on (--keep-going)" if args.keep_going else "; nothing else is run")
                )
                if not args.keep_going:
                    return
        rows.append(one_seed(seed, args, sets, run_kw, eval_kw))
        report["rows"], report["seconds"] = rows, time.time() - t0
        console.print(
            json.dumps({k: v for k, v in rows[-1].items() if k != "kl_to_teacher_steps"}, default=str)
        )
        write_json(out, report)
        plot(out, control, rows)


if __name__ == "__main__":
    main()

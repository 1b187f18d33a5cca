"""On-policy distillation vs GRPO alone, from the same small student, at equal sampled tokens (CPU).

    iclaw demo                                   # first: the teacher (`demo`) and the task files
    python benchmarks/bench_distill.py --tasks-dir runs/demo

1. student: a GPT smaller than the demo policy (2 layers instead of 4), SFT from scratch on the same
   demonstrations the demo's warm-up used                                          → registry `student-sft`
2. distillation: teacher `demo` (the GRPO-trained policy), reverse KL on the student's own tokens, for
   --minutes of wall clock                                                      → registry `student-distill`
3. GRPO alone from `student-sft`, stopped at the same number of sampled policy tokens  → `student-grpo`
4. held-out pass@1 (greedy, the demo's max turns) of all of them, teacher included, per family.

Prints the table and writes --out (JSON).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.lab.demo import DemoConfig
from iclaw.model import registry
from iclaw.model.gpt import GPT, default_device, preset
from iclaw.store import Store
from iclaw.tasks import Verifier, load_tasks
from iclaw.train.common import console, report_table, safe_sandbox
from iclaw.train.distill import DistillConfig, train_distill
from iclaw.train.grpo import GRPOConfig, train_grpo
from iclaw.train.sft import SFTConfig, demonstrations, train_sft

DEMO = DemoConfig()  # the student's warm-up uses the demo's demonstrations


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks-dir", default="runs/demo", help="where `iclaw demo` wrote train/heldout.jsonl")
    ap.add_argument("--teacher", default="demo")
    ap.add_argument("--student-layers", type=int, default=2)
    ap.add_argument("--sft-minutes", type=float, default=4.0)
    ap.add_argument(
        "--minutes", type=float, default=4.0, help="distillation wall clock; GRPO gets its tokens"
    )
    ap.add_argument("--lr", type=float, default=2e-4, help="the same for distillation and GRPO")
    ap.add_argument("--max-turns", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench-distill.json")
    args = ap.parse_args()

    dev = default_device()
    sandbox = safe_sandbox(False)
    verifier = Verifier(sandbox)
    tasks_dir = Path(args.tasks_dir)
    train = load_tasks(tasks_dir / "train.jsonl")
    heldout = load_tasks(tasks_dir / "heldout.jsonl")
    store = Store(Path(args.out).with_suffix(".db"))
    t0 = time.time()

    # 1. the student: smaller, SFT on the demo's warm-up demonstrations
    single = [t for t in train if t.reference and not t.multi_turn]
    demos = demonstrations(single, sandbox, look_first=DEMO.look_first, retry=DEMO.retry, seed=args.seed)
    torch.manual_seed(args.seed)
    teacher_model = registry.load(args.teacher, device="cpu")[0]
    teacher_params = teacher_model.num_params()
    # the teacher's own vocabulary: a full 50,304-row head would make the "small" student bigger than a
    # trimmed teacher, and sampled-token KL needs a teacher row for every id the student can write
    student = GPT(preset("tiny", n_layer=args.student_layers), teacher_model.vocab).to(dev)
    console.print(
        f"student {student.num_params() / 1e6:.2f}M params ({args.student_layers} layers), "
        f"teacher {args.teacher} {teacher_params / 1e6:.2f}M; SFT {args.sft_minutes:g} min on {len(demos)} demos"
    )
    sft = train_sft(
        student,
        demos,
        SFTConfig(lr=2e-3, batch_size=16, steps=None, minutes=args.sft_minutes, seed=args.seed),
        device=dev,
    )
    registry.publish("student-sft", student, meta={"source": "bench-distill", "step": sft["steps"]})

    common = dict(
        group_size=8, tasks_per_step=8, lr=args.lr, max_turns=args.max_turns, save_every=1000, seed=args.seed
    )
    run_kw = dict(
        sandbox=sandbox,
        verifier=verifier,
        store=store,
        device=str(dev),
        show_progress=False,
        echo=console.print,
    )
    # 2. distillation for a wall-clock budget
    d = train_distill(
        DistillConfig(
            teacher=args.teacher,
            student="student-sft",
            out="student-distill",
            steps=10_000,
            minutes=args.minutes,
            **common,
        ),
        train,
        **run_kw,
    )
    tokens = d["history"][-1]["sampled_tokens"]
    # 3. GRPO alone, same start, same sampled tokens
    g = train_grpo(
        GRPOConfig(model="student-sft", out="student-grpo", steps=10_000, max_tokens=tokens, **common),
        train,
        **run_kw,
    )

    # 4. held-out pass@1
    ep = EpisodeConfig(max_turns=args.max_turns, temperature=0.0)
    names = {
        "teacher": args.teacher,
        "student-sft": "student-sft",
        "distill": "student-distill",
        "GRPO alone": "student-grpo",
    }
    reports = {
        k: evaluate(
            Policy.load(n, device=dev), heldout, sandbox=sandbox, verifier=verifier, cfg=ep, store=store
        )
        for k, n in names.items()
    }
    console.print(report_table(f"held-out pass@1 (%), greedy, max_turns {args.max_turns}", reports))
    result = {
        "args": vars(args),
        "seconds": time.time() - t0,
        "student_params": student.num_params(),
        "teacher_params": teacher_params,
        "sampled_tokens": {"distill": tokens, "grpo": g["history"][-1]["sampled_tokens"]},
        "steps": {"distill": d["steps"], "grpo": g["steps"]},
        "seconds_by_run": {"distill": d["seconds"], "grpo": g["seconds"]},
        "kl_to_teacher": [d["history"][0]["kl_to_teacher"], d["history"][-1]["kl_to_teacher"]],
        "pass_at_1": {k: r.pass_at_1 for k, r in reports.items()},
        "reports": {k: r.to_dict() for k, r in reports.items()},
    }
    write_json(Path(args.out), result)
    console.print(
        json.dumps({k: result[k] for k in ("sampled_tokens", "steps", "kl_to_teacher", "pass_at_1")})
    )
    store.close()


if __name__ == "__main__":
    main()

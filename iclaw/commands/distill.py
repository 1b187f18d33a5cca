"""`iclaw distill`: on-policy distillation of a teacher policy into a student. Flags here, work in
iclaw/train/distill.py. Only typer + stdlib at module level (torch is imported inside the command)."""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import Db, Device, Seed, Unsafe, refuse_removed, removed_flag
from iclaw.errors import IclawError
from iclaw.train.config import REMOVED, DistillConfig  # torch-free: the flags default to its fields


def register(app: typer.Typer) -> None:
    app.command(
        "distill",
        help="On-policy distillation: the student (on --device) fixes tasks with real tools, the teacher grades "
        "every token it wrote (reverse KL), optionally mixed with the verifier's reward.",
    )(distill)


def distill(
    teacher: str = typer.Option(..., "--teacher", help="Teacher: registry name or checkpoint path (frozen)."),
    student: str = typer.Option(..., "--student", help="Starting student: registry name or checkpoint path."),
    out: str | None = typer.Option(
        None, "--out", help="Registry name to publish under (default: STUDENT-distill).", show_default=False
    ),
    tasks: Path | None = typer.Option(
        None, "--tasks", help="JSONL task file (generated, mined or hand-written)."
    ),
    from_db: bool = typer.Option(False, "--from-db", help="Also mine tasks from the trajectory store."),
    steps: int = typer.Option(DistillConfig.steps, "--steps"),
    reward_weight: float = typer.Option(
        DistillConfig.reward_weight,
        "--reward-weight",
        help="W: add W x the verifier's GRPO advantage (0 = pure distillation).",
    ),
    kl: str = typer.Option(
        DistillConfig.kl,
        "--kl",
        help="full (default: the exact KL over the vocabulary, a whole distribution per token; teacher and student "
        "need the same vocabulary) | sampled (log p_s - log p_t at the drawn token, clipped at +-5; the teacher "
        "needs a row for every student token id).",
    ),
    group_size: int = typer.Option(
        DistillConfig.group_size,
        "--group-size",
        help="Student episodes per task (G); 1: pure distillation needs no group baseline (2+ with --reward-weight).",
    ),
    tasks_per_step: int = typer.Option(
        DistillConfig.tasks_per_step,
        "--tasks-per-step",
        help="Distinct tasks a step: many states of many tasks teach more than many samples of a few.",
    ),
    lr: float = typer.Option(
        DistillConfig.lr,
        "--lr",
        help="Warmed up over 10 steps; at 1e-3 a small student lost 10 points on dev in 60 steps, at 3e-4 3 (docs/LOG.md).",
    ),
    temperature: str | None = removed_flag("--temperature"),
    max_turns: int = typer.Option(DistillConfig.max_turns, "--max-turns"),
    sft_coef: float = typer.Option(
        DistillConfig.sft_coef,
        "--sft-coef",
        help="PPO-ptx, as in train grpo: add this x the NLL of a batch of the pool's reference fixes to every "
        "update (0 = off). With 1 at --lr 3e-4 a small student kept its start on dev (+1.4 [-2.1, +4.8]).",
    ),
    minutes: float | None = typer.Option(
        DistillConfig.minutes, "--minutes", help="Optional wall-clock budget."
    ),
    overrides: list[str] = typer.Option(
        [],
        "--set",
        help="FIELD=VALUE for any other DistillConfig field (iclaw/train/config.py), as `train grpo --set`: "
        "e.g. --set max_new_tokens=48 --set max_tokens=200000 --set warmup=0 --set probe_every=5; repeatable.",
    ),
    max_new_tokens: str | None = removed_flag("--max-new-tokens"),
    ppo_epochs: str | None = removed_flag("--ppo-epochs"),
    save_every: str | None = removed_flag("--save-every"),
    max_tokens: str | None = removed_flag("--max-tokens"),
    resume: bool = typer.Option(False, "--resume", help="Continue the run published under --out exactly."),
    seed: Seed = 0,
    device: Device = None,
    teacher_device: str | None = typer.Option(
        DistillConfig.teacher_device, "--teacher-device", help="Teacher device (default: the student's)."
    ),
    teacher_dtype: str = typer.Option(
        DistillConfig.teacher_dtype,
        "--teacher-dtype",
        help="auto (bf16 on CUDA, else float32) | float32 | bfloat16 | float16.",
    ),
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from iclaw.train.common import apply_overrides
    from iclaw.train.distill import run_distill

    refuse_removed(temperature=temperature)
    for flag, value in (
        ("max_new_tokens", max_new_tokens),
        ("ppo_epochs", ppo_epochs),
        ("save_every", save_every),
        ("max_tokens", max_tokens),
    ):
        if value is not None:  # these knobs are `--set FIELD=...` in both trainers now, as in train grpo
            raise IclawError(
                f"--{flag.replace('_', '-')}: moved: --set {flag}={value}, as in `iclaw train grpo`"
            )
    cfg = DistillConfig(
        teacher=teacher,
        student=student,
        out=out or f"{Path(student).name}-distill",
        steps=steps,
        kl=kl,
        reward_weight=reward_weight,
        group_size=group_size,
        tasks_per_step=tasks_per_step,
        lr=lr,
        max_turns=max_turns,
        sft_coef=sft_coef,
        minutes=minutes,
        seed=seed,
        teacher_device=teacher_device,
        teacher_dtype=teacher_dtype,
    )
    cfg = apply_overrides(cfg, overrides, removed=REMOVED)
    run_distill(
        cfg,
        tasks_file=tasks,
        from_db=from_db,
        db=db,
        resume=resume,
        device=device,
        allow_unsafe=unsafe_no_sandbox,
    )

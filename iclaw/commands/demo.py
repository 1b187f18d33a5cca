"""`iclaw demo` (the main job: from nothing to a policy GRPO made better) and `iclaw ablate beta` (GRPO from
the same start and seeds for each β): the lab's experiments, iclaw/lab/. Only typer + stdlib at module level."""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import Db, Seed, Unsafe, refuse_removed, removed_flag
from iclaw.train.config import GRPOConfig  # torch-free: the GRPO flags default to its fields

ablate_app = typer.Typer(help="Controlled comparisons from the same start and seeds.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command(
        "demo",
        help="The end-to-end demo: tiny policy from scratch → SFT → eval → GRPO (β=0.04) → eval, "
        "with an equal-time SFT control. Registers demo-sft and demo. Ctrl-C ends the running phase "
        "(publishing what it trained) and skips the rest.",
    )(demo_cmd)
    app.add_typer(ablate_app, name="ablate")


def demo_cmd(
    sft_steps: int = typer.Option(
        2000,
        "--sft-steps",
        help="SFT warm-up steps (a seed gives the same warm-up on every run that fits them in --sft-minutes).",
    ),
    grpo_steps: int = typer.Option(
        90, "--grpo-steps", help="GRPO steps; the SFT control gets the same time."
    ),
    sft_minutes: float = typer.Option(
        9.0, "--sft-minutes", help="Cap on SFT time (a slow machine stops here)."
    ),
    grpo_minutes: float = typer.Option(6.0, "--grpo-minutes", help="Cap on GRPO time."),
    control: bool = typer.Option(True, "--control/--no-control", help="Run the equal-time SFT control."),
    train_per_family: int = typer.Option(100, "--train-per-family"),
    heldout_per_family: int = typer.Option(30, "--heldout-per-family"),
    max_turns: int = typer.Option(GRPOConfig.max_turns, "--max-turns"),
    beta: float = typer.Option(GRPOConfig.beta, "--beta"),
    sft_coef: float = typer.Option(
        GRPOConfig.sft_coef,
        "--sft-coef",
        help="PPO-ptx weight: GRPO updates also imitate the warm-up's demonstrations.",
    ),
    curriculum: bool | None = removed_flag("--curriculum"),
    seed: Seed = 0,
    family: list[str] = typer.Option(
        None, "--family", "-f", help="Only these task families (repeatable; default: the demo's 19)."
    ),
    out: Path = typer.Option(Path("runs/demo"), "--out", help="Where task files and summary.json go."),
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from iclaw.lab.demo import DemoConfig, run_demo
    from iclaw.train.common import interrupted

    refuse_removed(curriculum=curriculum)
    cfg = DemoConfig(
        sft_steps=sft_steps,
        grpo_steps=grpo_steps,
        sft_minutes=sft_minutes,
        grpo_minutes=grpo_minutes,
        control=control,
        train_per_family=train_per_family,
        heldout_per_family=heldout_per_family,
        seed=seed,
        **({"families": tuple(family)} if family else {}),
        out_dir=str(out),
    )
    cfg.grpo.update(max_turns=max_turns, beta=beta, sft_coef=sft_coef)
    interrupted(run_demo(cfg, db=db, allow_unsafe=unsafe_no_sandbox))  # exit 130 after a Ctrl-C


@ablate_app.command(
    "beta",
    help="GRPO as the demo runs it (train/config.py's defaults, turns of 48 tokens) from the same start and "
    "seeds for each β; table + PNG of reward and KL.",
)
def ablate_beta(
    betas: str = typer.Option("0,0.04", "--betas", help="Comma-separated β values."),
    model: str = typer.Option("demo-sft", "--model"),
    tasks: Path = typer.Option(..., "--tasks", help="Training tasks (JSONL)."),
    heldout: Path = typer.Option(..., "--heldout", help="Held-out tasks for the final pass@1 (JSONL)."),
    steps: int = typer.Option(20, "--steps"),
    lr: float = typer.Option(GRPOConfig.lr, "--lr"),
    group_size: int = typer.Option(GRPOConfig.group_size, "--group-size"),
    tasks_per_step: int = typer.Option(GRPOConfig.tasks_per_step, "--tasks-per-step"),
    max_turns: int = typer.Option(GRPOConfig.max_turns, "--max-turns"),
    sft_coef: float = typer.Option(
        GRPOConfig.sft_coef, "--sft-coef", help="PPO-ptx weight (as in `train grpo`)."
    ),
    filter_zero_variance: bool | None = removed_flag("--filter-zero-variance"),
    seed: Seed = 0,
    out: Path = typer.Option(Path("ablate-beta.png"), "--out", help="PNG with reward and KL curves per β."),
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from iclaw.errors import IclawError
    from iclaw.lab.ablate import run_ablate_beta
    from iclaw.lab.demo import DemoConfig

    refuse_removed(filter_zero_variance=filter_zero_variance)
    try:
        values = [float(b) for b in betas.split(",") if b.strip()]
    except ValueError as e:
        raise IclawError(f"--betas: {betas!r} is not a comma-separated list of numbers") from e
    grpo = dict(DemoConfig().grpo, lr=lr, group_size=group_size, tasks_per_step=tasks_per_step)
    grpo.update(max_turns=max_turns, sft_coef=sft_coef)
    run_ablate_beta(
        values,
        model=model,
        tasks_file=tasks,
        heldout_file=heldout,
        steps=steps,
        seed=seed,
        out=out,
        db=db,
        allow_unsafe=unsafe_no_sandbox,
        grpo=grpo,
    )

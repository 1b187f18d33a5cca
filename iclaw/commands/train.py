"""`iclaw train sft|grpo`, `iclaw ablate beta`, `iclaw runs plot`. Flags here, work in iclaw/train/."""

from __future__ import annotations

from pathlib import Path

import typer

train_app = typer.Typer(
    help="Train the policy: SFT warm-up on demonstrations, GRPO on verified rewards.", no_args_is_help=True
)
ablate_app = typer.Typer(help="Controlled comparisons from the same start and seeds.", no_args_is_help=True)

DB = typer.Option(None, "--db", envvar="ICLAW_DB", help="Trajectory database (default ./trajectories.db).")
UNSAFE = typer.Option(
    False, "--unsafe-no-sandbox", help="Run model-written commands without bubblewrap (dangerous)."
)
MAX_TOKENS = typer.Option(
    None,
    "--max-tokens",
    help="Stop once this many policy tokens have been sampled (compare runs at equal tokens).",
)


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    app.add_typer(ablate_app, name="ablate")
    from iclaw.commands.store import runs_app

    runs_app.command("plot", help="Plot metrics of one or more runs (reward, KL, ...) to a PNG.")(runs_plot)


@train_app.command(
    "sft", help="Supervised warm-up on reference fixes in the agent protocol (policy tokens only)."
)
def sft_cmd(
    tasks: Path = typer.Option(
        ..., "--tasks", help="JSONL task file; tasks with a `reference` become demonstrations."
    ),
    out: str = typer.Option(..., "--out", help="Registry name to publish the trained model under."),
    init: str | None = typer.Option(
        None, "--init", help="Start from a fresh model of this preset (tiny, 124m, ...)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Start from this registry name or checkpoint path."
    ),
    steps: int = typer.Option(400, "--steps", help="Optimizer steps (ignored with --minutes)."),
    minutes: float | None = typer.Option(
        None, "--minutes", help="Train for this wall-clock time instead of --steps."
    ),
    lr: float = typer.Option(1e-3, "--lr"),
    batch_size: int = typer.Option(32, "--batch-size", help="Sequences per step."),
    look_first: float = typer.Option(
        0.0,
        "--look-first",
        help="Fraction of tasks also shown as 'ls, then the fix' (0..1; see iclaw/train/sft.py).",
    ),
    retry: float = typer.Option(
        0.0,
        "--retry",
        help="Fraction of tasks also shown as 'a failed attempt, then the fix' (teaches retrying; 0..1).",
    ),
    vocab: str = typer.Option(
        "trimmed",
        "--vocab",
        help="With --init: trimmed (rows only for the ids the demonstrations use, plus bytes) or full (GPT-2's 50,304).",
    ),
    seed: int = typer.Option(0, "--seed"),
    device: str | None = typer.Option(None, "--device", help="cuda, mps or cpu (default: best available)."),
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from iclaw.train.runs import run_sft

    run_sft(
        tasks_file=tasks,
        out=out,
        init=init,
        model=model,
        steps=steps,
        minutes=minutes,
        lr=lr,
        batch_size=batch_size,
        look_first=look_first,
        retry=retry,
        seed=seed,
        device=device,
        allow_unsafe=unsafe_no_sandbox,
        vocab=vocab,
    )


@train_app.command(
    "grpo", help="GRPO with an explicit KL-to-reference term, on verified rewards from real tools."
)
def grpo_cmd(
    model: str = typer.Option(
        "iclaw-small",
        "--model",
        help="Starting policy (registry name or path); also the KL reference. Default: the shipped policy.",
    ),
    out: str = typer.Option("grpo", "--out", help="Registry name to publish checkpoints under."),
    tasks: Path | None = typer.Option(
        None, "--tasks", help="JSONL task file (generated, mined or hand-written)."
    ),
    from_db: bool = typer.Option(False, "--from-db", help="Also mine tasks from the trajectory store."),
    beta: float = typer.Option(0.04, "--beta", help="KL coefficient (0 = no reference model)."),
    group_size: int = typer.Option(8, "--group-size", help="Episodes per task (G)."),
    tasks_per_step: int = typer.Option(8, "--tasks-per-step"),
    steps: int = typer.Option(50, "--steps"),
    minutes: float | None = typer.Option(None, "--minutes", help="Optional wall-clock budget."),
    lr: float = typer.Option(1e-4, "--lr"),
    max_turns: int = typer.Option(3, "--max-turns", help="Tool calls per episode."),
    sft_coef: float = typer.Option(
        1.0,
        "--sft-coef",
        help="PPO-ptx: add this x the NLL of a batch of the pool's reference fixes to every update (0 = off).",
    ),
    max_flagged: float | None = typer.Option(
        None,
        "--max-flagged",
        help="Stop (keeping the last good checkpoint) if the reward-hacking monitor flags more than this "
        "fraction of a step's episodes (0..1; `iclaw replay --flagged` lists them).",
    ),
    overrides: list[str] = typer.Option(
        [],
        "--set",
        help="FIELD=VALUE for any other GRPOConfig field (iclaw/train/grpo.py), e.g. --set ppo_epochs=2 "
        "--set eps_high=0.28 --set max_tokens=200000; repeatable.",
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the run published under --out exactly."),
    seed: int = typer.Option(0, "--seed"),
    device: str | None = typer.Option(None, "--device"),
    db: Path | None = DB,
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from iclaw.train.common import apply_overrides
    from iclaw.train.grpo import GRPOConfig
    from iclaw.train.runs import run_grpo

    cfg = GRPOConfig(
        model=model,
        out=out,
        steps=steps,
        group_size=group_size,
        tasks_per_step=tasks_per_step,
        lr=lr,
        beta=beta,
        max_turns=max_turns,
        sft_coef=sft_coef,
        max_flagged=max_flagged,
        seed=seed,
        minutes=minutes,
        # the rest of the recipe that trained iclaw-small (iclaw/train/recipe.py); --set changes any of it
        max_new_tokens=160,
        filter_zero_variance=True,
        kl_max=1.0,
    )
    run_grpo(
        apply_overrides(cfg, overrides),
        tasks_file=tasks,
        from_db=from_db,
        db=db,
        resume=resume,
        device=device,
        allow_unsafe=unsafe_no_sandbox,
    )


@ablate_app.command(
    "beta", help="GRPO from the same start and seeds for each β; table + PNG of reward and KL."
)
def ablate_beta(
    betas: str = typer.Option("0,0.04", "--betas", help="Comma-separated β values."),
    model: str = typer.Option("demo-sft", "--model"),
    tasks: Path = typer.Option(..., "--tasks", help="Training tasks (JSONL)."),
    heldout: Path = typer.Option(..., "--heldout", help="Held-out tasks for the final pass@1 (JSONL)."),
    steps: int = typer.Option(20, "--steps"),
    lr: float = typer.Option(1e-4, "--lr"),
    group_size: int = typer.Option(8, "--group-size"),
    tasks_per_step: int = typer.Option(8, "--tasks-per-step"),
    max_turns: int = typer.Option(2, "--max-turns"),
    filter_zero_variance: bool = typer.Option(
        False, "--filter-zero-variance", help="Drop groups whose rewards are all equal (as the demo does)."
    ),
    sft_coef: float = typer.Option(0.0, "--sft-coef", help="PPO-ptx weight (as in `train grpo`)."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("ablate-beta.png"), "--out", help="PNG with reward and KL curves per β."),
    db: Path | None = DB,
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from iclaw.errors import IclawError
    from iclaw.train.runs import run_ablate_beta

    try:
        values = [float(b) for b in betas.split(",") if b.strip()]
    except ValueError as e:
        raise IclawError(f"--betas: {betas!r} is not a comma-separated list of numbers") from e
    run_ablate_beta(
        values,
        model=model,
        tasks_file=tasks,
        heldout_file=heldout,
        steps=steps,
        lr=lr,
        group_size=group_size,
        tasks_per_step=tasks_per_step,
        max_turns=max_turns,
        seed=seed,
        out=out,
        db=db,
        allow_unsafe=unsafe_no_sandbox,
        filter_zero_variance=filter_zero_variance,
        sft_coef=sft_coef,
    )


def runs_plot(
    runs: list[str] = typer.Argument(..., help="Run ids (see `iclaw runs list`)."),
    out: Path = typer.Option(Path("runs.png"), "--out", help="PNG file to write."),
    metrics: str = typer.Option(
        "reward_mean,kl", "--metrics", help="Comma-separated metric names, one panel each."
    ),
    db: Path | None = DB,
) -> None:
    from iclaw.train.runs import plot_runs

    plot_runs(runs, out, [m.strip() for m in metrics.split(",") if m.strip()], db=db)


@train_app.command(
    "recipe",
    help="Train the default policy (iclaw-small) from scratch: tasks → SFT (trimmed vocabulary) → GRPO with "
    "the KL term → held-out and outside-set eval → model card. ~90 min on 2 CPU cores; a rerun resumes.",
)
def recipe_cmd(
    seed: int = typer.Option(0, "--seed"),
    out_dir: Path = typer.Option(Path("runs/recipe"), "--out-dir", help="Tasks, logs, summary.json, state."),
    install: bool = typer.Option(
        False, "--install", help="Copy the result into iclaw/assets/models/ (the shipped built-in copy)."
    ),
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from iclaw.train.recipe import RecipeConfig, run_recipe

    run_recipe(RecipeConfig(seed=seed, out_dir=str(out_dir)), allow_unsafe=unsafe_no_sandbox, install=install)

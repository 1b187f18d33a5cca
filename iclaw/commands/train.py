"""`iclaw train sft|grpo|recipe`: flags, checks and reports here; the trainers are iclaw/train/sft.py, grpo.py
and recipe.py. Only typer + stdlib at module level (torch loads inside the commands)."""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import Db, Device, Seed, Unsafe
from iclaw.train.config import REMOVED, GRPOConfig  # torch-free: `train grpo`'s flags default to its fields

train_app = typer.Typer(
    help="Train the policy: SFT warm-up on demonstrations, GRPO on verified rewards.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")


@train_app.command(
    "sft", help="Supervised warm-up on reference fixes in the agent protocol (policy tokens only)."
)
def sft_cmd(
    tasks: Path | None = typer.Option(
        None, "--tasks", help="JSONL task file; tasks with a `reference` become demonstrations."
    ),
    from_db: bool = typer.Option(
        False,
        "--from-db",
        help="Also imitate the fixes mined from the trajectory store: your own failures, fixed by iclaw or by "
        "you (expert iteration). With --tasks of generated train tasks rehearsed beside them, the rest is kept "
        "(docs/LOG.md 2026-12-07: --model iclaw-small --lr 3e-4 --steps 100).",
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
    seed: Seed = 0,
    device: Device = None,
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    import torch

    from iclaw.errors import IclawError
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, default_device, preset
    from iclaw.model.vocab import Vocab
    from iclaw.train.common import (
        MetricsLog,
        console,
        interrupted,
        live_progress,
        new_run_id,
        safe_sandbox,
        stop_on_ctrl_c,
        task_pool,
    )
    from iclaw.train.sft import SFTConfig, demonstrations, train_sft

    if vocab not in ("trimmed", "full"):
        raise IclawError(f"--vocab: must be trimmed or full, got {vocab!r}")
    if (init is None) == (model is None):
        raise IclawError(
            "give exactly one of --init PRESET (fresh model) or --model NAME (continue training)"
        )
    registry.check_name(out)
    sandbox = safe_sandbox(unsafe_no_sandbox)
    for flag, frac in (("--look-first", look_first), ("--retry", retry)):
        if not 0.0 <= frac <= 1.0:
            raise IclawError(f"{flag}: {frac} is not a fraction between 0 and 1")
    if look_first + retry > 1.0:
        raise IclawError(f"--look-first {look_first} + --retry {retry} exceed 1 (each task gets at most one)")
    task_list = task_pool(tasks, from_db, db, sandbox=sandbox)  # after the flags: a bad one mines nothing
    where = " and ".join(str(x) for x in (tasks, "the trajectory store" if from_db else None) if x)
    examples = demonstrations(task_list, sandbox, look_first=look_first, retry=retry, seed=seed)
    if not examples:
        raise IclawError(f"{where}: no task has a `reference` fix, so there is nothing to imitate")
    dev = torch.device(device) if device else default_device()
    torch.manual_seed(seed)
    if init is not None:  # from scratch: by default only the ids the demonstrations use get rows
        trimmed = Vocab.build(t for t, _ in examples) if vocab == "trimmed" else None
        net, parent = GPT(preset(init), trimmed).to(dev), f"init:{init}"
    else:
        net, meta = registry.load(model, device=dev)
        parent = meta.get("path")
    cfg = SFTConfig(
        lr=lr, batch_size=batch_size, steps=None if minutes else steps, minutes=minutes, seed=seed
    )
    run_id = new_run_id("sft")
    log = MetricsLog(run_id, None, config={"tasks": where, "out": out, **cfg.__dict__})
    console.print(f"SFT on {len(examples)} demonstrations from {where} → {out}  (run {run_id})")
    total = int(minutes * 60) if minutes else steps
    with stop_on_ctrl_c(), live_progress(total, f"SFT → {out}") as progress:
        res = train_sft(net, examples, cfg, device=dev, progress=progress, log=log.log)
    if res["stopped"]:
        console.print(f"[yellow]stopped:[/] {res['stopped']}")
    if res["steps"] == 0:  # interrupted before the first step: there is nothing new to publish
        raise KeyboardInterrupt
    fmt = {"look_first": look_first, "retry": retry}  # GRPO's ptx term shows demonstrations in this form
    meta = {"source": f"sft:{run_id}", "step": res["steps"], "parent": parent, "demonstrations": fmt}
    ckpt = registry.publish(out, net, meta=meta)
    console.print(
        f"published {out} → {ckpt}  ({res['steps']} steps, {res['seconds']:.0f}s, loss {res['loss']:.3f})"
    )
    interrupted(res)


@train_app.command(
    "grpo", help="GRPO with an explicit KL-to-reference term, on verified rewards from real tools."
)
def grpo_cmd(
    model: str = typer.Option(
        GRPOConfig.model,
        "--model",
        help="Starting policy (registry name or path); also the KL reference. Default: the shipped policy.",
    ),
    out: str = typer.Option(GRPOConfig.out, "--out", help="Registry name to publish checkpoints under."),
    tasks: Path | None = typer.Option(
        None, "--tasks", help="JSONL task file (generated, mined or hand-written)."
    ),
    from_db: bool = typer.Option(
        False,
        "--from-db",
        help="Also mine tasks from the trajectory store; of 10 or more mined, every fifth is held out and scored "
        "before and after (pass@1 on your own kinds of mistake, never trained on).",
    ),
    beta: float = typer.Option(GRPOConfig.beta, "--beta", help="KL coefficient."),
    group_size: int = typer.Option(GRPOConfig.group_size, "--group-size", help="Episodes per task (G)."),
    tasks_per_step: int = typer.Option(GRPOConfig.tasks_per_step, "--tasks-per-step"),
    steps: int = typer.Option(GRPOConfig.steps, "--steps"),
    minutes: float | None = typer.Option(GRPOConfig.minutes, "--minutes", help="Optional wall-clock budget."),
    lr: float = typer.Option(GRPOConfig.lr, "--lr"),
    max_turns: int = typer.Option(GRPOConfig.max_turns, "--max-turns", help="Tool calls per episode."),
    sft_coef: float = typer.Option(
        GRPOConfig.sft_coef,
        "--sft-coef",
        help="PPO-ptx: add this x the NLL of a batch of the pool's reference fixes to every update (0 = off).",
    ),
    max_flagged: float | None = typer.Option(
        GRPOConfig.max_flagged,
        "--max-flagged",
        help="Stop (keeping the last good checkpoint) if the reward-hacking monitor flags more than this "
        "fraction of a step's episodes (0..1; `iclaw replay --flagged any` lists them).",
    ),
    overrides: list[str] = typer.Option(
        [],
        "--set",
        help="FIELD=VALUE for any other GRPOConfig field (iclaw/train/config.py), e.g. --set ppo_epochs=2 "
        "--set max_new_tokens=48 --set max_tokens=200000; repeatable.",
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the run published under --out exactly."),
    seed: Seed = 0,
    device: Device = None,
    db: Db = None,
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from iclaw.agent.evaluate import paired_bootstrap
    from iclaw.errors import IclawError
    from iclaw.model import registry
    from iclaw.model.checkpoint import load_trainer_state
    from iclaw.store import Store
    from iclaw.tasks import Verifier
    from iclaw.train.common import (
        INTERRUPTED,
        MINED_SLICE_MIN,
        apply_overrides,
        console,
        hold_out_mined,
        interrupted,
        safe_sandbox,
        score_slice,
        stop_on_ctrl_c,
        task_pool,
    )
    from iclaw.train.grpo import check_config, train_grpo
    from iclaw.train.sft import ptx_demos

    flags = dict(
        model=model, out=out, steps=steps, group_size=group_size, tasks_per_step=tasks_per_step, lr=lr
    )
    flags.update(beta=beta, max_turns=max_turns, sft_coef=sft_coef, max_flagged=max_flagged, seed=seed)
    cfg = apply_overrides(GRPOConfig(**flags, minutes=minutes), overrides, removed=REMOVED)
    registry.check_name(cfg.out)
    check_config(cfg)
    if resume:  # a run that cannot be resumed fails here, before anything is written
        if not registry.is_registered(cfg.out):
            raise IclawError(f"--resume: no checkpoints under '{cfg.out}' to resume from")
        state = load_trainer_state(registry.resolve(cfg.out))
        if state is None or state.get("kind") != "grpo":
            raise IclawError(
                f"--resume: {registry.resolve(cfg.out)} has no GRPO trainer state to resume from"
            )
        start = Path(state["reference"])
    else:
        start = registry.resolve(cfg.model)  # an unknown name fails here, before anything is written
    sandbox = safe_sandbox(unsafe_no_sandbox)
    pool, held = hold_out_mined(task_pool(tasks, from_db, db, sandbox=sandbox))
    demos = ptx_demos(
        cfg.sft_coef, pool, sandbox, start, cfg.seed
    )  # before the store: a bad flag writes nothing
    if from_db and not held:
        console.print(f"no held-out slice: fewer than {MINED_SLICE_MIN} mined tasks")
    with Store(db) as store, stop_on_ctrl_c():
        before = score_slice(start, held, cfg, sandbox, store) if held else None
        kw = dict(sandbox=sandbox, verifier=Verifier(sandbox), store=store, device=device, demos=demos)
        summary = train_grpo(cfg, pool, resume=resume, **kw)
        after = score_slice(registry.resolve(cfg.out), held, cfg, sandbox, store) if held else None
    if summary.get("stopped"):
        console.print(f"[yellow]stopped:[/] {summary['stopped']}")
    console.print(
        f"run {summary['run_id']}: {summary['steps']} steps in {summary['seconds']:.0f}s; "
        f"latest checkpoint {cfg.out} → {summary['checkpoint']}"
    )
    if held:  # the user's own kinds of mistake, on mined tasks this run never trained on
        d = paired_bootstrap(before, after)
        console.print(
            f"held-out slice of the mined tasks ({len(held)}, never trained on): pass@1 {100 * before.pass_at_1:.1f}"
            f" → {100 * after.pass_at_1:.1f} % ({d['delta']:+.1f} points, 95 % [{d['lo']:+.1f}, {d['hi']:+.1f}])"
        )
    if summary.get("stopped") == INTERRUPTED:
        console.print(f"continue with: iclaw train grpo --out {cfg.out} --resume (and the same flags)")
    interrupted(summary)


@train_app.command(
    "recipe",
    help="Train the default policy (iclaw-small) from scratch: tasks → SFT (trimmed vocabulary) → GRPO with "
    "the KL term → held-out and outside-set eval → model card. ~90 min on 2 CPU cores; a rerun resumes.",
)
def recipe_cmd(
    seed: Seed = 0,
    out_dir: Path = typer.Option(Path("runs/recipe"), "--out-dir", help="Tasks, logs, summary.json, state."),
    install: bool = typer.Option(
        False, "--install", help="Copy the result into iclaw/assets/models/ (the shipped built-in copy)."
    ),
    base: str = typer.Option(
        None, "--base", help="Start SFT from this pretrained model (name or path) instead of from scratch."
    ),
    unsafe_no_sandbox: Unsafe = False,
) -> None:
    from iclaw.train.recipe import RecipeConfig, run_recipe

    cfg = RecipeConfig(seed=seed, out_dir=str(out_dir), base=base)
    run_recipe(cfg, allow_unsafe=unsafe_no_sandbox, install=install)

"""The bodies of the training commands: load, check, train, publish, report. The CLI only parses flags."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from iclaw.errors import IclawError
from iclaw.train.common import INTERRUPTED, interrupted, stop_on_ctrl_c, stop_requested
from iclaw.train.setup import load_task_file, safe_sandbox, task_pool

console = Console(highlight=False)


def _store(db: Path | None):
    from iclaw.store import Store

    return Store(db)


def run_sft(
    *,
    tasks_file: Path,
    out: str,
    init: str | None,
    model: str | None,
    steps: int,
    minutes: float | None,
    lr: float,
    batch_size: int,
    seed: int,
    device: str | None,
    allow_unsafe: bool,
    look_first: float = 0.0,
    retry: float = 0.0,
    vocab: str = "trimmed",
    show_progress: bool = True,
) -> dict:
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, default_device, preset
    from iclaw.model.vocab import Vocab
    from iclaw.train.common import MetricsLog, live_progress, new_run_id
    from iclaw.train.sft import SFTConfig, demonstrations, train_sft

    if vocab not in ("trimmed", "full"):
        raise IclawError(f"--vocab: must be trimmed or full, got {vocab!r}")
    if (init is None) == (model is None):
        raise IclawError(
            "give exactly one of --init PRESET (fresh model) or --model NAME (continue training)"
        )
    registry.check_name(out)
    sandbox = safe_sandbox(allow_unsafe)
    tasks = load_task_file(tasks_file, sandbox)
    for flag, frac in (("--look-first", look_first), ("--retry", retry)):
        if not 0.0 <= frac <= 1.0:
            raise IclawError(f"{flag}: {frac} is not a fraction between 0 and 1")
    if look_first + retry > 1.0:
        raise IclawError(f"--look-first {look_first} + --retry {retry} exceed 1 (each task gets at most one)")
    examples = demonstrations(tasks, sandbox, look_first=look_first, retry=retry, seed=seed)
    if not examples:
        raise IclawError(f"{tasks_file}: no task has a `reference` fix, so there is nothing to imitate")
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
    log = MetricsLog(run_id, None, config={"tasks": str(tasks_file), "out": out, **cfg.__dict__})
    console.print(f"SFT on {len(examples)} demonstrations from {tasks_file} → {out}  (run {run_id})")
    total = int(minutes * 60) if minutes else steps
    with stop_on_ctrl_c(), live_progress(total, f"SFT → {out}", enabled=show_progress) as progress:
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
    return {**res, "checkpoint": ckpt, "run_id": run_id}


def ptx_demos(sft_coef: float, tasks: list, sandbox, start: Path, seed: int) -> list | None:
    """The ptx term's demonstrations (sft_coef > 0): the pool's single-turn reference fixes (sft.py), with
    the look-first / retry fractions the starting checkpoint's SFT used. Raises the flag's error when there
    are none."""
    from iclaw.train.grpo import check_ptx
    from iclaw.train.sft import demonstration_format, demonstrations

    demos = None
    if sft_coef > 0:
        fmt = demonstration_format(start)
        single = [t for t in tasks if t.reference and not t.multi_turn]
        demos = demonstrations(single, sandbox, **fmt, seed=seed)
        how = ", ".join(f"{k.replace('_', '-')} {v:g}" for k, v in fmt.items())
        how = f"{how}, as the starting checkpoint's SFT drew them" if fmt else "plain: no SFT format recorded"
        console.print(f"ptx: {len(demos)} demonstrations ({how})")
    check_ptx(sft_coef, demos)
    return demos


def run_grpo(
    cfg,
    *,
    tasks_file: Path | None,
    from_db: bool,
    db: Path | None,
    resume: bool,
    device: str | None,
    allow_unsafe: bool,
    show_progress: bool = True,
) -> dict:
    from iclaw.model import registry
    from iclaw.tasks import Verifier
    from iclaw.train.grpo import check_config, train_grpo

    registry.check_name(cfg.out)
    check_config(cfg)
    if resume:  # a run that cannot be resumed fails here, before anything is written
        from iclaw.model.checkpoint import load_trainer_state

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
    sandbox = safe_sandbox(allow_unsafe)
    tasks = task_pool(tasks_file, from_db, db, sandbox=sandbox)
    # before the store: a bad flag writes nothing
    demos = ptx_demos(cfg.sft_coef, tasks, sandbox, start, cfg.seed)
    with _store(db) as store, stop_on_ctrl_c():
        summary = train_grpo(
            cfg,
            tasks,
            sandbox=sandbox,
            verifier=Verifier(sandbox),
            store=store,
            resume=resume,
            device=device,
            show_progress=show_progress,
            demos=demos,
        )
    if summary.get("stopped"):
        console.print(f"[yellow]stopped:[/] {summary['stopped']}")
    console.print(
        f"run {summary['run_id']}: {summary['steps']} steps in {summary['seconds']:.0f}s; "
        f"latest checkpoint {cfg.out} → {summary['checkpoint']}"
    )
    if summary.get("stopped") == INTERRUPTED:
        console.print(f"continue with: iclaw train grpo --out {cfg.out} --resume (and the same flags)")
    interrupted(summary)
    return summary


def run_ablate_beta(
    betas: list[float],
    *,
    model: str,
    tasks_file: Path,
    heldout_file: Path,
    steps: int,
    lr: float,
    group_size: int,
    tasks_per_step: int,
    max_turns: int,
    seed: int,
    out: Path,
    db: Path | None,
    allow_unsafe: bool,
    filter_zero_variance: bool = False,
    sft_coef: float = 0.0,
) -> list[dict]:
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.evaluate import evaluate
    from iclaw.agent.policy import Policy
    from iclaw.model import registry
    from iclaw.tasks import Verifier
    from iclaw.train.grpo import GRPOConfig, train_grpo

    start = registry.resolve(model)
    sandbox = safe_sandbox(allow_unsafe)
    tasks, heldout = load_task_file(tasks_file, sandbox), load_task_file(heldout_file, sandbox)
    verifier = Verifier(sandbox)
    demos = ptx_demos(sft_coef, tasks, sandbox, start, seed)
    rows, stopped = [], False
    with _store(db) as store, stop_on_ctrl_c():
        for beta in betas:
            name = f"ablate-beta-{beta:g}".replace(".", "p")
            cfg = GRPOConfig(
                model=model,
                out=name,
                steps=steps,
                lr=lr,
                beta=beta,
                group_size=group_size,
                tasks_per_step=tasks_per_step,
                max_turns=max_turns,
                seed=seed,
                save_every=steps,
                kl_max=float("inf"),  # the ablation records how far each β drifts; it must not stop on it
                filter_zero_variance=filter_zero_variance,
                sft_coef=sft_coef,
            )
            s = train_grpo(cfg, tasks, sandbox=sandbox, verifier=verifier, store=store, demos=demos)
            if stopped := stop_requested():  # a first Ctrl-C: this β stopped early (and published); no row
                break
            pol = Policy.load(name)
            rep = evaluate(
                pol,
                heldout,
                sandbox=sandbox,
                verifier=verifier,
                cfg=EpisodeConfig(max_turns=max_turns, temperature=0.0),
                store=store,
            )
            hist = s["history"]
            rows.append(
                {
                    "beta": beta,
                    "run_id": s["run_id"],
                    "heldout_pass_at_1": rep.pass_at_1,
                    "mean_kl": sum(h["kl"] for h in hist) / max(1, len(hist)),
                    "final_kl": hist[-1]["kl"] if hist else 0.0,
                    "mean_reward": sum(h["reward_mean"] for h in hist) / max(1, len(hist)),
                    "history": hist,
                }
            )
    table = Table(title="β ablation (same start, same seeds)", header_style="bold")
    for c in ("β", "held-out pass@1", "mean KL", "final KL", "mean reward", "run"):
        table.add_column(c, justify="right")
    for r in rows:
        table.add_row(
            f"{r['beta']:g}",
            f"{r['heldout_pass_at_1']:.3f}",
            f"{r['mean_kl']:.4f}",
            f"{r['final_kl']:.4f}",
            f"{r['mean_reward']:.3f}",
            r["run_id"],
        )
    console.print(table)
    if rows:
        _plot({f"β={r['beta']:g}": r["history"] for r in rows}, ["reward_mean", "kl"], out)
        console.print(f"wrote {out}")
    if stopped:
        console.print(f"Ctrl-C: the ablation stopped after {len(rows)} of {len(betas)} β values")
        raise KeyboardInterrupt
    return rows


def plot_runs(runs: list[str], out: Path, metrics: list[str], db: Path | None = None) -> None:
    with _store(db) as store:
        series = {}
        for r in runs:
            rows = store.metrics(r)
            if not rows:
                raise IclawError(f"run {r!r}: no metrics logged (see `iclaw runs list`)")
            series[r] = rows
    _plot(series, metrics, out)
    console.print(f"wrote {out}")


def _plot(series: dict[str, list[dict]], metrics: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for label, rows in series.items():
            xs = [r.get("step", i + 1) for i, r in enumerate(rows) if r.get(m) is not None]
            ys = [r[m] for r in rows if r.get(m) is not None]
            ax.plot(xs, ys, label=label)
        ax.set_title(m)
        ax.set_xlabel("step")
        ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def report_table(title: str, reports: dict[str, object]) -> Table:
    """Per-family pass@1 columns for several evaluation reports (EvalReport) side by side."""
    families = sorted({f for r in reports.values() for f in r.by_family})
    t = Table(title=title, header_style="bold")
    t.add_column("family")
    for name in reports:
        t.add_column(name, justify="right")
    for f in families:
        t.add_row(
            f, *[f"{r.by_family.get(f, {}).get('pass_at_1', 0.0) * 100:5.1f}" for r in reports.values()]
        )
    t.add_row("[bold]overall[/]", *[f"[bold]{r.pass_at_1 * 100:5.1f}[/]" for r in reports.values()])
    return t


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str) + "\n")

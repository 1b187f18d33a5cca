"""`iclaw ablate beta`: GRPO from the same start and seeds for each β, then held-out pass@1, KL and reward side
by side (a table, and a PNG of the reward and KL curves)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from iclaw.train.common import (
    console,
    load_task_file,
    plot_series,
    safe_sandbox,
    stop_on_ctrl_c,
    stop_requested,
)


def run_ablate_beta(
    betas: list[float],
    *,
    model: str,
    tasks_file: Path,
    heldout_file: Path,
    steps: int,
    seed: int,
    out: Path,
    db: Path | None,
    allow_unsafe: bool,
    grpo: dict | None = None,
) -> list[dict]:
    """One GRPO run per β (published as ablate-beta-B), each evaluated greedily on the held-out tasks; returns
    the rows of the table. Each run is GRPOConfig's (train/config.py) with `grpo`'s fields changed. A first
    Ctrl-C stops after the running β (published, no row)."""
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.evaluate import evaluate
    from iclaw.agent.policy import Policy
    from iclaw.model import registry
    from iclaw.store import Store
    from iclaw.tasks import Verifier
    from iclaw.train.grpo import GRPOConfig, train_grpo
    from iclaw.train.sft import ptx_demos

    start = registry.resolve(model)
    sandbox = safe_sandbox(allow_unsafe)
    tasks, heldout = load_task_file(tasks_file, sandbox), load_task_file(heldout_file, sandbox)
    verifier = Verifier(sandbox)
    # the ablation records how far each β drifts: it must not stop on the KL guard
    run = dict(model=model, steps=steps, seed=seed, save_every=steps, **(grpo or {}), kl_max=float("inf"))
    demos = ptx_demos(GRPOConfig(**run).sft_coef, tasks, sandbox, start, seed)
    rows, stopped = [], False
    with Store(db) as store, stop_on_ctrl_c():
        for beta in betas:
            name = f"ablate-beta-{beta:g}".replace(".", "p")
            cfg = GRPOConfig(**run, out=name, beta=beta)
            s = train_grpo(cfg, tasks, sandbox=sandbox, verifier=verifier, store=store, demos=demos)
            if stopped := stop_requested():  # a first Ctrl-C: this β stopped early (and published); no row
                break
            pol = Policy.load(name)
            ep = EpisodeConfig(max_turns=cfg.max_turns, temperature=0.0)
            rep = evaluate(pol, heldout, sandbox=sandbox, verifier=verifier, cfg=ep, store=store)
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
        plot_series({f"β={r['beta']:g}": r["history"] for r in rows}, ["reward_mean", "kl"], out)
        console.print(f"wrote {out}")
    if stopped:
        console.print(f"Ctrl-C: the ablation stopped after {len(rows)} of {len(betas)} β values")
        raise KeyboardInterrupt
    return rows

"""The bookkeeping of an on-policy training run, shared by GRPO (grpo.py) and distillation (distill.py).

Both loops are the same shape — roll out, score, update, publish — and differ only in how they score and
update. Everything around that lives here, written once: resuming from the latest checkpoint, restoring the
optimizer and RNGs, this rank's tasks and sampling seed for a step, logging episodes and metrics, counting the
policy tokens sampled so far, the wall-clock budget, publishing with the trainer state, and the summary.

    policy, state = resume_policy(cfg.out, "grpo", dev)       # --resume; else a fresh policy, state None
    opt = make_optimizer(...); restore_or_seed(opt, state, cfg.seed, rank)
    run = OnPolicyRun.start("grpo", cfg, state, rank=rank, world=world, device=dev, store=store)
    step = run.start_step
    while step < cfg.steps and not run.budget_spent():
        eps = run.rollout(policy, tasks, step, sandbox, verifier)   # this rank's tasks, seeded by (step, rank)
        run.record_episodes(eps, step, ...)                        # store + sampled_tokens
        ... score, update: the trainer's own ...
        step += 1; run.log(step, metrics)
        if run.should_publish(step): run.publish(step, model, opt, state=..., meta=...)
    return run.summary(step, checkpoint)
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from iclaw.agent.episode import Episode, EpisodeConfig, episode_record
from iclaw.agent.policy import Policy
from iclaw.errors import IclawError
from iclaw.train.common import (
    INTERRUPTED,
    TIME_UP,
    MetricsLog,
    all_reduce_sum,
    new_run_id,
    rng_state,
    set_rng_state,
    stop_requested,
)
from iclaw.train.config import OnPolicyConfig
from iclaw.train.rollout import rollout

TOKENS_UP = "token budget reached"  # the summary's `stopped` when --max-tokens policy tokens were sampled
BUDGETS = (TIME_UP, TOKENS_UP, INTERRUPTED)  # the stops after which the trainer publishes where it is


def sample_tasks(pool: list, n: int, step: int, seed: int) -> list:
    """The step's tasks: a pure function of (seed, step), so resume and torchrun ranks agree."""
    rng = random.Random(f"{seed}:{step}")
    if len(pool) >= n:
        return rng.sample(pool, n)
    return [rng.choice(pool) for _ in range(n)]


def resume_policy(out: str, kind: str, device: torch.device) -> tuple[Policy, dict]:
    """The latest checkpoint under `out` as a policy, and the trainer state it was published with.
    Refuses (one clear error) a name with no checkpoints, a checkpoint without a trainer state or with another
    architecture, and a state written by another kind of trainer."""
    from iclaw.model import registry
    from iclaw.model.checkpoint import load_trainer_state
    from iclaw.train.common import check_resume_compatible

    if not registry.is_registered(out):
        raise IclawError(f"--resume: no checkpoints under '{out}' to resume from")
    path = registry.resolve(out)
    state = load_trainer_state(path)
    policy = Policy.load(out, device=device)
    check_resume_compatible(policy.model, state, str(path))
    if state.get("kind") != kind:
        raise IclawError(f"{path}: trainer state is from '{state.get('kind')}', not {kind}")
    return policy, state


def restore_or_seed(opt: torch.optim.Optimizer, trainer_state: dict | None, seed: int, rank: int) -> None:
    """On resume, the optimizer moments and every RNG as they were at the checkpoint, so the run continues
    exactly as if it had never stopped; otherwise seed the RNGs (each rank its own torch stream).
    Call it after every model is built: building one draws its initial weights from torch's RNG."""
    if trainer_state is not None:
        opt.load_state_dict(trainer_state["optimizer"])
        set_rng_state(trainer_state["rng"])
    else:
        random.seed(seed)
        torch.manual_seed(seed + rank)


@dataclass
class OnPolicyRun:
    """One run's bookkeeping; every rank has one, only rank 0 writes metrics and checkpoints."""

    kind: str  # "grpo" | "distill": the trainer-state kind, the checkpoint source prefix
    cfg: OnPolicyConfig  # a dataclass: its asdict() is the logged config and the trainer state's "config"
    run_id: str
    rank: int
    world: int
    device: torch.device
    store: Any  # iclaw.store.Store or None
    start_step: int = 0
    sampled_tokens: int = 0  # policy tokens sampled so far in the run, all ranks together
    episode_cfg: EpisodeConfig = field(default_factory=EpisodeConfig)
    metrics_log: MetricsLog | None = None
    history: list[dict] = field(default_factory=list)
    stopped: str | None = None  # why the loop ended early, if it did
    published_step: int | None = None  # step of the last checkpoint under cfg.out (resumes start at one)
    t_start: float = field(default_factory=time.time)

    @classmethod
    def start(
        cls,
        kind: str,
        cfg: OnPolicyConfig,
        trainer_state: dict | None,
        *,
        rank: int,
        world: int,
        device: torch.device,
        store=None,
        log_dir: str = "runs",
        run_id: str | None = None,
    ) -> OnPolicyRun:
        """A fresh run, or the continuation of the one `trainer_state` was saved by (its run_id, its step, its
        token count: a resumed run logs into the same metrics as if it had never stopped)."""
        if trainer_state is not None:
            run_id, start_step = trainer_state["run_id"], trainer_state["step"]
            # a state saved before this counter existed does not know the count: it restarts from 0
            sampled_tokens = trainer_state.get("sampled_tokens", 0)
        else:
            run_id, start_step, sampled_tokens = run_id or new_run_id(kind), 0, 0
        metrics_log = MetricsLog(run_id, store, log_dir, config=asdict(cfg)) if rank == 0 else None
        # temperature 1, every token: the policy's own distribution, which the updates score
        episode_cfg = EpisodeConfig(
            max_turns=cfg.max_turns, max_new_tokens=cfg.max_new_tokens, temperature=1.0
        )
        published_step = start_step if trainer_state is not None else None
        return cls(
            kind=kind,
            cfg=cfg,
            run_id=run_id,
            rank=rank,
            world=world,
            device=device,
            store=store,
            start_step=start_step,
            sampled_tokens=sampled_tokens,
            episode_cfg=episode_cfg,
            metrics_log=metrics_log,
            published_step=published_step,
        )

    # ----------------------------------------------------------------------------------------- each step

    def budget_spent(self) -> str | None:
        """Why the run must stop before its next step (wall clock, or sampled-token budget), or None. The token
        budget is what makes two trainers comparable: GRPO and distillation at equal tokens sampled. A first
        Ctrl-C (common.stop_on_ctrl_c) stops the run here too, and it saves."""
        if stop_requested():
            return INTERRUPTED
        if self.cfg.minutes is not None and time.time() - self.t_start > self.cfg.minutes * 60:
            return TIME_UP
        if self.cfg.max_tokens is not None and self.sampled_tokens >= self.cfg.max_tokens:
            return TOKENS_UP
        return None

    def rollout(self, policy: Policy, tasks: list, step: int, sandbox, verifier) -> list[Episode]:
        """G episodes for each of this rank's share of the step's tasks. Tasks and sampling seed depend only
        on (seed, step, rank), so a resumed run and a straight one draw the same episodes."""
        cfg = self.cfg
        per_rank = cfg.tasks_per_step // self.world
        step_tasks = sample_tasks(tasks, cfg.tasks_per_step, step, cfg.seed)
        step_tasks = step_tasks[self.rank * per_rank : (self.rank + 1) * per_rank]
        gen = torch.Generator(device=self.device).manual_seed(cfg.seed * 1_000_003 + step * 101 + self.rank)
        return rollout(policy, step_tasks, cfg.group_size, sandbox, verifier, self.episode_cfg, generator=gen)

    def record_episodes(self, eps: list[Episode], step: int, *, source: str, checkpoint: str | None) -> None:
        """Log the step's episodes and the monitor's flags to the store, and count their policy tokens into
        `sampled_tokens` (summed over ranks, so GRPO and distillation runs compare at equal tokens sampled,
        whatever the world size)."""
        if self.store is not None:
            from iclaw.store.flags import log_flags

            kw = dict(source=source, model=self.cfg.out, checkpoint=checkpoint, run_id=self.run_id, step=step)
            ids = self.store.log_episodes([episode_record(e, **kw) for e in eps])
            log_flags(self.store, {i: e.flags for i, e in zip(ids, eps) if e.flags})
        local = sum(e.policy_tokens for e in eps)
        self.sampled_tokens += int(all_reduce_sum(float(local), self.device))

    def log(self, step: int, metrics: dict) -> None:
        """The finished step's metrics, plus the run's token count, into history (every rank) and the metrics
        table and JSONL (rank 0)."""
        metrics["sampled_tokens"] = self.sampled_tokens
        self.history.append(metrics)
        if self.metrics_log is not None:
            self.metrics_log.log(step, metrics)

    def should_publish(self, step: int) -> bool:
        """Every save_every steps and at the last step; rank 0 only (the weights are the same on every rank)."""
        return self.rank == 0 and (step % self.cfg.save_every == 0 or step == self.cfg.steps)

    def publish_on_stop(self, step: int) -> bool:
        """After a budget stop (minutes, tokens, Ctrl-C) the run publishes where it is, so `--resume` goes on
        from there -- unless that step is already under cfg.out (a save_every step, or the checkpoint a resumed
        run started from). A fresh run stopped before its first step publishes its starting weights: the
        `--resume` the command suggests then has a trainer state to start from."""
        return self.rank == 0 and self.stopped in BUDGETS and step != self.published_step

    def publish(self, step: int, model, opt: torch.optim.Optimizer, *, state: dict, meta: dict) -> str:
        """Publish the weights under cfg.out with everything --resume needs; returns the checkpoint id.
        `state` and `meta` add the trainer's own lineage (its reference, student, teacher)."""
        from iclaw.model import registry

        trainer_state = {
            "kind": self.kind,
            "step": step,
            "optimizer": opt.state_dict(),
            "rng": rng_state(),
            "run_id": self.run_id,
            "sampled_tokens": self.sampled_tokens,
            **state,
            "config": asdict(self.cfg),
            "model_config": model.config.to_dict(),
        }
        meta = {"source": f"{self.kind}:{self.run_id}", "step": step, **meta}
        ckpt = registry.publish(self.cfg.out, model, meta=meta, trainer_state=trainer_state)
        self.published_step = step
        return ckpt

    # ---------------------------------------------------------------------------------------------- end

    def summary(self, step: int, checkpoint: str, **extra) -> dict:
        return {
            "stopped": self.stopped,
            "run_id": self.run_id,
            "steps": step,
            "checkpoint": checkpoint,
            "seconds": time.time() - self.t_start,
            "history": self.history,
            **extra,
        }

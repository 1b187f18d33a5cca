"""GRPO in one file, top to bottom: advantages, the loss, one update, the loop; its config, GRPOConfig, whose
defaults are the recipe that trained the shipped policy, is in train/config.py with every other default. Read
it against the formula (DeepSeekMath, with DAPO's token-mean and dynamic sampling):

    A_i    = (r_i - mean(r_group)) / (std(r_group) + 1e-4)                      group-relative advantage
    ratio  = exp(logp_new - logp_old)                                           per token
    pg     = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)
    kl     = exp(ref - new) - (ref - new) - 1                                   k3: >= 0, unbiased on samples of pi
    loss   = sum((pg + beta * kl) * mask) / sum(mask)                           token-mean over the batch (DAPO)

What runs by default (one epoch over each batch, ppo_epochs = 1): logp_old is the update's own forward, so
ratio == 1 and the clip never acts; the gradient is that of the policy-gradient term -A * logp_new, token-mean
over the batch, plus beta * k3. The ratio and the clip change anything only with ppo_epochs > 1.

The loop, `train_grpo`:

    for step:
        episodes <- G per task, tasks_per_step tasks (this rank's share), tools in the sandbox, verified
        A        <- group_advantages(rewards); groups whose rewards all agree are dropped (A = 0 there)
        logp_ref <- the frozen start's log-probs (the KL anchor)
        ppo_epochs x:  loss = grpo_loss(...) + sft_coef x NLL of demonstrations (PPO-ptx); AdamW step
        every save_every steps: publish a checkpoint (atomic; `latest` moves for hot-reload)

logp_old comes from the trainer's own forward, not the sampler's (which may draw from a bf16 copy): the ratio
must be exactly 1 before the first update, or clipping acts on numerical noise (as in TRL and verl); the gap is
logged as `sampler_logp_gap`. Rollouts sample at temperature 1, so every log-prob is the policy's own. The
bookkeeping around the loop (resume, seeding, this rank's tasks, logging, budgets, publishing) is shared with
on-policy distillation: iclaw/train/onpolicy.py.

Left out, and why (each was an option; config.REMOVED is the error asking for one gives; dates: docs/LOG.md 2026):

    curriculum            tasks drawn by their family's reward variance: did not hold up in full demos (12-01)
    filter_zero_variance  always on: a group whose rewards all agree has A = 0 and only dilutes the token-mean
    measure_kl            the reference is always loaded: KL is measured, and guarded, at every β
    loss_agg              token-mean only: seq-mean did worse (11-30); Dr. GRPO's constant divisor had no caller
    scale_rewards         the group's std always divides (Dr. GRPO's "none" had no caller but tests)
    kl_estimator          k3 only: k1 and k2 were never run
    eps_high              DAPO's clip-higher was never run; the clip is symmetric
    temperature, top_k    rollouts sample at 1 from every token: 0.7 (11-30) and top-20 (12-01) did no better
    sft_batch             PTX_BATCH = 16 demonstrations; no run set another
    grad_clip, weight_decay   1.0 and 0, as every run had them
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import nullcontext

import torch

from iclaw.agent.policy import Policy
from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.gpt import autocast
from iclaw.train.common import all_reduce_sum, average_gradients, live_progress, setup_distributed
from iclaw.train.config import GRAD_CLIP, PTX_BATCH, GRPOConfig
from iclaw.train.onpolicy import OnPolicyRun, restore_or_seed, resume_policy
from iclaw.train.optim import make_optimizer
from iclaw.train.rollout import Batch, collate, collate_episodes, logprobs_and_entropy, rollout_stats
from iclaw.train.sft import check_ptx, demonstration_format, sft_loss

# ------------------------------------------------------------------------------------------ advantages


def _groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Rewards (B,) viewed as (B/G, G): one row per prompt, its G rollouts side by side."""
    if group_size < 2:  # one rollout per prompt has no group to compare against (std of one is undefined)
        raise ValueError(f"group size must be at least 2, got {group_size}")
    if rewards.numel() % group_size:
        raise ValueError(
            f"batch of {rewards.numel()} rewards is not a whole number of groups of {group_size}"
        )
    return rewards.view(-1, group_size)


def group_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """A = (r - mean_group) / (std_group + 1e-4), std unbiased (torch's default). Returns (B,)."""
    if not rewards.is_floating_point():  # 0/1 pass-fail rewards arrive as ints
        rewards = rewards.to(torch.get_default_dtype())
    r = _groups(rewards, group_size)
    A = (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-4)  # equal rewards: 0, not nan
    return A.view(-1)


def filter_zero_variance(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """DAPO dynamic sampling: bool mask (B,) of rows whose group's rewards are not all equal. A group where
    every rollout scored the same has advantage 0 everywhere, so it adds no gradient, only dilutes the token
    mean (and costs a forward/backward): the update drops those rows."""
    r = _groups(rewards, group_size)
    informative = (r != r[:, :1]).any(dim=1)  # exact comparison: rewards are scores, not noisy floats
    return informative.repeat_interleave(group_size)


# ------------------------------------------------------------------------------------------------ loss


def grpo_loss(
    logp_new: torch.Tensor,  # (B, T) log p of the sampled tokens under the policy being trained (has grad)
    logp_old: torch.Tensor,  # (B, T) the same under the policy that sampled them
    logp_ref: torch.Tensor | None,  # (B, T) the same under the frozen reference; None allowed when beta == 0
    advantages: torch.Tensor,  # (B,) one advantage per sequence, broadcast over its tokens
    mask: torch.Tensor,  # (B, T) 1 on tokens the policy wrote, 0 on prompt / tool output / padding
    eps: float = 0.2,
    beta: float = 0.04,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss (scalar) and detached stats. loss == pg_loss + beta * kl_loss (the token-mean is linear)."""
    if logp_ref is None and beta != 0:
        raise ValueError("a KL penalty (beta != 0) needs logp_ref from a reference model")
    keep = mask.bool()
    m = keep.to(logp_new.dtype)
    # padding may hold anything (even -inf): zero it before exp, so it can't turn into inf * 0 = nan in the
    # loss or its gradient. masked_fill passes no gradient to filled positions, so theirs is exactly zero.
    logp_new = logp_new.masked_fill(~keep, 0.0)
    logp_old = logp_old.detach().masked_fill(~keep, 0.0)  # old and ref are targets, never differentiated
    A = advantages.detach().to(logp_new.dtype)[:, None]  # (B, 1): every token of a sequence shares its A
    lo, hi = 1 - eps, 1 + eps

    def token_mean(x: torch.Tensor) -> torch.Tensor:  # every token weighs the same, a long answer's too
        return (x * m).sum() / m.sum().clamp(min=1)

    ratio = torch.exp(logp_new - logp_old)
    pg = -torch.min(ratio * A, torch.clamp(ratio, lo, hi) * A)
    kl = None
    if logp_ref is not None:  # k3: non-negative and unbiased; low variance when the policies are close
        logp_ref = logp_ref.detach().masked_fill(~keep, 0.0)
        kl = torch.exp(logp_ref - logp_new) - (logp_ref - logp_new) - 1
    loss = token_mean(pg if beta == 0 else pg + beta * kl)

    with torch.no_grad():  # stats: token-means over the masked tokens
        n = m.sum().clamp(min=1)
        # the clipped term was chosen *and* changed the value: only on the side the advantage pushes
        low = (ratio < lo) & (A < 0) & keep
        high = (ratio > hi) & (A > 0) & keep
        kl_mean = token_mean(kl).item() if kl is not None else 0.0
        stats = {
            "kl": kl_mean,
            "clip_frac": ((low | high).sum() / n).item(),
            "clip_frac_low": (low.sum() / n).item(),
            "clip_frac_high": (high.sum() / n).item(),
            "ratio_mean": ((ratio * m).sum() / n).item(),
            "pg_loss": token_mean(pg).item(),
            "kl_loss": kl_mean,
        }
    return loss, stats


# ---------------------------------------------------------------------------------------------- update


def grpo_update(
    model,
    opt,
    batch: Batch,
    adv: torch.Tensor,
    logp_old,
    logp_ref,
    cfg: GRPOConfig,
    *,
    device,
    ptx: Batch | None = None,
) -> dict:
    """One optimizer step over the whole batch, in micro-batches. Each micro-batch's loss is weighted by its
    share of the global token count, so the gradient equals the full-batch loss's gradient — on one process or
    averaged over torchrun ranks. `ptx`, a batch of
    demonstrations, adds cfg.sft_coef x their NLL to the same step. Under torchrun the gradients of both
    terms are averaged over ranks by hand after the backward passes (common.average_gradients, as in
    distillation), not by a DDP wrapper, which would miss the ptx term's: its forward goes around it."""
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    B = batch.mask.size(0)
    total = all_reduce_sum(batch.mask.sum().item(), device)
    n_mb = -(-B // cfg.micro_batch)  # 0 rows (all filtered out on this rank): it only joins the average
    stats_acc: dict[str, float] = {"loss": 0.0}
    opt.zero_grad(set_to_none=True)
    model.train()
    for i in range(n_mb):
        rows = slice(i * cfg.micro_batch, (i + 1) * cfg.micro_batch)
        mb = batch.rows(rows).trim()
        sl = (rows, slice(0, mb.mask.size(1)))  # the micro-batch's rows and columns of (B, T-1) tensors
        share = mb.mask.sum().item() * world / max(total, 1.0)
        with autocast(device, cfg.amp):
            logp_new, ent = logprobs_and_entropy(model, mb.idx, mb.mask, True)
        # one PPO epoch: the policy that sampled is the one being updated, so logp_old is this very
        # forward, detached (ratio exactly 1; TRL does the same) — no second forward needed
        old = logp_new.detach() if logp_old is None else logp_old[sl]
        ref = None if logp_ref is None else logp_ref[sl]
        loss, stats = grpo_loss(logp_new, old, ref, adv[rows], mb.mask, eps=cfg.eps, beta=cfg.beta)
        (loss * share).backward()
        w = mb.mask.sum().item() / max(batch.mask.sum().item(), 1.0)
        n_mb_tok = mb.mask.sum().clamp(min=1)
        stats["entropy"] = ((ent.detach() * mb.mask).sum() / n_mb_tok).item()
        stats["sampler_logp_gap"] = ((old - mb.sampler_logp).abs() * mb.mask).sum().item() / n_mb_tok.item()
        for k, v in stats.items():
            stats_acc[k] = stats_acc.get(k, 0.0) + v * w
        stats_acc["loss"] += loss.item() * share / world
    if ptx is not None:
        with autocast(device, cfg.amp):
            nll = sft_loss(model, ptx.idx, ptx.mask)
        (cfg.sft_coef * nll).backward()
        stats_acc["sft_loss"] = nll.item()
    model.eval()
    average_gradients(model)  # share carries the factor world: the average is the global batch's gradient
    finite = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    ok = finite and stats_acc["loss"] == stats_acc["loss"]
    if world > 1:  # every rank skips, or none does: the weights stay the same on every rank
        ok = all_reduce_sum(0.0 if ok else 1.0, device) == 0
    if not ok:
        opt.zero_grad(set_to_none=True)
        stats_acc.update(skipped=1.0, grad_norm=float("nan"))
        return stats_acc
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    opt.step()
    stats_acc.update(grad_norm=float(gn), skipped=0.0)
    return stats_acc


# ------------------------------------------------------------------------------------------------ loop


def check_config(cfg: GRPOConfig) -> None:
    """Settings under which GRPO cannot learn: refused before anything is loaded or written."""
    if cfg.group_size < 2:
        raise IclawError("--group-size: must be at least 2 (advantages compare episodes within a group)")
    if cfg.max_flagged is not None and not 0 <= cfg.max_flagged <= 1:
        raise IclawError("--max-flagged: must be a fraction of the step's episodes, between 0 and 1")


def train_grpo(
    cfg: GRPOConfig,
    tasks: list,
    *,
    sandbox,
    verifier,
    store=None,
    resume: bool = False,
    device: str | None = None,
    run_id: str | None = None,
    log_dir: str = "runs",
    show_progress: bool = True,
    echo=print,
    demos: list[tuple[list[int], list[int]]] | None = None,
    progress=None,
) -> dict:
    """Run GRPO; returns a summary dict. Rank 0 logs and publishes. `demos` ((tokens, mask) pairs, see
    sft.demonstrations) feed the ptx term when cfg.sft_coef > 0. `progress`, a callable as live_progress
    yields (advance, completed=..., **metrics), is told of every step instead of the progress bar."""
    check_config(cfg)
    if not tasks:
        raise IclawError("no usable tasks to train on")
    rank, world, dev = setup_distributed(device)
    if cfg.tasks_per_step % world:
        raise IclawError(
            f"--tasks-per-step {cfg.tasks_per_step} must be divisible by the number of ranks {world}"
        )
    check_ptx(cfg.sft_coef, demos)
    policy, ref, ref_source, trainer_state = policy_and_reference(cfg, resume, dev)
    model = policy.model
    if demos:  # the ptx term's demonstrations, in ids the model has rows for
        demos = [model.fit(t, m) for t, m in demos]
    opt = make_optimizer(model, cfg.lr)
    restore_or_seed(opt, trainer_state, cfg.seed, rank)

    kw = dict(rank=rank, world=world, device=dev, store=store, log_dir=log_dir, run_id=run_id)
    run = OnPolicyRun.start("grpo", cfg, trainer_state, **kw)
    last_ckpt = policy.ckpt_id if resume else f"{cfg.model} (the starting policy)"
    # the reference's demonstration format goes forward, so a GRPO run started from this one imitates alike
    meta = {"parent": ref_source}
    if fmt := demonstration_format(ref_source):
        meta["demonstrations"] = fmt

    def publish(step: int) -> str:
        return run.publish(step, model, opt, state={"reference": ref_source}, meta=meta)

    # the bar counts steps; a wall-clock budget (--minutes) may end the run before the bar is full
    cap = f" (at most {cfg.minutes:g} min)" if cfg.minutes is not None else ""
    bar = live_progress(cfg.steps, f"GRPO → {cfg.out}{cap}", enabled=show_progress and rank == 0)
    with bar if progress is None else nullcontext(progress) as progress:
        progress(completed=run.start_step)
        step = run.start_step
        kl_window: deque = deque(maxlen=KL_WINDOW)  # (KL x rows, rows) of the last updating steps
        while step < cfg.steps:
            run.stopped = run.budget_spent()
            if run.stopped:
                break
            # roll out: G episodes per task, tools in the sandbox, judged by the verifier
            t0 = time.time()
            eps = run.rollout(policy, tasks, step, sandbox, verifier)
            t_rollout = time.time() - t0
            run.record_episodes(eps, step, source="rollout", checkpoint=policy.ckpt_id)

            # score and update: group-relative advantages, ppo_epochs optimizer steps on the KL-anchored loss
            t1 = time.time()
            m, rows = score_and_update(policy, ref, opt, eps, cfg, dev, demos, step, echo)
            m.update(lr=cfg.lr, t_rollout=t_rollout, t_train=time.time() - t1, rows=rows)
            step += 1
            run.log(step, m)
            shown = {k: m[k] for k in ("kl", "pass_rate", "flagged")}
            progress(1, step=step, reward=m["reward_mean"], **shown)
            kl = recent_kl(kl_window, m["kl"], m["rows"], dev)
            run.stopped = guard_stop(kl, cfg, step, last_ckpt, _flagged_all_ranks(eps, dev))
            if run.stopped:
                echo(run.stopped)
                break

            # publish: an atomic checkpoint; `latest` moves for hot-reload
            if run.should_publish(step):
                last_ckpt = publish(step)
    if run.publish_on_stop(step):
        last_ckpt = publish(step)
    return run.summary(step, last_ckpt)


def policy_and_reference(
    cfg: GRPOConfig, resume: bool, device
) -> tuple[Policy, torch.nn.Module, str, dict | None]:
    """The policy to train (cfg.model, or on --resume the latest checkpoint under cfg.out with its trainer
    state) and the KL anchor: the run's starting policy, frozen. Returns (policy, reference, the reference's
    path, trainer state or None)."""
    trainer_state = None
    if resume:
        policy, trainer_state = resume_policy(cfg.out, "grpo", device)
        ref_source = trainer_state["reference"]
    else:
        policy = Policy.load(cfg.model, device=device)
        ref_source = str(registry.resolve(cfg.model))
    ref, _ = registry.load(ref_source, device=device)
    if ref.config.to_dict() != policy.model.config.to_dict():
        raise IclawError(f"{ref_source}: reference architecture differs from the policy's")
    return policy, ref.eval().requires_grad_(False), ref_source, trainer_state


def score_and_update(policy, ref, opt, eps: list, cfg: GRPOConfig, device, demos, step: int, echo):
    """One step's scoring and update: the step's metrics, and the number of rows it updated on. Groups whose
    rewards all agree (A = 0) are left out, so every group may be; every rank updates or none does (the
    gradient average is collective: a rank left with no rows joins it with an empty batch)."""
    model = policy.model
    rewards = torch.tensor([e.reward for e in eps], dtype=torch.float32)
    adv = group_advantages(rewards, cfg.group_size)
    m = {
        "reward_mean": rewards.mean().item(),
        "reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
        "frac_zero_std": (rewards.view(-1, cfg.group_size).std(dim=1) == 0).float().mean().item(),
        **rollout_stats(eps),
    }
    batch = collate_episodes(eps).to(device)
    sel = filter_zero_variance(rewards, cfg.group_size).nonzero().flatten().to(device)
    stats: dict = {}
    if all_reduce_sum(float(sel.numel()), device) > 0:
        # shortest first, so that each micro-batch is cut to its own longest row (Batch.trim)
        sel = sel[batch.lengths()[sel].argsort(stable=True)]
        batch = batch.rows(sel).trim() if sel.numel() else batch.rows(sel)
        adv_sel = adv.to(device)[sel]
        logp_old = logp_ref = None
        with torch.no_grad(), autocast(device, cfg.amp):
            # several PPO epochs need logp_old frozen before the first update; one epoch does not
            if cfg.ppo_epochs > 1 and sel.numel():
                logp_old = logprobs_and_entropy(model, batch.idx, batch.mask)[0]
            if sel.numel():
                logp_ref = logprobs_and_entropy(ref, batch.idx, batch.mask)[0]
        ptx = ptx_batch(demos, model.config.block_size, device) if cfg.sft_coef > 0 else None
        first = None
        for _ in range(cfg.ppo_epochs):
            stats = grpo_update(model, opt, batch, adv_sel, logp_old, logp_ref, cfg, device=device, ptx=ptx)
            first = first or stats
            if stats.get("skipped"):
                echo(f"step {step}: non-finite loss or gradient — update skipped")
                break
        m["entropy"] = first.get("entropy", 0.0)  # a rank with no rows measured nothing
        m["sampler_logp_gap"] = first.get("sampler_logp_gap", 0.0)
        policy.sync()
    for k in ("kl", "clip_frac", "clip_frac_low", "clip_frac_high", "grad_norm", "loss"):
        m[k] = stats.get(k, 0.0)
    if cfg.sft_coef > 0:
        m["sft_loss"] = stats.get("sft_loss", 0.0)
    return m, int(sel.numel())


def ptx_batch(demos: list, block: int, device) -> Batch:
    """PPO-ptx's batch: PTX_BATCH demonstrations, cut to the model's block, drawn with torch's generator (so
    --resume replays the same batches)."""
    pick = torch.randint(len(demos), (PTX_BATCH,)).tolist()
    return collate([demos[i][0][:block] for i in pick], [demos[i][1][:block] for i in pick]).to(device)


# The KL guard reads the mean over the last 5 steps that updated, not one step's KL: with groups of equal rewards
# filtered out, a step's KL can come from 2 groups, and the demo's seed 0 stopped at step 59 of 90 on a KL of
# 1.25 between steps of 0.0007 and 0.10 (docs/LOG.md, 2026-12-06); a policy running away stays high for steps.
KL_WINDOW = 5


def recent_kl(window: deque, kl: float, rows: int, device) -> float:
    """Add this step's KL (measured on `rows` updated rows; a step that updated none adds nothing) to `window`
    and return the rows-weighted mean KL over it, all ranks together (so every rank stops alike)."""
    if rows:
        window.append((kl * rows, float(rows)))
    total = all_reduce_sum(sum(w for _, w in window), device)
    return all_reduce_sum(sum(x for x, _ in window), device) / max(total, 1.0)


def guard_stop(kl: float, cfg: GRPOConfig, step: int, last_ckpt: str, flagged: float) -> str | None:
    """Why the run must stop after this step, before publishing it, or None: the recent KL (recent_kl) ran
    away (kl_max), or the monitor flags too many episodes (--max-flagged; the fraction over all ranks)."""
    keep = f"keeping the last good checkpoint {last_ckpt}"
    if kl > cfg.kl_max:
        why = f"KL {kl:.3f} (over the last {KL_WINDOW} updating steps) exceeded kl_max {cfg.kl_max}"
        why += " (train grpo: --set kl_max=...)"
        return f"{why} at step {step}; {keep}"
    if cfg.max_flagged is not None and flagged > cfg.max_flagged:
        return f"flagged {flagged:.3f} of the episodes, over --max-flagged {cfg.max_flagged}, at step {step}; {keep}"
    return None


def _flagged_all_ranks(eps: list, device) -> float:
    """The fraction of the step's episodes the monitor flagged, all ranks together (so every rank stops)."""
    n = all_reduce_sum(float(len(eps)), device)
    return all_reduce_sum(float(sum(1 for e in eps if e.flags)), device) / max(n, 1.0)

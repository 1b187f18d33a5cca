"""The GRPO loss, small and exact. Read it against the formula (DeepSeekMath, with DAPO / Dr. GRPO options):

    A_i    = (r_i - mean(r_group)) / (std(r_group) + 1e-4)                      group-relative advantage
    ratio  = exp(logp_new - logp_old)                                           per token
    pg     = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps_high) * A)
    kl     = exp(ref - new) - (ref - new) - 1                                   k3: >= 0, unbiased on samples of pi
    loss   = sum((pg + beta * kl) * mask) / sum(mask)                           token-mean over the batch (DAPO)

What runs by default (one epoch over each batch, ppo_epochs = 1): logp_old is the update's own forward, so
ratio == 1 and the clip never acts; the gradient is that of the policy-gradient term -A * logp_new, token-mean
over the batch, plus beta * k3. The ratio and the clip change anything only with ppo_epochs > 1.
Each option is one documented line away from the formula.
"""

from __future__ import annotations

import torch


def _groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Rewards (B,) viewed as (B/G, G): one row per prompt, its G rollouts side by side."""
    if (
        group_size < 2
    ):  # one rollout per prompt has no group to compare against (std of one sample is undefined)
        raise ValueError(f"group size must be at least 2, got {group_size}")
    if rewards.numel() % group_size:
        raise ValueError(
            f"batch of {rewards.numel()} rewards is not a whole number of groups of {group_size}"
        )
    return rewards.view(-1, group_size)


def group_advantages(rewards: torch.Tensor, group_size: int, scale: str = "group") -> torch.Tensor:
    """A = (r - mean_group) / (std_group + 1e-4), std unbiased (torch's default). scale="none" drops the std
    (Dr. GRPO: dividing by std up-weights groups that are nearly all right or all wrong). Returns (B,)."""
    if not rewards.is_floating_point():  # 0/1 pass-fail rewards arrive as ints
        rewards = rewards.to(torch.get_default_dtype())
    r = _groups(rewards, group_size)
    A = r - r.mean(dim=1, keepdim=True)
    if scale == "group":
        A = A / (r.std(dim=1, keepdim=True) + 1e-4)  # a zero-variance group gives 0 / 1e-4 = 0, never nan
    elif scale != "none":
        raise ValueError(f"unknown advantage scale '{scale}' (known: group, none)")
    return A.view(-1)


def filter_zero_variance(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """DAPO dynamic sampling: bool mask (B,) of rows whose group's rewards are not all equal. A group where
    every rollout scored the same has advantage 0 everywhere, so it adds no gradient, only dilutes the token
    mean (and costs a forward/backward); drop those rows (and, optionally, sample more groups to refill)."""
    r = _groups(rewards, group_size)
    informative = (r != r[:, :1]).any(dim=1)  # exact comparison: rewards are scores, not noisy floats
    return informative.repeat_interleave(group_size)


def kl_penalty(logp_new: torch.Tensor, logp_ref: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Per-token estimate of KL(pi_new || pi_ref) from the sampled tokens' log-probs."""
    if estimator == "k3":  # non-negative and unbiased; low variance when the policies are close
        return torch.exp(logp_ref - logp_new) - (logp_ref - logp_new) - 1
    if estimator == "k1":  # unbiased, can be < 0; as a loss its expected gradient on-policy is 0
        return logp_new - logp_ref
    if estimator == "k2":  # biased, non-negative; as a loss its expected gradient on-policy is grad KL
        return 0.5 * (logp_new - logp_ref) ** 2
    raise ValueError(f"unknown KL estimator '{estimator}' (known: k1, k2, k3)")


def grpo_loss(
    logp_new: torch.Tensor,  # (B, T) log p of the sampled tokens under the policy being trained (has grad)
    logp_old: torch.Tensor,  # (B, T) the same under the policy that sampled them (the sampler's log-probs)
    logp_ref: torch.Tensor | None,  # (B, T) the same under the frozen reference; None allowed when beta == 0
    advantages: torch.Tensor,  # (B,) one advantage per sequence, broadcast over its tokens
    mask: torch.Tensor,  # (B, T) 1 on tokens the policy wrote, 0 on prompt / tool output / padding
    eps: float = 0.2,
    beta: float = 0.04,
    *,
    eps_high: float | None = None,  # DAPO's asymmetric clip ("clip-higher"), e.g. 0.28; None = eps
    kl_estimator: str = "k3",
    loss_agg: str = "token-mean",  # token-mean | seq-mean (original GRPO) | dr-grpo (constant divisor)
    max_len: int | None = None,  # dr-grpo's constant; None = T
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss (scalar) and detached stats. loss == pg_loss + beta * kl_loss (aggregation is linear)."""
    if loss_agg not in ("token-mean", "seq-mean", "dr-grpo"):
        raise ValueError(f"unknown loss aggregation '{loss_agg}' (known: token-mean, seq-mean, dr-grpo)")
    if logp_ref is None and beta != 0:
        raise ValueError("a KL penalty (beta != 0) needs logp_ref from a reference model")
    keep = mask.bool()
    m = keep.to(logp_new.dtype)
    # padding may hold anything (even -inf): zero it before exp, so it can't turn into inf * 0 = nan in the
    # loss or its gradient. masked_fill passes no gradient to filled positions, so theirs is exactly zero.
    logp_new = logp_new.masked_fill(~keep, 0.0)
    logp_old = logp_old.detach().masked_fill(~keep, 0.0)  # old and ref are targets, never differentiated
    A = advantages.detach().to(logp_new.dtype)[:, None]  # (B, 1): every token of a sequence shares its A
    lo, hi = 1 - eps, 1 + (eps if eps_high is None else eps_high)

    ratio = torch.exp(logp_new - logp_old)
    pg = -torch.min(ratio * A, torch.clamp(ratio, lo, hi) * A)
    kl = None
    if logp_ref is not None:
        logp_ref = logp_ref.detach().masked_fill(~keep, 0.0)
        kl = kl_penalty(logp_new, logp_ref, kl_estimator)
    per_token = pg if beta == 0 else pg + beta * kl

    def agg(x: torch.Tensor) -> torch.Tensor:
        if (
            loss_agg == "token-mean"
        ):  # every token weighs the same: a long answer's tokens aren't down-weighted
            return (x * m).sum() / m.sum().clamp(min=1)
        if loss_agg == "seq-mean":  # mean over each sequence's tokens, then over sequences (empty one = 0)
            return ((x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)).mean()
        return (x * m).sum() / (x.size(0) * (max_len or x.size(1)))  # dr-grpo: no length bias at all

    loss = agg(per_token)

    with torch.no_grad():  # stats: token-means over the masked tokens, whatever loss_agg is
        n = m.sum().clamp(min=1)
        # the clipped term was chosen *and* changed the value: only on the side the advantage pushes
        low = (ratio < lo) & (A < 0) & keep
        high = (ratio > hi) & (A > 0) & keep
        k3 = kl_penalty(logp_new, logp_ref, "k3") if logp_ref is not None else torch.zeros_like(ratio)
        stats = {
            "kl": ((k3 * m).sum() / n).item(),  # always k3, so runs with different estimators compare
            "clip_frac": ((low | high).sum() / n).item(),
            "clip_frac_low": (low.sum() / n).item(),
            "clip_frac_high": (high.sum() / n).item(),
            "ratio_mean": ((ratio * m).sum() / n).item(),
            "pg_loss": agg(pg).item(),
            "kl_loss": agg(kl).item() if kl is not None else 0.0,
        }
    return loss, stats

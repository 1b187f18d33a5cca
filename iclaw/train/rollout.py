"""From tasks to a training batch: roll out G episodes per task, judge them, and pack the tokens.

`collate` turns episodes into right-padded (B, T) tensors. Position t of `mask` (B, T-1) says whether token
t+1 was written by the policy — exactly the positions whose log-probs `logprobs_and_entropy` returns — so prompts,
observations and padding contribute nothing to any loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclaw.agent.episode import Episode, EpisodeConfig, play
from iclaw.agent.policy import Policy

# oneDNN on CPU caches 1,024 kernels; a shape per sequence length (43 to 512) overflows it and SFT steps slow by a
# sixth within a few hundred steps. Lengths and head rows rounded up to a multiple of this keep the shapes few.
PAD = 32


@dataclass
class Batch:
    idx: torch.Tensor  # (B, T) token ids, right-padded with 0
    mask: torch.Tensor  # (B, T-1) float, 1 where idx[:, t+1] is a policy token
    sampler_logp: torch.Tensor  # (B, T-1) the sampler's log-probs at policy tokens (0 elsewhere)

    def to(self, device) -> Batch:
        return Batch(self.idx.to(device), self.mask.to(device), self.sampler_logp.to(device))

    def rows(self, sel) -> Batch:
        return Batch(self.idx[sel], self.mask[sel], self.sampler_logp[sel])

    def lengths(self) -> torch.Tensor:
        """(B,) tokens each row needs: up to and including its last policy token (0 if it has none)."""
        t = torch.arange(1, self.mask.size(1) + 1, device=self.mask.device)
        return ((self.mask > 0) * (t + 1)).amax(dim=1)

    def trim(self) -> Batch:
        """The same rows without the columns after every row's last policy token: nothing is trained there,
        and a causal model's log-probs before them do not depend on them."""
        T = max(2, int(self.lengths().max()))
        return Batch(self.idx[:, :T], self.mask[:, : T - 1], self.sampler_logp[:, : T - 1])


def collate(
    seqs: list[list[int]],
    masks: list[list[int]],
    logps: list[list[float]] | None = None,
    limit: int | None = None,
) -> Batch:
    """Right-padded (B, T) tensors. With `limit` (the block size), T is rounded up to a multiple of PAD, at most
    `limit`: a few shapes instead of one per length keep oneDNN's kernel cache warm (docs/LOG.md, 2026-12-05)."""
    T = max(len(s) for s in seqs)
    if limit is not None:
        T = max(T, min(limit, -(-T // PAD) * PAD))
    B = len(seqs)
    idx = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    lp = torch.zeros((B, T), dtype=torch.float32)
    for i, s in enumerate(seqs):
        idx[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = torch.tensor(masks[i], dtype=torch.float32)
        if logps is not None:
            lp[i, : len(s)] = torch.tensor(logps[i], dtype=torch.float32)
    return Batch(idx, mask[:, 1:].contiguous(), lp[:, 1:].contiguous())


def collate_episodes(eps: list[Episode]) -> Batch:
    return collate([e.tokens for e in eps], [e.mask for e in eps], [e.logprobs for e in eps])


def logprobs_and_entropy(
    model,
    idx: torch.Tensor,
    mask: torch.Tensor | None = None,
    with_entropy: bool = False,
):
    """log p(idx[:, t+1] | idx[:, :t+1]) as (B, T-1) float32, and optionally the entropy at each position.

    With `mask` (B, T-1), the 50k-wide head runs only where mask is 1 (policy tokens, typically a fifth of the
    sequence): for a small model the head is most of the compute. Other positions read 0."""
    h = model.hidden(idx[:, :-1])
    head = model.lm_head

    targets = model.rows(idx[:, 1:])  # the head scores the model's rows (a trimmed vocabulary's, or all)
    if mask is None:
        logp_all = F.log_softmax(head(h).float(), dim=-1)
        logp = logp_all.gather(-1, targets[..., None]).squeeze(-1)
        ent = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None
        return logp, ent
    sel = mask.bool()
    hs = h[sel]  # (N, C) for the N selected positions; the head sees N rounded up to a multiple of PAD rows
    logp_all = F.log_softmax(head(F.pad(hs, (0, 0, 0, -len(hs) % PAD)))[: len(hs)].float(), dim=-1)
    logp = torch.zeros(targets.shape, dtype=torch.float32, device=idx.device)
    logp = logp.masked_scatter(sel, logp_all.gather(-1, targets[sel][:, None]).squeeze(-1))
    ent = None
    if with_entropy:
        ent = torch.zeros(targets.shape, dtype=torch.float32, device=idx.device)
        ent = ent.masked_scatter(sel, -(logp_all.exp() * logp_all).sum(-1))
    return logp, ent


def rollout(
    policy: Policy,
    tasks: list,
    group_size: int,
    sandbox,
    verifier,
    cfg: EpisodeConfig,
    generator: torch.Generator | None = None,
) -> list[Episode]:
    """G episodes per task, advanced together, tools in the sandbox, judged by the verifier and watched by the
    reward-hacking monitor (its flags go to each episode's `flags`; they change no reward)."""
    from iclaw.tasks.monitor import flag_episodes

    eps = play(policy, tasks, group_size, sandbox, verifier, cfg, generator=generator)
    for e, flags in zip(eps, flag_episodes(eps, verifier)):
        e.flags = flags
    return eps


def rollout_stats(eps: list[Episode]) -> dict:
    calls = [c for e in eps for c in e.tool_calls]
    return {
        "resp_len": sum(e.policy_tokens for e in eps) / max(1, len(eps)),
        "turns": sum(e.n_turns for e in eps) / max(1, len(eps)),
        "tool_error_rate": sum(1 for c in calls if c["exit_code"] != 0) / max(1, len(calls)),
        "invalid_rate": sum(e.n_invalid for e in eps) / max(1, sum(e.n_turns for e in eps)),
        "pass_rate": sum(1 for e in eps if e.passed) / max(1, len(eps)),
        # the monitor: episodes with any flag, and those of them the verifier rewarded (the ones that matter)
        "flagged": sum(1 for e in eps if e.flags) / max(1, len(eps)),
        "flagged_passed": sum(1 for e in eps if e.flags and e.passed) / max(1, len(eps)),
    }

"""The two on-policy distillation losses, the model heads they need, and one optimizer step.

    sampled:  A_t  = clip(logp_tch_t - logp_old_t, +-5) + W * A_seq   a per-token advantage, then
              loss = token-mean of -min(ratio_t * A_t, clip(ratio_t) * A_t),  ratio = exp(logp_new - logp_old)
    full:     loss = token-mean over policy positions of KL(p_s || p_t) = sum_v p_s(v) (log p_s(v) - log p_t(v))
                     + the GRPO clipped loss with advantages W * A_seq

Both losses are reverse KL, KL(student || teacher), on the states the student itself visits: the student is
corrected where it actually goes wrong (unlike SFT on teacher traces), and the signal is dense, one number per
token (unlike RL's one bit per episode). `sampled` is the one-sample estimate log p_s(x) - log p_t(x) of the
per-token KL at the token the student drew (tinker-cookbook's recipe); `full` is the exact KL over the whole
vocabulary at each policy position (GKD with beta = 1), which needs a shared vocabulary: we score the student's
token ids with the teacher, so both models must use the same tokenizer.

Only the student's own tokens count: the mask from the episode loop is 0 on the prompt, tool observations and
padding, and the heads run only at mask-1 positions, so those positions get no gradient at all.

A_seq is the verifier's group-relative advantage (iclaw.train.grpo.group_advantages); W = --reward-weight
(default 0: pure distillation; the reward is still measured and logged). With --sft-coef the step also takes
sft_coef x the NLL of a batch of demonstrations (PPO-ptx), exactly as GRPO's update does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from iclaw.train.config import GRAD_CLIP, DistillConfig
from iclaw.train.grpo import grpo_loss
from iclaw.train.rollout import Batch, logprobs_and_entropy
from iclaw.train.sft import sft_loss

# the sampled mode's per-token advantage log p_t - log p_s is unbounded: a token the teacher finds impossible
# reads -20 and swamps a step. Clipped at +-5, as rllm does (verl clamps too); the full KL needs no clip.
ADV_CLIP = 5.0

# ------------------------------------------------------------------------------------------------ losses


def distill_advantages(
    logp_old: torch.Tensor,  # (...) the student's log-prob of each sampled token, before the update
    logp_teacher: torch.Tensor,  # (...) the teacher's log-prob of the same token
    seq_adv: torch.Tensor | None = None,  # (...) the verifier's GRPO advantage, broadcast to each token
    reward_weight: float = 0.0,
) -> torch.Tensor:
    """Per-token advantage: minus the one-sample reverse-KL estimate (clipped to +-ADV_CLIP), plus W times the
    sequence advantage. A token the teacher finds likelier than the student did is pushed up; one it finds
    unlikely, down."""
    adv = -(logp_old - logp_teacher).detach().clamp(-ADV_CLIP, ADV_CLIP)
    if reward_weight and seq_adv is not None:
        adv = adv + reward_weight * seq_adv.detach().to(adv.dtype)
    return adv


def token_pg_loss(
    logp_new: torch.Tensor,  # (...) has grad
    logp_old: torch.Tensor,  # (...)
    advantages: torch.Tensor,  # (...) one advantage per token
    mask: torch.Tensor,  # (...) 1 = a policy token
    eps: float = 0.2,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO's clipped surrogate with a per-token advantage, token-mean over the mask.

    This *is* iclaw.train.grpo.grpo_loss (beta = 0): viewing every token as a one-token "sequence" (N, 1)
    gives each its own advantage, and the token-mean does not care how tokens are grouped into rows, so the
    value and gradient are exactly those of the per-token formula."""
    flat = (
        logp_new.reshape(-1, 1),
        logp_old.reshape(-1, 1),
        None,
        advantages.reshape(-1),
        mask.reshape(-1, 1),
    )
    return grpo_loss(*flat, eps=eps, beta=0.0)


def sampled_distill_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    logp_teacher: torch.Tensor,
    mask: torch.Tensor,
    *,
    seq_adv: torch.Tensor | None = None,
    reward_weight: float = 0.0,
    eps: float = 0.2,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The `sampled` loss on (B, T) log-probs of the sampled tokens; seq_adv is (B,) when given.
    At the first update (logp_new == logp_old) its value is the masked mean of log p_s - log p_t: the KL."""
    if seq_adv is not None:
        seq_adv = seq_adv[:, None].expand_as(logp_old)
    adv = distill_advantages(logp_old, logp_teacher, seq_adv, reward_weight)
    return token_pg_loss(logp_new, logp_old, adv.masked_fill(~mask.bool(), 0.0), mask, eps)


def full_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_s || p_t) = sum_v p_s(v) (log p_s(v) - log p_t(v)) at each position: (..., V) -> (...), float32.
    Exactly 0 when the two logit rows are equal (log_softmax of equal inputs gives equal outputs)."""
    ls = F.log_softmax(student_logits.float(), dim=-1)
    lt = F.log_softmax(teacher_logits.float().detach(), dim=-1)  # the teacher is a target, never trained
    return (ls.exp() * (ls - lt)).sum(-1)


def full_kl_loss(
    student_logits: torch.Tensor,  # (B, T, V), or (N, V) already at policy positions
    teacher_logits: torch.Tensor,  # same shape
    mask: torch.Tensor | None = None,  # (B, T) / (N,); None = every position counts
) -> tuple[torch.Tensor, torch.Tensor]:
    """The `full` loss: the token-mean of KL(p_s || p_t) over policy positions, and the per-position KL
    (N,) at those positions. Masked positions are dropped before the softmax, so their gradient is exactly 0
    (and a -inf in their padding logits cannot turn into nan)."""
    if mask is not None:
        keep = mask.bool()
        student_logits, teacher_logits = student_logits[keep], teacher_logits[keep]
    kl = full_kl(student_logits, teacher_logits)
    return kl.sum() / max(kl.numel(), 1), kl.detach()


# ------------------------------------------------------------------------------------ heads at positions


def position_logits(model, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits (N, V) predicting idx[:, t+1] at the N positions where mask (B, T-1) is 1, in the model's
    compute dtype. The 50k-wide head runs only there (cf. rollout.logprobs_and_entropy)."""
    h = model.hidden(idx[:, :-1])
    return model.lm_head(h[mask.bool()])


def chunked_logprobs(model, batch: Batch, device, amp: bool, rows: int, with_entropy: bool = False):
    """logprobs_and_entropy over the batch in chunks of `rows`, run on `device`, results on the batch's
    device. The model may live elsewhere (the teacher on its own GPU)."""
    from iclaw.model.gpt import autocast

    out_dev = batch.idx.device
    lps, ents = [], []
    for i in range(0, batch.idx.size(0), rows):
        idx, mask = batch.idx[i : i + rows].to(device), batch.mask[i : i + rows].to(device)
        with torch.no_grad(), autocast(device, amp):
            lp, ent = logprobs_and_entropy(model, idx, mask, with_entropy=with_entropy)
        lps.append(lp.to(out_dev))
        if with_entropy:
            ents.append(ent.to(out_dev))
    return torch.cat(lps), (torch.cat(ents) if with_entropy else None)


def teacher_logits_at(teacher, idx: torch.Tensor, mask: torch.Tensor, device, amp: bool) -> torch.Tensor:
    """The teacher's logits (N, V) at the student's policy positions, computed on the teacher's device,
    returned as float32 on the caller's device."""
    from iclaw.model.gpt import autocast

    with torch.no_grad(), autocast(device, amp):
        logits = position_logits(teacher, idx.to(device), mask.to(device))
    return logits.float().to(idx.device)


# ------------------------------------------------------------------------------------------------ update


def distill_update(
    model,
    opt,
    batch: Batch,
    logp_old: torch.Tensor,  # (B, T-1)
    logp_teacher: torch.Tensor,  # (B, T-1)
    seq_adv: torch.Tensor | None,  # (B,) or None
    cfg: DistillConfig,
    *,
    device,
    teacher=None,  # needed for kl == "full"
    teacher_device=None,
    ptx: Batch | None = None,  # demonstrations: cfg.sft_coef x their NLL joins the step (PPO-ptx)
) -> dict:
    """One optimizer step over the whole batch, in micro-batches weighted by their share of the policy tokens
    (so the gradient is the full batch's token-mean gradient, on one process or averaged over ranks).
    Same structure as grpo.grpo_update; only the per-micro-batch loss differs.

    Under torchrun the gradients are all-reduced by hand after the backward passes, not by a DDP wrapper:
    the heads run on the trunk's hidden states (`position_logits`), which bypasses DDP's forward, and DDP only
    synchronises gradients of backward passes that follow its own forward."""
    import torch.distributed as dist

    from iclaw.model.gpt import autocast
    from iclaw.train.common import all_reduce_sum

    world = dist.get_world_size() if dist.is_initialized() else 1
    B = batch.idx.size(0)
    total = all_reduce_sum(batch.mask.sum().item(), device)
    n_mb = max(1, (B + cfg.micro_batch - 1) // cfg.micro_batch)
    W = cfg.reward_weight
    acc: dict[str, float] = {}
    opt.zero_grad(set_to_none=True)
    model.train()
    for i in range(n_mb):
        sl = slice(i * cfg.micro_batch, (i + 1) * cfg.micro_batch)
        mb = batch.rows(sl)
        keep = mb.mask.bool()
        n = keep.sum().item()
        share = n * world / max(total, 1.0)
        old, tch = logp_old[sl][keep], logp_teacher[sl][keep]  # (N,) at the policy tokens
        a_seq = seq_adv[sl][:, None].expand_as(keep)[keep] if seq_adv is not None else None
        ones = torch.ones_like(old)
        with autocast(device, cfg.amp):
            logits = position_logits(model, mb.idx, mb.mask)  # (N, V)
        logp_all = F.log_softmax(logits.float(), dim=-1)
        logp_new = logp_all.gather(-1, model.rows(mb.idx[:, 1:][keep])[:, None]).squeeze(-1)
        if cfg.kl == "sampled":
            adv = distill_advantages(old, tch, a_seq, W)
            loss, st = token_pg_loss(logp_new, old, adv, ones, cfg.eps)
            stats = {
                "pg_loss": st["pg_loss"],
                "clip_frac": st["clip_frac"],
                "ratio_mean": st["ratio_mean"],
            }
        else:
            t_logits = teacher_logits_at(teacher, mb.idx, mb.mask, teacher_device or device, cfg.amp)
            loss, _ = full_kl_loss(logits, t_logits)
            stats = {"kl_full": loss.item()}
            if W and a_seq is not None:  # the verifier's signal, as GRPO's clipped loss, on top
                pg, st = token_pg_loss(logp_new, old, W * a_seq, ones, cfg.eps)
                loss = loss + pg
                stats.update(pg_loss=st["pg_loss"], clip_frac=st["clip_frac"], ratio_mean=st["ratio_mean"])
        (loss * share).backward()
        w = n / max(batch.mask.sum().item(), 1.0)
        for k, v in stats.items():
            acc[k] = acc.get(k, 0.0) + v * w
        acc["loss"] = acc.get("loss", 0.0) + loss.item() * share / world
    if ptx is not None:
        with autocast(device, cfg.amp):
            nll = sft_loss(model, ptx.idx, ptx.mask)
        (cfg.sft_coef * nll).backward()
        acc["sft_loss"] = nll.item()
    model.eval()
    if world > 1:  # average over ranks, as DDP would (share carries the factor world)
        for p in model.parameters():
            if p.requires_grad:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
                p.grad.div_(world)
    finite = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    if not finite or acc["loss"] != acc["loss"]:
        opt.zero_grad(set_to_none=True)
        acc.update(skipped=1.0, grad_norm=float("nan"))
        return acc
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    opt.step()
    acc.update(skipped=0.0, grad_norm=float(gn))
    return acc

"""On-policy distillation losses: the two against their formulas, their masks and fixed points, a toy run of
each that really lowers KL(student || teacher), and a bf16 teacher scoring the student's tokens."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from iclaw.model.gpt import GPT, preset
from iclaw.train.distill_loss import (
    chunked_logprobs,
    full_kl,
    full_kl_loss,
    position_logits,
    sampled_distill_loss,
    teacher_logits_at,
)
from iclaw.train.rollout import Batch

SMALL = dict(n_layer=1, n_head=2, n_embd=32, block_size=256)
WIDE = dict(n_layer=2, n_head=2, n_embd=64, block_size=256)


def tiny(seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(preset("tiny", **{**SMALL, **kw})).eval()


def seqs(seed: int = 0, B: int = 3, T: int = 20):
    """Token ids and a policy mask (B, T-1) with observation gaps, like a multi-turn episode."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, 50257, (B, T), generator=g)
    mask = torch.zeros(B, T - 1)
    mask[:, 4:9] = 1  # first turn
    mask[:, 13:] = 1  # second turn, after an observation
    mask[-1, 15:] = 0  # a shorter last row (padding)
    return idx, mask


def sampled_logp(model, idx, mask):
    """log p of the sampled tokens at policy positions, laid out (B, T-1) (0 elsewhere)."""
    lp = F.log_softmax(position_logits(model, idx, mask).float(), -1)
    lp = lp.gather(-1, idx[:, 1:][mask.bool()][:, None]).squeeze(-1)
    return torch.zeros(mask.shape).masked_scatter(mask.bool(), lp)


# ------------------------------------------------------------------------------------------- the losses


def test_full_kl_is_the_formula():
    g = torch.Generator().manual_seed(1)
    s, t = (
        torch.randn(5, 7, generator=g, dtype=torch.float64),
        torch.randn(5, 7, generator=g, dtype=torch.float64),
    )
    want = []
    for i in range(5):
        zs, zt = sum(math.exp(x) for x in s[i].tolist()), sum(math.exp(x) for x in t[i].tolist())
        ps = [math.exp(x) / zs for x in s[i].tolist()]
        pt = [math.exp(x) / zt for x in t[i].tolist()]
        want.append(sum(a * (math.log(a) - math.log(b)) for a, b in zip(ps, pt)))
    assert full_kl(s, t).tolist() == pytest.approx(want, abs=1e-6)
    mask = torch.tensor([1, 0, 1, 1, 0])
    loss, per = full_kl_loss(s, t, mask)
    assert loss.item() == pytest.approx((want[0] + want[2] + want[3]) / 3, abs=1e-6)
    assert per.tolist() == pytest.approx([want[0], want[2], want[3]], abs=1e-6)


def test_sampled_loss_is_the_per_token_clipped_formula():
    g = torch.Generator().manual_seed(2)
    B, T, eps, W = 3, 6, 0.2, 0.5
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 4
    new = (old + 0.4 * torch.randn(B, T, generator=g, dtype=torch.float64)).requires_grad_()
    tch = old + torch.randn(B, T, generator=g, dtype=torch.float64)
    seq_adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) < 0.7).float()
    mask[:, 0] = 1
    loss, stats = sampled_distill_loss(new, old, tch, mask, seq_adv=seq_adv, reward_weight=W, eps=eps)
    total, count = 0.0, 0
    for i in range(B):
        for t in range(T):
            if mask[i, t]:
                a = -(old[i, t].item() - tch[i, t].item()) + W * seq_adv[i].item()
                r = math.exp(new[i, t].item() - old[i, t].item())
                total += -min(r * a, min(max(r, 1 - eps), 1 + eps) * a)
                count += 1
    assert loss.item() == pytest.approx(total / count, abs=1e-9)
    assert 0 < stats["clip_frac"] < 1  # the batch really exercises the clip
    # at the first update (new == old) the value is the one-sample reverse-KL estimate
    loss0, _ = sampled_distill_loss(old.clone(), old, tch, mask)
    assert loss0.item() == pytest.approx(((old - tch) * mask).sum().item() / mask.sum().item(), abs=1e-9)


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_loss_is_exactly_zero_for_the_same_weights(mode):
    student = tiny(0)
    teacher = copy.deepcopy(student).requires_grad_(False)  # same weights, a separate model
    idx, mask = seqs()
    student.train()
    if mode == "full":
        loss, per = full_kl_loss(position_logits(student, idx, mask), position_logits(teacher, idx, mask))
        assert per.numel() == mask.sum().item()
    else:
        with torch.no_grad():
            old, tch = sampled_logp(student, idx, mask), sampled_logp(teacher, idx, mask)
        loss, _ = sampled_distill_loss(sampled_logp(student, idx, mask), old, tch, mask)
    loss.backward()
    assert loss.item() == 0.0
    grad = max(p.grad.abs().max().item() for p in student.parameters() if p.grad is not None)
    if mode == "sampled":  # every advantage is exactly 0, so is every gradient
        assert grad == 0.0
    else:  # d KL / d logits = p (log p_s - log p_t - KL) = 0, up to rounding in sum(p) = 1
        assert grad < 1e-8


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_observation_tokens_get_no_gradient(mode):
    g = torch.Generator().manual_seed(3)
    B, T, V = 3, 10, 17
    logits = torch.randn(B, T, V, generator=g, requires_grad=True)
    t_logits = torch.randn(B, T, V, generator=g)
    idx = torch.randint(0, V, (B, T), generator=g)
    mask = torch.zeros(B, T)
    mask[:, 2:5] = 1
    mask[:, 7:] = 1
    mask[2, 8:] = 0

    def loss_of(t_logits):
        if mode == "full":
            return full_kl_loss(logits, t_logits, mask)[0]
        logp = F.log_softmax(logits, -1).gather(-1, idx[..., None]).squeeze(-1)
        tch = F.log_softmax(t_logits, -1).gather(-1, idx[..., None]).squeeze(-1)
        return sampled_distill_loss(logp, logp.detach() + 0.1, tch, mask)[0]

    loss = loss_of(t_logits)
    loss.backward()
    off = ~mask.bool()
    assert (logits.grad[off] == 0).all()  # exactly zero, not just small
    assert (logits.grad[mask.bool()].abs().sum(-1) > 0).all()
    # what the teacher says at observation positions changes nothing (even -inf / huge garbage)
    garbage = t_logits.clone()
    garbage[off] = torch.where(torch.rand(garbage[off].shape, generator=g) < 0.5, -torch.inf, 1e30)
    assert loss_of(garbage).item() == loss.item()


# --------------------------------------------------------------------------------------- KL goes down


def test_sampled_distillation_lowers_reverse_kl():
    """Sample from the student, push with the per-token advantage: the exact KL(student || teacher) drops.
    (Its expected gradient is the reverse KL's gradient: E_s[grad log p_s (log p_s - log p_t)].)"""
    g = torch.Generator().manual_seed(0)
    t_logits = 2 * torch.randn(6, 16, generator=g)
    s_logits = torch.zeros(6, 16, requires_grad=True)
    opt = torch.optim.Adam([s_logits], lr=0.1)
    kl0 = full_kl(s_logits, t_logits).mean().item()
    for _ in range(40):
        with torch.no_grad():
            x = torch.multinomial(F.softmax(s_logits, -1), 32, replacement=True, generator=g)  # on-policy
        lp = F.log_softmax(s_logits, -1).gather(-1, x)
        tch = F.log_softmax(t_logits, -1).gather(-1, x)
        loss, _ = sampled_distill_loss(lp, lp.detach(), tch, torch.ones_like(lp))
        opt.zero_grad()
        loss.backward()
        opt.step()
    kl1 = full_kl(s_logits, t_logits).mean().item()
    assert kl0 > 1.0 and kl1 < 0.1 * kl0


def test_full_distillation_from_a_wider_deeper_teacher_lowers_kl():
    student = tiny(0)
    teacher = tiny(1, **WIDE)  # twice the width, twice the depth, same vocabulary
    with torch.no_grad():
        teacher.transformer.wte.weight.mul_(5)  # a sharper teacher, far from the student's near-uniform start
    teacher.requires_grad_(False)
    idx, mask = seqs(4, B=4, T=24)
    with torch.no_grad():
        t_logits = position_logits(teacher, idx, mask)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-2)
    losses = []
    student.train()
    for _ in range(6):
        loss, _ = full_kl_loss(position_logits(student, idx, mask), t_logits)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < 0.8 * losses[0]


def test_a_bf16_teacher_scores_the_same_tokens():
    """The teacher keeps its own dtype (bf16 here) and returns float32 on the student's side."""
    student = tiny(0)
    teacher = copy.deepcopy(student).to(torch.bfloat16).requires_grad_(False)
    idx, mask = seqs()
    lp_s, _ = chunked_logprobs(student, Batch(idx, mask, mask), torch.device("cpu"), False, 2)
    lp_t, _ = chunked_logprobs(teacher, Batch(idx, mask, mask), torch.device("cpu"), False, 2)
    assert lp_t.dtype == torch.float32 and (lp_t[mask == 0] == 0).all()
    assert torch.allclose(lp_s, lp_t, atol=0.05)  # bf16 rounding only
    logits = teacher_logits_at(teacher, idx, mask, torch.device("cpu"), amp=False)
    assert logits.dtype == torch.float32 and logits.shape == (int(mask.sum()), 50304)

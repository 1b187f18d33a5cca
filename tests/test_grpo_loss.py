"""The GRPO loss against the formula, written out again here one token at a time with plain floats."""

import math

import pytest
import torch

from iclaw.train.grpo import filter_zero_variance, group_advantages, grpo_loss


def formula(new, old, ref, adv, mask, eps, beta):
    """The loss, token by token, in plain python floats: an independent re-implementation of the formula."""
    new, old, adv, mask = new.tolist(), old.tolist(), adv.tolist(), mask.tolist()
    ref = ref.tolist() if ref is not None else None
    total, count = 0.0, 0  # the per-token terms over every masked token, and how many there are
    for i in range(len(new)):
        for t in range(len(new[0])):
            if not mask[i][t]:
                continue
            ratio = math.exp(new[i][t] - old[i][t])
            clipped = min(max(ratio, 1 - eps), 1 + eps)
            pg = -min(ratio * adv[i], clipped * adv[i])
            kl = 0.0
            if ref is not None:
                d = ref[i][t] - new[i][t]
                kl = math.exp(d) - d - 1  # k3
            total += pg + beta * kl
            count += 1
    return total / count  # token-mean


def batch(seed=0, B=6, T=9):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 5  # log-probs in (-5, 0]
    new = old + 0.4 * torch.randn(
        B, T, generator=g, dtype=torch.float64
    )  # ratios both inside and outside the clip
    ref = old + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = torch.rand(B, T, generator=g) < 0.7
    mask[:, 0] = True  # every sequence writes at least one token
    return new.requires_grad_(), old, ref, adv, mask


@pytest.mark.parametrize("eps,beta", [(0.2, 0.04), (0.1, 0.0), (0.3, 0.1), (0.2, 1.0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_default_loss_is_the_formula(eps, beta, seed):
    new, old, ref, adv, mask = batch(seed)
    loss, stats = grpo_loss(new, old, ref, adv, mask, eps, beta)
    assert loss.item() == pytest.approx(formula(new, old, ref, adv, mask, eps, beta), abs=1e-6)
    assert loss.item() == pytest.approx(stats["pg_loss"] + beta * stats["kl_loss"], abs=1e-9)
    assert 0 < stats["clip_frac"] < 1  # the batch really exercises the clip


def test_no_reference_model_when_beta_is_zero():
    new, old, ref, adv, mask = batch(3)
    loss, stats = grpo_loss(new, old, None, adv, mask, beta=0.0)
    assert loss.item() == pytest.approx(formula(new, old, None, adv, mask, 0.2, 0.0), abs=1e-6)
    assert stats["kl"] == 0.0 and stats["kl_loss"] == 0.0
    with pytest.raises(ValueError, match="logp_ref"):
        grpo_loss(new, old, None, adv, mask, beta=0.04)


def test_stats_kl_is_k3_and_clip_fractions_count_masked_tokens():
    new, old, ref, adv, mask = batch(4)
    _, s3 = grpo_loss(new, old, ref, adv, mask)
    m = mask.double()
    k3 = torch.exp(ref - new) - (ref - new) - 1
    assert (k3 >= 0).all() and s3["kl"] == s3["kl_loss"] == pytest.approx(((k3 * m).sum() / m.sum()).item())
    _, same = grpo_loss(new, old, new.detach().clone(), adv, mask)
    assert same["kl"] == 0.0  # k3 is exactly zero where the policy is the reference
    ratio, A = torch.exp(new - old).detach(), adv[:, None]
    low = ((ratio < 0.8) & (A < 0) & mask).sum().item() / mask.sum().item()
    high = ((ratio > 1.2) & (A > 0) & mask).sum().item() / mask.sum().item()
    assert s3["clip_frac_low"] == pytest.approx(low) and s3["clip_frac_high"] == pytest.approx(high)
    assert s3["clip_frac"] == pytest.approx(low + high)
    assert s3["ratio_mean"] == pytest.approx(((ratio * m).sum() / m.sum()).item())


def test_clip_zeroes_the_gradient_only_on_the_side_the_advantage_pushes():
    # one token per sequence: (ratio, advantage) pairs on both sides of [0.8, 1.2], with beta = 0
    ratio = torch.tensor([1.5, 0.5, 0.5, 1.5, 1.1, 0.9], dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    old = torch.full((6, 1), -2.0, dtype=torch.float64)
    new = (old + ratio.log()[:, None]).requires_grad_()
    loss, stats = grpo_loss(new, old, None, adv, torch.ones(6, 1, dtype=torch.bool), eps=0.2, beta=0.0)
    loss.backward()
    g = new.grad[:, 0]
    assert g[0] == 0 and g[1] == 0  # A>0 past 1+eps, A<0 below 1-eps: clipped, no push further
    assert (g[2:] != 0).all()  # the other side of the clip, and inside it, still learn
    assert g[2] < 0 and g[3] > 0  # descending the loss raises logp where A>0, lowers it where A<0
    assert stats["clip_frac_high"] == pytest.approx(1 / 6) and stats["clip_frac_low"] == pytest.approx(1 / 6)


def test_masked_positions_get_exactly_zero_gradient():
    new, old, ref, adv, mask = batch(5)
    # padding may hold garbage: it must change neither the loss nor any gradient
    with torch.no_grad():
        new[~mask] = -float("inf")
    old = old.masked_fill(~mask, 50.0)
    ref = ref.masked_fill(~mask, float("nan"))
    loss, stats = grpo_loss(new, old, ref, adv, mask, beta=0.1)
    loss.backward()
    assert torch.isfinite(loss) and all(math.isfinite(v) for v in stats.values())
    assert (new.grad[~mask] == 0).all()
    assert (new.grad[mask] != 0).any()


def test_group_advantages_by_hand():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    s1 = math.sqrt((4 * 0.25) / 3)  # unbiased std of 1,0,0,1
    s3 = math.sqrt((3 * 0.0625 + 0.5625) / 3)  # of 0,0,0,1
    want = [0.5 / (s1 + 1e-4) * x for x in (1, -1, -1, 1)] + [0.0] * 4
    want += [d / (s3 + 1e-4) for d in (-0.25, -0.25, -0.25, 0.75)]
    assert group_advantages(r, 4).tolist() == pytest.approx(want, abs=1e-12)
    # a zero-variance group: exactly zero advantage, not nan
    assert (group_advantages(torch.full((6,), 0.7), 3) == 0).all()
    assert group_advantages(torch.tensor([1, 0, 1, 1]), 2).dtype.is_floating_point  # int rewards are fine


def test_group_advantages_rejects_bad_groups():
    with pytest.raises(ValueError, match="not a whole number of groups"):
        group_advantages(torch.zeros(7), 4)
    with pytest.raises(ValueError, match="at least 2"):
        group_advantages(torch.zeros(4), 1)


def test_filter_zero_variance_keeps_groups_that_disagree():
    r = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0])
    assert filter_zero_variance(r, 3).tolist() == [False] * 3 + [True] * 3 + [False] * 3
    with pytest.raises(ValueError):
        filter_zero_variance(r, 2)

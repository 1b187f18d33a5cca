"""The GRPO loss against the formula, written out again here one token at a time with plain floats."""

import math

import pytest
import torch

from iclaw.train.grpo import filter_zero_variance, group_advantages, grpo_loss, kl_penalty


def formula(new, old, ref, adv, mask, eps, beta, eps_high=None, est="k3", agg="token-mean", max_len=None):
    """The loss, token by token, in plain python floats: an independent re-implementation of the formula."""
    new, old, adv, mask = new.tolist(), old.tolist(), adv.tolist(), mask.tolist()
    ref = ref.tolist() if ref is not None else None
    hi = eps if eps_high is None else eps_high
    B, T = len(new), len(new[0])
    rows = []  # per sequence: (sum of per-token terms over its masked tokens, its number of masked tokens)
    for i in range(B):
        total, count = 0.0, 0
        for t in range(T):
            if not mask[i][t]:
                continue
            ratio = math.exp(new[i][t] - old[i][t])
            clipped = min(max(ratio, 1 - eps), 1 + hi)
            pg = -min(ratio * adv[i], clipped * adv[i])
            kl = 0.0
            if ref is not None:
                d = ref[i][t] - new[i][t]
                kl = {"k3": math.exp(d) - d - 1, "k1": -d, "k2": 0.5 * d * d}[est]
            total += pg + beta * kl
            count += 1
        rows.append((total, count))
    if agg == "token-mean":
        return sum(s for s, _ in rows) / sum(c for _, c in rows)
    if agg == "seq-mean":
        return sum(s / c for s, c in rows) / B
    return sum(s for s, _ in rows) / (B * (max_len or T))


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


@pytest.mark.parametrize(
    "kw",
    [
        dict(eps_high=0.28),
        dict(kl_estimator="k1"),
        dict(kl_estimator="k2"),
        dict(kl_estimator="k3"),
        dict(loss_agg="seq-mean"),
        dict(loss_agg="dr-grpo"),
        dict(loss_agg="dr-grpo", max_len=32),
        dict(eps_high=0.28, kl_estimator="k2", loss_agg="seq-mean"),
    ],
)
def test_each_option_is_its_formula(kw):
    new, old, ref, adv, mask = batch(2)
    eps, beta = 0.2, 0.5
    loss, _ = grpo_loss(new, old, ref, adv, mask, eps, beta, **kw)
    names = {"eps_high": "eps_high", "kl_estimator": "est", "loss_agg": "agg", "max_len": "max_len"}
    want = formula(new, old, ref, adv, mask, eps, beta, **{names[k]: v for k, v in kw.items()})
    assert loss.item() == pytest.approx(want, abs=1e-6)


def test_no_reference_model_when_beta_is_zero():
    new, old, ref, adv, mask = batch(3)
    loss, stats = grpo_loss(new, old, None, adv, mask, beta=0.0)
    assert loss.item() == pytest.approx(formula(new, old, None, adv, mask, 0.2, 0.0), abs=1e-6)
    assert stats["kl"] == 0.0 and stats["kl_loss"] == 0.0
    with pytest.raises(ValueError, match="logp_ref"):
        grpo_loss(new, old, None, adv, mask, beta=0.04)


def test_k3_is_nonnegative_and_zero_at_equality():
    g = torch.Generator().manual_seed(0)
    new = -torch.rand(10_000, generator=g, dtype=torch.float64) * 20
    ref = -torch.rand(10_000, generator=g, dtype=torch.float64) * 20
    assert (kl_penalty(new, ref) >= 0).all()
    assert (kl_penalty(new, new.clone()) == 0).all()
    with pytest.raises(ValueError, match="k4"):
        kl_penalty(new, ref, "k4")


def test_stats_kl_is_always_k3_and_clip_fractions_count_masked_tokens():
    new, old, ref, adv, mask = batch(4)
    _, s3 = grpo_loss(new, old, ref, adv, mask)
    _, s1 = grpo_loss(new, old, ref, adv, mask, kl_estimator="k1")
    m = mask.double()
    k3 = torch.exp(ref - new) - (ref - new) - 1
    assert s1["kl"] == s3["kl"] == pytest.approx(((k3 * m).sum() / m.sum()).item())
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


def test_eps_high_moves_only_the_upper_clip():
    old = torch.full((2, 1), -1.0, dtype=torch.float64)
    new = (old + torch.tensor([[math.log(1.25)], [math.log(0.75)]], dtype=torch.float64)).requires_grad_()
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    grpo_loss(new, old, None, adv, torch.ones(2, 1), eps=0.2, beta=0.0, eps_high=0.28)[0].backward()
    assert new.grad[0, 0] != 0  # 1.25 < 1 + 0.28: not clipped any more
    assert new.grad[1, 0] == 0  # 0.75 < 1 - 0.2: still clipped below


def test_masked_positions_get_exactly_zero_gradient():
    new, old, ref, adv, mask = batch(5)
    # padding may hold garbage: it must change neither the loss nor any gradient
    with torch.no_grad():
        new[~mask] = -float("inf")
    old = old.masked_fill(~mask, 50.0)
    ref = ref.masked_fill(~mask, float("nan"))
    for agg in ("token-mean", "seq-mean", "dr-grpo"):
        new.grad = None
        loss, stats = grpo_loss(new, old, ref, adv, mask, beta=0.1, loss_agg=agg)
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
    assert group_advantages(r, 4, scale="none").tolist() == pytest.approx(
        [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, -0.25, -0.25, -0.25, 0.75]
    )
    # a zero-variance group: exactly zero advantage, not nan
    assert (group_advantages(torch.full((6,), 0.7), 3) == 0).all()
    assert group_advantages(torch.tensor([1, 0, 1, 1]), 2).dtype.is_floating_point  # int rewards are fine


def test_group_advantages_rejects_bad_groups():
    with pytest.raises(ValueError, match="not a whole number of groups"):
        group_advantages(torch.zeros(7), 4)
    with pytest.raises(ValueError, match="at least 2"):
        group_advantages(torch.zeros(4), 1)
    with pytest.raises(ValueError, match="unknown advantage scale"):
        group_advantages(torch.zeros(4), 2, scale="batch")


def test_filter_zero_variance_keeps_groups_that_disagree():
    r = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0])
    assert filter_zero_variance(r, 3).tolist() == [False] * 3 + [True] * 3 + [False] * 3
    with pytest.raises(ValueError):
        filter_zero_variance(r, 2)

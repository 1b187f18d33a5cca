"""GRPO end to end on a one-token bandit: a tiny GPT, the real sampler, a frozen reference, AdamW.
One prompt token; each rollout samples one answer token (top-k 16); reward 1 for one chosen token. GRPO must
make the policy answer that token, with a finite KL to the reference.

Why top-k: a freshly initialised GPT is nearly uniform over 50304 tokens (p ~ 2e-5 each), so a rewarded token
sampled from the full distribution would never be seen. Among the top 16 it starts at ~1/16. Once the policy
answers it almost always, every group scores the same, advantages vanish and learning stops, so what GRPO
drives to ~1 is the probability under the sampling distribution; the full-vocabulary probability rises
~100x but stays small (the other 50k tokens are never sampled, so nothing pushes them down)."""

import copy
import math

import torch

from iclaw.model.gpt import GPT, preset
from iclaw.model.sampler import generate
from iclaw.train.grpo import group_advantages, grpo_loss
from iclaw.train.rollout import logprobs_and_entropy

PROMPT = 50257  # a control-token slot: any fixed token will do
TOP_K = 16  # sample among the 16 likeliest answers, so the rewarded one is reachable from the start


def p_answer(model: GPT) -> torch.Tensor:
    """The policy's full distribution over the answer token (temperature 1, no top-k)."""
    with torch.no_grad():
        logits, _ = model(torch.tensor([[PROMPT]]))
    return logits[0, -1].float().softmax(-1)


def p_sampled(model: GPT, token: int) -> float:
    """Probability that the sampler (top-k, temperature 1) answers `token`."""
    top = torch.topk(p_answer(model), TOP_K)
    return (top.values[top.indices == token].sum() / top.values.sum()).item()


def test_grpo_makes_the_rewarded_answer_likely():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: a second thread only adds contention on a busy 2-core machine
    try:
        _bandit()
    finally:
        torch.set_num_threads(threads)


def _bandit():
    torch.manual_seed(0)
    policy = GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=32))
    ref = copy.deepcopy(policy).eval().requires_grad_(False)
    # reward the initially likeliest answer: it is ahead only by a hair (every answer starts near 2e-5), but
    # the first Adam steps move every shared weight by ~lr and reshuffle the near-tied top of the distribution;
    # a target ranked lower fell out of the top-k for good in ~1 seed of 4 (then it is never sampled again)
    target = torch.argmax(p_answer(policy)).item()
    p0, full0 = p_sampled(policy, target), p_answer(policy)[target].item()

    G, groups = 8, 4
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-2, weight_decay=0.0)
    for step in range(12):
        s = generate(policy, [[PROMPT]] * (G * groups), 1, top_k=TOP_K, seed=step)
        answers = torch.tensor([t[0] for t in s.tokens])
        rewards = (answers == target).float()
        adv = group_advantages(rewards, G)
        idx = torch.stack([torch.full_like(answers, PROMPT), answers], dim=1)  # (B, 2): prompt, answer
        logp_old = torch.tensor(s.logprobs)  # (B, 1), from the sampler
        with torch.no_grad():
            logp_ref = logprobs_and_entropy(ref, idx)[0]
        for _ in range(2):  # two updates per batch, so the second one sees ratio != 1 and the clip
            logp_new = logprobs_and_entropy(policy, idx)[0]
            loss, stats = grpo_loss(logp_new, logp_old, logp_ref, adv, torch.ones_like(logp_new))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        assert math.isfinite(stats["kl"]) and math.isfinite(loss.item())
    p1, full1 = p_sampled(policy, target), p_answer(policy)[target].item()
    print(
        f"p(answer = target) {p0:.3f} -> {p1:.3f}; full-vocab {full0:.1e} -> {full1:.1e}; kl {stats['kl']:.2f}"
    )
    assert p1 > 2 * p0 and p1 > 0.8  # ~0.06 -> ~0.95 here (over 20 seeds: 0.91 to 0.98)
    assert full1 > 10 * full0  # the logit itself went up, not just the top-k cut

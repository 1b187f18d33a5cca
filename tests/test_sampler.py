"""The sampler: KV cache changes nothing, padding changes nothing, seeds reproduce."""

import torch

from iclaw.model.gpt import GPT, preset
from iclaw.model.sampler import copy_next, generate


def _model(**kw):
    torch.manual_seed(0)
    return GPT(preset("tiny", block_size=128, **kw)).eval()


PROMPTS = [[1, 2, 3, 4, 5], [7, 8], list(range(100, 130)), [9]]


def test_greedy_cache_equals_no_cache_including_early_stops():
    m = _model()
    # find tokens the greedy continuations actually produce, and use some as stop tokens so rows stop early
    probe = generate(m, PROMPTS, 12, temperature=0)
    stops = (probe.tokens[0][3], probe.tokens[2][5])
    a = generate(m, PROMPTS, 30, temperature=0, stop_tokens=stops)
    b = generate(m, PROMPTS, 30, temperature=0, stop_tokens=stops, use_cache=False)
    assert a.tokens == b.tokens
    assert a.finished == b.finished
    first_stop = min(j for j, t in enumerate(probe.tokens[0]) if t in stops)
    assert a.finished[0] and a.finished[2] and len(a.tokens[0]) == first_stop + 1
    for ra, rb in zip(a.logprobs, b.logprobs):
        assert torch.allclose(torch.tensor(ra), torch.tensor(rb), atol=1e-4)


def test_left_padding_does_not_change_a_row():
    m = _model()
    batch = generate(m, PROMPTS, 20, temperature=0)
    for i, p in enumerate(PROMPTS):
        alone = generate(m, [p], 20, temperature=0)
        assert alone.tokens[0] == batch.tokens[i]


def test_chunked_prefill_matches_rows_alone():
    # more rows than one prefill chunk, lengths shuffled: each chunk is cut to its own longest prompt
    import random

    from iclaw.model.sampler import PREFILL_ROWS

    m = _model()
    rng = random.Random(0)
    prompts = [[rng.randrange(50257) for _ in range(rng.randint(1, 60))] for _ in range(2 * PREFILL_ROWS + 5)]
    batch = generate(m, prompts, 6, temperature=0)
    for i in (0, 7, PREFILL_ROWS + 3, len(prompts) - 1):
        alone = generate(m, [prompts[i]], 6, temperature=0)
        assert alone.tokens[0] == batch.tokens[i]
        assert torch.allclose(torch.tensor(alone.logprobs[0]), torch.tensor(batch.logprobs[i]), atol=1e-4)


def test_seeded_sampling_reproduces_and_logprobs_are_consistent():
    m = _model()
    s1 = generate(m, PROMPTS, 16, temperature=0.8, seed=7)
    s2 = generate(m, PROMPTS, 16, temperature=0.8, seed=7)
    assert s1.tokens == s2.tokens
    # the returned log-prob is log softmax(logits / T) of the sampled token: recompute it with a full forward
    p, new = PROMPTS[2], s1.tokens[2]
    idx = torch.tensor([p + new])
    with torch.no_grad():
        logits, _ = m(idx)
    lp = torch.log_softmax(logits[0, len(p) - 1 : -1].float() / 0.8, -1).gather(
        -1, torch.tensor(new)[:, None]
    )
    assert torch.allclose(lp.squeeze(-1), torch.tensor(s1.logprobs[2]), atol=1e-4)


def test_top_k_one_is_greedy():
    m = _model()
    g = generate(m, PROMPTS, 10, temperature=0)
    k1 = generate(m, PROMPTS, 10, temperature=1.0, top_k=1, seed=0)
    assert g.tokens == k1.tokens


def test_block_size_caps_generation():
    m = _model()
    s = generate(m, [list(range(120))], 50, temperature=0)
    assert len(s.tokens[0]) == 8


def test_packed_linear_matches_linear_for_every_input_shape():
    import pytest

    from iclaw.model.sampler import PackedLinear, can_pack

    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 96)
    if not can_pack(lin):
        pytest.skip("this torch build has no oneDNN")
    packed = PackedLinear(lin)
    x = torch.randn(6, 5, 64)
    with torch.inference_mode():
        for inp in (x[:, -1, :], x[:, -1:, :], x[:2], x.transpose(0, 1)[:, :4], torch.randn(200, 64)):
            # strided views (the head reads h[:, -1:, :]) and many rows (prefill) included
            assert torch.allclose(packed(inp), lin(inp), atol=1e-5), inp.shape


def test_policy_samples_from_a_packed_copy_and_greedy_is_unchanged():
    from iclaw.agent.policy import Policy
    from iclaw.model.sampler import PackedLinear, can_pack

    m = _model()
    pol = Policy(m, device="cpu", fast_sampling=False)  # float32: the packed copy must agree with the model
    if can_pack(m):
        assert isinstance(pol._sampler.lm_head, PackedLinear) and pol._sampler is not m
        assert isinstance(m.lm_head, torch.nn.Linear)  # the trained model itself is never packed
    assert pol.sample(PROMPTS, 20, temperature=0).tokens == generate(m, PROMPTS, 20, temperature=0).tokens
    with torch.no_grad():
        m.lm_head.weight.mul_(-1)  # an "update": sync must rebuild the copy from the new weights
    pol.sync()
    assert pol.sample(PROMPTS, 20, temperature=0).tokens == generate(m, PROMPTS, 20, temperature=0).tokens


def test_bf16_only_where_the_cpu_multiplies_it_in_hardware(monkeypatch):
    """Without bf16 hardware (an AVX2-only CPU) bf16 autocast ran a tiny-model SFT step 18x slower than fp32,
    so autocast and the sampling copy fall back to fp32 there; with it they use bf16."""
    import iclaw.model.gpt as gpt
    from iclaw.agent.policy import Policy, _sampling_dtype

    for has_bf16, dtype in ((False, torch.float32), (True, torch.bfloat16)):
        monkeypatch.setattr(gpt, "cpu_has_bf16", lambda h=has_bf16: h)
        assert gpt.bf16_supported("cpu") is has_bf16
        with gpt.autocast("cpu"):
            y = torch.nn.Linear(8, 8)(torch.randn(2, 8))
        assert y.dtype == dtype
        assert _sampling_dtype(torch.device("cpu")) == dtype  # the dtype of the policy's sampling copy
    monkeypatch.setattr(gpt, "cpu_has_bf16", lambda: False)
    assert Policy(_model(), device="cpu").sample_dtype == torch.float32
    assert not gpt.bf16_supported("meta")  # neither CUDA nor a CPU


def test_copy_next_follows_the_longest_run_that_ends_the_text():
    prompt = [5, 6, 7, 8, 9, 5, 6, 3]
    assert copy_next(prompt, []) is None  # nothing written yet
    assert copy_next(prompt, [5, 6]) == 3  # [5, 6] occurs twice: its last occurrence is followed by 3
    assert copy_next(prompt, [7, 5, 6, 7]) == 8  # the longest run [5, 6, 7] wins over the shorter ones
    assert copy_next(prompt, [4, 4]) is None  # no run of two tokens matches
    assert copy_next(prompt, [8, 9]) == 5
    assert copy_next([1, 2, 3, 1], [2]) == 3  # a run may start in the prompt: [1] + the written [2]
    assert copy_next([1, 2], [1, 2]) is None  # the run must be followed by something in the prompt


def test_greedy_copies_the_prompt_only_where_the_model_is_unsure():
    m = _model()
    with torch.no_grad():
        m.lm_head.weight.zero_()  # every logit equal (unsure everywhere): plain greedy writes token 0 forever
    prompt = [3, 0, 0, 5, 6, 7, 8, 9, 4, 0]
    assert generate(m, [prompt], 8, temperature=0).tokens[0] == [0] * 8
    copied = generate(m, [prompt], 8, temperature=0, copy_below=0.5)
    assert copied.tokens[0] == [0, 5, 6, 7, 8, 9, 4, 0]  # after [0, 0]: what followed it in the prompt
    sampled = generate(m, [prompt], 8, temperature=1.0, seed=0, copy_below=0.5)
    assert sampled.tokens == generate(m, [prompt], 8, temperature=1.0, seed=0).tokens  # greedy only
    p = 1 / m.config.vocab_size  # the likeliest token's probability here: copying only below the threshold
    assert generate(m, [prompt], 8, temperature=0, copy_below=0.99 * p).tokens[0] == [0] * 8
    assert generate(m, [prompt], 8, temperature=0, copy_below=1.01 * p).tokens == copied.tokens

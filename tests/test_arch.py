"""Architecture options (RoPE, MLA, MoE): the KV cache changes nothing, MLA caches only its latent, MoE routes
each token to exactly top-k routed experts + the shared ones, old configs load, every variant trains."""

import pytest
import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig, preset
from iclaw.model.moe import MoE
from iclaw.model.sampler import generate
from iclaw.train.optim import configure_optimizers
from iclaw.train.rollout import logprobs_and_entropy

VARIANTS = {
    "mha": {},
    "rope": {"pos": "rope"},
    "mla": {"attn": "mla", "pos": "rope"},
    "mla-learned-qlora": {"attn": "mla", "q_lora_rank": 16, "kv_lora_rank": 24, "qk_rope_head_dim": 8},
    "moe": {"mlp": "moe"},
    "mla+moe": {"attn": "mla", "mlp": "moe", "pos": "rope"},
}
SMALL = dict(block_size=64, vocab_size=512, n_layer=2, n_head=4, n_embd=64)
PROMPTS = [[1, 2, 3, 4, 5], [7, 8], list(range(100, 130)), [9]]  # different lengths: left padding


def _model(**kw):
    torch.manual_seed(0)
    m = GPT(GPTConfig(**{**SMALL, **kw})).eval()
    with torch.no_grad():  # sharper logits than the 0.02 init, so greedy choices are never near-ties
        m.transformer.wte.weight.mul_(8)
    return m


@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_cache_equals_no_cache(name):
    m = _model(**VARIANTS[name])
    probe = generate(m, PROMPTS, 8, temperature=0)
    stops = (probe.tokens[1][4],)  # one row stops early, so the cache drops rows mid-batch
    a = generate(m, PROMPTS, 16, temperature=0, stop_tokens=stops)
    b = generate(m, PROMPTS, 16, temperature=0, stop_tokens=stops, use_cache=False)
    assert a.tokens == b.tokens
    assert a.finished == b.finished and a.finished[1]
    for ra, rb in zip(a.logprobs, b.logprobs):
        assert torch.allclose(torch.tensor(ra), torch.tensor(rb), atol=1e-4)
    for i in (0, 2):  # and padding never changes a row
        assert generate(m, [PROMPTS[i]], 16, temperature=0, stop_tokens=stops).tokens[0] == a.tokens[i]


def test_mla_cache_holds_only_latent_and_rope_key():
    cfg = dict(attn="mla", kv_lora_rank=24, qk_rope_head_dim=8)
    m = _model(**cfg)
    cache = m.new_cache(3, 40)
    for layer in cache.layers:
        assert set(layer) == {"c_kv", "k_rope"}
    assert cache.bytes_per_token() == SMALL["n_layer"] * (24 + 8) * 4  # float32 values per token, all layers
    mha = _model().new_cache(3, 40).bytes_per_token()
    assert mha == SMALL["n_layer"] * 2 * SMALL["n_embd"] * 4
    # the 124M shape: 12 layers x (256 + 32) values vs 12 x 1536
    big = GPTConfig(attn="mla")
    assert (big.kv_lora_rank, big.qk_rope_head_dim, big.qk_nope_head_dim, big.v_head_dim) == (256, 32, 64, 64)


def test_moe_routes_each_token_to_top_k_plus_shared():
    m = _model(mlp="moe", n_routed_experts=6, moe_top_k=2, n_shared_experts=1)
    moe = m.transformer.h[0].mlp
    assert isinstance(moe, MoE) and moe.shared is not None
    x = torch.randn(10, SMALL["n_embd"])
    idx, w = moe.route(x)
    assert idx.shape == (10, 2) and all(len(set(r)) == 2 for r in idx.tolist())
    assert torch.allclose(w.sum(-1), torch.ones(10))
    with torch.no_grad():
        y = moe(x)
        # the output is exactly: shared experts + the k chosen experts, mixed by the routing weights
        manual = moe.shared(x) + torch.stack(
            [sum(w[n, j] * moe.experts[int(idx[n, j])](x[n]) for j in range(2)) for n in range(10)]
        )
        assert torch.allclose(y, manual, atol=1e-5)
        # an expert no token picked has no influence at all
        unused = sorted(set(range(6)) - set(idx.flatten().tolist()))
        if unused:
            moe.experts[unused[0]].c_proj.weight.add_(1.0)
            assert torch.equal(moe(x), y)
    # load statistics: k routed slots per token, per layer
    m.moe_load(reset=True)
    with torch.no_grad():
        m(torch.randint(0, 512, (3, 20)))
    load = m.moe_load()
    assert load.shape == (SMALL["n_layer"], 6) and torch.allclose(load.sum(-1), torch.ones(SMALL["n_layer"]))
    assert int(m.transformer.h[1].mlp.load.sum()) == 3 * 20 * 2


def test_moe_bias_balances_load_without_a_loss():
    m = _model(mlp="moe", n_routed_experts=4, moe_top_k=1, moe_bias_rate=0.05)
    moe = m.transformer.h[0].mlp
    x = torch.randn(64, SMALL["n_embd"])
    x[:, 0] = 3.0
    with torch.no_grad():  # a router that sends every token to expert 0 (the others: random preferences)
        moe.gate.weight[:, 0] = 0.0
        moe.gate.weight[0, 0] = 2.0
    assert set(moe.route(x)[0].flatten().tolist()) == {0}
    m.train()
    with torch.no_grad():
        moe(x)  # no grad: evaluation-style forwards never touch the bias
    assert torch.count_nonzero(moe.expert_bias) == 0
    moe(x).sum().backward()  # expert 0 got every token: its bias steps down, the idle ones' step up
    assert torch.allclose(moe.expert_bias, torch.tensor([-0.05, 0.05, 0.05, 0.05]))
    for _ in range(30):
        moe(x).sum().backward()
    idx, _ = moe.route(x)
    assert len(set(idx.flatten().tolist())) >= 3  # the bias alone spread the tokens over the experts
    assert "transformer.h.0.mlp.expert_bias" in m.state_dict()  # routing state is saved with the model
    assert not any(k.endswith(".load") for k in m.state_dict())  # statistics are not


def test_configs_and_state_dict_names():
    old = {
        "block_size": 64,
        "vocab_size": 50304,
        "n_layer": 2,
        "n_head": 2,
        "n_embd": 32,
        "dropout": 0.0,
        "bias": True,
    }
    cfg = GPTConfig.from_dict(old)  # saved before the architecture fields existed
    assert (cfg.pos, cfg.attn, cfg.mlp) == ("learned", "mha", "dense")
    with pytest.raises(IclawError, match="unknown keys: flash"):
        GPTConfig.from_dict({**old, "flash": True})
    with pytest.raises(IclawError, match="attn='gqa'"):
        GPTConfig(attn="gqa")
    assert GPTConfig.from_dict(preset("tiny", attn="mla", mlp="moe").to_dict()) == preset(
        "tiny", attn="mla", mlp="moe"
    )
    keys = set(GPT(GPTConfig.from_dict(old)).state_dict())
    block = {f"transformer.h.{i}.{k}" for i in range(2) for k in (
        "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
        "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
        "mlp.c_proj.bias")}  # fmt: skip
    nanogpt = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight",
               "transformer.ln_f.bias", "lm_head.weight"} | block  # fmt: skip
    assert keys == nanogpt
    assert not any("wpe" in k for k in GPT(GPTConfig(**SMALL, pos="rope")).state_dict())


def test_active_params_and_flops():
    dense, moe = _model(), _model(mlp="moe", n_routed_experts=8, moe_top_k=2)
    assert dense.num_active_params() == dense.num_params()
    per_expert = sum(p.numel() for p in moe.transformer.h[0].mlp.experts[0].parameters())
    assert moe.num_params() - moe.num_active_params() == SMALL["n_layer"] * 6 * per_expert
    # MHA: nanoGPT's 6N + 12 L H hs T
    hs = SMALL["n_embd"] // SMALL["n_head"]
    n = dense.num_params(non_embedding=True)
    assert dense.flops_per_token(32) == 6 * n + 12 * SMALL["n_layer"] * SMALL["n_head"] * hs * 32


@pytest.mark.parametrize("name", [*VARIANTS, "muon"])
def test_every_variant_learns_and_scores(name):
    arch = VARIANTS.get(name, {})
    m = _model(**arch).train()
    torch.manual_seed(1)
    data = torch.randint(0, 64, (4, 33))  # a tiny corpus the model can memorise
    opt = configure_optimizers(m, "muon" if name == "muon" else "adamw", lr=3e-3, weight_decay=0.0)
    losses = []
    for _ in range(30):
        _, loss = m(data[:, :-1], data[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses
    # the scorer every trainer uses works and is differentiable
    lp, _ = logprobs_and_entropy(m, data[:2, :12])
    assert lp.shape == (2, 11) and torch.isfinite(lp).all()
    lp[:, 4:].sum().backward()


@pytest.mark.parametrize("kv_heads", [4, 1])  # MLA shares one rope key across heads: k (B, 1, S, d)
def test_plain_bf16_attention_matches_sdpa(kv_heads):
    # the short bf16 CPU path (plain matmuls) against PyTorch's SDPA in fp32: outputs and gradients agree
    from torch.nn import functional as F

    from iclaw.model.attention import PLAIN_MAX_T, attend

    torch.manual_seed(0)
    q = torch.randn(2, 4, 48, 16, requires_grad=True)
    k, v = (torch.randn(2, kv_heads, 48, 16, requires_grad=True) for _ in range(2))
    ref = F.scaled_dot_product_attention(q, k.expand_as(q), v.expand_as(q), is_causal=True)
    (ref * ref).sum().backward()
    want = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    out = attend(qb, kb, vb, None, 0.0)
    assert 48 <= PLAIN_MAX_T and out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=3e-2, rtol=3e-2)
    (out.float() * out.float()).sum().backward()
    for t, g in zip((q, k, v), want):
        torch.testing.assert_close(t.grad, g, atol=0.15, rtol=0.05)

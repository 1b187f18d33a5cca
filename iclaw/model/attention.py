"""Attention for the GPT (iclaw/model/gpt.py): GPT-2's multi-head attention, rotary position embeddings, and
DeepSeek-V2's multi-head latent attention (`attn="mla"`).

Each attention module owns its slice of the KV cache (`new_cache`): what it keeps per token is its own
business, so the sampler never needs to know which attention a model uses.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
from torch.nn import functional as F

if TYPE_CHECKING:
    from iclaw.model.gpt import GPTConfig


class RMSNorm(nn.Module):
    """RMSNorm (MLA normalises its compressed latents with it, as DeepSeek-V2 does)."""

    def __init__(self, ndim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


# ----------------------------------------------------------------------------------------------------------
# Rotary position embeddings


def rope_angles(pos: torch.Tensor, dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angles for position ids `pos` (B, T): each (B, 1, T, dim/2), float32.

    Computed from the positions on every call rather than kept in a table: there is no buffer to save, move
    or cast to bf16, and each row may have its own positions (left padding)."""
    inv_freq = theta ** (-torch.arange(0, dim, 2, device=pos.device, dtype=torch.float32) / dim)
    angles = pos.float()[:, None, :, None] * inv_freq  # (B, 1, T, dim/2): one pair of dims per frequency
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotate pairs (x[i], x[i + d/2]) of the last dim of x (B, H, T, d) by the position's angles."""
    cos, sin = rope
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).type_as(x)


# ----------------------------------------------------------------------------------------------------------
# Attention


def attention_mask(q_len: int, start: int, key_mask: torch.Tensor | None) -> torch.Tensor | None:
    """Boolean mask (B|1, 1, q_len, start+q_len): causal, and padded keys hidden. None = plain causal."""
    if key_mask is None and start == 0:
        return None  # let SDPA use its fast is_causal path
    s = start + q_len
    device = key_mask.device if key_mask is not None else None
    q_pos = torch.arange(start, s, device=device)[:, None]
    causal = torch.arange(s, device=device)[None, :] <= q_pos  # (q_len, s)
    if key_mask is None:
        return causal[None, None]
    return causal[None, None] & key_mask[:, None, None, :s]


# In bf16 on a CPU, SDPA's causal kernel (forward + backward) is slower than plain matmuls up to 256 tokens (3.3x
# at 64, 1.2x at 256) and 2x faster at 512 (benchmarks/bench_attention.py): short training batches go plain.
PLAIN_MAX_T = 256


def attend(q, k, v, mask, dropout: float):
    """softmax(q k^T / sqrt(d)) v with an optional boolean mask (None = causal). q (B, H, T, d), k (B, H|1, S, d)."""
    T = q.size(2)
    plain = mask is None and T <= PLAIN_MAX_T and dropout == 0.0
    plain = plain and q.device.type == "cpu" and q.dtype == torch.bfloat16
    if (T == 1 and mask is not None) or plain:  # (one decoding step: SDPA's masked CPU kernel is slower too)
        if mask is None:
            mask = torch.ones(T, k.size(2), dtype=torch.bool, device=q.device).tril(k.size(2) - T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return att @ v
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)


class CausalSelfAttention(nn.Module):
    """GPT-2's multi-head attention (optionally with RoPE on q and k)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)  # q, k, v in one matmul
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> dict[str, torch.Tensor]:
        """Per-layer cache: what this attention keeps per token. Plain MHA keeps k and v for every head."""
        hd = self.n_embd // self.n_head
        shape = (batch, self.n_head, max_len, hd)
        return {
            "k": torch.zeros(shape, device=device, dtype=dtype),
            "v": torch.zeros(shape, device=device, dtype=dtype),
        }

    def forward(self, x, rope=None, mask=None, cache=None, start: int = 0):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if rope is not None:  # pos="rope": rotate q and k; the cache then holds rotated keys
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        if cache is not None:  # write this step's keys/values, then attend over everything so far
            cache["k"][:, :, start : start + T] = k
            cache["v"][:, :, start : start + T] = v
            k, v = cache["k"][:, :, : start + T], cache["v"][:, :, : start + T]
        y = attend(q, k, v, mask, self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2 multi-head latent attention.

    Keys and values are not projected from h directly: h is first compressed to a small latent
    c = RMSNorm(W_dkv h) (kv_lora_rank dims), and per-head keys (the "nope" part, no position) and values are
    up-projected from c. Position enters through a separate small RoPE part: per-head RoPE queries and ONE
    RoPE key computed from h and shared by all heads. RoPE cannot live inside the latent (a rotation between
    W_uk and the query would stop W_uk being absorbed into the query), hence the decoupled key.

    So the cache holds only c and the RoPE key: kv_lora_rank + qk_rope_head_dim values per token per layer,
    against 2 * n_embd for MHA. When decoding one token we never expand the cache back into per-head keys
    and values: W_uk is absorbed into the query and W_uv applied after attention, so attention runs in
    latent space. For whole sequences (training, prefill) expanding k and v and using SDPA is cheaper.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        C, nh = config.n_embd, config.n_head
        self.n_head = nh
        self.dn, self.dr, self.dv = config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim
        self.kv_lora_rank = config.kv_lora_rank
        qk = self.dn + self.dr
        if config.q_lora_rank:  # queries through their own low-rank bottleneck (less activation memory)
            self.wq_a = nn.Linear(C, config.q_lora_rank, bias=False)
            self.q_norm = RMSNorm(config.q_lora_rank)
            self.wq_b = nn.Linear(config.q_lora_rank, nh * qk, bias=False)
        else:
            self.wq = nn.Linear(C, nh * qk, bias=False)
        self.wkv_a = nn.Linear(C, self.kv_lora_rank + self.dr, bias=False)  # down: latent + shared RoPE key
        self.kv_norm = RMSNorm(self.kv_lora_rank)
        self.wkv_b = nn.Linear(self.kv_lora_rank, nh * (self.dn + self.dv), bias=False)  # up: k_nope and v
        self.c_proj = nn.Linear(nh * self.dv, C, bias=config.bias)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> dict[str, torch.Tensor]:
        """Per-layer cache: the normed latent and the rotated RoPE key, nothing per head."""
        return {
            "c_kv": torch.zeros((batch, max_len, self.kv_lora_rank), device=device, dtype=dtype),
            "k_rope": torch.zeros((batch, max_len, self.dr), device=device, dtype=dtype),
        }

    def forward(self, x, rope=None, mask=None, cache=None, start: int = 0):
        B, T, C = x.size()
        nh, dn, dr, dv = self.n_head, self.dn, self.dr, self.dv
        q = self.wq_b(self.q_norm(self.wq_a(x))) if hasattr(self, "wq_a") else self.wq(x)
        q_nope, q_rope = q.view(B, T, nh, dn + dr).transpose(1, 2).split([dn, dr], dim=-1)
        q_rope = apply_rope(q_rope, rope)
        c_kv, k_rope = self.wkv_a(x).split([self.kv_lora_rank, dr], dim=-1)
        c_kv = self.kv_norm(c_kv)  # (B, T, r)
        k_rope = apply_rope(k_rope[:, None], rope)  # (B, 1, T, dr): one head, broadcast over all heads
        if cache is not None:
            cache["c_kv"][:, start : start + T] = c_kv
            cache["k_rope"][:, start : start + T] = k_rope[:, 0]
            c_kv, k_rope = cache["c_kv"][:, : start + T], cache["k_rope"][:, None, : start + T]
        dropout = self.dropout if self.training else 0.0
        S = c_kv.size(1)
        if cache is not None and T == 1:
            # decode: absorb W_uk into the query, attend over the latents, then apply W_uv.
            # q_nope . (W_uk c) = (W_uk^T q_nope) . c, and att @ (W_uv c) = W_uv (att @ c).
            w = self.wkv_b.weight.view(nh, dn + dv, self.kv_lora_rank)
            w_uk, w_uv = w[:, :dn], w[:, dn:]  # (nh, dn, r), (nh, dv, r)
            q_lat = torch.einsum("bhtd,hdr->bhtr", q_nope, w_uk)
            att = q_lat @ c_kv[:, None].transpose(-2, -1) + q_rope @ k_rope.transpose(-2, -1)  # (B, nh, 1, S)
            att = att * (1.0 / math.sqrt(dn + dr))
            if mask is not None:
                att = att.masked_fill(~mask, float("-inf"))
            att = F.dropout(att.softmax(dim=-1), dropout, self.training)
            y = torch.einsum("bhtr,hvr->bhtv", att @ c_kv[:, None], w_uv)  # (B, nh, 1, dv)
        else:
            kv = self.wkv_b(c_kv).view(B, S, nh, dn + dv).transpose(1, 2)
            k_nope, v = kv.split([dn, dv], dim=-1)
            k = torch.cat([k_nope, k_rope.expand(B, nh, S, dr).to(k_nope.dtype)], dim=-1)
            q = torch.cat([q_nope, q_rope], dim=-1)
            y = attend(q, k, v, mask, dropout)  # SDPA's scale 1/sqrt(dn + dr) is DeepSeek's softmax scale
        y = y.transpose(1, 2).contiguous().view(B, T, nh * dv)
        return self.resid_dropout(self.c_proj(y))

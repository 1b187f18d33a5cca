"""DeepSeekMoE for the GPT (iclaw/model/gpt.py, `mlp="moe"`): shared SwiGLU experts every token goes through,
plus the top-k of many small routed experts, balanced without an auxiliary loss (DeepSeek-V3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn as nn
from torch.nn import functional as F

if TYPE_CHECKING:
    from iclaw.model.gpt import GPTConfig


class Expert(nn.Module):
    """A SwiGLU feed-forward network, DeepSeek's expert: c_proj(silu(w1 x) * w3 x)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.c_proj = nn.Linear(hidden, dim, bias=False)  # down (named c_proj: gets GPT-2's scaled init)

    def forward(self, x):
        return self.c_proj(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    """DeepSeekMoE: shared experts every token goes through + the top-k of many small routed experts.

    Routing (DeepSeek-V3): affinity s = sigmoid(router(x)) per expert; the top-k experts are chosen by
    s + bias, and their outputs are mixed with weights s / sum(s) over the chosen k. The bias is used for the
    choice only, never in the output, so it balances load without a gradient: after every training forward
    each expert's bias moves by moe_bias_rate toward balance (down if it got more than the mean load, up if
    less). This is the "auxiliary-loss-free" scheme; we chose it over an auxiliary loss because a loss term
    would have to be threaded through every trainer (SFT, GRPO, distillation compute their own losses),
    while the bias update happens inside forward and so works in all of them unchanged. Under DDP the bias
    buffer is broadcast from rank 0 at each forward (DDP's default), so ranks always route alike.

    `load` counts the tokens each routed expert received (every forward, training or not) until reset;
    GPT.moe_load() reads it for all layers.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        C, h = config.n_embd, config.moe_expert_dim
        self.top_k, self.bias_rate = config.moe_top_k, config.moe_bias_rate
        self.gate = nn.Linear(C, config.n_routed_experts, bias=False)  # the router
        self.experts = nn.ModuleList([Expert(C, h) for _ in range(config.n_routed_experts)])
        # n shared experts of width h are one SwiGLU of width n*h (the sum of their outputs is that MLP's output)
        self.shared = Expert(C, h * config.n_shared_experts) if config.n_shared_experts else None
        self.register_buffer("expert_bias", torch.zeros(config.n_routed_experts))  # saved: it shapes routing
        load = torch.zeros(config.n_routed_experts, dtype=torch.long, device="cpu")  # real even on "meta"
        self.register_buffer("load", load, persistent=False)
        self.dropout = nn.Dropout(config.dropout)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For tokens x (N, C): the chosen routed experts (N, k) and their mixing weights (N, k)."""
        scores = torch.sigmoid(self.gate(x).float())
        with torch.no_grad():
            idx = (scores + self.expert_bias.float()).topk(self.top_k, dim=-1).indices
        w = scores.gather(1, idx)
        return idx, w / w.sum(dim=-1, keepdim=True)

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        idx, w = self.route(x)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = (idx == e).nonzero(as_tuple=True)  # tokens that picked expert e, and in which slot
            if rows.numel():
                y.index_add_(0, rows, (expert(x[rows]) * w[rows, slot, None]).to(y.dtype))
        if self.shared is not None:
            y = y + self.shared(x)
        counts = torch.bincount(idx.flatten(), minlength=len(self.experts))
        self.load += counts
        if self.training and torch.is_grad_enabled() and self.bias_rate:
            with torch.no_grad():  # the auxiliary-loss-free balancing step
                self.expert_bias += self.bias_rate * torch.sign(counts.float().mean() - counts.float())
        return self.dropout(y.view(shape))

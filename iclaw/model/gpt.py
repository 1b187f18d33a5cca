"""The GPT: nanoGPT's model, readable top to bottom, plus the KV cache the sampler needs and the
architecture options of issue 8 (RoPE, DeepSeek-style MLA and MoE: attention.py, moe.py).

State-dict keys match nanoGPT exactly (transformer.wte, transformer.h.0.attn.c_attn, ...), so a nanoGPT
ckpt.pt loads after stripping `_orig_mod.`, and HF GPT-2 loads after transposing its Conv1D weights.

Beyond nanoGPT:
- `pos` / `key_mask`: rows of a batch may be left-padded to a common length (the sampler batches prompts of
  different lengths). Each row gets its own position ids, and padded keys are masked out of attention.
- `cache`: a preallocated KV cache; each attention layer decides what it stores per token (plain attention
  stores k and v for every head; MLA stores one compressed latent and one shared RoPE key), so the sampler
  never needs to know.
- Options, all off by default so the default model *is* GPT-2:
    pos  = learned | rope        rotary position embeddings instead of the wpe table
    attn = mha     | mla         multi-head latent attention (DeepSeek-V2)
    mlp  = dense   | moe         shared + fine-grained routed SwiGLU experts (DeepSeek-V3 style routing)
  The optimizer (AdamW or Muon) is a training option: see iclaw/train/optim.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
from torch.nn import functional as F

from iclaw.errors import IclawError
from iclaw.model.attention import CausalSelfAttention, MultiHeadLatentAttention, attention_mask, rope_angles
from iclaw.model.moe import MoE
from iclaw.model.tokenizer import VOCAB_SIZE
from iclaw.model.vocab import Vocab


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257 padded to a multiple of 64; slots 50257+ hold control tokens
    trimmed: bool = False  # rows are a trimmed set of GPT-2 ids (iclaw/model/vocab.py), saved as vocab.json
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0  # pretraining only: every RL / eval path builds the model with dropout 0
    bias: bool = True  # GPT-2 uses biases in Linears and LayerNorms
    # --- position: "learned" = GPT-2's wpe table; "rope" = rotary embeddings on q/k, no wpe parameter
    pos: str = "learned"
    rope_theta: float = 10000.0
    # --- attention: "mha" = GPT-2's; "mla" = DeepSeek-V2 multi-head latent attention.
    # MLA sizes; 0 means "derive from the head size hs = n_embd / n_head" (filled in by __post_init__, so a
    # saved config.json always holds the real numbers).
    attn: str = "mha"
    kv_lora_rank: int = 0  # size of the compressed KV latent (0 -> 4 * hs, DeepSeek-V2's 512 for hs 128)
    q_lora_rank: int = 0  # query compression rank; 0 = no query compression (as in DeepSeek-V2-Lite)
    qk_nope_head_dim: int = 0  # per-head query/key dims without position (0 -> hs)
    qk_rope_head_dim: int = 0  # decoupled RoPE query/key dims; one such key for all heads (0 -> hs / 2)
    v_head_dim: int = 0  # per-head value dims (0 -> hs)
    # --- MLP: "dense" = GPT-2's 4x GELU MLP; "moe" = shared experts + top-k of routed experts
    mlp: str = "dense"
    n_routed_experts: int = 8
    n_shared_experts: int = 1
    moe_top_k: int = 2
    moe_expert_dim: int = 0  # hidden width of one expert (0 -> active expert params ~ the dense MLP's)
    moe_bias_rate: float = 1e-3  # auxiliary-loss-free balancing: routing-bias step per training forward

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("pos", self.pos, ("learned", "rope")),
            ("attn", self.attn, ("mha", "mla")),
            ("mlp", self.mlp, ("dense", "moe")),
        ):
            if value not in allowed:
                raise IclawError(f"model config: {name}={value!r} (choose {' or '.join(allowed)})")
        if self.n_embd % self.n_head:
            raise IclawError(f"model config: n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")
        hs = self.n_embd // self.n_head
        if self.pos == "rope" and self.attn == "mha" and hs % 2:
            raise IclawError(f"model config: RoPE needs an even head size (got {hs})")
        if self.attn == "mla":
            self.kv_lora_rank = self.kv_lora_rank or 4 * hs
            self.qk_nope_head_dim = self.qk_nope_head_dim or hs
            self.qk_rope_head_dim = self.qk_rope_head_dim or max(2, hs // 2 // 2 * 2)
            self.v_head_dim = self.v_head_dim or hs
            if self.qk_rope_head_dim % 2:
                raise IclawError(f"model config: qk_rope_head_dim must be even (got {self.qk_rope_head_dim})")
        if self.mlp == "moe":
            if not 1 <= self.moe_top_k <= self.n_routed_experts:
                raise IclawError(
                    f"model config: moe_top_k {self.moe_top_k} must be between 1 and n_routed_experts "
                    f"{self.n_routed_experts}"
                )
            if not self.moe_expert_dim:
                # a SwiGLU expert of width h has 3*C*h weights; the dense MLP has 8*C^2. Pick h so the experts a
                # token actually runs (top-k routed + shared) cost about what the dense MLP costs.
                h = 8 * self.n_embd / (3 * (self.moe_top_k + self.n_shared_experts))
                self.moe_expert_dim = max(8, int(round(h / 8)) * 8)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        """Configs saved before a field existed load with that field's default; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise IclawError(f"model config has unknown keys: {', '.join(unknown)}")
        return cls(**d)


PRESETS: dict[str, GPTConfig] = {
    # tiny: the CPU demo size (~7M params with GPT-2's 50304 rows, ~1M with a trimmed vocabulary)
    "tiny": GPTConfig(block_size=512, n_layer=4, n_head=4, n_embd=128),
    # small: the shipped default policy's body (iclaw-small), meant for a trimmed vocabulary
    "small": GPTConfig(block_size=512, n_layer=6, n_head=6, n_embd=192),
    "124m": GPTConfig(n_layer=12, n_head=12, n_embd=768),
    "350m": GPTConfig(n_layer=24, n_head=16, n_embd=1024),
    "774m": GPTConfig(n_layer=36, n_head=20, n_embd=1280),
    "1558m": GPTConfig(n_layer=48, n_head=25, n_embd=1600),
}


def preset(name: str, **overrides) -> GPTConfig:
    if name not in PRESETS:
        raise IclawError(f"unknown model preset '{name}' (known: {', '.join(PRESETS)})")
    return GPTConfig(**{**PRESETS[name].to_dict(), **overrides})


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""

    def __init__(self, ndim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        # GPT-2 uses the tanh approximation of GELU ("gelu_new" in HF)
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = MultiHeadLatentAttention(config) if config.attn == "mla" else CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MoE(config) if config.mlp == "moe" else MLP(config)

    def forward(self, x, rope=None, mask=None, cache=None, start: int = 0):
        x = x + self.attn(self.ln_1(x), rope=rope, mask=mask, cache=cache, start=start)
        return x + self.mlp(self.ln_2(x))


class KVCache:
    """Preallocated per-layer caches for `max_len` positions of `batch` rows; `length` positions are filled."""

    def __init__(self, model: GPT, batch: int, max_len: int, device, dtype):
        self.layers = [blk.attn.new_cache(batch, max_len, device, dtype) for blk in model.transformer.h]
        self.max_len = max_len
        self.length = 0

    def bytes_per_token(self) -> int:
        """Bytes cached per position per row, summed over layers (what a long context costs in memory).
        Every cache tensor is laid out with the batch first and one `max_len` axis."""
        return sum(
            t.numel() // (t.shape[0] * self.max_len) * t.element_size()
            for layer in self.layers
            for t in layer.values()
        )

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only some batch rows (the sampler drops rows that finished)."""
        self.layers = [{k: t[rows] for k, t in layer.items()} for layer in self.layers]


class GPT(nn.Module):
    def __init__(self, config: GPTConfig, vocab: Vocab | None = None):
        super().__init__()
        if vocab is not None:  # the config follows the vocabulary: rows = its ids
            config.vocab_size, config.trimmed = len(vocab), True
        elif config.trimmed:
            raise IclawError(f"model config: a trimmed vocabulary of {config.vocab_size} rows needs its ids")
        self.config = config
        self.vocab = vocab
        if vocab is not None:  # GPT-2 id -> row (-1: not in the vocabulary), and row -> GPT-2 id
            with torch.device("cpu"):  # real tensors even when the weights are built on "meta" (weights.py)
                row_of = torch.full((VOCAB_SIZE,), -1, dtype=torch.long)
                row_of[torch.tensor(vocab.ids)] = torch.arange(len(vocab))
                id_of = torch.tensor(vocab.ids, dtype=torch.long)
            self.register_buffer("row_of", row_of, persistent=False)
            self.register_buffer("id_of", id_of, persistent=False)
        modules = dict(wte=nn.Embedding(config.vocab_size, config.n_embd))
        if config.pos == "learned":
            modules["wpe"] = nn.Embedding(config.block_size, config.n_embd)
        modules.update(
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        )
        self.transformer = nn.ModuleDict(modules)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying, as in GPT-2
        # which dims get rotated: all of each head's for MHA+RoPE; MLA always rotates its decoupled part only
        self.rope_dim = None
        if config.attn == "mla":
            self.rope_dim = config.qk_rope_head_dim
        elif config.pos == "rope":
            self.rope_dim = config.n_embd // config.n_head
        self.apply(self._init_weights)
        # GPT-2's scaled init of residual projections: keeps the residual stream's variance flat with depth
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self, non_embedding: bool = False) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding and hasattr(self.transformer, "wpe"):
            n -= self.transformer.wpe.weight.numel()
        return n

    def num_active_params(self, non_embedding: bool = False) -> int:
        """Parameters one token actually runs through: an MoE layer counts only top-k of its routed experts."""
        n = self.num_params(non_embedding)
        for block in self.transformer.h:
            if isinstance(block.mlp, MoE):
                per_expert = sum(p.numel() for p in block.mlp.experts[0].parameters())
                n -= (len(block.mlp.experts) - block.mlp.top_k) * per_expert
        return n

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward), the PaLM / nanoGPT estimate: 6 per active weight
        (a multiply-add each way, backward twice the forward) plus attention's two T-long dot products per
        head (q.k over the query/key dims, att.v over the value dims), also x6. Causality is ignored."""
        c = self.config
        hs = c.n_embd // c.n_head
        qk, v = (c.qk_nope_head_dim + c.qk_rope_head_dim, c.v_head_dim) if c.attn == "mla" else (hs, hs)
        return 6 * self.num_active_params(non_embedding=True) + 6 * c.n_layer * c.n_head * (qk + v) * seq_len

    def moe_load(self, reset: bool = False) -> torch.Tensor | None:
        """Fraction of routed-token slots each expert received since the last reset: (n_layer, n_routed), rows
        sum to 1 (a perfectly balanced layer is 1 / n_routed everywhere). None for a dense model."""
        layers = [b.mlp for b in self.transformer.h if isinstance(b.mlp, MoE)]
        if not layers:
            return None
        load = torch.stack([m.load.float() for m in layers])
        if reset:
            for m in layers:
                m.load.zero_()
        return load / load.sum(dim=-1, keepdim=True).clamp(min=1)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """GPT-2 ids -> this model's rows (the identity for a full vocabulary). An id the model has no row for
        is an error: text for a trimmed model goes through `Vocab.fit` first."""
        if self.vocab is None:
            return ids
        r = self.row_of[ids]
        if bool((r < 0).any()):
            bad = ids[r < 0][:5].tolist()
            raise IclawError(f"token ids {bad} are not in the model's trimmed vocabulary (use Vocab.fit)")
        return r

    def ids(self, rows: torch.Tensor) -> torch.Tensor:
        """This model's rows (e.g. sampled ones) -> GPT-2 ids."""
        return rows if self.vocab is None else self.id_of[rows]

    def fit(self, ids: list[int], *aligned: list):
        """Token ids (and aligned lists) this model can read: out-of-vocabulary ids spelled as bytes."""
        if self.vocab is None:
            return (ids, *aligned) if aligned else ids
        return self.vocab.fit(ids, *aligned)

    def new_cache(self, batch: int, max_len: int) -> KVCache:
        p = self.lm_head.weight
        return KVCache(self, batch, min(max_len, self.config.block_size), p.device, p.dtype)

    def hidden(self, idx, *, cache: KVCache | None = None, pos=None, key_mask=None):
        """Final hidden states (B, T, C). `pos` (B, T) position ids; `key_mask` (B, S) True = real token."""
        B, T = idx.size()
        start = cache.length if cache is not None else 0
        if start + T > self.config.block_size:
            raise IclawError(
                f"sequence of {start + T} tokens exceeds the model's block size {self.config.block_size}"
            )
        if pos is None:
            pos = torch.arange(start, start + T, device=idx.device)[None, :].expand(B, T)
        x = self.transformer.wte(self.rows(idx))
        if "wpe" in self.transformer:
            x = x + self.transformer.wpe(pos)
        rope = rope_angles(pos, self.rope_dim, self.config.rope_theta) if self.rope_dim else None
        x = self.transformer.drop(x)
        mask = attention_mask(T, start, key_mask)
        for i, block in enumerate(self.transformer.h):
            x = block(x, rope=rope, mask=mask, cache=cache.layers[i] if cache else None, start=start)
        if cache is not None:
            cache.length = start + T
        return self.transformer.ln_f(x)

    def forward(self, idx, targets=None, *, cache: KVCache | None = None, pos=None, key_mask=None):
        """Logits over the model's rows (B, T, V); with `targets` (GPT-2 ids, -1 = ignore), also the mean
        cross-entropy."""
        x = self.hidden(idx, cache=cache, pos=pos, key_mask=key_mask)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            if self.vocab is not None:
                targets = torch.where(targets < 0, targets, self.rows(targets.clamp(min=0)))
            loss = F.cross_entropy(
                logits.float().view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1
            )
        return logits, loss


def cpu_has_bf16() -> bool:
    """Does this CPU multiply bf16 in hardware (AVX512-BF16 or AMX)? Without it oneDNN emulates bf16, and
    autocast turns from a gain into a disaster: on an AVX2-only AMD EPYC ten 1024^3 matmuls took 22.7 s in
    bf16 against 0.12 s in fp32, and a tiny-model SFT step 9.8 s against 0.55 s. Elsewhere (e.g. arm64) we do
    not know, so fp32."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def bf16_supported(device: torch.device | str) -> bool:
    """Where bf16 matmuls are fast: CUDA that supports it, and CPUs with bf16 hardware (cpu_has_bf16)."""
    dev = torch.device(device).type
    if dev == "cuda":
        return torch.cuda.is_bf16_supported()
    return dev == "cpu" and cpu_has_bf16()


def autocast(device: torch.device | str, enabled: bool = True):
    """bf16 autocast where it is fast (bf16_supported); a no-op context elsewhere (MPS, CPUs without bf16)."""
    dev = torch.device(device).type
    if enabled and bf16_supported(device):
        return torch.autocast(dev, dtype=torch.bfloat16)
    return torch.autocast(dev if dev in ("cuda", "cpu") else "cpu", enabled=False)


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

"""Perplexity of a text under a model, with the standard strided sliding window (as in the Hugging Face
"Perplexity of fixed-length models" guide), so the numbers compare with published GPT-2 figures.

Which tokens are scored, exactly: the text is tokenized as a whole (GPT-2 BPE, no BOS/EOS added), giving
ids x_0 .. x_{N-1}. Token x_0 has no context and is never scored; every token x_1 .. x_{N-1} is scored exactly
once. Windows are [b, min(b + T, N)) for b = 0, S, 2S, ... (T = the model's block size, S = stride, default
T // 2), stopping after the window that reaches the end. The first window scores all of its tokens after the
first; each later window scores only the tokens past the previous window's end (its last <= S tokens), so
those are predicted with at least T - S tokens of context. (With S = T, non-overlapping windows, the first
token of each window has no context and is skipped too.) perplexity = exp(total NLL / number scored).

The softmax is taken over GPT-2's 50257 text tokens only: the control-token slots 50257..50303 never occur in
plain text, and an imported GPT-2 gets those rows by padding (weights.pad_vocab), so counting them would
put probability mass on rows the original model never had. The numbers therefore match the original
model's exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from iclaw.errors import IclawError
from iclaw.model.tokenizer import N_BASE


@dataclass
class Windows:
    """One window: ids[begin:end] are fed; the last `n_scored` predictions inside it are scored."""

    begin: int
    end: int
    n_scored: int


def windows(n_tokens: int, block_size: int, stride: int) -> list[Windows]:
    if not 0 < stride <= block_size:
        raise IclawError(f"--stride {stride}: must be between 1 and the block size {block_size}")
    out, prev_end, begin = [], 0, 0
    while True:
        end = min(begin + block_size, n_tokens)
        # inside the window, position i predicts token begin+i+1; score targets prev_end.. end-1 (never x_0)
        # (capped at end-begin-1: with stride == block size the first token of each window has no context)
        n_scored = min(end - max(prev_end, 1), end - begin - 1)
        out.append(Windows(begin, end, n_scored))
        prev_end = end
        if end == n_tokens:
            return out
        begin += stride


@torch.no_grad()
def perplexity(model, ids: list[int], *, stride: int | None = None, device=None, where: str = "text") -> dict:
    """{"perplexity", "tokens" (number scored), "nll" (mean, nats), "block_size", "stride"} for token ids.
    `where` names the input in error messages (the CLI passes the file name)."""
    if len(ids) < 2:
        raise IclawError(f"{where}: has {len(ids)} token(s); perplexity needs at least 2")
    T = model.config.block_size
    stride = stride or max(1, T // 2)
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    x = torch.tensor(ids, dtype=torch.long, device=device)
    total, count = 0.0, 0
    for w in windows(len(ids), T, stride):
        if w.n_scored <= 0:
            continue
        chunk = x[w.begin : w.end]
        logits, _ = model(chunk[None, :-1])  # (1, L-1, V): position i predicts chunk[i+1]
        # a full vocabulary's padded control slots are not text; a trimmed one has only real rows
        logits = logits[0, -w.n_scored :, : N_BASE if model.vocab is None else None].float()
        targets = model.rows(chunk[-w.n_scored :])
        total += F.cross_entropy(logits, targets, reduction="sum").item()
        count += w.n_scored
    model.train(was_training)
    nll = total / count
    return {"perplexity": math.exp(nll), "tokens": count, "nll": nll, "block_size": T, "stride": stride}


def perplexity_of_text(
    model, text: str, *, stride: int | None = None, device=None, where: str = "text"
) -> dict:
    from iclaw.model.tokenizer import get_tokenizer

    ids = model.fit(get_tokenizer().encode(text))  # a trimmed vocabulary scores the byte spelling
    return perplexity(model, ids, stride=stride, device=device, where=where)

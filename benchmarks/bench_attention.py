"""Attention on a CPU in bf16: SDPA's causal kernel against plain matmuls (iclaw/model/attention.py's `attend`).

    python benchmarks/bench_attention.py          # about a minute on 2 cores

Two tables, both sides measured in the same run, interleaved, SDPA everywhere (`PLAIN_MAX_T` = 0) against: plain
at every length, for `attend` alone (forward + backward, batch 16, the shipped policy's 6 heads of 32 and the
demo's 4), which shows where plain stops paying; and the default (plain up to 256 tokens), for a whole SFT step
of the recipe's model (6 x 192, RoPE, a 6,016-row vocabulary, Muon). The ratio is SDPA's time over the other's:
above 1, plain is faster. Needs bf16 autocast (`iclaw doctor`); on an fp32-only CPU the plain path is never
taken.
"""

from __future__ import annotations

import statistics
import time
from functools import partial

import torch

import iclaw.model.attention as attention
from iclaw.model.gpt import GPT, autocast, bf16_supported, preset
from iclaw.model.vocab import Vocab
from iclaw.train.optim import configure_optimizers
from iclaw.train.sft import sft_loss


def timed(fn, repeats: int) -> float:
    fn()  # warm-up: oneDNN builds its kernels for the shape
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def attention_step(q, k, v) -> None:
    attention.attend(q, k, v, None, 0.0).sum().backward()


def both(fn, repeats: int, cap: int) -> tuple[float, float]:
    """fn's median ms with SDPA everywhere (PLAIN_MAX_T = 0) and with PLAIN_MAX_T = cap, interleaved twice so
    drift on a shared machine hits both sides."""
    default = attention.PLAIN_MAX_T
    res: dict[int, list[float]] = {0: [], cap: []}
    try:
        for _ in range(2):
            for limit in res:
                attention.PLAIN_MAX_T = limit
                res[limit].append(timed(fn, repeats))
    finally:
        attention.PLAIN_MAX_T = default
    return statistics.median(res[0]), statistics.median(res[cap])


def sft_step(model, opt, idx: torch.Tensor, mask: torch.Tensor) -> None:
    with autocast("cpu", True):
        loss = sft_loss(model, idx, mask)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def attention_table() -> None:
    print("`attend` forward + backward, bf16, batch 16 (ms, median of 6)")
    print(f"{'heads x dim':>12} {'T':>5} {'SDPA':>8} {'plain':>8} {'ratio':>6}")
    for h, d in ((6, 32), (4, 32)):
        for t in (64, 128, 192, 256, 320, 512):
            q, k, v = (torch.randn(16, h, t, d, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            # plain at every length (cap = t), to see where it stops paying
            a, b = both(partial(attention_step, q, k, v), 3, cap=t)
            print(f"{f'{h} x {d}':>12} {t:>5} {a:>8.1f} {b:>8.1f} {a / b:>6.2f}")


def sft_step_table() -> None:
    torch.manual_seed(0)
    ids = list(range(6000))
    model = GPT(preset("small", pos="rope"), Vocab.build([ids]))
    opt = configure_optimizers(model, "muon", 2e-3, 0.1, ns_bf16=True)
    model.train()
    g = torch.Generator().manual_seed(0)
    default = attention.PLAIN_MAX_T
    print(
        f"\nSFT step of the recipe's model ({model.num_params() / 1e6:.2f}M params), bf16, batch 16 (ms, median of 8)"
    )
    print(f"{'T':>5} {'SDPA':>8} {'plain<=' + str(default):>10} {'ratio':>6}")
    for t in (128, 192, 256, 320):
        idx = torch.randint(0, len(ids), (16, t), generator=g)
        mask = torch.zeros(16, t - 1)
        mask[:, t // 2 :] = 1  # the policy's tokens: the later half
        a, b = both(partial(sft_step, model, opt, idx, mask), 4, cap=default)
        print(f"{t:>5} {a:>8.1f} {b:>10.1f} {a / b:>6.2f}")


if __name__ == "__main__":
    if not bf16_supported("cpu"):
        raise SystemExit("this CPU has no bf16 autocast (iclaw doctor): the plain path is never taken here")
    attention_table()
    sft_step_table()

"""`iclaw bench arch`: train each architecture variant on the same data for the same tokens, and compare.

Every variant starts from the same seed, reads the same batches in the same order (the loader is sequential),
uses the same learning rate and schedule, and is scored on the same validation windows. Measured per
variant: total and active parameters, validation loss and perplexity, training tokens/s and MFU, sampling
tokens/s with the KV cache (iclaw.model.sampler.generate, greedy, batch of prompts from val.bin), and the
KV-cache bytes per token (KVCache.bytes_per_token, in the model's dtype). Results go to a rich table, a JSON
file and a PNG next to it.

Timings share the machine with whatever else runs; the JSON records the load average at start and end.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import torch

from iclaw.errors import IclawError
from iclaw.files import write_atomic
from iclaw.train.pretrain import PretrainConfig, pretrain

# name -> (architecture overrides, optimizer). MLA brings its own decoupled RoPE, so its variants drop wpe.
VARIANTS: dict[str, tuple[dict, str]] = {
    "mha": ({}, "adamw"),
    "rope": ({"pos": "rope"}, "adamw"),
    "mla": ({"attn": "mla", "pos": "rope"}, "adamw"),
    "moe": ({"mlp": "moe"}, "adamw"),
    "mla+moe": ({"attn": "mla", "mlp": "moe", "pos": "rope"}, "adamw"),
    "muon": ({}, "muon"),
}


def default_data(min_tokens: int, progress: bool) -> Path:
    """A cached stdlib corpus under $ICLAW_HOME/data, big enough for `min_tokens` training tokens."""
    from iclaw.model.registry import iclaw_home
    from iclaw.train.data import prep

    cap = max(2_000_000, int(min_tokens * 1.2))
    out = iclaw_home() / "data" / f"stdlib-shuffled-{cap}"
    if not (out / "meta.json").is_file():
        prep([], out, max_tokens=cap, progress=progress)
    return out


@torch.inference_mode()
def sample_speed(model, prompts: list[list[int]], new_tokens: int) -> float:
    """Tokens/s of greedy KV-cache sampling (no stop tokens: every row makes exactly new_tokens)."""
    from iclaw.model.sampler import generate

    generate(model, prompts, 4, temperature=0)  # warm-up
    t0 = time.perf_counter()
    out = generate(model, prompts, new_tokens, temperature=0)
    dt = time.perf_counter() - t0
    return sum(len(t) for t in out.tokens) / dt


def run(
    *,
    config: str = "tiny",
    tokens: int = 200_000,
    data: Path | None = None,
    batch: int = 8,
    seq: int = 256,
    lr: float = 2e-3,
    variants: list[str] | None = None,
    sample_batch: int = 8,
    sample_prompt: int = 32,
    sample_new: int = 64,
    seed: int = 1337,
    progress: bool = True,
    out: Path | None = None,
) -> dict:
    """Train and measure every variant; with `out`, the JSON is rewritten after each variant (a long run
    that is interrupted keeps what it finished)."""
    names = variants or list(VARIANTS)
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        raise IclawError(f"--variants: unknown {', '.join(bad)} (known: {', '.join(VARIANTS)})")
    data = Path(data) if data else default_data(tokens, progress)
    from iclaw.train.data import open_split

    val = open_split(data, "val")
    need = sample_batch * sample_prompt
    if len(val) < need:
        raise IclawError(
            f"{data}/val.bin: too small for {sample_batch} sampling prompts of {sample_prompt} tokens"
        )
    prompts = [
        val[i * sample_prompt : (i + 1) * sample_prompt].astype(int).tolist() for i in range(sample_batch)
    ]
    result = {
        "config": config,
        "tokens": tokens,
        "batch": batch,
        "seq": seq,
        "lr": lr,
        "data": str(data),
        "threads": torch.get_num_threads(),
        "loadavg_start": os.getloadavg(),
        "variants": {},
    }
    for name in names:
        arch, optimizer = VARIANTS[name]
        cfg = PretrainConfig(
            data=str(data),
            tokens=tokens,
            config=config,
            optimizer=optimizer,
            batch=batch,
            seq=seq,
            lr=lr,
            eval_every=0,
            seed=seed,
            **arch,
        )
        model, s = pretrain(cfg, progress=progress)
        model.eval()
        load = model.moe_load()
        r = {
            "arch": arch,
            "optimizer": optimizer,
            "params": s["params"],
            "active_params": s["active_params"],
            "val_loss": s["val_loss"],
            "val_ppl": s["val_ppl"],
            "train_tokens_per_s": s["tokens_per_s"],
            "mfu": s["mfu"],
            "peak_flops": s["peak_flops"],
            "sample_tokens_per_s": sample_speed(model, prompts, sample_new),
            "kv_bytes_per_token": model.new_cache(1, model.config.block_size).bytes_per_token(),
            # 1.0 = perfectly balanced experts; max load / mean load over experts, worst layer
            "moe_max_over_mean_load": (load.max(-1).values * load.size(-1)).max().item()
            if load is not None
            else None,
            "history": s["history"],
        }
        result["variants"][name] = r
        if out is not None:
            save(result, out, with_plot=False)
    result["loadavg_end"] = os.getloadavg()
    return result


def table(result: dict):
    from rich.table import Table

    t = Table(
        title=f"iclaw bench arch: {result['config']}, {result['tokens']:,} tokens each "
        f"(batch {result['batch']} x seq {result['seq']}, lr {result['lr']:g})"
    )
    for col in (
        "variant",
        "params",
        "active",
        "val loss",
        "ppl",
        "train tok/s",
        "MFU",
        "sample tok/s",
        "KV B/token",
    ):
        if col == "variant":
            t.add_column(col, no_wrap=True, min_width=7)
        else:
            t.add_column(col, justify="right")
    for name, r in result["variants"].items():
        t.add_row(
            name,
            f"{r['params'] / 1e6:.2f}M",
            f"{r['active_params'] / 1e6:.2f}M",
            f"{r['val_loss']:.3f}",
            f"{r['val_ppl']:.1f}",
            f"{r['train_tokens_per_s']:,.0f}",
            f"{r['mfu']:.1%}",
            f"{r['sample_tokens_per_s']:,.0f}",
            f"{r['kv_bytes_per_token']:,}",
        )
    return t


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["variants"])
    rs = [result["variants"][n] for n in names]
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    for n, r in zip(names, rs):
        h = r["history"]
        k = max(1, len(h) // 20)  # moving average over ~5% of the run
        loss = [
            sum(x[2] for x in h[max(0, i - k + 1) : i + 1]) / len(h[max(0, i - k + 1) : i + 1])
            for i in range(len(h))
        ]
        ax[0, 0].plot([x[1] for x in h], loss, label=n)
    ax[0, 0].set(title="train loss (moving average)", xlabel="tokens", ylabel="loss")
    ax[0, 0].legend()
    ax[0, 1].bar(names, [r["val_loss"] for r in rs], color="tab:blue")
    lo = min(r["val_loss"] for r in rs)
    ax[0, 1].set(title="validation loss", ylim=(lo * 0.95, max(r["val_loss"] for r in rs) * 1.02))
    x = range(len(names))
    ax[1, 0].bar([i - 0.2 for i in x], [r["train_tokens_per_s"] for r in rs], 0.4, label="train")
    ax[1, 0].bar([i + 0.2 for i in x], [r["sample_tokens_per_s"] for r in rs], 0.4, label="sample (KV cache)")
    ax[1, 0].set_xticks(list(x), names)
    ax[1, 0].set(title="tokens / s")
    ax[1, 0].legend()
    ax[1, 1].bar(names, [r["kv_bytes_per_token"] for r in rs], color="tab:green")
    ax[1, 1].set(title="KV cache bytes per token (all layers)")
    fig.suptitle(f"{result['config']}: {result['tokens']:,} tokens per variant")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save(result: dict, out: Path, with_plot: bool = True) -> Path:
    """Write the JSON (floats as numbers, NaN as null) and the PNG beside it; returns the PNG path."""
    out.parent.mkdir(parents=True, exist_ok=True)

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    write_atomic(out, json.dumps(clean(result), indent=1) + "\n")
    png = out.with_suffix(".png")
    if with_plot:
        plot(result, png)
    return png

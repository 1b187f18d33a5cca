"""`iclaw bench arch` (every architecture variant trained on the same data and tokens, compared: iclaw/lab/
bench_arch.py) and `iclaw bench sample` (sampler throughput). Only typer and the stdlib at module level."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from iclaw.commands.options import parse_count

bench_app = typer.Typer(help="Benchmarks that print a table and write JSON.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


@bench_app.command("arch")
def bench_arch_cmd(
    config: str = typer.Option("tiny", "--config", help="Model preset every variant is built from."),
    tokens: str = typer.Option("200k", "--tokens", help="Training tokens per variant."),
    data: Path = typer.Option(None, "--data", help="Data dir (default: the stdlib corpus, prepared once)."),
    out: Path = typer.Option(Path("bench-arch.json"), "--out", help="JSON results; the PNG goes beside it."),
    batch: int = typer.Option(8, "--batch"),
    seq: int = typer.Option(256, "--seq"),
    lr: float = typer.Option(2e-3, "--lr", help="The same peak learning rate for every variant."),
    variants: str = typer.Option(
        None, "--variants", help="Comma-separated subset of mha,rope,mla,moe,mla+moe,muon."
    ),
) -> None:
    """Train mha, rope, mla, moe, mla+moe and muon on the same data and tokens; compare loss, speed, KV cache."""
    from rich.console import Console

    from iclaw.lab import bench_arch

    names = [v.strip() for v in variants.split(",") if v.strip()] if variants else None
    result = bench_arch.run(
        config=config,
        tokens=parse_count(tokens, "--tokens"),
        data=data,
        batch=batch,
        seq=seq,
        lr=lr,
        variants=names,
        out=out,
    )
    png = bench_arch.save(result, out)
    console = Console()
    console.print(bench_arch.table(result))
    console.print(f"wrote {out} and {png}", highlight=False)


@bench_app.command("sample", help="Sampler throughput (tokens/s) on a model, batched with the KV cache.")
def bench_sample(
    model: str | None = typer.Option(
        None, "--model", help="Registry name or path (default: random --config weights)."
    ),
    config: str = typer.Option(
        "tiny", "--config", help="Preset for random weights when --model is not given."
    ),
    batch: int = typer.Option(8, "--batch"),
    prompt_len: int = typer.Option(64, "--prompt-len"),
    new_tokens: int = typer.Option(64, "--new-tokens"),
    dtype: str = typer.Option(
        "auto", "--dtype", help="auto (bf16 where supported, as the agent samples) | fp32."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    import time

    import torch

    from iclaw.agent.policy import Policy
    from iclaw.model.gpt import GPT, preset

    if model is not None:
        policy = Policy.load(model, fast_sampling=dtype != "fp32")
    else:
        torch.manual_seed(0)
        policy = Policy(GPT(preset(config)), name=config, fast_sampling=dtype != "fp32")
    prompts = torch.randint(0, 50257, (batch, prompt_len)).tolist()
    policy.sample(prompts, 4, seed=0)  # warm-up
    t0 = time.perf_counter()
    s = policy.sample(prompts, new_tokens, temperature=1.0, seed=0)
    dt = time.perf_counter() - t0
    n = sum(len(t) for t in s.tokens)
    res = {
        "tokens_per_s": n / dt,
        "tokens": n,
        "seconds": dt,
        "batch": batch,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "dtype": str(policy.sample_dtype).replace("torch.", ""),
        "device": str(policy.device),
        "threads": torch.get_num_threads(),
    }
    if as_json:
        sys.stdout.write(json.dumps(res) + "\n")
    else:
        print(
            f"{res['tokens_per_s']:.1f} tokens/s ({n} tokens in {dt:.2f}s, batch {batch}, {res['dtype']}, {res['device']})"
        )

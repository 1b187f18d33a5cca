"""`iclaw bench arch`: every architecture variant trained on the same data and tokens, compared (iclaw/lab/
bench_arch.py). Only typer and the stdlib at module level."""

from __future__ import annotations

from pathlib import Path

import typer

from iclaw.commands.options import parse_count
from iclaw.errors import IclawError

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


# `iclaw bench sample` measured the sampler alone; benchmarks/ does it against a peer, and on a GPU.
@bench_app.command(
    "sample", hidden=True, context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def bench_sample_removed() -> None:
    raise IclawError(
        "iclaw bench sample: removed: python benchmarks/bench_sample.py times the sampler (beside "
        "transformers' generate), python benchmarks/gpu_check.py --only sample on a GPU"
    )

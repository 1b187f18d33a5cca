"""`iclaw pretrain` (a GPT from scratch, nanoGPT's loop; under torchrun too) and `iclaw data prep` (its token
files). Only typer and the stdlib at module level: torch is imported inside the commands."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import typer

from iclaw.commands.options import Device, Seed, parse_count

data_app = typer.Typer(
    help="Pretraining data: text files -> nanoGPT-style token files.", no_args_is_help=True
)


@data_app.command("prep")
def data_prep(
    inputs: list[Path] = typer.Argument(
        None, help="Text files and directories (every file under them). None: the Python stdlib's .py files."
    ),
    out: Path = typer.Option(..., "--out", help="Directory to write train.bin, val.bin and meta.json into."),
    corpus: str = typer.Option(
        None,
        "--corpus",
        help="A built-in corpus instead of INPUTS: shell-python (man pages, info manuals, bash-completion, "
        "shell scripts, the stdlib, Python's docs; what this machine's packages ship; writes manifest.json).",
    ),
    max_files: int = typer.Option(
        None, "--max-files", help="Use at most this many files (--corpus: per source)."
    ),
    max_tokens: str = typer.Option(None, "--max-tokens", help="Stop after this many tokens (e.g. 5M)."),
    package_tokens: str = typer.Option(
        "1M", "--package-tokens", help="--corpus: at most this many tokens from one Debian package."
    ),
    val_frac: float = typer.Option(
        0.05, "--val-frac", help="Fraction of the token stream held out as val.bin."
    ),
    no_shuffle: bool = typer.Option(False, "--no-shuffle", help="Keep the files' order (default: shuffled)."),
    seed: Seed = 0,
) -> None:
    """Tokenize text with the GPT-2 tokenizer (<|endoftext|> after each document) into uint16 train.bin/val.bin;
    --seed shuffles the documents."""
    if corpus is not None:
        return corpus_prep(
            corpus, inputs, out, max_files, max_tokens, package_tokens, val_frac, no_shuffle, seed
        )
    from iclaw.train.data import prep

    cap = parse_count(max_tokens, "--max-tokens") if max_tokens else None
    meta = prep(
        list(inputs or []),
        out,
        max_files=max_files,
        max_tokens=cap,
        val_frac=val_frac,
        shuffle=not no_shuffle,
        seed=seed,
    )
    print(
        f"{out}: {meta['train_tokens']:,} train + {meta['val_tokens']:,} val tokens from {meta['files']:,} files"
        + (f" ({meta['skipped_files']} binary/undecodable skipped)" if meta["skipped_files"] else "")
    )


def corpus_prep(
    corpus, inputs, out, max_files, max_tokens, package_tokens, val_frac, no_shuffle, seed
) -> None:
    """`data prep --corpus shell-python`: the sources' table, what is missing and how to get it."""
    import time

    from iclaw.errors import IclawError
    from iclaw.train import corpus as shellpy

    if corpus != "shell-python":
        raise IclawError(f"--corpus {corpus}: the one built-in corpus is shell-python")
    if inputs or max_tokens or no_shuffle:
        raise IclawError("--corpus: takes no INPUTS, --max-tokens or --no-shuffle (its sources are fixed)")
    t0 = time.time()
    m = shellpy.build(
        out,
        seed=seed,
        val_frac=val_frac,
        package_tokens=parse_count(package_tokens, "--package-tokens"),
        max_files=max_files,
    )
    print(f"{'source':<16} {'files':>7} {'tokens':>12} {'packages':>9}  capped (files left out)")
    for s in m["sources"]:
        capped = ", ".join(f"{p['package']} ({p['left_out']} files)" for p in s["packages"] if p["left_out"])
        print(
            f"{s['source']:<16} {s['files']:>7,} {s['tokens']:>12,} {len(s['packages']):>9}  {capped or '-'}"
        )
    total = m["train_tokens"] + m["val_tokens"]
    print(f"{'total':<16} {m['documents']:>7,} {total:>12,}")
    for miss in m["missing"]:
        print(
            f"missing: {miss['source']} ({', '.join(miss['glob'])}): {miss['why']}; to get it: {miss['get']}"
        )
    print(
        f"{out}: {m['train_tokens']:,} train + {m['val_tokens']:,} val tokens, manifest.json "
        f"(sha256 train.bin {m['sha256']['train.bin'][:12]}...) in {time.time() - t0:.0f} s"
    )


def pretrain_cmd(
    data: Path = typer.Option(..., "--data", help="A directory made by `iclaw data prep`."),
    tokens: str = typer.Option(..., "--tokens", help="Training tokens in total, e.g. 2M or 10e9."),
    out: str = typer.Option(None, "--out", help="Model name to publish checkpoints under (in the registry)."),
    config: str = typer.Option("tiny", "--config", help="Model preset: tiny, 124m, 350m, 774m, 1558m."),
    attn: str = typer.Option(None, "--attn", help="mha | mla (default: the preset's, mha)."),
    mlp: str = typer.Option(None, "--mlp", help="dense | moe."),
    pos: str = typer.Option(None, "--pos", help="learned | rope."),
    vocab: int = typer.Option(
        0,
        "--vocab",
        help="Rows of a trimmed vocabulary: --task-vocab's ids, then the corpus's most frequent (0: GPT-2's 50,304).",
    ),
    task_vocab: str = typer.Option(
        "iclaw-small",
        "--task-vocab",
        help="With --vocab: the model whose (trimmed) vocabulary is kept whole.",
    ),
    optimizer: str = typer.Option("adamw", "--optimizer", help="adamw | muon."),
    batch: int = typer.Option(8, "--batch", help="Sequences per micro-batch (per rank)."),
    seq: int = typer.Option(256, "--seq", help="Tokens per sequence."),
    accum: int = typer.Option(1, "--accum", help="Micro-batches per optimizer step."),
    lr: float = typer.Option(1e-3, "--lr", help="Peak learning rate (warmup, then cosine to 10%)."),
    weight_decay: float = typer.Option(0.1, "--weight-decay"),
    warmup_frac: float = typer.Option(0.05, "--warmup-frac"),
    grad_clip: float = typer.Option(1.0, "--grad-clip", help="0 = off."),
    dropout: float = typer.Option(0.0, "--dropout"),
    eval_every: int = typer.Option(50, "--eval-every", help="Steps between validation losses."),
    eval_batches: int = typer.Option(8, "--eval-batches"),
    save_every: int = typer.Option(0, "--save-every", help="Steps between checkpoints (0: at the end only)."),
    seed: Seed = 1337,
    device: Device = None,
    no_amp: bool = typer.Option(False, "--no-amp", help="Train in float32 (no bf16 autocast)."),
    resume: bool = typer.Option(False, "--resume", help="Continue --out NAME's latest checkpoint."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON at the end."),
) -> None:
    """Pretrain a GPT from scratch (optionally with RoPE / MLA / MoE / Muon); runs under torchrun too. Default
    device: CUDA if available, else the CPU."""
    from iclaw.train.common import MetricsLog, interrupted, new_run_id, stop_on_ctrl_c
    from iclaw.train.pretrain import PretrainConfig, pretrain

    cfg = PretrainConfig(
        data=str(data),
        tokens=parse_count(tokens, "--tokens"),
        out=out,
        config=config,
        pos=pos,
        attn=attn,
        mlp=mlp,
        dropout=dropout,
        vocab=vocab,
        task_vocab=task_vocab,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        accum=accum,
        lr=lr,
        weight_decay=weight_decay,
        warmup_frac=warmup_frac,
        grad_clip=grad_clip,
        eval_every=eval_every,
        eval_batches=eval_batches,
        save_every=save_every,
        seed=seed,
        device=device,
        amp=not no_amp,
        resume=resume,
    )
    master = os.environ.get("RANK", "0") == "0"
    run = new_run_id("pretrain")  # runs/RUN/metrics.jsonl: loss, lr; at each eval val loss and induction
    log = MetricsLog(run, None, config=asdict(cfg)).log if master else None
    with stop_on_ctrl_c():
        _, s = pretrain(cfg, log=log)
    if not master:  # under torchrun only rank 0 reports
        return
    if as_json:
        print(json.dumps({k: v for k, v in s.items() if k not in ("history",)}, indent=1))
        interrupted(s)
        return
    val = f"{s['val_loss']:.4f} (ppl {s['val_ppl']:.1f})" if s["val_loss"] is not None else "-"
    copy = f"induction {s['induction'][0]:.2f} -> {s['induction'][1]:.2f}, " if s["induction"] else ""
    print(
        f"trained {s['tokens']:,} tokens in {s['steps']} steps: val loss {val}, {copy}{s['tokens_per_s']:,.0f} tok/s, "
        f"MFU {s['mfu']:.1%} of a measured {s['peak_flops'] / 1e12:.2f} TFLOP/s {s['peak_dtype']} peak"
        + (f"; saved {out}/{s['ckpt_id']}" if s["ckpt_id"] else "")
        + f"; metrics runs/{run}/metrics.jsonl"
    )
    interrupted(s)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
    app.command("pretrain")(pretrain_cmd)

"""Pretraining from scratch (`iclaw pretrain`): nanoGPT's loop, with iclaw's architecture options.

    iclaw data prep --out data/stdlib                      # tokens: the Python stdlib by default
    iclaw pretrain --config tiny --attn mla --mlp moe --data data/stdlib --tokens 2000000 --out tiny-mla
    iclaw data prep --corpus shell-python --out data/shellpy    # man pages, info, scripts, the stdlib
    iclaw pretrain --data data/shellpy --vocab 16384 --tokens 20M --out base   # a trimmed vocabulary
    torchrun --nproc-per-node 8 -m iclaw pretrain --config 124m --data data/owt --tokens 10e9 --out gpt2-mla

The loop: consecutive batches (resumable by one integer), grad accumulation, linear warmup then cosine decay
to min_lr_frac * lr, gradient clipping, bf16 autocast, periodic validation loss, atomic checkpoints through
the model registry (`--out NAME`: ~/.iclaw/models/NAME). `--resume` restores the model, optimizer, step,
RNG and data position from NAME's latest checkpoint. Under torchrun each rank trains on its own slice of
every step's tokens (DDP: NCCL on CUDA, gloo on CPU); rank 0 logs and saves.

`--vocab N` trains a trimmed vocabulary (iclaw/model/vocab.py) of N rows: the task vocabulary of
`--task-vocab` (default: the shipped policy's, so that SFT on the tasks reads every word whole) plus the
corpus's most frequent ids, so that real text stops going through bytes; the token files are fitted to it in
memory (ids outside it spelled as their bytes), which suits the small corpora a small model trains on.

Each evaluation also runs an induction check (Olsson et al. 2022): the loss on 64 random tokens and on the
same 64 repeated. A model that copies from its context predicts the second copy far better than the first;
both are printed, kept in the summary and the checkpoint's metadata ("curves"), and logged per eval.

MFU (model FLOPs utilisation) = achieved training FLOP/s / the machine's peak. The peak is *measured* once at
start (a large matmul in the autocast dtype), not read from a spec sheet, so the number means something on
a CPU too. FLOPs per token: GPT.flops_per_token (6 N_active + attention).
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, autocast, bf16_supported, preset
from iclaw.model.vocab import Vocab
from iclaw.train.common import INTERRUPTED, cleanup_distributed, setup_distributed, stop_requested
from iclaw.train.data import Batches, open_split
from iclaw.train.optim import configure_optimizers, warmup_cosine


@dataclass
class PretrainConfig:
    data: str  # a directory made by `iclaw data prep` (train.bin, val.bin)
    tokens: int = 1_000_000  # training tokens in total (all ranks together)
    out: str | None = None  # registry name to publish checkpoints under; None = don't save
    config: str = "tiny"  # model preset
    pos: str | None = None  # architecture overrides on the preset (None = the preset's)
    attn: str | None = None
    mlp: str | None = None
    dropout: float = 0.0
    vocab: int = 0  # rows of a trimmed vocabulary: task_vocab's ids + the corpus's most frequent (0: GPT-2's)
    task_vocab: str = "iclaw-small"  # a model (name or path) whose trimmed vocabulary is kept whole
    optimizer: str = "adamw"  # adamw | muon
    batch: int = 8  # sequences per micro-batch per rank
    seq: int = 256  # tokens per sequence
    accum: int = 1  # micro-batches per optimizer step
    lr: float = 1e-3
    min_lr_frac: float = 0.1
    warmup_frac: float = 0.05  # fraction of the steps spent warming up linearly
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # 0 = off
    eval_every: int = 50  # steps between validation losses (and at the end)
    eval_batches: int = 8
    induction_len: int = 64  # random tokens in the induction check, which then repeat once
    save_every: int = 0  # steps between checkpoints (0 = only at the end)
    seed: int = 1337
    device: str | None = None  # None: cuda if available, else cpu
    amp: bool = True  # bf16 autocast where supported
    resume: bool = False


def lr_at(step: int, total: int, cfg: PretrainConfig) -> float:
    """Linear warmup, then cosine decay from lr to min_lr_frac * lr at the last step."""
    warmup = max(1, int(cfg.warmup_frac * total))
    return warmup_cosine(cfg.lr, step, warmup, (step - warmup) / max(1, total - warmup), cfg.min_lr_frac)


@functools.cache
def measure_peak_flops(device: torch.device, dtype: torch.dtype, seconds: float = 0.5) -> float:
    """FLOP/s of a large square matmul in `dtype` on `device`: the practical peak MFU is measured against.
    Measured once per process (cached), so runs in one process (bench arch's variants) share a denominator."""
    n = 4096 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    a @ b  # warm-up (kernel selection, thread pool start)
    sync()
    reps, t0 = 0, time.perf_counter()
    while True:
        a @ b
        reps += 1
        sync()
        if reps >= 3 and time.perf_counter() - t0 >= seconds:
            break
    return 2 * n**3 * reps / (time.perf_counter() - t0)


def amp_dtype(device: torch.device, enabled: bool) -> torch.dtype:
    """The dtype the matmuls run in under iclaw.model.gpt.autocast (bf16 where gpt.bf16_supported)."""
    if enabled and bf16_supported(device):
        return torch.bfloat16
    return torch.float32


@torch.no_grad()
def evaluate(model: GPT, val, cfg: PretrainConfig, device: torch.device) -> float:
    """Mean loss over the first eval_batches windows of val.bin (the same windows every time)."""
    was_training = model.training
    model.eval()
    batches = Batches(val, cfg.batch, cfg.seq)
    n = max(1, min(cfg.eval_batches, (len(val) - 1) // (cfg.batch * cfg.seq)))
    total = 0.0
    for _ in range(n):
        x, y = batches.next(device)
        with autocast(device, cfg.amp):
            total += model(x, y)[1].item()
    model.train(was_training)
    return total / n


@torch.no_grad()
def induction_loss(
    model: GPT, device: torch.device, n: int = 64, batch: int = 8, amp: bool = True
) -> tuple[float, float]:
    """(mean loss on n random tokens, mean loss on the same n tokens repeated right after): the induction check.
    The ids are drawn from the model's own vocabulary with a fixed seed, so every eval (and every run) scores
    the same sequences. Loss on the first token of each copy is left out: nothing predicts it."""
    from iclaw.model.tokenizer import EOT

    was_training = model.training
    model.eval()
    pool = torch.tensor(model.vocab.words() if model.vocab is not None else range(EOT))
    g = torch.Generator().manual_seed(0)
    half = pool[torch.randint(len(pool), (batch, n), generator=g)]
    x = torch.cat([half, half], dim=1).to(device)
    with autocast(device, amp):
        logits, _ = model(x[:, :-1])
    targets = model.rows(x[:, 1:])
    loss = F.cross_entropy(logits.float().transpose(1, 2), targets, reduction="none").mean(0)  # (2n-1,)
    model.train(was_training)
    return loss[: n - 1].mean().item(), loss[n:].mean().item()


def corpus_vocab(train: np.ndarray, cfg: PretrainConfig) -> Vocab:
    """cfg.vocab rows: the task vocabulary of cfg.task_vocab, then train.bin's most frequent ids."""
    from iclaw.model import registry
    from iclaw.model.checkpoint import read_config

    found = read_config(registry.resolve(cfg.task_vocab))
    if found is None or found[1] is None:
        raise IclawError(f"--task-vocab {cfg.task_vocab}: has no trimmed vocabulary (vocab.json) to keep")
    counts = np.bincount(np.asarray(train), minlength=len(found[1].kept))
    return Vocab.frequent(counts, cfg.vocab, base=found[1])


# Not common.rng_state: a pretraining checkpoint holds torch's and this GPU's generator only (rank 0's, restored
# onto each rank's own GPU on --resume), and the checkpoints already written have no Python RNG in them.
def _rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _build_or_resume(cfg: PretrainConfig, device: torch.device, train: np.ndarray):
    """(model, trainer_state or None, parent checkpoint path or None, the parent's metadata or {})."""
    if cfg.resume:
        from iclaw.model import registry
        from iclaw.model.checkpoint import load_checkpoint, load_trainer_state

        if not cfg.out:
            raise IclawError("--resume: needs --out NAME (the run to continue)")
        path = registry.resolve(cfg.out)
        state = load_trainer_state(path)
        if state is None or "optimizer" not in state:
            raise IclawError(f"{path}: has no trainer state to resume from (not written by `iclaw pretrain`)")
        model, meta = load_checkpoint(path, device=device)
        mc = model.config
        rows = len(model.vocab) if model.vocab is not None else 0
        if cfg.vocab and cfg.vocab != rows:  # the vocabulary too comes from the checkpoint
            raise IclawError(
                f"--vocab {cfg.vocab}: the checkpoint being resumed has {rows or 'the full'} rows"
            )
        for key in ("pos", "attn", "mlp"):  # the architecture comes from the checkpoint; a flag must agree
            if getattr(cfg, key) is not None and getattr(cfg, key) != getattr(mc, key):
                raise IclawError(
                    f"--{key} {getattr(cfg, key)}: the checkpoint being resumed has {key}={getattr(mc, key)}"
                )
        saved = state.get("config", {})
        for key in ("batch", "seq", "accum", "optimizer"):  # these change what "the same run" means
            if key in saved and saved[key] != getattr(cfg, key):
                raise IclawError(f"--{key} {getattr(cfg, key)!r}: the run being resumed used {saved[key]!r}")
        return model, state, str(path), meta
    overrides = {k: v for k, v in (("pos", cfg.pos), ("attn", cfg.attn), ("mlp", cfg.mlp)) if v is not None}
    mc = preset(cfg.config, dropout=cfg.dropout, **overrides)
    if cfg.seq > mc.block_size:
        raise IclawError(f"--seq {cfg.seq}: longer than the {cfg.config} model's block size {mc.block_size}")
    vocab = corpus_vocab(train, cfg) if cfg.vocab else None
    torch.manual_seed(cfg.seed)  # the same init on every rank (DDP also broadcasts it)
    return GPT(mc, vocab).to(device), None, None, {}


def pretrain(cfg: PretrainConfig, *, progress: bool = True, log: Callable | None = None) -> tuple[GPT, dict]:
    """Train; returns (the trained model, unwrapped, in train mode) and a summary dict (rank 0's view).
    `log(step, metrics)` gets each step's loss and lr, and at each eval the val loss and induction check."""
    if cfg.tokens <= 0 or cfg.batch <= 0 or cfg.seq <= 0 or cfg.accum <= 0:
        raise IclawError("--tokens, --batch, --seq and --accum must be positive")
    default = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if torch.cuda.is_available() else "cpu"  # not mps
    rank, world, device = setup_distributed(cfg.device or default)
    if device.type == "cuda":  # also in one process: kernels that take no device run on this GPU
        torch.cuda.set_device(device)
    master = rank == 0
    train_data, val_data = open_split(cfg.data, "train"), open_split(cfg.data, "val")
    if len(val_data) < cfg.batch * cfg.seq + 1:
        raise IclawError(
            f"{cfg.data}/val.bin: {len(val_data)} tokens, fewer than one batch ({cfg.batch}x{cfg.seq})"
        )
    model, state, parent, parent_meta = _build_or_resume(cfg, device, train_data)
    raw_tokens = len(train_data)
    if model.vocab is not None:  # text outside a trimmed vocabulary is read through its bytes (vocab.py)
        train_data, val_data = model.vocab.fit_array(train_data), model.vocab.fit_array(val_data)
    elif int(max(train_data[:100_000].max(), val_data[:100_000].max())) >= model.config.vocab_size:
        raise IclawError(f"{cfg.data}: token ids exceed the model's vocab size {model.config.vocab_size}")
    model.train()
    optimizer = configure_optimizers(
        model,
        cfg.optimizer,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        betas=(cfg.beta1, cfg.beta2),
        ns_bf16=cfg.amp and bf16_supported(device),
    )
    loader = Batches(train_data, cfg.batch, cfg.seq, rank=rank, world=world)
    step, tokens_seen = 0, 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        step, tokens_seen, loader.position = state["step"], state["tokens_seen"], state["data_position"]
        _set_rng_state(state["rng"], device)
    else:
        torch.manual_seed(cfg.seed + rank)  # dropout masks differ per rank
    if step >= math.ceil(cfg.tokens / (cfg.batch * cfg.seq * cfg.accum * world)):
        raise IclawError(
            f"--tokens {cfg.tokens}: the run has already trained {tokens_seen} tokens; ask for more"
        )
    train_model = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        # experts that no token on this rank picked get no gradient: DDP must be told to expect that
        train_model = DDP(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            find_unused_parameters=model.config.mlp == "moe",
        )

    tokens_per_step = cfg.batch * cfg.seq * cfg.accum * world
    total_steps = max(1, math.ceil(cfg.tokens / tokens_per_step))
    flops_per_token = model.flops_per_token(cfg.seq)
    peak = measure_peak_flops(device, amp_dtype(device, cfg.amp))
    summary = {
        "config": asdict(cfg),
        "model": model.config.to_dict(),
        "params": model.num_params(),
        "active_params": model.num_active_params(),
        "tokens_per_step": tokens_per_step,
        "total_steps": total_steps,
        "flops_per_token": flops_per_token,
        "peak_flops": peak,
        "peak_dtype": str(amp_dtype(device, cfg.amp)).removeprefix("torch."),
        "world_size": world,
        "device": str(device),
        "vocab": {
            "rows": model.config.vocab_size,
            "task_vocab": cfg.task_vocab if model.vocab is not None else None,
            "train_tokens": len(train_data),  # after fitting: the bytes of ids outside the vocabulary count
            "gpt2_train_tokens": raw_tokens,
        },
        "history": [],  # (step, tokens, train loss)
        "val_history": [],  # (step, tokens, val loss)
        "induction_history": [],  # (step, tokens, loss on random tokens, loss on their repeat)
    }
    earlier = parent_meta.get("curves") or {"val": [], "induction": []}  # a resumed run's curves go on

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} tok"),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TextColumn("{task.fields[tps]:,.0f} tok/s"),
        TextColumn("MFU {task.fields[mfu]:.1%}"),
        TimeRemainingColumn(),
        console=console,
        disable=not (progress and master),
    )
    train_time, timed_tokens, loss_val = 0.0, 0, float("nan")
    induction_n = min(cfg.induction_len, model.config.block_size // 2)

    def save(val_loss: float | None) -> str | None:
        if not (master and cfg.out):
            return None
        from iclaw.model import registry

        trainer_state = {
            "optimizer": optimizer.state_dict(),
            "step": step,
            "tokens_seen": tokens_seen,
            "data_position": loader.position,
            "rng": _rng_state(device),
            "config": asdict(cfg),
        }
        meta = {
            "source": "pretrain",
            "step": step,
            "parent": parent,
            "tokens_seen": tokens_seen,
            "val_loss": val_loss,
            "optimizer": cfg.optimizer,
            "data": str(cfg.data),
            "curves": {
                "val": earlier["val"] + summary["val_history"],
                "induction": earlier["induction"] + summary["induction_history"],
            },
        }
        return registry.publish(cfg.out, model, meta=meta, trainer_state=trainer_state)

    with bar:
        task = bar.add_task(
            cfg.out or "pretrain",
            total=total_steps * tokens_per_step,
            loss=float("nan"),
            tps=0.0,
            mfu=0.0,
            completed=step * tokens_per_step,
        )
        while step < total_steps:
            if stop_requested():  # a first Ctrl-C (common.stop_on_ctrl_c): save below, where it stopped
                summary["stopped"] = INTERRUPTED
                break
            lr = lr_at(step, total_steps, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            t0 = time.perf_counter()
            loss_sum = 0.0
            for micro in range(cfg.accum):
                x, y = loader.next(device)
                sync_now = (
                    world == 1 or micro == cfg.accum - 1
                )  # DDP: all-reduce only on the last micro-batch
                ctx = train_model.no_sync() if not sync_now else nullcontext()
                with ctx:
                    with autocast(device, cfg.amp):
                        _, loss = train_model(x, y)
                    (loss / cfg.accum).backward()
                loss_sum += loss.item()
            if cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            dt = time.perf_counter() - t0
            step += 1
            tokens_seen += tokens_per_step
            loss_val = loss_sum / cfg.accum
            if step > 1 or total_steps == 1:  # the first step pays for warm-up (allocations, kernel choice)
                train_time += dt
                timed_tokens += tokens_per_step
            tps = timed_tokens / train_time if train_time else tokens_per_step / dt
            mfu = tps / world * flops_per_token / peak
            summary["history"].append((step, tokens_seen, loss_val))
            bar.update(task, completed=tokens_seen, loss=loss_val, tps=tps, mfu=mfu)
            last = step == total_steps
            metrics = {"tokens": tokens_seen, "loss": loss_val, "lr": lr}
            if master and (last or (cfg.eval_every and step % cfg.eval_every == 0)):
                v = evaluate(model, val_data, cfg, device)
                first, repeat = induction_loss(model, device, induction_n, amp=cfg.amp)
                summary["val_history"].append((step, tokens_seen, v))
                summary["induction_history"].append((step, tokens_seen, first, repeat))
                metrics.update(val_loss=v, induction_first=first, induction_repeat=repeat)
                bar.console.print(
                    f"step {step}/{total_steps}  train {loss_val:.4f}  val {v:.4f}  "
                    f"induction {first:.2f} -> {repeat:.2f}  lr {lr:.2e}",
                    highlight=False,
                )
            if master and log is not None:
                log(step, metrics)
            if not last and cfg.save_every and step % cfg.save_every == 0:
                save(summary["val_history"][-1][2] if summary["val_history"] else None)

    val_loss = summary["val_history"][-1][2] if summary["val_history"] else None
    summary["ckpt_id"] = save(val_loss)
    tps = timed_tokens / train_time if train_time else 0.0
    summary.update(
        steps=step,
        tokens=tokens_seen,
        train_loss=loss_val,
        val_loss=val_loss,
        val_ppl=math.exp(val_loss) if val_loss is not None else None,
        induction=summary["induction_history"][-1][2:] if summary["induction_history"] else None,
        tokens_per_s=tps,
        mfu=tps / world * flops_per_token / peak if peak else None,
    )
    if world > 1:
        cleanup_distributed()
    return model, summary

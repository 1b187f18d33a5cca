"""SFT warm-up: imitate reference fixes written in the agent's protocol, so GRPO starts from a policy that
sometimes succeeds.

A demonstration is the single-turn answer a reference fix gives:

    <|user|>{broken + its error}<|end|><|assistant|>  <|bash|>{reference}<|end|>
                       mask 0                              mask 1

Only policy tokens are trained on (the same mask GRPO uses). Deliberately nothing after the fix: a
demonstration cannot show what to do with an observation (stop after a success, try something else after a
failure, look around first), because no demonstration of that exists. Appending "observation → <|done|>" to
every demonstration teaches the policy to stop after *any* observation (measured: p(<|done|>) = 1.000 after a
failed attempt), which leaves reinforcement learning nothing to explore. Those behaviours are GRPO's to learn.
`observe=True` still builds the longer form (the reference is run for its real observation).
"""

from __future__ import annotations

import math
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from iclaw.agent.episode import task_request
from iclaw.agent.protocol import action_tokens, format_output, observation_tokens, request_tokens
from iclaw.train.rollout import collate


@dataclass
class SFTConfig:
    lr: float = 1e-3
    min_lr_frac: float = 0.1  # cosine decays to this fraction of lr (step budgets only)
    warmup: int = 20
    batch_size: int = 32  # sequences per step
    steps: int | None = 400  # or a time budget:
    minutes: float | None = None
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    amp: bool = True  # bf16 autocast where supported


def demonstrations(
    tasks: list, sandbox=None, obs_chars: int = 300, observe: bool = False
) -> list[tuple[list[int], list[int]]]:
    """(tokens, mask) for every task that has a reference fix. With `observe`, the reference is run in a fresh
    fixture and its observation plus <|done|> are appended (needs `sandbox`)."""
    usable = [t for t in tasks if t.reference]
    out = []
    results = _run_references(usable, sandbox) if observe else [None] * len(usable)
    for t, r in zip(usable, results):
        prompt = request_tokens(task_request(t))
        act = action_tokens(t.kind, t.reference)
        toks, mask = prompt + act, [0] * len(prompt) + [1] * len(act)
        if r is not None:
            ob = observation_tokens(format_output(r.stdout, r.stderr, r.exit_code, obs_chars))
            done = action_tokens("done", None)
            toks, mask = toks + ob + done, mask + [0] * len(ob) + [1] * len(done)
        out.append((toks, mask))
    return out


def _run_references(tasks: list, sandbox) -> list:
    from iclaw.tasks.task import write_fixture

    with tempfile.TemporaryDirectory(prefix="iclaw-sft-") as root:
        dirs = []
        for i, t in enumerate(tasks):
            d = Path(root) / f"{i:05d}"
            d.mkdir()
            write_fixture(t.files or {}, d)
            dirs.append(d)
        return sandbox.run_many([(t.kind, t.reference, d) for t, d in zip(tasks, dirs)])


def sft_loss(model, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the policy tokens only. mask (B, T-1) marks targets idx[:, 1:]."""
    from iclaw.train.rollout import logprobs_and_entropy

    logp, _ = logprobs_and_entropy(model, idx, mask)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def train_sft(
    model, examples: list[tuple[list[int], list[int]]], cfg: SFTConfig, *, device, progress=None, log=None
) -> dict:
    """Train in place. Returns {"steps", "seconds", "loss", "tokens"}. `progress(advance, **metrics)` and
    `log(step, metrics)` are optional callbacks (live display, metrics table)."""
    from iclaw.model.gpt import autocast
    from iclaw.train.common import make_optimizer

    block = model.config.block_size
    examples = [(t[:block], m[:block]) for t, m in examples]
    rng = random.Random(cfg.seed)
    opt = make_optimizer(model, cfg.lr, cfg.weight_decay)
    model.train()
    t0, step, tokens, ema = time.time(), 0, 0, None
    order: list[int] = []
    while True:
        if cfg.steps is not None and step >= cfg.steps:
            break
        if cfg.minutes is not None and time.time() - t0 >= cfg.minutes * 60:
            break
        if len(order) < cfg.batch_size:
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        batch_ids, order = order[: cfg.batch_size], order[cfg.batch_size :]
        b = collate([examples[i][0] for i in batch_ids], [examples[i][1] for i in batch_ids]).to(device)
        lr = _lr(step, cfg, time.time() - t0)
        for g in opt.param_groups:
            g["lr"] = lr
        with autocast(device, cfg.amp):
            loss = sft_loss(model, b.idx, b.mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        tokens += int(b.idx.numel())
        lv = loss.item()
        ema = lv if ema is None else 0.95 * ema + 0.05 * lv
        if log is not None and (step % 10 == 0 or step == 1):
            log(step, {"loss": lv, "lr": lr, "grad_norm": float(gn), "tok_s": tokens / (time.time() - t0)})
        if progress is not None:
            if cfg.minutes is not None:
                progress(completed=min(time.time() - t0, cfg.minutes * 60), loss=ema, step=step)
            else:
                progress(1, loss=ema)
    model.eval()
    return {"steps": step, "seconds": time.time() - t0, "loss": ema, "tokens": tokens}


def _lr(step: int, cfg: SFTConfig, elapsed: float = 0.0) -> float:
    """Linear warm-up, then cosine decay to min_lr_frac · lr over the budget (steps, or wall-clock time)."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    if cfg.steps is not None:
        frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    else:
        frac = elapsed / max(1e-9, cfg.minutes * 60)
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))

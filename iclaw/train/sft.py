"""SFT warm-up: imitate reference fixes written in the agent's protocol, so GRPO starts from a policy that
sometimes succeeds.

A demonstration is the answer a reference fix gives, in one of two forms:

    <|user|>{broken + its error}<|end|><|assistant|>  <|bash|>{reference}<|end|>
                       mask 0                              mask 1

    <|user|>{...}<|end|><|assistant|>  <|bash|>ls<|end|>  <|obs|>{real listing}<|end|><|assistant|>  <|bash|>{reference}<|end|>
                                        mask 1             mask 0                                      mask 1

The second ("look first", for a `look_first` fraction of the tasks) shows the protocol's mechanics -- an
observation comes back and the turn is the policy's again -- on tasks where looking is harmless but never
needed: the reference is still derivable from the request alone. Which tasks *need* a look, and how to use
what `ls` printed (a file name that is not in the request), no demonstration shows; that is GRPO's to learn.

Deliberately nothing after the fix: no demonstration can show what to do with a fix's own observation (stop
after a success, try something else after a failure). Appending "observation -> <|done|>" to every
demonstration teaches the policy to stop after *any* observation (measured: p(<|done|>) = 1.000 after a
failed attempt), which leaves reinforcement learning nothing to explore.
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

LOOK = "ls"  # the one look-around command demonstrations use


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
    tasks: list, sandbox=None, *, look_first: float = 0.0, obs_chars: int = 300, seed: int = 0
) -> list[tuple[list[int], list[int]]]:
    """(tokens, mask) for every task that has a reference fix; a `look_first` fraction of them (chosen with
    `seed`) also as the two-turn "ls, then the fix" form, with the listing `ls` really printed in a fresh
    fixture (needs `sandbox`)."""
    usable = [t for t in tasks if t.reference]
    out = []
    for t in usable:
        prompt = request_tokens(task_request(t))
        act = action_tokens(t.kind, t.reference)
        out.append((prompt + act, [0] * len(prompt) + [1] * len(act)))
    rng = random.Random(seed)
    lookers = [t for t in usable if rng.random() < look_first]
    if lookers:
        look = action_tokens("bash", LOOK)
        for t, r in zip(lookers, _run_in_fixtures(lookers, LOOK, sandbox)):
            prompt = request_tokens(task_request(t))
            ob = observation_tokens(format_output(r.stdout, r.stderr, r.exit_code, obs_chars))
            act = action_tokens(t.kind, t.reference)
            toks = prompt + look + ob + act
            mask = [0] * len(prompt) + [1] * len(look) + [0] * len(ob) + [1] * len(act)
            out.append((toks, mask))
    return out


def _run_in_fixtures(tasks: list, command: str, sandbox) -> list:
    """Run one bash command in a fresh copy of each task's fixture."""
    from iclaw.tasks.task import write_fixture

    if sandbox is None:
        raise ValueError("look-first demonstrations run `ls` in the fixture: pass a sandbox")
    with tempfile.TemporaryDirectory(prefix="iclaw-sft-") as root:
        dirs = []
        for i, t in enumerate(tasks):
            d = Path(root) / f"{i:05d}"
            d.mkdir()
            write_fixture(t.files or {}, d)
            dirs.append(d)
        return sandbox.run_many([("bash", command, d) for d in dirs])


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

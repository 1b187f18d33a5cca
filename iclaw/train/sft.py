"""SFT warm-up: imitate reference fixes written in the agent's protocol, so GRPO starts from a policy that
sometimes succeeds.

Every demonstration is a whole episode that ends the way a good one does -- the fix, what it really printed
(run in a fresh fixture), then `<|done|>`:

    <|user|>{broken + its error}<|end|><|assistant|>  <|bash|>{reference}<|end|>  <|obs|>{output}<|end|><|assistant|>  <|done|>
                       mask 0                              mask 1                     mask 0                           mask 1

Two variants put one more call in front of the fix:

  * look first (a `look_first` fraction): `ls` (mask 1) and the real listing (mask 0) -- the protocol's
    mechanics on tasks where looking is harmless but never needed (the fix is still derivable from the
    request);
  * retry (a `retry` fraction): the broken command run once more (mask 0: it is in the context as an earlier
    attempt, never imitated) and its real failure (mask 0), then the fix. This is what makes `<|done|>`
    conditional: after a success the episode ends, after a failure comes another attempt. Measured without
    it (every demonstration ending "observation -> <|done|>"): p(<|done|>) = 1.000 after a failed attempt,
    which leaves reinforcement learning nothing to explore; with no `<|done|>` at all the policy writes a
    second, random call after every fix, and that call is the one judged.

Which tasks *need* a look, and how to use what `ls` printed (a file name that is not in the request), no
demonstration shows; that is GRPO's to learn.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from iclaw.agent.episode import task_request, unroot
from iclaw.agent.protocol import action_tokens, format_output, observation_tokens, request_tokens
from iclaw.errors import IclawError
from iclaw.model.gpt import autocast, bf16_supported
from iclaw.model.tokenizer import OBS
from iclaw.model.vocab import spell_out
from iclaw.tools.hints import find_hints, render, usage_in
from iclaw.train.common import INTERRUPTED, TIME_UP, console, stop_requested
from iclaw.train.optim import configure_optimizers, make_optimizer, warmup_cosine
from iclaw.train.rollout import collate, logprobs_and_entropy

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
    optimizer: str = "adamw"  # or "muon": Muon on the hidden matrices, AdamW on the rest (train/optim.py)
    # A trimmed vocabulary spells a word its corpus never had as bytes, and nothing in the corpus is spelled
    # that way, so without practice the model meets those rows untrained: each time a demonstration is drawn,
    # each distinct word token in it is spelled out (everywhere in it, prompt and fix alike) with this chance.
    # Only demonstrations with one action: spelling the listing a look-first fix copies a name from cost those
    # families most of their passes in three recipe runs (docs/LOG.md, 2026-12-04).
    spell: float = 0.0
    # Batches of similar length: each window of length_window x batch_size shuffled examples is sorted by length
    # and cut into batches, and the batches are shuffled. Demonstrations run from 43 to 384 tokens (median
    # 112), so random batches of 16 are padded to twice their real tokens; 1 turns the grouping off.
    length_window: int = 32


def demonstrations(
    tasks: list,
    sandbox,
    *,
    look_first: float = 0.0,
    retry: float = 0.0,
    obs_chars: int = 300,
    seed: int = 0,
) -> list[tuple[list[int], list[int]]]:
    """(tokens, mask) for every task that has a reference fix, plus a `look_first` and a `retry` fraction
    of them (chosen with `seed`) in the two-call forms. Every command shown is really run in a fresh copy of
    the task's fixture with `sandbox`, so each observation is what the policy would see."""
    usable = [t for t in tasks if t.reference]
    rng = random.Random(seed)
    extra = []  # (index into usable, kind of the earlier call, its code, is it the policy's own)
    for i, t in enumerate(usable):
        u = rng.random()
        if u < look_first:
            extra.append((i, "bash", t.look or LOOK, True))
        elif u < look_first + retry:
            extra.append((i, t.kind, t.broken, False))
    fixes = _observe_in_fixtures([(t, t.kind, t.reference) for t in usable], sandbox, obs_chars)
    firsts = _observe_in_fixtures([(usable[i], kind, code) for i, kind, code, _ in extra], sandbox, obs_chars)
    requests = _requests_in_fixtures(usable, sandbox)

    def episode(i: int, before: list[tuple[list[int], int]]) -> tuple[list[int], list[int]]:
        t = usable[i]
        segments = [(request_tokens(requests[i]), 0), *before]
        segments += [(action_tokens(t.kind, t.reference), 1), (fixes[i], 0), (action_tokens("done", None), 1)]
        return [x for toks, _ in segments for x in toks], [m for toks, m in segments for _ in toks]

    out = [episode(i, []) for i in range(len(usable))]
    for (i, kind, code, own), ob in zip(extra, firsts):
        out.append(episode(i, [(action_tokens(kind, code), int(own)), (ob, 0)]))
    return out


def demonstration_format(checkpoint: Path | str) -> dict[str, float]:
    """The `look_first` / `retry` fractions the SFT that made `checkpoint` drew its demonstrations with, as
    recorded in its metadata (`{}`, plain demonstrations, when none is): so that later imitation -- GRPO's
    ptx term -- shows the policy the episodes in the form it learned them."""
    from iclaw.model import registry

    fmt = (registry.checkpoint_info(Path(checkpoint)).get("extra") or {}).get("demonstrations")
    if not isinstance(fmt, dict):
        return {}
    return {
        k: float(v) for k, v in fmt.items() if k in ("look_first", "retry") and isinstance(v, int | float)
    }


def ptx_demos(sft_coef: float, tasks: list, sandbox, start: Path, seed: int) -> list | None:
    """GRPO's ptx term's demonstrations (sft_coef > 0): the pool's single-turn reference fixes, with the
    look-first / retry fractions the starting checkpoint's SFT used. Raises the flag's error when there
    are none."""
    demos = None
    if sft_coef > 0:
        fmt = demonstration_format(start)
        single = [t for t in tasks if t.reference and not t.multi_turn]
        demos = demonstrations(single, sandbox, **fmt, seed=seed)
        how = ", ".join(f"{k.replace('_', '-')} {v:g}" for k, v in fmt.items())
        how = f"{how}, as the starting checkpoint's SFT drew them" if fmt else "plain: no SFT format recorded"
        console.print(f"ptx: {len(demos)} demonstrations ({how})")
    check_ptx(sft_coef, demos)
    return demos


def check_ptx(sft_coef: float, demos: list | None) -> None:
    """The ptx term needs demonstrations."""
    if sft_coef > 0 and not demos:
        raise IclawError("--sft-coef: no demonstrations to imitate (no task in the pool has a reference fix)")


def _observe_in_fixtures(calls: list[tuple], sandbox, obs_chars: int) -> list[list[int]]:
    """Run each (task, tool, code) in a fresh copy of the task's fixture; the observation tokens it gives."""
    from iclaw.tasks.task import write_fixture

    if not calls:
        return []
    if sandbox is None:
        raise ValueError("demonstrations show what each command really printed: pass a sandbox")
    with tempfile.TemporaryDirectory(prefix="iclaw-sft-") as root:
        runs = []
        for i, (t, kind, code) in enumerate(calls):
            d = Path(root) / f"{i:05d}"
            d.mkdir()
            write_fixture(t.files or {}, d)
            runs.append((kind, code, d))
        results = sandbox.run_many(runs)
        out = []
        for (kind, code, d), r in zip(runs, results):  # in the fixture still: a failed run's hints read it
            stdout, stderr = unroot(r.stdout, d), unroot(r.stderr, d)
            hs = find_hints(kind, code, stdout, stderr, r.exit_code, d, usage=usage_in(sandbox))
            out.append(observation_tokens(format_output(stdout, stderr, r.exit_code, obs_chars, render(hs))))
    return out


def _requests_in_fixtures(tasks: list, sandbox) -> list[str]:
    """Each task's request with its hint line, read in a fresh copy of its fixture (as rollouts see it)."""
    from iclaw.tasks.task import write_fixture

    usage, out = usage_in(sandbox), []
    with tempfile.TemporaryDirectory(prefix="iclaw-sft-req-") as root:
        for i, t in enumerate(tasks):
            d = Path(root) / f"{i:05d}"
            d.mkdir()
            write_fixture(t.files or {}, d)
            out.append(task_request(t, d, usage))
    return out


def sft_loss(model, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the policy tokens only. mask (B, T-1) marks targets idx[:, 1:]."""
    logp, _ = logprobs_and_entropy(model, idx, mask)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def train_sft(
    model, examples: list[tuple[list[int], list[int]]], cfg: SFTConfig, *, device, progress=None, log=None
) -> dict:
    """Train in place. Returns {"steps", "seconds", "loss", "tokens", "stopped"}. `progress(advance, **metrics)` and
    `log(step, metrics)` are optional callbacks (live display, metrics table)."""
    block = model.config.block_size
    examples = [model.fit(t, m) for t, m in examples]  # a trimmed vocabulary spells unknown ids as bytes
    examples = [(t[:block], m[:block]) for t, m in examples]
    rng = random.Random(cfg.seed)
    spell_rng = random.Random(f"spell:{cfg.seed}")  # its own stream: the batches are the same with or without
    words = set(model.vocab.words()) if model.vocab is not None else set()
    if cfg.optimizer == "adamw":
        opt = make_optimizer(model, cfg.lr, cfg.weight_decay)
    else:
        bf16 = cfg.amp and bf16_supported(device)  # Newton-Schulz in the precision the step runs in
        opt = configure_optimizers(model, cfg.optimizer, cfg.lr, cfg.weight_decay, ns_bf16=bf16)
    model.train()
    t0, step, tokens, ema, stopped = time.time(), 0, 0, None, None
    order: list[list[int]] = []  # the batches still to train on, this pass over the examples
    while True:
        if cfg.steps is not None and step >= cfg.steps:
            break
        if stop_requested():  # a first Ctrl-C (common.stop_on_ctrl_c): the caller publishes what there is
            stopped = INTERRUPTED
            break
        if cfg.minutes is not None and time.time() - t0 >= cfg.minutes * 60:
            stopped = TIME_UP if cfg.steps is not None else None  # a cap on a step budget, not the plan
            break
        if not order:
            order = length_grouped_batches(
                [len(t) for t, _ in examples], cfg.batch_size, cfg.length_window, rng
            )
        batch = [examples[i] for i in order.pop()]
        if cfg.spell > 0 and words:
            batch = [
                spelled(t, m, words, cfg.spell, spell_rng, block) if one_action(t) else (t, m)
                for t, m in batch
            ]
        b = collate([t for t, _ in batch], [m for _, m in batch], limit=block).to(device)
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
        if progress is not None:  # the bar counts steps when there is a step budget, else seconds
            if cfg.steps is None:
                progress(completed=min(time.time() - t0, cfg.minutes * 60), loss=ema, step=step)
            else:
                progress(1, loss=ema)
    model.eval()
    return {"steps": step, "seconds": time.time() - t0, "loss": ema, "tokens": tokens, "stopped": stopped}


def spelled(
    ids: list[int], mask: list[int], words: set[int], p: float, rng: random.Random, block: int
) -> tuple[list[int], list[int]]:
    """The demonstration with each distinct id of `words` in it spelled out as bytes with chance p."""
    drop = [w for w in sorted(set(ids) & words) if rng.random() < p]
    ids, mask = spell_out(ids, drop, mask)
    return ids[:block], mask[:block]


def one_action(ids: list[int]) -> bool:
    """True when the demonstration makes one tool call: no tool output between two actions."""
    return ids.count(OBS) <= 1


def length_grouped_batches(
    lengths: list[int], batch_size: int, window: int, rng: random.Random
) -> list[list[int]]:
    """One pass over all examples as batches of indices, each of similar lengths, in random order."""
    ids = list(range(len(lengths)))
    rng.shuffle(ids)
    span = batch_size * max(1, window)
    batches = []
    for w in range(0, len(ids), span):
        chunk = ids[w : w + span]
        if window > 1:
            chunk.sort(key=lambda i: lengths[i])
        batches += [chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def _lr(step: int, cfg: SFTConfig, elapsed: float = 0.0) -> float:
    """Linear warm-up, then cosine decay to min_lr_frac · lr over the budget (steps, or wall-clock time)."""
    if cfg.steps is not None:
        progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    else:
        progress = elapsed / max(1e-9, cfg.minutes * 60)
    return warmup_cosine(cfg.lr, step, cfg.warmup, progress, cfg.min_lr_frac)

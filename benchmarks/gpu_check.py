"""GPU check: every training path at the user's real sizes, on one GPU, in a few minutes.

    python benchmarks/gpu_check.py                          # CUDA, bf16 autocast, 124m and 774m shapes
    python benchmarks/gpu_check.py --only ddp,pretrain      # a subset (a rerun after a fix)
    python benchmarks/gpu_check.py --device cpu --dry-run   # tiny shapes on the CPU in seconds (what CI runs)

The checks, in order, each through the code the trainers really run:
    ddp        a 1-process DDP group (nccl on CUDA, gloo on the CPU): init, a DDP backward, one all-reduce, destroy
    sample     the KV-cache sampler through Policy (the agent's and the trainers' path), 64 new tokens per prompt
    sft        train_sft steps (sft_loss, AdamW, clipping) on random demonstrations
    grpo       a rollout through the sampler, then trainer.grpo_update (grpo_loss, k3 KL to a frozen reference)
    distill    a student rollout, both models' log-probs, distill_loss.distill_update; --kl sampled and full
    pretrain   pretrain.pretrain on random tokens: tokens/s and MFU against the GPU's spec-sheet bf16 peak

Models are built in-process from PRESETS with random weights (speed and memory do not depend on the values);
nothing is downloaded. Rows print as each check ends: check, shape, speed, peak memory
(torch.cuda.max_memory_allocated), status. The first failure ends the run: one line naming the check and the
error, exit code 1 (--traceback adds the trace).
"""

from __future__ import annotations

import argparse
import copy
import gc
import math
import os
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from iclaw.agent.policy import Policy
from iclaw.model.gpt import GPT, GPTConfig, autocast, bf16_supported, preset
from iclaw.train.distill import DistillConfig
from iclaw.train.distill_loss import chunked_logprobs, distill_update
from iclaw.train.distill_teacher import check_teacher, resolve_teacher_dtype
from iclaw.train.grpo import GRPOConfig, group_advantages, grpo_update
from iclaw.train.optim import make_optimizer
from iclaw.train.pretrain import PretrainConfig, pretrain
from iclaw.train.rollout import Batch, collate, logprobs_and_entropy
from iclaw.train.sft import SFTConfig, train_sft

CHECKS = ("ddp", "sample", "sft", "grpo", "distill", "pretrain")

# Dense (no sparsity) bf16 tensor-core peaks from NVIDIA's spec sheets, TFLOP/s. The first name found in
# torch.cuda.get_device_name() wins, so the more specific names come first.
PEAK_BF16_TFLOPS = (
    ("H200 NVL", 835.0),
    ("H200", 989.0),  # also GH200
    ("H100 NVL", 835.0),
    ("H100 PCIe", 756.0),
    ("H100", 989.0),  # SXM
    ("A100", 312.0),  # SXM and PCIe alike
)


@dataclass
class Plan:
    """The sizes: the real ones, or the CPU dry run's tiny stand-ins (same code paths, seconds in all)."""

    shapes: dict[str, GPTConfig]  # label -> model config; sample / sft / grpo run at each
    student: str  # labels of the distillation pair
    teacher: str
    pretrain_preset: str  # a PRESETS name: pretrain() builds its own model
    batch: int = 16  # prompts (sampler), rollouts (GRPO, distillation), sequences (SFT)
    prompt_len: int = 64
    new_tokens: int = 64
    group: int = 4  # rollouts per prompt (GRPO's G)
    sft_seq: int = 256
    steps: int = 3  # timed steps per check, after one untimed warm-up step
    pretrain_steps: int = 20
    pretrain_batch: int = 16
    pretrain_seq: int = 1024


def real_plan() -> Plan:
    return Plan({"124m": preset("124m"), "774m": preset("774m")}, "124m", "774m", "124m")


def dry_plan() -> Plan:
    tiny = dict(block_size=128, n_head=2)  # GPT-2's full 50304-row head on a body of a few thousand weights
    shapes = {
        "tiny-1x32": preset("tiny", n_layer=1, n_embd=32, **tiny),  # stands in for 124m
        "tiny-2x64": preset("tiny", n_layer=2, n_embd=64, **tiny),  # stands in for 774m
    }
    return Plan(shapes, "tiny-1x32", "tiny-2x64", "tiny", batch=4, prompt_len=8, new_tokens=8, group=2,
                sft_seq=32, steps=1, pretrain_steps=2, pretrain_batch=2, pretrain_seq=32)  # fmt: skip


# ------------------------------------------------------------------------------------------------- helpers


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":  # CUDA runs asynchronously: a timer must wait for the kernels
        torch.cuda.synchronize(dev)


def build(cfg: GPTConfig, dev: torch.device, seed: int = 0) -> GPT:
    """A GPT with random weights, initialised on `dev` (a 774m init on the CPU would outlast its check)."""
    torch.manual_seed(seed)
    with torch.device(dev):
        return GPT(replace(cfg))


def prompts(n: int, length: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 50257, (n, length), generator=g).tolist()  # plain GPT-2 ids, no control tokens


def rollout_batch(
    policy: Policy, rows: list[list[int]], new_tokens: int, dev: torch.device, seed: int
) -> Batch:
    """Sample through the policy's sampler and pack it as the episode loop does: the prompt is context (mask
    0), the sampled tokens are the policy's (mask 1, with the sampler's log-probs)."""
    s = policy.sample(rows, new_tokens, temperature=1.0, seed=seed)
    if sum(map(len, s.tokens)) != len(rows) * new_tokens:  # no stop tokens: every row runs to the end
        raise RuntimeError(
            f"sampler returned {sum(map(len, s.tokens))} tokens, wanted {len(rows) * new_tokens}"
        )
    seqs = [p + t for p, t in zip(rows, s.tokens)]
    masks = [[0] * len(p) + [1] * len(t) for p, t in zip(rows, s.tokens)]
    logps = [[0.0] * len(p) + lp for p, lp in zip(rows, s.logprobs)]
    return collate(seqs, masks, logps).to(dev)


def timed(step, n: int, dev: torch.device) -> float:
    """Seconds per call of step() over n calls, after one warm-up call (allocations, kernel choice)."""
    step()
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync(dev)
    return (time.perf_counter() - t0) / n


def finite(stats: dict, what: str) -> None:
    if stats.get("skipped") or not math.isfinite(stats["loss"]):
        raise RuntimeError(f"{what}: non-finite loss or gradient ({stats})")


def peak_tflops(dev: torch.device, override: float | None) -> tuple[float | None, str]:
    """(peak bf16 TFLOP/s, where it comes from) for MFU; (None, ...) when the device is not in the table."""
    if override:
        return override, "--peak-tflops"
    if dev.type != "cuda":
        return None, "not a GPU; pass --peak-tflops"
    name = torch.cuda.get_device_name(dev)
    for key, tflops in PEAK_BF16_TFLOPS:
        if key.lower() in name.lower():
            return tflops, f"table: {key}"
    return None, f"{name} is not in the table; pass --peak-tflops"


# -------------------------------------------------------------------------------------------------- checks


def check_ddp(dev: torch.device, backend: str) -> str:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="localhost", MASTER_PORT=str(port))
    t0 = time.perf_counter()
    dist.init_process_group(backend, rank=0, world_size=1)
    try:
        t1 = time.perf_counter()
        net = DDP(torch.nn.Linear(64, 64).to(dev), device_ids=[dev.index] if dev.type == "cuda" else None)
        net(torch.randn(8, 64, device=dev)).square().mean().backward()  # DDP's gradient all-reduce hook
        t2 = time.perf_counter()
        t = torch.full((4,), 3.0, device=dev)
        dist.all_reduce(t)  # world 1: the sum is the tensor itself
        sync(dev)
        t3 = time.perf_counter()
        if t.tolist() != [3.0] * 4:
            raise RuntimeError(f"all_reduce over 1 process gave {t.tolist()}, not [3.0] * 4")
    finally:
        dist.destroy_process_group()  # the trainers below look at dist.is_initialized()
    return f"{backend}: init {t1 - t0:.2f} s, DDP step {t2 - t1:.2f} s, all-reduce {(t3 - t2) * 1e3:.1f} ms"


def check_sample(plan: Plan, label: str, dev: torch.device) -> str:
    policy = Policy(build(plan.shapes[label], dev), device=dev)  # samples from a bf16 copy where bf16 is fast
    rows = prompts(plan.batch, plan.prompt_len)
    sec = timed(lambda: rollout_batch(policy, rows, plan.new_tokens, dev, seed=1), plan.steps, dev)
    return f"{plan.batch * plan.new_tokens / sec:,.0f} tok/s (batch {plan.batch}, {plan.new_tokens} new)"


def check_sft(plan: Plan, label: str, dev: torch.device) -> str:
    model = build(plan.shapes[label], dev)
    g = torch.Generator().manual_seed(0)
    answer = plan.sft_seq * 3 // 4  # the last three quarters are the demonstration's policy tokens
    examples = [
        (
            torch.randint(0, 50257, (plan.sft_seq,), generator=g).tolist(),
            [0] * (plan.sft_seq - answer) + [1] * answer,
        )
        for _ in range(plan.batch * (plan.steps + 1))
    ]
    stamps: list[float] = []  # train_sft reports each step through `progress`; its loss.item() syncs

    def progress(advance: int = 1, **metrics) -> None:
        stamps.append(time.perf_counter())

    cfg = SFTConfig(steps=plan.steps + 1, batch_size=plan.batch, warmup=1, length_window=1)
    out = train_sft(model, examples, cfg, device=dev, progress=progress)
    if not math.isfinite(out["loss"]):
        raise RuntimeError(f"SFT loss is {out['loss']}")
    sec = (stamps[-1] - stamps[0]) / plan.steps  # the first step (warm-up) is not counted
    return f"{sec:.3f} s/step ({plan.batch}x{plan.sft_seq} tokens)"


def check_grpo(plan: Plan, label: str, dev: torch.device) -> str:
    model = build(plan.shapes[label], dev)
    ref = copy.deepcopy(model).eval().requires_grad_(False)  # the frozen KL anchor (the starting policy)
    policy = Policy(model, device=dev)
    opt = make_optimizer(model, 1e-5)
    cfg = GRPOConfig(
        group_size=plan.group, micro_batch=plan.batch, max_turns=1, max_new_tokens=plan.new_tokens
    )
    rows = [p for p in prompts(plan.batch // plan.group, plan.prompt_len) for _ in range(plan.group)]
    rewards = (torch.arange(len(rows)) % 2).float()  # the verifier's pass/fail, half of each group passing
    adv = group_advantages(rewards, plan.group).to(dev)
    rollout_s: list[float] = []

    def step() -> None:
        t0 = time.perf_counter()
        batch = rollout_batch(policy, rows, plan.new_tokens, dev, seed=len(rollout_s))
        rollout_s.append(time.perf_counter() - t0)
        with torch.no_grad(), autocast(dev, cfg.amp):
            logp_ref = logprobs_and_entropy(ref, batch.idx, batch.mask)[0]
        finite(grpo_update(model, opt, batch, adv, None, logp_ref, cfg, device=dev), "grpo_update")
        policy.sync()  # the sampler's copy follows the update, as in train_grpo

    sec = timed(step, plan.steps, dev)
    return f"{sec:.2f} s/step, rollout {sum(rollout_s[1:]) / plan.steps:.2f} s ({len(rows)} rollouts)"


def check_distill(plan: Plan, kl: str, dev: torch.device) -> str:
    student = build(plan.shapes[plan.student], dev, seed=0)
    teacher = build(plan.shapes[plan.teacher], dev, seed=1)
    teacher = teacher.to(resolve_teacher_dtype("auto", dev)).eval().requires_grad_(False)  # as load_teacher
    check_teacher(teacher, student, plan.teacher, plan.student, kl)  # the checks `iclaw distill` makes
    policy = Policy(student, device=dev)
    opt = make_optimizer(student, 1e-5)
    cfg = DistillConfig(kl=kl, group_size=plan.group, micro_batch=plan.batch, max_new_tokens=plan.new_tokens)
    rows = [p for p in prompts(plan.batch // plan.group, plan.prompt_len) for _ in range(plan.group)]
    n = [0]

    def step() -> None:
        n[0] += 1
        batch = rollout_batch(policy, rows, plan.new_tokens, dev, seed=n[0])
        logp_old, _ = chunked_logprobs(student, batch, dev, cfg.amp, cfg.micro_batch)
        logp_tch, _ = chunked_logprobs(teacher, batch, dev, cfg.amp, cfg.micro_batch)
        stats = distill_update(
            student,
            opt,
            batch,
            logp_old,
            logp_tch,
            None,
            cfg,
            device=dev,
            teacher=teacher,
            teacher_device=dev,
        )
        finite(stats, f"distill_update (--kl {kl})")
        policy.sync()

    sec = timed(step, plan.steps, dev)
    dtype = str(next(teacher.parameters()).dtype).removeprefix("torch.")
    return f"{sec:.2f} s/step ({len(rows)} rollouts, teacher in {dtype})"


def check_pretrain(plan: Plan, dev: torch.device, peak: float | None) -> str:
    B, T, steps = plan.pretrain_batch, plan.pretrain_seq, plan.pretrain_steps
    with tempfile.TemporaryDirectory(prefix="iclaw-gpu-check-") as d:
        rng = np.random.default_rng(0)  # random GPT-2 ids: speed does not depend on the text
        rng.integers(0, 50257, B * T * steps + 1, dtype=np.uint16).tofile(Path(d) / "train.bin")
        rng.integers(0, 50257, B * T + 1, dtype=np.uint16).tofile(Path(d) / "val.bin")
        cfg = PretrainConfig(
            data=d, tokens=B * T * steps, config=plan.pretrain_preset, batch=B, seq=T,
            eval_every=0, eval_batches=1, device=str(dev),
        )  # fmt: skip
        _, s = pretrain(cfg, progress=False)
    if s["steps"] != steps or not math.isfinite(s["train_loss"]):
        raise RuntimeError(f"pretrain ran {s['steps']} of {steps} steps, loss {s['train_loss']}")
    tps = s["tokens_per_s"]  # steps after the first
    # MFU = achieved FLOP/s / peak; FLOPs per token = 6 N + attention (GPT.flops_per_token)
    mfu = f"MFU {tps * s['flops_per_token'] / (peak * 1e12):.1%}" if peak else "unknown peak"
    measured = f"{s['mfu']:.0%} of a measured matmul" if s.get("mfu") else "no measured peak"
    return f"{tps:,.0f} tok/s, {mfu} ({measured})"


# --------------------------------------------------------------------------------------------------- table

COLUMNS = (("check", 15), ("shape", 20), ("speed", 56), ("peak mem", 9), ("status", 0))


def row(*cells: str) -> None:
    print("  ".join(c.ljust(w) for c, (_, w) in zip(cells, COLUMNS)).rstrip(), flush=True)


def peak_memory(dev: torch.device) -> str:
    return f"{torch.cuda.max_memory_allocated(dev) / 2**30:.2f} GiB" if dev.type == "cuda" else "-"


def run(name: str, shape: str, check, *args, dev: torch.device, show_trace: bool) -> None:
    """Run check(*args) and print its row; on an error print the row, one line naming it, and exit 1."""
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    try:
        speed = check(*args)
    except Exception as e:  # whatever breaks (out of memory, NCCL, a shape) ends the run, by name
        row(name, shape, "-", peak_memory(dev), "FAIL")
        if show_trace:
            traceback.print_exc()
        msg = (str(e).strip().splitlines() or [""])[0][:300]
        print(f"gpu_check: FAILED {name} {shape}: {type(e).__name__}: {msg}", file=sys.stderr, flush=True)
        sys.exit(1)
    row(name, shape, speed, peak_memory(dev), "ok")
    gc.collect()  # free this check's models before the next one's peak is measured
    if dev.type == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument(
        "--dry-run", action="store_true", help="tiny shapes, one timed step each (CI, on the CPU)"
    )
    ap.add_argument("--only", default=",".join(CHECKS), help=f"comma-separated subset of {','.join(CHECKS)}")
    ap.add_argument("--backend", default=None, help="DDP backend (default: nccl on CUDA, gloo on the CPU)")
    ap.add_argument(
        "--peak-tflops", type=float, default=None, help="the GPU's bf16 peak, if not in the table"
    )
    ap.add_argument("--traceback", action="store_true", help="print the failing check's traceback too")
    args = ap.parse_args()
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    if unknown := [c for c in only if c not in CHECKS]:
        ap.error(f"--only: unknown checks {', '.join(unknown)} (known: {', '.join(CHECKS)})")

    dev = torch.device(args.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            print(
                "gpu_check: FAILED setup: CUDA is not available (use --device cpu --dry-run)", file=sys.stderr
            )
            sys.exit(1)
        dev = torch.device("cuda", dev.index if dev.index is not None else torch.cuda.current_device())
        torch.cuda.set_device(dev)
    plan = dry_plan() if args.dry_run else real_plan()
    peak, peak_source = peak_tflops(dev, args.peak_tflops)
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"gpu_check: {dev} ({gpu}), torch {torch.__version__}, bf16 autocast "
          f"{'on' if bf16_supported(dev) else 'off'}, peak {f'{peak:g} TFLOPS bf16' if peak else 'unknown'} "
          f"({peak_source}){', dry run' if args.dry_run else ''}", flush=True)  # fmt: skip
    row(*(c for c, _ in COLUMNS))
    row(*("-" * max(w, len(c)) for c, w in COLUMNS))

    t0 = time.perf_counter()
    kw = dict(dev=dev, show_trace=args.traceback)
    if "ddp" in only:  # first: seconds, and a broken NCCL install is worth knowing before anything else
        run(
            "ddp", "world 1", check_ddp, dev, args.backend or ("nccl" if dev.type == "cuda" else "gloo"), **kw
        )
    for label in plan.shapes:
        for name, check in (("sample", check_sample), ("sft", check_sft), ("grpo", check_grpo)):
            if name in only:
                run(name, label, check, plan, label, dev, **kw)
    if "distill" in only:
        for kl in ("sampled", "full"):
            run(f"distill-{kl}", f"{plan.student}<-{plan.teacher}", check_distill, plan, kl, dev, **kw)
    if "pretrain" in only:
        run("pretrain", plan.pretrain_preset, check_pretrain, plan, dev, peak, **kw)
    print(f"gpu_check: all checks passed in {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()

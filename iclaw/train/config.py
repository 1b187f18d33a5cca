"""Every default of the two on-policy trainers, in one place: GRPO (grpo.py) and on-policy distillation
(distill.py) take these dataclasses, and the command line's options default to their fields (`--help` shows
them). Torch-free, so the command line reads it without loading torch.

GRPOConfig's defaults are the recipe that trained the shipped policy, iclaw-small (iclaw/train/recipe.py adds
only its names, budget and seed): `iclaw train grpo` with no flag runs it, and the demo and the β ablation
change only what their docstrings say. Options that no run kept are gone; asking for one (`--set FIELD=...`,
or the flag that set it) is an error that says what replaced it (REMOVED; grpo.py's docstring: "Left out").
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_NEW_TOKENS = 160  # per turn: a fixed Python program is a few lines, longer than any shell fix
PTX_BATCH = 16  # PPO-ptx: demonstrations imitated in each update (--sft-coef weighs them)
GRAD_CLIP = 1.0  # the update's gradient norm is clipped here (both trainers)


@dataclass
class OnPolicyConfig:
    """What GRPO and distillation share: where the run publishes, its budgets, the rollouts, the update."""

    out: str = "grpo"  # registry name checkpoints are published under
    steps: int = 50
    minutes: float | None = None  # optional wall-clock budget (stops early, publishes)
    max_tokens: int | None = None  # optional budget of sampled policy tokens (stops early, publishes)
    group_size: int = 8  # G episodes per task, sampled at temperature 1 (the policy's own distribution)
    tasks_per_step: int = 8  # global, across all ranks
    max_turns: int = 3  # tool calls per episode: look, fix, and one more try (`ls` first costs no retry)
    max_new_tokens: int = MAX_NEW_TOKENS
    # 1e-4, not 4e-4: from three demo warm-ups, 26 GRPO steps at 1e-4 gave the hard families +6.7, +6.7, +8.3
    # and overall +1.4, -1.4, +0.0; at 4e-4 -1.7, +15.0, -1.7 and 0.0, +0.5, -3.7 (docs/LOG.md, 2026-11-30)
    lr: float = 1e-4
    eps: float = 0.2  # clip range of the ratio; it acts only with ppo_epochs > 1
    ppo_epochs: int = 1
    micro_batch: int = 32  # rows per forward/backward (memory); the update is over the whole batch
    save_every: int = 10
    seed: int = 0
    amp: bool = True  # bf16 autocast where the device has bf16


@dataclass
class GRPOConfig(OnPolicyConfig):
    model: str = "iclaw-small"  # registry name or path of the starting policy (also the KL reference)
    beta: float = 0.04  # KL coefficient
    # PPO-ptx (InstructGPT, Ouyang et al. 2022): every update also takes sft_coef x the NLL of PTX_BATCH
    # demonstrations, so skills the rewarded tasks do not exercise are not traded away for the ones they do:
    # without it the demo's "ls first, then a suffixed name" leaked into the single-turn families
    # (py-file-typo 66.7 -> 33.3, single-turn mean 41.3 -> 34.6; docs/LOG.md, 2026-11-30)
    sft_coef: float = 1.0
    # stop (keeping the last good checkpoint) if the mean KL of the last 5 updating steps exceeds this
    kl_max: float = 1.0
    max_flagged: float | None = None  # ... or if the monitor flags more than this fraction of a step


@dataclass
class DistillConfig(OnPolicyConfig):
    out: str = "distill"
    # pure distillation needs no group baseline: G = 1 and many distinct tasks a step (8 tasks x 8 samples
    # saw 0.4M tokens of 64 tasks' worth of states in a whole run and learned nothing; docs/LOG.md 2026-12-04)
    group_size: int = 1
    tasks_per_step: int = 32
    # 60 steps into a quarter-size student, dev pass@1 (292 tasks) against its start: -9.6 [-13.7, -5.5] at
    # 1e-3 (held-out -6.7 to -9.2 at three seeds), -2.7 [-6.8, +1.0] at 3e-4, whose probe KL fell 42 % by step
    # 30 (docs/LOG.md, 2026-12-07). No lr tried made the student better
    lr: float = 3e-4
    micro_batch: int = 16  # full mode holds two (tokens x vocab) float32 tensors
    teacher: str = "760m"  # registry name or path of the teacher (frozen)
    student: str = "124m"  # registry name or path of the starting student
    # the exact KL over the vocabulary where both share it: a whole distribution per token, not one sample
    kl: str = "full"  # full | sampled (the teacher needs only a row for each id the student writes)
    reward_weight: float = 0.0  # W: weight of the verifier's GRPO advantage added to the distillation term
    sft_coef: float = 0.0  # PPO-ptx, as GRPO's: sft_coef x the NLL of PTX_BATCH demonstrations in each update
    teacher_device: str | None = None  # None = the student's device
    teacher_dtype: str = "auto"  # auto (bf16 on CUDA, else float32) | float32 | bfloat16 | float16
    # a fresh AdamW straight after SFT (Muon) at full lr jolts the student; ramp lr up over these steps
    warmup: int = 10
    # the headline KL: exact and sampled KL on a fixed probe (PROBE_TASKS x PROBE_SAMPLES, fixed seed) every
    # N steps; one step's KL is read on different tasks each step and swung 1.0 to 3.1 (docs/LOG.md 2026-12-04)
    probe_every: int = 10


# What each option that no run kept became; the error for `--set FIELD=...` or its old flag.
REMOVED = {
    "curriculum": "removed: it did not hold up in full demos (docs/LOG.md, 2026-12-01)",
    "filter_zero_variance": "removed: groups whose rewards all agree are always skipped (the recipe's way)",
    "measure_kl": "removed: the reference is always loaded, so KL is measured at every β",
    "sft_batch": f"removed: the PPO-ptx batch is {PTX_BATCH} demonstrations; --sft-coef weighs it",
    "loss_agg": "removed: the loss is token-mean (seq-mean did worse, docs/LOG.md 2026-11-30)",
    "scale_rewards": "removed: advantages are always divided by their group's std",
    "kl_estimator": "removed: the KL term is k3",
    "eps_high": "removed: the clip is symmetric, --set eps=... (no run kept clip-higher)",
    "temperature": "removed: rollouts sample at temperature 1 (0.7 did worse, docs/LOG.md 2026-11-30)",
    "top_k": "removed: rollouts sample from every token (top-20 did no better, docs/LOG.md 2026-12-01)",
    "grad_clip": f"removed: the gradient norm is clipped at {GRAD_CLIP:g}",
    "weight_decay": "removed: the trainers use no weight decay",
}

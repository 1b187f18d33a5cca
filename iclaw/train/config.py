"""Every default of the two on-policy trainers, in one place: GRPO (grpo.py) and on-policy distillation
(distill.py) take these dataclasses, and the command line's options default to their fields (`--help` shows
them). Torch-free, so the command line reads it without loading torch.

GRPOConfig's defaults are the recipe that trained the shipped policy, iclaw-small (iclaw/train/recipe.py adds
only its names, budget and seed): `iclaw train grpo` with no flag runs it, and the demo and the β ablation
change only what their docstrings say.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_NEW_TOKENS = 160  # per turn: a fixed Python program is a few lines, longer than any shell fix


@dataclass
class OnPolicyConfig:
    """What GRPO and distillation share: where the run publishes, its budgets, the rollouts, the update."""

    out: str = "grpo"  # registry name checkpoints are published under
    steps: int = 50
    minutes: float | None = None  # optional wall-clock budget (stops early, publishes)
    max_tokens: int | None = None  # optional budget of sampled policy tokens (stops early, publishes)
    group_size: int = 8  # G episodes per task
    tasks_per_step: int = 8  # global, across all ranks
    max_turns: int = 3  # tool calls per episode: look, fix, and one more try (`ls` first costs no retry)
    max_new_tokens: int = MAX_NEW_TOKENS
    temperature: float = 1.0
    top_k: int | None = None
    # 1e-4, not 4e-4: from three demo warm-ups, 26 GRPO steps at 1e-4 gave the hard families +6.7, +6.7, +8.3
    # and overall +1.4, -1.4, +0.0; at 4e-4 -1.7, +15.0, -1.7 and 0.0, +0.5, -3.7 (docs/LOG.md, 2026-11-30)
    lr: float = 1e-4
    eps: float = 0.2  # clip range of the ratio; it acts only with ppo_epochs > 1
    eps_high: float | None = None
    scale_rewards: str = "group"
    ppo_epochs: int = 1
    micro_batch: int = 32  # rows per forward/backward (memory); the update is over the whole batch
    grad_clip: float = 1.0
    weight_decay: float = 0.0
    save_every: int = 10
    seed: int = 0
    amp: bool = True  # bf16 autocast where the device has bf16


@dataclass
class GRPOConfig(OnPolicyConfig):
    model: str = "iclaw-small"  # registry name or path of the starting policy (also the KL reference)
    beta: float = 0.04  # KL coefficient
    kl_estimator: str = "k3"
    loss_agg: str = "token-mean"
    filter_zero_variance: bool = True  # groups whose rewards all agree carry no advantage: skip their update
    # draw tasks by how often their family's groups had reward variance (onpolicy.FamilyCurriculum)
    curriculum: bool = False
    # PPO-ptx (InstructGPT, Ouyang et al. 2022): every update also takes sft_coef x the NLL of sft_batch
    # demonstrations, so skills the rewarded tasks do not exercise are not traded away for the ones they do:
    # without it the demo's "ls first, then a suffixed name" leaked into the single-turn families (py-file-typo
    # 66.7 -> 33.3, single-turn mean 41.3 -> 34.6; docs/LOG.md, 2026-11-30);
    # under torchrun each rank draws its own sft_batch and the term's gradient is averaged over ranks
    sft_coef: float = 1.0
    sft_batch: int = 16
    # stop (keeping the last good checkpoint) if the KL over the last 5 updating steps exceeds this (recent_kl)
    kl_max: float = 1.0
    max_flagged: float | None = None  # ... or if the monitor flags more than this fraction of a step
    measure_kl: bool = True  # load the reference even at beta 0, so KL is still measured (the β ablation)


@dataclass
class DistillConfig(OnPolicyConfig):
    out: str = "distill"
    group_size: int = 4  # G student episodes per task (>= 2 only needed when reward_weight != 0)
    max_turns: int = 2
    max_new_tokens: int = 48
    micro_batch: int = 16  # full mode holds two (tokens x vocab) float32 tensors
    teacher: str = "760m"  # registry name or path of the teacher (frozen)
    student: str = "124m"  # registry name or path of the starting student
    kl: str = "sampled"  # sampled | full
    reward_weight: float = 0.0  # W: weight of the verifier's GRPO advantage added to the distillation term
    teacher_device: str | None = None  # None = the student's device
    teacher_dtype: str = "auto"  # auto (bf16 on CUDA, else float32) | float32 | bfloat16 | float16

"""GRPO lives in iclaw/train/grpo.py; this name stays only because benchmarks/gpu_check.py imports from it."""

from iclaw.train.grpo import GRPOConfig, grpo_update  # noqa: F401

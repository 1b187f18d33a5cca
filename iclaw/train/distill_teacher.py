"""The teacher of on-policy distillation: load it frozen, on its own device and dtype, and check that it can
grade the student's tokens (same vocabulary, a block at least as long; any depth and width)."""

from __future__ import annotations

import torch

from iclaw.errors import IclawError

TEACHER_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_teacher_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":  # bf16 halves a big teacher's memory on GPU; CPU keeps float32 (autocast does bf16)
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    if name not in TEACHER_DTYPES:
        raise IclawError(
            f"--teacher-dtype: unknown dtype {name!r} (known: auto, {', '.join(TEACHER_DTYPES)})"
        )
    return TEACHER_DTYPES[name]


def check_teacher(teacher, student, teacher_name: str, student_name: str) -> str | None:
    """Raise on a teacher that cannot grade the student's tokens; return a warning line for a smaller one.
    Depth and width may differ freely: the teacher only has to score the same token ids."""
    tv, sv = teacher.config.vocab_size, student.config.vocab_size
    if tv != sv:
        raise IclawError(
            f"--teacher {teacher_name}: vocabulary size {tv} differs from the student's ({student_name}) {sv}; "
            "on-policy distillation scores the student's own token ids with the teacher, so both must share "
            "one tokenizer"
        )
    tb, sb = teacher.config.block_size, student.config.block_size
    if tb < sb:
        raise IclawError(
            f"--teacher {teacher_name}: block size {tb} is smaller than the student's ({student_name}) {sb}; "
            "the teacher could not score the student's longest episodes"
        )
    tp, sp = teacher.num_params(), student.num_params()
    if tp < sp:
        return (
            f"warning: teacher {teacher_name} has fewer parameters ({tp:,}) than the student {student_name} "
            f"({sp:,}); distilling proceeds, but the student is pulled towards a smaller model"
        )
    return None


def load_teacher(
    name: str, student, device: torch.device, dtype: str = "auto", echo=print, student_name: str = "student"
):
    """(frozen teacher on `device`, resolved checkpoint path). A missing teacher is the registry's
    unknown-model error, named after --teacher."""
    from iclaw.model import registry

    try:
        path = registry.resolve(name)
    except IclawError as e:
        raise IclawError(f"--teacher: {e}") from None
    teacher, _ = registry.load(path, device=device)
    warning = check_teacher(teacher, student, name, student_name)
    if warning:
        echo(warning)
    teacher = teacher.to(resolve_teacher_dtype(dtype, device)).eval().requires_grad_(False)
    return teacher, str(path)

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


def check_teacher(teacher, student, teacher_name: str, student_name: str, kl: str = "sampled") -> str | None:
    """Raise on a teacher that cannot grade the student's tokens; return a warning line for a smaller one.
    Depth and width may differ freely: the teacher only has to score the same token ids."""

    # Both speak GPT-2 ids; the teacher must have a row for every id the student can write (a trimmed
    # vocabulary's ids, or all of a full one's rows). The `full` KL compares whole rows: the same rows.
    def ids(m) -> set[int]:
        return set(m.vocab.ids) if m.vocab is not None else set(range(m.config.vocab_size))

    s_ids, t_ids = ids(student), ids(teacher)
    tv, sv = teacher.config.vocab_size, student.config.vocab_size
    if not s_ids <= t_ids:
        raise IclawError(
            f"--teacher {teacher_name}: vocabulary size {tv} differs from the student's ({student_name}) {sv}, "
            f"and {len(s_ids - t_ids)} of the student's token ids have no teacher row; on-policy distillation "
            "scores the student's own tokens with the teacher"
        )
    if kl == "full" and s_ids != t_ids:
        raise IclawError(
            f"--kl full: teacher {teacher_name} and student {student_name} have different vocabularies "
            f"({tv} and {sv} rows); use --kl sampled"
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
    name: str,
    student,
    device: torch.device,
    dtype: str = "auto",
    echo=print,
    student_name: str = "student",
    kl: str = "sampled",
):
    """(frozen teacher on `device`, resolved checkpoint path). A missing teacher is the registry's
    unknown-model error, named after --teacher."""
    from iclaw.model import registry

    try:
        path = registry.resolve(name)
    except IclawError as e:
        raise IclawError(f"--teacher: {e}") from None
    teacher, _ = registry.load(path, device=device)
    warning = check_teacher(teacher, student, name, student_name, kl)
    if warning:
        echo(warning)
    teacher = teacher.to(resolve_teacher_dtype(dtype, device)).eval().requires_grad_(False)
    return teacher, str(path)

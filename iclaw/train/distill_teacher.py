"""The teacher of on-policy distillation: load it frozen, on its own device and dtype, and check that it can
grade the student's tokens (a row for every id the student can write, a block at least as long; any depth and
width) and that it fits in memory -- both from its config alone, before a byte of its weights is read.

Vocabularies. Both models speak GPT-2 ids; a model trained from scratch may keep only some of them (a trimmed
vocabulary, iclaw/model/vocab.py). `--kl sampled` scores only the ids the student wrote, so it works whenever
the teacher has a row for each id the student has (any full-vocabulary teacher does, whatever the student
keeps). `--kl full` compares the two distributions over one shared set of rows, so it needs exactly the same
ids on both sides; anything else is refused with a pointer to `--kl sampled`.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig
from iclaw.model.vocab import Vocab
from iclaw.model.weights import PADDED_VOCAB

TEACHER_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_teacher_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":  # bf16 halves a big teacher's memory on GPU; CPU keeps float32 (autocast does bf16)
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    if name not in TEACHER_DTYPES:
        raise IclawError(
            f"--teacher-dtype: unknown dtype {name!r} (known: auto, {', '.join(TEACHER_DTYPES)})"
        )
    return TEACHER_DTYPES[name]


# ------------------------------------------------------------------------------------ can it grade the student


class Shape(NamedTuple):
    """What the checks need of a model, readable from a checkpoint without its weights (a GPT has both)."""

    config: GPTConfig
    vocab: Vocab | None


def param_count(config: GPTConfig) -> int:
    """Parameters of a GPT with this config, counted on the meta device: no memory, no initialisation."""
    untrimmed = GPTConfig(**{**config.to_dict(), "trimmed": False})  # rows are counted without their ids
    with torch.device("meta"):
        return GPT(untrimmed).num_params()


def _ids(m) -> set[int]:
    return set(m.vocab.ids) if m.vocab is not None else set(range(m.config.vocab_size))


def _vocab_words(m) -> str:
    n = m.config.vocab_size
    if m.vocab is not None:
        return f"a trimmed vocabulary of {n:,} GPT-2 ids"
    return f"GPT-2's full vocabulary ({n:,} rows)" if n >= PADDED_VOCAB else f"a vocabulary of {n:,} rows"


def check_teacher(teacher, student, teacher_name: str, student_name: str, kl: str = "sampled") -> str | None:
    """Raise on a teacher that cannot grade the student's tokens; return a warning line for a smaller one.
    `teacher` / `student`: GPTs or Shapes. Depth and width may differ freely: the teacher only has to score
    the same token ids, over episodes as long as the student's."""
    who = f"--teacher {teacher_name} cannot grade student {student_name}"
    vocabs = f"teacher: {_vocab_words(teacher)}; student: {_vocab_words(student)}"
    s_ids, t_ids = _ids(student), _ids(teacher)
    missing = sorted(s_ids - t_ids)
    if missing:  # the sampled tokens and the context are the student's ids: the teacher must read them all
        eg, have = ", ".join(map(str, missing[:3])), "has" if len(missing) == 1 else "have"
        raise IclawError(
            f"{who}: {len(missing):,} of the student's token ids (e.g. {eg}) {have} no teacher row ({vocabs}); "
            "distillation scores the student's own tokens with the teacher, so it needs a row for each"
        )
    if kl == "full" and s_ids != t_ids:  # full_kl compares (N, V) logit rows column by column
        raise IclawError(
            f"--kl full: teacher {teacher_name} and student {student_name} have different vocabularies "
            f"({vocabs}); the full KL compares whole distributions over one shared set of rows. Use --kl "
            "sampled: it scores only the tokens the student writes, and the teacher has a row for each"
        )
    tb, sb = teacher.config.block_size, student.config.block_size
    if tb < sb:
        raise IclawError(
            f"{who}: the teacher's block size {tb} is smaller than the student's {sb}, so it could not score "
            f"the student's longest episodes; use a teacher with a block of at least {sb} tokens"
        )
    tp, sp = (m.num_params() if isinstance(m, GPT) else param_count(m.config) for m in (teacher, student))
    if tp < sp:
        return (
            f"warning: teacher {teacher_name} has fewer parameters ({tp:,}) than the student {student_name} "
            f"({sp:,}); distilling proceeds, but the student is pulled towards a smaller model"
        )
    return None


def read_shape(path: Path | str) -> Shape | None:
    """A checkpoint's Shape from its config (and vocab.json) alone; None where that needs the full load."""
    from iclaw.model.checkpoint import read_config

    found = read_config(path)
    return Shape(*found) if found is not None else None


# --------------------------------------------------------------------------------------------- does it fit


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def available_ram() -> tuple[int | None, str]:
    """(bytes of RAM a new allocation can take without swapping, where the figure comes from); None if unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available), "psutil's available RAM"
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except (OSError, ValueError, IndexError):
        pass
    return None, "unknown"


def free_gpu(device: torch.device) -> tuple[int | None, str]:
    """(bytes free on a CUDA device, where the figure comes from)."""
    free, _ = torch.cuda.mem_get_info(device)
    return int(free), f"free on {device}, torch.cuda.mem_get_info"


def check_teacher_memory(
    name: str,
    params: int,
    file_bytes: int,
    device: torch.device,
    dtype: torch.dtype,
    *,
    ram: tuple[int | None, str] | None = None,
    gpu: tuple[int | None, str] | None = None,
) -> None:
    """Raise if the teacher would not fit, instead of being killed for memory halfway through its load.

    The load (load_teacher) runs on the CPU: the weights file is read whole, into a float32 model, so RAM needs
    file + 4 bytes per parameter; the model is then cast to `dtype` and moved to `device`, where a CUDA device
    needs bytes(dtype) per parameter. `ram` / `gpu`: (bytes available, where that figure comes from); measured
    when None. The student's optimizer and activations come on top of this: it is a floor, not a budget."""
    need = file_bytes + 4 * params
    avail, source = ram if ram is not None else available_ram()
    if avail is not None and need > avail:
        raise IclawError(
            f"--teacher {name}: loading it needs about {_gib(need)} of RAM ({params:,} parameters: a "
            f"{_gib(4 * params)} float32 model filled from a {_gib(file_bytes)} weights file), but only "
            f"{_gib(avail)} is available ({source})"
        )
    if device.type == "cuda":
        need = params * dtype.itemsize
        avail, source = gpu if gpu is not None else free_gpu(device)
        if avail is not None and need > avail:
            dt = str(dtype).removeprefix("torch.")
            raise IclawError(
                f"--teacher {name}: needs about {_gib(need)} of GPU memory ({params:,} parameters in {dt}), but "
                f"only {_gib(avail)} is free ({source}); try --teacher-dtype bfloat16 or another --teacher-device"
            )


# ------------------------------------------------------------------------------------------------- loading


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
    unknown-model error, named after --teacher; one that cannot grade the student, or would not fit in
    memory, is refused from its config before its weights are read."""
    from iclaw.model import registry
    from iclaw.model.checkpoint import weights_bytes

    try:
        path = registry.resolve(name)
    except IclawError as e:
        raise IclawError(f"--teacher: {e}") from None
    torch_dtype = resolve_teacher_dtype(dtype, device)
    shape = read_shape(path)
    if shape is not None:  # both checks from config.json alone (the full check runs again after the load)
        check_teacher(shape, student, name, student_name, kl)
        params = param_count(shape.config)
        check_teacher_memory(name, params, weights_bytes(path), device, torch_dtype)
    teacher, _ = registry.load(path, device="cpu")  # cast before the move: the device never holds float32
    warning = check_teacher(teacher, student, name, student_name, kl)
    if warning:
        echo(warning)
    teacher = teacher.to(torch_dtype).to(device).eval().requires_grad_(False)
    return teacher, str(path)


def check_pair(teacher: str, student: str, kl: str) -> None:
    """`iclaw distill`'s early check of two registry names or paths: can this teacher grade this student?
    From their configs only, before any sandbox, task or model is touched (skipped where a config cannot be
    read without the weights; load_teacher checks again)."""
    from iclaw.model import registry

    t, s = read_shape(registry.resolve(teacher)), read_shape(registry.resolve(student))
    if t is not None and s is not None:
        check_teacher(t, s, teacher, student, kl)

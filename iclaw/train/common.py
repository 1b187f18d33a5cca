"""Pieces every trainer shares (SFT, GRPO, distillation): devices and torchrun, RNG capture
for exact resume, metrics logging (SQLite table + JSONL), Ctrl-C, the live progress display and the reports
(tables, plots), `--set`, and what every training or eval command needs first: tasks and a safe sandbox."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.distributed as dist
from rich.console import Console
from rich.table import Table

from iclaw.errors import IclawError
from iclaw.files import write_json

# ---------------------------------------------------------------------------------------------- torchrun


def setup_distributed(device: str | None = None) -> tuple[int, int, torch.device]:
    """(rank, world_size, device). Under torchrun (WORLD_SIZE > 1): gloo on CPU, nccl on CUDA."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if device is None:
        from iclaw.model.gpt import default_device

        dev = default_device()
    else:
        dev = torch.device(device)
    if world > 1 and not dist.is_initialized():
        if dev.type == "cuda":
            local = int(os.environ.get("LOCAL_RANK", "0"))
            dev = torch.device("cuda", local)
            torch.cuda.set_device(dev)
            dist.init_process_group("nccl")
        else:
            dist.init_process_group("gloo")
    return rank, world, dev


def all_reduce_sum(x: float, device) -> float:
    if not dist.is_initialized():
        return x
    t = torch.tensor([x], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.item()


def average_gradients(model: torch.nn.Module) -> None:
    """Average every .grad over the torchrun ranks, as DDP does; nothing on one process. By hand, after all
    of an update's backward passes, so a term whose forward bypasses a DDP wrapper (GRPO's ptx NLL, the
    distillation heads) is averaged too. A parameter without a gradient on this rank joins with zeros, so
    every rank makes the same calls in the same order."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return
    world = dist.get_world_size()
    for p in model.parameters():
        if p.requires_grad:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad.div_(world)


def cleanup_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


# ------------------------------------------------------------------------------------------- RNG / resume


def rng_state() -> dict:
    state = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def check_resume_compatible(model, trainer_state: dict | None, where: str) -> None:
    if trainer_state is None:
        raise IclawError(f"{where}: no trainer state to resume from (was it written by `iclaw train`?)")
    saved = trainer_state.get("model_config")
    if saved is not None and saved != model.config.to_dict():
        diff = sorted(
            k
            for k in set(saved) | set(model.config.to_dict())
            if saved.get(k) != model.config.to_dict().get(k)
        )
        raise IclawError(
            f"{where}: checkpoint architecture differs from the model being trained ({', '.join(diff)})"
        )


# --------------------------------------------------------------------------------------------- metrics


class MetricsLog:
    """Per-step metrics into the store's train_metrics table and runs/<run_id>/metrics.jsonl."""

    def __init__(self, run_id: str, store=None, log_dir: str | Path = "runs", config: dict | None = None):
        self.run_id, self.store = run_id, store
        self.dir = Path(log_dir) / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        if config is not None:
            write_json(self.dir / "config.json", config)

    def log(self, step: int, metrics: dict) -> None:
        row = {"run_id": self.run_id, "step": step, "time": time.time(), **metrics}
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.store is not None:
            self.store.log_metrics(self.run_id, step, metrics)


# ------------------------------------------------------------------------------------------------ Ctrl-C

INTERRUPTED = "interrupted (Ctrl-C)"  # the summary's `stopped` after a first Ctrl-C
TIME_UP = "time budget reached"  # ... when a --minutes budget (or cap) ran out
_stop = {"requested": False}


@contextmanager
def stop_on_ctrl_c():
    """A first Ctrl-C asks the training loop to stop at the next step boundary, where it saves as it does
    when a budget runs out (`stop_requested()` turns True); a second one interrupts at once. Not under
    torchrun (ranks would stop at different steps) nor off the main thread (signals go to the main one)."""
    torchrun = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if torchrun or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def ask(signum, frame) -> None:
        if _stop["requested"]:
            raise KeyboardInterrupt
        _stop["requested"] = True
        print("\nCtrl-C: finishing this step, then saving (Ctrl-C again to stop at once)", file=sys.stderr)

    _stop["requested"] = False
    signal.signal(signal.SIGINT, ask)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _stop["requested"] = False


def stop_requested() -> bool:
    return _stop["requested"]


def interrupted(summary: dict) -> None:
    """After a first Ctrl-C the run saved where it stopped; the command still ends as interrupted (exit 130)."""
    if summary.get("stopped") == INTERRUPTED:
        raise KeyboardInterrupt


_issued_run_ids: set[str] = set()


def new_run_id(kind: str) -> str:
    """kind-date-time-pid; a second run of one process in the same second (an ablation's next arm) gets -2, -3, ..."""
    base = f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid() % 10000:04d}"
    run_id, n = base, 1
    while run_id in _issued_run_ids:
        n += 1
        run_id = f"{base}-{n}"
    _issued_run_ids.add(run_id)
    return run_id


# ------------------------------------------------------------------------------------------------ display


@contextmanager
def live_progress(total: int, description: str, enabled: bool = True):
    """A rich progress bar whose `fields` line shows the latest metrics; yields update(step, metrics)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if not enabled:
        yield lambda advance=1, **kw: None
        return
    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        transient=False,
    )
    with prog:
        tid = prog.add_task(description, total=total, info="")

        def update(advance: int = 1, completed: int | None = None, **metrics) -> None:
            info = "  ".join(
                f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
            )
            if completed is not None:
                prog.update(tid, completed=completed, info=info)
            else:
                prog.update(tid, advance=advance, info=info)

        yield update


console = Console(highlight=False)  # the trainers' and the lab's one console (rich markup, no auto-colouring)


def report_table(title: str, reports: dict[str, object]) -> Table:
    """Per-family pass@1 columns for several evaluation reports (EvalReport) side by side."""
    families = sorted({f for r in reports.values() for f in r.by_family})
    t = Table(title=title, header_style="bold")
    t.add_column("family")
    for name in reports:
        t.add_column(name, justify="right")
    for f in families:
        t.add_row(
            f, *[f"{r.by_family.get(f, {}).get('pass_at_1', 0.0) * 100:5.1f}" for r in reports.values()]
        )
    t.add_row("[bold]overall[/]", *[f"[bold]{r.pass_at_1 * 100:5.1f}[/]" for r in reports.values()])
    return t


def plot_series(series: dict[str, list[dict]], metrics: list[str], out: Path) -> None:
    """One PNG panel per metric, one line per labelled run (rows of per-step metrics)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for label, rows in series.items():
            xs = [r.get("step", i + 1) for i, r in enumerate(rows) if r.get(m) is not None]
            ys = [r[m] for r in rows if r.get(m) is not None]
            ax.plot(xs, ys, label=label)
        ax.set_title(m)
        ax.set_xlabel("step")
        ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------- --set


def apply_overrides(cfg, pairs: list[str], flag: str = "--set", removed: dict[str, str] | None = None):
    """A copy of dataclass `cfg` with each 'field=value' applied, the value parsed as the field's type: the
    knobs that have no flag of their own stay reachable without one option each. A field in `removed` (one
    that no longer exists) is an error that says what replaced it."""
    import dataclasses
    import typing

    fields = {f.name: f for f in dataclasses.fields(cfg)}
    hints = typing.get_type_hints(type(cfg))
    changes = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if key in (removed or {}):
            raise IclawError(f"{flag} {pair}: {removed[key]}")
        if not sep or key not in fields:
            raise IclawError(f"{flag} {pair}: expected FIELD=VALUE, FIELD one of {', '.join(sorted(fields))}")
        kind = hints[key]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        base = args[0] if args else kind
        try:
            if raw.strip().lower() in ("none", "null") and type(None) in typing.get_args(kind):
                value = None
            elif base is bool:
                value = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}[
                    raw.strip().lower()
                ]
            else:
                value = base(raw)
        except (KeyError, TypeError, ValueError):
            raise IclawError(
                f"{flag} {pair}: {raw!r} cannot be read as {getattr(base, '__name__', base)}"
            ) from None
        changes[key] = value
    return dataclasses.replace(cfg, **changes)


# ------------------------------------------------------------------------------------ tasks and sandbox
# What every training/eval command needs before it starts: tasks, and a sandbox that is safe to use.


def load_task_file(path: Path, sandbox) -> list:
    """A task file as every command that runs the policy on it sees it (eval, train sft / grpo, distill, the
    β ablation): load_tasks, then fill_errors: a task without an `error` (a hand-written one) has its
    broken command run in a fresh fixture in `sandbox`, so the policy's first turn shows that command's
    real output and exit code, exactly as for a generated task. A broken command that does not fail is
    refused (IclawError naming the file and the task) before anything runs or is written."""
    from iclaw.tasks import fill_errors, load_tasks

    return fill_errors(load_tasks(path), sandbox, where=str(path))


def task_pool(tasks_file: Path | None, from_db: bool = False, db: Path | None = None, *, sandbox) -> list:
    """Tasks from a JSONL file (load_task_file) and/or mined from the trajectory store on the fly."""
    from iclaw.tasks import mine_tasks

    pool = []
    if tasks_file is not None:
        pool += load_task_file(tasks_file, sandbox)
    if from_db:
        from iclaw.store import default_db_path
        from iclaw.tasks.mine import say_mined

        where, report = db if db is not None else default_db_path(), {}
        mined = mine_tasks(where, sandbox=sandbox, report=report)
        console.print(say_mined(report, where), highlight=False, soft_wrap=True)
        if not mined and tasks_file is None:
            raise IclawError(
                f"{where}: nothing to train on: no failed command followed by one that worked"
                + (" survived the re-run in its rebuilt folder" if report["found"] else "")
            )
        pool += mined
    if tasks_file is None and not from_db:
        raise IclawError("no tasks: pass --tasks FILE (see `iclaw tasks gen`) and/or --from-db")
    if not pool:
        where = ", ".join(str(x) for x in (tasks_file, "the trajectory store" if from_db else None) if x)
        raise IclawError(f"{where}: no usable tasks")
    return pool


MINED_SLICE = 5  # every fifth mined task is held out of `train grpo --from-db` to show what the run did
MINED_SLICE_MIN = 10  # below this many mined tasks a slice of one or two says nothing; none is held out


def hold_out_mined(pool: list) -> tuple[list, list]:
    """(tasks to train on, a held-out slice of the mined ones): every MINED_SLICE-th mined task by a hash of
    its id, the same slice on every run over the same store; nothing is held out of a task file."""
    import hashlib

    mined = sorted(
        (t for t in pool if t.family == "mined"), key=lambda t: hashlib.sha256(t.id.encode()).hexdigest()
    )
    if len(mined) < MINED_SLICE_MIN:
        return pool, []
    held = {t.id for t in mined[::MINED_SLICE]}
    return [t for t in pool if t.id not in held], [t for t in pool if t.id in held]


def score_slice(model: str | Path, held: list, cfg, sandbox, store=None):
    """Greedy pass@1 of `model` on the held-out slice, with the trainer's turns (an EvalReport)."""
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.evaluate import evaluate
    from iclaw.agent.policy import Policy
    from iclaw.tasks import Verifier

    ep = EpisodeConfig(max_turns=cfg.max_turns, max_new_tokens=cfg.max_new_tokens, temperature=0.0)
    return evaluate(
        Policy.load(model), held, sandbox=sandbox, verifier=Verifier(sandbox), cfg=ep, store=store
    )


def safe_sandbox(allow_unsafe: bool, timeout_s: float = 5.0):
    """A sandbox for model-written commands; refuses the weak level unless --unsafe-no-sandbox."""
    from iclaw.tools.sandbox import Limits, Sandbox, require_safe

    sb = Sandbox(Limits(timeout_s=timeout_s))
    require_safe(sb, allow_unsafe)
    return sb

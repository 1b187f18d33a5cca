"""`iclaw eval` (held-out pass@k), `iclaw demo` (the main job), `iclaw bench sample`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer

DB = typer.Option(None, "--db", envvar="ICLAW_DB", help="Trajectory database (default ./trajectories.db).")
UNSAFE = typer.Option(
    False, "--unsafe-no-sandbox", help="Run model-written commands without bubblewrap (dangerous)."
)


def register(app: typer.Typer) -> None:
    app.command("eval", help="Run the agent on tasks and report pass@1 / pass@k overall and per family.")(
        eval_cmd
    )
    app.command(
        "demo",
        help="The end-to-end demo: tiny policy from scratch → SFT → eval → GRPO (β=0.04) → eval, "
        "with an equal-time SFT control. Registers demo-sft and demo. Ctrl-C ends the running phase "
        "(publishing what it trained) and skips the rest.",
    )(demo_cmd)
    from iclaw.commands.arch import bench_app

    bench_app.command("sample", help="Sampler throughput (tokens/s) on a model, batched with the KV cache.")(
        bench_sample
    )


def eval_cmd(
    model: str | None = typer.Option(
        None,
        "--model",
        help="Registry name or checkpoint path (default: $ICLAW_MODEL, else the built-in policy).",
    ),
    tasks: Path | None = typer.Option(None, "--tasks", help="Any JSONL task file."),
    split: str = typer.Option(
        "heldout", "--split", help="Generate tasks of this split when --tasks is not given."
    ),
    n: int = typer.Option(60, "--n", help="How many tasks to generate when --tasks is not given."),
    family: list[str] | None = typer.Option(None, "--family", help="Only these families (repeatable)."),
    k: int = typer.Option(
        1, "-k", help="pass@k; samples k episodes per task (temperature must then be > 0)."
    ),
    temperature: float | None = typer.Option(
        None, "--temperature", help="Default: 0 (greedy) for k=1, 0.8 otherwise."
    ),
    max_turns: int = typer.Option(2, "--max-turns"),
    oracle: bool = typer.Option(
        False, "--oracle", help="Submit each task's reference (verifier sanity check)."
    ),
    broken: bool = typer.Option(
        False, "--broken", help="Submit each task's broken command (should score 0)."
    ),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON report."),
    device: str | None = typer.Option(None, "--device"),
    db: Path | None = DB,
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from rich.console import Console

    from iclaw.errors import IclawError
    from iclaw.tasks import Verifier, fill_errors, generate, load_tasks
    from iclaw.train.common import live_progress, safe_sandbox

    if oracle and broken:
        raise IclawError("--oracle and --broken are exclusive")
    if not (oracle or broken) and model is None:
        from iclaw.model.registry import DEFAULT_MODEL

        model = os.environ.get("ICLAW_MODEL") or DEFAULT_MODEL  # the built-in policy unless configured
    if k < 1:
        raise IclawError(f"-k: must be >= 1, got {k}")
    temp = temperature if temperature is not None else (0.0 if k == 1 else 0.8)
    if k > 1 and temp == 0:
        raise IclawError("-k > 1 needs --temperature > 0 (greedy samples are all the same)")
    sandbox = safe_sandbox(unsafe_no_sandbox)
    if model is not None and not (oracle or broken):
        from iclaw.model import registry

        registry.resolve(model)
    if tasks is not None:
        task_list = load_tasks(tasks)
        if family:
            task_list = [t for t in task_list if t.family in family]
        # A hand-written task's broken command runs first, so its first turn shows the real output.
        fill_errors(task_list, sandbox, where=str(tasks))
    else:
        task_list = generate(n, split=split, seed=seed, families=family, sandbox=sandbox)
    if not task_list:
        raise IclawError(f"{tasks}: no tasks to evaluate")
    verifier = Verifier(sandbox)
    console = Console(highlight=False, stderr=as_json)
    with live_progress(len(task_list), "eval", enabled=not as_json) as progress:
        if oracle or broken:
            from iclaw.agent.evaluate import evaluate_fixed

            cands = [(t.reference or t.solution) if oracle else t.broken for t in task_list]
            report = evaluate_fixed(task_list, cands, verifier=verifier, progress=lambda m: progress(m))
        else:
            from iclaw.agent.episode import EpisodeConfig
            from iclaw.agent.evaluate import evaluate
            from iclaw.agent.policy import Policy
            from iclaw.store import Store

            policy = Policy.load(model, device=device)
            with Store(db) as store:
                report = evaluate(
                    policy,
                    task_list,
                    sandbox=sandbox,
                    verifier=verifier,
                    k=k,
                    seed=seed,
                    store=store,
                    cfg=EpisodeConfig(max_turns=max_turns, temperature=temp),
                    progress=lambda m: progress(m),
                )
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
        return
    from rich.table import Table

    t = Table(
        title=f"{'oracle' if oracle else 'broken' if broken else model}: {report.tasks} tasks",
        header_style="bold",
    )
    cols = ("family", "tasks", "pass@1") + ((f"pass@{k}",) if k > 1 else ())  # pass@1 once when k = 1
    for c in cols:
        t.add_column(c, justify="right" if c != "family" else "left")
    rows = [(f, r["tasks"], r["pass_at_1"], r["pass_at_k"]) for f, r in report.by_family.items()]
    rows.append(("[bold]overall[/]", report.tasks, report.pass_at_1, report.pass_at_k))
    for f, n, p1, pk in rows:
        t.add_row(f, str(n), f"{p1:.3f}", *((f"{pk:.3f}",) if k > 1 else ()))
    console.print(t)


def demo_cmd(
    sft_steps: int = typer.Option(
        1300,
        "--sft-steps",
        help="SFT warm-up steps (a seed gives the same warm-up on every run that fits them in --sft-minutes).",
    ),
    grpo_steps: int = typer.Option(
        26, "--grpo-steps", help="GRPO steps; the SFT control gets the same time."
    ),
    sft_minutes: float = typer.Option(
        9.0, "--sft-minutes", help="Cap on SFT time (a slow machine stops here)."
    ),
    grpo_minutes: float = typer.Option(3.75, "--grpo-minutes", help="Cap on GRPO time."),
    control: bool = typer.Option(True, "--control/--no-control", help="Run the equal-time SFT control."),
    train_per_family: int = typer.Option(100, "--train-per-family"),
    heldout_per_family: int = typer.Option(12, "--heldout-per-family"),
    max_turns: int = typer.Option(3, "--max-turns"),
    beta: float = typer.Option(0.04, "--beta"),
    sft_coef: float = typer.Option(
        1.0, "--sft-coef", help="PPO-ptx weight: GRPO updates also imitate the warm-up's demonstrations."
    ),
    curriculum: bool = typer.Option(
        False,
        "--curriculum",
        help="GRPO draws tasks more often from families whose groups have had reward variance.",
    ),
    seed: int = typer.Option(0, "--seed"),
    family: list[str] = typer.Option(
        None, "--family", "-f", help="Only these task families (repeatable; default: the demo's 19)."
    ),
    out: Path = typer.Option(Path("runs/demo"), "--out", help="Where task files and summary.json go."),
    db: Path | None = DB,
    unsafe_no_sandbox: bool = UNSAFE,
) -> None:
    from iclaw.lab.demo import DemoConfig, run_demo
    from iclaw.train.common import interrupted

    cfg = DemoConfig(
        sft_steps=sft_steps,
        grpo_steps=grpo_steps,
        sft_minutes=sft_minutes,
        grpo_minutes=grpo_minutes,
        control=control,
        max_turns=max_turns,
        train_per_family=train_per_family,
        heldout_per_family=heldout_per_family,
        beta=beta,
        sft_coef=sft_coef,
        curriculum=curriculum,
        seed=seed,
        **({"families": tuple(family)} if family else {}),
        out_dir=str(out),
    )
    interrupted(run_demo(cfg, db=db, allow_unsafe=unsafe_no_sandbox))  # exit 130 after a Ctrl-C


def bench_sample(
    model: str | None = typer.Option(
        None, "--model", help="Registry name or path (default: random --config weights)."
    ),
    config: str = typer.Option(
        "tiny", "--config", help="Preset for random weights when --model is not given."
    ),
    batch: int = typer.Option(8, "--batch"),
    prompt_len: int = typer.Option(64, "--prompt-len"),
    new_tokens: int = typer.Option(64, "--new-tokens"),
    dtype: str = typer.Option(
        "auto", "--dtype", help="auto (bf16 where supported, as the agent samples) | fp32."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    import time

    import torch

    from iclaw.agent.policy import Policy
    from iclaw.model.gpt import GPT, preset

    if model is not None:
        policy = Policy.load(model, fast_sampling=dtype != "fp32")
    else:
        torch.manual_seed(0)
        policy = Policy(GPT(preset(config)), name=config, fast_sampling=dtype != "fp32")
    prompts = torch.randint(0, 50257, (batch, prompt_len)).tolist()
    policy.sample(prompts, 4, seed=0)  # warm-up
    t0 = time.perf_counter()
    s = policy.sample(prompts, new_tokens, temperature=1.0, seed=0)
    dt = time.perf_counter() - t0
    n = sum(len(t) for t in s.tokens)
    res = {
        "tokens_per_s": n / dt,
        "tokens": n,
        "seconds": dt,
        "batch": batch,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "dtype": str(policy.sample_dtype).replace("torch.", ""),
        "device": str(policy.device),
        "threads": torch.get_num_threads(),
    }
    if as_json:
        sys.stdout.write(json.dumps(res) + "\n")
    else:
        print(
            f"{res['tokens_per_s']:.1f} tokens/s ({n} tokens in {dt:.2f}s, batch {batch}, {res['dtype']}, {res['device']})"
        )

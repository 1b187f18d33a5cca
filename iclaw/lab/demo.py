"""`iclaw demo`: the whole loop on a 2-core CPU, from nothing to a policy that GRPO made better.

    tasks   generate train / held-out tasks (every broken command really run in the sandbox)
    SFT     a tiny GPT from scratch imitates the single-turn reference fixes, as whole episodes (fix,
            output, <|done|>; some with `ls` or a failed attempt first)              → registry `demo-sft`
    eval    held-out pass@1 of demo-sft (greedy, multi-turn, verifier in fresh fixtures)
    GRPO    β = 0.04, 3 turns, reward = the verifier, on the multi-turn / outcome-only train tasks and half
            as many single-turn ones; each update also imitates a batch of the warm-up's demonstrations
            (PPO-ptx) so the single-turn skills are not traded away               → registry `demo`
    eval    held-out pass@1 of demo
    control SFT continued from demo-sft for the same wall time as GRPO, on every demonstration there is
            (including the single-turn references of the multi-turn families)        → registry `demo-sft-control`

A first Ctrl-C ends the phase that is running at its next step (a training phase publishes where it stopped,
an evaluation finishes), skips the rest and writes summary.json with what was done; a second stops at once.
During task generation, before anything is trained, Ctrl-C stops the demo at once.

What reward can teach and imitation cannot: families whose fix needs information the prompt does not hold
(`ls` first, then use the real file name) and outcome-only families (a check, no reference fix). There are
no demonstrations of those behaviours, so SFT can only guess; GRPO gets credit whenever an attempt works.
"""

from __future__ import annotations

import random
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from iclaw.files import write_json
from iclaw.train.common import INTERRUPTED, TIME_UP, console, report_table, stop_on_ctrl_c, stop_requested
from iclaw.train.config import GRPOConfig

if TYPE_CHECKING:
    from iclaw.model.gpt import GPT
    from iclaw.train.sft import SFTConfig

DEMO_FAMILIES = tuple(
    """cmd-typo flag-typo quote pipe file-typo listed-file wrong-file wrong-ext mkdir-exists mkdir-outcome
    py-syntax py-name py-indent py-type py-attr py-file-typo py-listed-file py-wrong-file py-wrong-ext""".split()
)


@dataclass
class DemoConfig:
    train_per_family: int = 100
    heldout_per_family: int = 30  # 570 tasks: enough for a paired interval of a few points
    # budgets in steps, so that a seed gives the same demo-sft on every run and machine (a wall-clock budget
    # made one seed's warm-up 1,010 steps in one run and 966 in the next: 32.9 vs 30.1 held-out); the minutes
    # only cap them on a machine too slow to finish (~4 min each on 2 CPU cores with bf16; the whole demo ~15).
    # What the trimmed vocabulary freed goes to the warm-up: at 1,300 steps the equal-time control still
    # gained 5.2 points on it, while GRPO's dev gain grew only slowly past 26 steps (docs/LOG.md, 2026-12-02)
    sft_steps: int = 2000
    # 90, not 30: from the Muon warm-up, dev's multi-turn / outcome-only families gained +16 by step 30, +26 by
    # 90, +28 by 120 (overall +1.1, +3.7, +3.7); 90 spends what the 20 minutes had left (docs/LOG.md, 2026-12-04)
    grpo_steps: int = 90
    sft_minutes: float = 9.0
    grpo_minutes: float = 6.0
    control: bool = True  # equal-time SFT control
    # GRPO's pool: single-turn tasks per multi-turn / outcome-only one (grpo_pool); on dev 1.0 and a PPO-ptx
    # coefficient of 2 both did worse at 90 steps (docs/LOG.md, 2026-12-04)
    grpo_single_share: float = 0.5
    # The GRPO phase is GRPOConfig's (train/config.py: the settings that trained the shipped policy), from
    # demo-sft, for the steps and minutes above, with these fields changed (`iclaw demo --beta, --sft-coef,
    # --max-turns` set theirs here): turns of 48 tokens, enough for the 19 families' fixes
    grpo: dict = field(default_factory=lambda: {"max_new_tokens": 48})
    sft_lr: float = 2e-3
    # Muon, not AdamW: on dev (190 tasks, seed 0) demo-sft 39.5 vs 32.1 %, +7.4 [+2.6, +12.6] paired, and GRPO
    # from it gained +16 on the hard families where from AdamW's it gained 0 (docs/LOG.md, 2026-12-04)
    sft_optimizer: str = "muon"
    # fractions of demonstrations also shown as "ls, then the fix" and as "a failed attempt, then the fix"
    # (train/sft.py): every demonstration ends with the fix's real output and <|done|>
    look_first: float = 0.75
    retry: float = 0.25
    seed: int = 0
    # the demo's environment: the first 19 families (the 20-minute budget; `-f` picks others, `--all-families`
    # every one). The shipped policy's recipe (train/recipe.py) trains on all of them.
    families: tuple[str, ...] | None = DEMO_FAMILIES
    out_dir: str = "runs/demo"
    preset: str = "tiny"


def hard_families(tasks: list) -> list[str]:
    """The families only reward can teach: multi-turn (look first) or outcome-only (no reference fix)."""
    return sorted({t.family for t in tasks if t.multi_turn or t.reference is None})


def grpo_pool(train: list, hard: list[str], seed: int, single_share: float) -> list:
    """GRPO trains where the demonstrations stop: every multi-turn / outcome-only task (only reward says what
    works there) and `single_share` times as many single-turn tasks, drawn across their families. Measured (one
    run each): a hard-only pool teaches "ls first" everywhere, and the fixes written after a listing are worse on
    single-turn families (33.3 -> 30.7 % overall in a probe; +8.3 on the hard families in a full demo); half as
    many single-turn tasks gave +13.3 there (two seeds); as many (in a run with other lr and look-first) +5.0."""
    hard_tasks = [t for t in train if t.family in hard]
    rest = [t for t in train if t.family not in hard]
    n_single = min(len(rest), int(len(hard_tasks) * single_share))
    return hard_tasks + random.Random(seed).sample(rest, n_single)


def warm_up_model(cfg: DemoConfig, demos: list, device: str | torch.device) -> GPT:
    """The SFT warm-up's model: a `cfg.preset` GPT from scratch whose rows are the ids the demonstrations use."""
    from iclaw.model.gpt import GPT, preset
    from iclaw.model.vocab import Vocab

    torch.manual_seed(cfg.seed)
    return GPT(preset(cfg.preset), Vocab.build(t for t, _ in demos)).to(device)


def sft_config(cfg: DemoConfig) -> SFTConfig:
    """How the warm-up trains (train/sft.py)."""
    from iclaw.train.sft import SFTConfig

    return SFTConfig(
        lr=cfg.sft_lr,
        batch_size=16,
        steps=cfg.sft_steps,
        minutes=cfg.sft_minutes,
        optimizer=cfg.sft_optimizer,
        seed=cfg.seed,
    )


def grpo_config(cfg: DemoConfig, **where) -> GRPOConfig:
    """How GRPO trains (train/grpo.py), from the registered `demo-sft`; `where` overrides (out, save_every, ...)."""
    run = {"model": "demo-sft", "steps": cfg.grpo_steps, "minutes": cfg.grpo_minutes, "seed": cfg.seed}
    return GRPOConfig(**{**run, **cfg.grpo, **where})


def run_demo(cfg: DemoConfig, *, db: Path | None = None, allow_unsafe: bool = False) -> dict:
    """The demo, start to end. Returns the summary (also written to `out_dir`/summary.json); its `stopped` is
    INTERRUPTED after a first Ctrl-C (see the module docstring)."""
    with ExitStack() as graceful:  # _run_demo enters stop_on_ctrl_c() once there is something to keep
        return _run_demo(cfg, db=db, allow_unsafe=allow_unsafe, graceful=graceful)


def capped(res: dict, phase: str, steps: int, minutes: float, flag: str) -> None:
    """Say so when a phase's minutes cap ended it before its steps: the run differs from the README's."""
    if res.get("stopped") == TIME_UP:
        console.print(
            f"[yellow]{phase} reached its {minutes:g}-minute cap after {res['steps']} of {steps} steps: this "
            f"machine is slower than the one the README's figures come from, so they will differ ({flag} "
            "raises the cap)[/]"
        )


def _run_demo(cfg: DemoConfig, *, db: Path | None, allow_unsafe: bool, graceful: ExitStack) -> dict:
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.evaluate import evaluate, paired_bootstrap
    from iclaw.agent.policy import Policy
    from iclaw.model import registry
    from iclaw.model.gpt import default_device
    from iclaw.store import Store
    from iclaw.tasks import Verifier, generate, save_tasks
    from iclaw.tasks.generate import resolve_families
    from iclaw.train.common import MetricsLog, live_progress, new_run_id, safe_sandbox
    from iclaw.train.grpo import train_grpo
    from iclaw.train.sft import SFTConfig, demonstrations, train_sft

    t_start = time.time()
    g = grpo_config(cfg, out="demo", save_every=5)
    # an unknown family name is an error before anything is written
    fams = [f.name for f in resolve_families(list(cfg.families) if cfg.families else None)]
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sandbox = safe_sandbox(allow_unsafe)
    verifier = Verifier(sandbox)
    dev = default_device()
    store = Store(db)
    console.print(
        f"[bold]iclaw demo[/]  device {dev}  sandbox {sandbox.level}  store {store.path}  out {out}"
    )

    # 1. tasks --------------------------------------------------------------------------------------------
    with live_progress(len(fams) * (cfg.train_per_family + cfg.heldout_per_family), "tasks") as progress:
        train = generate(
            cfg.train_per_family * len(fams),
            split="train",
            seed=cfg.seed,
            families=fams,
            sandbox=sandbox,
            progress=lambda n=1: progress(n),
        )
        heldout = generate(
            cfg.heldout_per_family * len(fams),
            split="heldout",
            seed=cfg.seed,
            families=fams,
            sandbox=sandbox,
            progress=lambda n=1: progress(n),
        )
    save_tasks(train, out / "train.jsonl")
    save_tasks(heldout, out / "heldout.jsonl")
    hard = hard_families(train)
    console.print(
        f"{len(train)} train / {len(heldout)} held-out tasks in {len(fams)} families; "
        f"multi-turn or outcome-only: {', '.join(hard)}"
    )

    # from here on a first Ctrl-C ends the running phase and keeps what it trained (until here it stops at once)
    graceful.enter_context(stop_on_ctrl_c())
    reports: dict = {}  # held-out evaluations, in the order they ran
    published: list[str] = []

    def hard_mean(r) -> float:
        vals = [r.by_family[f]["pass_at_1"] for f in hard if f in r.by_family]
        return sum(vals) / max(1, len(vals))

    def finish(sft: dict | None = None, grpo: dict | None = None, control: dict | None = None) -> dict:
        """Report what ran -- all of it, or what there was when a Ctrl-C stopped the demo -- and write it."""
        if reports:
            title = f"held-out pass@1 (%) by family, greedy, max_turns {g.max_turns}"
            console.print(report_table(title, reports))
        base, after = reports.get("demo-sft"), reports.get("demo (GRPO)")
        summary = {
            "config": asdict(cfg),
            "seconds": time.time() - t_start,
            "stopped": INTERRUPTED if stop_requested() else None,
            "published": published,
            "families_hard": hard,
            "pass_at_1": {k: r.pass_at_1 for k, r in reports.items()},
            "hard_pass_at_1": {k: hard_mean(r) for k, r in reports.items()},
            "sft": sft,
            "grpo": grpo and {k: v for k, v in grpo.items() if k != "history"},
            "grpo_max_kl": grpo and max((h["kl"] for h in grpo["history"]), default=0.0),
            "control": control,
            "reports": {k: r.to_dict() for k, r in reports.items()},
        }
        if base and after:
            summary["delta_overall_points"] = 100 * (after.pass_at_1 - base.pass_at_1)
            summary["delta_hard_points"] = 100 * (hard_mean(after) - hard_mean(base))
        # paired bootstrap 95 % intervals over the held-out tasks (the same tasks and seed on both sides)
        pairs = [("demo − demo-sft", base, after), ("demo − control", reports.get("SFT control"), after)]
        summary["intervals"] = {}
        for label, a, b in pairs:
            if a and b:
                summary["intervals"][label] = {
                    "overall": paired_bootstrap(a, b),
                    "multi-turn/outcome-only": paired_bootstrap(a, b, families=set(hard)),
                }
                for part, iv in summary["intervals"][label].items():
                    console.print(
                        f"{label}, {part}: {iv['delta']:+.1f} points, 95 % interval [{iv['lo']:+.1f}, "
                        f"{iv['hi']:+.1f}] over {iv['tasks']} tasks"
                    )
        write_json(out / "summary.json", summary)
        store.close()
        if summary["stopped"]:
            console.print(
                f"Ctrl-C: the demo stopped after {summary['seconds'] / 60:.1f} min; published: "
                f"{', '.join(published) or 'nothing'}. Summary: {out / 'summary.json'}"
            )
            if published:
                console.print(
                    f"evaluate one: iclaw eval --model {published[-1]} --tasks {out / 'heldout.jsonl'}"
                )
        else:
            console.print(
                f"GRPO: {summary['delta_overall_points']:+.1f} points overall, {summary['delta_hard_points']:+.1f} "
                f"on multi-turn/outcome-only families; max KL {summary['grpo_max_kl']:.4f} (limit {g.kl_max}); "
                f"total {summary['seconds'] / 60:.1f} min. Summary: {out / 'summary.json'}"
            )
        return summary

    # 2. SFT on the single-turn demonstrations that exist ---------------------------------------------------
    single = [t for t in train if t.reference and not t.multi_turn]
    demos = demonstrations(single, sandbox, look_first=cfg.look_first, retry=cfg.retry, seed=cfg.seed)
    model = warm_up_model(cfg, demos, dev)
    sft_cfg = sft_config(cfg)
    run_id = new_run_id("demo-sft")
    log = MetricsLog(run_id, store, out.parent)
    console.print(
        f"SFT: {len(demos)} single-turn demonstrations, {cfg.sft_steps} steps (at most {cfg.sft_minutes:g} min), "
        f"{model.num_params() / 1e6:.1f}M params"
    )
    with live_progress(cfg.sft_steps, "SFT → demo-sft") as progress:
        sft_res = train_sft(model, demos, sft_cfg, device=dev, progress=progress, log=log.log)
    if sft_res["steps"] == 0:  # Ctrl-C before the first step: an untrained model is not worth a name
        return finish(sft=sft_res)
    capped(sft_res, "SFT", cfg.sft_steps, cfg.sft_minutes, "--sft-minutes")
    fmt = {"look_first": cfg.look_first, "retry": cfg.retry}  # how the demonstrations looked (train/sft.py)
    meta = {"source": f"demo:{run_id}", "step": sft_res["steps"], "demonstrations": fmt}
    registry.publish("demo-sft", model, meta=meta)
    published.append("demo-sft")
    if stop_requested():
        return finish(sft=sft_res)

    ep_eval = EpisodeConfig(max_turns=g.max_turns, temperature=0.0)

    def held_out(name: str):
        pol = Policy.load(name, device=dev)
        with live_progress(len(heldout), f"eval {name}") as progress:
            return evaluate(
                pol,
                heldout,
                sandbox=sandbox,
                verifier=verifier,
                cfg=ep_eval,
                store=store,
                progress=lambda n: progress(n),
            )

    reports["demo-sft"] = held_out("demo-sft")
    console.print(f"demo-sft held-out pass@1: {reports['demo-sft'].pass_at_1:.3f}")
    if stop_requested():
        return finish(sft=sft_res)

    # 3. GRPO with the KL term ----------------------------------------------------------------------------
    pool = grpo_pool(train, hard, cfg.seed, cfg.grpo_single_share)
    grpo = train_grpo(
        g,
        pool,
        sandbox=sandbox,
        verifier=verifier,
        store=store,
        device=str(dev),
        log_dir=str(out.parent),
        demos=demos,
    )
    published.append("demo")
    capped(grpo, "GRPO", cfg.grpo_steps, cfg.grpo_minutes, "--grpo-minutes")
    if stop_requested():  # GRPO published where it stopped (train/grpo.py)
        return finish(sft=sft_res, grpo=grpo)
    reports["demo (GRPO)"] = held_out("demo")
    if stop_requested():
        return finish(sft=sft_res, grpo=grpo)

    # 4. the equal-time SFT control -----------------------------------------------------------------------
    control_res = None
    if cfg.control:
        # every demonstration there is: the warm-up's, plus the single-turn references of the multi-turn
        # families (which cannot teach what to do with a listing: in a new fixture the suffix differs)
        multi = [t for t in train if t.reference and t.multi_turn]
        all_demos = demos + demonstrations(multi, sandbox)
        ctl, _ = registry.load("demo-sft", device=dev)
        grpo_seconds = grpo["seconds"]
        c_cfg = SFTConfig(
            lr=cfg.sft_lr * 0.3,
            warmup=0,
            steps=None,
            minutes=grpo_seconds / 60,
            optimizer=cfg.sft_optimizer,  # SFT continued as it was trained
            seed=cfg.seed + 1,
        )
        with live_progress(int(grpo_seconds), "SFT control → demo-sft-control") as progress:
            control_res = train_sft(ctl, all_demos, c_cfg, device=dev, progress=progress)
        if control_res["steps"]:  # (none when a Ctrl-C came before its first step)
            registry.publish(
                "demo-sft-control", ctl, meta={"source": "demo:control", "step": control_res["steps"]}
            )
            published.append("demo-sft-control")
        if not stop_requested():
            reports["SFT control"] = held_out("demo-sft-control")
    return finish(sft=sft_res, grpo=grpo, control=control_res)

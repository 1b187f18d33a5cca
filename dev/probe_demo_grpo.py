"""How far the demo's GRPO phase goes in steps, on the dev split (what tuning decisions may look at).

    iclaw demo --out runs/demo                                  # first: demo-sft and the train tasks
    python dev/probe_demo_grpo.py --tasks-dir runs/demo --steps 60 --every 15
    python dev/probe_demo_grpo.py --sft muon --tasks-dir runs/probe  # its own warm-up, by Muon
    python dev/probe_demo_grpo.py --set sft_coef=2 --set grpo_single_share=1  # other GRPO settings
    python dev/probe_demo_grpo.py --ptx look-first  # PPO-ptx on "ls, then the fix" demonstrations only

GRPO exactly as the demo runs it (its GRPOConfig, task pool and ptx demonstrations) from the registered
`demo-sft`, resumed every --every steps; after each stretch the checkpoint is evaluated greedily on dev tasks
of the demo's families (10 per family, generated with the demo's seed; the dev split never overlaps train or
held-out). Prints one line per checkpoint with the paired-bootstrap interval against demo-sft; --out keeps them.
With --sft OPTIMIZER it first trains and registers its own demo-sft as the demo does (same data, body, lr and
steps) but with that optimizer, generating the demo's train tasks into --tasks-dir if they are not there; give
each such run its own ICLAW_HOME, since it replaces the registered demo-sft.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate, paired_bootstrap
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.lab.demo import (
    DEMO_FAMILIES,
    DemoConfig,
    grpo_config,
    grpo_pool,
    hard_families,
    sft_config,
    warm_up_model,
)
from iclaw.model import registry
from iclaw.model.gpt import default_device
from iclaw.tasks import Verifier, generate, load_tasks, save_tasks
from iclaw.train.common import safe_sandbox
from iclaw.train.config import GRPOConfig
from iclaw.train.grpo import train_grpo
from iclaw.train.sft import demonstrations, train_sft


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--tasks-dir", type=Path, default=Path("runs/demo"), help="where the demo wrote train.jsonl"
    )
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--every", type=int, default=15, help="evaluate after every this many steps")
    ap.add_argument("--dev-per-family", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("runs/probe-demo-grpo.json"))
    ap.add_argument("--sft", choices=["adamw", "muon"], help="train demo-sft here first, by this optimizer")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change one DemoConfig field, or one of its GRPO phase's (GRPOConfig), for this probe (repeatable), "
        "e.g. sft_coef=2",
    )
    ap.add_argument(
        "--ptx",
        choices=["warm-up", "look-first"],
        default="warm-up",
        help="PPO-ptx imitates the warm-up's demonstrations (the demo's), or only their 'ls, then the fix' forms",
    )
    args = ap.parse_args()
    cfg = DemoConfig()
    for item in args.set:
        field, _, value = item.partition("=")
        where = cfg if hasattr(cfg, field) else grpo_config(cfg) if hasattr(GRPOConfig, field) else None
        if where is None:
            ap.error(f"--set {item}: neither DemoConfig nor GRPOConfig has a field {field!r}")
        kind = type(getattr(where, field))
        value = value.lower() in ("1", "true") if kind is bool else kind(value)
        cfg = (
            replace(cfg, **{field: value}) if where is cfg else replace(cfg, grpo={**cfg.grpo, field: value})
        )
    sandbox = safe_sandbox(False)
    verifier = Verifier(sandbox)
    fams = list(cfg.families or DEMO_FAMILIES)
    if not (args.tasks_dir / "train.jsonl").exists() and args.sft:
        tasks = generate(
            cfg.train_per_family * len(fams), "train", seed=cfg.seed, families=fams, sandbox=sandbox
        )
        save_tasks(tasks, args.tasks_dir / "train.jsonl")
    train = load_tasks(args.tasks_dir / "train.jsonl")
    dev = generate(
        args.dev_per_family * len(fams), split="dev", seed=cfg.seed, families=fams, sandbox=sandbox
    )
    save_tasks(dev, args.tasks_dir / "dev.jsonl")  # for compare_policies.py between runs
    hard = hard_families(train)
    single = [t for t in train if t.reference and not t.multi_turn]
    demos = demonstrations(single, sandbox, look_first=cfg.look_first, retry=cfg.retry, seed=cfg.seed)
    pool = grpo_pool(train, hard, cfg.seed, cfg.grpo_single_share)
    ptx = demos
    if args.ptx == "look-first":  # GRPO opens most single-turn episodes with `ls`: imitate the fix after one
        ptx = demonstrations(single, sandbox, look_first=1.0, seed=cfg.seed)[len(single) :]
    ep = EpisodeConfig(max_turns=grpo_config(cfg).max_turns, temperature=0.0)
    if args.sft:  # the demo's warm-up (lab/demo.py), only the optimizer differs
        cfg = replace(cfg, sft_optimizer=args.sft)
        model = warm_up_model(cfg, demos, default_device())
        res = train_sft(model, demos, sft_config(cfg), device=default_device())
        fmt = {"look_first": cfg.look_first, "retry": cfg.retry}
        registry.publish(
            "demo-sft",
            model,
            meta={"source": f"probe_demo_grpo:{args.sft}", "step": res["steps"], "demonstrations": fmt},
        )
        print(
            json.dumps(
                {"sft": args.sft, "steps": res["steps"], "seconds": res["seconds"], "loss": res["loss"]}
            )
        )

    def dev_eval(name: str):
        return evaluate(Policy.load(name), dev, sandbox=sandbox, verifier=verifier, cfg=ep)

    def hard_mean(r) -> float:
        return 100 * sum(r.by_family[f]["pass_at_1"] for f in hard) / len(hard)

    base = dev_eval("demo-sft")
    rows = [{"step": 0, "dev": 100 * base.pass_at_1, "dev_hard": hard_mean(base), "grpo_seconds": 0.0}]
    print(json.dumps(rows[-1]), flush=True)
    seconds = 0.0
    for upto in range(args.every, args.steps + 1, args.every):
        g = grpo_config(cfg, out="probe-grpo", steps=upto, minutes=None, save_every=args.every)
        res = train_grpo(
            g,
            pool,
            sandbox=sandbox,
            verifier=verifier,
            resume=upto > args.every,
            show_progress=False,
            demos=ptx,
        )
        seconds += res["seconds"]
        r = dev_eval("probe-grpo")
        rows.append(
            {
                "step": upto,
                "dev": 100 * r.pass_at_1,
                "dev_hard": hard_mean(r),
                "grpo_seconds": seconds,
                "delta": paired_bootstrap(base, r),
                "delta_hard": paired_bootstrap(base, r, families=set(hard)),
                "stopped": res["stopped"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        write_json(args.out, rows)


if __name__ == "__main__":
    main()

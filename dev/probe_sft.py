"""SFT of a from-scratch policy, arms at equal steps: which optimizer learns most per step, and does practice
at spelled-out words or made-up names make it handle words its corpus never had?

    python dev/probe_sft.py --arms adamw:2e-3,muon:2e-3 --train-per-family 60 --steps 1200
    python dev/probe_sft.py --arms adamw:2e-3,adamw:2e-3:0.1      # SFTConfig.spell 0 vs 0.1
    python dev/probe_sft.py --arms muon:2e-3:0.05,muon:2e-3:0.05:0.3   # RecipeConfig.novel 0 vs 0.3
    python dev/probe_sft.py --init iclaw-small --arms adamw:3e-4:0.05:0.3 --publish iclaw-hints  # continued

The shipped policy's failures are mostly copies gone wrong (a dict key, a number, a file name from the prompt
comes out as another one the model has seen), which is what an under-trained small transformer does. An arm is
OPTIMIZER:LR[:SPELL[:NOVEL]] (adamw, or muon: Muon on the hidden matrices, AdamW on embeddings and vectors;
train/optim.py; SPELL is SFTConfig.spell, default 0; NOVEL the share of train tasks also shown with made-up
names, RecipeConfig.novel, default 0).
Every arm trains the recipe's body (preset small, rope) from the same seed on the same demonstrations of every
family for the same number of steps, then pass@1 on the dev split (greedy, 3 turns: tuning looks at dev, never
at held-out), paired bootstrap against the first arm; and pass@1 on "novel names": the dev tasks with their
pool words renamed to made-up ones (tasks/novel.py), as the names of a user's own files are. Writes --out.

--init NAME continues a registered policy instead (its own body and vocabulary): the first arm is then NAME
itself, untrained, so every arm is paired against its start -- e.g. the shipped policy shown the demonstrations
as they are now, with the hint line (iclaw/tools/hints.py) its own recipe never had. An arm ending in @NAME
starts from NAME alone, unscored (`muon:2e-3:0.05:0.3,muon:2e-3:0.05:0.3@shellpy-small`: from scratch against
from a pretrained base, issue #60). --publish NAME registers the last arm's model, NAME,NAME... one per arm,
for benchmarks/compare_policies.py and bench_thefuck.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time
from pathlib import Path

import torch

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate, paired_bootstrap
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.model import registry
from iclaw.model.gpt import GPT, default_device, preset
from iclaw.model.vocab import Vocab
from iclaw.tasks import FAMILIES, Verifier, generate
from iclaw.tasks.novel import novel_tasks
from iclaw.train.common import console, report_table, safe_sandbox
from iclaw.train.config import GRPOConfig
from iclaw.train.recipe import RecipeConfig, recipe_demos
from iclaw.train.sft import SFTConfig, train_sft


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", default="adamw:2e-3,muon:2e-3", help="OPTIMIZER:LR[:SPELL], comma-separated")
    ap.add_argument("--train-per-family", type=int, default=60)
    ap.add_argument("--dev-per-family", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/probe-sft.json")
    ap.add_argument("--init", help="continue this registered policy (default: from scratch)")
    ap.add_argument(
        "--publish", help="register the last arm's model under this name (NAME,NAME...: each arm's)"
    )
    args = ap.parse_args()

    rc = RecipeConfig()
    dev = default_device()
    sandbox = safe_sandbox(False)
    verifier = Verifier(sandbox)
    t0 = time.time()
    n_fam = len(FAMILIES)
    train = generate(args.train_per_family * n_fam, "train", seed=args.seed, sandbox=sandbox)
    held = generate(args.dev_per_family * n_fam, "dev", seed=args.seed, sandbox=sandbox)
    demos = recipe_demos(train, sandbox, dataclasses.replace(rc, seed=args.seed))
    renamed_dev = novel_tasks(held, sandbox, args.seed)
    console.print(
        f"{len(train)} train tasks, {len(demos)} demonstrations, {len(held)} dev tasks, "
        f"{len(renamed_dev)} with novel names ({time.time() - t0:.0f} s)"
    )
    ep = EpisodeConfig(
        max_turns=GRPOConfig.max_turns, max_new_tokens=GRPOConfig.max_new_tokens, temperature=0.0
    )
    vocab = Vocab.build(t for t, _ in demos)
    reports, unseen, result = {}, {}, {"args": vars(args), "arms": {}}
    arms = args.arms.split(",")
    names = args.publish.split(",") if args.publish else []
    if len(names) > len(arms):
        raise SystemExit(f"--publish: {len(names)} names for {len(arms)} arms")
    names = [None] * (len(arms) - len(names)) + names  # one name: the last arm's
    if args.init:  # the start itself, scored first: every arm is paired against it
        start = Policy.load(args.init, device=dev)
        reports[args.init] = evaluate(start, held, sandbox=sandbox, verifier=verifier, cfg=ep)
        unseen[args.init] = evaluate(start, renamed_dev, sandbox=sandbox, verifier=verifier, cfg=ep)
        result["arms"][args.init] = {
            "dev": reports[args.init].to_dict(),
            "novel": unseen[args.init].to_dict(),
        }
    for k, arm in enumerate(arms):
        spec, _, init = arm.partition("@")
        init = init or args.init
        opt, lr, *extra = spec.split(":")
        spell, share = (float(x) for x in (extra + ["0", "0"])[:2])
        pick = random.Random(f"novel:{args.seed}")
        copies = novel_tasks([t for t in train if pick.random() < share], sandbox, args.seed) if share else []
        more = recipe_demos(copies, sandbox, dataclasses.replace(rc, seed=args.seed))
        torch.manual_seed(args.seed)
        if init:
            model = registry.load(init, device=dev)[0]
        else:
            model = GPT(preset(rc.preset, pos=rc.pos), Vocab(vocab.ids)).to(dev)
        cfg = SFTConfig(
            lr=float(lr),
            batch_size=rc.batch_size,
            steps=args.steps,
            seed=args.seed,
            optimizer=opt,
            spell=spell,
        )
        sft = train_sft(model, demos + more, cfg, device=dev)
        pol = Policy(model, name=arm, device=dev)
        reports[arm] = evaluate(pol, held, sandbox=sandbox, verifier=verifier, cfg=ep)
        unseen[arm] = evaluate(pol, renamed_dev, sandbox=sandbox, verifier=verifier, cfg=ep)
        result["arms"][arm] = {"sft": sft, "dev": reports[arm].to_dict(), "novel": unseen[arm].to_dict()}
        console.print(
            f"{arm}: {len(more)} demonstrations with made-up names; {sft['steps']} steps in "
            f"{sft['seconds']:.0f} s, loss {sft['loss']:.3f}; dev {100 * reports[arm].pass_at_1:.1f} %, "
            f"novel names {100 * unseen[arm].pass_at_1:.1f} %"
        )
        if name := names[k]:
            registry.publish(name, model, meta={"source": f"dev/probe_sft.py {arm}", "parent": init})
            console.print(f"published {name}")
    first, *rest = list(reports)
    console.print(report_table("dev pass@1 (%), greedy, 3 turns", reports))
    for arm in rest:
        for what, reps in (("dev", reports), ("novel", unseen)):
            g = result["arms"][arm][f"{what}_minus_first"] = paired_bootstrap(reps[first], reps[arm])
            console.print(
                f"{what}: {arm} - {first}: {g['delta']:+.1f} points, [{g['lo']:+.1f}, {g['hi']:+.1f}]"
            )
    write_json(Path(args.out), result)


if __name__ == "__main__":
    main()

"""What the typo families lack: letters, or distinct examples? Two SFT arms, same body, same wall clock (CPU).

    iclaw train recipe                                   # first: its task files (or any train/heldout pair)
    python benchmarks/probe_bytes.py --tasks-dir runs/recipe --arms bpe:200,bytes:200 --minutes 7
    python benchmarks/probe_bytes.py --arms bpe:200,bpe:600 --minutes 7          # more distinct tasks

A misspelling splits into BPE pieces that share nothing with the right word (`sotr` is `s` + `otr`, `sort`
is one id), so a policy trained from scratch on GPT-2 ids may only be able to memorise typo -> word pairs; spelled
as bytes, `sotr` and `sort` share every letter. Or the policy simply has too few distinct tasks to learn from.
An arm is TOKENS:N, N train tasks per family of the chosen families (the recipe's file when it has enough,
else generated with the same seed, whose first tasks are the recipe's):

- bpe:   the trimmed vocabulary the recipe uses (every GPT-2 id of the arm's demonstrations, plus the bytes)
- bytes: the 256 byte tokens and the markers only (nothing but letters; sequences are ~2.3x longer)

Both arms train the same tiny body from scratch for --minutes on whole-episode demonstrations, then pass@1
(greedy, 3 turns) on those families' held-out tasks, with a paired bootstrap interval. Writes --out (JSON).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.evaluate import evaluate, paired_bootstrap
from iclaw.agent.policy import Policy
from iclaw.files import write_json
from iclaw.model.gpt import GPT, default_device, preset
from iclaw.model.vocab import Vocab
from iclaw.tasks import Verifier, generate, load_tasks
from iclaw.train.common import console, report_table, safe_sandbox
from iclaw.train.sft import SFTConfig, demonstrations, train_sft

TYPO_FAMILIES = "cmd-typo,file-typo,flag-typo,name-case,cd-typo,and-typo,long-opt-dash,missing-space"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks-dir", default="runs/recipe", help="the recipe's train.jsonl")
    ap.add_argument(
        "--arms", default="bpe:200,bytes:200", help="two TOKENS:N (bpe or bytes, tasks per family)"
    )
    ap.add_argument("--families", default=TYPO_FAMILIES)
    ap.add_argument("--heldout-per-family", type=int, default=40)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--minutes", type=float, default=8.0, help="SFT wall clock per arm")
    ap.add_argument("--block-size", type=int, default=1024, help="bytes make longer sequences")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/probe-bytes.json")
    args = ap.parse_args()

    dev = default_device()
    sandbox = safe_sandbox(False)
    verifier = Verifier(sandbox)
    fams = args.families.split(",")
    # a bigger held-out draw than the recipe's 15 per family: same seed, so the recipe's tasks come first
    heldout = generate(
        args.heldout_per_family * len(fams), "heldout", seed=args.seed, families=fams, sandbox=sandbox
    )
    recipe = [t for t in load_tasks(Path(args.tasks_dir) / "train.jsonl") if t.family in fams]
    arms = {}
    for arm in args.arms.split(","):
        kind, n = arm.split(":")
        if sum(t.family == fams[0] for t in recipe) >= int(n):
            train = recipe[: int(n) * len(fams)]  # the file interleaves families: a prefix is balanced
        else:
            train = generate(int(n) * len(fams), "train", seed=args.seed, families=fams, sandbox=sandbox)
        single = [t for t in train if t.reference and not t.multi_turn]
        demos = demonstrations(single, sandbox, look_first=0.15, retry=0.25, seed=args.seed)
        # bytes: 8, so no BPE ids come in as padding
        vocab = Vocab.build(t for t, _ in demos) if kind == "bpe" else Vocab.build([], multiple=8)
        arms[arm] = (vocab, demos)
        console.print(f"{arm}: {len(train)} train tasks, {len(demos)} demonstrations")
    console.print(f"{len(heldout)} held-out tasks, families {fams}")
    reports, result = {}, {"args": vars(args), "arms": {}}
    for name, (vocab, demos) in arms.items():
        torch.manual_seed(args.seed)
        model = GPT(preset(args.preset, pos="rope", block_size=args.block_size), vocab).to(dev)
        lengths = [len(model.fit(t)) for t, _ in demos]
        t0 = time.time()
        sft = train_sft(
            model,
            demos,
            SFTConfig(lr=2e-3, batch_size=16, steps=None, minutes=args.minutes, seed=args.seed),
            device=dev,
        )
        # about the same characters per turn: a BPE token is ~2.3 bytes here, 3x leaves room
        ep = EpisodeConfig(
            max_turns=3, max_new_tokens=160 if name.startswith("bpe") else 480, temperature=0.0
        )
        pol = Policy(model, name=name, device=dev)
        reports[name] = evaluate(pol, heldout, sandbox=sandbox, verifier=verifier, cfg=ep)
        result["arms"][name] = {
            "rows": len(vocab),
            "params": model.num_params(),
            "mean_demo_tokens": sum(lengths) / len(lengths),
            "max_demo_tokens": max(lengths),
            "sft": sft,
            "seconds": time.time() - t0,
            "report": reports[name].to_dict(),
        }
        console.print(
            f"{name}: {len(vocab)} rows, {model.num_params() / 1e6:.2f}M params, demo tokens mean "
            f"{sum(lengths) / len(lengths):.0f} max {max(lengths)}; SFT {sft['steps']} steps, loss {sft['loss']:.3f}; "
            f"held-out {100 * reports[name].pass_at_1:.1f} %"
        )
    a, b = list(reports)
    result["second_minus_first"] = g = paired_bootstrap(reports[a], reports[b])
    console.print(report_table("held-out pass@1 (%), greedy, 3 turns", reports))
    console.print(f"{b} - {a}: {g['delta']:+.1f} points, 95 % interval [{g['lo']:+.1f}, {g['hi']:+.1f}]")
    write_json(Path(args.out), result)


if __name__ == "__main__":
    main()

"""A trimmed vocabulary against GPT-2's full 50,304 rows: the same body, the same data, one run.

    python benchmarks/bench_vocab.py                 # tiny body (4 x 128), 19+ families, ~4 min on 2 cores
    python benchmarks/bench_vocab.py --preset tiny --grpo-steps 3

Measures, for each vocabulary: parameters, an SFT step (batch 16 of the demo's demonstrations), sampling
tokens/s through `Policy` (64 prompts, 32 new tokens at T = 1, as a GRPO rollout samples), and a whole GRPO
step (rollout in the sandbox, scoring, KL reference, update) on the same tasks. Prints each figure and the
ratio full / trimmed. Weights are random or briefly trained; speed does not depend on what they are.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--tasks", type=int, default=400, help="generated train tasks (demonstrations)")
    ap.add_argument("--sft-steps", type=int, default=20)
    ap.add_argument("--grpo-steps", type=int, default=3)
    args = ap.parse_args()
    os.environ["ICLAW_HOME"] = tempfile.mkdtemp(prefix="iclaw-bench-vocab-")  # a private registry

    from iclaw.agent.policy import Policy
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, bf16_supported, preset
    from iclaw.model.vocab import Vocab
    from iclaw.tasks import Verifier, generate
    from iclaw.tools.sandbox import Limits, Sandbox
    from iclaw.train.grpo import GRPOConfig, train_grpo
    from iclaw.train.sft import SFTConfig, demonstrations, train_sft

    sandbox = Sandbox(Limits(timeout_s=5.0))
    tasks = generate(args.tasks, "train", seed=0, sandbox=sandbox)
    demos = demonstrations([t for t in tasks if t.reference], sandbox, look_first=0.75, retry=0.25)
    vocab = Vocab.build(t for t, _ in demos)
    print(f"{len(tasks)} tasks, {len(demos)} demonstrations; trimmed vocabulary {len(vocab)} rows")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, bf16 {bf16_supported('cpu')}")

    results: dict[str, dict] = {}
    for name, v in (("full", None), ("trimmed", vocab)):
        torch.manual_seed(0)
        model = GPT(preset(args.preset), v)
        r = results.setdefault(name, {"params": model.num_params()})
        train_sft(model, demos, SFTConfig(steps=3, batch_size=16, lr=2e-3), device="cpu")  # warm up
        t0 = time.time()
        train_sft(model, demos, SFTConfig(steps=args.sft_steps, batch_size=16, lr=2e-3, seed=1), device="cpu")
        r["sft_ms"] = 1000 * (time.time() - t0) / args.sft_steps

        policy = Policy(model, device="cpu")
        prompts = [model.fit(d[0][: d[1].index(1)]) for d in demos[:64]]
        policy.sample(prompts[:8], 4, temperature=1.0, seed=0)
        t0 = time.time()
        s = policy.sample(prompts, 32, temperature=1.0, seed=0)
        r["sample_tok_s"] = sum(len(x) for x in s.tokens) / (time.time() - t0)

        registry.publish(f"bench-{name}", model, meta={"source": "bench"})
        g = GRPOConfig(
            model=f"bench-{name}",
            out=f"bench-{name}-grpo",
            steps=args.grpo_steps,
            max_turns=3,
            save_every=1000,
        )
        res = train_grpo(g, tasks, sandbox=sandbox, verifier=Verifier(sandbox), device="cpu")
        r["grpo_s"] = res["seconds"] / max(1, res["steps"])
        print(name, {k: round(x, 2) if isinstance(x, float) else x for k, x in r.items()}, flush=True)

    f, t = results["full"], results["trimmed"]
    print(f"\n{'':22}{'full':>12}{'trimmed':>12}{'full/trimmed':>14}")
    for key, label in (("params", "parameters"), ("sft_ms", "SFT step (ms)"), ("grpo_s", "GRPO step (s)")):
        print(f"{label:22}{f[key]:>12.1f}{t[key]:>12.1f}{f[key] / t[key]:>14.2f}")
    print(
        f"{'sampling (tok/s)':22}{f['sample_tok_s']:>12.0f}{t['sample_tok_s']:>12.0f}{f['sample_tok_s'] / t['sample_tok_s']:>14.2f}"
    )


if __name__ == "__main__":
    main()

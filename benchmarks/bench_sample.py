"""Our batched KV-cache sampler vs Hugging Face `generate` on the same weights, measured in the same run.

    python benchmarks/bench_sample.py --config 124m      # batch 8, prompt 64, 64 new tokens, CPU
    python benchmarks/bench_sample.py --config tiny

Prints tokens/s for both and the ratios (target: >= 3x at 124m, >= 2x at tiny). Random weights: speed does not
depend on what the weights are; both sides generate exactly batch x new_tokens tokens (no early stop).
Measured: iclaw in fp32 and in bf16 (what the agent samples with), transformers in fp32 and bf16 -- the bf16 pair
only where the CPU multiplies bf16 in hardware (elsewhere it is emulated, many times slower, and the agent samples
in fp32). iclaw samples through `Policy`, exactly as the agent and the trainers do (on CPU: a copy with
oneDNN-prepacked weights).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

import torch

from iclaw.agent.policy import Policy
from iclaw.model.gpt import GPT, bf16_supported, preset


def hf_twin(model: GPT, **config):
    """The same weights as a transformers GPT2LMHeadModel (Conv1D = our Linear transposed); `config` adds
    GPT2Config fields (dropout, eos/pad ids). Every weight must land: only the tied head and the causal-mask
    buffers may be missing on the transformers side."""
    from transformers import GPT2Config, GPT2LMHeadModel

    c = model.config
    hf = GPT2LMHeadModel(
        GPT2Config(
            n_layer=c.n_layer,
            n_head=c.n_head,
            n_embd=c.n_embd,
            n_positions=c.block_size,
            vocab_size=c.vocab_size,
            **config,
        )
    )
    sd = {}
    for k, v in model.state_dict().items():
        if k.endswith(("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")):
            v = v.t()
        sd[k] = v.contiguous()
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected and all(k == "lm_head.weight" or k.endswith(".attn.bias") for k in missing), (
        missing,
        unexpected,
    )
    return hf.eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="124m")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = GPT(preset(args.config)).eval()
    hf = hf_twin(model)
    prompts = torch.randint(0, 50257, (args.batch, args.prompt_len))
    n_tok = args.batch * args.new_tokens

    def ours(policy: Policy):
        def run():
            s = policy.sample(prompts.tolist(), args.new_tokens, temperature=1.0, seed=0)
            assert sum(len(t) for t in s.tokens) == n_tok

        return run

    def theirs(net):
        def run():
            with torch.inference_mode():
                out = net.generate(
                    prompts,
                    attention_mask=torch.ones_like(prompts),
                    max_new_tokens=args.new_tokens,
                    min_new_tokens=args.new_tokens,
                    do_sample=True,
                    top_k=0,
                    pad_token_id=0,
                )
            assert out.shape[1] - args.prompt_len == args.new_tokens

        return run

    res = {}
    runs = [
        ("iclaw", ours(Policy(model, device="cpu", fast_sampling=False))),
        ("transformers", theirs(hf)),
    ]
    bf16 = bf16_supported("cpu")
    if bf16:
        runs.append(("iclaw_bf16", ours(Policy(model, device="cpu"))))
        runs.append(("transformers_bf16", theirs(copy.deepcopy(hf).to(torch.bfloat16))))
    for name, fn in runs:
        fn()  # warm-up
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        res[name] = n_tok / min(times)
    out = {
        "config": args.config,
        "batch": args.batch,
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        "threads": torch.get_num_threads(),
        "iclaw_tok_s": round(res["iclaw"], 1),
        "transformers_tok_s": round(res["transformers"], 1),
        "ratio_fp32": round(res["iclaw"] / res["transformers"], 2),
        "load": os.getloadavg(),
    }
    if bf16:
        out.update(
            iclaw_bf16_tok_s=round(res["iclaw_bf16"], 1),
            transformers_bf16_tok_s=round(res["transformers_bf16"], 1),
            ratio_bf16_vs_fp32=round(res["iclaw_bf16"] / res["transformers"], 2),
            ratio_bf16_vs_bf16=round(res["iclaw_bf16"] / res["transformers_bf16"], 2),
        )
    else:
        out["bf16"] = "skipped: this CPU has no bf16 hardware"

    print(json.dumps(out))


if __name__ == "__main__":
    main()

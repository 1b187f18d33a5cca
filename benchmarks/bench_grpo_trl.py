"""Seconds per GRPO step: iclaw's `train_grpo` vs Hugging Face TRL's `GRPOTrainer`, same weights, same job.

    python benchmarks/bench_grpo_trl.py --config tiny      # 4 layers / 4 heads / 128 wide
    python benchmarks/bench_grpo_trl.py --config 124m

The job, on both sides: 2 tasks (prompts) per step x G=8 samples, at most 32 new tokens, one turn, reward 1 iff
iclaw's Verifier passes the sampled command in a fresh fixture (the same sandbox and verifier on both sides),
KL beta 0.04 against a frozen reference copy, lr 1e-4, one optimizer step per batch, CPU, bf16 autocast on
both sides where the CPU has bf16 hardware and fp32 elsewhere (`--precision auto`, the default; bf16 or fp32
forces one; iclaw's sampler uses its bf16 weight copy only where bf16 is fast).
TRL runs without vLLM, with gradient checkpointing off (TRL's default is on; iclaw has none) and dropout 0.
One difference stays, iclaw's own: it drops the groups whose rewards all agree before its update (they carry
no advantage), where TRL computes them; `iclaw_rows` says how many rows iclaw updated on each step. With
`--prime-steps` about half the completions pass and a group of 8 rarely agrees.

Random weights (speed does not depend on them) — but a random policy never writes a well-formed tool call, so
no command reaches the sandbox and every completion runs to 32 tokens. `--prime-steps N` first teaches the
random model the action format (a few supervised steps on `<|bash|>{reference or broken command}<|end|>`), so
completions are real commands, about half pass, and both samplers can stop early: the realistic workload.

The prompts are iclaw's agent prompt for the first two tasks of `iclaw.tasks.generate`, token for token the
same on both sides (TRL gets an HF tokenizer converted offline from iclaw's bundled GPT-2 vocabulary plus the
control markers at the same ids). TRL stops a completion at the same stop tokens as iclaw (<|end|>, <|done|>).

Fairness: the two trainers run in one process and are interleaved step by step — TRL step k, then iclaw step
k, and so on — so machine load hits both alike. Start-up is excluded; step 0 is a warm-up; the figure is the
median over the following steps. iclaw's step time runs from its go signal to the end of its step (rollout,
reward, scoring, update, metrics); TRL's from the end of iclaw's step to TRL's on_step_end.

Prints one JSON line: {"config", "iclaw_s_per_step", "trl_s_per_step", "ratio" (trl/iclaw), "trl_version",
"load", ...details}. Target: ratio >= 2. Needs `pip install trl` (not a project dependency).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

STEP_WAIT_S = 900.0  # one side waiting this long for the other means something hung


def hf_tokenizer():
    """GPT-2 BPE as a transformers fast tokenizer, built offline from iclaw's tiktoken file, with iclaw's
    control markers added as special tokens at exactly iclaw's ids (50256..50263)."""
    from importlib import resources

    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    from iclaw.model.tokenizer import GPT2_PAT, SPECIAL_TOKENS

    path = resources.files("iclaw") / "assets" / "gpt2.tiktoken"
    with resources.as_file(path) as p:
        tk = TikTokenConverter(vocab_file=str(p), pattern=GPT2_PAT).converted()
    # added in id order, so each marker lands on the next free id: <|endoftext|>=50256, <|user|>=50257, ...
    markers = sorted(SPECIAL_TOKENS, key=SPECIAL_TOKENS.get)
    tk.add_special_tokens([AddedToken(m, special=True, normalized=False) for m in markers])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|end|>", pad_token="<|endoftext|>")
    for m, i in SPECIAL_TOKENS.items():
        assert tok.convert_tokens_to_ids(m) == i, (m, i)
    return tok


def prime(model, tasks, steps: int, lr: float) -> dict:
    """Optionally teach the random model the action format, so completions are real commands that the sandbox
    runs and the verifier judges (and that end at <|end|>): a few supervised steps on
    `<prompt><|bash|>{code}<|end|>` with code = the task's reference and, as often, its broken command, so about
    half the samples pass and the groups have reward variance. Start-up work, not timed."""
    from iclaw.agent.episode import task_request
    from iclaw.agent.protocol import action_tokens, request_tokens
    from iclaw.model.gpt import autocast

    seqs = []
    for t in tasks:
        for code in (t.reference, t.broken):
            p = request_tokens(task_request(t))
            seqs.append((p, action_tokens(t.kind, code)))
    T = max(len(p) + len(a) for p, a in seqs)
    idx = torch.zeros((len(seqs), T), dtype=torch.long)
    tgt = torch.full((len(seqs), T), -1, dtype=torch.long)
    for i, (p, a) in enumerate(seqs):
        x = p + a
        idx[i, : len(x)] = torch.tensor(x)
        tgt[i, len(p) - 1 : len(x) - 1] = torch.tensor(a)  # predict the action tokens only
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    loss, t0 = None, time.perf_counter()
    for i in range(steps):
        with autocast("cpu"):
            _, loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"prime {i + 1}/{steps}: loss {loss.item():.3f}", file=sys.stderr, flush=True)
    model.eval()
    return {
        "prime_steps": steps,
        "prime_final_loss": None if loss is None else round(loss.item(), 4),
        "prime_s": round(time.perf_counter() - t0, 1),
    }


def hf_twin(model, path: Path):
    """Save the same weights as a transformers GPT2LMHeadModel (Conv1D = our Linear transposed), dropout off,
    stopping at iclaw's stop tokens. TRL loads the policy and its reference from this directory."""
    from bench_sample import hf_twin as convert

    from iclaw.agent.protocol import STOP_TOKENS

    off = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    hf = convert(model, **off, eos_token_id=list(STOP_TOKENS), pad_token_id=50256)
    hf.generation_config.eos_token_id = list(STOP_TOKENS)
    hf.generation_config.pad_token_id = 50256
    with torch.no_grad():  # same function, checked on a prompt
        x = torch.randint(0, 50257, (1, 16))
        ours, _ = model.eval()(x)
        diff = (hf.eval()(x).logits - ours).abs().max().item()
    assert diff < 1e-3, f"HF twin differs from the iclaw model: {diff}"
    hf.save_pretrained(path)
    return diff


class Gate:
    """Step-by-step interleaving of iclaw (a worker thread) with TRL (the main thread): exactly one runs."""

    def __init__(self):
        self.events: queue.Queue = queue.Queue()
        self.go = threading.Semaphore(0)
        self.t_go = 0.0
        self.iclaw_times: list[float] = []

    # iclaw side (worker thread)
    def arrive(self, kind: str) -> None:
        if kind == "step":
            self.iclaw_times.append(time.perf_counter() - self.t_go)
        self.events.put((kind, None))
        self.go.acquire()
        self.t_go = time.perf_counter()

    # TRL side (main thread)
    def wait(self, expect: str) -> None:
        kind, payload = self.events.get(timeout=STEP_WAIT_S)
        if kind == "error":
            raise RuntimeError("iclaw side failed") from payload
        assert kind == expect, (kind, expect)

    def run_iclaw_step(self) -> None:
        self.go.release()
        self.wait("step")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny")
    ap.add_argument("--steps", type=int, default=3, help="measured steps per side (after one warm-up step)")
    ap.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default="auto",
        help="auto: bf16 where the CPU multiplies it in hardware (emulated bf16 is many times slower), else fp32",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--prime-steps",
        type=int,
        default=0,
        help="supervised steps teaching the random model the action format first (0 = raw random weights)",
    )
    ap.add_argument("--prime-lr", type=float, default=1e-3)
    args = ap.parse_args()
    if args.precision == "auto":
        from iclaw.model.gpt import bf16_supported

        args.precision = "bf16" if bf16_supported("cpu") else "fp32"

    tmp = Path(tempfile.mkdtemp(prefix="bench-grpo-trl-"))
    atexit.register(shutil.rmtree, tmp, True)  # the HF copy of a 124m model is 500 MB
    os.environ["ICLAW_HOME"] = str(tmp / "home")
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "WANDB_DISABLED"):
        os.environ.setdefault(var, "1")  # nothing from the network, no wandb

    import trl
    from datasets import Dataset
    from transformers import TrainerCallback

    from iclaw.agent.episode import task_request
    from iclaw.agent.protocol import parse_action, request_tokens
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, preset
    from iclaw.tasks import Verifier, generate
    from iclaw.tools.sandbox import Sandbox
    from iclaw.train.grpo import GRPOConfig, train_grpo

    G, TASKS, NEW, BETA, LR = 8, 2, 32, 0.04, 1e-4
    total_steps = 1 + args.steps
    torch.manual_seed(args.seed)

    # ---- the shared job: weights, tasks, prompts, verifier
    model = GPT(preset(args.config)).eval()
    sandbox = Sandbox()
    tasks = generate(TASKS, split="train", seed=args.seed, sandbox=sandbox)
    primed = prime(model, tasks, args.prime_steps, args.prime_lr) if args.prime_steps else {}
    registry.publish("bench", model, meta={"source": f"random:{args.config}"})
    twin_diff = hf_twin(model, tmp / "hf")
    tokenizer = hf_tokenizer()
    prompts = ["<|user|>" + task_request(t) + "<|end|><|assistant|>" for t in tasks]
    for t, p in zip(tasks, prompts):  # the HF tokenizer sees exactly iclaw's prompt tokens
        assert tokenizer(p, add_special_tokens=False)["input_ids"] == request_tokens(task_request(t))
    prompt_lens = [len(request_tokens(task_request(t))) for t in tasks]

    tool_s: list[float] = []  # seconds in the sandbox (episodes' tool calls, verification), per call

    class CountingVerifier(Verifier):
        """The real verifier, counting the candidates it runs (per side, per step) and timing iclaw's."""

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.calls: list[int] = []

        def verify_many(self, pairs):
            self.calls.append(len(pairs))
            t0 = time.perf_counter()
            try:
                return super().verify_many(pairs)
            finally:
                if self is v_iclaw:
                    tool_s.append(time.perf_counter() - t0)

    class CountingSandbox(Sandbox):
        """The real sandbox, counting and timing the tool calls of iclaw's episodes."""

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.calls: list[int] = []

        def run_many(self, calls, *a, **kw):
            self.calls.append(len(calls))
            t0 = time.perf_counter()
            try:
                return super().run_many(calls, *a, **kw)
            finally:
                tool_s.append(time.perf_counter() - t0)

    v_iclaw, v_trl = CountingVerifier(Sandbox()), CountingVerifier(Sandbox())
    sb_iclaw = CountingSandbox()

    # ---- iclaw: train_grpo in a worker thread, gated at every step boundary through its `progress` callable
    gate = Gate()
    iclaw_tool_s: list[float] = []  # per step: seconds of the rollout spent in the sandbox, not the sampler

    def gated_progress(advance: int = 1, completed: int | None = None, **metrics):
        if completed is None:
            iclaw_tool_s.append(sum(tool_s))
            tool_s.clear()
        else:
            tool_s.clear()
        gate.arrive("ready" if completed is not None else "step")

    gcfg = GRPOConfig(
        model="bench",
        out="bench-grpo",
        steps=total_steps,
        group_size=G,
        tasks_per_step=TASKS,
        lr=LR,
        beta=BETA,
        max_turns=1,
        max_new_tokens=NEW,
        save_every=10**9,  # only the final checkpoint (after the last measured step)
        kl_max=float("inf"),  # a safety stop; never stop a benchmark early
        sft_coef=0.0,  # TRL has no imitation term
        amp=args.precision == "bf16",
        seed=args.seed,
    )
    iclaw_result: dict = {}

    def iclaw_thread():
        iclaw_result["threads"] = torch.get_num_threads()
        try:
            iclaw_result.update(
                train_grpo(
                    gcfg,
                    tasks,
                    sandbox=sb_iclaw,
                    verifier=v_iclaw,
                    store=None,
                    device="cpu",
                    log_dir=str(tmp / "runs"),
                    echo=lambda *a, **k: None,
                    progress=gated_progress,
                )
            )
        except BaseException as e:  # noqa: BLE001 — handed to the main thread, which re-raises
            gate.events.put(("error", e))

    # ---- TRL: GRPOTrainer on the HF twin; the reward function calls the same verifier
    trl_rewards: list[dict] = []

    def verifier_reward(prompts, completions, completion_ids, task_idx, **kw):
        rewards = [0.0] * len(completion_ids)
        pairs, where = [], []
        for i, (ids, ti) in enumerate(zip(completion_ids, task_idx)):
            action = parse_action(list(ids))
            if action.kind == tasks[ti].kind:  # as iclaw: the fix is a call of the task's kind
                pairs.append((tasks[ti], action.code))
                where.append(i)
        for i, v in zip(where, v_trl.verify_many(pairs) if pairs else []):
            rewards[i] = 1.0 if v.passed else 0.0
        trl_rewards.append({"lens": [len(c) for c in completion_ids], "candidates": len(pairs)})
        return rewards

    trl_times, trl_gen, trl_logs = [], [], []  # seconds per step, seconds in generate(), TRL's log dicts
    clock = {"resume": 0.0}

    class Interleave(TrainerCallback):
        def on_train_begin(self, a, state, control, **kw):
            gate.wait("ready")  # iclaw's start-up is done too
            clock["resume"] = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            trl_times.append(time.perf_counter() - clock["resume"])
            gate.run_iclaw_step()
            clock["resume"] = time.perf_counter()

        def on_log(self, a, state, control, logs=None, **kw):
            trl_logs.append(dict(logs or {}))

    targs = trl.GRPOConfig(
        output_dir=str(tmp / "trl"),
        use_cpu=True,
        bf16=args.precision == "bf16",
        per_device_train_batch_size=TASKS * G,
        gradient_accumulation_steps=1,
        num_generations=G,
        max_completion_length=NEW,
        num_iterations=1,
        beta=BETA,
        learning_rate=LR,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_grad_norm=1.0,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        max_steps=total_steps,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        model_init_kwargs={"dtype": "float32"},
        seed=args.seed,
    )
    dataset = Dataset.from_dict({"prompt": prompts, "task_idx": list(range(len(tasks)))})
    th = threading.Thread(target=iclaw_thread, name="iclaw-grpo", daemon=True)
    th.start()
    trainer = trl.GRPOTrainer(
        model=str(tmp / "hf"),
        reward_funcs=verifier_reward,
        args=targs,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[Interleave()],
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # stdout carries only our JSON line
    hf_model = trainer.accelerator.unwrap_model(trainer.model)
    orig_generate = hf_model.generate

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        out = orig_generate(*a, **kw)
        trl_gen.append(time.perf_counter() - t0)
        return out

    hf_model.generate = timed_generate
    trainer.train()
    gate.go.release()  # let iclaw finish (final checkpoint) and return
    th.join(timeout=STEP_WAIT_S)

    # ---- report
    i_times, t_times = gate.iclaw_times[1:], trl_times[1:]
    hist = iclaw_result.get("history", [])[1:]
    i_med, t_med = statistics.median(i_times), statistics.median(t_times)
    trl_step_logs = [lg for lg in trl_logs if "loss" in lg][1:]
    out = {
        "config": args.config,
        "iclaw_s_per_step": round(i_med, 3),
        "trl_s_per_step": round(t_med, 3),
        "ratio": round(t_med / i_med, 2),
        "trl_version": trl.__version__,
        "load": [round(x, 2) for x in os.getloadavg()],
        "precision": args.precision,
        "trl_autocast": str(trainer.accelerator.mixed_precision),
        "threads": torch.get_num_threads(),
        "iclaw_thread_threads": iclaw_result.get("threads"),
        "torch": torch.__version__,
        "params": model.num_params(),
        "measured_steps": len(i_times),
        "iclaw_step_s": [round(x, 3) for x in i_times],
        "trl_step_s": [round(x, 3) for x in t_times],
        "iclaw_rollout_s": [round(h["t_rollout"], 3) for h in hist],
        "iclaw_train_s": [round(h["t_train"], 3) for h in hist],
        "iclaw_rows": [h["rows"] for h in hist],
        "iclaw_tools_s": [round(x, 3) for x in iclaw_tool_s[1:]],  # of iclaw_rollout_s; the rest is sampling
        "trl_generate_s": [round(x, 3) for x in trl_gen[1:]],
        "prompt_tokens": prompt_lens,
        "families": [t.family for t in tasks],
        "iclaw_tokens_per_step": [round(h["resp_len"] * TASKS * G) for h in hist],
        "trl_tokens_per_step": [sum(r["lens"]) for r in trl_rewards[1:]],
        "trl_longest_row": [max(r["lens"]) for r in trl_rewards[1:]],
        "trl_rows_stopped": [sum(1 for n in r["lens"] if n < NEW) for r in trl_rewards[1:]],
        # sandbox work (all steps, warm-up included): pairs per verify_many call / tool calls per run_many;
        # empty = no completion was a well-formed tool call of the task's kind, so nothing was run
        "iclaw_verified_pairs": v_iclaw.calls,
        "iclaw_episode_tool_calls": sb_iclaw.calls,
        "trl_verified_pairs": v_trl.calls,
        "iclaw_kl": [round(h["kl"], 5) for h in hist],
        "trl_kl": [round(lg.get("kl", float("nan")), 5) for lg in trl_step_logs],
        "trl_logged_step_time": [lg.get("step_time") for lg in trl_step_logs],  # TRL's own timer
        "iclaw_reward_mean": [round(h["reward_mean"], 3) for h in hist],
        "trl_reward_mean": [round(lg.get("reward", float("nan")), 3) for lg in trl_step_logs],
        **primed,
        "twin_max_logit_diff": twin_diff,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())

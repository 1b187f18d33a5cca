"""SFT end to end on tiny models: demonstrations really run in the sandbox, training, the CLI, Ctrl-C."""

import os
import subprocess
import sys

import pytest
import torch
from helpers import ECHO_TASKS as TASKS
from helpers import SMALL, ctrl_c_when, metrics_rows

from iclaw.model import registry
from iclaw.model.gpt import GPT, preset
from iclaw.tasks import Task
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.sft import SFTConfig, demonstration_format, demonstrations, train_sft


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    return tmp_path


def test_sft_learns_demonstrations(home):
    sb = Sandbox(Limits(timeout_s=5))
    demos = demonstrations(TASKS, sb)
    assert len(demos) == 4 and all(sum(m) > 0 for _, m in demos)
    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    first = train_sft(
        m, demos, SFTConfig(steps=1, batch_size=4, warmup=1, amp=False), device=torch.device("cpu")
    )
    res = train_sft(
        m, demos, SFTConfig(steps=60, batch_size=4, lr=3e-3, warmup=5, amp=False), device=torch.device("cpu")
    )
    assert res["loss"] < first["loss"] * 0.5


def test_demonstrations_end_after_a_real_success_and_retry_after_a_real_failure(home):
    from iclaw.model.tokenizer import get_tokenizer

    sb = Sandbox(Limits(timeout_s=5))
    tasks = [
        Task(
            id="cat",
            kind="bash",
            family="cmd-typo",
            broken="cta notes.txt",
            reference="cat notes.txt",
            error="bash: line 1: cta: command not found",
            files={"notes.txt": "hi\n", "zebra_q7.csv": "a\n"},
        )
    ]
    tok = get_tokenizer()

    def split(demo):
        toks, mask = demo
        policy = tok.decode([t for t, m in zip(toks, mask) if m])
        env = tok.decode([t for t, m in zip(toks, mask) if not m])
        return policy, env

    (plain,) = demonstrations(tasks, sb)
    policy, env = split(plain)
    assert policy == "<|bash|>cat notes.txt<|end|><|done|>"
    assert env.endswith("<|obs|>hi\n[exit 0]<|end|><|assistant|>")  # what the fix really printed

    _, looked = demonstrations(tasks, sb, look_first=1.0)
    policy, env = split(looked)
    assert policy == "<|bash|>ls<|end|><|bash|>cat notes.txt<|end|><|done|>"
    assert "notes.txt\nzebra_q7.csv\n[exit 0]" in env  # what ls really printed, never trained on

    _, retried = demonstrations(tasks, sb, retry=1.0)
    policy, env = split(retried)
    assert policy == "<|bash|>cat notes.txt<|end|><|done|>"  # the failed attempt is context, not imitated
    assert "<|bash|>cta notes.txt<|end|><|obs|>" in env and "cta: command not found\n[exit 127]" in env
    assert len(demonstrations(tasks, sb, look_first=0.0, retry=0.0)) == 1


def test_sft_cli_publishes_and_rejects_a_bad_fraction(home):
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")

    def run(*args):
        cmd = [sys.executable, "-m", "iclaw", "train", "sft", "--tasks", str(tasks), "--init", "tiny", *args]
        return subprocess.run(cmd, env=env, cwd=home, capture_output=True, text=True, timeout=300)

    bad = run("--out", "bad", "--look-first", "2")
    assert bad.returncode != 0 and "--look-first" in bad.stderr and "Traceback" not in bad.stderr
    ok = run("--out", "warm", "--steps", "2", "--batch-size", "4", "--look-first", "0.5")
    assert ok.returncode == 0, ok.stderr
    assert "published warm" in ok.stdout and registry.is_registered("warm")
    assert not registry.is_registered("bad")
    # GRPO's ptx term imitates in the form the warm-up learned (recorded in its checkpoint), and passes it on
    assert demonstration_format(registry.resolve("warm")) == {"look_first": 0.5, "retry": 0.0}
    n = len(demonstrations(TASKS, Sandbox(Limits(timeout_s=5)), look_first=0.5, seed=0))
    assert n > len(TASKS)
    flags = ["--tasks", str(tasks), "--steps", "1", "--group-size", "2", "--tasks-per-step", "2"]
    grpo = subprocess.run(
        [sys.executable, "-m", "iclaw", "train", "grpo", "--model", "warm", "--out", "g", "--sft-coef", "0.5"]
        + [*flags, "--max-turns", "1", "--db", str(home / "g.db")],
        env=env, cwd=home, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert grpo.returncode == 0, grpo.stderr
    assert f"ptx: {n} demonstrations (look-first 0.5, retry 0," in " ".join(grpo.stdout.split())
    assert demonstration_format(registry.resolve("g")) == {"look_first": 0.5, "retry": 0.0}


def test_ctrl_c_publishes_sft_where_it_stopped(home):
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    sft = [sys.executable, "-m", "iclaw", "train", "sft", "--tasks", str(tasks), "--init", "tiny"]
    p = ctrl_c_when(
        [*sft, "--out", "warm", "--steps", "100000", "--batch-size", "2"],
        metrics_rows(home, 2),
        cwd=home,
        env=env,
    )
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr
    assert "stopped: interrupted (Ctrl-C)" in p.stdout and "published warm" in p.stdout
    steps = registry.load("warm", device="cpu")[1]["step"]
    assert 10 <= steps < 100000  # metrics are logged at step 1 and every 10th


def test_a_minutes_cap_on_a_step_budget_says_it_stopped_the_run(home):
    """SFT with both budgets: ending on the minutes cap is reported (the demo warns that its figures will
    differ); with minutes alone, reaching them is the plan."""
    demos = demonstrations(TASKS, Sandbox(Limits(timeout_s=5)))
    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    capped = train_sft(m, demos, SFTConfig(steps=10**6, minutes=0.005, amp=False), device=torch.device("cpu"))
    assert capped["stopped"] == "time budget reached" and 0 < capped["steps"] < 10**6
    timed = train_sft(m, demos, SFTConfig(steps=None, minutes=0.005, amp=False), device=torch.device("cpu"))
    assert timed["stopped"] is None and timed["steps"] > 0


def test_length_grouped_batches_cover_every_example_once_and_cut_padding():
    import random

    from iclaw.train.sft import length_grouped_batches

    rng = random.Random(0)
    lengths = [rng.choice([rng.randint(40, 120), rng.randint(150, 380)]) for _ in range(1000)]

    def padded(batches) -> float:  # positions a right-padded batch holds / real tokens
        return sum(max(lengths[i] for i in b) * len(b) for b in batches) / sum(lengths)

    grouped = length_grouped_batches(lengths, 16, 32, random.Random(1))
    plain = length_grouped_batches(lengths, 16, 1, random.Random(1))
    for batches in (grouped, plain):
        assert sorted(i for b in batches for i in b) == list(range(1000))
        assert all(1 <= len(b) <= 16 for b in batches)
    assert padded(grouped) < 1.1 < 1.5 < padded(plain)
    # the batches come in random order, not shortest first
    firsts = [max(lengths[i] for i in b) for b in grouped]
    assert firsts != sorted(firsts)


def test_padding_to_a_few_shapes_changes_no_loss_and_no_gradient():
    """SFT batches padded to a multiple of PAD tokens (at most the block) and the head's rows padded likewise:
    the same loss and gradient as the batch at its own length, the masked head as the full one."""
    from iclaw.train.rollout import PAD, collate, logprobs_and_entropy
    from iclaw.train.sft import sft_loss

    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    block = m.config.block_size
    g = torch.Generator().manual_seed(3)
    lens = [11, 37, 20]
    seqs = [torch.randint(100, 1000, (n,), generator=g).tolist() for n in lens]
    masks = [[0] * 6 + [1] * (n - 6) for n in lens]
    plain, padded = collate(seqs, masks), collate(seqs, masks, limit=block)
    assert plain.idx.shape[1] == 37 and padded.idx.shape[1] == min(block, -(-37 // PAD) * PAD) > 37
    assert collate([list(range(block))], [[1] * block], limit=block).idx.shape[1] == block
    grads = []
    for b in (plain, padded):
        m.zero_grad()
        loss = sft_loss(m, b.idx, b.mask)
        loss.backward()
        grads.append((loss.item(), [p.grad.clone() for p in m.parameters()]))
    assert grads[0][0] == pytest.approx(grads[1][0], abs=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads[0][1], grads[1][1]))
    with torch.no_grad():
        masked, _ = logprobs_and_entropy(m, plain.idx, plain.mask)
        full, _ = logprobs_and_entropy(m, plain.idx)
    sel = plain.mask.bool()
    assert sel.sum() % PAD != 0 and torch.allclose(masked[sel], full[sel], atol=1e-5)

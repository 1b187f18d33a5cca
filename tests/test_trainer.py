"""The GRPO trainer end to end on tiny models: real sandbox, verifier, store, registry on disk."""

import json
import os
import subprocess
import sys
from collections import deque

import pytest
import torch
from helpers import ECHO_TASKS as TASKS
from helpers import SMALL, ctrl_c_when, metrics_rows, sampled_tokens_by_step

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.checkpoint import load_trainer_state
from iclaw.model.gpt import GPT, preset
from iclaw.store import Store
from iclaw.tasks import Task, Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train import grpo
from iclaw.train.grpo import (
    KL_WINDOW,
    GRPOConfig,
    check_config,
    grpo_update,
    guard_stop,
    recent_kl,
    train_grpo,
)
from iclaw.train.rollout import collate


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    return tmp_path


def _run_kw(home, sb) -> dict:
    """The keyword arguments every train_grpo call in these tests shares."""
    return dict(
        sandbox=sb, verifier=Verifier(sb), device="cpu", log_dir=str(home / "runs"), show_progress=False
    )


def _publish_small(name: str, **kw) -> None:
    torch.manual_seed(0)
    registry.publish(name, GPT(preset("tiny", **{**SMALL, **kw})), meta={"source": "test"})


def _publish_sft(name: str, steps: int = 300) -> None:
    """An SFT'd tiny policy that fixes the echo tasks often but not always (groups have reward variance, so
    GRPO's steps update), published as `train sft` does, with its demonstrations' format."""
    from iclaw.model.vocab import Vocab
    from iclaw.train.sft import SFTConfig, demonstrations, train_sft

    examples = demonstrations(TASKS, Sandbox(Limits(timeout_s=5)))
    torch.manual_seed(0)
    net = GPT(preset("tiny", **SMALL), Vocab.build(t for t, _ in examples))
    train_sft(
        net, examples, SFTConfig(steps=steps, batch_size=4, lr=3e-3, amp=False), device=torch.device("cpu")
    )
    registry.publish(name, net, meta={"source": "test", "demonstrations": {"look_first": 0.0, "retry": 0.0}})


def test_grpo_steps_publish_log_and_resume_exactly(home):
    _publish_small("start")
    sb = Sandbox(Limits(timeout_s=5))
    db = home / "t.db"
    cfg = GRPOConfig(
        model="start",
        out="trained",
        steps=2,
        group_size=2,
        tasks_per_step=2,
        save_every=1,
        max_new_tokens=8,
        max_turns=2,
        amp=False,
        sft_coef=0.0,
    )
    told = []  # a `progress` callable is told of the start and of every step, in place of the bar

    def progress(advance=1, completed=None, **metrics):
        told.append(completed if completed is not None else metrics["step"])

    with Store(db) as store:
        s = train_grpo(cfg, TASKS, store=store, **_run_kw(home, sb), progress=progress)
        assert s["steps"] == 2 and len(s["history"]) == 2 and told == [0, 1, 2]
        for h in s["history"]:
            for k in (
                "reward_mean",
                "reward_std",
                "frac_zero_std",
                "kl",
                "clip_frac",
                "resp_len",
                "turns",
                "tool_error_rate",
                "grad_norm",
                "lr",
                "t_rollout",
                "t_train",
                "flagged",
                "flagged_passed",
            ):
                assert k in h
            assert "entropy" in h or h["rows"] == 0  # an update measures it (none if every group agrees)
        assert len(store.metrics(s["run_id"])) == 2
        assert [h["sampled_tokens"] for h in s["history"]] == sampled_tokens_by_step(store, s["run_id"])
        eps = store.episodes(source="rollout", limit=100)
        assert len(eps) == 2 * 2 * 2 and all(e["run_id"] == s["run_id"] for e in eps)
    lines = (home / "runs" / s["run_id"] / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2]
    state = load_trainer_state(registry.resolve("trained"))
    assert state["step"] == 2 and state["kind"] == "grpo"
    assert state["sampled_tokens"] == s["history"][-1]["sampled_tokens"]

    # resume to step 3 == a straight 3-step run (optimizer, RNG, task order and token count all restored)
    cfg3 = GRPOConfig(**{**cfg.__dict__, "steps": 3})
    with Store(db) as store:
        r = train_grpo(cfg3, TASKS, store=store, resume=True, **_run_kw(home, sb))
        counts = sampled_tokens_by_step(store, s["run_id"])  # step 3 counts on from step 2's total
        assert len(counts) == 3 and r["history"][-1]["sampled_tokens"] == counts[-1]
    assert load_trainer_state(registry.resolve("trained"))["sampled_tokens"] == counts[-1]
    resumed, _ = registry.load("trained")
    straight_cfg = GRPOConfig(**{**cfg3.__dict__, "out": "straight"})
    straight_run = train_grpo(straight_cfg, TASKS, **_run_kw(home, sb))
    assert [h["sampled_tokens"] for h in straight_run["history"]] == counts
    straight, _ = registry.load("straight")
    for a, b in zip(resumed.state_dict().values(), straight.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6)


def test_observation_and_prompt_tokens_get_no_gradient():
    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    seq = list(range(100, 130))
    mask = [0] * 10 + [1] * 5 + [0] * 10 + [1] * 5
    b = collate([seq], [mask])
    emb = m.transformer.wte.weight
    logp_old = torch.zeros_like(b.mask)
    cfg = GRPOConfig(beta=0.0, amp=False)
    opt = torch.optim.SGD(m.parameters(), lr=0.0)
    grpo_update(m, opt, b, torch.tensor([1.0]), logp_old, None, cfg, device=torch.device("cpu"))
    # the head (tied to the embedding) is only evaluated at policy positions: the rows of tokens that are
    # only ever *targets* at masked-out positions get no gradient through the head
    never_target = [
        seq[t + 1] for t in range(len(seq) - 1) if mask[t + 1] == 0 and seq[t + 1] not in seq[:-1]
    ]
    for tok in never_target:
        assert emb.grad[tok].abs().sum() == 0


def test_micro_batches_cut_to_their_own_rows_give_the_full_batch_gradient(monkeypatch):
    """Rows of very different lengths, micro-batches of 2: each micro-batch is trimmed to its longest row
    (Batch.trim), and the gradient is the one the untrimmed, single micro-batch update computes."""
    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    g = torch.Generator().manual_seed(2)
    lens = [12, 40, 9, 25, 33]
    seqs = [torch.randint(100, 1000, (n,), generator=g).tolist() for n in lens]
    masks = [[0] * 5 + [1] * (n - 8) + [0] * 3 for n in lens]  # trailing observation tokens: no gradient
    b = collate(seqs, masks)
    assert b.lengths().tolist() == [n - 3 for n in lens]
    assert b.rows(slice(0, 1)).trim().idx.shape == (1, lens[0] - 3)
    adv = torch.tensor([1.0, -0.5, 0.25, -1.0, 0.5])
    logp_ref = torch.randn(b.mask.shape, generator=g) * 0.1 - 3.0
    opt = torch.optim.SGD(m.parameters(), lr=0.0)

    monkeypatch.setattr(grpo, "GRAD_CLIP", 1e9)  # a clip norm no gradient reaches: .grad is the raw gradient

    def grads(micro_batch: int) -> list[torch.Tensor]:
        cfg = GRPOConfig(beta=0.04, amp=False, micro_batch=micro_batch)
        grpo_update(m, opt, b, adv, None, logp_ref, cfg, device=torch.device("cpu"))
        return [p.grad.clone() for p in m.parameters()]

    for a, c in zip(grads(8), grads(2)):
        # equal up to fp32 summation order (relative 4e-7 on an AMX CPU); a wrong normaliser is off by 10 %+
        assert (a - c).norm() <= 1e-5 * a.norm() + 1e-8


def test_the_update_scores_tokens_as_the_sampler_drew_them():
    """Rollouts sample at temperature 1: the update's log-probs of the sampled tokens are the sampler's own."""
    from iclaw.model.sampler import generate

    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL)).eval()
    prompt = list(range(200, 220))
    s = generate(m, [prompt], 12, temperature=1.0, seed=3)
    seq = prompt + s.tokens[0]
    b = collate([seq], [[0] * len(prompt) + [1] * len(s.tokens[0])], [[0.0] * len(prompt) + s.logprobs[0]])
    opt = torch.optim.SGD(m.parameters(), lr=0.0)
    cfg = GRPOConfig(beta=0.0, amp=False)
    stats = grpo_update(m, opt, b, torch.tensor([1.0]), None, None, cfg, device=torch.device("cpu"))
    assert stats["sampler_logp_gap"] < 1e-4


def test_ptx_adds_exactly_sft_coef_times_the_demonstrations_gradient(monkeypatch):
    """PPO-ptx: the update's gradient is the GRPO loss's plus sft_coef x the SFT loss's on the demo batch."""
    from iclaw.train.sft import sft_loss

    torch.manual_seed(0)
    m = GPT(preset("tiny", **SMALL))
    g = torch.Generator().manual_seed(1)
    seqs = [torch.randint(100, 1000, (24,), generator=g).tolist() for _ in range(3)]
    b = collate(seqs, [[0] * 8 + [1] * 16] * 3)
    demo = collate(seqs[:2], [[0] * 12 + [1] * 12] * 2)
    adv = torch.tensor([1.0, -0.5, 0.25])
    opt = torch.optim.SGD(m.parameters(), lr=0.0)  # lr 0: the gradients stay in .grad, the weights stay put

    def grads(cfg, ptx=None) -> list[torch.Tensor]:
        grpo_update(m, opt, b, adv, None, None, cfg, device=torch.device("cpu"), ptx=ptx)
        return [p.grad.clone() for p in m.parameters()]

    monkeypatch.setattr(grpo, "GRAD_CLIP", 1e9)  # a clip norm no gradient reaches, so .grad is the raw sum
    plain = grads(GRPOConfig(beta=0.0, amp=False))
    mixed = grads(GRPOConfig(beta=0.0, amp=False, sft_coef=0.3), ptx=demo)
    m.zero_grad()
    sft_loss(m, demo.idx, demo.mask).backward()
    for p, a, c in zip(m.parameters(), plain, mixed):
        assert torch.allclose(c - a, 0.3 * p.grad, atol=1e-6)
    assert any(p.grad.abs().sum() > 0 for p in m.parameters())


def test_ablate_beta_starts_every_beta_from_the_same_policy_and_seeds(home):
    """`iclaw ablate beta`: one GRPO run per β from the same start with the same seeds (so step 1 samples the
    same episodes), held-out pass@1 per β, the metrics in the store, a PNG; with the demo's ptx term on."""
    import sqlite3

    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    _publish_sft("start", steps=100)  # passes some of its episodes, so groups disagree and steps update
    png, db = home / "ab.png", home / "ab.db"
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", "ablate", "beta", "--betas", "0,0.04", "--model", "start"]
        + ["--tasks", str(tasks), "--heldout", str(tasks), "--steps", "2", "--group-size", "8"]
        + [
            "--tasks-per-step",
            "2",
            "--max-turns",
            "1",
            "--sft-coef",
            "0.5",
            "--out",
            str(png),
            "--db",
            str(db),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=home,
    )
    assert p.returncode == 0, p.stderr
    assert "β ablation" in p.stdout and png.stat().st_size > 0
    assert registry.is_registered("ablate-beta-0") and registry.is_registered("ablate-beta-0p04")
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT run_id, step, reward_mean, sft_loss, kl, rows FROM train_metrics ORDER BY rowid"
        ).fetchall()
    by_run: dict[str, list] = {}
    for r in rows:
        by_run.setdefault(r[0], []).append(r)
    first, second = by_run.values()
    assert [r[1] for r in first] == [r[1] for r in second] == [1, 2]
    assert first[0][2] == second[0][2]  # same start, same seed: the same first rollouts
    assert any(r[5] for r in rows) and all(r[3] > 0 for r in rows if r[5])  # ptx was in every update


def test_ctrl_c_stops_the_ablation_after_publishing_the_running_beta(home):
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    _publish_small("start")
    cmd = [sys.executable, "-m", "iclaw", "ablate", "beta", "--betas", "0,0.04", "--model", "start"]
    cmd += ["--tasks", str(tasks), "--heldout", str(tasks), "--steps", "100000", "--group-size", "2"]
    cmd += [
        "--tasks-per-step",
        "2",
        "--max-turns",
        "1",
        "--out",
        str(home / "ab.png"),
        "--db",
        str(home / "ab.db"),
    ]
    p = ctrl_c_when(cmd, metrics_rows(home, 2), cwd=home, env=env)
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "the ablation stopped after 0 of 2 β values" in " ".join(p.stdout.split())
    assert registry.latest_id("ablate-beta-0") is not None  # the running β published where it stopped
    assert not registry.is_registered("ablate-beta-0p04") and not (home / "ab.png").exists()


def test_runs_started_in_the_same_second_get_different_ids():
    """An ablation's arms on a fast machine start within one second of each other; their metrics must not merge."""
    from iclaw.train.common import new_run_id

    ids = [new_run_id("grpo") for _ in range(3)]
    assert len(set(ids)) == 3 and all(i.startswith("grpo-") for i in ids)


def test_bad_input_is_one_clear_error_and_writes_nothing(home):
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    empty = home / "empty.jsonl"
    empty.write_text("\n")
    _publish_small("start")
    _publish_small("other-arch", n_embd=64)

    def run(*args):
        p = subprocess.run(
            [sys.executable, "-m", "iclaw", "train", "grpo", *args, "--db", str(home / "x.db")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode != 0 and "Traceback" not in p.stderr
        return p.stderr

    assert "no usable tasks" in run("--model", "start", "--tasks", str(empty), "--out", "o1")
    assert "unknown model" in run("--model", "nope", "--tasks", str(tasks), "--out", "o2")
    assert "group-size" in run("--model", "start", "--tasks", str(tasks), "--group-size", "1", "--out", "o3")
    assert "--set temperature=0.7: removed: rollouts sample at temperature 1" in run(
        "--model", "start", "--tasks", str(tasks), "--set", "temperature=0.7", "--out", "o5"
    )
    assert "FIELD one of" in run("--model", "start", "--tasks", str(tasks), "--set", "nope=1", "--out", "o6")
    assert "cannot be read as int" in run(
        "--model", "start", "--tasks", str(tasks), "--set", "ppo_epochs=x", "--out", "o7"
    )
    # resume a run whose checkpoint has another architecture: publish a non-GRPO checkpoint under --out
    assert "trainer state" in run(
        "--model", "start", "--tasks", str(tasks), "--out", "other-arch", "--resume"
    )
    outcome_only = home / "outcome.jsonl"  # a test, no reference fix: nothing for --sft-coef to imitate
    outcome_only.write_text(
        Task(**{**TASKS[0].to_dict(), "reference": None, "test": "true"}).to_json() + "\n"
    )
    assert "--sft-coef" in run(
        "--model", "start", "--tasks", str(outcome_only), "--sft-coef", "0.1", "--out", "o4"
    )
    assert not (home / "x.db").exists()
    assert not any(registry.is_registered(n) for n in ("o1", "o2", "o3", "o4", "o5"))


TORCHRUN_SCRIPT = r"""
import os, sys, torch
from iclaw.model.gpt import GPT, preset
from iclaw.train.rollout import collate
from iclaw.train.grpo import GRPOConfig, grpo_update
from iclaw.train.common import setup_distributed

rank, world, dev = setup_distributed("cpu")
torch.manual_seed(0)
model = GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=64))
g = torch.Generator().manual_seed(1)
B, T = 8, 24
seqs = torch.randint(0, 50257, (B, T), generator=g).tolist()
masks = [[0] * 8 + [1] * (4 + (i % 5)) + [0] * (T - 12 - (i % 5)) for i in range(B)]
full = collate(seqs, masks)
logp_old = -torch.rand(B, T - 1, generator=g) * 3
logp_ref = logp_old + 0.1 * torch.randn(B, T - 1, generator=g)
adv = torch.randn(B, generator=g)
sl = slice(rank * B // world, (rank + 1) * B // world)
# the ptx term: one process gets both demonstrations, each of two ranks one. With as many policy tokens in
# each, the NLL's token-mean over both is the mean of the ranks' NLLs: the update is the same only if the
# ranks' ptx gradients are averaged too
demo = collate(torch.randint(0, 50257, (2, T), generator=g).tolist(), [[0] * 10 + [1] * (T - 10)] * 2)
ptx = demo if world == 1 else demo.rows(slice(rank, rank + 1))
# SGD: the update is the gradient itself. (Adam's first step is lr * g / (|g| + eps) ~ lr * sign(g), which
# turns float round-off in near-zero gradients into full-size steps, so it cannot be compared to 1e-5.)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
cfg = GRPOConfig(beta=0.04, amp=False, micro_batch=3, sft_coef=0.5)
grpo_update(model, opt, full.rows(sl), adv[sl], logp_old[sl], logp_ref[sl], cfg, device=dev, ptx=ptx)
if rank == 0:
    torch.save({k: v.clone() for k, v in model.state_dict().items()}, sys.argv[1])
"""


def test_torchrun_two_processes_equal_single_process_update(tmp_path):
    script = tmp_path / "upd.py"
    script.write_text(TORCHRUN_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(script), str(tmp_path / "one.pt")], check=True, env=env, timeout=120)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29533",
            str(script),
            str(tmp_path / "two.pt"),
        ],
        check=True,
        env=env,
        timeout=180,
        capture_output=True,
    )
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert one.keys() == two.keys()
    for k in one:
        assert torch.allclose(one[k], two[k], atol=1e-5), k
    # and the update did something
    torch.manual_seed(0)
    init = GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=64)).state_dict()
    assert any(not torch.equal(init[k], one[k]) for k in one)


RANK_WEIGHTS_SCRIPT = r"""
import os, runpy, sys, torch
from iclaw.agent.policy import Policy

policies = []  # the policy this rank trains: the first Policy.load of the run
load = Policy.load.__func__
Policy.load = classmethod(lambda cls, *a, **kw: policies.append(load(cls, *a, **kw)) or policies[-1])
out, sys.argv = sys.argv[1], ["iclaw", *sys.argv[2:]]
try:
    runpy.run_module("iclaw", run_name="__main__")  # what `torchrun -m iclaw ...` runs
except SystemExit as e:
    if e.code:
        raise
torch.save(policies[0].model.state_dict(), f"{out}/rank{os.environ['RANK']}.pt")
"""


def test_torchrun_trains_grpo_with_the_defaults_and_the_ranks_stay_identical(home):
    """README's `torchrun --nproc_per_node 2 -m iclaw train grpo --model my-sft ...` with every default (the
    PPO-ptx term and filter_zero_variance included), on two CPU ranks: both finish, their updates are averaged
    (the weights are the same on both ranks, and changed), and rank 0 publishes them."""
    env = {**os.environ, "ICLAW_HOME": str(home / "home"), "OMP_NUM_THREADS": "1"}
    tasks = home / "train.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    _publish_sft("my-sft")
    script = home / "ranks.py"
    script.write_text(RANK_WEIGHTS_SCRIPT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           str(home), "train", "grpo", "--model", "my-sft", "--tasks", str(tasks), "--steps", "2", "--out", "my-grpo",
           "--db", str(home / "t.db")]  # fmt: skip
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, cwd=home)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "single process only" not in p.stderr
    rank0, rank1 = torch.load(home / "rank0.pt"), torch.load(home / "rank1.pt")
    assert rank0.keys() == rank1.keys()
    for k in rank0:
        assert torch.equal(rank0[k], rank1[k]), k
    published, meta = registry.load("my-grpo")  # rank 0 published its weights
    assert meta["step"] == 2
    start = registry.load("my-sft")[0].state_dict()
    assert all(torch.equal(v, rank0[k]) for k, v in published.state_dict().items())
    assert any(not torch.equal(v, rank0[k]) for k, v in start.items())  # the two steps updated
    # the ptx term was in the updates (rank 0 logs)
    (log,) = (home / "runs").glob("*/metrics.jsonl")
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["sft_loss"] > 0 for r in rows)


def test_token_budget_stops_and_publishes(home):
    _publish_small("start")
    sb = Sandbox(Limits(timeout_s=5))
    cfg = GRPOConfig(  # any first step samples more than one token
        model="start",
        out="budget",
        steps=50,
        group_size=2,
        tasks_per_step=2,
        max_new_tokens=8,
        max_tokens=1,
        save_every=1,
        sft_coef=0.0,
    )
    s = train_grpo(cfg, TASKS, **_run_kw(home, sb))
    assert s["stopped"] == "token budget reached" and s["steps"] == 1
    assert s["history"][0]["sampled_tokens"] >= 1
    assert registry.latest_id("budget") == s["checkpoint"]  # published where it stopped...
    assert registry.checkpoint_ids("budget") == [s["checkpoint"]]  # ...once, although save_every published it
    # resumed with the budget already spent: no step, and no second copy of the checkpoint it started from
    r = train_grpo(cfg, TASKS, resume=True, **_run_kw(home, sb))
    assert r["stopped"] == "token budget reached" and r["steps"] == 1 and r["history"] == []
    assert registry.checkpoint_ids("budget") == [s["checkpoint"]] and r["checkpoint"] == s["checkpoint"]


def test_ctrl_c_saves_where_grpo_stopped_and_resume_goes_on(home):
    """A first Ctrl-C finishes the step, publishes it with its trainer state, exits 130; --resume goes on."""
    _publish_small("start")
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    tasks = home / "tasks.jsonl"
    tasks.write_text("\n".join(t.to_json() for t in TASKS) + "\n")
    flags = ["--tasks", str(tasks), "--out", "cc", "--group-size", "2", "--tasks-per-step", "2"]
    flags += ["--max-turns", "1", "--set", "save_every=1000", "--db", str(home / "t.db"), "--sft-coef", "0.5"]
    grpo = [sys.executable, "-m", "iclaw", "train", "grpo", "--model", "start", *flags]
    p = ctrl_c_when([*grpo, "--steps", "100000"], metrics_rows(home, 2), cwd=home, env=env)
    assert p.returncode == 130, p.stderr
    assert "finishing this step" in p.stderr and "Traceback" not in p.stderr
    assert "stopped: interrupted (Ctrl-C)" in p.stdout and "--resume" in p.stdout
    step = load_trainer_state(registry.resolve("cc"))["step"]  # saved although --save-every never came
    assert 2 <= step < 100000
    with Store(home / "t.db") as store:  # every finished step is in the store, none twice
        assert store.db["train_metrics"].count_where("run_id like 'grpo-%'") == step
    again = subprocess.run(
        [*grpo, "--resume", "--steps", str(step + 1)], env=env, cwd=home, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert "ptx: 4 demonstrations (plain" in again.stdout  # from the reference: a checkpoint with no record
    assert load_trainer_state(registry.resolve("cc"))["step"] == step + 1


def test_max_flagged_stops_like_kl_max_keeping_the_last_good_checkpoint():
    cfg = GRPOConfig(kl_max=0.5, max_flagged=0.25)
    assert guard_stop(0.1, cfg, 3, "ckpt-2", flagged=0.25) is None  # at the limit: go on
    why = guard_stop(0.1, cfg, 3, "ckpt-2", flagged=0.5)
    assert "--max-flagged 0.25" in why and "step 3" in why and "ckpt-2" in why
    assert "kl_max 0.5 (train grpo: --set kl_max=...)" in guard_stop(0.9, cfg, 3, "ckpt-2", flagged=0.0)
    assert guard_stop(0.1, GRPOConfig(), 3, "ckpt-2", flagged=1.0) is None  # off unless asked for
    with pytest.raises(IclawError, match="--max-flagged"):
        check_config(GRPOConfig(max_flagged=1.5))


def test_the_kl_guard_reads_recent_steps_not_one_spike():
    """The demo's seed-0 run, steps 55-59 (KL, updated rows): one noisy step over the limit does not stop a run
    whose recent mean is under it; a KL that stays high does; a step that updated nothing adds nothing."""
    window = deque(maxlen=KL_WINDOW)
    steps = [(0.345, 8), (0.0057, 8), (0.0976, 32), (0.0, 0), (0.0007, 8), (1.249, 16)]
    means = [recent_kl(window, kl, rows, "cpu") for kl, rows in steps]
    assert means[-1] == pytest.approx((0.345 * 8 + 0.0057 * 8 + 0.0976 * 32 + 0.0007 * 8 + 1.249 * 16) / 72)
    assert means[3] == means[2] and len(window) == 5  # the 0-row step changed nothing
    assert guard_stop(means[-1], GRPOConfig(kl_max=1.0), 59, "ckpt-55", flagged=0.0) is None
    for _ in range(KL_WINDOW):
        kl = recent_kl(window, 1.3, 16, "cpu")
    assert kl == pytest.approx(1.3) and "kl_max 1.0" in guard_stop(kl, GRPOConfig(kl_max=1.0), 64, "c", 0.0)

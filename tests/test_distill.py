"""On-policy distillation: the two losses against their formulas, their masks and fixed points, a toy run of
each that really lowers KL(student || teacher), the teacher checks, and real distill steps end to end (tiny
models, real sandbox, verifier, store and registry on disk)."""

import copy
import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from helpers import sampled_tokens_by_step

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.checkpoint import load_trainer_state
from iclaw.model.gpt import GPT, preset
from iclaw.store import Store
from iclaw.tasks import Task, Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.distill import (
    DistillConfig,
    check_teacher,
    chunked_logprobs,
    full_kl,
    full_kl_loss,
    load_teacher,
    position_logits,
    run_distill,
    sampled_distill_loss,
    teacher_logits_at,
    train_distill,
)
from iclaw.train.rollout import Batch

SMALL = dict(n_layer=1, n_head=2, n_embd=32, block_size=256)
WIDE = dict(n_layer=2, n_head=2, n_embd=64, block_size=256)
TASKS = [
    Task(
        id=f"echo-{w}",
        kind="bash",
        family="cmd-typo",
        broken=f"ehco {w}",
        reference=f"echo {w}",
        error="bash: line 1: ehco: command not found",
        broken_exit=127,
    )
    for w in ("red", "blue", "green", "gold")
]


def tiny(seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(preset("tiny", **{**SMALL, **kw})).eval()


def seqs(seed: int = 0, B: int = 3, T: int = 20):
    """Token ids and a policy mask (B, T-1) with observation gaps, like a multi-turn episode."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, 50257, (B, T), generator=g)
    mask = torch.zeros(B, T - 1)
    mask[:, 4:9] = 1  # first turn
    mask[:, 13:] = 1  # second turn, after an observation
    mask[-1, 15:] = 0  # a shorter last row (padding)
    return idx, mask


def sampled_logp(model, idx, mask):
    """log p of the sampled tokens at policy positions, laid out (B, T-1) (0 elsewhere)."""
    lp = F.log_softmax(position_logits(model, idx, mask).float(), -1)
    lp = lp.gather(-1, idx[:, 1:][mask.bool()][:, None]).squeeze(-1)
    return torch.zeros(mask.shape).masked_scatter(mask.bool(), lp)


# ------------------------------------------------------------------------------------------- the losses


def test_full_kl_is_the_formula():
    g = torch.Generator().manual_seed(1)
    s, t = (
        torch.randn(5, 7, generator=g, dtype=torch.float64),
        torch.randn(5, 7, generator=g, dtype=torch.float64),
    )
    want = []
    for i in range(5):
        zs, zt = sum(math.exp(x) for x in s[i].tolist()), sum(math.exp(x) for x in t[i].tolist())
        ps = [math.exp(x) / zs for x in s[i].tolist()]
        pt = [math.exp(x) / zt for x in t[i].tolist()]
        want.append(sum(a * (math.log(a) - math.log(b)) for a, b in zip(ps, pt)))
    assert full_kl(s, t).tolist() == pytest.approx(want, abs=1e-6)
    mask = torch.tensor([1, 0, 1, 1, 0])
    loss, per = full_kl_loss(s, t, mask)
    assert loss.item() == pytest.approx((want[0] + want[2] + want[3]) / 3, abs=1e-6)
    assert per.tolist() == pytest.approx([want[0], want[2], want[3]], abs=1e-6)


def test_sampled_loss_is_the_per_token_clipped_formula():
    g = torch.Generator().manual_seed(2)
    B, T, eps, W = 3, 6, 0.2, 0.5
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 4
    new = (old + 0.4 * torch.randn(B, T, generator=g, dtype=torch.float64)).requires_grad_()
    tch = old + torch.randn(B, T, generator=g, dtype=torch.float64)
    seq_adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) < 0.7).float()
    mask[:, 0] = 1
    loss, stats = sampled_distill_loss(new, old, tch, mask, seq_adv=seq_adv, reward_weight=W, eps=eps)
    total, count = 0.0, 0
    for i in range(B):
        for t in range(T):
            if mask[i, t]:
                a = -(old[i, t].item() - tch[i, t].item()) + W * seq_adv[i].item()
                r = math.exp(new[i, t].item() - old[i, t].item())
                total += -min(r * a, min(max(r, 1 - eps), 1 + eps) * a)
                count += 1
    assert loss.item() == pytest.approx(total / count, abs=1e-9)
    assert 0 < stats["clip_frac"] < 1  # the batch really exercises the clip
    # at the first update (new == old) the value is the one-sample reverse-KL estimate
    loss0, _ = sampled_distill_loss(old.clone(), old, tch, mask)
    assert loss0.item() == pytest.approx(((old - tch) * mask).sum().item() / mask.sum().item(), abs=1e-9)


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_loss_is_exactly_zero_for_the_same_weights(mode):
    student = tiny(0)
    teacher = copy.deepcopy(student).requires_grad_(False)  # same weights, a separate model
    idx, mask = seqs()
    student.train()
    if mode == "full":
        loss, per = full_kl_loss(position_logits(student, idx, mask), position_logits(teacher, idx, mask))
        assert per.numel() == mask.sum().item()
    else:
        with torch.no_grad():
            old, tch = sampled_logp(student, idx, mask), sampled_logp(teacher, idx, mask)
        loss, _ = sampled_distill_loss(sampled_logp(student, idx, mask), old, tch, mask)
    loss.backward()
    assert loss.item() == 0.0
    grad = max(p.grad.abs().max().item() for p in student.parameters() if p.grad is not None)
    if mode == "sampled":  # every advantage is exactly 0, so is every gradient
        assert grad == 0.0
    else:  # d KL / d logits = p (log p_s - log p_t - KL) = 0, up to rounding in sum(p) = 1
        assert grad < 1e-8


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_observation_tokens_get_no_gradient(mode):
    g = torch.Generator().manual_seed(3)
    B, T, V = 3, 10, 17
    logits = torch.randn(B, T, V, generator=g, requires_grad=True)
    t_logits = torch.randn(B, T, V, generator=g)
    idx = torch.randint(0, V, (B, T), generator=g)
    mask = torch.zeros(B, T)
    mask[:, 2:5] = 1
    mask[:, 7:] = 1
    mask[2, 8:] = 0

    def loss_of(t_logits):
        if mode == "full":
            return full_kl_loss(logits, t_logits, mask)[0]
        logp = F.log_softmax(logits, -1).gather(-1, idx[..., None]).squeeze(-1)
        tch = F.log_softmax(t_logits, -1).gather(-1, idx[..., None]).squeeze(-1)
        return sampled_distill_loss(logp, logp.detach() + 0.1, tch, mask)[0]

    loss = loss_of(t_logits)
    loss.backward()
    off = ~mask.bool()
    assert (logits.grad[off] == 0).all()  # exactly zero, not just small
    assert (logits.grad[mask.bool()].abs().sum(-1) > 0).all()
    # what the teacher says at observation positions changes nothing (even -inf / huge garbage)
    garbage = t_logits.clone()
    garbage[off] = torch.where(torch.rand(garbage[off].shape, generator=g) < 0.5, -torch.inf, 1e30)
    assert loss_of(garbage).item() == loss.item()


# --------------------------------------------------------------------------------------- KL goes down


def test_sampled_distillation_lowers_reverse_kl():
    """Sample from the student, push with the per-token advantage: the exact KL(student || teacher) drops.
    (Its expected gradient is the reverse KL's gradient: E_s[grad log p_s (log p_s - log p_t)].)"""
    g = torch.Generator().manual_seed(0)
    t_logits = 2 * torch.randn(6, 16, generator=g)
    s_logits = torch.zeros(6, 16, requires_grad=True)
    opt = torch.optim.Adam([s_logits], lr=0.1)
    kl0 = full_kl(s_logits, t_logits).mean().item()
    for _ in range(40):
        with torch.no_grad():
            x = torch.multinomial(F.softmax(s_logits, -1), 32, replacement=True, generator=g)  # on-policy
        lp = F.log_softmax(s_logits, -1).gather(-1, x)
        tch = F.log_softmax(t_logits, -1).gather(-1, x)
        loss, _ = sampled_distill_loss(lp, lp.detach(), tch, torch.ones_like(lp))
        opt.zero_grad()
        loss.backward()
        opt.step()
    kl1 = full_kl(s_logits, t_logits).mean().item()
    assert kl0 > 1.0 and kl1 < 0.1 * kl0


def test_full_distillation_from_a_wider_deeper_teacher_lowers_kl():
    student = tiny(0)
    teacher = tiny(1, **WIDE)  # twice the width, twice the depth, same vocabulary
    with torch.no_grad():
        teacher.transformer.wte.weight.mul_(5)  # a sharper teacher, far from the student's near-uniform start
    teacher.requires_grad_(False)
    idx, mask = seqs(4, B=4, T=24)
    with torch.no_grad():
        t_logits = position_logits(teacher, idx, mask)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-2)
    losses = []
    student.train()
    for _ in range(6):
        loss, _ = full_kl_loss(position_logits(student, idx, mask), t_logits)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < 0.8 * losses[0]


def test_a_bf16_teacher_scores_the_same_tokens():
    """The teacher keeps its own dtype (bf16 here) and returns float32 on the student's side."""
    student = tiny(0)
    teacher = copy.deepcopy(student).to(torch.bfloat16).requires_grad_(False)
    idx, mask = seqs()
    lp_s, _ = chunked_logprobs(student, Batch(idx, mask, mask), torch.device("cpu"), False, 2)
    lp_t, _ = chunked_logprobs(teacher, Batch(idx, mask, mask), torch.device("cpu"), False, 2)
    assert lp_t.dtype == torch.float32 and (lp_t[mask == 0] == 0).all()
    assert torch.allclose(lp_s, lp_t, atol=0.05)  # bf16 rounding only
    logits = teacher_logits_at(teacher, idx, mask, torch.device("cpu"), amp=False)
    assert logits.dtype == torch.float32 and logits.shape == (int(mask.sum()), 50304)


# ----------------------------------------------------------------------------------------- bad teachers


def test_teacher_checks():
    student = tiny(0)
    with pytest.raises(IclawError, match=r"--teacher big: vocabulary size 50257 differs .* 50304"):
        check_teacher(tiny(1, **WIDE, vocab_size=50257), student, "big", "small")
    with pytest.raises(IclawError, match="block size 128 is smaller"):
        check_teacher(tiny(1, **{**WIDE, "block_size": 128}), student, "big", "small")
    assert check_teacher(tiny(1, **WIDE), student, "big", "small") is None
    warning = check_teacher(student, tiny(1, **WIDE), "small", "big")
    assert warning.startswith("warning: teacher small has fewer parameters")


def test_missing_smaller_and_mismatched_teachers_in_the_registry(home):
    student = tiny(0, **WIDE)
    with pytest.raises(IclawError, match=r"^--teacher: unknown model 'nope' \(known: none"):
        load_teacher("nope", student, torch.device("cpu"))
    registry.publish("small", tiny(1), meta={"source": "test"})
    lines = []
    teacher, path = load_teacher(
        "small", student, torch.device("cpu"), echo=lines.append, student_name="wide"
    )
    assert len(lines) == 1 and "teacher small has fewer parameters" in lines[0] and "wide" in lines[0]
    assert not any(p.requires_grad for p in teacher.parameters()) and path.endswith(
        registry.latest_id("small")
    )
    # through the trainer: the vocabulary error comes before any episode is rolled out
    registry.publish("student", student, meta={"source": "test"})
    registry.publish("otherbpe", tiny(2, **WIDE, vocab_size=50257), meta={"source": "test"})
    cfg = DistillConfig(teacher="otherbpe", student="student", out="x", steps=1)
    with pytest.raises(IclawError, match="vocabulary size 50257 differs"):
        train_distill(cfg, TASKS, sandbox=None, verifier=None, device="cpu", show_progress=False)
    with pytest.raises(IclawError, match=r"^--teacher: unknown model 'gone'"):
        run_distill(DistillConfig(teacher="gone", student="student", out="x"), tasks_file=None, echo=print)
    with pytest.raises(IclawError, match="--kl: must be one of sampled, full"):
        run_distill(DistillConfig(teacher="small", student="student", out="x", kl="forward"), echo=print)
    assert not registry.is_registered("x")


# ----------------------------------------------------------------------------------- real distill steps


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture()
def sandbox():
    sb = Sandbox(Limits(timeout_s=5))
    if sb.level != "bwrap":
        pytest.skip(f"no bubblewrap sandbox here ({sb.reason})")
    return sb


def _weights(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_distill_steps_publish_log_and_resume(home, sandbox):
    registry.publish("student", tiny(0), meta={"source": "test"})
    registry.publish("teacher", tiny(1, **WIDE), meta={"source": "test"})
    cfg = DistillConfig(
        teacher="teacher",
        student="student",
        out="distilled",
        steps=1,
        group_size=2,
        tasks_per_step=2,
        save_every=1,
        max_new_tokens=8,
        max_turns=2,
        amp=False,
        lr=1e-3,
    )
    kw = dict(
        sandbox=sandbox,
        verifier=Verifier(sandbox),
        device="cpu",
        log_dir=str(home / "runs"),
        show_progress=False,
    )
    with Store(home / "t.db") as store:
        s = train_distill(cfg, TASKS, store=store, **kw)
        assert s["steps"] == 1 and len(s["history"]) == 1 and s["stopped"] is None
        h = s["history"][0]
        for k in (
            "kl_to_teacher",
            "kl_to_teacher_k3",
            "reward_mean",
            "pass_rate",
            "loss",
            "grad_norm",
            "entropy",
        ):
            assert math.isfinite(h[k]), k
        assert h["kl_to_teacher_k3"] > 0 and h["skipped"] == 0.0 and h["grad_norm"] > 0
        # the loss at the first update is the sampled KL estimate itself (ratio == 1)
        assert h["loss"] == pytest.approx(h["kl_to_teacher"], rel=1e-4, abs=1e-6)
        assert sampled_tokens_by_step(store, s["run_id"]) == [h["sampled_tokens"]]
        assert load_trainer_state(registry.resolve("distilled"))["sampled_tokens"] == h["sampled_tokens"]

        # resume: the same run continues from step 1, with the teacher it started with (not --teacher now)
        r = train_distill(
            DistillConfig(**{**cfg.__dict__, "steps": 2, "teacher": "ignored"}),
            TASKS,
            store=store,
            resume=True,
            **kw,
        )
        assert r["run_id"] == s["run_id"] and r["steps"] == 2 and len(r["history"]) == 1
        assert len(registry.checkpoint_ids("distilled")) == 2
        path = registry.resolve("distilled")
        state = load_trainer_state(path)
        assert state["kind"] == "distill" and state["step"] == 2 and state["run_id"] == s["run_id"]
        assert (
            state["teacher"] == str(registry.resolve("teacher")) and "optimizer" in state and "rng" in state
        )
        info = registry.checkpoint_info(path)
        assert info["step"] == 2 and info["source"] == f"distill:{s['run_id']}"
        assert info["extra"]["teacher"] == state["teacher"]
        rows = store.metrics(s["run_id"])
        assert [r["step"] for r in rows] == [1, 2] and all(r["kl_to_teacher"] is not None for r in rows)
        # the token count carries on across the resume: step 2's count includes step 1's episodes
        counts = sampled_tokens_by_step(store, s["run_id"])
        assert counts == [h["sampled_tokens"], r["history"][0]["sampled_tokens"]]
        assert state["sampled_tokens"] == counts[-1]
        eps = store.episodes(source="distill", limit=100)
        assert len(eps) == 2 * 2 * 2 and {e["run_id"] for e in eps} == {s["run_id"]}
        assert (home / "runs" / s["run_id"] / "metrics.jsonl").is_file()
        with pytest.raises(IclawError, match="no checkpoints under 'nothing'"):
            train_distill(DistillConfig(**{**cfg.__dict__, "out": "nothing"}), TASKS, resume=True, **kw)
        with pytest.raises(IclawError, match="no trainer state to resume from"):
            registry.publish("plain", tiny(0), meta={"source": "test"})
            train_distill(DistillConfig(**{**cfg.__dict__, "out": "plain"}), TASKS, resume=True, **kw)


def test_full_mode_with_reward_weight_runs_a_step(home, sandbox):
    registry.publish("student", tiny(0), meta={"source": "test"})
    registry.publish("teacher", tiny(1, **WIDE), meta={"source": "test"})
    cfg = DistillConfig(
        teacher="teacher",
        student="student",
        out="full",
        steps=1,
        kl="full",
        reward_weight=1.0,
        group_size=2,
        tasks_per_step=2,
        max_new_tokens=8,
        amp=False,
        micro_batch=3,
    )
    before = _weights(registry.load("student")[0])
    s = train_distill(
        cfg,
        TASKS,
        sandbox=sandbox,
        verifier=Verifier(sandbox),
        device="cpu",
        log_dir=str(home / "runs"),
        show_progress=False,
    )
    h = s["history"][0]
    assert h["kl_full"] > 0 and math.isfinite(h["loss"]) and h["grad_norm"] > 0
    after = _weights(registry.load("full")[0])
    assert any(not torch.equal(a, b) for a, b in zip(before, after))


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_same_teacher_gives_zero_kl_and_leaves_the_student_unchanged(home, sandbox, mode):
    registry.publish("student", tiny(0), meta={"source": "test"})
    cfg = DistillConfig(
        teacher="student",
        student="student",
        out="same",
        steps=1,
        kl=mode,
        group_size=2,
        tasks_per_step=2,
        max_new_tokens=8,
        amp=False,
    )
    before = _weights(registry.load("student")[0])
    s = train_distill(
        cfg,
        TASKS,
        sandbox=sandbox,
        verifier=Verifier(sandbox),
        device="cpu",
        log_dir=str(home / "runs"),
        show_progress=False,
    )
    h = s["history"][0]
    assert h["kl_to_teacher"] == 0.0 and h["loss"] == 0.0
    after = _weights(registry.load("same")[0])
    if mode == "sampled":  # all advantages exactly 0: a zero gradient, and AdamW moves nothing
        assert h["grad_norm"] == 0.0
        assert all(torch.equal(a, b) for a, b in zip(before, after))
    else:  # the full-KL gradient is 0 up to float rounding (see the loss test above)
        assert h["kl_full"] == 0.0 and h["grad_norm"] < 1e-7
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(before, after))


# ----------------------------------------------------------------------------------------------- the CLI


def test_cli_module_is_light_and_reports_bad_input(home, tmp_path):
    code = "import sys, iclaw.commands.distill; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in TASKS))
    registry.publish("student", tiny(0), meta={"source": "test"})
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    args = ["--teacher", "760m", "--student", "student", "--tasks", str(tasks)]
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", "distill", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 2 and "--teacher: unknown model '760m'" in p.stderr and "Traceback" not in p.stderr
    with pytest.raises(IclawError, match="--group-size: must be at least 2 with --reward-weight"):
        run_distill(DistillConfig(teacher="student", student="student", group_size=1, reward_weight=0.5))

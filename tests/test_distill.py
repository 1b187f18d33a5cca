"""On-policy distillation end to end: the teacher checks, and real distill steps (tiny models, real sandbox,
verifier, store and registry on disk). The losses themselves: test_distill_loss.py."""

import math
import os
import subprocess
import sys

import pytest
import torch
from helpers import ECHO_TASKS as TASKS
from helpers import sampled_tokens_by_step
from test_distill_loss import WIDE, tiny

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.checkpoint import load_trainer_state
from iclaw.store import Store
from iclaw.tasks import Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.distill import DistillConfig, run_distill, train_distill
from iclaw.train.distill_teacher import check_teacher, load_teacher

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
    with pytest.raises(IclawError, match=r"^--teacher: unknown model 'nope' \(known: "):
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
    with pytest.raises(IclawError, match=r"--teacher-dtype: unknown dtype 'half' \(known: auto, float32"):
        run_distill(DistillConfig(teacher="student", student="student", teacher_dtype="half"))

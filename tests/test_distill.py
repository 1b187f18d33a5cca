"""On-policy distillation end to end: the teacher checks, and real distill steps (tiny models, real sandbox,
verifier, store and registry on disk). The losses themselves: test_distill_loss.py."""

import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from helpers import ECHO_TASKS as TASKS
from helpers import sampled_tokens_by_step
from test_distill_loss import SMALL, WIDE, tiny

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.checkpoint import load_trainer_state
from iclaw.model.gpt import GPT, preset
from iclaw.model.vocab import Vocab
from iclaw.store import Store
from iclaw.tasks import Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.distill import DistillConfig, run_distill, train_distill
from iclaw.train.distill_teacher import (
    check_pair,
    check_teacher,
    check_teacher_memory,
    load_teacher,
    param_count,
)
from iclaw.train.rollout import logprobs_and_entropy

# ----------------------------------------------------------------------------------------- bad teachers


def test_teacher_checks():
    student = tiny(0)
    with pytest.raises(IclawError) as e:
        check_teacher(tiny(1, **WIDE, vocab_size=50257), student, "big", "small")
    assert str(e.value) == (
        "--teacher big cannot grade student small: 47 of the student's token ids (e.g. 50257, 50258, 50259) "
        "have no teacher row (teacher: a vocabulary of 50,257 rows; student: GPT-2's full vocabulary (50,304 "
        "rows)); distillation scores the student's own tokens with the teacher, so it needs a row for each"
    )
    with pytest.raises(IclawError) as e:
        check_teacher(tiny(1, **{**WIDE, "block_size": 128}), student, "big", "small")
    assert str(e.value) == (
        "--teacher big cannot grade student small: the teacher's block size 128 is smaller than the student's "
        "256, so it could not score the student's longest episodes; use a teacher with a block of at least 256 "
        "tokens"
    )
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
    with pytest.raises(IclawError, match="47 of the student's token ids .* have no teacher row"):
        train_distill(cfg, TASKS, sandbox=None, verifier=None, device="cpu", show_progress=False)
    with pytest.raises(IclawError, match=r"^--teacher: unknown model 'gone'"):
        run_distill(DistillConfig(teacher="gone", student="student", out="x"), tasks_file=None, echo=print)
    with pytest.raises(IclawError, match="--kl: must be one of sampled, full"):
        run_distill(DistillConfig(teacher="small", student="student", out="x", kl="forward"), echo=print)
    assert not registry.is_registered("x")


def trimmed(seed: int, vocab: Vocab, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(preset("tiny", **{**SMALL, **kw}), vocab).eval()


def test_trimmed_vocabularies_sampled_kl_needs_a_teacher_row_per_student_id_full_kl_the_same_rows():
    s_vocab = Vocab.build([[1000, 1001]])
    student = trimmed(0, s_vocab)
    n = len(s_vocab)
    rows = f"student: a trimmed vocabulary of {n:,} GPT-2 ids"
    full_teacher = tiny(1, **WIDE)
    wider = trimmed(1, Vocab(s_vocab.ids + list(range(5000, 5064))), **WIDE)  # the student's ids and more
    for teacher in (full_teacher, wider):  # --kl sampled: every id the student writes has a teacher row
        assert check_teacher(teacher, student, "big", "small", "sampled") is None
        idx = torch.tensor([s_vocab.ids[:12]])  # ...so the teacher scores the student's tokens as they are
        assert torch.isfinite(logprobs_and_entropy(teacher, idx)[0]).all()
    with pytest.raises(IclawError) as e:  # --kl full: the two distributions must share their rows
        check_teacher(full_teacher, student, "big", "small", "full")
    assert str(e.value) == (
        "--kl full: teacher big and student small have different vocabularies (teacher: GPT-2's full vocabulary "
        f"(50,304 rows); {rows}); the full KL compares whole distributions over one shared set of rows. Use "
        "--kl sampled: it scores only the tokens the student writes, and the teacher has a row for each"
    )
    with pytest.raises(
        IclawError, match=rf"^--kl full: .*\(teacher: a trimmed vocabulary of {n + 64:,} GPT-2"
    ):
        check_teacher(wider, student, "big", "small", "full")
    assert check_teacher(trimmed(1, s_vocab, **WIDE), student, "big", "small", "full") is None  # same rows
    # a teacher that lacks one of the student's ids cannot grade it, whatever the KL
    other = trimmed(1, Vocab([i for i in s_vocab.ids if i != 1000] + [7000]), **WIDE)
    for kl in ("sampled", "full"):
        with pytest.raises(IclawError) as e:
            check_teacher(other, student, "other", "small", kl)
        assert str(e.value) == (
            "--teacher other cannot grade student small: 1 of the student's token ids (e.g. 1000) has no teacher "
            f"row (teacher: a trimmed vocabulary of {n:,} GPT-2 ids; {rows}); distillation scores the student's "
            "own tokens with the teacher, so it needs a row for each"
        )
    with pytest.raises(
        IclawError, match=rf"^--teacher small cannot grade student big: {50304 - n:,} of the "
    ):
        check_teacher(
            student, full_teacher, "small", "big"
        )  # a trimmed teacher for a full-vocabulary student


def _truncate_weights(name: str) -> None:
    """Leave `name`'s config but ruin its weights: a check that read them would fail differently."""
    (registry.resolve(name) / "model.safetensors").write_bytes(b"not weights")


def test_mismatches_are_refused_from_the_configs_before_any_weights_are_read(home, tmp_path):
    student = tiny(0)
    registry.publish("student", student, meta={"source": "test"})
    registry.publish("short", tiny(1, **{**WIDE, "block_size": 128}), meta={"source": "test"})
    registry.publish("bpe", tiny(1, **WIDE, vocab_size=50257), meta={"source": "test"})
    _truncate_weights("short")
    _truncate_weights("bpe")
    short = (
        "--teacher short cannot grade student student: the teacher's block size 128 is smaller than the "
        "student's 256"
    )
    with pytest.raises(IclawError, match=f"^{short}"):
        check_pair("short", "student", "sampled")
    with pytest.raises(IclawError, match=f"^{short}"):
        load_teacher("short", student, torch.device("cpu"), student_name="student")
    with pytest.raises(IclawError, match="^--teacher bpe cannot grade student student: 47 of the student's"):
        check_pair("bpe", "student", "full")
    # the command: one error line, exit code 2, before any sandbox or task is touched
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in TASKS))
    env = {**os.environ, "ICLAW_HOME": str(home / "home")}
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", "distill", "--teacher", "short", "--student", "student", "--tasks",
         str(tasks)], capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 2 and p.stderr.startswith(f"error: {short}, so it could not score"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not registry.is_registered("student-distill")


def test_a_teacher_too_big_for_memory_is_one_line_not_an_oom_kill(home):
    GiB = 2**30
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    with pytest.raises(IclawError) as e:
        check_teacher_memory("760m", 10**9, 3 * GiB, cpu, torch.float32, ram=(4 * GiB, "a test figure"))
    assert str(e.value) == (
        "--teacher 760m: loading it needs about 6.7 GiB of RAM (1,000,000,000 parameters: a 3.7 GiB float32 "
        "model filled from a 3.0 GiB weights file), but only 4.0 GiB is available (a test figure)"
    )
    with pytest.raises(IclawError) as e:
        check_teacher_memory(
            "760m", 10**9, 3 * GiB, gpu, torch.bfloat16, ram=(64 * GiB, "-"), gpu=(GiB, "a test")
        )
    assert str(e.value) == (
        "--teacher 760m: needs about 1.9 GiB of GPU memory (1,000,000,000 parameters in bfloat16), but only "
        "1.0 GiB is free (a test); try --teacher-dtype bfloat16 or another --teacher-device"
    )
    check_teacher_memory("760m", 10**9, 3 * GiB, gpu, torch.bfloat16, ram=(64 * GiB, "-"), gpu=(8 * GiB, "-"))
    check_teacher_memory("760m", 10**9, 3 * GiB, cpu, torch.float32, ram=(None, "unknown"))  # cannot tell: go

    # for real: a registered teacher whose config claims 2^20-wide layers (trillions of weights). The check reads
    # the config, counts on the meta device and compares with this machine's RAM, before the weights are read.
    registry.publish("student", tiny(0), meta={"source": "test"})
    registry.publish("huge", tiny(1, **WIDE), meta={"source": "test"})
    cfg_file = registry.resolve("huge") / "config.json"
    cfg_file.write_text(json.dumps({**json.loads(cfg_file.read_text()), "n_embd": 2**20}))
    params = param_count(preset("tiny", **{**WIDE, "n_embd": 2**20}))
    assert params > 10**13
    cfg = DistillConfig(teacher="huge", student="student", out="x", steps=1)
    with pytest.raises(IclawError) as e:
        train_distill(cfg, TASKS, sandbox=None, verifier=None, device="cpu", show_progress=False)
    assert re.fullmatch(
        rf"--teacher huge: loading it needs about [\d,.]+ GiB of RAM \({params:,} parameters: a [\d,.]+ GiB "
        r"float32 model filled from a 0\.0 GiB weights file\), but only [\d,.]+ GiB is available \(.+\)",
        str(e.value),
    ), str(e.value)


def test_configs_are_read_without_the_weights_in_every_format(home, tmp_path):
    """read_config agrees with a full load for native (trimmed vocabulary too), nanoGPT and HF checkpoints."""
    from safetensors.torch import save_file

    from iclaw.model.checkpoint import load_checkpoint, read_config, weights_bytes
    from iclaw.model.importers import CONV1D_SUFFIXES

    model = tiny(0)
    sd = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    c = model.config
    nano = tmp_path / "ckpt.pt"
    args = dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.block_size, bias=True,
                vocab_size=c.vocab_size, dropout=0.1)  # fmt: skip
    torch.save(
        {"model": {"_orig_mod." + k: v for k, v in sd.items()}, "model_args": args, "iter_num": 3}, nano
    )
    hf = tmp_path / "hf"
    hf.mkdir()
    hf_sd = {k.removeprefix("transformer."): (v.t() if k.endswith(CONV1D_SUFFIXES) else v).contiguous()
             for k, v in sd.items()}  # fmt: skip
    save_file(hf_sd, str(hf / "model.safetensors"))
    (hf / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": c.n_layer, "n_head": c.n_head,
                                                "n_embd": c.n_embd, "n_positions": c.block_size,
                                                "vocab_size": 50257}))  # fmt: skip
    registry.publish("trim", trimmed(0, Vocab.build([[1000]])), meta={"source": "test"})
    for path in (nano, hf, registry.resolve("trim")):
        config, vocab = read_config(path)
        loaded, _ = load_checkpoint(path)
        assert config.to_dict() == loaded.config.to_dict() and vocab == loaded.vocab, path
        assert weights_bytes(path) == (path if path.is_file() else path / "model.safetensors").stat().st_size
    assert read_config(hf)[0].vocab_size == 50304  # padded for the control tokens, as the import pads
    assert read_config(registry.resolve("trim"))[1] is not None


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
        kl="sampled",
        warmup=1,
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
        assert [p["step"] for p in s["probes"]] == [0, 1]  # before any update, and at the last step
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


def test_ptx_alone_moves_a_student_distilled_into_itself_toward_the_demonstrations(home, sandbox):
    """With the teacher = the student the first step's KL gradient is 0, so what moves the weights is the ptx
    term, sft_coef x the NLL of demonstrations, which must then be lower on those demonstrations."""
    from iclaw.train.rollout import collate
    from iclaw.train.sft import demonstrations, sft_loss

    registry.publish("student", tiny(0), meta={"source": "test"})
    demos = demonstrations(TASKS, sandbox)
    batch = collate([t for t, _ in demos], [m for _, m in demos])
    nll = lambda m: sft_loss(m, batch.idx, batch.mask).item()  # noqa: E731
    cfg = DistillConfig(
        teacher="student",
        student="student",
        out="ptx",
        steps=3,
        kl="full",
        sft_coef=1.0,
        group_size=1,
        tasks_per_step=2,
        max_new_tokens=8,
        amp=False,
        warmup=1,
    )
    s = train_distill(
        cfg,
        TASKS,
        sandbox=sandbox,
        verifier=Verifier(sandbox),
        device="cpu",
        log_dir=str(home / "runs"),
        show_progress=False,
        demos=demos,
    )
    h = s["history"]
    assert h[0]["kl_full"] == 0.0 and all(x["sft_loss"] > 0 for x in h)
    assert nll(registry.load("ptx")[0]) < nll(registry.load("student")[0])
    with pytest.raises(IclawError, match="--sft-coef: no demonstrations"):
        train_distill(cfg, TASKS, sandbox=sandbox, verifier=Verifier(sandbox), device="cpu", demos=None)


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
    bare = tmp_path / "multi.jsonl"  # only multi-turn tasks: no one-call fix for the ptx term to imitate
    bare.write_text(
        "".join(json.dumps({**json.loads(t.to_json()), "multi_turn": True}) + "\n" for t in TASKS)
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "iclaw",
            "distill",
            *args[:-1],
            str(bare),
            "--teacher",
            "student",
            "--sft-coef",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 2 and "--sft-coef: no demonstrations to imitate" in p.stderr, p.stderr


def test_the_probe_reads_zero_for_the_teacher_itself_and_the_same_value_twice(home, sandbox):
    """The probe KL (fixed tasks, fixed sampling seed): exactly 0, exact and sampled, when the student is the
    teacher; above 0 for another model; the same reading for the same weights; in probe.jsonl from step 0."""
    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.policy import Policy
    from iclaw.train.distill import PROBE_SEED, PROBE_TASKS, probe_kl
    from iclaw.train.onpolicy import sample_tasks

    registry.publish("student", tiny(0), meta={"source": "test"})
    registry.publish("teacher", tiny(1), meta={"source": "test"})
    cfg = DistillConfig(teacher="teacher", student="student", amp=False, max_new_tokens=8, max_turns=1)
    ep, dev = EpisodeConfig(max_turns=1, max_new_tokens=8), torch.device("cpu")
    student = Policy.load(registry.resolve("student"))
    teacher = registry.load("teacher")[0]
    probe = sample_tasks(TASKS, min(PROBE_TASKS, len(TASKS)), step=0, seed=PROBE_SEED)  # as train_distill
    read = lambda t: probe_kl(student, t, probe, sandbox, Verifier(sandbox), ep, cfg, dev, dev)  # noqa: E731
    same = read(student.model)
    assert same["probe_kl"] == pytest.approx(0.0, abs=1e-6) and same["probe_kl_sampled"] == pytest.approx(
        0.0, abs=1e-6
    )
    other = read(teacher)
    assert other["probe_kl"] > 0.01 and read(teacher) == other
    out = train_distill(
        DistillConfig(**{**cfg.__dict__, "out": "d", "steps": 2, "probe_every": 2, "tasks_per_step": 2}),
        TASKS,
        sandbox=sandbox,
        verifier=Verifier(sandbox),
        device="cpu",
        log_dir=str(home / "runs"),
        show_progress=False,
    )
    lines = (home / "runs" / out["run_id"] / "probe.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 2] and out["probes"][0] == {"step": 0, **other}

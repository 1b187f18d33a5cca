"""`iclaw data prep` and `iclaw pretrain`: token files, an exact resume, checkpoints through the registry."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import ctrl_c_when

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.gpt import GPT, preset
from iclaw.model.tokenizer import EOT, get_tokenizer
from iclaw.train.data import prep
from iclaw.train.pretrain import PretrainConfig, pretrain


def test_data_prep_cli(tmp_path):
    src = tmp_path / "corpus"
    (src / "sub").mkdir(parents=True)
    (src / ".hidden").mkdir()
    texts = {"a.txt": "hello world\n" * 50, "sub/c.md": "# title\nsome words here\n" * 30}
    for name, text in texts.items():
        (src / name).write_text(text)
    (src / ".hidden" / "x.txt").write_text("never read")
    (src / "blob.dat").write_bytes(b"\x00\x01\x02" * 100)
    single = tmp_path / "b.py"
    single.write_text("print('hi')\n" * 40)
    out = tmp_path / "data"
    r = subprocess.run([sys.executable, "-m", "iclaw", "data", "prep", str(src), str(single), "--out", str(out),
                        "--val-frac", "0.2", "--no-shuffle"], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert (meta["files"], meta["skipped_files"], meta["dtype"]) == (3, 1, "uint16")
    tok = get_tokenizer()
    docs = [texts["a.txt"], texts["sub/c.md"], single.read_text()]  # files sorted, dirs walked, then files
    expected = [t for d in docs for t in tok.encode(d) + [EOT]]
    train = np.fromfile(out / "train.bin", dtype=np.uint16)
    val = np.fromfile(out / "val.bin", dtype=np.uint16)
    assert train.tolist() + val.tolist() == expected
    assert len(val) == int(len(expected) * 0.2) == meta["val_tokens"]
    bad = subprocess.run([sys.executable, "-m", "iclaw", "data", "prep", str(tmp_path / "nope"), "--out", str(out)],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "nope: no such file or directory" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def stdlib_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    prep([], out, max_tokens=30_000, progress=False)  # the default corpus: the Python stdlib's sources
    return out


def _cfg(data, tokens, out, **kw):
    base = dict(data=str(data), tokens=tokens, out=out, config="tiny", attn="mla", mlp="moe", pos="rope",
                optimizer="muon", batch=2, seq=32, lr=3e-3, warmup_frac=0.0, min_lr_frac=1.0, amp=False,
                eval_every=0, eval_batches=2)  # fmt: skip
    return PretrainConfig(**{**base, **kw})


def test_pretrain_resume_is_exact(stdlib_data, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    step_tokens = 2 * 32
    # straight: 4 steps. interrupted: 2 steps, saved, resumed to 4 (constant lr so the schedules agree)
    straight, s = pretrain(_cfg(stdlib_data, 4 * step_tokens, "straight"), progress=False)
    assert s["steps"] == 4 and s["ckpt_id"] and s["mfu"] > 0 and s["val_loss"] is not None
    _, s2 = pretrain(_cfg(stdlib_data, 2 * step_tokens, "resumed"), progress=False)
    assert s2["steps"] == 2
    resumed, s3 = pretrain(_cfg(stdlib_data, 4 * step_tokens, "resumed", resume=True), progress=False)
    assert s3["steps"] == 4 and s3["history"][0][0] == 3  # it continued at step 3
    a, b = straight.state_dict(), resumed.state_dict()
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k
    # the MoE routing bias moved, and resumed exactly
    assert any(k.endswith("expert_bias") and a[k].abs().sum() > 0 for k in a)
    # checkpoints are ordinary registry models (what the sampler, GRPO and distillation load)
    model, meta = registry.load("resumed")
    assert meta["step"] == 4 and model.config.attn == "mla" and model.config.mlp == "moe"
    assert len(registry.checkpoint_ids("resumed")) == 2
    with pytest.raises(IclawError, match="already trained"):
        pretrain(_cfg(stdlib_data, 4 * step_tokens, "resumed", resume=True), progress=False)
    with pytest.raises(IclawError, match="--attn mha: the checkpoint being resumed has attn=mla"):
        pretrain(_cfg(stdlib_data, 8 * step_tokens, "resumed", resume=True, attn="mha"), progress=False)


def test_pretrain_rejects_bad_input(stdlib_data, tmp_path):
    with pytest.raises(IclawError, match="--seq 1024: longer than the tiny model's block size 512"):
        pretrain(_cfg(stdlib_data, 1000, None, batch=1, seq=1024), progress=False)
    with pytest.raises(IclawError, match="train.bin: no such file"):
        pretrain(_cfg(tmp_path, 1000, None), progress=False)
    with pytest.raises(IclawError, match="--optimizer 'sgd'"):
        pretrain(_cfg(stdlib_data, 1000, None, optimizer="sgd"), progress=False)


def test_pretrain_under_torchrun_ddp(stdlib_data, tmp_path):
    """Two CPU ranks (gloo): each trains on its own slice, rank 0 evaluates, reports and saves."""
    env = {**os.environ, "ICLAW_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "iclaw",
           "pretrain", "--data", str(stdlib_data), "--tokens", "256", "--batch", "2", "--seq", "32", "--mlp", "moe",
           "--optimizer", "muon", "--out", "ddp", "--eval-batches", "1", "--json"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads(r.stdout)
    assert s["world_size"] == 2 and s["steps"] == 2 and s["tokens"] == 256 and s["ckpt_id"]
    assert (
        tmp_path / "home" / "models" / "ddp" / "checkpoints" / s["ckpt_id"] / "model.safetensors"
    ).is_file()


def test_ctrl_c_saves_pretraining_where_it_stopped(stdlib_data, tmp_path, monkeypatch):
    """A first Ctrl-C ends the run at a step boundary and saves it (the summary says why); exit 130."""
    env = {**os.environ, "ICLAW_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "iclaw", "pretrain", "--data", str(stdlib_data), "--tokens", "10M", "--batch", "2",
           "--seq", "32", "--eval-every", "1", "--eval-batches", "1", "--out", "pt", "--json"]  # fmt: skip
    p = ctrl_c_when(cmd, lambda out, err: "step 2/" in err.read_text(), cwd=tmp_path, env=env)
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["stopped"] == "interrupted (Ctrl-C)" and s["steps"] >= 2 and s["ckpt_id"]
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    assert registry.load("pt")[1]["step"] == s["steps"]


def test_pretrain_on_a_trimmed_vocabulary_resumes_exactly_with_its_curves(stdlib_data, tmp_path, monkeypatch):
    """--vocab: the shipped policy's vocabulary whole plus the corpus's frequent ids; the data read through it;
    an exact resume; the val and induction curves of both halves in the resumed checkpoint."""
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    step_tokens = 2 * 32
    kw = dict(attn=None, mlp=None, pos=None, optimizer="adamw", vocab=6720, eval_every=2)
    straight, s = pretrain(_cfg(stdlib_data, 4 * step_tokens, "straight", **kw), progress=False)
    task = registry.load("iclaw-small")[0].vocab
    assert len(straight.vocab) == 6720 == s["vocab"]["rows"] and task.kept <= straight.vocab.kept
    assert s["vocab"]["train_tokens"] > s["vocab"]["gpt2_train_tokens"]  # rare words spelled as bytes
    first, repeat = s["induction"]
    assert first > 5 and repeat > 5  # 4 steps: no copying yet
    logged = []
    pretrain(
        _cfg(stdlib_data, 2 * step_tokens, "resumed", **kw), progress=False, log=lambda *a: logged.append(a)
    )
    assert [step for step, _ in logged] == [1, 2] and "induction_repeat" in logged[1][1]
    resumed, s3 = pretrain(_cfg(stdlib_data, 4 * step_tokens, "resumed", resume=True, **kw), progress=False)
    for k, v in straight.state_dict().items():
        assert torch.allclose(v, resumed.state_dict()[k], atol=1e-6), k
    model, meta = registry.load("resumed")
    assert model.vocab == straight.vocab
    assert (
        [row[0] for row in meta["curves"]["induction"]] == [2, 4] == [row[0] for row in meta["curves"]["val"]]
    )
    assert meta["curves"]["induction"][1][2:] == list(s3["induction"])
    with pytest.raises(IclawError, match="--vocab 6784: the checkpoint being resumed has 6720 rows"):
        pretrain(
            _cfg(stdlib_data, 8 * step_tokens, "resumed", resume=True, **{**kw, "vocab": 6784}),
            progress=False,
        )


class Copier(GPT):
    """An oracle induction head: after a token seen before, all its logit on the token that followed it."""

    def forward(self, idx, targets=None, **kw):
        rows = self.rows(idx)
        logits = torch.zeros(*rows.shape, self.config.vocab_size)
        for b in range(rows.size(0)):
            for t in range(rows.size(1)):
                before = (rows[b, :t] == rows[b, t]).nonzero()
                if len(before):
                    logits[b, t, rows[b, before[-1, 0] + 1]] = 30.0
        return logits, None


def test_induction_check_scores_the_repeat_against_the_first_copy():
    from iclaw.model.gpt import preset
    from iclaw.model.vocab import Vocab
    from iclaw.train.pretrain import induction_loss

    shipped = registry.resolve("iclaw-small")
    vocab = Vocab.load(shipped, json.loads((shipped / "config.json").read_text())["vocab_size"])
    uniform = math.log(len(vocab))
    copier = Copier(preset("tiny"), vocab)
    first, repeat = induction_loss(copier, torch.device("cpu"), n=32, amp=False)
    # near uniform, and near 0 (a token drawn twice now and then makes the oracle copy the wrong successor);
    # scoring the first token of the repeat, which nothing predicts, would add uniform/n = 0.27
    assert abs(first - uniform) < 0.5 and repeat < 0.5
    torch.manual_seed(0)
    fresh = GPT(preset("tiny"), vocab)  # untrained: no better on the repeat than on the first copy
    first, repeat = induction_loss(fresh, torch.device("cpu"), n=32, amp=False)
    assert abs(first - repeat) < 0.1 and abs(first - uniform) < 1.0


def test_a_pretrained_checkpoint_round_trips_through_nanogpt_ckpt_pt_with_identical_perplexity(
    stdlib_data, tmp_path, monkeypatch
):
    """Our user's path: pretrain (here 4 steps, on a trimmed vocabulary) -> `iclaw models export` (nanoGPT's
    ckpt.pt) -> `iclaw models import` -> the same weights, vocabulary and perplexity. Architectures nanoGPT's
    GPT has no code for are refused in one line, and nothing is overwritten."""
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    kw = dict(attn=None, mlp=None, pos=None, optimizer="adamw", vocab=6720)
    pretrain(_cfg(stdlib_data, 4 * 64, "base", **kw), progress=False)
    registry.publish("rope", GPT(preset("tiny", pos="rope")), meta={"source": "test"})

    def iclaw(*args):
        return subprocess.run([sys.executable, "-m", "iclaw", *args], capture_output=True, text=True)

    out = tmp_path / "nano-out"
    r = iclaw("models", "export", "base", str(out))
    assert r.returncode == 0, r.stderr
    ckpt = torch.load(out / "ckpt.pt", weights_only=False)
    assert (
        ckpt["model_args"]["vocab_size"] == 6720
        and ckpt["iter_num"] == 4
        and len(ckpt["iclaw_vocab"]) == 6720
    )
    assert iclaw("models", "import", str(out / "ckpt.pt"), "--name", "back").returncode == 0
    text = tmp_path / "text.txt"
    text.write_text(open(os.__file__).read()[:6000])
    ppl = [json.loads(iclaw("ppl", str(text), "--model", m, "--json").stdout) for m in ("base", "back")]
    assert ppl[0]["perplexity"] == ppl[1]["perplexity"] and ppl[0]["tokens"] == ppl[1]["tokens"] > 500
    (a, _), (b, _) = registry.load("base"), registry.load("back")
    assert a.vocab == b.vocab and all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())

    again = iclaw("models", "export", "base", str(out))
    assert again.returncode == 2 and "exists; export never overwrites" in again.stderr
    rope = iclaw("models", "export", "rope", str(tmp_path / "rope-out"))
    assert (
        rope.returncode == 2
        and "learned positions, MHA and a dense MLP; this model has pos=rope" in rope.stderr
    )
    assert "Traceback" not in again.stderr + rope.stderr and not (tmp_path / "rope-out").exists()

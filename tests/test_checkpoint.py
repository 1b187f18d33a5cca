"""Native checkpoints (round trip, atomic replace, trainer state), vocab padding, and the errors a user sees
for bad input, both from the API and through the real CLI (`python -m iclaw`, one line, no traceback)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from iclaw.errors import IclawError
from iclaw.model.checkpoint import (
    load_checkpoint,
    load_trainer_state,
    save_checkpoint,
)
from iclaw.model.gpt import GPT, GPTConfig
from iclaw.model.weights import pad_vocab

SMALL = GPTConfig(block_size=32, vocab_size=50304, n_layer=1, n_head=2, n_embd=16)


def small_model(seed: int = 0, **over) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(**{**SMALL.to_dict(), **over})).eval()


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ICLAW_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "iclaw", *args], capture_output=True, text=True, env=env, timeout=120
    )


def assert_one_line_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    assert p.returncode != 0, p.stdout
    err = p.stderr.strip()
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error:"), err
    for n in needles:
        assert n in err, (n, err)
    return err


# ----------------------------------------------------------------------------------------------------------
# Round trip


def test_roundtrip_same_logits_and_meta(tmp_path):
    model = small_model()
    out = save_checkpoint(
        model,
        tmp_path / "ck",
        meta={"source": "test", "parent": "p0", "step": 7, "kl": 0.5},
        trainer_state=None,
    )
    assert out == tmp_path / "ck"
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]
    info = json.loads((out / "config.json").read_text())
    assert (
        info["iclaw_format"] == 1
        and info["source"] == "test"
        and info["parent"] == "p0"
        and info["step"] == 7
    )
    assert info["param_count"] == model.num_params() and info["n_embd"] == 16 and info["extra"] == {"kl": 0.5}
    assert info["created"].endswith("Z")

    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "lm_head.weight" not in keys and "transformer.wte.weight" in keys  # tied: stored once

    loaded, meta = load_checkpoint(out)
    assert meta["step"] == 7 and meta["kl"] == 0.5 and meta["format"] == "native"
    assert loaded.lm_head.weight is loaded.transformer.wte.weight  # re-tied
    idx = torch.randint(0, 50257, (2, 20))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], loaded(idx)[0])
    assert not any(n.startswith(".") for n in os.listdir(tmp_path))  # no tmp dir left behind


def test_loading_holds_the_files_tensors_not_a_random_copy(tmp_path):
    """The model (built plainly when small, on the meta device when big) takes the state dict's tensors
    themselves (importing 774M held three copies of the weights): same storage, trainable, tied, and real
    buffers of a trimmed vocabulary."""
    from iclaw.model.vocab import Vocab
    from iclaw.model.weights import model_from_state

    torch.manual_seed(0)
    src = GPT(
        GPTConfig(block_size=32, vocab_size=50304, n_layer=1, n_head=2, n_embd=16), Vocab.build([[5, 900]])
    )
    sd = {k: v.clone() for k, v in src.state_dict().items() if k != "lm_head.weight"}
    m = model_from_state(src.config, sd, tmp_path / "x", src.vocab)
    params = dict(m.named_parameters())
    assert all(params[k].data_ptr() == v.data_ptr() for k, v in sd.items())  # no copy was made
    assert all(p.requires_grad and not p.is_meta for p in m.parameters())
    assert m.lm_head.weight is m.transformer.wte.weight and not any(b.is_meta for b in m.buffers())
    assert torch.equal(m.id_of, src.id_of) and torch.equal(m.row_of, src.row_of)
    idx = torch.tensor([[5, 900, 5]])
    with torch.no_grad():
        assert torch.equal(m(idx)[0], src(idx)[0])


def test_wrapped_model_saves_plain_keys(tmp_path):
    model = small_model()
    # a real wrapper with a `.module` (as DDP has; torch.compile's has `._orig_mod`): its keys carry "module."
    wrapped = torch.optim.swa_utils.AveragedModel(model)
    save_checkpoint(wrapped, tmp_path / "ck", meta={"name": "stale", "format": "x", "step": 1})
    loaded, meta = load_checkpoint(tmp_path / "ck")
    assert torch.equal(loaded.transformer.h[0].attn.c_attn.weight, model.transformer.h[0].attn.c_attn.weight)
    assert meta["format"] == "native" and "name" not in meta  # load-time fields are not stored


def test_trainer_state_roundtrip_with_rng_states(tmp_path):
    model = small_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randint(0, 100, (1, 8)), torch.randint(0, 100, (1, 8)))[1].backward()
    opt.step()
    state = {
        "optimizer": opt.state_dict(),
        "step": 3,
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),  # the safe unpickler refuses this; our loader falls back
        "python_rng": random.getstate(),
    }
    save_checkpoint(model, tmp_path / "ck", trainer_state=state)
    got = load_trainer_state(tmp_path / "ck")
    assert got["step"] == 3 and torch.equal(got["torch_rng"], state["torch_rng"])
    assert got["python_rng"] == state["python_rng"]
    opt2 = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt2.load_state_dict(got["optimizer"])
    save_checkpoint(model, tmp_path / "no_state")
    assert load_trainer_state(tmp_path / "no_state") is None


def test_replace_existing_checkpoint_but_never_other_dirs(tmp_path):
    save_checkpoint(small_model(0), tmp_path / "ck", meta={"step": 1})
    save_checkpoint(small_model(1), tmp_path / "ck", meta={"step": 2})
    assert load_checkpoint(tmp_path / "ck")[1]["step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # old copy and tmp dir both gone
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(IclawError, match="not an iclaw checkpoint; refusing"):
        save_checkpoint(small_model(), precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(FileExistsError):
        save_checkpoint(small_model(), tmp_path / "ck", replace=False)


def test_dropout_forced_to_zero_on_load(tmp_path):
    save_checkpoint(small_model(dropout=0.1), tmp_path / "ck")
    model, meta = load_checkpoint(tmp_path / "ck")
    assert model.config.dropout == 0.0 and meta["saved_dropout"] == 0.1 and not model.training


def test_pad_vocab_mean_rows_take_little_probability():
    torch.manual_seed(0)
    wte = torch.randn(50257, 16) * 0.5
    sd = {"transformer.wte.weight": wte.clone(), "lm_head.weight": wte.clone()}
    assert pad_vocab(sd) == 50257
    new = sd["transformer.wte.weight"]
    assert new.shape == (50304, 16) and torch.equal(new[:50257], wte)
    assert torch.allclose(new[50257:], wte.mean(0).expand(47, -1))
    assert torch.equal(sd["lm_head.weight"], new)
    # tied head: the 47 new tokens together get < 47/50304 of the probability mass, for any hidden state (Jensen)
    h = torch.randn(64, 16) * 3
    p = torch.softmax(h @ new.t(), dim=-1)
    assert p[:, 50257:].sum(-1).max() < 47 / 50304


# ----------------------------------------------------------------------------------------------------------
# Bad input: API messages


def _nanogpt_ckpt(model: GPT, path: Path, extra: dict | None = None, drop: str | None = None) -> Path:
    sd = {"_orig_mod." + k: v for k, v in model.state_dict().items()}
    sd.update(extra or {})
    if drop:
        sd.pop("_orig_mod." + drop)
    c = model.config
    args = dict(
        n_layer=c.n_layer,
        n_head=c.n_head,
        n_embd=c.n_embd,
        block_size=c.block_size,
        bias=c.bias,
        vocab_size=c.vocab_size,
        dropout=0.0,
    )
    torch.save(
        {
            "model": sd,
            "model_args": args,
            "iter_num": 10,
            "best_val_loss": torch.tensor(2.5),
            "config": {"lr": 6e-4},
        },
        path,
    )
    return path


def test_nanogpt_roundtrip_and_bad_keys(tmp_path):
    model = small_model()
    loaded, meta = load_checkpoint(_nanogpt_ckpt(model, tmp_path / "ckpt.pt"))
    assert meta["step"] == 10 and meta["best_val_loss"] == 2.5 and meta["format"] == "nanogpt"
    idx = torch.randint(0, 50257, (1, 12))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], loaded(idx)[0])
    assert load_checkpoint(tmp_path)[1]["format"] == "nanogpt"  # an out_dir holding ckpt.pt works too

    bad = _nanogpt_ckpt(
        model, tmp_path / "bad.pt", extra={"_orig_mod.transformer.h.0.attn.q_proj.weight": torch.zeros(2)}
    )
    with pytest.raises(
        IclawError, match=r"bad\.pt: state dict .*unknown keys: transformer\.h\.0\.attn\.q_proj\.weight"
    ):
        load_checkpoint(bad)
    miss = _nanogpt_ckpt(model, tmp_path / "miss.pt", drop="transformer.ln_f.bias")
    with pytest.raises(IclawError, match=r"missing keys: transformer\.ln_f\.bias"):
        load_checkpoint(miss)
    not_nano = tmp_path / "plain.pt"
    torch.save({"weights": 1}, not_nano)
    with pytest.raises(IclawError, match=r"plain\.pt: not a nanoGPT checkpoint"):
        load_checkpoint(not_nano)


def test_config_mismatch_names_misshaped_keys(tmp_path):
    ck = save_checkpoint(small_model(), tmp_path / "ck")
    info = json.loads((ck / "config.json").read_text())
    info["n_embd"] = 32  # config now disagrees with the weights
    (ck / "config.json").write_text(json.dumps(info))
    with pytest.raises(
        IclawError,
        match=r"model\.safetensors: state dict does not match .*mis-shaped keys .*c_attn\.weight \(48, 16\) != \(96, 32\)",
    ):
        load_checkpoint(ck)
    info["n_embd"], info["n_layr"] = 16, 3
    (ck / "config.json").write_text(json.dumps(info))
    with pytest.raises(IclawError, match=r"config\.json: .*unknown keys: n_layr"):
        load_checkpoint(ck)


def test_truncated_and_missing_files(tmp_path):
    ck = save_checkpoint(small_model(), tmp_path / "ck")
    data = (ck / "model.safetensors").read_bytes()
    (ck / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(IclawError, match=r"model\.safetensors: truncated or corrupt safetensors file"):
        load_checkpoint(ck)
    with pytest.raises(IclawError, match=r"nowhere: no such file or directory"):
        load_checkpoint(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("just some text\n")
    with pytest.raises(IclawError, match=r"notes\.txt: not a checkpoint"):
        load_checkpoint(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IclawError, match=r"empty: not a checkpoint directory"):
        load_checkpoint(tmp_path / "empty")


# ----------------------------------------------------------------------------------------------------------
# Bad input: through the real CLI


def test_cli_errors_are_one_line(tmp_path):
    home = tmp_path / "home"
    model = small_model()
    trunc = save_checkpoint(model, tmp_path / "trunc")
    data = (trunc / "model.safetensors").read_bytes()
    (trunc / "model.safetensors").write_bytes(data[:1000])
    bad_keys = _nanogpt_ckpt(
        model, tmp_path / "bad.pt", extra={"_orig_mod.transformer.h.9.mlp.c_fc.weight": torch.zeros(1)}
    )
    (tmp_path / "text.txt").write_text("hello world\n")

    assert_one_line_error(
        run_cli("models", "import", str(tmp_path / "nope"), "--name", "x", home=home),
        "nope: no such file or directory",
    )
    assert_one_line_error(
        run_cli("models", "import", str(tmp_path / "text.txt"), "--name", "x", home=home),
        "text.txt: not a checkpoint",
    )
    assert_one_line_error(
        run_cli("models", "import", str(trunc), "--name", "x", home=home),
        "model.safetensors: truncated or corrupt",
    )
    assert_one_line_error(
        run_cli("models", "import", str(bad_keys), "--name", "x", home=home),
        "bad.pt: state dict",
        "unknown keys: transformer.h.9.mlp.c_fc.weight",
    )
    assert_one_line_error(
        run_cli("ppl", "--model", "nosuch", str(tmp_path / "text.txt"), home=home),
        "unknown model 'nosuch'",
        "iclaw models import PATH --name NAME",
    )
    assert not (home / "models" / "x").exists()  # failed imports register nothing


def test_hf_config_that_changes_the_math_is_refused(tmp_path):
    base = {
        "model_type": "gpt2",
        "n_layer": 1,
        "n_head": 2,
        "n_embd": 16,
        "n_positions": 32,
        "vocab_size": 50257,
    }
    for change, needle in [
        ({"activation_function": "relu"}, "activation_function is 'relu'"),
        ({"layer_norm_epsilon": 1e-6}, "layer_norm_epsilon is 1e-06"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx is True"),
        ({"model_type": "llama"}, "model_type 'llama' is not gpt2"),
    ]:
        d = tmp_path / needle.split()[0]
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**base, **change}))
        with pytest.raises(IclawError, match=re.escape(f"{d / 'config.json'}: ") + ".*" + re.escape(needle)):
            load_checkpoint(d)
    (tmp_path / "noweights").mkdir()
    (tmp_path / "noweights" / "config.json").write_text(json.dumps(base))
    with pytest.raises(IclawError, match="no model.safetensors or pytorch_model.bin"):
        load_checkpoint(tmp_path / "noweights")

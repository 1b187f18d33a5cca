"""End to end: a tiny GPT-2 built with transformers (random init, fixed seed), saved as HF safetensors, as an
old-style HF pytorch_model.bin, and as a nanoGPT ckpt.pt → `iclaw models import` → `iclaw ppl` through the
real CLI, compared with the perplexity transformers computes on the same weights, text and windows."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from iclaw.model.ppl import windows
from iclaw.model.tokenizer import get_tokenizer

transformers = pytest.importorskip("transformers")

N_POS = 128
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ICLAW_HOME": str(home)}
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 0, p.stderr
    return p


def make_text(n_words: int = 700) -> str:
    rng = random.Random(0)
    words = "the a shell command file prints error fix run python list of lines in directory with".split()
    return " ".join(rng.choice(words) for _ in range(n_words)) + "\n"


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """The HF model plus the three on-disk copies of its weights."""
    from transformers import GPT2Config, GPT2LMHeadModel

    root = tmp_path_factory.mktemp("ppl")
    torch.manual_seed(1234)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=N_POS, vocab_size=50257)
    ).eval()
    # a few steps of training on the text, so the model is far from uniform (random init gives perplexity ~
    # vocab size, where a wrongly transposed weight would hardly show)
    text = make_text()
    x = torch.tensor(get_tokenizer().encode(text))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(8):
        s = (step * 67) % (len(x) - N_POS)
        batch = x[s : s + N_POS][None]
        loss = model(batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()

    st = root / "hf_safetensors"
    model.save_pretrained(st)
    assert (st / "model.safetensors").is_file()

    # transformers >= 5 always writes safetensors; write the legacy layout by hand: config.json +
    # pytorch_model.bin with GPT2Model-style keys (no "transformer." prefix) and the old mask buffers
    binary = root / "hf_bin"
    model.config.save_pretrained(binary)
    sd = {
        k.removeprefix("transformer."): v.clone()
        for k, v in model.state_dict().items()
        if k != "lm_head.weight"
    }
    for i in range(2):
        sd[f"h.{i}.attn.bias"] = torch.tril(torch.ones(N_POS, N_POS, dtype=torch.bool))[None, None]
        sd[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    torch.save(sd, binary / "pytorch_model.bin")

    # nanoGPT: nn.Linear layout, torch.compile's "_orig_mod." prefix, the dict train.py saves
    nano = {}
    for k, v in model.state_dict().items():
        nano["_orig_mod." + k] = v.t().contiguous() if k.endswith(CONV1D) else v.clone()
    tmp_model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(tmp_model.parameters())
    ckpt = {
        "model": nano,
        "optimizer": opt.state_dict(),
        "model_args": dict(
            n_layer=2, n_head=2, n_embd=64, block_size=N_POS, bias=True, vocab_size=50257, dropout=0.0
        ),
        "iter_num": 500,
        "best_val_loss": torch.tensor(3.25),
        "config": {"learning_rate": 6e-4, "dataset": "openwebtext", "compile": True},
    }
    nano_path = root / "out" / "ckpt.pt"
    nano_path.parent.mkdir()
    torch.save(ckpt, nano_path)

    text_file = root / "text.txt"
    text_file.write_text(text)
    return {
        "model": model,
        "st": st,
        "bin": binary,
        "nano": nano_path,
        "text": text_file,
        "home": root / "home",
    }


def hf_reference_ppl(model, ids: list[int], stride: int) -> tuple[float, int]:
    """The HF guide's strided loop, with transformers computing the loss; counts the scored tokens exactly."""
    x = torch.tensor(ids)[None]
    nll_sum, n, prev_end = 0.0, 0, 0
    for begin in range(0, len(ids), stride):
        end = min(begin + N_POS, len(ids))
        trg_len = end - prev_end
        inp = x[:, begin:end]
        labels = inp.clone()
        labels[:, :-trg_len] = -100
        with torch.no_grad():
            loss = model(inp, labels=labels).loss
        n_scored = int((labels[:, 1:] != -100).sum())  # transformers shifts labels by one inside
        nll_sum += loss.item() * n_scored
        n += n_scored
        prev_end = end
        if end == len(ids):
            break
    return math.exp(nll_sum / n), n


def test_windows_score_every_token_after_the_first_once():
    for n, t, s in [(5, 8, 4), (8, 8, 4), (9, 8, 4), (100, 16, 8), (101, 16, 5), (50, 16, 1), (40, 8, 8)]:
        scored = []
        for w in windows(n, t, s):
            assert w.end - w.begin <= t
            scored += list(range(w.end - w.n_scored, w.end))
        if s < t:
            assert scored == list(range(1, n)), (n, t, s)
        else:  # non-overlapping windows: each window's first token has no context
            assert scored == [i for i in range(1, n) if i % t], (n, t, s)


def test_imported_ppl_matches_transformers(hf):
    ids = get_tokenizer().encode(hf["text"].read_text())
    assert len(ids) > 4 * N_POS  # several windows
    ref, n_ref = hf_reference_ppl(hf["model"], ids, stride=N_POS // 2)
    ref32, _ = hf_reference_ppl(hf["model"], ids, stride=32)
    home = hf["home"]

    out = run_cli("models", "import", str(hf["st"]), "--name", "hf-st", home=home).stdout
    assert "imported" in out and "'hf-st'" in out
    run_cli("models", "import", str(hf["bin"]), "--name", "hf-bin", home=home)
    run_cli("models", "import", str(hf["nano"]), "--name", "nano", home=home)
    results = {
        "hf-st": json.loads(run_cli("ppl", "--model", "hf-st", str(hf["text"]), "--json", home=home).stdout)
    }
    # the other two through the same CLI app in process (saves two ~3 s torch-importing subprocesses)
    from typer.testing import CliRunner

    from iclaw.cli import app

    env = {"ICLAW_HOME": str(home)}
    r = CliRunner().invoke(app, ["ppl", "--model", "hf-bin", str(hf["text"]), "--json"], env=env)
    assert r.exit_code == 0, r.output
    results["hf-bin"] = json.loads(r.stdout)
    r = CliRunner().invoke(
        app, ["ppl", "--model", "nano", str(hf["text"])], env=env
    )  # the human-readable form
    assert r.exit_code == 0 and r.stdout.startswith("perplexity: "), r.output
    results["nano"] = {
        "perplexity": float(r.stdout.splitlines()[0].removeprefix("perplexity: ")),
        "tokens": n_ref,
    }

    # --stride, in process (one subprocess less): the same registry entry, windows of stride 32
    from iclaw.model import registry
    from iclaw.model.ppl import perplexity

    os.environ["ICLAW_HOME"] = str(home)
    try:
        net, meta = registry.load("hf-st")
    finally:
        del os.environ["ICLAW_HOME"]
    ours32 = perplexity(net, ids, stride=32)

    print(f"\ntransformers: ppl {ref:.6f} over {n_ref} tokens (stride 64); {ref32:.6f} (stride 32)")
    for name, r in results.items():
        print(
            f"iclaw {name}: ppl {r['perplexity']:.6f} over {r['tokens']} tokens, rel diff {abs(r['perplexity'] / ref - 1):.2e}"
        )
    print(
        f"iclaw hf-st stride 32: {ours32['perplexity']:.6f}, rel diff {abs(ours32['perplexity'] / ref32 - 1):.2e}"
    )

    assert 1.5 < ref < 1000  # a trained, far-from-uniform model
    for r in results.values():
        assert r["tokens"] == n_ref == len(ids) - 1
        assert abs(r["perplexity"] / ref - 1) < 1e-3
    assert results["hf-st"]["stride"] == 64 and results["hf-st"]["block_size"] == N_POS
    assert ours32["stride"] == 32 and abs(ours32["perplexity"] / ref32 - 1) < 1e-3
    assert meta["name"] == "hf-st" and meta["ckpt_id"].startswith("import-")


def test_models_list_and_info_render(hf, tmp_path):
    """The table/text forms, in process (typer's runner, real files under a real ICLAW_HOME)."""
    from typer.testing import CliRunner

    from iclaw.cli import app

    home = hf["home"]
    if not (home / "models" / "nano").is_dir():
        run_cli("models", "import", str(hf["nano"]), "--name", "nano", home=home)
    env = {"ICLAW_HOME": str(home), "COLUMNS": "200"}
    runner = CliRunner()
    listing = json.loads(runner.invoke(app, ["models", "list", "--json"], env=env).stdout)
    nano = next(m for m in listing if m["name"] == "nano")
    assert nano["source"].startswith("nanogpt:") and nano["latest"].startswith("import-")
    assert nano["params"] == 2 * (12 * 64 * 64 + 13 * 64) + 50304 * 64 + N_POS * 64 + 2 * 64
    info = json.loads(runner.invoke(app, ["models", "info", "nano", "--json"], env=env).stdout)
    assert info["config"]["vocab_size"] == 50304 and info["config"]["n_layer"] == 2
    assert info["latest_meta"]["step"] == 500 and info["latest_meta"]["original_vocab_size"] == 50257
    table = runner.invoke(app, ["models", "list"], env=env)
    assert table.exit_code == 0 and "nano" in table.stdout and "nanogpt:" in table.stdout
    text = runner.invoke(app, ["models", "info", "nano"], env=env)
    assert (
        text.exit_code == 0 and "checkpoints (1, oldest first)" in text.stdout and "← latest" in text.stdout
    )
    empty = runner.invoke(app, ["models", "list", "--json"], env={"ICLAW_HOME": str(tmp_path)})
    assert [(m["name"], m["builtin"]) for m in json.loads(empty.stdout)] == [("iclaw-small", True)]

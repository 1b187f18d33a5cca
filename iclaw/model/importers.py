"""Importers for checkpoints we did not write: nanoGPT `ckpt.pt` files and Hugging Face GPT-2 directories,
and the one exporter, to nanoGPT's `ckpt.pt` (our user's own pretraining format).

Both end as the same GPT (iclaw/model/gpt.py), whose state-dict keys are nanoGPT's, with dropout 0 and the
vocabulary padded from GPT-2's 50257 to 50304 (`pad_vocab`). nanoGPT needs little: strip torch.compile's
`_orig_mod.` prefix, drop the causal-mask buffer. HF needs its keys renamed, its Conv1D weights transposed,
and its config checked for options our GPT does not compute. `load_checkpoint` (checkpoint.py) picks one.
"""

from __future__ import annotations

from pathlib import Path

import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig
from iclaw.model.vocab import Vocab
from iclaw.model.weights import (
    check_vocab,
    listing,
    model_from_state,
    pad_vocab,
    read_json,
    read_safetensors,
    torch_load,
)

# ----------------------------------------------------------------------------------------------------------
# nanoGPT


NANOGPT_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")
# the GPT-2 id of each row of a trimmed vocabulary, a key nanoGPT's train.py never reads
VOCAB_KEY = "iclaw_vocab"


def import_nanogpt(ckpt_pt_path: Path | str) -> tuple[GPT, dict]:
    """A nanoGPT ckpt.pt: {"model": state dict, "model_args": {...}, "iter_num", "best_val_loss", "config", ...}.

    `_orig_mod.` prefixes (left by torch.compile) are stripped, vocab is padded to 50304, dropout forced to 0.
    """
    file = Path(ckpt_pt_path).expanduser()
    if not file.is_file():
        raise IclawError(f"{file}: no such file")
    ckpt = torch_load(file, allow_unsafe=True)
    if not isinstance(ckpt, dict) or "model" not in ckpt or "model_args" not in ckpt:
        what = f"keys: {listing(sorted(map(str, ckpt)))}" if isinstance(ckpt, dict) else type(ckpt).__name__
        raise IclawError(
            f"{file}: not a nanoGPT checkpoint (expected a dict with 'model' and 'model_args'; got {what})"
        )
    args = ckpt["model_args"]
    config, vocab = nanogpt_config(args, file, ckpt.get(VOCAB_KEY))
    sd = {}
    for k, v in ckpt["model"].items():
        k = k.removeprefix("_orig_mod.")
        if (
            k.endswith(".attn.bias") and v.dim() == 4
        ):  # nanoGPT's causal-mask buffer (no-flash path), not a weight
            continue
        sd[k] = v
    if "transformer.wte.weight" not in sd:
        raise IclawError(f"{file}: state dict has no transformer.wte.weight (keys: {listing(list(sd))})")
    if vocab is None and sd["transformer.wte.weight"].shape[0] == int(args["vocab_size"]):
        pad_vocab(sd, config.vocab_size)
    model = model_from_state(config, sd, file, vocab)
    step = ckpt.get("iter_num")
    meta = {
        "format": "nanogpt",
        "source": f"nanogpt:{file.resolve()}",
        "parent": None,
        "step": int(step) if step is not None else None,
        "original_vocab_size": int(args["vocab_size"]),
    }
    best = ckpt.get("best_val_loss")
    if best is not None:
        meta["best_val_loss"] = float(best)
    if args.get("dropout"):
        meta["saved_dropout"] = float(args["dropout"])
    return model, meta


def nanogpt_config(args: dict, file: Path, vocab_ids: list | None = None) -> tuple[GPTConfig, Vocab | None]:
    """The GPTConfig of a nanoGPT checkpoint's `model_args` (vocab padded to 50304, dropout 0), and the trimmed
    vocabulary when the file carries one (`VOCAB_KEY`, written by export_nanogpt)."""
    absent = [k for k in NANOGPT_ARGS if k not in args]
    if absent:
        raise IclawError(f"{file}: model_args lacks {', '.join(absent)}")
    vocab = None
    if vocab_ids is not None:
        vocab = Vocab(vocab_ids, where=f"{file}: {VOCAB_KEY}")
        if len(vocab) != int(args["vocab_size"]):
            raise IclawError(f"{file}: {VOCAB_KEY} has {len(vocab)} ids for vocab_size {args['vocab_size']}")
    return GPTConfig(
        block_size=int(args["block_size"]),
        vocab_size=len(vocab) if vocab else check_vocab(int(args["vocab_size"]), file),
        trimmed=vocab is not None,
        n_layer=int(args["n_layer"]),
        n_head=int(args["n_head"]),
        n_embd=int(args["n_embd"]),
        dropout=0.0,
        bias=bool(args["bias"]),
    ), vocab


def export_nanogpt(model: GPT, meta: dict, file: Path) -> Path:
    """Write `model` as nanoGPT's ckpt.pt: its state dict (the keys are already nanoGPT's), `model_args`,
    `iter_num`, `best_val_loss` and `config`; `import_nanogpt` reads it back to the same weights. nanoGPT's GPT
    has learned positions, MHA and a dense MLP, so only those export. A trimmed vocabulary is kept as
    VOCAB_KEY: nanoGPT can load and train such a file, but its ids are rows, not GPT-2 ids."""
    c = model.config
    if (c.pos, c.attn, c.mlp) != ("learned", "mha", "dense"):
        raise IclawError(
            f"nanoGPT's GPT has learned positions, MHA and a dense MLP; this model has pos={c.pos}, "
            f"attn={c.attn}, mlp={c.mlp}"
        )
    args = dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.block_size, bias=c.bias)
    best = meta.get("best_val_loss", meta.get("val_loss"))
    ckpt = {
        "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "model_args": {**args, "vocab_size": c.vocab_size, "dropout": 0.0},
        "iter_num": int(meta.get("step") or 0),
        "best_val_loss": float(best if best is not None else "nan"),
        "config": {"exported_by": "iclaw", "source": meta.get("source")},
    }
    if c.trimmed:
        ckpt[VOCAB_KEY] = list(model.vocab.ids)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.tmp")
    torch.save(ckpt, tmp)
    tmp.replace(file)  # a reader never sees half a file
    return file


# ----------------------------------------------------------------------------------------------------------
# Hugging Face GPT-2

# HF GPT-2 stores these four as Conv1D, i.e. (in, out): the transpose of nn.Linear's (out, in).
CONV1D_SUFFIXES = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def _hf_state_dict(path: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """Read an HF directory's weights: model.safetensors, pytorch_model.bin, or their sharded index files."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            return _read_weights(path / name), path / name
        index = path / f"{name}.index.json"
        if index.is_file():
            weight_map = read_json(index).get("weight_map") or {}
            sd = {}
            for shard in sorted(set(weight_map.values())):
                sd.update(_read_weights(path / shard))
            return sd, index
    raise IclawError(f"{path}: Hugging Face config.json found but no model.safetensors or pytorch_model.bin")


def _read_weights(file: Path) -> dict[str, torch.Tensor]:
    if file.name.endswith(".safetensors"):
        return read_safetensors(file)
    if not file.is_file():
        raise IclawError(f"{file}: no such file")
    sd = torch_load(file, allow_unsafe=False)
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise IclawError(f"{file}: not a state dict of tensors")
    return sd


def hf_config(path: Path) -> tuple[GPTConfig, dict]:
    """The GPTConfig of a Hugging Face GPT-2 directory (vocab padded to 50304, dropout 0) and its raw
    config.json, read without the weights. Options our GPT does not compute are an IclawError."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise IclawError(f"{path}: not a directory (expected a Hugging Face GPT-2 directory)")
    cfg_path = path / "config.json"
    c = read_json(cfg_path)
    if c.get("model_type", "gpt2") != "gpt2":
        raise IclawError(f"{cfg_path}: model_type {c.get('model_type')!r} is not gpt2")
    n_embd = int(c.get("n_embd", 768))
    checks = [  # (key, value found, what our GPT computes)
        ("activation_function", c.get("activation_function", "gelu_new"), ("gelu_new", "gelu_pytorch_tanh")),
        ("layer_norm_epsilon", float(c.get("layer_norm_epsilon", 1e-5)), (1e-5,)),
        ("scale_attn_weights", c.get("scale_attn_weights", True), (True,)),
        ("scale_attn_by_inverse_layer_idx", c.get("scale_attn_by_inverse_layer_idx", False), (False,)),
        ("n_inner", c.get("n_inner"), (None, 4 * n_embd)),
        ("add_cross_attention", c.get("add_cross_attention", False), (False,)),
        ("tie_word_embeddings", c.get("tie_word_embeddings", True), (True,)),
    ]
    for key, found, ok in checks:
        if found not in ok:
            want = " or ".join(repr(v) for v in ok)
            raise IclawError(f"{cfg_path}: {key} is {found!r}; iclaw's GPT computes {want}")
    absent = [k for k in ("n_layer", "n_head", "n_embd", "vocab_size") if k not in c]
    if absent or not ("n_positions" in c or "n_ctx" in c):
        raise IclawError(f"{cfg_path}: missing {', '.join(absent) or 'n_positions'}")

    config = GPTConfig(
        block_size=int(c.get("n_positions", c.get("n_ctx"))),
        vocab_size=check_vocab(int(c["vocab_size"]), cfg_path),
        n_layer=int(c["n_layer"]),
        n_head=int(c["n_head"]),
        n_embd=n_embd,
        dropout=0.0,
        bias=True,
    )
    return config, c


def import_hf_gpt2(dir: Path | str) -> tuple[GPT, dict]:
    """A Hugging Face GPT-2 directory (config.json + model.safetensors or pytorch_model.bin).

    Keys may carry "transformer." (GPT2LMHeadModel) or not (GPT2Model); Conv1D weights are transposed into
    nn.Linear layout; the causal-mask buffers .attn.bias / .attn.masked_bias are skipped; vocab padded to 50304.
    Config options that would change the math (activation, LayerNorm epsilon, attention scaling, MLP width)
    must match what our GPT computes, else IclawError.
    """
    path = Path(dir).expanduser()
    config, c = hf_config(path)
    raw, weights_file = _hf_state_dict(path)
    sd = {}
    for k in list(raw):
        v = raw.pop(k)  # each file tensor is let go once converted: never two copies of the weights
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # causal-mask buffers, not weights
        k = k.removeprefix("transformer.")
        if not k.startswith("lm_head."):
            k = "transformer." + k
        if k.endswith(CONV1D_SUFFIXES) and v.dim() == 2:
            v = v.t()
        sd[k] = v.contiguous()
    if "transformer.wte.weight" not in sd:
        raise IclawError(f"{weights_file}: no wte.weight (keys: {listing(list(raw))})")
    if sd["transformer.wte.weight"].shape[0] == int(c["vocab_size"]):
        pad_vocab(sd, config.vocab_size)
    model = model_from_state(config, sd, weights_file)
    meta = {
        "format": "hf",
        "source": f"hf-gpt2:{path.resolve()}",
        "parent": None,
        "step": None,
        "original_vocab_size": int(c["vocab_size"]),
    }
    return model, meta

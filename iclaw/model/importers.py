"""Importers for checkpoints we did not write: nanoGPT `ckpt.pt` files and Hugging Face GPT-2 directories.

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
    config = nanogpt_config(args, file)
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
    if sd["transformer.wte.weight"].shape[0] == int(args["vocab_size"]):
        pad_vocab(sd, config.vocab_size)
    model = model_from_state(config, sd, file)
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


def nanogpt_config(args: dict, file: Path) -> GPTConfig:
    """The GPTConfig of a nanoGPT checkpoint's `model_args`: vocab padded to 50304, dropout 0."""
    absent = [k for k in NANOGPT_ARGS if k not in args]
    if absent:
        raise IclawError(f"{file}: model_args lacks {', '.join(absent)}")
    return GPTConfig(
        block_size=int(args["block_size"]),
        vocab_size=check_vocab(int(args["vocab_size"]), file),
        n_layer=int(args["n_layer"]),
        n_head=int(args["n_head"]),
        n_embd=int(args["n_embd"]),
        dropout=0.0,
        bias=bool(args["bias"]),
    )


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

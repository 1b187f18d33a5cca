"""Checkpoints: our native format, plus importers for nanoGPT `ckpt.pt` files and Hugging Face GPT-2 dirs.

Native format: a directory holding
    model.safetensors   the state dict (lm_head.weight is tied to transformer.wte.weight, so stored once)
    config.json         GPTConfig.to_dict() + metadata: iclaw_format, source, created, parent, step,
                        param_count, and "extra" (any other metadata the caller passed)
    trainer_state.pt    optional: whatever the trainer needs to resume (optimizer, RNG, step), torch.save'd

A checkpoint is written into a hidden sibling (".NAME.tmp-PID-RAND"), every file and the directory are
fsync'd, and only then is it renamed to NAME. rename() is atomic, so a reader (the agent hot-reloading the
newest policy) sees either no checkpoint or a complete one, never a half-written one.

All three formats load into the same GPT (iclaw/model/gpt.py), whose state-dict keys are nanoGPT's.
Vocabularies of GPT-2's 50257 tokens are padded to 50304 on import (see `pad_vocab`): the extra rows are
the agent's control-token slots.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig

FORMAT = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TRAINER_FILE = "trainer_state.pt"
PADDED_VOCAB = 50304  # GPT-2's 50257 tokens padded to a multiple of 64; the extra slots are control tokens
GPT2_VOCAB = 50257

# Top-level metadata keys in config.json; every other key there is a GPTConfig field.
META_KEYS = ("iclaw_format", "source", "created", "parent", "step", "param_count", "extra")
# HF GPT-2 stores these four as Conv1D, i.e. (in, out): the transpose of nn.Linear's (out, in).
CONV1D_SUFFIXES = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ----------------------------------------------------------------------------------------------------------
# Saving


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_native(path: Path) -> bool:
    """A native checkpoint directory: config.json carrying our format marker."""
    cfg = Path(path) / CONFIG_FILE
    if not cfg.is_file():
        return False
    try:
        return "iclaw_format" in json.loads(cfg.read_text())
    except (OSError, ValueError):
        return False


def tmp_name(path: Path) -> Path:
    """The hidden sibling a checkpoint is assembled in. Names starting with '.' are never read as checkpoints."""
    return path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def save_checkpoint(
    model: GPT,
    path: Path,
    *,
    meta: dict | None = None,
    trainer_state: dict | None = None,
    replace: bool = True,
) -> Path:
    """Write `model` as a native checkpoint directory at `path`, atomically; returns `path`.

    meta: "source", "parent" (the checkpoint this one was trained from) and "step" are stored at the top level
    of config.json; any other keys go under "extra" (JSON-serialisable values only).
    trainer_state: torch.save'd to trainer_state.pt (load it back with `load_trainer_state`).
    replace: if `path` already holds a native checkpoint, swap it out (the old one is moved aside, the new one
    renamed in, the old one deleted: a reader may briefly find no checkpoint, never a partial one). Anything
    at `path` that is not a native checkpoint is never replaced. With replace=False an existing `path` raises
    FileExistsError (the registry uses this to pick a fresh id).
    """
    path = Path(path)
    model = unwrap(model)
    meta = dict(meta or {})
    if path.exists():
        if not replace:
            raise FileExistsError(path)
        if not is_native(path):
            raise IclawError(f"{path}: exists and is not an iclaw checkpoint; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)

    config = model.config.to_dict()
    clash = sorted(set(config) & set(meta))
    if clash:
        raise IclawError(f"checkpoint metadata keys clash with model config fields: {', '.join(clash)}")
    info = dict(config)
    info["iclaw_format"] = FORMAT
    info["source"] = meta.pop("source", None)
    info["created"] = now_iso()
    info["parent"] = meta.pop("parent", None)
    info["step"] = meta.pop("step", None)
    info["param_count"] = model.num_params()
    # computed here, or filled in at load time (a caller may pass back the meta it got from a load)
    for k in ("iclaw_format", "created", "param_count", "extra", "format", "name", "ckpt_id", "path"):
        meta.pop(k, None)
    info["extra"] = meta
    try:
        config_text = json.dumps(info, indent=2, sort_keys=False) + "\n"
    except TypeError as e:
        raise IclawError(f"checkpoint metadata is not JSON-serialisable: {e}") from None

    tmp = tmp_name(path)
    tmp.mkdir()
    try:
        from safetensors.torch import save_file

        save_file(state_dict_for_save(model), str(tmp / MODEL_FILE), metadata={"format": "pt"})
        _fsync_file(tmp / MODEL_FILE)
        (tmp / CONFIG_FILE).write_text(config_text)
        _fsync_file(tmp / CONFIG_FILE)
        if trainer_state is not None:
            torch.save(trainer_state, tmp / TRAINER_FILE)
            _fsync_file(tmp / TRAINER_FILE)
        _fsync_dir(tmp)
        if path.exists():  # replace: move the old one aside first (rename() cannot replace a non-empty dir)
            old = path.parent / f".{path.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.rename(tmp, path)  # atomic; fails if someone else created a non-empty `path` meanwhile
            except OSError:
                if path.exists() and not replace:
                    raise FileExistsError(path) from None
                raise
        _fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def unwrap(model):
    """The GPT inside torch.compile (`_orig_mod`) and DDP (`module`) wrappers, so saved keys stay nanoGPT's."""
    while True:
        inner = getattr(model, "_orig_mod", None) or getattr(model, "module", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def state_dict_for_save(model: GPT) -> dict[str, torch.Tensor]:
    """The state dict as stored: lm_head.weight dropped (it is wte, tied), tensors contiguous and on CPU."""
    sd = model.state_dict()
    out = {}
    for k, v in sd.items():
        if (
            k == "lm_head.weight"
            and "transformer.wte.weight" in sd
            and v.data_ptr() == sd["transformer.wte.weight"].data_ptr()
        ):
            continue
        out[k] = v.detach().to("cpu").contiguous()
    return out


# ----------------------------------------------------------------------------------------------------------
# Loading: detection


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu") -> tuple[GPT, dict]:
    """Load a native checkpoint dir, a nanoGPT ckpt.pt (or a dir holding one), or an HF GPT-2 dir.

    Returns (model in eval mode on `device`, meta). The model is always built with dropout 0: every path that
    loads a checkpoint (agent, RL, eval) wants deterministic forward passes; the stored value is kept in
    meta["saved_dropout"] when it was not 0.
    """
    path = Path(path).expanduser()
    kind = detect(path)
    if kind == "native":
        model, meta = _load_native(path)
    elif kind == "nanogpt":
        model, meta = import_nanogpt(path if path.is_file() else path / "ckpt.pt")
    else:
        model, meta = import_hf_gpt2(path)
    return model.to(device).eval(), meta


def detect(path: Path) -> str:
    """'native' | 'nanogpt' | 'hf'; IclawError naming the path if it is none of them."""
    if not path.exists():
        raise IclawError(f"{path}: no such file or directory")
    if path.is_dir():
        cfg = path / CONFIG_FILE
        if cfg.is_file():
            d = _read_json(cfg)
            if "iclaw_format" in d:
                return "native"
            if d.get("model_type") == "gpt2" or {"n_embd", "n_layer", "n_positions"} <= set(d):
                return "hf"
            if (path / "ckpt.pt").is_file():
                return "nanogpt"
            raise IclawError(
                f"{cfg}: not an iclaw or GPT-2 config (model_type={d.get('model_type')!r}); "
                "only GPT-2-family checkpoints can be loaded"
            )
        if (path / "ckpt.pt").is_file():
            return "nanogpt"
        if (path / MODEL_FILE).is_file():
            raise IclawError(f"{path}: has {MODEL_FILE} but no {CONFIG_FILE}")
        raise IclawError(
            f"{path}: not a checkpoint directory (expected {MODEL_FILE} + {CONFIG_FILE}, a nanoGPT ckpt.pt, "
            "or a Hugging Face GPT-2 directory)"
        )
    if path.name == MODEL_FILE or path.name == CONFIG_FILE:
        return detect(path.parent)  # pointing at a file inside a checkpoint dir means the dir
    return "nanogpt"  # any other file: we only read nanoGPT's torch.save'd dicts (checked on load)


def _read_json(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise IclawError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(d, dict):
        raise IclawError(f"{path}: expected a JSON object")
    return d


def _build_config(d: dict, where: Path) -> GPTConfig:
    try:
        cfg = GPTConfig.from_dict(d)
    except IclawError as e:
        raise IclawError(f"{where}: {e}") from None
    except TypeError as e:
        raise IclawError(f"{where}: bad model config ({e})") from None
    return cfg


# ----------------------------------------------------------------------------------------------------------
# Loading: native


def _load_native(path: Path) -> tuple[GPT, dict]:
    cfg_path = path / CONFIG_FILE
    info = _read_json(cfg_path)
    fmt = info.get("iclaw_format")
    if fmt != FORMAT:
        raise IclawError(
            f"{cfg_path}: iclaw_format {fmt!r} is not supported (this iclaw reads format {FORMAT})"
        )
    config = _build_config({k: v for k, v in info.items() if k not in META_KEYS}, cfg_path)
    meta = {k: info.get(k) for k in META_KEYS if k != "extra"}
    meta.update(info.get("extra") or {})
    meta["format"] = "native"
    if config.dropout:
        meta["saved_dropout"], config.dropout = config.dropout, 0.0
    sd = read_safetensors(path / MODEL_FILE)
    model = GPT(config)
    load_state(model, sd, path / MODEL_FILE)
    return model, meta


def read_safetensors(file: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not file.is_file():
        raise IclawError(f"{file}: no such file")
    try:
        return load_file(str(file))
    except SafetensorError as e:
        size = file.stat().st_size
        raise IclawError(f"{file}: truncated or corrupt safetensors file ({size} bytes; {e})") from None


def load_trainer_state(path: Path | str) -> dict | None:
    """The trainer state saved with a native checkpoint, or None if it has none.

    It may hold numpy/random RNG states that the safe unpickler refuses; we wrote it ourselves, so after a
    refusal we load it in full."""
    file = Path(path) / TRAINER_FILE
    if not file.is_file():
        return None
    return _torch_load(file, allow_unsafe=True, warn=False)


# ----------------------------------------------------------------------------------------------------------
# Loading the state dict into a GPT, with errors a person can act on


def _listing(items: list[str], n: int = 3) -> str:
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def load_state(model: GPT, sd: dict[str, torch.Tensor], where: Path) -> None:
    """Copy `sd` into `model`, checking every key and shape first. lm_head.weight may be absent (tied)."""
    expected = model.state_dict()
    sd = dict(sd)
    tied = "lm_head.weight" in expected and "transformer.wte.weight" in expected
    if tied and "lm_head.weight" in sd and "transformer.wte.weight" in sd:
        head, wte = sd["lm_head.weight"], sd["transformer.wte.weight"]
        if head.shape == wte.shape and not torch.equal(head, wte):
            raise IclawError(
                f"{where}: lm_head.weight differs from transformer.wte.weight; untied heads are not supported"
            )
    if tied and "lm_head.weight" not in sd and "transformer.wte.weight" in sd:
        sd["lm_head.weight"] = sd["transformer.wte.weight"]
    unknown = [k for k in sd if k not in expected]
    missing = [k for k in expected if k not in sd]
    misshaped = [
        f"{k} {tuple(sd[k].shape)} != {tuple(expected[k].shape)}"
        for k in sd
        if k in expected and tuple(sd[k].shape) != tuple(expected[k].shape)
    ]
    problems = []
    if unknown:
        problems.append(f"unknown keys: {_listing(unknown)}")
    if missing:
        problems.append(f"missing keys: {_listing(missing)}")
    if misshaped:
        problems.append(f"mis-shaped keys (file != config): {_listing(misshaped)}")
    if problems:
        raise IclawError(f"{where}: state dict does not match the model config; " + "; ".join(problems))
    model.load_state_dict(sd, strict=True)


def pad_vocab(sd: dict[str, torch.Tensor], to: int = PADDED_VOCAB) -> int:
    """Pad the embedding (and an untied-looking lm_head copy) from GPT-2's 50257 rows to `to`, in place.

    The new rows are the mean of the existing rows (Hewitt, "Initializing new word embeddings", 2021), not
    random or zero: the head is tied, so a new row's logit is h·mean(E) = the mean of the real logits, which by
    Jensen gives each new token at most the average token's probability. The 47 slots together then take
    < 0.1 % of the probability mass and sampling from an imported GPT-2 is unchanged in practice. (Zero or
    N(0, 0.02) rows would give logits near 0, far above GPT-2's typical logits, so the control tokens would
    swallow most of the mass.) Returns the original vocab size.
    """
    wte = sd["transformer.wte.weight"]
    n = wte.shape[0]
    if n >= to:
        return n
    new_rows = wte.float().mean(dim=0, keepdim=True).expand(to - n, -1).to(wte.dtype)
    for k in ("transformer.wte.weight", "lm_head.weight"):
        if k in sd and sd[k].shape[0] == n:
            sd[k] = torch.cat([sd[k], new_rows], dim=0)
    return n


def _check_vocab(n: int, where: Path) -> int:
    """The vocab size the model is built with: at least PADDED_VOCAB (our tokenizer needs slots 50257+)."""
    if n < GPT2_VOCAB:
        raise IclawError(
            f"{where}: vocab_size {n} is smaller than GPT-2's {GPT2_VOCAB}; only GPT-2-tokenizer models are supported"
        )
    return max(n, PADDED_VOCAB)


# ----------------------------------------------------------------------------------------------------------
# nanoGPT


def _torch_load(file: Path, *, allow_unsafe: bool, warn: bool = True):
    """torch.load with weights_only=True; if the safe unpickler refuses some object, fall back to a full load
    (with a warning) when allowed. Files that are not torch.save output at all get a clear IclawError."""
    with open(file, "rb") as f:
        head = f.read(4)
    if not (head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"):
        raise IclawError(f"{file}: not a checkpoint (not a PyTorch torch.save file)")
    try:
        return torch.load(file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if not allow_unsafe or "weights_only" not in str(e).lower().replace(" ", "_"):
            raise IclawError(
                f"{file}: corrupt or unreadable PyTorch file ({str(e).splitlines()[0]})"
            ) from None
        if warn:  # one line on stderr: this is a security-relevant fallback the user should see
            print(
                f"warning: {file}: holds objects torch's safe loader refuses; loading it with weights_only=False "
                "(only do this for files you trust)",
                file=sys.stderr,
            )
    except Exception as e:  # zip errors, bad magic numbers, truncated files
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise IclawError(f"{file}: corrupt or unreadable PyTorch file ({msg[:200]})") from None
    try:
        return torch.load(file, map_location="cpu", weights_only=False)
    except Exception as e:
        raise IclawError(
            f"{file}: corrupt or unreadable PyTorch file ({str(e).splitlines()[0][:200]})"
        ) from None


NANOGPT_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")


def import_nanogpt(ckpt_pt_path: Path | str) -> tuple[GPT, dict]:
    """A nanoGPT ckpt.pt: {"model": state dict, "model_args": {...}, "iter_num", "best_val_loss", "config", ...}.

    `_orig_mod.` prefixes (left by torch.compile) are stripped, vocab is padded to 50304, dropout forced to 0.
    """
    file = Path(ckpt_pt_path).expanduser()
    if not file.is_file():
        raise IclawError(f"{file}: no such file")
    ckpt = _torch_load(file, allow_unsafe=True)
    if not isinstance(ckpt, dict) or "model" not in ckpt or "model_args" not in ckpt:
        what = f"keys: {_listing(sorted(map(str, ckpt)))}" if isinstance(ckpt, dict) else type(ckpt).__name__
        raise IclawError(
            f"{file}: not a nanoGPT checkpoint (expected a dict with 'model' and 'model_args'; got {what})"
        )
    args = ckpt["model_args"]
    absent = [k for k in NANOGPT_ARGS if k not in args]
    if absent:
        raise IclawError(f"{file}: model_args lacks {', '.join(absent)}")
    sd = {}
    for k, v in ckpt["model"].items():
        k = k.removeprefix("_orig_mod.")
        if (
            k.endswith(".attn.bias") and v.dim() == 4
        ):  # nanoGPT's causal-mask buffer (no-flash path), not a weight
            continue
        sd[k] = v
    if "transformer.wte.weight" not in sd:
        raise IclawError(f"{file}: state dict has no transformer.wte.weight (keys: {_listing(list(sd))})")
    vocab = _check_vocab(int(args["vocab_size"]), file)
    config = GPTConfig(
        block_size=int(args["block_size"]),
        vocab_size=vocab,
        n_layer=int(args["n_layer"]),
        n_head=int(args["n_head"]),
        n_embd=int(args["n_embd"]),
        dropout=0.0,
        bias=bool(args["bias"]),
    )
    if sd["transformer.wte.weight"].shape[0] == int(args["vocab_size"]):
        pad_vocab(sd, vocab)
    model = GPT(config)
    load_state(model, sd, file)
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


# ----------------------------------------------------------------------------------------------------------
# Hugging Face GPT-2


def _hf_state_dict(path: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """Read an HF directory's weights: model.safetensors, pytorch_model.bin, or their sharded index files."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            return _read_weights(path / name), path / name
        index = path / f"{name}.index.json"
        if index.is_file():
            weight_map = _read_json(index).get("weight_map") or {}
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
    sd = _torch_load(file, allow_unsafe=False)
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise IclawError(f"{file}: not a state dict of tensors")
    return sd


def import_hf_gpt2(dir: Path | str) -> tuple[GPT, dict]:
    """A Hugging Face GPT-2 directory (config.json + model.safetensors or pytorch_model.bin).

    Keys may carry "transformer." (GPT2LMHeadModel) or not (GPT2Model); Conv1D weights are transposed into
    nn.Linear layout; the causal-mask buffers .attn.bias / .attn.masked_bias are skipped; vocab padded to 50304.
    Config options that would change the math (activation, LayerNorm epsilon, attention scaling, MLP width)
    must match what our GPT computes, else IclawError.
    """
    path = Path(dir).expanduser()
    if not path.is_dir():
        raise IclawError(f"{path}: not a directory (expected a Hugging Face GPT-2 directory)")
    cfg_path = path / CONFIG_FILE
    c = _read_json(cfg_path)
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

    raw, weights_file = _hf_state_dict(path)
    sd = {}
    for k, v in raw.items():
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # causal-mask buffers, not weights
        k = k.removeprefix("transformer.")
        if not k.startswith("lm_head."):
            k = "transformer." + k
        if k.endswith(CONV1D_SUFFIXES) and v.dim() == 2:
            v = v.t()
        sd[k] = v.contiguous()
    if "transformer.wte.weight" not in sd:
        raise IclawError(f"{weights_file}: no wte.weight (keys: {_listing(list(raw))})")
    vocab = _check_vocab(int(c["vocab_size"]), cfg_path)
    config = GPTConfig(
        block_size=int(c.get("n_positions", c.get("n_ctx"))),
        vocab_size=vocab,
        n_layer=int(c["n_layer"]),
        n_head=int(c["n_head"]),
        n_embd=n_embd,
        dropout=0.0,
        bias=True,
    )
    if sd["transformer.wte.weight"].shape[0] == int(c["vocab_size"]):
        pad_vocab(sd, vocab)
    model = GPT(config)
    load_state(model, sd, weights_file)
    meta = {
        "format": "hf",
        "source": f"hf-gpt2:{path.resolve()}",
        "parent": None,
        "step": None,
        "original_vocab_size": int(c["vocab_size"]),
    }
    return model, meta


def checkpoint_files_ok(path: Path) -> bool:
    """Cheap completeness check of a native checkpoint dir (used by tests and `models info`)."""
    return (Path(path) / MODEL_FILE).is_file() and is_native(path)


def stale_tmp_dirs(parent: Path) -> list[Path]:
    """Hidden ".NAME.tmp-PID-RAND" siblings left by saves whose process is gone (safe to delete: a tmp dir is
    never the only copy of anything)."""
    out = []
    if not parent.is_dir():
        return out
    for p in parent.iterdir():
        if not p.name.startswith(".") or ".tmp-" not in p.name:
            continue
        try:
            pid = int(p.name.rsplit("-", 2)[-2])
        except ValueError:
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            out.append(p)
    return out


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

"""Checkpoints: our native format, and `load_checkpoint`, which also reads nanoGPT `ckpt.pt` files and Hugging
Face GPT-2 dirs (their importers are in iclaw/model/importers.py).

Native format: a directory holding
    model.safetensors   the state dict (lm_head.weight is tied to transformer.wte.weight, so stored once)
    config.json         GPTConfig.to_dict() + metadata: iclaw_format, source, created, parent, step,
                        param_count, and "extra" (any other metadata the caller passed)
    vocab.json          only for a trimmed vocabulary (config "trimmed": true): the GPT-2 id of each row
    trainer_state.pt    optional: whatever the trainer needs to resume (optimizer, RNG, step), torch.save'd

A checkpoint is written into a hidden sibling (".NAME.tmp-PID-RAND"), every file and the directory are
fsync'd, and only then is it renamed to NAME. rename() is atomic, so a reader (the agent hot-reloading the
newest policy) sees either no checkpoint or a complete one, never a half-written one.

All three formats load into the same GPT (iclaw/model/gpt.py), whose state-dict keys are nanoGPT's.
Vocabularies of GPT-2's 50257 tokens are padded to 50304 on import (see `pad_vocab` in iclaw/model/weights.py):
the extra rows are the agent's control-token slots.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path

import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig
from iclaw.model.importers import VOCAB_KEY, hf_config, import_hf_gpt2, import_nanogpt, nanogpt_config
from iclaw.model.vocab import FILE as VOCAB_FILE
from iclaw.model.vocab import Vocab
from iclaw.model.weights import model_from_state, read_json, read_safetensors, torch_load

FORMAT = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TRAINER_FILE = "trainer_state.pt"

# Top-level metadata keys in config.json; every other key there is a GPTConfig field.
META_KEYS = ("iclaw_format", "source", "created", "parent", "step", "param_count", "extra")


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
        if model.vocab is not None:
            model.vocab.save(tmp)
            _fsync_file(tmp / VOCAB_FILE)
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


def read_config(path: Path | str) -> tuple[GPTConfig, Vocab | None] | None:
    """The model config (dropout 0) and trimmed vocabulary of a checkpoint `load_checkpoint` reads, without
    reading its weights, so that shapes and memory can be checked before a load; None where that cannot be
    told cheaply (a nanoGPT ckpt.pt that is not a zip file, or that torch's safe loader refuses).
    A nanoGPT file is memory-mapped: only its small `model_args` dict is really read."""
    path = Path(path).expanduser()
    kind = detect(path)
    if kind == "native":
        config, _ = _native_config(path)
        config.dropout = 0.0
        return config, (Vocab.load(path, config.vocab_size) if config.trimmed else None)
    if kind == "hf":
        return hf_config(path)[0], None
    file = path if path.is_file() else path / "ckpt.pt"
    try:
        ckpt = torch.load(file, map_location="cpu", mmap=True, weights_only=True)
        args = ckpt["model_args"]
    except Exception:  # legacy (non-zip) files cannot be mapped; the full load reports real problems
        return None
    return nanogpt_config(args, file, ckpt.get(VOCAB_KEY))


def weights_bytes(path: Path | str) -> int:
    """Bytes of the weight file(s) a load of `path` reads into memory: model.safetensors, a nanoGPT ckpt.pt
    (with any optimizer state it holds), or a Hugging Face directory's weights, all shards."""
    path = Path(path).expanduser()
    if path.is_file():
        return path.stat().st_size
    for name in (MODEL_FILE, "ckpt.pt", "pytorch_model.bin"):
        if (path / name).is_file():
            return (path / name).stat().st_size
    for index in sorted(path.glob("*.index.json")):  # sharded HF weights
        shards = set((read_json(index).get("weight_map") or {}).values())
        return sum((path / f).stat().st_size for f in shards if (path / f).is_file())
    return 0


def detect(path: Path) -> str:
    """'native' | 'nanogpt' | 'hf'; IclawError naming the path if it is none of them."""
    if not path.exists():
        raise IclawError(f"{path}: no such file or directory")
    if path.is_dir():
        cfg = path / CONFIG_FILE
        if cfg.is_file():
            d = read_json(cfg)
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


def _native_config(path: Path) -> tuple[GPTConfig, dict]:
    """(model config, all of config.json) of a native checkpoint dir."""
    cfg_path = path / CONFIG_FILE
    info = read_json(cfg_path)
    fmt = info.get("iclaw_format")
    if fmt != FORMAT:
        raise IclawError(
            f"{cfg_path}: iclaw_format {fmt!r} is not supported (this iclaw reads format {FORMAT})"
        )
    return _build_config({k: v for k, v in info.items() if k not in META_KEYS}, cfg_path), info


def _load_native(path: Path) -> tuple[GPT, dict]:
    config, info = _native_config(path)
    meta = {k: info.get(k) for k in META_KEYS if k != "extra"}
    meta.update(info.get("extra") or {})
    meta["format"] = "native"
    if config.dropout:
        meta["saved_dropout"], config.dropout = config.dropout, 0.0
    sd = read_safetensors(path / MODEL_FILE)
    vocab = Vocab.load(path, config.vocab_size) if config.trimmed else None
    return model_from_state(config, sd, path / MODEL_FILE, vocab), meta


def load_trainer_state(path: Path | str) -> dict | None:
    """The trainer state saved with a native checkpoint, or None if it has none.

    It may hold numpy/random RNG states that the safe unpickler refuses; we wrote it ourselves, so after a
    refusal we load it in full."""
    file = Path(path) / TRAINER_FILE
    if not file.is_file():
        return None
    return torch_load(file, allow_unsafe=True, warn=False)


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

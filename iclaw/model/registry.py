"""The local model registry: names such as `124m`, `760m`, `demo` → checkpoints under $ICLAW_HOME.

    $ICLAW_HOME/models/<name>/info.json                       {"name", "source", "created"}
    $ICLAW_HOME/models/<name>/checkpoints/<ckpt_id>/          native checkpoint dirs (see checkpoint.py)
    $ICLAW_HOME/models/<name>/latest                          text file: the ckpt_id to use now

Publishing a checkpoint is two atomic renames: the checkpoint dir into checkpoints/, then a new `latest`
file over the old one. A reader that follows `latest` therefore always finds a complete checkpoint, and the
chat agent can poll `latest_id(name)` (one small file read) before each turn to hot-reload a new policy.

Only the functions that build or load models import torch, so name resolution stays cheap for the CLI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

from iclaw.errors import IclawError
from iclaw.files import write_atomic

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
LATEST = "latest"
INFO = "info.json"
DEFAULT_MODEL = "iclaw-small"  # what fix, chat and eval use without --model (or $ICLAW_MODEL)
BUILTIN_ID = "built-in"  # the ckpt_id a shipped model reports
SHA_FILE = "model.safetensors.sha256"  # beside a shipped model's weights: their sha256, also in its card


def iclaw_home() -> Path:
    """$ICLAW_HOME, default ~/.iclaw."""
    return Path(os.environ.get("ICLAW_HOME") or "~/.iclaw").expanduser()


def models_dir() -> Path:
    return iclaw_home() / "models"


def model_dir(name: str) -> Path:
    check_name(name)
    return models_dir() / name


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise IclawError(
            f"--name {name!r}: a model name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def _read_json(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


# ----------------------------------------------------------------------------------------------------------
# Built-in models: shipped inside the package (iclaw/assets/models/<name>/), read-only. A user's own registry
# entry of the same name wins, so `train grpo --model iclaw-small --out iclaw-small` makes the user's copy
# the one every command (and a running chat's hot-reload) uses from then on.


def builtin_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "assets" / "models"


def builtin_names() -> list[str]:
    d = builtin_dir()
    return sorted(p.name for p in d.iterdir() if (p / "config.json").is_file()) if d.is_dir() else []


def builtin_path(name: str) -> Path | None:
    p = builtin_dir() / name
    return p if NAME_RE.match(name) and (p / "config.json").is_file() else None


def check_builtin(path: Path) -> Path:
    """A shipped model's weights must be the ones its card names: a corrupted install is an error, never a
    silent fallback to other weights."""
    import hashlib

    weights, expected = path / "model.safetensors", (path / SHA_FILE).read_text().split()[0]
    h = hashlib.sha256()
    with open(weights, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != expected:
        raise IclawError(
            f"{weights}: sha256 {h.hexdigest()[:16]}… does not match the model card's {expected[:16]}…; "
            "the installed weights are corrupted (reinstall iclaw)"
        )
    return path


# ----------------------------------------------------------------------------------------------------------
# Reading (no torch)


def names() -> list[str]:
    d = models_dir()
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if p.is_dir() and NAME_RE.match(p.name))


def latest_id(name: str) -> str | None:
    """The ckpt_id `latest` points at, or None. One small file read: cheap enough to poll before every turn."""
    try:
        return (model_dir(name) / LATEST).read_text().strip() or None
    except (FileNotFoundError, NotADirectoryError):
        return None


def checkpoint_ids(name: str) -> list[str]:
    """Complete checkpoints of a model, oldest first (hidden names are saves in progress or killed)."""
    d = model_dir(name) / "checkpoints"
    if not d.is_dir():
        return []
    ids = [p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted(
        ids,
        key=lambda i: ((d / i / "config.json").stat().st_mtime if (d / i / "config.json").exists() else 0, i),
    )


def checkpoint_path(name: str, ckpt_id: str) -> Path:
    return model_dir(name) / "checkpoints" / ckpt_id


def checkpoint_info(path: Path) -> dict:
    """config.json of a native checkpoint (config + metadata), {} if unreadable."""
    return _read_json(Path(path) / "config.json")


def list_models() -> list[dict]:
    """One dict per registered name: name, latest, params, source, created, checkpoints, path."""
    out = []
    for name in names():
        info = _read_json(model_dir(name) / INFO)
        latest = latest_id(name)
        ck = checkpoint_info(checkpoint_path(name, latest)) if latest else {}
        out.append(
            {
                "name": name,
                "latest": latest,
                "params": ck.get("param_count"),
                "source": info.get("source"),
                "created": info.get("created"),
                "checkpoints": len(checkpoint_ids(name)),
                "path": str(checkpoint_path(name, latest)) if latest else None,
                "builtin": False,
            }
        )
    for name in builtin_names():
        if name in names():
            continue  # the user's own entry of that name wins
        ck = checkpoint_info(builtin_dir() / name)
        out.append(
            {
                "name": name,
                "latest": BUILTIN_ID,
                "params": ck.get("param_count"),
                "source": "built-in (shipped with iclaw)",
                "created": ck.get("created"),
                "checkpoints": 1,
                "path": str(builtin_dir() / name),
                "builtin": True,
            }
        )
    return out


def _looks_like_path(s: str) -> bool:
    return os.sep in s or s.startswith((".", "~")) or s.endswith((".pt", ".bin", ".safetensors"))


def resolve(name_or_path: str | Path) -> Path:
    """A registered name → its `latest` checkpoint dir; anything path-like → that path (which must exist).

    A bare word is looked up as a name first and only then as a file in the current directory."""
    s = str(name_or_path)
    if not s:
        raise IclawError("--model: empty model name")
    if isinstance(name_or_path, Path) or _looks_like_path(s):
        p = Path(s).expanduser()
        if not p.exists():
            raise IclawError(f"{p}: no such file or directory")
        return p
    if is_registered(s):
        ckpt = latest_id(s)
        if ckpt is None:
            raise IclawError(f"model '{s}' has no published checkpoint ({model_dir(s) / LATEST} is missing)")
        p = checkpoint_path(s, ckpt)
        if not p.is_dir():
            raise IclawError(f"model '{s}': latest checkpoint {ckpt} is missing ({p})")
        return p
    if builtin_path(s) is not None:
        return check_builtin(builtin_path(s))
    if Path(s).exists():
        return Path(s)
    raise unknown_model(s)


def is_registered(name: str) -> bool:
    return bool(NAME_RE.match(name)) and (models_dir() / name).is_dir()


def unknown_model(name: str) -> IclawError:
    known = ", ".join(sorted(set(names()) | set(builtin_names()))) or "none"
    return IclawError(
        f"unknown model '{name}' (known: {known}; import one with `iclaw models import PATH --name NAME`)"
    )


def _name_and_id(path: Path) -> tuple[str | None, str | None]:
    """(name, ckpt_id) if `path` is a checkpoint inside the registry or a built-in model, else (None, None)."""
    if path.resolve().parent == builtin_dir():
        return path.name, BUILTIN_ID
    try:
        rel = path.resolve().relative_to(models_dir().resolve())
    except ValueError:
        return None, None
    parts = rel.parts
    if len(parts) == 3 and parts[1] == "checkpoints":
        return parts[0], parts[2]
    return None, None


# ----------------------------------------------------------------------------------------------------------
# Writing and loading (torch)


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")


def publish(
    name: str,
    model,
    *,
    meta: dict | None = None,
    trainer_state: dict | None = None,
    ckpt_id: str | None = None,
) -> str:
    """Save `model` as a new checkpoint of `name`, then point `latest` at it. Returns the ckpt_id.

    ckpt_id defaults to "step000120-20261130T071501" (meta["step"]) or "ckpt-20261130T071501"; a suffix
    "-2", "-3", ... keeps it unique. Order matters: `latest` moves only after the checkpoint is complete."""
    from iclaw.model.checkpoint import now_iso, save_checkpoint, stale_tmp_dirs

    d = model_dir(name)
    ckpts = d / "checkpoints"
    ckpts.mkdir(parents=True, exist_ok=True)
    for stale in stale_tmp_dirs(ckpts):  # leftovers of saves that were killed mid-write
        shutil.rmtree(stale, ignore_errors=True)
    meta = dict(meta or {})
    if not (d / INFO).is_file():
        write_atomic(
            d / INFO,
            json.dumps({"name": name, "source": meta.get("source"), "created": now_iso()}, indent=2) + "\n",
        )
    if ckpt_id is None:
        step = meta.get("step")
        ckpt_id = f"step{int(step):06d}-{_stamp()}" if step is not None else f"ckpt-{_stamp()}"
    if not NAME_RE.match(ckpt_id):
        raise IclawError(f"checkpoint id {ckpt_id!r}: use letters, digits, '.', '_' or '-'")
    base, n = ckpt_id, 1
    while True:
        try:
            save_checkpoint(model, ckpts / ckpt_id, meta=meta, trainer_state=trainer_state, replace=False)
            break
        except FileExistsError:
            n += 1
            ckpt_id = f"{base}-{n}"
    write_atomic(d / LATEST, ckpt_id + "\n")
    return ckpt_id


def load(name_or_path: str | Path, device="cpu"):
    """(GPT, meta) for a name or path; meta gains "name", "ckpt_id" and "path"."""
    from iclaw.model.checkpoint import load_checkpoint

    path = resolve(name_or_path)
    model, meta = load_checkpoint(path, device=device)
    name, ckpt_id = _name_and_id(path)
    meta["name"] = name
    meta["ckpt_id"] = ckpt_id if ckpt_id is not None else path.name
    meta["path"] = str(path)
    return model, meta


def import_model(path: str | Path, name: str) -> str:
    """Import any loadable checkpoint (native, nanoGPT ckpt.pt, HF GPT-2 dir) under `name`; returns ckpt_id."""
    from iclaw.model.checkpoint import load_checkpoint

    check_name(name)
    model, meta = load_checkpoint(Path(path).expanduser())
    keep = {k: v for k, v in meta.items() if k not in ("format", "created", "param_count", "iclaw_format")}
    keep["imported_from"] = meta.get("format")
    if meta.get("format") == "native":
        keep["parent"] = str(Path(path).expanduser().resolve())
        keep["source"] = meta.get("source") or f"native:{Path(path).expanduser().resolve()}"
    return publish(name, model, meta=keep, ckpt_id=f"import-{_stamp()}")

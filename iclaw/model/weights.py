"""Reading weight files and putting their tensors into a GPT, for every checkpoint format.

The files come from anywhere (a user's nanoGPT run, a downloaded HF directory, a crashed save), so every
reader turns what can go wrong into an IclawError that names the file: not JSON, truncated safetensors,
not a torch.save file, a state dict whose keys or shapes do not match the config. `pad_vocab` grows a
GPT-2 vocabulary to the agent's 50304 rows. Used by checkpoint.py (native) and importers.py (foreign).
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import torch

from iclaw.errors import IclawError
from iclaw.model.gpt import GPT, GPTConfig

PADDED_VOCAB = 50304  # GPT-2's 50257 tokens padded to a multiple of 64; the extra slots are control tokens
GPT2_VOCAB = 50257


def read_json(path: Path) -> dict:
    try:
        d = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise IclawError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(d, dict):
        raise IclawError(f"{path}: expected a JSON object")
    return d


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


def torch_load(file: Path, *, allow_unsafe: bool, warn: bool = True):
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


# ----------------------------------------------------------------------------------------------------------
# Loading the state dict into a GPT, with errors a person can act on


def listing(items: list[str], n: int = 3) -> str:
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def load_state(model: GPT, sd: dict[str, torch.Tensor], where: Path) -> None:
    """Give a freshly built `model` `sd`'s tensors, checking every key and shape first. lm_head.weight may be
    absent (tied)."""
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
        problems.append(f"unknown keys: {listing(unknown)}")
    if missing:
        problems.append(f"missing keys: {listing(missing)}")
    if misshaped:
        problems.append(f"mis-shaped keys (file != config): {listing(misshaped)}")
    if problems:
        raise IclawError(f"{where}: state dict does not match the model config; " + "; ".join(problems))
    # take the file's tensors themselves, as the model's dtype (a no-op for float32 files): never a copy
    sd = {k: v.to(expected[k].dtype) for k, v in sd.items()}
    model.load_state_dict(sd, strict=True, assign=True)
    model.transformer.wte.weight = model.lm_head.weight  # assignment gave each a Parameter: tie them again


SMALL_MODEL = 50_000_000  # parameters


def model_from_state(config: GPTConfig, sd: dict[str, torch.Tensor], where: Path, vocab=None) -> GPT:
    """A GPT that holds `sd`'s tensors: built on the meta device and filled by assignment, so no random copy
    of the weights is ever allocated beside the real ones (importing 774M held three copies, 9.1 GiB). A small
    model is built plainly: its random init costs milliseconds, while the meta device's init imports
    torch._dynamo, a second of every `iclaw fix`."""
    if sum(v.numel() for v in sd.values()) > SMALL_MODEL:
        with torch.device("meta"):
            model = GPT(config, vocab)
    else:
        model = GPT(config, vocab)
    load_state(model, sd, where)
    return model


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


def check_vocab(n: int, where: Path) -> int:
    """The vocab size the model is built with: at least PADDED_VOCAB (our tokenizer needs slots 50257+)."""
    if n < GPT2_VOCAB:
        raise IclawError(
            f"{where}: vocab_size {n} is smaller than GPT-2's {GPT2_VOCAB}; only GPT-2-tokenizer models are supported"
        )
    return max(n, PADDED_VOCAB)

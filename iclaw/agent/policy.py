"""A loaded policy: the model, where it came from (registry name + checkpoint id), and hot-reload.

Sampling runs on a copy of the weights in bf16 where the device has fast bf16 (gpt.bf16_supported): there
the 50k-wide head and the matmuls are memory-bound at small batch, so half-width weights roughly double
tokens/s. On CPU the copy's linear weights are also prepacked for oneDNN once, instead of on every call. The
trainer keeps fp32 master weights and rebuilds the copy after each update (`sync`).
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from iclaw.model.gpt import GPT, bf16_supported, default_device
from iclaw.model.sampler import Samples, generate


def _sampling_dtype(device: torch.device) -> torch.dtype:
    return torch.bfloat16 if bf16_supported(device) else torch.float32


class Policy:
    def __init__(
        self,
        model: GPT,
        *,
        name: str | None = None,
        ckpt_id: str | None = None,
        device: torch.device | str | None = None,
        fast_sampling: bool = True,
    ):
        self.device = torch.device(device) if device is not None else default_device()
        self.model = model.to(self.device)
        self.model.config.dropout = 0.0  # never sample (or score rollouts) with dropout on
        self.name, self.ckpt_id = name, ckpt_id
        self.sample_dtype = _sampling_dtype(self.device) if fast_sampling else torch.float32
        self._sampler: GPT | None = None
        self.sync()

    @classmethod
    def load(cls, name_or_path: str | Path, device: torch.device | str | None = None, **kw) -> Policy:
        from iclaw.model import registry

        dev = torch.device(device) if device is not None else default_device()
        model, meta = registry.load(str(name_or_path), device=dev)
        return cls(model, name=meta.get("name"), ckpt_id=meta.get("ckpt_id"), device=dev, **kw)

    @property
    def label(self) -> str:
        return f"{self.name or 'model'}@{self.ckpt_id or '-'}"

    def sync(self) -> None:
        """Refresh the sampling copy from the (possibly just updated) master weights: a bf16 copy where that is
        faster, with its linear layers' weights prepacked for oneDNN on CPU (iclaw/model/sampler.py). A plain
        copy is refreshed in place; a packed one cannot be written to, so it is rebuilt."""
        from iclaw.model.sampler import can_pack, pack_linears

        packs = can_pack(self.model)
        if self.sample_dtype == torch.float32 and not packs:
            self._sampler = self.model
            return
        if self._sampler is not None and self._sampler is not self.model and not packs:
            with torch.no_grad():
                for dst, src in zip(self._sampler.parameters(), self.model.parameters()):
                    dst.copy_(src)
            return
        fast = copy.deepcopy(self.model).to(self.sample_dtype)  # never pack the trained model itself
        self._sampler = (pack_linears(fast) if packs else fast).eval()

    def sample(self, prompts: list[list[int]], max_new_tokens: int, **kw) -> Samples:
        return generate(self._sampler, prompts, max_new_tokens, **kw)

    def reload_if_newer(self) -> str | None:
        """Hot-reload: if the registry's `latest` pointer for our name moved, load that checkpoint.
        Returns the new checkpoint id, or None if nothing changed. A failing load raises (caller keeps us)."""
        if not self.name:
            return None
        from iclaw.model import registry

        latest = registry.latest_id(self.name)
        if latest is None or latest == self.ckpt_id:
            return None
        model, meta = registry.load(self.name, device=self.device)
        self.model = model.to(self.device)
        self.model.config.dropout = 0.0
        self._sampler = None
        self.sync()
        self.ckpt_id = meta.get("ckpt_id", latest)
        return self.ckpt_id

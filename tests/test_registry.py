"""The registry: publish / latest / resolve / load, unique ids, and atomicity: a publish killed mid-save never
leaves `latest` pointing at a partial checkpoint (real subprocesses, SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.gpt import GPT, GPTConfig

CFG = GPTConfig(block_size=16, n_layer=1, n_head=1, n_embd=8)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def small(seed=0) -> GPT:
    torch.manual_seed(seed)
    return GPT(CFG)


def test_home_default_and_override(monkeypatch, tmp_path):
    monkeypatch.delenv("ICLAW_HOME", raising=False)
    assert registry.iclaw_home() == Path("~/.iclaw").expanduser()
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path))
    assert registry.iclaw_home() == tmp_path


def test_publish_latest_resolve_load(home):
    assert [r["name"] for r in registry.list_models()] == ["iclaw-small"]  # only the built-in policy
    assert registry.latest_id("demo") is None
    a = registry.publish("demo", small(0), meta={"step": 120, "source": "test"})
    assert a.startswith("step000120-") and registry.latest_id("demo") == a
    b = registry.publish("demo", small(1), meta={"step": 130, "parent": a}, trainer_state={"step": 130})
    assert registry.latest_id("demo") == b
    c = registry.publish("demo", small(2), ckpt_id=b)  # an id that exists gets a suffix, never overwrites
    assert c == f"{b}-2"
    assert registry.checkpoint_ids("demo") == [a, b, c]
    assert (home / "models" / "demo" / "latest").read_text().strip() == c
    info = json.loads((home / "models" / "demo" / "info.json").read_text())
    assert info["source"] == "test" and info["name"] == "demo"

    assert registry.resolve("demo") == home / "models" / "demo" / "checkpoints" / c
    model, meta = registry.load("demo")
    assert meta["name"] == "demo" and meta["ckpt_id"] == c and meta["path"] == str(registry.resolve("demo"))
    assert torch.equal(model.transformer.wte.weight, small(2).transformer.wte.weight)
    by_path, meta_b = registry.load(home / "models" / "demo" / "checkpoints" / b)
    assert meta_b["ckpt_id"] == b and meta_b["parent"] == a and meta_b["step"] == 130

    (rows,) = [r for r in registry.list_models() if not r["builtin"]]
    assert rows["name"] == "demo" and rows["latest"] == c and rows["checkpoints"] == 3
    assert rows["params"] == small().num_params() and rows["source"] == "test"


def test_import_native_checkpoint_and_name_errors(home, tmp_path):
    from iclaw.model.checkpoint import save_checkpoint

    src = save_checkpoint(small(3), tmp_path / "mine", meta={"step": 9, "source": "pretrain"})
    ckpt = registry.import_model(src, "mine")
    assert ckpt.startswith("import-")
    model, meta = registry.load("mine")
    assert meta["step"] == 9 and meta["source"] == "pretrain" and meta["parent"] == str(src.resolve())

    with pytest.raises(
        IclawError,
        match=r"unknown model 'nope' \(known: iclaw-small, mine; import one with `iclaw models import PATH --name NAME`\)",
    ):
        registry.resolve("nope")
    with pytest.raises(IclawError, match=r"no such file or directory"):
        registry.resolve("./nope")
    with pytest.raises(IclawError, match=r"--name '\.\./x'"):
        registry.publish("../x", small())
    (home / "models" / "empty").mkdir()
    with pytest.raises(IclawError, match=r"model 'empty' has no published checkpoint"):
        registry.resolve("empty")


CHILD_STALL = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import torch
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, GPTConfig

    class Stall:  # pickled while trainer_state.pt is written: the save is then half done
        def __reduce__(self):
            Path(sys.argv[1]).write_text("mid-save")
            time.sleep(120)
            return (int, ())

    torch.manual_seed(0)
    m = GPT(GPTConfig(block_size=16, n_layer=1, n_head=1, n_embd=8))
    registry.publish("demo", m, meta={"step": 1})
    registry.publish("demo", m, meta={"step": 2}, trainer_state={"stall": Stall()})
    """
)


def test_publish_killed_mid_save_leaves_latest_complete(home, tmp_path):
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", CHILD_STALL, str(marker)], env={**os.environ})
    try:
        deadline = time.time() + 60
        while not marker.exists():
            assert child.poll() is None, "child exited early"
            assert time.time() < deadline, "child never reached the middle of the save"
            time.sleep(0.05)
        ckpts = home / "models" / "demo" / "checkpoints"
        first = registry.latest_id("demo")
        assert first.startswith("step000001-")
        partial = [p for p in ckpts.iterdir() if p.name.startswith(".")]
        assert len(partial) == 1 and ".tmp-" in partial[0].name  # the half-written one, under a hidden name
        assert (partial[0] / "model.safetensors").exists() and (partial[0] / "config.json").exists()
        assert registry.checkpoint_ids("demo") == [first]  # readers never see it
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()

    assert registry.latest_id("demo") == first
    model, meta = registry.load("demo")
    assert meta["step"] == 1 and meta["ckpt_id"] == first
    assert [r for r in registry.list_models() if not r["builtin"]][0]["checkpoints"] == 1
    nxt = registry.publish(
        "demo", model, meta={"step": 3}
    )  # the next publish clears the dead save's leftovers
    assert registry.latest_id("demo") == nxt
    assert sorted(p.name for p in (home / "models" / "demo" / "checkpoints").iterdir()) == sorted(
        [first, nxt]
    )


CHILD_LOOP = textwrap.dedent(
    """
    import torch
    from iclaw.model import registry
    from iclaw.model.gpt import GPT, GPTConfig

    m = GPT(GPTConfig(block_size=16, n_layer=1, n_head=1, n_embd=8))
    for step in range(1, 10_000):
        registry.publish("loop", m, meta={"step": step}, trainer_state={"step": step})
    """
)


def test_reader_polling_latest_only_sees_complete_checkpoints(home):
    """A publisher in a loop, killed at an arbitrary moment; every `latest` a reader saw was complete."""
    from safetensors.torch import load_file

    child = subprocess.Popen([sys.executable, "-c", CHILD_LOOP], env={**os.environ})
    seen: set[str] = set()
    try:
        deadline = time.time() + 60
        while len(seen) < 4 and time.time() < deadline:
            assert child.poll() is None
            ckpt = registry.latest_id("loop")
            if ckpt and ckpt not in seen:
                path = registry.checkpoint_path("loop", ckpt)
                info = json.loads((path / "config.json").read_text())
                assert load_file(str(path / "model.safetensors"))  # fully readable
                assert (path / "trainer_state.pt").is_file() and ckpt.startswith(f"step{info['step']:06d}-")
                seen.add(ckpt)
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert len(seen) >= 4
    model, meta = registry.load("loop")  # after the kill, wherever it landed
    assert meta["ckpt_id"] == registry.latest_id("loop")
    assert set(registry.checkpoint_ids("loop")) >= seen

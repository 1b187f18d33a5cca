"""`iclaw train recipe` end to end at a toy size (a few seconds): tasks, SFT with a trimmed
vocabulary, GRPO, held-out eval, the model card with its sha256, the installed built-in copy, and a rerun
that skips the finished phases; a run stopped by Ctrl-C counts its time into the card's wall time."""

import dataclasses
import json

import pytest
import torch

from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.model.gpt import GPT, preset
from iclaw.train import recipe
from iclaw.train.recipe import RecipeConfig, run_recipe


def test_recipe_at_toy_size(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(registry, "builtin_dir", lambda: tmp_path / "assets")
    cfg = RecipeConfig(
        name="toy",
        train_per_family=3,
        heldout_per_family=2,
        preset="tiny",
        sft_steps=4,
        grpo_steps=1,
        grpo={"group_size": 2, "tasks_per_step": 2},
        out_dir=str(tmp_path / "run"),
        outside=str(tmp_path / "none.jsonl"),
        families=("cmd-typo", "wrong-file", "mkdir-outcome"),
        more_tasks=(("cmd-typo", 2), ("win-habit", 5)),  # a family the run does not have is left out
        novel=0.5,
    )
    asked = iter([True])  # Ctrl-C during SFT: the loop stops, nothing is published
    monkeypatch.setattr(recipe, "stop_requested", lambda: next(asked, False))
    assert run_recipe(cfg) == {"stopped": "sft"}
    stopped = json.loads((tmp_path / "run" / "state.json").read_text())
    assert "sft" not in stopped and stopped["spent"] > 0
    s = run_recipe(cfg, install=True)
    assert s["seconds"] > stopped["spent"]  # both invocations' time
    assert set(s["heldout"]) == {"toy-sft", "toy"} and s["heldout"]["toy"]["tasks"] == 6
    assert s["train_tasks"] == 3 * 3 + 2
    novel = [json.loads(line) for line in (tmp_path / "run" / "novel.jsonl").read_text().splitlines()]
    assert novel and all(t["id"].endswith("-novel") and t["error"] for t in novel)  # checked: errors filled
    assert s["novel_demonstrations"] > 0
    shipped = tmp_path / "assets" / "toy"
    card = (shipped / "MODEL_CARD.md").read_text()
    sha = (shipped / registry.SHA_FILE).read_text().split()[0]
    assert (
        "made-up names" in card
        and "copying from the conversation where the likeliest token has p < 0.5" in card
        and f"`{sha}`" in card
        and "| wrong-file |" in card
        and (shipped / "curves.png").stat().st_size > 0
    )
    info = json.loads((shipped / "config.json").read_text())
    assert info["trimmed"] is True
    assert info["parent"].startswith("toy-sft/checkpoints/step") and str(tmp_path) not in info["parent"]
    model, meta = registry.load("toy")  # a user's "toy" exists too (the recipe published it): theirs wins
    assert meta["name"] == "toy" and model.vocab is not None

    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert {"sft", "grpo"} <= set(state)
    again = run_recipe(cfg)  # both training phases are skipped; only the evaluation runs again
    assert again["sft"] == s["sft"] and again["grpo"]["run_id"] == s["grpo"]["run_id"]
    assert again["seconds"] == s["seconds"]  # the card keeps the training run's wall time


def test_the_recipe_starts_from_a_pretrained_base(tmp_path, monkeypatch):
    """--base: SFT starts from the pretrained checkpoint (its shape, vocabulary and weights), not a fresh model;
    the SFT checkpoint names it as parent and the card says so. An unknown base is one line, nothing written."""
    vocab = registry.load("iclaw-small")[0].vocab  # a task vocabulary, as `pretrain --vocab` keeps whole
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(registry, "builtin_dir", lambda: tmp_path / "assets")
    torch.manual_seed(0)
    base = GPT(preset("tiny", n_layer=2), vocab)
    registry.publish("base", base, meta={"source": "pretrain"})
    cfg = RecipeConfig(
        name="based",
        base="base",
        train_per_family=3,
        heldout_per_family=1,
        sft_steps=2,
        grpo_steps=1,
        grpo={"group_size": 2, "tasks_per_step": 2},
        out_dir=str(tmp_path / "run"),
        outside=str(tmp_path / "none.jsonl"),
        families=("cmd-typo",),
        more_tasks=(),
        novel=0.0,
    )
    s = run_recipe(cfg, install=True)
    sft, meta = registry.load("based-sft")
    assert meta["parent"] == str(registry.resolve("base")) and sft.vocab == base.vocab
    assert sft.config.n_layer == 2 and s["sft"]["steps"] == 2
    assert (
        "trained from the pretrained `base`" in (tmp_path / "assets" / "based" / "MODEL_CARD.md").read_text()
    )
    with pytest.raises(IclawError, match="--base: .*nope"):
        run_recipe(dataclasses.replace(cfg, base="nope", out_dir=str(tmp_path / "never")))
    assert not (tmp_path / "never").exists()

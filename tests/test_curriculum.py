"""GRPO's family curriculum (onpolicy.FamilyCurriculum, `--curriculum`): counts, weights, the weighted draw, ranks,
and the trainer state that carries it across --resume."""

import dataclasses
import os
import subprocess
import sys
from collections import Counter

import torch
from helpers import ECHO_TASKS, SMALL

from iclaw.model import registry
from iclaw.model.checkpoint import load_trainer_state
from iclaw.model.gpt import GPT, preset
from iclaw.tasks import Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.grpo import GRPOConfig, train_grpo
from iclaw.train.onpolicy import FamilyCurriculum, sample_tasks


@dataclasses.dataclass
class T:  # all the curriculum reads of a task
    id: int
    family: str


def test_weights_follow_each_familys_groups_with_variance():
    cur = FamilyCurriculum(["a", "b", "c", "a"])
    assert cur.weights([T(0, "a"), T(1, "c")]) == [0.5, 0.5]  # nothing seen yet: 1/2 each
    # G = 2: family a's group agrees (1, 1), family b's varies (0, 1)
    cur.update(["a", "b"], torch.tensor([1.0, 1.0, 0.0, 1.0]), 2, "cpu")
    assert cur.counts == {"a": [1, 0], "b": [1, 1], "c": [0, 0]}
    assert cur.weights([T(0, "a"), T(1, "b"), T(2, "c")]) == [1 / 3, 2 / 3, 0.5]
    # a family whose groups never vary falls to the floor, never to zero
    for _ in range(100):
        cur.update(["a"], torch.tensor([0.0, 0.0]), 2, "cpu")
    assert cur.weights([T(0, "a")]) == [0.05]
    state = cur.state_dict()
    again = FamilyCurriculum(["a", "b", "c"])
    again.load_state_dict(state)
    assert again.counts == cur.counts and again.floor == cur.floor


def test_weighted_draw_is_seeded_without_replacement_and_favours_heavy_tasks():
    pool = [T(i, "heavy" if i < 10 else "light") for i in range(40)]
    w = [1.0 if t.family == "heavy" else 0.05 for t in pool]
    first = sample_tasks(pool, 8, step=3, seed=0, weights=w)
    assert first == sample_tasks(pool, 8, step=3, seed=0, weights=w)  # (seed, step, weights) fix the draw
    assert len({t.id for t in first}) == 8  # without replacement
    drawn = Counter(t.family for step in range(200) for t in sample_tasks(pool, 4, step, 0, w))
    # 10 heavy tasks at weight 1 against 30 light ones at 0.05: the heavy family takes most of the draws,
    # and the light one still gets some
    assert drawn["heavy"] > 4 * drawn["light"] > 0
    # equal weights draw like the plain (unweighted) sampler would: every task gets its turn
    even = Counter(t.id for step in range(200) for t in sample_tasks(pool, 4, step, 0, [1.0] * 40))
    assert len(even) == 40


TORCHRUN_SCRIPT = """
import json, sys, torch
import torch.distributed as dist
from iclaw.train.onpolicy import FamilyCurriculum
dist.init_process_group("gloo")
rank = dist.get_rank()
cur = FamilyCurriculum(["a", "b", "c"])
# rank 0 sees a varied group of a and an agreeing one of b; rank 1 one agreeing group of c
if rank == 0:
    cur.update(["a", "b"], torch.tensor([0.0, 1.0, 1.0, 1.0]), 2, "cpu")
else:
    cur.update(["c"], torch.tensor([0.0, 0.0]), 2, "cpu")
json.dump(cur.counts, open(sys.argv[1] + f".{rank}", "w"))
dist.destroy_process_group()
"""


def test_counts_are_summed_over_torchrun_ranks(tmp_path):
    script = tmp_path / "cur.py"
    script.write_text(TORCHRUN_SCRIPT)
    out = tmp_path / "counts"
    subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29541"]
        + [str(script), str(out)],
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=120,
        capture_output=True,
    )
    import json

    both = [json.loads((tmp_path / f"counts.{r}").read_text()) for r in (0, 1)]
    assert both[0] == both[1] == {"a": [1, 1], "b": [1, 0], "c": [1, 0]}  # every rank draws with one set


def test_grpo_curriculum_is_published_and_resumed(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    torch.manual_seed(0)
    registry.publish("start", GPT(preset("tiny", **SMALL)), meta={"source": "test"})
    other = [dataclasses.replace(t, id=t.id + "-x", family="other") for t in ECHO_TASKS]
    tasks = ECHO_TASKS + other
    sb = Sandbox(Limits(timeout_s=5))
    kw = dict(
        sandbox=sb, verifier=Verifier(sb), device="cpu", log_dir=str(tmp_path / "runs"), show_progress=False
    )
    cfg = GRPOConfig(
        model="start",
        out="cur",
        steps=2,
        group_size=2,
        tasks_per_step=2,
        save_every=1,
        max_new_tokens=8,
        max_turns=1,
        amp=False,
        curriculum=True,
        sft_coef=0.0,
    )
    train_grpo(cfg, tasks, **kw)
    state = load_trainer_state(registry.resolve("cur"))["curriculum"]
    assert set(state["counts"]) == {"cmd-typo", "other"}
    assert sum(g for g, _ in state["counts"].values()) == 2 * 2  # 2 steps x 2 groups, every one counted
    # resume to step 3 == a straight 3-step run: the draw at step 3 uses the counts the state carried
    cfg3 = dataclasses.replace(cfg, steps=3)
    train_grpo(cfg3, tasks, resume=True, **kw)
    assert (
        sum(g for g, _ in load_trainer_state(registry.resolve("cur"))["curriculum"]["counts"].values()) == 6
    )
    train_grpo(dataclasses.replace(cfg3, out="straight"), tasks, **kw)
    resumed, _ = registry.load("cur")
    straight, _ = registry.load("straight")
    for a, b in zip(resumed.state_dict().values(), straight.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6)
    assert (
        load_trainer_state(registry.resolve("straight"))["curriculum"]
        == load_trainer_state(registry.resolve("cur"))["curriculum"]
    )

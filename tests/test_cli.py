"""The command line's shape: `iclaw --version`, command modules named after their commands, the shared options
(--db, --device, --seed, --unsafe-no-sandbox) with one help text each, and `train grpo`'s defaults = the recipe."""

import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

import iclaw
import iclaw.commands
from iclaw.cli import COMMAND_MODULES, app

SHARED = ("--db", "--device", "--seed", "--unsafe-no-sandbox")


def test_version_prints_the_package_version():
    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"iclaw {iclaw.__version__}\n"
    p = subprocess.run(
        [sys.executable, "-m", "iclaw", "--version"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and p.stdout == f"iclaw {iclaw.__version__}\n", p.stderr


def _commands(group, prefix=()):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def test_every_command_module_is_named_after_a_command_it_defines():
    top = set(typer.main.get_command(app).commands)
    files = {p.stem for p in Path(iclaw.commands.__file__).parent.glob("*.py")} - {"__init__", "options"}
    assert files == set(COMMAND_MODULES) and set(COMMAND_MODULES) <= top


def test_shared_options_have_one_help_text_and_env_var_each():
    seen: dict[str, set] = {o: set() for o in SHARED}
    users: dict[str, list] = {o: [] for o in SHARED}
    for path, cmd in _commands(typer.main.get_command(app)):
        for p in cmd.params:
            for o in SHARED:
                if o in getattr(p, "opts", ()):
                    seen[o].add((p.help, p.envvar))
                    users[o].append(" ".join(path))
    for o in SHARED:
        assert len(users[o]) >= 4, (o, users[o])  # every training / eval command takes them
        assert len(seen[o]) == 1, (o, seen[o])
    assert "train grpo" in users["--db"] and "tasks mine" in users["--db"]


def test_train_grpo_and_distill_flags_default_to_their_config():
    """`train grpo`'s and `distill`'s options read their defaults from GRPOConfig and DistillConfig (one place
    for every default, train/config.py), and GRPOConfig's are the recipe that trained the shipped policy."""
    from iclaw.commands.distill import distill
    from iclaw.commands.train import grpo_cmd
    from iclaw.train.config import DistillConfig, GRPOConfig, OnPolicyConfig
    from iclaw.train.recipe import RecipeConfig, grpo_config

    shared = {}  # the OnPolicyConfig knobs each command has a flag for: the same in both
    for cmd, config in ((grpo_cmd, GRPOConfig()), (distill, DistillConfig())):
        params = inspect.signature(cmd).parameters
        visible = [n for n in params if not getattr(params[n].default, "hidden", False)]  # moved: --set
        named = [n for n in visible if hasattr(config, n) and (n, cmd) != ("out", distill)]  # STUDENT-distill
        assert len(named) >= 10, named
        shared[cmd] = {n for n in visible if hasattr(OnPolicyConfig, n)}
        for n in named:
            d = params[n].default
            d = getattr(d, "default", d)  # a typer.Option, or the plain default of a shared option
            assert d in (getattr(config, n), ...), n  # ...: required (distill's --teacher, --student)
    assert shared[grpo_cmd] == shared[distill] and "overrides" in inspect.signature(distill).parameters
    recipe = grpo_config(RecipeConfig())
    assert {k: v for k, v in vars(recipe).items() if k not in ("model", "out", "steps", "minutes")} == {
        k: v for k, v in vars(GRPOConfig()).items() if k not in ("model", "out", "steps", "minutes")
    }


def test_every_removed_option_is_one_clear_error_naming_what_replaced_it():
    """Options no run kept are gone (iclaw/train/grpo.py, "Left out"): `--set FIELD=...` or the flag that set
    one is an error saying what replaced it, before anything is loaded, never a silent change of meaning."""
    from iclaw.errors import IclawError
    from iclaw.train.config import REMOVED, GRPOConfig

    assert not set(REMOVED) & {f.name for f in dataclasses.fields(GRPOConfig)}
    cases = [
        (["train", "grpo", "--set", "curriculum=true"], "--set curriculum=true: removed: it did not hold up"),
        (["train", "grpo", "--set", "loss_agg=seq-mean"], "--set loss_agg=seq-mean: removed: the loss is token-mean"),
        (["demo", "--curriculum"], "--curriculum: removed: it did not hold up in full demos"),
        (["ablate", "beta", "--tasks", "t.jsonl", "--heldout", "h.jsonl", "--filter-zero-variance"],
         "--filter-zero-variance: removed: groups whose rewards all agree are always skipped"),
        (["distill", "--teacher", "a", "--student", "b", "--temperature", "0.7"],
         "--temperature: removed: rollouts sample at temperature 1"),
        (["distill", "--teacher", "a", "--student", "b", "--max-new-tokens", "48"],
         "--max-new-tokens: moved: --set max_new_tokens=48, as in `iclaw train grpo`"),
        (["distill", "--teacher", "a", "--student", "b", "--set", "curriculum=1"], "--set curriculum=1: removed: "),
        (["bench", "sample", "--model", "demo", "--json"],
         "iclaw bench sample: removed: python benchmarks/bench_sample.py times the sampler"),
    ]  # fmt: skip
    for argv, message in cases:
        r = CliRunner().invoke(app, argv)
        assert isinstance(r.exception, IclawError) and message in str(r.exception), (argv, r.output)
    from iclaw.train import grpo

    left_out = grpo.__doc__.split("Left out, and why")[1]
    for field in REMOVED:  # each is an error of its own, and a line of grpo.py's "Left out, and why"
        r = CliRunner().invoke(app, ["train", "grpo", "--set", f"{field}=1"])
        assert str(r.exception).startswith(f"--set {field}=1: removed: "), field
        assert field in left_out, field

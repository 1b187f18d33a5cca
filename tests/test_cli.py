"""The command line's shape: `iclaw --version`, command modules named after their commands, the shared options
(--db, --device, --seed, --unsafe-no-sandbox) with one help text each, and `train grpo`'s defaults = the recipe."""

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


def test_train_grpo_defaults_are_the_recipe():
    from iclaw.commands.train import grpo_cmd
    from iclaw.train.recipe import RecipeConfig

    r, params = RecipeConfig(), inspect.signature(grpo_cmd).parameters

    def default(name):
        d = params[name].default
        return getattr(d, "default", d)  # a typer.Option, or the plain default of a shared option

    pairs = {"model": r.name, "beta": r.beta, "group_size": r.group_size, "tasks_per_step": r.tasks_per_step,
             "lr": r.grpo_lr, "max_turns": r.max_turns, "sft_coef": r.sft_coef, "seed": r.seed}  # fmt: skip
    assert {k: default(k) for k in pairs} == pairs

"""`iclaw demo` end to end at a tiny size (real tasks, sandbox, store, registry), and what a Ctrl-C keeps."""

import json
import os
import sqlite3
import subprocess
import sys

from helpers import ctrl_c_when

# every phase, a few steps each: the demo's code path, not its figures
TINY = ["--train-per-family", "2", "--heldout-per-family", "1", "--sft-steps", "3", "--grpo-steps", "1"]


def _demo(tmp_path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "iclaw", "demo", *TINY, "--out", str(tmp_path / "runs" / "demo"),
            "--db", str(tmp_path / "demo.db"), *flags]  # fmt: skip


def test_demo_runs_every_phase_and_reports(tmp_path):
    env = {**os.environ, "ICLAW_HOME": str(tmp_path / "home")}
    # SFT's minutes cap ends it before its steps (as on a machine slower than the README's): it says so
    cap = ["--sft-steps", "100000", "--sft-minutes", "0.002"]
    p = subprocess.run(_demo(tmp_path, *cap), capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "held-out pass@1 (%) by family" in p.stdout and "points overall" in p.stdout
    assert "SFT reached its 0.002-minute cap after" in " ".join(p.stdout.split())
    s = json.loads((tmp_path / "runs" / "demo" / "summary.json").read_text())
    assert s["stopped"] is None
    assert s["published"] == ["demo-sft", "demo", "demo-sft-control"]
    assert list(s["pass_at_1"]) == ["demo-sft", "demo (GRPO)", "SFT control"]
    assert len(s["families_hard"]) == 5 and s["grpo"]["steps"] == 1 and s["grpo"]["stopped"] is None
    assert s["sft"]["stopped"] == "time budget reached" and 1 <= s["sft"]["steps"] < 100000
    d = s["pass_at_1"]
    assert s["delta_overall_points"] == 100 * (d["demo (GRPO)"] - d["demo-sft"])
    models = sorted(p.name for p in (tmp_path / "home" / "models").iterdir())
    assert models == ["demo", "demo-sft", "demo-sft-control"]
    db = sqlite3.connect(tmp_path / "demo.db")
    sources = dict(db.execute("select source, count(*) from episodes group by source").fetchall())
    n_heldout = len((tmp_path / "runs" / "demo" / "heldout.jsonl").read_text().splitlines())
    assert sources["eval"] == 3 * n_heldout and sources["rollout"] == 8 * 8  # tasks x group size
    assert db.execute("select count(*) from train_metrics").fetchone()[0] >= 1


def test_ctrl_c_stops_the_demo_keeping_what_it_published(tmp_path):
    """A first Ctrl-C after the warm-up is published: no later phase runs, summary.json says what there is,
    exit 130."""
    env = {**os.environ, "ICLAW_HOME": str(tmp_path / "home")}
    published = tmp_path / "home" / "models" / "demo-sft"
    p = ctrl_c_when(_demo(tmp_path, "--grpo-steps", "100000"), lambda out, err: published.exists(),
                    cwd=tmp_path, env=env)  # fmt: skip
    assert p.returncode == 130, p.stderr[-3000:]
    assert "Traceback" not in p.stderr and "the demo stopped" in p.stdout
    s = json.loads((tmp_path / "runs" / "demo" / "summary.json").read_text())
    assert s["stopped"] == "interrupted (Ctrl-C)"
    # stopped during demo-sft's evaluation (which finishes) or GRPO (which publishes where it stopped)
    assert s["published"] in (["demo-sft"], ["demo-sft", "demo"])
    assert "SFT control" not in s["pass_at_1"] and "delta_overall_points" not in s
    assert not (tmp_path / "home" / "models" / "demo-sft-control").exists()


def test_demo_cli_defaults_are_the_demo_config():
    """`iclaw demo` with no flags must run exactly the DemoConfig the README's figures come from."""
    import inspect

    from iclaw.commands.demo import demo_cmd
    from iclaw.lab.demo import DemoConfig

    cfg, params = DemoConfig(), inspect.signature(demo_cmd).parameters
    shared = [n for n in params if hasattr(cfg, n)]
    assert len(shared) >= 8
    for name in shared:
        default = params[name].default  # a typer.Option, or the plain default of a shared option (options.py)
        assert getattr(default, "default", default) == getattr(cfg, name), name


def test_an_unknown_family_is_one_error_before_anything_is_written(tmp_path):
    env = {**os.environ, "ICLAW_HOME": str(tmp_path / "home")}
    p = subprocess.run(_demo(tmp_path, "-f", "wrong-file", "-f", "no-such-family"), capture_output=True,
                       text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert p.returncode == 2 and "--family: unknown family 'no-such-family'" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "demo.db").exists()

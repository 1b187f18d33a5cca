"""The user's 124M shape end to end, each literal command in its own process (benchmarks/bench_shapes.py):
import an HF GPT-2 directory of random weights, train sft, train grpo at beta 0.04, the beta ablation and a
chat to its first answer. Slow (minutes on 2 cores): `pytest -m slow tests/test_shapes.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_124m_commands_end_to_end(tmp_path):
    out = tmp_path / "shapes.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_shapes.py"), "--sizes", "124m", "--work", str(tmp_path), "--json", str(out)]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {r["command"].split(" --")[0]: r for r in json.loads(out.read_text())}
    assert {"iclaw models import hf-124m", "iclaw train sft", "iclaw train grpo", "iclaw ablate beta"} <= set(
        rows
    )
    assert all(r["rss_gib"] and r["seconds"] > 0 for r in rows.values())
    chat = rows["iclaw chat"]
    assert chat["prompt_s"] < chat["answer_s"]

"""benchmarks/outside.jsonl, the hand-written everyday mistakes: the file loads, is big enough, has both kinds,
and a fixed sample of its tasks behaves in the real sandbox (the oracle passes, the broken command fails)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from iclaw.tasks import Verifier, load_tasks
from iclaw.tools.sandbox import Limits, Sandbox

OUTSIDE = Path(__file__).resolve().parents[1] / "benchmarks" / "outside.jsonl"


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(OUTSIDE)


def test_file_has_enough_tasks_of_both_kinds(tasks):
    kinds = [t.kind for t in tasks]
    assert len(tasks) >= 100
    assert kinds.count("bash") >= 40 and kinds.count("python") >= 40
    for t in tasks:
        assert t.family and t.family != "custom", t.id
        assert t.reference is not None or (t.test is not None and t.solution is not None), t.id
        assert t.error and t.broken_exit not in (None, 0), t.id  # what the broken command printed is recorded


def test_sample_oracle_passes_and_broken_fails(tasks):
    rng = random.Random(0)
    sample = [t for kind in ("bash", "python") for t in rng.sample([t for t in tasks if t.kind == kind], 5)]
    pairs = []
    for t in sample:
        pairs += [(t, t.reference or t.solution), (t, t.broken), (t, "true" if t.kind == "bash" else "pass")]
    verdicts = Verifier(Sandbox(Limits(timeout_s=5.0))).verify_many(pairs)
    for k, t in enumerate(sample):
        oracle, broken, nothing = verdicts[3 * k : 3 * k + 3]
        assert oracle.passed, (t.id, oracle.reason, oracle.stdout, oracle.expected_stdout, oracle.stderr)
        assert not broken.passed and broken.exit_code != 0, (t.id, broken.reason)
        assert not nothing.passed, (t.id, "doing nothing passes")

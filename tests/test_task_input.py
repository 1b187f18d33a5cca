"""Hand-written task files behave like generated ones, and bad input says so in one line.

A task file without `error` fields has each broken command run first in a fresh fixture (fill_errors) by
every command that runs the policy on it, so the first turn shows the real output; a Python task runs as
main.py inside its fixture; a shell task may have only a `test`; a family that cannot make a valid task,
a broken command that does not fail and a test that never passes are each named. Real sandbox, real
sqlite store, a real (untrained, tiny) model."""

from __future__ import annotations

import importlib
import json
import random

import pytest
from test_chat_support import one_thread, publish, tiny_model, use_home
from typer.testing import CliRunner

from iclaw.cli import app
from iclaw.errors import IclawError
from iclaw.model import registry
from iclaw.store import Store
from iclaw.tasks import Family, Instance, Task, Verifier, fill_errors, generate, load_tasks
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.common import load_task_file, task_pool

runner = CliRunner()
gen = importlib.import_module("iclaw.tasks.generate")  # the module (iclaw.tasks.generate is the function)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(timeout_s=5.0))


HELPER = {"helper.py": "def f():\n    return 42\n"}
PY_MODULE = {  # a Python fixture module: the program imports it, and looks where __file__ is
    "id": "py-helper",
    "kind": "python",
    "files": HELPER,
    "broken": "import helper\nprint(helper.g())\n",
    "reference": "import os, helper\nprint(helper.f(), sorted(os.listdir(os.path.dirname(__file__))))\n",
}
SHELL_TEST_ONLY = {  # outcome-only shell task: a test and nothing else (no reference, no solution)
    "id": "sh-test-only",
    "kind": "bash",
    "broken": "mkdir out/logs && touch out/logs/today.txt",
    "test": "test -f out/logs/today.txt",
}
NO_FAIL = {"id": "sh-succeeds", "kind": "bash", "broken": "echo hi", "reference": "echo hello"}
NEVER_PASSES = {
    "id": "sh-never",
    "kind": "bash",
    "broken": "cat nope.txt",
    "test": "test -f never-made.txt",
    "solution": "echo done",
}


def refused(r) -> str:
    """The IclawError a CliRunner run stopped with (iclaw.cli.main prints it as one `error:` line, exit 2)."""
    assert isinstance(r.exception, IclawError), (r.exit_code, r.output, r.exception)
    return str(r.exception)


def write(path, *objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


# ------------------------------------------------------------------------------- the first turn is real


def test_fill_errors_records_the_real_output_as_generate_does(sandbox, tmp_path):
    f = write(tmp_path / "t.jsonl", PY_MODULE, SHELL_TEST_ONLY, {**NO_FAIL, "error": "x", "broken_exit": 1})
    tasks = load_task_file(f, sandbox)
    py, sh, given = tasks
    assert py.broken_exit == 1
    assert 'File "main.py", line 2' in py.error  # the program is main.py in its directory
    assert "AttributeError: module 'helper' has no attribute 'g'" in py.error
    assert sh.broken_exit == 1 and "No such file or directory" in sh.error
    assert (given.error, given.broken_exit) == ("x", 1)  # a recorded error is kept, not re-run
    # the grpo / distill pool goes through the same loader
    assert [t.error for t in task_pool(f, sandbox=sandbox)] == [t.error for t in tasks]


def test_eval_of_a_hand_written_file_shows_the_real_error_in_the_first_turn(tmp_path, monkeypatch):
    use_home(monkeypatch, tmp_path / "home")
    publish("tiny", tiny_model(0))  # what it answers does not matter: the first user turn does
    f = write(tmp_path / "hand.jsonl", PY_MODULE, SHELL_TEST_ONLY)
    db = tmp_path / "t.db"
    with one_thread():
        r = runner.invoke(
            app, ["eval", "--model", "tiny", "--tasks", str(f), "--db", str(db), "--max-turns", "1"]
        )
    assert r.exit_code == 0, r.output
    with Store(db) as store:
        eps = {e["task_id"]: store.episode(e["id"]) for e in store.episodes(source="eval")}
    assert set(eps) == {"py-helper", "sh-test-only"}
    first = eps["py-helper"]["turns"][0]
    assert first["role"] == "user"
    assert (
        "AttributeError: module 'helper' has no attribute 'g'" in first["text"]
        and "[exit 1]" in first["text"]
    )
    first = eps["sh-test-only"]["turns"][0]["text"]
    assert "mkdir: cannot create directory" in first and "[exit 1]" in first


# ------------------------------------------------------------------------- Python runs inside its fixture


def test_a_python_task_imports_its_fixture_and_its_file_is_there(sandbox):
    t = Task.from_dict(PY_MODULE, "inline")
    v = Verifier(sandbox)
    ref = v.verify(t, t.reference)
    assert ref.passed and ref.stdout == "42 ['helper.py', 'main.py']", ref
    broken = v.verify(t, t.broken)
    assert not broken.passed and broken.exit_code == 1 and "has no attribute 'g'" in broken.stderr
    # a fixture's own main.py is replaced by the candidate's code
    own = Task.from_dict({**PY_MODULE, "files": {**HELPER, "main.py": "print('old')\n"}}, "inline")
    assert (
        v.verify(own, "print(open(__file__).read().strip())").stdout == "print(open(__file__).read().strip())"
    )


def test_generate_runs_a_python_family_inside_its_fixture(sandbox, monkeypatch):
    def make(rng: random.Random) -> Instance:
        n = rng.randint(1, 10**6)
        return Instance(
            broken=f"import helper\nprint(helper.g() + {n})",
            reference=f"import helper\nprint(helper.f() + {n})",
            files={"helper.py": "def f():\n    return 42\n"},
        )

    fam = Family("py-helper-test", "python", make, "module function misspelled", source="test")
    monkeypatch.setitem(gen.FAMILIES, fam.name, fam)
    (t,) = generate(1, families=[fam.name], sandbox=sandbox)
    assert t.broken_exit == 1 and 'File "main.py", line 2' in t.error


# ------------------------------------------------------------------------------------ shell test-only


def test_a_shell_task_may_have_only_a_test(sandbox, tmp_path):
    (t,) = load_tasks(write(tmp_path / "t.jsonl", SHELL_TEST_ONLY))
    assert t.reference is None and t.solution is None and t.outcome_only
    v = Verifier(sandbox)
    assert v.verify(t, "mkdir -p out/logs && touch out/logs/today.txt").passed
    assert not v.verify(t, t.broken).passed and not v.verify(t, "true").passed
    fill_errors([t], sandbox)
    assert t.broken_exit == 1 and "No such file or directory" in t.error
    r = runner.invoke(app, ["tasks", "check", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 0 and "no solution given" in r.output and "all 1 tasks behave" in r.output


# ------------------------------------------------------------------------------------------ bad input


def test_a_broken_command_that_does_not_fail_is_named(sandbox, tmp_path, monkeypatch):
    f = write(tmp_path / "t.jsonl", SHELL_TEST_ONLY, NO_FAIL)
    with pytest.raises(IclawError) as e:
        load_task_file(f, sandbox)
    assert (
        str(e.value)
        == f"{f}: task sh-succeeds: its broken command does not fail (exit 0): there is nothing to fix"
    )
    r = runner.invoke(app, ["tasks", "check", str(f)])
    assert r.exit_code == 1
    assert "sh-succeeds: its broken command does not fail (exit 0)" in r.output and "1 of 2 tasks" in r.output
    # eval and train refuse it with that line, before any model runs or anything is logged
    use_home(monkeypatch, tmp_path / "home")
    publish("tiny", tiny_model(0))
    db = tmp_path / "t.db"
    r = runner.invoke(app, ["eval", "--model", "tiny", "--tasks", str(f), "--db", str(db)])
    assert refused(r) == str(e.value) and not db.exists()
    r = runner.invoke(app, ["train", "sft", "--init", "tiny", "--tasks", str(f), "--out", "never"])
    assert refused(r) == str(e.value)
    assert not registry.is_registered("never")


def test_a_test_that_never_passes_is_named_by_check(tmp_path):
    f = write(
        tmp_path / "t.jsonl",
        NEVER_PASSES,
        {**SHELL_TEST_ONLY, "id": "ok", "solution": "mkdir -p out/logs && touch out/logs/today.txt"},
    )
    r = runner.invoke(app, ["tasks", "check", str(f)])
    assert r.exit_code == 1
    assert "sh-never: its test never passes, not even for its solution" in r.output
    assert "ok:" not in r.output and "1 of 2 tasks are broken" in r.output


def _family(name, make, kind="bash"):
    return Family(name, kind, make, "a test family", source="test")


def test_a_family_that_cannot_make_an_instance_is_named(sandbox, monkeypatch, tmp_path):
    def never(rng):
        raise ValueError("no luck")

    def crashes(rng):
        return {"broken": "x"}["nope"]

    def empty(rng):
        return Instance(broken=" ", reference="echo hi")

    for name, make, problem in (
        ("never-makes", never, "family never-makes cannot produce an instance: make() raised ValueError"),
        ("crashes", crashes, "family crashes: make() failed: KeyError: 'nope'"),
        (
            "empty-broken",
            empty,
            "family empty-broken: make() returned an instance with an empty broken command",
        ),
    ):
        monkeypatch.setitem(gen.FAMILIES, name, _family(name, make))
        with pytest.raises(IclawError) as e:
            generate(2, families=["cmd-typo", name], sandbox=sandbox)
        assert str(e.value).startswith(problem), str(e.value)
    # the CLI: refused with that one line, and no file half-written
    out = tmp_path / "t.jsonl"
    r = runner.invoke(app, ["tasks", "gen", "--family", "crashes", "--n", "2", "--out", str(out)])
    assert refused(r).startswith("family crashes: make() failed") and not out.exists()


def test_a_family_whose_instances_never_behave_is_named(sandbox, monkeypatch):
    def make(rng):  # the "broken" command succeeds: every instance is dropped
        w = rng.choice(["red", "green", "blue", "gold", "grey"]) + str(rng.randint(0, 10**6))
        return Instance(broken=f"echo {w}", reference=f"echo {w}")

    monkeypatch.setattr(gen, "FAIL_AFTER", 8)
    monkeypatch.setitem(gen.FAMILIES, "always-passes", _family("always-passes", make))
    with pytest.raises(IclawError) as e:
        generate(1, families=["always-passes"], sandbox=sandbox)
    assert str(e.value).startswith("family always-passes cannot produce a valid task: none of its first")
    assert "its broken command passes" in str(e.value)

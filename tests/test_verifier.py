"""The verifier, against the real sandbox: oracle 100 %, broken 0 %, and reward-hacking probes score 0."""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import replace

import pytest
from helpers import SHOPPING, SHOPPING_PY

from iclaw.tasks import FAMILIES, Task, Verifier, fill_errors, generate, load_tasks
from iclaw.tasks.vary import no_variation, varied_files
from iclaw.tools.sandbox import Limits, Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(timeout_s=5.0))


@pytest.fixture(scope="module")
def verifier(sandbox) -> Verifier:
    return Verifier(sandbox)


@pytest.fixture(scope="module")
def tasks(sandbox) -> list[Task]:
    # A handful per family, from both splits.
    return generate(3 * len(FAMILIES), "train", seed=11, sandbox=sandbox) + generate(
        len(FAMILIES), "heldout", seed=11, sandbox=sandbox
    )


def oracle(t: Task) -> str:
    return t.reference if t.reference is not None else t.solution


def test_oracle_passes_and_broken_fails_on_every_family(verifier, tasks):
    assert {t.family for t in tasks} == set(FAMILIES)
    # Use a fresh verifier: nothing cached from generation time.
    verdicts = Verifier(verifier.sandbox).verify_many([(t, c) for t in tasks for c in (oracle(t), t.broken)])
    for k, t in enumerate(tasks):
        good, bad = verdicts[2 * k], verdicts[2 * k + 1]
        assert good.passed, (t.id, good.reason, good.stdout, good.expected_stdout)
        assert good.reward == 1.0
        assert not bad.passed, (t.id, bad.reason)
        assert bad.reward == 0.0


HAND_WRITTEN = [
    {
        "id": "uniq-typo-1",
        "kind": "bash",
        "files": {"names.txt": "a\na\nb\n"},
        "broken": "uinq names.txt",
        "reference": "uniq names.txt",
    },
    {
        "id": "py-colon-1",
        "kind": "python",
        "broken": "n = 0\nwhile n < 2\n    n += 1\nprint(n)",
        "reference": "n = 0\nwhile n < 2:\n    n += 1\nprint(n)",
    },
    # outcome-only: no reference, a test decides; the intended fix is not in the file at all
    {"id": "mkdir-1", "kind": "bash", "broken": "mkdir a/b", "test": "test -d a/b"},
    # a reference that exits non-zero on purpose: exit codes must match, not be zero
    {
        "id": "grep-miss-1",
        "kind": "bash",
        "files": {"sub/f.txt": "x\n"},
        "broken": "grpe -c y sub/f.txt",
        "reference": "grep -c y sub/f.txt",
    },
    # python with a fixture and a test (the test is a shell command)
    {
        "id": "py-write-1",
        "kind": "python",
        "broken": "open('out.txt', 'w').write(42)",
        "reference": "open('out.txt', 'w').write('42')\nprint('ok')",
        "test": 'test "$(cat out.txt)" = 42',
    },
]


def test_hand_written_task_file(tmp_path, verifier):
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in HAND_WRITTEN) + "\n\n")
    tasks = load_tasks(path)
    assert [t.id for t in tasks] == [d["id"] for d in HAND_WRITTEN]
    assert tasks[2].outcome_only and tasks[2].family == "custom"
    fixes = {"mkdir-1": "mkdir -p a/b"}
    verdicts = verifier.verify_many(
        [(t, c) for t in tasks for c in (fixes.get(t.id) or t.reference, t.broken)]
    )
    for k, t in enumerate(tasks):
        assert verdicts[2 * k].passed, (t.id, verdicts[2 * k].reason)
        assert not verdicts[2 * k + 1].passed, t.id
    assert verdicts[6].expected_exit == 1  # grep -c with no match: "0" and exit 1
    # the error a hand-written task's broken command really gives, for the agent's first observation
    fill_errors(tasks, verifier.sandbox)
    assert tasks[0].broken_exit == 127 and "uinq: command not found" in tasks[0].error
    assert tasks[1].broken_exit == 1 and "expected ':'" in tasks[1].error


def test_trailing_whitespace_and_workdir_path_are_ignored(verifier):
    t = Task(id="ws", kind="bash", family="custom", broken="ech a", reference="echo a; pwd")
    assert verifier.verify(t, "printf 'a   \\n%s\\n\\n\\n' \"$PWD\"").passed
    assert not verifier.verify(t, "echo a; echo /elsewhere").passed


def pick(tasks, family):
    return next(t for t in tasks if t.family == family)


@pytest.mark.parametrize(
    "hack",
    [
        "true",
        "exit 0",
        ":",
        "",
        "   ",
        "echo done",
        "echo ok; exit 0",
        "rm -rf ./* ./.[!.]*; true",  # delete the fixture
        'for f in *; do echo hacked > "$f"; done; cat *',  # rewrite the fixture, then print it
        "ls",
        "cat /dev/null",
    ],
)
def test_do_nothing_and_plausible_output_score_zero(verifier, tasks, hack):
    bash_tasks = [t for t in tasks if t.kind == "bash"]
    for v, t in zip(verifier.verify_many([(t, hack) for t in bash_tasks]), bash_tasks):
        assert not v.passed, (t.id, hack, v.reason)


@pytest.mark.parametrize(
    "hack",
    [
        "pass",
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        "print('ok')",
        "print(42)",
        "import os\nfor f in os.listdir('.'):\n    os.remove(f)",
        "import os\nprint(os.listdir('.'))",
    ],
)
def test_python_hacks_score_zero(verifier, tasks, hack):
    py_tasks = [t for t in tasks if t.kind == "python"]
    for v, t in zip(verifier.verify_many([(t, hack) for t in py_tasks]), py_tasks):
        assert not v.passed, (t.id, hack, v.reason)


def test_plausible_near_misses_score_zero(verifier, tasks):
    t = Task(
        id="sort-1",
        kind="bash",
        family="custom",
        files={"n.txt": "b\na\nc\n"},
        broken="sotr n.txt",
        reference="sort n.txt",
    )
    for hack in (
        "cat n.txt",
        "sort -r n.txt",
        "printf 'a\\nb\\n'",
        "echo a b c",
        "sort n.txt; exit 1",
        "sort n.txt >&2",
        "printf 'z\\n' > n.txt; sort n.txt",
    ):
        assert not verifier.verify(t, hack).passed, hack
    # The verdict is about outcome only: computing the same output another way is a real fix.
    assert verifier.verify(t, "sort < n.txt").passed
    assert verifier.verify(t, "cat n.txt | sort").passed


def test_test_command_cannot_be_tampered_with(verifier, tasks):
    t = pick(tasks, "mkdir-outcome")
    hacks = [
        # a fake `test` executable / function in the task directory: the test is run by a fresh bash,
        # where `test` is the builtin and the task directory is not on PATH
        "printf '#!/bin/sh\\nexit 0\\n' > test; chmod +x test; mkdir -p bin; cp test bin/",
        "test() { return 0; }; export -f test",
        "echo 'alias test=true' >> ~/.bashrc; echo 'test() { true; }' > .bashrc",
        # a late writer that would create the expected state after the candidate returns: the sandbox
        # tears the candidate's process tree down before the test runs
        f"(sleep 0.3; {t.solution}) >/dev/null 2>&1 & disown; true",
        f"nohup sh -c 'sleep 0.3; {t.solution}' >/dev/null 2>&1 &",
    ]
    for hack in hacks:
        v = verifier.verify(t, hack)
        assert not v.passed, (hack, v.reason)
    assert verifier.verify(t, t.solution).passed


def test_candidate_cannot_reach_other_fixtures_or_the_cache(verifier, tasks):
    t = pick(tasks, "cmd-typo")
    # Run a destructive candidate next to a correct one in the same batch; the correct one still passes,
    # and the cached reference is untouched afterwards.
    wipe = "rm -rf ../* ../../* /tmp/* 2>/dev/null; true"
    verdicts = verifier.verify_many([(t, wipe), (t, t.reference), (t, wipe)])
    assert [v.passed for v in verdicts] == [False, True, False]
    assert verifier.verify(t, t.reference).passed


def test_timeouts_and_forks_score_zero(sandbox, tasks):
    quick = Verifier(sandbox, timeout=1.0)
    ref_task = pick(tasks, "cmd-typo")
    outcome = pick(tasks, "mkdir-outcome")
    py = pick(tasks, "py-name")
    probes = [
        (ref_task, "sleep 30"),
        (ref_task, f"{ref_task.reference}; sleep 30"),  # right output, then hangs: still 0
        (outcome, f"{outcome.solution}; sleep 30"),  # right state, then hangs: still 0
        (ref_task, ":(){ :|:& };:"),  # fork bomb
        (ref_task, f"{ref_task.reference}; while true; do sleep 1 & done"),
        (py, "import time\ntime.sleep(30)"),
        (py, "import os\nwhile True:\n    os.fork()"),
        (py, "while True:\n    pass"),
    ]
    start = time.monotonic()
    verdicts = quick.verify_many(probes)
    elapsed = time.monotonic() - start
    for (t, hack), v in zip(probes, verdicts):
        assert not v.passed, (t.id, hack, v.reason)
    assert verdicts[0].timed_out and verdicts[0].reason == "timed out"
    assert elapsed < 15, elapsed  # run in parallel, each killed at ~1 s


def test_reference_is_cached_per_task(sandbox, tasks):
    v = Verifier(sandbox)
    t = pick(tasks, "quote")
    v.verify_many([(t, t.reference), (t, t.broken), (t, "true")])
    assert len(v._ref_cache) == 1
    # A task with the same id but a different reference is a different cache entry, not a stale hit.
    other = Task(id=t.id, kind="bash", family="custom", broken="x", reference="echo other")
    assert v.verify(other, "echo other").passed
    assert len(v._ref_cache) == 2


def test_nondeterministic_reference_and_empty_candidate(verifier):
    t = Task(id="rand", kind="bash", family="custom", broken="ech", reference="echo $RANDOM$RANDOM")
    assert not verifier.verify(t, "echo $RANDOM$RANDOM").passed
    assert verifier.verify(t, "").reason == "empty candidate"


def test_a_repeated_candidate_runs_once_and_gets_its_own_verdict(sandbox, tasks):
    runs: list[str] = []

    class Counting(Sandbox):  # the real sandbox, counting what it is asked to run
        def run_many(self, calls, max_workers=None):
            runs.extend(c[1] for c in calls)
            return super().run_many(calls, max_workers=max_workers)

    v = Verifier(Counting(sandbox.limits))
    t, out = pick(tasks, "cmd-typo"), pick(tasks, "mkdir-outcome")
    pairs = [(t, t.reference)] * 4 + [(t, t.broken)] * 2 + [(out, out.solution)] * 3 + [(out, "true")]
    verdicts = v.verify_many(pairs)
    assert [x.passed for x in verdicts] == [True] * 4 + [False] * 2 + [True] * 3 + [False]
    # the reference once (then cached), each distinct candidate once, the test after each outcome candidate;
    # where the task has a varied copy, the reference once more there, and the passing candidate too when
    # the reference's output follows the files
    e = v.expected(t)
    ref_runs = 1 + (e.variation != "none")
    fix_runs = 1 + (e.variation == "checked")
    assert sorted(runs) == sorted(
        [t.reference] * (ref_runs + fix_runs) + [t.broken, out.solution, "true", out.test, out.test]
    )
    assert len({id(x) for x in verdicts}) == len(verdicts)  # copies: changing one changes no other


# --- the varied copy: an output that does not follow the files fails ------------------------------------


def printed_copy(t: Task, stdout: str, exit_code: int | None) -> str:
    """A candidate that prints the expected output literally (and exits as the reference did)."""
    if t.kind == "python":
        code = f"import sys\nsys.stdout.write({stdout + chr(10)!r})"
        return code + (f"\nsys.exit({exit_code})" if exit_code else "")
    return f"printf '%s\\n' {shlex.quote(stdout)}" + (f"; exit {exit_code}" if exit_code else "")


# Families every instance of which prints something of its files' contents (the others print names or
# computed constants on some instances: `ls`, `readlink`, `mkdir -v`): the varied copy must catch a printed
# copy of the output on their tasks.
READ_CONTENTS = {
    "case-name", "file-typo", "in-subdir", "listed-file", "name-case", "option-value", "pipe",
    "py-csv-header", "py-file-case", "py-file-sep", "py-file-typo", "py-listed-file", "py-wrong-ext",
    "py-wrong-file",
    "sed-unterminated", "wrong-ext", "wrong-file",
}  # fmt: skip


def test_a_printed_copy_of_the_output_fails_wherever_the_output_follows_the_files(sandbox, tasks):
    v = Verifier(sandbox)
    ref_tasks = [t for t in tasks if t.reference is not None]
    assert all(x.passed for x in v.verify_many([(t, t.reference) for t in ref_tasks]))  # the oracle: 100 %
    exp = {t.id: v.expected(t) for t in ref_tasks}
    # every variation is safe: the reference works in the varied copy as in the real one
    assert not [t.id for t in ref_tasks if exp[t.id].variation == "exit differs"]
    checked = [t for t in ref_tasks if exp[t.id].variation == "checked"]
    assert READ_CONTENTS <= {t.family for t in checked}
    # (a count may come out the same by chance: `grep -c e` finds one line with an e in both copies)
    reads = [t for t in ref_tasks if t.family in READ_CONTENTS]
    assert sum(t in checked for t in reads) >= 0.9 * len(reads)
    hacks = [(t, printed_copy(t, exp[t.id].stdout, exp[t.id].exit_code)) for t in checked]
    # the printed copy would have fooled a verifier with one fixture; the varied copy rejects it, every time
    assert all(x.passed for x in Verifier(sandbox, vary=False).verify_many(hacks))
    verdicts = v.verify_many(hacks)
    for (t, hack), x in zip(hacks, verdicts):
        assert not x.passed and x.varied and "varied fixture" in x.reason, (t.id, hack, x.reason)
    assert len({t.family for t in checked}) >= 30, sorted({t.family for t in checked})


def test_the_shopping_list_from_the_issue(verifier):
    assert not verifier.verify(SHOPPING, "printf 'milk\\neggs\\n'").passed
    assert Verifier(verifier.sandbox, vary=False).verify(SHOPPING, "printf 'milk\\neggs\\n'").passed
    # rewriting the input to match the remembered output: fine in the real copy, caught in the varied one
    v = verifier.verify(SHOPPING, "printf 'milk\\neggs\\n' > shopping.txt; cat shopping.txt")
    assert not v.passed and v.reason.startswith("stdout differs in the varied fixture")
    for fix in ("cat shopping.txt", "cat < shopping.txt", "head -n 100 shopping.txt", "grep '' shopping.txt"):
        v = verifier.verify(SHOPPING, fix)
        assert v.passed and v.varied, (fix, v.reason)
    assert verifier.verify(SHOPPING_PY, 'for line in open("shopping.txt"):\n    print(line.strip())').passed
    assert not verifier.verify(SHOPPING_PY, 'print("milk")\nprint("eggs")').passed


def test_the_generic_variation_keeps_structure_and_changes_data():
    files = {
        "names.txt": "bob\nbob\nann\n",
        "data.csv": "name,score\nbob,3\nhint,4\n",
        "data.json": '{\n  "users": ["bob", "ann"],\n  "n": 2\n}\n',
        "tool.py": "print('bob')\n",
        "fake.json": "bob is not json\n",
    }
    t = Task(id="v", kind="bash", family="custom", files=files, broken="grep hin data.csv",
             reference="grep hin data.csv")  # fmt: skip
    one, two = varied_files(t, "seed"), varied_files(t, "seed")
    assert one == two  # the same copy on every run
    names = one["names.txt"].splitlines()
    assert len(names) == 4 and names[0] == names[1] != "bob" and len(set(names)) == 3  # equal stays equal
    csv = one["data.csv"].splitlines()
    assert csv[0] == "name,score" and csv[2] == csv[3] == "hint,4"  # header kept; the grep's line added
    data = json.loads(one["data.json"])
    assert (
        set(data) == {"users", "n"}
        and data["n"] == 2
        and len(data["users"]) == 3
        and "bob" not in data["users"]
    )
    assert one["tool.py"] == files["tool.py"]  # programs are not data
    assert one["fake.json"] != files["fake.json"]  # not JSON: varied as text
    assert varied_files(Task(id="e", kind="bash", family="custom", broken="x", reference="ls"), "s") is None


def test_a_family_declares_its_variation_or_opts_out(sandbox, tasks, monkeypatch):
    t = pick(tasks, "wrong-file")  # the generic variation: its output follows the files
    v = Verifier(sandbox)
    assert v.verify(t, t.reference).varied and v.expected(t).variation == "checked"
    # the same family, opted out: one copy only, and a printed copy of the output passes again
    monkeypatch.setitem(FAMILIES, "wrong-file-fixed", replace(FAMILIES["wrong-file"], vary=no_variation))
    fixed = replace(t, family="wrong-file-fixed")
    assert varied_files(fixed, "any seed") is None
    exp = v.expected(t)
    assert v.verify(fixed, printed_copy(fixed, exp.stdout, exp.exit_code)).passed
    assert v.expected(fixed).variation == "none"
    # a family's own variation: py-json-api moves the numbers the generic one keeps, and stays JSON
    j = next(t for t in tasks if t.family == "py-json-api" and t.files)
    varied = varied_files(j, "seed")
    assert all(json.loads(text) != json.loads(j.files[path]) for path, text in varied.items())
    # ... and leaves a file that is not JSON as the generic one does (the program, in a shell view of the task)
    shell_view = replace(j, files={**j.files, "main.py": j.broken})
    assert set(varied_files(shell_view, "seed")) == set(shell_view.files)

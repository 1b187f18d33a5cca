"""Task format, loader, generator (determinism, splits, family coverage) and CLI. Real sandbox, real
subprocesses. (Mining tasks from the store: test_mine.py.)"""

from __future__ import annotations

import json
import random

import pytest
from helpers import run_iclaw

from iclaw.errors import IclawError
from iclaw.tasks import FAMILIES, Family, Instance, Task, Verifier, generate, load_tasks, save_tasks
from iclaw.tasks.generate import split_of, task_id
from iclaw.tools.sandbox import Limits, Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(timeout_s=5.0))


# ------------------------------------------------------------------------------------------------- format


GOOD = {
    "id": "t1",
    "kind": "bash",
    "files": {"d/names.txt": "b\na\n"},
    "broken": "sotr d/names.txt",
    "reference": "sort d/names.txt",
}


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({**GOOD, "id": None}), "missing required field 'id'"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "broken"}), "missing required field 'broken'"),
        (json.dumps({**GOOD, "kind": "zsh"}), "field 'kind' must be one of"),
        (json.dumps({**GOOD, "reference": None}), "needs a 'reference' or a 'test'"),
        (json.dumps({**GOOD, "reference": 3}), "field 'reference' must be a string"),
        (json.dumps({**GOOD, "files": {"/etc/passwd": "x"}}), "is absolute"),
        (json.dumps({**GOOD, "files": {"a/../../x": "x"}}), "contains '..'"),
        (json.dumps({**GOOD, "files": {"..": "x"}}), "contains '..'"),
        (json.dumps({**GOOD, "files": {"": "x"}}), "empty"),
        (json.dumps({**GOOD, "files": {".": "x"}}), "task directory itself"),
        (json.dumps({**GOOD, "files": {"a.txt": 5}}), "must be a string"),
        (json.dumps({**GOOD, "files": ["a.txt"]}), "field 'files' must be an object"),
        (json.dumps({**GOOD, "split": "test"}), "field 'split' must be one of"),
        (json.dumps({**GOOD, "multi_turn": "yes"}), "multi_turn"),
        (json.dumps({**GOOD, "broken_exit": "1"}), "broken_exit"),
        (json.dumps({**GOOD, "refrence": "sort"}), "unknown field(s) refrence"),
        (json.dumps(GOOD), "duplicate task id 't1' (first on line 1)"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, line, problem):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n")
    with pytest.raises(IclawError) as e:
        load_tasks(path)
    assert str(e.value).startswith(f"{path}:3: "), str(e.value)
    assert problem in str(e.value)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(IclawError, match="no such task file"):
        load_tasks(tmp_path / "nope.jsonl")
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(IclawError, match="not UTF-8"):
        load_tasks(bad)


def test_round_trip_and_minimal_fields(tmp_path):
    minimal = {"id": "m", "kind": "python", "broken": "print(x", "reference": "print(1)"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(minimal) + "\n")
    tasks = load_tasks(path)
    assert tasks[1].files == {} and tasks[1].family == "custom" and not tasks[1].multi_turn
    save_tasks(tasks, tmp_path / "u.jsonl")
    again = load_tasks(tmp_path / "u.jsonl")
    assert again == tasks
    save_tasks(again, tmp_path / "v.jsonl")
    assert (tmp_path / "u.jsonl").read_bytes() == (tmp_path / "v.jsonl").read_bytes()


def test_a_bad_task_built_in_code_is_refused_before_running(sandbox, tmp_path):
    t = Task(id="x", kind="bash", family="custom", broken="x", reference="true", files={"../escape": "x"})
    with pytest.raises(IclawError, match="contains '..'"):
        Verifier(sandbox).verify(t, "true")


# ---------------------------------------------------------------------------------------------- generator


# One task per family and split: with 60+ families each sample costs a few hundred sandbox runs, and one
# instance per family is enough for every check below (balance, interleaving, the recorded errors).
@pytest.fixture(scope="module")
def train(sandbox) -> list[Task]:
    return generate(len(FAMILIES), "train", seed=3, sandbox=sandbox)


@pytest.fixture(scope="module")
def heldout(sandbox) -> list[Task]:
    return generate(len(FAMILIES), "heldout", seed=3, sandbox=sandbox)


def test_family_catalogue_meets_the_brief():
    """Issue 25's brief: at least 60 families, 30 shell and 25 Python, 10 look-first and 8 outcome-only,
    each with a description (the mistake -> its fix) and a source (where the mistake comes from)."""
    fams = list(FAMILIES.values())
    assert len(fams) >= 60, len(fams)
    assert sum(f.kind == "bash" for f in fams) >= 30
    assert sum(f.kind == "python" for f in fams) >= 25
    assert sum(f.multi_turn for f in fams) >= 10
    assert sum(f.outcome_only for f in fams) >= 8
    assert [f.name for f in fams if not f.description.strip()] == []
    assert [f.name for f in fams if not f.source.strip()] == []
    assert all(f.kind in ("bash", "python") for f in fams)
    # a make() of its own per family (a module may hold the families that share a fixture builder), and the
    # family is registered under its own name
    assert len({f.make for f in fams}) == len(fams)
    assert all(FAMILIES[f.name] is f for f in fams)
    with pytest.raises(TypeError, match="error_mentions must be a tuple"):  # not read letter by letter
        Family("x", "bash", fams[0].make, "d", error_mentions="No such file")


def _table_families(markdown: str) -> list[str]:
    """The family names in the first column of a Markdown table such as `iclaw tasks list --markdown`."""
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    return [row.split("|")[1].strip().strip("`") for row in rows]


def test_docs_tasks_md_lists_every_family():
    """docs/TASKS.md is `iclaw tasks list --markdown` under a header: it cannot silently go stale when a
    family is added or renamed (regenerate it: see its first paragraph)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "TASKS.md").read_text(encoding="utf-8")
    listed = _table_families(doc)
    assert sorted(listed) == sorted(FAMILIES), set(listed) ^ set(FAMILIES)
    assert len(listed) == len(set(listed))


def test_tasks_list_shows_the_taxonomy_and_markdown():
    from iclaw.tasks.catalogue import COLUMNS, example, family_type, markdown_table

    md = markdown_table(FAMILIES)
    lines = md.splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    assert _table_families(md) == list(FAMILIES)
    assert all(line.count("|") - line.count("\\|") == len(COLUMNS) + 1 for line in lines)  # no stray pipe
    for f in FAMILIES.values():
        assert family_type(f) in ("single-turn", "look-first", "outcome-only", "look-first + outcome-only")
        ex = example(f)
        assert ex and not ex.startswith("(") and "\n" not in ex and len(ex) <= 48, (f.name, ex)
    assert family_type(FAMILIES["wrong-file"]) == "look-first"
    assert family_type(FAMILIES["mkdir-outcome"]) == "outcome-only"
    assert family_type(FAMILIES["cmd-typo"]) == "single-turn"
    r = run_iclaw("tasks", "list", "--markdown")
    assert r.returncode == 0 and r.stdout == md, r.stderr


def test_generated_tasks_are_balanced_and_record_the_real_error(train):
    counts = {name: sum(t.family == name for t in train) for name in FAMILIES}
    assert set(counts.values()) == {1}, counts
    # interleaved: the first len(FAMILIES) tasks cover every family
    assert {t.family for t in train[: len(FAMILIES)]} == set(FAMILIES)
    for t in train:
        fam = FAMILIES[t.family]
        assert t.split == "train" and t.kind == fam.kind and t.multi_turn == fam.multi_turn
        assert t.error and t.broken_exit not in (None, 0), t
        assert not fam.error_mentions or any(m in t.error for m in fam.error_mentions), t
        assert (t.reference is None) == fam.outcome_only
        if fam.outcome_only:
            assert t.test and t.solution
        assert t.id == task_id(t.family, Instance(t.broken, t.files, t.reference, t.test, t.solution))
        lines = (t.reference or t.solution).splitlines()
        assert len(lines) <= (1 if t.kind == "bash" else 12), t  # a fix fits one turn (MAX_NEW_TOKENS)
    errors = {t.family: t.error for t in train}
    assert "command not found" in errors["cmd-typo"]
    assert "unrecognized option" in errors["flag-typo"]
    assert "Did you mean" in errors["py-name"]
    assert "No such file or directory" in errors["wrong-file"]
    assert "File exists" in errors["mkdir-exists"]
    assert 'File "main.py", line' in errors["py-type"]  # the program is main.py, in the task directory


def test_multi_turn_families_need_a_look_first(train):
    seen = set()
    for t in train:
        if t.family in ("wrong-file", "py-wrong-file", "wrong-ext", "py-wrong-ext"):
            seen.add(t.family)
            real = [f for f in t.files if f in t.reference]
            assert len(real) == 1 and real[0] not in t.broken and 2 <= len(t.files) <= 4
            stem = real[0].split(".")[0].split("_")[0]
            assert sum(f.startswith(stem) for f in t.files) == 1  # exactly one file looks like the target
            assert f"{stem}." in t.broken  # the request names the stem, never the real name
    assert seen == {"wrong-file", "py-wrong-file", "wrong-ext", "py-wrong-ext"}


def test_listed_twins_copy_a_suffix_and_an_extension():
    """The single-turn listed families are the demonstrations behind the multi-turn ones: between them they
    must copy a suffixed name (wrong-file) and another extension (wrong-ext) out of a listing."""
    rng = random.Random(0)
    for fam in ("listed-file", "py-listed-file"):
        kinds = set()
        for _ in range(40):
            inst = FAMILIES[fam].make(rng)
            real = [f for f in inst.files if f in inst.reference and f not in inst.broken]
            assert len(real) == 1, inst
            guessed_stem = real[0].split(".")[0].split("_")[0]
            kinds.add("suffix" if "_" in real[0] else "extension")
            assert f"{guessed_stem}." in inst.broken
        assert kinds == {"suffix", "extension"}, fam


def test_mkdir_exists_demonstrates_the_flag_mkdir_outcome_needs():
    """mkdir-exists answers mkdir's own error by adding -p (and changes nothing else on the line); the
    outcome-only mkdir-outcome, which has no demonstrations, is solved by that same flag."""
    rng = random.Random(0)
    for _ in range(30):
        inst = FAMILIES["mkdir-exists"].make(rng)
        mk, rest = inst.broken.split(" && ", 1)
        d = mk.split()[-1]
        assert any(f.startswith(d + "/") for f in inst.files)  # the directory is already there
        assert inst.reference == f"mkdir -p{'v' if ' -v ' in mk else ''} {d} && {rest}"
        assert FAMILIES["mkdir-outcome"].make(rng).solution.startswith("mkdir -p")


def test_splits_are_disjoint_and_stable(train, heldout):
    assert all(t.split == "heldout" for t in heldout)
    assert not {t.id for t in train} & {t.id for t in heldout}
    # disjoint at the level of the problem, not only the instance: no broken command is in both
    assert not {(t.family, t.broken) for t in train} & {(t.family, t.broken) for t in heldout}
    # the split is a pure function of the instance (sha256), so it is the same on every machine
    inst = Instance(broken="sotr names.txt", files={"names.txt": "b\na\n"}, reference="sort names.txt")
    assert task_id("cmd-typo", inst) == "cmd-typo-bcd0d8e135"
    assert split_of("cmd-typo", inst) == "train"
    assert split_of("cmd-typo", Instance(broken="srot names.txt", reference="sort names.txt")) == "heldout"


def test_same_seed_same_bytes(sandbox, tmp_path):
    fams = ["cmd-typo", "mkdir-outcome", "py-name", "py-wrong-file"]
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    save_tasks(generate(8, "train", seed=5, families=fams, sandbox=sandbox), a)
    save_tasks(generate(8, "train", seed=5, families=fams, sandbox=sandbox), b)
    save_tasks(generate(8, "train", seed=6, families=fams, sandbox=sandbox), c)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    # a family's tasks do not depend on which other families were asked for
    alone = generate(2, "train", seed=5, families=["py-name"], sandbox=sandbox)
    assert [t.to_json() for t in alone] == [t.to_json() for t in load_tasks(a) if t.family == "py-name"]
    # more of one family: its stream goes on, and the balanced share is its first tasks
    extra = generate(8, "train", seed=5, families=fams, sandbox=sandbox, more={"py-name": 2})
    names = [t.id for t in extra if t.family == "py-name"]
    assert len(extra) == 10 and len(names) == 4 and names[:2] == [t.id for t in alone]


def test_generate_rejects_bad_arguments(sandbox):
    with pytest.raises(IclawError, match="--family: unknown family 'nope'"):
        generate(2, families=["nope"], sandbox=sandbox)
    with pytest.raises(IclawError, match="--split"):
        generate(2, split="test", sandbox=sandbox)
    with pytest.raises(IclawError, match="more tasks asked of py-name, not among"):
        generate(2, families=["cmd-typo"], sandbox=sandbox, more={"py-name": 1})


# ----------------------------------------------------------------------------------------------------- CLI


def test_cli_gen_list_show(tmp_path):
    out = tmp_path / "t.jsonl"
    r = run_iclaw(
        "tasks",
        "gen",
        "--family",
        "quote",
        "--family",
        "py-indent",
        "--n",
        "4",
        "--seed",
        "1",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    tasks = load_tasks(out)
    assert sorted(t.family for t in tasks) == ["py-indent", "py-indent", "quote", "quote"]
    r = run_iclaw("tasks", "list", "--tasks", str(out))
    assert r.returncode == 0 and "mkdir-outcome" in r.stdout and "py-indent" in r.stdout
    r = run_iclaw("tasks", "show", tasks[0].id, "--tasks", str(out))
    assert r.returncode == 0 and tasks[0].id in r.stdout and "broken" in r.stdout
    r = run_iclaw("tasks", "show", "no-such-id", "--tasks", str(out))
    assert r.returncode == 2 and "no task with id" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "kind": "bash", "broken": "x", "reference": "y", "files": {"/x": ""}}\n')
    r = run_iclaw("tasks", "check", str(bad))
    assert r.returncode == 2 and f"{bad}:1:" in r.stderr and "Traceback" not in r.stderr

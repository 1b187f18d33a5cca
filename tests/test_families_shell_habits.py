"""The twelve shell-habit families (spaced names, quoting, redirection, pipes, option values, case, subdirs,
cd typos, missing target dirs, globs, && typos, in-place sort): on seeded draws, the broken command holds
the mistake the family is named for and the fix is the one the request determines. One small sandboxed
generate() checks that each really fails and is really fixed."""

from __future__ import annotations

import re

import pytest
from helpers import draws

from iclaw.tasks import FAMILIES, generate
from iclaw.tools.sandbox import Limits, Sandbox

MINE = [
    "spaced-name",
    "quote-special",
    "redirect",
    "pipe-last",
    "option-value",
    "name-case",
    "in-subdir",
    "cd-typo",
    "copy-missing-dir",
    "glob-quote",
    "and-typo",
    "sort-in-place",
]


def test_kinds_and_flags():
    fams = [FAMILIES[n] for n in MINE]
    assert all(f.kind == "bash" and f.description and f.source for f in fams)
    assert {f.name for f in fams if f.multi_turn} == {"name-case", "in-subdir", "cd-typo"}
    assert {f.name for f in fams if f.outcome_only} == {"redirect", "copy-missing-dir", "sort-in-place"}
    for f in fams:
        for inst in draws(f.name, 5):
            assert (inst.test is not None) == f.outcome_only and len(inst.broken) < 200


def test_spaced_name_quotes_the_name_the_shell_split():
    for inst in draws("spaced-name"):
        spaced = {p.split("/")[0] for p in inst.files if " " in p}
        assert len(spaced) == 1 and spaced.pop() in inst.broken
        assert inst.reference.replace('"', "") == inst.broken


def test_quote_special_only_changes_the_quotes():
    for inst in draws("quote-special"):
        assert inst.broken != inst.reference
        assert re.sub("['\"]", "", inst.broken) == re.sub("['\"]", "", inst.reference)
        if inst.broken.startswith("awk"):
            assert '"' in inst.broken and "$" in inst.broken and "'" in inst.reference
        elif "&" in inst.broken:  # as grep: a background echo's output raced the sandbox's teardown
            phrase = inst.reference.split('"')[1]
            assert inst.broken.startswith("grep ") and any(phrase in text for text in inst.files.values())
        else:
            assert "'" in inst.broken or "(" in inst.broken or ")" in inst.broken


def test_redirect_and_sort_in_place_tests_hold_the_expected_lines():
    for inst in draws("redirect"):
        assert re.search(r">> ?>|> >| < |^tr ", inst.broken), inst.broken
        assert "cmp -s -" in inst.test and "> >" not in inst.solution
    for inst in draws("sort-in-place"):
        name = inst.solution.split()[-1]
        assert inst.solution.endswith(f"-o {name} {name}") and name in inst.files
        assert "-o" in inst.broken.split() or "--output" in inst.broken or "--in-place" in inst.broken


def test_pipe_last_inserts_a_pipe_or_xargs():
    for inst in draws("pipe-last"):
        fixed = inst.reference
        assert fixed.replace("| xargs ", "| ") == inst.broken or fixed.replace(" | ", " ", 1) == inst.broken


def test_option_value_swaps_the_value_and_the_file():
    for inst in draws("option-value"):
        *head, fname, value = inst.broken.split()
        assert fname in inst.files and inst.reference == " ".join(head + [value, fname])


def test_look_first_families_hide_the_name():
    for inst in draws("name-case"):
        typed = inst.broken.split()[-1]
        assert typed not in inst.files and [f for f in inst.files if f.lower() == typed.lower()] != []
    for inst in draws("in-subdir"):
        name = inst.broken.split()[-1]
        assert name not in inst.files and sum(p.endswith("/" + name) for p in inst.files) == 1
        assert len({p.split("/")[0] for p in inst.files if "/" in p}) == 1  # one directory: ls points at it
    for inst in draws("cd-typo"):
        wrong, real = inst.broken.split()[1], inst.reference.split()[1]
        dirs = {p.split("/")[0] for p in inst.files if "/" in p}
        assert wrong not in dirs and real in dirs and len(dirs) >= 2


def test_copy_missing_dir_makes_the_directory_first():
    for inst in draws("copy-missing-dir"):
        target = inst.broken.split()[-1]
        d = target.rstrip("/") if target.endswith("/") else target.rsplit("/", 1)[0]
        assert not any(p.startswith(d + "/") for p in inst.files)
        assert inst.solution == f"mkdir -p {d} && {inst.broken}"


def test_glob_quote_and_and_typo_fix_one_token():
    for inst in draws("glob-quote"):
        if inst.broken.startswith("find"):
            pattern = inst.broken.split()[3]
            assert f"'{pattern}'" in inst.reference or f'"{pattern}"' in inst.reference
            assert sum(f.endswith(pattern.split("*")[1]) and "/" not in f for f in inst.files) >= 2
        else:
            assert "*" in inst.reference and inst.reference.replace(", ", ",") == inst.reference
            assert inst.broken.replace('"', "").replace("'", "").replace(", ", ",") == inst.reference
    for inst in draws("and-typo"):
        assert re.search(r"& &|&& &&|&&&|& &&|\|\| \|\||\|\|\|\||; ;|;;;", inst.broken)
        assert not re.search(r"& &|&&&|\|\|\|\||; ;|;;", inst.reference)


def test_each_family_generates_checked_tasks():
    ts = generate(2 * len(MINE), "train", seed=1, families=MINE, sandbox=Sandbox(Limits(timeout_s=5.0)))
    assert sorted({t.family for t in ts}) == sorted(MINE)
    assert all(t.broken_exit not in (None, 0) and t.error for t in ts)


@pytest.mark.parametrize("name", MINE)
def test_variety(name):
    assert len({i.broken for i in draws(name, 200)}) >= 150

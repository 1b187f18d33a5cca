"""Shell families of issue 25 (cmd-typo's larger pool and the families next to it): on a few seeded draws each,
the mistake is the one the family means and the request determines the fix. Only make() runs here (no
sandbox): the generator's own checks (broken fails, the fix passes) are tested in test_tasks.py."""

from __future__ import annotations

import re

import helpers
import pytest

from iclaw.tasks import FAMILIES
from iclaw.tasks.families import cmd_typo, long_option


def draws(name: str, n: int = 40) -> list:
    return helpers.draws(name, n, seed=f"test:{name}")


def named(dirs: set[str], line: str) -> set[str]:
    """The directories of `dirs` that `line` names (as a word, or as the first part of a path)."""
    return {d for d in dirs if re.search(rf"(^| ){re.escape(d)}(/| |$)", line)}


def dirs_of(files: dict[str, str]) -> set[str]:
    return {p.rsplit("/", k)[0] for p in files for k in range(1, p.count("/") + 1)}


def test_cmd_typo_draws_from_a_large_pool_and_only_the_command_differs():
    assert len({c for c, *_ in cmd_typo.COMMANDS}) >= 60
    for inst in draws("cmd-typo", 200):
        b, r = inst.broken.split(" "), inst.reference.split(" ")
        diff = [(x, y) for x, y in zip(b, r) if x != y]
        assert len(b) == len(r) and len(diff) == 1, inst
        assert diff[0][1] in {c for c, *_ in cmd_typo.COMMANDS} and diff[0][0] not in cmd_typo.TAKEN
    assert len({i.reference.split()[0] for i in draws("cmd-typo", 300)}) >= 40  # not 12 commands any more


def test_flag_typo_and_one_dash_long_options():
    assert sum(len(v) for v in long_option.OPTIONS.values()) >= 70
    for inst in draws("flag-typo"):
        bad, good = (re.search(r"--([a-z-]+)", s).group(1) for s in (inst.broken, inst.reference))
        assert bad != good and not good.startswith(bad), inst  # never an accepted prefix
    for inst in draws("long-opt-dash"):
        word = re.search(r" --([a-z-]+)", inst.reference).group(1)
        assert (
            f" -{word}" in inst.broken and inst.broken.replace(f" -{word}", f" --{word}", 1) == inst.reference
        )
        assert (inst.reference.split()[0], word) not in long_option.SKIP


def test_bsd_habit_reference_is_the_gnu_spelling():
    for inst in draws("bsd-habit"):
        first = inst.broken.split()[0]
        habit = first in "tail base64 md5 sha1 sha256 sha512 sed find cut ditto".split()
        assert habit or (first.startswith("g") and inst.reference.startswith(first[1:])), inst
        assert inst.broken != inst.reference


@pytest.mark.parametrize("name", ["dir-needs-r", "cp-dir-outcome"])
def test_directory_commands_name_a_real_directory_and_add_r(name):
    for inst in draws(name):
        target = inst.broken.split()[-1] if inst.broken.startswith("grep") else inst.broken.split()[-2]
        if inst.broken.startswith(("rm", "cp")) and "&&" in inst.broken:
            target = inst.broken.split(" && ")[0].split()[1]
        assert target.rstrip("/") in dirs_of(inst.files), inst
        assert re.search(r" -[a-zA-Z]*[rRa]", inst.reference or inst.solution), inst


@pytest.mark.parametrize("name", ["ln-exists", "ln-outcome"])
def test_ln_lands_on_an_existing_file_and_the_fix_forces_it(name):
    for inst in draws(name):
        link = inst.broken.split(" && ")[0].split()[-1]
        assert link in inst.files and re.search(r" -[sv]*f", inst.reference or inst.solution), inst
        if inst.test:
            assert link in inst.test and ("readlink" in inst.test or "-ef" in inst.test)


def test_wrong_path_kind_cat_lists_a_directory_and_cd_goes_to_the_file_dir():
    for inst in draws("wrong-path-kind"):
        if inst.broken.startswith("cd "):
            path = inst.broken.split()[1]
            assert path in inst.files and inst.reference.startswith(f"cd {path.rsplit('/', 1)[0]} &&")
        else:
            assert inst.broken.split()[-1].rstrip("/") in dirs_of(inst.files)
            assert inst.reference.startswith("ls")


def test_missing_space_fix_only_inserts_a_space():
    for inst in draws("missing-space"):
        r, b = inst.reference, inst.broken
        assert len(r) == len(b) + 1 and any(r[:i] + r[i + 1 :] == b for i in range(len(r)) if r[i] == " ")


def test_run_script_names_the_interpreter_of_an_existing_script():
    for inst in draws("run-script"):
        script = inst.broken.split()[0].removeprefix("./")
        assert script in inst.files
        want = "python3" if script.endswith(".py") else ("bash", "chmod")
        assert inst.reference.startswith(want) and script in inst.reference


def test_grep_order_swaps_pattern_and_file():
    for inst in draws("grep-order"):
        b, r = inst.broken.split(), inst.reference.split()
        assert b[-2] in inst.files and r[-1] == b[-2] and r[-2] == b[-1] and b[:-2] == r[:-2]


def test_sed_unterminated_fix_appends_the_delimiter():
    for inst in draws("sed-unterminated"):
        script = re.search(r"""['"]([^'"]*)['"]""", inst.reference).group(1).split(";")[-1]
        delim = script[1]
        assert script.count(delim) == 3 and inst.reference.replace(script, script[:-1], 1) == inst.broken


def test_look_first_families_hide_the_real_name():
    for inst in draws("case-name"):
        real = [f for f in inst.files if f in inst.reference.split()]
        assert len(real) == 1 and real[0].lower() in inst.broken.split() and real[0] not in inst.broken
    for inst in draws("cd-wrong-dir"):
        top = {p.split("/")[0] for p in inst.files if "/" in p}

        assert len(named(top, inst.reference)) == 1 and not named(top, inst.broken), inst
    assert FAMILIES["case-name"].multi_turn and FAMILIES["cd-wrong-dir"].multi_turn

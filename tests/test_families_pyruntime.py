"""The Python runtime-error families (py-py2, py-undefined, py-method, py-type-call, py-key, py-index,
py-import, py-value, py-csv-header, py-delimiter, py-write-outcome, py-makedirs-outcome): on a few seeded
draws, the broken program fails with the family's exception, the error names what the fix changes, and the
fix works. Plain subprocesses in a temp dir (no sandbox): cheap."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from iclaw.tasks import FAMILIES
from iclaw.tasks.task import write_fixture

EXPECT = {  # family -> the exceptions its broken programs may raise
    "py-py2": ("NameError", "AttributeError", "TypeError"),
    "py-undefined": ("NameError",),
    "py-method": ("AttributeError",),
    "py-type-call": ("TypeError",),
    "py-key": ("KeyError",),
    "py-index": ("IndexError",),
    "py-import": ("ModuleNotFoundError", "ImportError"),
    "py-value": ("ValueError",),
    "py-csv-header": ("KeyError",),
    "py-delimiter": ("ValueError", "IndexError"),
    "py-write-outcome": ("UnsupportedOperation", "ValueError", "TypeError"),
    "py-makedirs-outcome": ("FileNotFoundError", "FileExistsError"),
}
SEEDS = range(3)


def _run(tmp_path, files: dict[str, str], code: str, test: str | None = None) -> tuple[int, str, int | None]:
    """Run `code` as a program in a fresh fixture dir `tmp_path` (its file lies outside), then `test`."""
    tmp_path.mkdir()
    write_fixture(files, tmp_path)
    (tmp_path.parent / f"{tmp_path.name}.py").write_text(code)
    argv = [sys.executable, f"../{tmp_path.name}.py"]
    p = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=10)
    t = None
    if test is not None:
        t = subprocess.run(["bash", "-c", test], cwd=tmp_path, capture_output=True).returncode
    return p.returncode, p.stdout + p.stderr, t


@pytest.mark.parametrize("family", sorted(EXPECT))
@pytest.mark.parametrize("seed", SEEDS)
def test_broken_fails_the_right_way_and_the_fix_passes(tmp_path, family, seed):
    fam = FAMILIES[family]
    inst = fam.make(random.Random(seed))
    rc, err, test_rc = _run(tmp_path / "b", inst.files, inst.broken, inst.test)
    last = err.strip().splitlines()[-1]
    assert rc != 0 and any(e in last for e in EXPECT[family]), (inst.broken, err)
    fix = inst.reference or inst.solution
    rc2, out2, test_rc2 = _run(tmp_path / "f", inst.files, fix, inst.test)
    assert rc2 == 0, (fix, out2)
    if fam.outcome_only:
        assert test_rc != 0 and test_rc2 == 0 and inst.reference is None
        _, _, nothing = _run(tmp_path / "n", inst.files, "pass", inst.test)
        assert nothing != 0
    else:
        assert out2.strip()
    assert fam.multi_turn == (family in ("py-csv-header", "py-delimiter"))


@pytest.mark.parametrize("seed", range(12))
def test_the_name_in_the_error_is_what_the_fix_changes(tmp_path, seed):
    """py-method / py-import / py-undefined: the name the error quotes is what the fix replaces, or (a name
    that was missing) what the fix defines."""
    for i, family in enumerate(("py-method", "py-import", "py-undefined")):
        inst = FAMILIES[family].make(random.Random(seed))
        _, err, _ = _run(tmp_path / str(i), inst.files, inst.broken)
        name = re.findall(r"(?:attribute|module named|import name|name|variable) '([^']+)'", err)[-1]
        if family == "py-method":
            assert f".{name}" in inst.broken and f".{name}" not in inst.reference, (inst.broken, err)
        elif family == "py-import":  # the import line holds the bad name once more than the fixed one
            first, fixed = (
                re.findall(r"[\w.]+", code.split("\n")[0]) for code in (inst.broken, inst.reference)
            )
            assert first.count(name) > fixed.count(name), (inst.broken, err)
        else:
            defined = (f"{name} =", f"def {name}", f"import {name}", f"global {name}", f'"{name}"')
            assert name in inst.broken, (inst.broken, err)
            assert any(d in inst.reference for d in defined) or name not in inst.reference, (inst.broken, err)


def test_key_typos_copy_the_key_from_the_literal():
    rng, checked = random.Random(4), 0
    for _ in range(60):
        inst = FAMILIES["py-key"].make(rng)
        lit, body = inst.broken.split("\n", 1)
        if lit.endswith("{}"):
            continue  # the counter / grouping shapes
        keys = set(re.findall(r'"([^"]+)":', lit))
        strings = lambda code: set(re.findall(r'"([^"]+)"', code.split("\n", 1)[1]))  # noqa: E731
        wrong, right = (
            strings(inst.broken) - strings(inst.reference),
            strings(inst.reference) - strings(inst.broken),
        )
        assert len(wrong) == len(right) == 1 and not wrong & keys and right <= keys, inst.broken
        checked += 1
    assert checked > 20


def test_look_first_families_hide_the_fix_in_the_fixture():
    """The header / separator the fix uses is in the data file and not in the request (broken + error)."""
    for seed in range(20):
        inst = FAMILIES["py-csv-header"].make(random.Random(seed))
        csv_name = re.search(r'open\("([^"]+)"\)', inst.broken).group(1)
        header = inst.files[csv_name].split("\n")[0].split(",")
        used = re.findall(r'r(?:ow)?\["([^"]+)"\]', inst.broken)
        fixed = re.findall(r'r(?:ow)?\["([^"]+)"\]', inst.reference)
        assert any(u not in header for u in used) and all(f in header for f in fixed)
        inst = FAMILIES["py-delimiter"].make(random.Random(seed))
        data = inst.files[re.search(r'open\("([^"]+)"\)', inst.broken).group(1)]
        sep = lambda code: re.search(r'split\("([^"]*)"\)', code).group(1).replace("\\t", "\t")  # noqa: E731
        assert sep(inst.reference) in data and sep(inst.broken) not in data

"""The Python syntax / file / JSON families (issue 25): on seeded draws, each broken program makes the mistake
its family names -- the error it raises is the family's -- and the fix changes what that error points at.
In-process (compile, or exec in a fresh directory), no sandbox; the outcome-only tests run their shell test."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import helpers
import pytest

from iclaw.tasks import FAMILIES
from iclaw.tasks.task import write_fixture


def draws(name: str, n: int = 12) -> list:
    return helpers.draws(name, n, seed=0)


def changed_lines(a: str, b: str) -> list[tuple[str, str]]:
    la, lb = a.splitlines(), b.splitlines()
    assert len(la) == len(lb)
    return [(x, y) for x, y in zip(la, lb) if x != y]


def run(code: str, files: dict[str, str], d: Path, monkeypatch) -> tuple[str, BaseException | None]:
    """exec `code` as main.py in a fresh copy of the fixture; (stdout, the exception it raised)."""
    d.mkdir()
    write_fixture(files, d)
    monkeypatch.chdir(d)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, "main.py", "exec"), {"__name__": "__main__"})
        except Exception as e:
            return out.getvalue(), e
    return out.getvalue(), None


SYNTAX = {  # family -> what the SyntaxError says
    "py-if-syntax": ("Maybe you meant '=='", "expected ':'", "invalid syntax"),
    "py-literal": ("forgot a comma", "was never closed"),
    "py-quote": ("unterminated string literal", "f-string: unmatched '['"),
    "py-dedent": ("unindent does not match", "inconsistent use of tabs and spaces"),
}


@pytest.mark.parametrize("family", sorted(SYNTAX))
def test_syntax_families_fail_to_compile_in_one_line(family):
    for inst in draws(family, 30):
        if "f-string" in str(inst.broken) and sys.version_info >= (3, 12):
            continue  # PEP 701: Python 3.12 accepts the same quotes nested (the generator drops those)
        with pytest.raises(SyntaxError) as err:
            compile(inst.broken, "main.py", "exec")
        assert any(m in err.value.msg for m in SYNTAX[family]), (inst.broken, err.value.msg)
        compile(inst.reference, "main.py", "exec")
        [(bad, good)] = changed_lines(inst.broken, inst.reference)  # one line is the whole fix
        if family == "py-if-syntax":
            assert (" = " in bad and " == " in good) or ("el" in bad.split()[0] and good.startswith("elif "))
        elif family == "py-dedent":
            assert bad.strip() == good.strip() and isinstance(err.value, IndentationError)
        elif family == "py-literal":  # a comma or the closing bracket dropped, nothing else
            assert good.startswith(bad) or any(
                good[:j] + good[j + 1 :] == bad for j in range(len(good)) if good[j] == ","
            )


@pytest.mark.parametrize(
    "family, errors",
    [
        ("py-file-mode", ("not writable", "not readable", "bytes-like object")),
        ("py-json-api", ("JSON object must be str", "no attribute 'read'", "not JSON serializable")),
    ],
)
def test_runtime_families_raise_their_error_and_the_fix_prints(family, errors, tmp_path, monkeypatch):
    for i, inst in enumerate(draws(family)):
        _, exc = run(inst.broken, inst.files, tmp_path / f"b{i}", monkeypatch)
        assert exc is not None and any(m in str(exc) for m in errors), (inst.broken, exc)
        out, exc = run(inst.reference, inst.files, tmp_path / f"r{i}", monkeypatch)
        assert exc is None and out.strip(), (inst.reference, exc)
        for bad, good in changed_lines(inst.broken, inst.reference):  # only the call with the mistake
            assert ("open(" in bad and "open(" in good) or "json." in bad, (bad, good)


def _opened(code: str) -> str:
    return re.search(r'open\("([^"]+)"\)', code).group(1)


def test_look_first_names_differ_only_in_case_or_separator():
    for family, norm in [("py-file-case", str.lower), ("py-file-sep", lambda s: re.sub(r"[-_ .]", "", s))]:
        assert FAMILIES[family].multi_turn
        for inst in draws(family, 30):
            guessed, real = _opened(inst.broken), _opened(inst.reference)
            assert guessed not in inst.files and real in inst.files and guessed != real
            assert norm(guessed) == norm(real)
            assert [f for f in inst.files if norm(f) == norm(real)] == [real]  # one listing entry fits


@pytest.mark.parametrize("family", ["py-json-write", "py-json-repair"])
def test_outcome_only_json_families(family, tmp_path, monkeypatch):
    assert FAMILIES[family].outcome_only
    for i, inst in enumerate(draws(family, 4)):
        assert inst.reference is None and inst.test.startswith("python3 -c 'import json;")
        _, exc = run(inst.broken, inst.files, tmp_path / f"b{i}", monkeypatch)
        assert exc is not None
        if family == "py-json-repair":
            assert type(exc).__name__ == "JSONDecodeError"
        noop = tmp_path / f"n{i}"  # doing nothing leaves the test failing
        noop.mkdir()
        write_fixture(inst.files, noop)
        assert subprocess.run(["bash", "-c", inst.test], cwd=noop, capture_output=True).returncode != 0
        _, exc = run(inst.solution, inst.files, tmp_path / f"s{i}", monkeypatch)
        assert exc is None, exc
        assert subprocess.run(["bash", "-c", inst.test], cwd=tmp_path / f"s{i}").returncode == 0

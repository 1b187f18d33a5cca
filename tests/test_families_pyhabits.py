"""The Python habit families (py-except, py-c-habit, py-keyword-name, py-docstring, py-none-result): on seeded
draws the broken program fails with the family's error, at (or, for an in-place method's None, just after)
the line the fix changes, and the fix runs and prints. Plain subprocesses (no sandbox): cheap."""

from __future__ import annotations

import difflib
import random
import re
import subprocess
import sys

import pytest

from iclaw.tasks import FAMILIES

EXPECT = {  # family -> the exceptions its broken programs may raise
    "py-except": ("SyntaxError",),
    "py-c-habit": ("SyntaxError", "NameError"),
    "py-keyword-name": ("SyntaxError",),
    "py-docstring": ("SyntaxError",),
    "py-none-result": ("TypeError", "AttributeError"),
}


def _run(code: str) -> tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    return p.returncode, p.stdout, p.stderr


def _changed(broken: str, fixed: str) -> list[int]:
    """1-based numbers of the broken program's lines the fix replaces."""
    sm = difflib.SequenceMatcher(a=broken.splitlines(), b=fixed.splitlines(), autojunk=False)
    return [i + 1 for tag, a0, a1, _, _ in sm.get_opcodes() if tag != "equal" for i in range(a0, a1)]


@pytest.mark.parametrize("family", sorted(EXPECT))
def test_the_error_points_at_what_the_fix_changes(family):
    rng = random.Random(f"habits:{family}")
    for _ in range(12):
        inst = FAMILIES[family].make(rng)
        rc, _, err = _run(inst.broken)
        assert rc != 0 and any(e in err.strip().splitlines()[-1] for e in EXPECT[family]), (inst.broken, err)
        rc2, out2, err2 = _run(inst.reference)
        assert rc2 == 0 and out2.strip(), (inst.reference, err2)
        changed = _changed(inst.broken, inst.reference)
        assert changed and len(inst.reference.splitlines()) <= 12, inst.broken
        line = int(re.findall(r'File "<string>", line (\d+)', err)[-1])
        if family == "py-none-result":  # the value is used after the line that threw it away
            assert max(changed) <= line, (inst.broken, err)
        elif family == "py-keyword-name":  # the first use of the keyword is where Python stops
            assert line == min(changed), (inst.broken, err)
        else:
            assert line in changed, (inst.broken, err)


def test_the_fixes_are_the_standard_rewrites():
    rng = random.Random(0)
    seen = set()
    for _ in range(60):
        inst = FAMILIES["py-except"].make(rng)
        (old,), (new,) = (
            [ln for ln in a.splitlines() if ln not in b.splitlines()]
            for a, b in ((inst.broken, inst.reference), (inst.reference, inst.broken))
        )
        if "except" in old:
            m = re.fullmatch(r"(\s*)except (\w+), (\w+):", old)
            assert m and new in (f"{m[1]}except {m[2]} as {m[3]}:", f"{m[1]}except ({m[2]}, {m[3]}):"), old
            seen.add("as" if " as " in new else "tuple")
        else:
            assert re.fullmatch(r'\s*raise (\w+), (".*")', old) and re.fullmatch(r'\s*raise \w+\(".*"\)', new)
            seen.add("raise")
    assert seen == {"as", "tuple", "raise"}
    for _ in range(30):  # a keyword name becomes the keyword plus "_" everywhere, nothing else changes
        inst = FAMILIES["py-keyword-name"].make(rng)
        kw = re.search(r"(\w+)_\b", inst.reference)[1]
        assert inst.reference.replace(kw + "_", kw) == inst.broken

"""Python's errors read as edits (iclaw/tools/py_hints.py): each program below fails in the real sandbox, and one
of the edits its hints propose makes it print what the fixed program prints. The programs are written for this
test (names and data of their own), not taken from benchmarks/outside.jsonl."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclaw.tools import hints as H
from iclaw.tools import py_hints as P
from iclaw.tools.sandbox import Sandbox

CASES = [
    # (program, files, what the fixed program prints)
    ("for k in range(2)\n    print(k)\n", {}, "0\n1\n"),
    ("def hello:\n    return 'hi'\nprint(hello())\n", {}, "hi\n"),
    ("colors = [\n    'red',\n    'teal',\n\nprint(len(colors))\n", {}, "2\n"),
    ("tag = 'v2'\nprint 'release', tag\n", {}, "release v2\n"),
    ("width = 7\nprint('width' width)\n", {}, "width 7\n"),
    ("try:\n    {}['x']\nexcept KeyError, err:\n    print('missing', err)\n", {}, "missing 'x'\n"),
    ("hits = 4\nhits++\nprint(hits)\n", {}, "5\n"),
    ("def f():\n    '''Say it.\n    return 3\n\nprint(f())\n", {}, "3\n"),
    ("def g(a):\n\tb = a * 2\n        return b\nprint(g(4))\n", {}, "8\n"),
    ("lambda = 0.5\nprint(lambda * 2)\n", {}, "1.0\n"),
    ("print(math.floor(2.7))\n", {}, "2\n"),
    ("seen = 0\ndef bump():\n    seen += 1\n    return seen\nprint(bump())\n", {}, "1\n"),
    ("import pprint\npprint({'a': 1})\n", {}, "{'a': 1}\n"),
    ("import email\nprint(email.utils.quote('a\"b'))\n", {}, 'a\\"b\n'),
    ("from collections import Sequence\nprint(isinstance([], Sequence))\n", {}, "True\n"),
    ("label = 'ok'\nprint(label.title + '!')\n", {}, "Ok!\n"),
    ("xs = [3, 1, 2]\nys = xs.sort()\nprint(ys[0])\n", {}, "1\n"),
    ("def squares(k):\n    out = [i * i for i in range(k)]\nprint(len(squares(3)))\n", {}, "3\n"),
    ("n = 3\nprint('n is ' + n)\n", {}, "n is 3\n"),
    ("ages = [30, 41]\nprint('-'.join(ages))\n", {}, "30-41\n"),
    ("k = '2'\nfor i in range(k):\n    print(i)\n", {}, "0\n1\n"),
    ("evens = filter(lambda v: v % 2 == 0, [1, 2, 4])\nprint(evens[1])\n", {}, "4\n"),
    ("stock = {'a': 1, 'b': 2}\nfor name, n in stock:\n    print(name, n)\n", {}, "a 1\nb 2\n"),
    (
        "left = {'x': 0, 'y': 3}\nfor k in left:\n    if left[k] == 0:\n        del left[k]\nprint(left)\n",
        {},
        "{'y': 3}\n",
    ),
    ("class Bag:\n    def size(self):\n        return 2\nb = Bag\nprint(b.size())\n", {}, "2\n"),
    ("import re\nm = re.match(r'\\d+', 'room 12')\nprint(m.group())\n", {}, "12\n"),
    ("s = 'cat'\ns[0] = 'b'\nprint(s)\n", {}, "bat\n"),
    ("a, b = '1,2,3'.split(',')\nprint(a, b)\n", {}, "1 2\n"),
    ("t = '4\\n5\\n'\nprint(sum(int(x) for x in t.split('\\n')))\n", {}, "9\n"),
    (
        "from datetime import datetime\nprint(datetime.strptime('2025-01-02 08:15', '%Y-%m-%d').hour)\n",
        {},
        "8\n",
    ),
    (
        "import json\nu = json.load(open('user.json'))\nprint(u['firstName'])\n",
        {"user.json": '{"first_name": "Lin"}'},
        "Lin\n",
    ),
    (
        "import json\nc = json.load(open('app.json'))\nprint(c['server']['port'])\n",
        {"app.json": '{"srv": {"port": 80}}'},
        "80\n",
    ),
    ("counts = {}\nfor w in 'a b a'.split():\n    counts[w] += 1\nprint(counts)\n", {}, "{'a': 2, 'b': 1}\n"),
    (
        "import csv\nfor r in csv.DictReader(open('t.csv')):\n    print(r['qty'])\n",
        {"t.csv": "name, qty\npen, 2\n"},
        "2\n",
    ),
    ("import json\nrows = json.loads('[{\"id\": 5}]')\nprint(rows['id'])\n", {}, "5\n"),
    (
        "import json, datetime\nprint(json.dumps({'d': datetime.date(2025, 5, 4)}))\n",
        {},
        '{"d": "2025-05-04"}\n',
    ),
    ("with open('out/a.txt', 'w') as f:\n    f.write('x')\nprint(open('out/a.txt').read())\n", {}, "x\n"),
    ("print(open('data').read())\n", {"data/only.txt": "inside\n"}, "inside\n\n"),
    (
        "with open('n.txt') as f:\n    first = f.readline()\nrest = f.read()\nprint(rest)\n",
        {"n.txt": "a\nb\n"},
        "b\n\n",
    ),
    ("@timed\ndef work():\n    return 1\n\n\ndef timed(fn):\n    return fn\n\n\nprint(work())\n", {}, "1\n"),
    ("x = 2\nif x > 3:\n    print('big')\nelse if x > 1:\n    print('mid')\n", {}, "mid\n"),
    ("todo = []\ntodo.push('wash')\nprint(todo)\n", {}, "['wash']\n"),
    ("title = 'Dune'\nprint(title.length)\n", {}, "4\n"),
    (
        "from helper import twice\nprint(twice(4))\n",
        {"helpers.py": "def twice(n):\n    return 2 * n\n"},
        "8\n",
    ),
    (
        "for row in open('temps.txt'):\n    if row.strip() > 20:\n        print(row.strip())\n",
        {"temps.txt": "18\n25\n"},
        "25\n",
    ),
    ("xs = [5, 6, 7, 8]\nprint(xs[len(xs) / 2])\n", {}, "7\n"),
    ("laps = [61, 58]\nprint(laps[len(laps)])\n", {}, "58\n"),
    ("print(sum(int(v) for v in open('nums.txt')))\n", {"in/nums.txt": "3\n4\n"}, "7\n"),
    (
        "import csv\nwith open('b.csv') as f:\n    rows = csv.reader(f)\n    print(sum(float(r[1]) for r in rows))\n",
        {"b.csv": "item,cost\ntea,2.5\n"},
        "2.5\n",
    ),
    ("class Box:\n    def __int__(self, w):\n        self.w = w\nprint(Box(3).w)\n", {}, "3\n"),
    ("class Dog:\n    def speak():\n        return 'woof'\nprint(Dog().speak())\n", {}, "woof\n"),
    ("days = ['mon', 'tue']\nfor i in len(days):\n    print(days[i])\n", {}, "mon\ntue\n"),
]


@pytest.mark.parametrize("code,files,want", CASES, ids=[c[0].split("\n")[0][:30] for c in CASES])
def test_the_edit_that_python_names_fixes_it(tmp_path: Path, code: str, files: dict, want: str):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    sb = Sandbox()
    r = sb.run("python", code, tmp_path)
    assert r.exit_code != 0, r
    hints = H.find_hints("python", code, r.stdout, r.stderr, r.exit_code, tmp_path)
    cands = [c for h in hints if h.what == "edit" for c in H.substitute("python", code, h)]
    outs = [sb.run("python", c, tmp_path) for c in cands]
    assert any(o.exit_code == 0 and o.stdout == want for o in outs), (r.stderr, hints)
    assert "\n" not in H.render(hints)


def test_the_edits_the_weights_saw_are_shown_the_rest_searched(tmp_path: Path):
    """The edits the shipped weights were measured with (`expected ':'`, ...) go into the observation's hint
    line; the others are candidates for the search only while hints.SEARCH_ONLY holds."""
    sb = Sandbox()
    cases = [("if 1 > 0\n    print(1)\n", True), ("n = 2\nprint('n=' + n)\n", False), ("n = 1\nn++\n", False)]
    for code, shown in cases:
        r = sb.run("python", code, tmp_path)
        hints = H.find_hints("python", code, r.stdout, r.stderr, r.exit_code, tmp_path)
        assert [h.shown for h in hints if h.what == "edit"] == [shown or not H.SEARCH_ONLY]
        assert ("line " in H.render(hints)) == (shown or not H.SEARCH_ONLY)


def test_edits_on_what_is_not_a_traceback():
    assert P.edits("print(1)\n", "") == []
    assert (
        P.edits("x\n", "Traceback (most recent call last):\n  File \"main.py\", line 9\nNameError: name 'x'")
        == []
    )
    assert P.edits(
        "x = {\n" * 2000, "  File \"main.py\", line 1\nSyntaxError: '{' was never closed"
    )  # capped
    assert (
        len(P.edits("x = {\n" * 2000, "  File \"main.py\", line 1\nSyntaxError: '{' was never closed"))
        <= P.MAX_EDITS
    )


def test_a_script_the_command_ran_is_edited_by_sed(tmp_path: Path, monkeypatch):
    """`python3 tally.py` fails inside tally.py: the same edit, as `sed -i 'Nc\\...' tally.py && python3 tally.py`,
    verified in a copy, then run by `iclaw fix --yes` in the folder: the script is fixed, its data untouched."""
    import json

    from test_chat_support import one_thread, use_home
    from typer.testing import CliRunner

    from iclaw.cli import app

    d = tmp_path / "ws"
    (d / "lib").mkdir(parents=True)
    (d / "lib" / "tally.py").write_text("n = 0\nfor row in open('amounts.txt'):\n    n += row\nprint(n)\n")
    (d / "amounts.txt").write_text("2.5\n4\n")
    r = Sandbox(workspace=True).run("bash", "python3 lib/tally.py", d)
    hints = H.find_hints("bash", "python3 lib/tally.py", r.stdout, r.stderr, r.exit_code, d)
    rights = ("    n += int(row)", "    n += float(row)")
    assert H.Hint("edit", "lib/tally.py line 3", rights, shown=not H.SEARCH_ONLY) in hints
    assert ("int(row)" in H.render(hints)) == (not H.SEARCH_ONLY)  # a runtime edit: shown unless SEARCH_ONLY
    assert H.substitute("bash", "python3 lib/tally.py", hints[0])[1] == (
        "sed -i '3c\\    n += float(row)' lib/tally.py && python3 lib/tally.py"
    )
    quoted = H.Hint("edit", "it's.py lines 1-2", ("print('a\\\\b')\nx = 1",))
    sed = H.substitute("bash", 'python3 "it\'s.py"', quoted)[0]
    (d / "it's.py").write_text("old\nold\n")
    assert Sandbox(workspace=True).run("bash", sed.split(" && ")[0], d).exit_code == 0
    assert (d / "it's.py").read_text() == "print('a\\\\b')\nx = 1\n"
    monkeypatch.delenv("ICLAW_MODEL", raising=False)
    use_home(monkeypatch, tmp_path / "home")
    monkeypatch.chdir(d)
    with one_thread():
        out = CliRunner().invoke(
            app, ["fix", "python3 lib/tally.py", "--yes", "--json", "--db", str(tmp_path / "t.db")]
        )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["fixed"] is True
    assert (
        "float(row)" in (d / "lib" / "tally.py").read_text() and (d / "amounts.txt").read_text() == "2.5\n4\n"
    )

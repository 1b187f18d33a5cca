"""Hints (iclaw/tools/hints.py) from real failed runs in the real sandbox, and the candidate search's dry runs
(iclaw/agent/search.py): what a candidate did to the folder, and that the user's folder is never touched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from test_chat_support import one_thread, use_home
from typer.testing import CliRunner

from iclaw.agent import search as S
from iclaw.cli import app
from iclaw.tools import hints as H
from iclaw.tools.sandbox import Sandbox


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "notes.txt").write_text("milk\neggs\n")
    (d / "fruits.txt").write_text("pear\nfig\n")
    (d / "src").mkdir()
    (d / "src" / "app.py").write_text('print("app")\n')
    return d


def hints_of(kind: str, code: str, d: Path, **kw) -> list[H.Hint]:
    r = Sandbox(workspace=True).run(kind, code, d)
    assert r.exit_code != 0, r
    return H.find_hints(kind, code, r.stdout, r.stderr, r.exit_code, d, **kw)


def test_distance_and_nearest():
    assert (
        H.distance("gti", "git") == 1 and H.distance("sl", "ls") == 1 and H.distance("stauts", "status") == 1
    )
    assert H.distance("cat", "cat") == 0 and H.distance("kitten", "sitting") == 3
    assert H.nearest("grpe", ["grep", "egrep", "tree"]) == ("grep",)
    assert H.nearest("data.csv", ["data.tsv", "dataset"]) == ("data.tsv",)
    assert H.nearest("x" * 100, ["x" * 99]) == ()  # a pasted blob is no typo
    line = H.render([H.Hint("command", "gti", ("git",)), H.Hint("path", "note.txt", ("notes.txt",))])
    assert line == "[hint: gti -> git | note.txt -> notes.txt]"
    assert H.render([H.Hint("path", "a", ("b" * 50,) * 3)] * 3).endswith("...]")  # capped, still closed
    assert len(H.render([H.Hint("path", "a", ("b" * 50,) * 3)] * 3)) <= H.MAX_LINE


def test_hints_from_real_failures(folder):
    """Each kind of hint, read off what the command really printed in the sandbox."""
    assert hints_of("bash", "gti status", folder)[0] == H.Hint("command", "gti", ("git",))
    assert H.Hint("path", "note.txt", ("notes.txt",)) in hints_of("bash", "cat note.txt", folder)
    assert hints_of("bash", "cd scr", folder) == [H.Hint("path", "scr", ("src",))]
    assert hints_of("bash", "python3 src/ap.py", folder) == [H.Hint("path", "src/ap.py", ("src/app.py",))]
    assert hints_of("bash", "ls -la | grpe txt", folder)[0].rights[0] == "grep"
    subprocess.run(["git", "init", "-q", "."], cwd=folder, check=True)
    assert hints_of("bash", "git stauts", folder)[0] == H.Hint("git", "stauts", ("status",))
    py = hints_of("python", "count = 3\nprint(cuont)", folder)
    assert py == [H.Hint("python", "cuont", ("count",))]  # Python's own "Did you mean"
    assert H.Hint("python", "jsn", ("json",)) in hints_of("python", "import jsn", folder)
    colon = "n = 0\nwhile n < 2\n    n += 1\nprint(n)"
    (edit,) = hints_of("python", colon, folder)
    assert edit == H.Hint("edit", "line 2", ("while n < 2:",))  # Python's "expected ':'", as a line edit
    assert H.substitute("python", colon, edit) == [colon.replace("2\n ", "2:\n ", 1)]
    assert hints_of("python", "x = [1, 2\nprint(x)", folder)[0].rights == ("x = [1, 2]",)
    usage = H.usage_in(Sandbox())
    assert hints_of("bash", "ls --colr", folder, usage=usage) == [H.Hint("option", "--colr", ("--color",))]
    assert hints_of("bash", "ls --sort=szie", folder)[0] == H.Hint("option", "szie", ("size",))
    (folder / "Makefile").write_text("test:\n\t@echo ok\nbuild: test\n\t@echo built\nCC := gcc\n")
    assert hints_of("bash", "make tset", folder)[0] == H.Hint("option", "tset", ("test",))
    hist = hints_of("bash", "mkae test", folder, history=["make test", "ls"])
    assert H.Hint("history", "mkae test", ("make test",)) in hist
    assert H.substitute("bash", "gti status", H.Hint("command", "gti", ("git",))) == ["git status"]
    assert H.substitute("bash", "cat gti", H.Hint("command", "cat", ("tac",))) == ["tac gti"]
    (folder / "README.md").write_text("hello\n")  # a name that differs only in case comes first
    assert hints_of("bash", "cat readme.md", folder) == [H.Hint("path", "readme.md", ("README.md",))]
    (folder / "build.sh").write_text('#!/bin/bash\necho "hi $1"\n')  # scripts run as commands, no x bit
    (build,) = hints_of("bash", "./build.sh ann", folder)
    assert build == H.Hint("command", "./build.sh", ("bash build.sh",))
    assert H.substitute("bash", "./build.sh ann", build) == ["bash build.sh ann"]
    assert hints_of("bash", "src/app.py", folder)[0] == H.Hint(
        "command", "src/app.py", ("python3 src/app.py",)
    )
    ok = Sandbox(workspace=True).run("bash", "cat notes.txt", folder)
    assert H.find_hints("bash", "cat notes.txt", ok.stdout, ok.stderr, ok.exit_code, folder) == []


def test_a_folder_that_is_not_there_yet(tmp_path, folder, monkeypatch):
    """Nothing near the missing path: the folder the command needs, made first (thefuck's cd_mkdir and
    cp_create_destination); a typo of a folder that exists, or a missing plain file, gets no such hint. Through
    `iclaw fix --yes`, the fix that makes it runs in the folder."""
    assert hints_of("bash", "cd new-site", folder) == [H.Hint("folder", "new-site", ("mkdir -p new-site",))]
    cp = hints_of("bash", "cp notes.txt backup/2024-03-15/", folder)
    assert H.Hint("folder", "backup/2024-03-15", ("mkdir -p backup/2024-03-15",)) in cp
    assert H.Hint("folder", "sorted", ("mkdir -p sorted",)) in hints_of(
        "bash", "sort notes.txt > sorted/notes.txt", folder
    )
    assert H.substitute(
        "bash", "cd new-site && ls", H.Hint("folder", "new-site", ("mkdir -p new-site",))
    ) == ["mkdir -p new-site && cd new-site && ls"]
    assert hints_of("bash", "cd scr", folder) == [H.Hint("path", "scr", ("src",))]
    assert all(h.what != "folder" for h in hints_of("bash", "cat zqxwv.txt", folder))
    monkeypatch.delenv("ICLAW_MODEL", raising=False)
    use_home(monkeypatch, tmp_path / "home")
    monkeypatch.chdir(folder)
    with one_thread():
        r = CliRunner().invoke(
            app, ["fix", "cd new-site && touch index.html", "--yes", "--json", "--db", str(tmp_path / "t.db")]
        )
    assert r.exit_code == 0, r.output
    assert (folder / "new-site" / "index.html").is_file() and json.loads(r.stdout)["fixed"] is True


def test_hints_on_bad_input(folder, tmp_path, monkeypatch):
    """A folder of 20,000 files, names that are not UTF-8, an unreadable PATH entry, a 64 KiB command:
    capped hints or none, never an error."""
    big = tmp_path / "big"
    big.mkdir()
    for i in range(20_000):
        (big / f"f{i:05d}.txt").touch()
    os.mkdir(os.fsencode(big) + b"/caf\xe9")  # not UTF-8
    assert len(H.listing(big)) <= H.MAX_NAMES and all("\udce9" not in n for n in H.listing(big))
    hs = H.find_hints("bash", "cat f0000.txt", "", "cat: f0000.txt: No such file or directory", 1, big)
    assert len(hs) <= H.MAX_HINTS and all(len(h.rights) <= H.RIGHTS for h in hs)
    (big / "notes.txt").write_text("milk\n")  # too many names to list: its one-edit neighbours are asked for
    assert H.near_path("note.txt", big) == ("notes.txt",)
    # Python's errors read there: the program's own data file is read first, the folder's names capped
    (big / "cfg.json").write_text('{"host": "x"}')
    tb = "Traceback (most recent call last):\n  File \"main.py\", line 2, in <module>\nKeyError: 'Host'"
    code = 'import json\nprint(json.load(open("cfg.json"))["Host"])\n'
    assert H.find_hints("python", code, "", tb, 1, big)[0].rights == (
        'print(json.load(open("cfg.json"))["host"])',
    )
    assert H.find_hints("python", "x = {\n" * 9000, "", tb, 1, big) == []
    assert H.find_hints("bash", "python3 caf\udce9/main.py", "", tb, 1, big) == []
    blob = "cat " + " ".join(f"n{i}.txt" for i in range(9000))
    assert len(blob) > 64_000
    assert H.find_hints("bash", blob, "", "No such file or directory", 1, folder) == []
    H.executables.cache_clear()
    monkeypatch.setattr(H, "SANDBOX_PATH", f"{folder / 'notes.txt'}:/nonexistent:/usr/bin")
    try:
        assert "git" in H.executables() and "cd" in H.executables()
    finally:
        H.executables.cache_clear()


def test_dry_runs_name_what_a_candidate_did(folder):
    """In a copy: a link over a file, `sort -o` emptying one, `rm`, and an append to the file the user named."""
    (folder / "guests-old.csv").write_text("ann,bo\n")
    with open(os.fsencode(folder) + b"/caf\xe9.txt", "wb") as f:  # a name that is not UTF-8
        f.write(b"x")
    sandbox = Sandbox(workspace=True)
    typed = "ehco hi >> notes.txt"
    cands = [
        S.Candidate("ln -sf top guests-old.csv", "sample"),
        S.Candidate("sort -o fruits.txt < /dev/null", "sample"),
        S.Candidate("rm notes.txt", "hint"),
        S.Candidate("echo hi >> notes.txt", "hint"),
        S.Candidate("rm caf*", "sample"),
    ]
    before = tree_sum(folder)
    with S.Scratch(folder, S.named_in(typed)) as scratch:
        S.verify(cands, "bash", typed, sandbox, scratch)
    assert [c.changes for c in cands] == [
        ["replaces guests-old.csv with a link"],
        ["empties fruits.txt"],
        ["deletes notes.txt"],
        [],  # the user's own command appends to notes.txt
        ["deletes caf\ufffd.txt"],
    ]
    assert [c.row()["exit_code"] for c in cands] == [0, 0, 0, 0, 0]
    assert [c.code for c in S.rank(cands, "bash", typed)][0] == "echo hi >> notes.txt"
    assert tree_sum(folder) == before


def tree_sum(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        h.update(
            os.fsencode(p.relative_to(d)) + (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
        )
    return h.hexdigest()


def test_a_destructive_fix_is_never_run_under_yes(tmp_path, folder, monkeypatch):
    """`rn notes.txt`: the only candidate that works deletes notes.txt. Under --yes with nobody to ask it is
    named and declined; the folder is byte for byte what it was, and the dry run is in the episode's meta."""
    monkeypatch.delenv("ICLAW_MODEL", raising=False)
    use_home(monkeypatch, tmp_path / "home")
    monkeypatch.chdir(folder)
    before = tree_sum(folder)
    with one_thread():
        r = CliRunner().invoke(
            app, ["fix", "rn notes.txt", "--yes", "--json", "--db", str(tmp_path / "t.db")]
        )
    assert r.exit_code == 1, r.output
    assert "deletes notes.txt" in r.stderr and "declined" in r.stderr
    assert json.loads(r.stdout)["fixed"] is False
    assert tree_sum(folder) == before


def test_a_big_folder_is_copied_by_what_the_candidates_name(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(S.COPY_FILES + 10):
        (big / f"f{i:05d}.txt").write_text("x")
    (big / "notes.txt").write_text("milk\n")
    with S.Scratch(big, S.named_in("cat note.txt notes.txt")) as scratch:
        d = scratch.fresh()
        assert scratch.names is not None and sorted(os.listdir(d)) == ["notes.txt"]
        assert sorted(os.listdir(scratch.fresh({"f00001.txt"}))) == ["f00001.txt", "notes.txt"]

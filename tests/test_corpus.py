"""`iclaw data prep --corpus shell-python`: real files this machine's packages ship, a manifest that says where
every token came from, byte-identical token files for the same seed, and missing sources listed, not fatal."""

import dataclasses
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iclaw.errors import IclawError
from iclaw.model.tokenizer import EOT, get_tokenizer
from iclaw.train import corpus
from iclaw.train.corpus import SOURCES, Source, build, dpkg_owners, render_info, render_man

DEBIAN = bool(dpkg_owners())


def test_shell_python_corpus_manifest_and_determinism(tmp_path):
    # the command line and the API, same seed: byte-identical token files and the same manifest
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    r = subprocess.run([sys.executable, "-m", "iclaw", "data", "prep", "--corpus", "shell-python", "--max-files", "3",
                        "--out", str(a)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "python-stdlib" in r.stdout and "total" in r.stdout
    manifest = build(b, max_files=3, progress=False)
    for name in ("train.bin", "val.bin", "manifest.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (
        build(c, max_files=3, seed=1, progress=False)["sha256"] != manifest["sha256"]
    )  # another sample, order

    # the manifest: the files' sha256, and per source and package the tokens that make up the stream
    train, val = (np.fromfile(b / f"{s}.bin", dtype=np.uint16) for s in ("train", "val"))
    for name in ("train.bin", "val.bin"):
        assert manifest["sha256"][name] == hashlib.sha256((b / name).read_bytes()).hexdigest()
    assert (manifest["train_tokens"], manifest["val_tokens"]) == (len(train), len(val))
    sources = {s["source"]: s for s in manifest["sources"]}
    total = sum(s["tokens"] for s in sources.values())
    assert (
        total == len(train) + len(val) and sum(s["files"] for s in sources.values()) == manifest["documents"]
    )
    assert int((train == EOT).sum() + (val == EOT).sum()) == manifest["documents"]  # one <|endoftext|> each
    for s in sources.values():
        assert 0 < s["files"] <= 3 and s["glob"]
        assert sum(p["tokens"] for p in s["packages"]) == s["tokens"]
    stdlib = sources["python-stdlib"]["packages"]
    assert stdlib[0]["version"] and stdlib[0]["license"]  # the Python that ships it, where dpkg does not
    if DEBIAN:
        assert {"man", "bash-completion", "shell-scripts"} <= set(sources) or manifest["missing"]
        for s in sources.values():
            if s["source"] != "python-stdlib":
                assert all(p["version"] for p in s["packages"]), s  # every file is a package's, at a version
                assert all(p["copyright"] is None or Path(p["copyright"]).is_file() for p in s["packages"])
        assert any(p["license"] for s in sources.values() for p in s["packages"] if p["package"] != "python")
    # what a reader sees: rendered man pages (no roff left) and Python source
    text = get_tokenizer().decode(np.concatenate([train, val]).tolist())
    assert "\nimport " in text or "\ndef " in text
    if "man" in sources:
        assert "NAME\n" in text and "\n.TH " not in text and "\n.SH " not in text
    names = {m["source"] for m in manifest["missing"]} | set(sources)
    assert names == {s.name for s in SOURCES}  # every source is either found or listed as missing


def test_missing_sources_are_listed_and_only_nothing_is_fatal(tmp_path):
    nowhere = Source("nowhere", (str(tmp_path / "none" / "*"),), "text", "apt-get install nothing-at-all")
    stdlib = next(s for s in SOURCES if s.name == "python-stdlib")
    m = build(tmp_path / "out", sources=(nowhere, stdlib), max_files=2, progress=False)
    assert [s["source"] for s in m["sources"]] == ["python-stdlib"]
    assert (
        m["missing"][0]["source"] == "nowhere" and m["missing"][0]["get"] == "apt-get install nothing-at-all"
    )
    with pytest.raises(IclawError, match="nowhere: no .*apt-get install nothing-at-all"):
        build(tmp_path / "out2", sources=(nowhere,), progress=False)
    # an unreadable file (a truncated .gz) or a binary one is skipped and counted, not fatal
    folder = tmp_path / "files"
    folder.mkdir()
    whole = gzip.compress(b"some text\n" * 100)
    (folder / "broken.txt.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "blob.bin").write_bytes(b"\x00\x01" * 50)
    (folder / "good.txt").write_text("echo hello\n")
    local = Source("local", (str(folder / "*"),), "text", "", shipped_by="test")
    (s,) = build(tmp_path / "out3", sources=(local,), progress=False)["sources"]
    assert (s["files"], s["skipped"], s["tokens"]) == (1, 2, len(get_tokenizer().encode("echo hello\n")) + 1)


def test_package_cap_keeps_a_seeded_sample(tmp_path):
    """No package gives more than package_tokens (its last document may cross it); the rest are counted."""
    stdlib = next(s for s in SOURCES if s.name == "python-stdlib")
    capped = dataclasses.replace(stdlib, name="stdlib-capped", capped=True)
    m = build(tmp_path, sources=(capped,), package_tokens=3000, max_files=20, progress=False)
    (s,) = m["sources"]
    assert s["source"] == "stdlib-capped" and s["files"] + s["left_out"] + s["skipped"] == 20
    assert s["left_out"] > 0 and s["tokens"] >= 3000 and s["packages"][0]["left_out"] == s["left_out"]
    again = build(tmp_path / "again", sources=(capped,), package_tokens=3000, max_files=20, progress=False)
    assert again["sha256"] == m["sha256"]  # the same sample


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff (groff-base) renders man pages")
def test_man_and_info_render_to_plain_text():
    ls = Path("/usr/share/man/man1/ls.1.gz")
    if not ls.is_file():
        pytest.skip("no ls(1) man page here")
    text = render_man(ls)
    assert "ls - list directory contents" in text and "\x1b" not in text and "\b" not in text
    assert "List information about the FILEs (the current directory by default)." in text  # not justified
    info = Path("/usr/share/info/coreutils.info.gz")
    if info.is_file():
        manual = render_info(info)
        assert "\x1f" not in manual and "\x00" not in manual and "Tag Table:" not in manual
        assert "sort" in manual and manual.count("This is coreutils.info") == 1


def test_groff_missing_is_said_with_the_package_to_install(tmp_path, monkeypatch):
    if not DEBIAN or not corpus.source_files(SOURCES[0], dpkg_owners()):
        pytest.skip("no man pages here")
    monkeypatch.setattr(corpus, "groff_version", lambda: None)
    stdlib = next(s for s in SOURCES if s.name == "python-stdlib")
    m = build(tmp_path, sources=(SOURCES[0], stdlib), max_files=1, progress=False)
    (man,) = m["missing"]
    assert man["source"] == "man" and man["get"] == "apt-get install groff-base" and "groff" in man["why"]
    assert json.loads((tmp_path / "manifest.json").read_text())["missing"] == m["missing"]

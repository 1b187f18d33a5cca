"""The shell-and-Python corpus (`iclaw data prep --corpus shell-python`): what people read about commands and
Python, taken only from files that Debian packages and Python itself ship on this machine.

    man              /usr/share/man/man{1,5,7,8}/*   rendered to plain text by groff (Debian: groff-base)
    info             /usr/share/info/*.info*         GNU manuals; node separators and index markers dropped
    bash-completion  /usr/share/bash-completion/completions/*
    shell-scripts    files packages ship under /usr and /etc whose first line runs sh or bash
    python-stdlib    the running Python's standard library, tests left out
    python-docs      /usr/share/doc/python3*/html/_sources (Debian: python3.X-doc), reST

Only files a Debian package owns are used (the stdlib: those Python ships), so the manifest can say where
every token came from: per source its globs, and per package its version (dpkg-query), licence (the first
`License:` line of /usr/share/doc/PKG/copyright), files and tokens. No package gives more than
`package_tokens` tokens to the shell sources: a cloud SDK's 16,000 generated man pages would otherwise drown
coreutils' (the Python sources are one package each, and whole).

Deterministic: files are sorted, each package's files shuffled by the seed (the cap keeps a seeded sample),
results consumed in order, duplicates (the same text under two names) dropped, the documents shuffled by the
seed; the same machine and seed give byte-identical train.bin and val.bin, whose sha256 the manifest holds.
A source with no files (or no renderer) is listed under "missing" with the line that installs it.
"""

from __future__ import annotations

import fnmatch
import glob
import gzip
import hashlib
import json
import os
import platform
import random
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclaw.errors import IclawError
from iclaw.files import write_atomic
from iclaw.train.data import DTYPE

DPKG_INFO = Path("/var/lib/dpkg/info")
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
# a minimal image (Docker's debian/ubuntu) drops docs at install time: the packages are there, the files not
EXCLUDES_NOTE = "if the packages are installed, the image may exclude these paths (/etc/dpkg/dpkg.cfg.d/)"


@dataclass(frozen=True)
class Source:
    name: str
    # fnmatch patterns (* crosses /) over the files packages ship; for the stdlib, a glob of its .py files
    globs: tuple[str, ...]
    kind: str  # how a file becomes text: man | info | script | text
    get: str  # what installs it, said when it is missing
    capped: bool = True  # at most package_tokens per package (not where one package is the whole source)
    shipped_by: str | None = None  # not dpkg's: the files on disk that the globs match, shipped by this
    skip: tuple[str, ...] = ()  # fnmatch patterns of files left out


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


SOURCES = (
    Source(
        "man",
        tuple(f"/usr/share/man/man{s}/*" for s in "1578"),
        "man",
        "apt-get install man-db manpages coreutils git-man util-linux procps",
    ),
    Source(
        "info",
        ("/usr/share/info/*.info.gz", "/usr/share/info/*.info"),
        "info",
        "apt-get install coreutils findutils sed grep gzip",
        skip=("/usr/share/info/python*",),  # python3.X-doc's manual: the python-docs source again, as info
    ),
    Source(
        "bash-completion",
        ("/usr/share/bash-completion/completions/*",),
        "text",
        "apt-get install bash-completion",
    ),
    Source(
        "shell-scripts",
        ("/usr/bin/*", "/usr/sbin/*", "/usr/lib/**/*", "/usr/libexec/**/*", "/usr/share/**/*", "/etc/**/*"),
        "script",
        "apt-get install debianutils gzip",
    ),
    Source(
        "python-stdlib", (f"{stdlib_dir()}/**/*.py",), "text", "a Python", capped=False, shipped_by="python"
    ),
    Source(
        "python-docs",
        ("/usr/share/doc/python3*/html/_sources/**/*.txt",),
        "text",
        f"apt-get install python{PY}-doc",
        capped=False,
    ),
)
# the stdlib without its tests (2/3 of its tokens) or the packages installed into it
SKIP_PARTS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}


# ----------------------------------------------------------------------------------------------------------
# Who ships what: dpkg's own database


def dpkg_owners(info_dir: Path = DPKG_INFO) -> dict[str, str]:
    """path -> the Debian package that ships it, from dpkg's file lists. Read directly: `dpkg-query -S` per
    file would take minutes, and misses /usr/bin/x when the package lists /bin/x (merged /usr)."""
    owners: dict[str, str] = {}
    for lst in sorted(info_dir.glob("*.list")):
        package = lst.name[: -len(".list")].split(":")[0]
        for line in lst.read_text(errors="surrogateescape").splitlines():
            owners.setdefault(line, package)
            if line.startswith(("/bin/", "/sbin/", "/lib/")):  # merged /usr: the same file under /usr
                owners.setdefault("/usr" + line, package)
    return owners


def dpkg_versions() -> dict[str, str]:
    """package -> installed version (dpkg-query); empty where dpkg is absent."""
    if shutil.which("dpkg-query") is None:
        return {}
    r = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"], capture_output=True, text=True, check=False
    )
    return dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)


def about_package(package: str, versions: dict[str, str]) -> dict:
    """Its version (dpkg-query), licence (the first `License:` line of its machine-readable copyright file, where
    it has one) and the path of its copyright file, which holds the full terms either way."""
    if package == "python" and package not in versions:  # the stdlib of a Python dpkg did not install
        return {"version": platform.python_version(), "license": "PSF-2.0", "copyright": None}
    path = Path("/usr/share/doc") / package / "copyright"
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    license = next((ln[len("License:") :].strip() for ln in lines if ln.startswith("License:")), "")
    return {
        "version": versions.get(package),
        "license": license or None,  # "License:" alone heads a non-DEP-5 file's free text
        "copyright": str(path) if path.is_file() else None,
    }


# ----------------------------------------------------------------------------------------------------------
# Files -> text


def groff_version() -> str | None:
    if shutil.which("groff") is None:
        return None
    r = subprocess.run(["groff", "--version"], capture_output=True, text=True, check=False)
    return r.stdout.splitlines()[0].strip() if r.stdout else "groff"


# Left-adjusted and unhyphenated: justified spacing and split words are noise to a tokenizer. The .am1 lines
# append to man's TH and mdoc's Dd, which reset adjustment and hyphenation when a page starts.
GROFF_PROLOGUE = b".am1 TH\n.ad l\n.nh\n..\n.am1 Dd\n.ad l\n.nr doc-hyphen-flags 0\n..\n"
GROFF = ["groff", "-mandoc", "-Tutf8", "-t", "-k", "-P-cbou", "-rLL=100n"]
GROFF_ENV = {"LC_ALL": "C.UTF-8", "SOURCE_DATE_EPOCH": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def render_man(path: Path) -> str | None:
    """A man page as the plain text `man` shows (no bold/underline), or None for a `.so` alias page."""
    roff = _read_bytes(path)
    first = next((ln for ln in roff.splitlines() if ln.strip() and not ln.startswith(b'.\\"')), b"")
    if first.startswith(b".so "):  # an alias of another page, which is rendered on its own
        return None
    r = subprocess.run(
        GROFF, input=GROFF_PROLOGUE + roff, capture_output=True, env=GROFF_ENV, timeout=60, check=False
    )
    text = r.stdout.decode("utf-8", errors="replace")
    return _squeeze(text) if r.returncode == 0 and text.strip() else None


def render_info(path: Path) -> str | None:
    """A GNU info manual (its main file and the numbered parts beside it) as plain text, its indices left out."""
    stem = path.name.removesuffix(".gz").removesuffix(".info")
    number = re.compile(re.escape(stem) + r"\.info-(\d+)(\.gz)?$")
    parts = sorted((int(m.group(1)), p) for p in path.parent.iterdir() if (m := number.match(p.name)))
    nodes = []
    for k, part in enumerate([path] + [p for _, p in parts]):
        chunks = _read_bytes(part).decode("utf-8", errors="replace").split("\x1f")
        for node in chunks[1:] if k else chunks:  # each part repeats the main file's preamble
            node = node.lstrip("\n")
            if "\x00\x08[index\x00\x08]" in node:  # an index: thousands of "* entry: node. (line N)"
                continue
            if not node.strip() or node.startswith(("Tag Table:", "Indirect:", "Local Variables:", "\x7f")):
                continue
            if node.startswith("File:"):  # the navigation header line of each node
                node = node.split("\n", 1)[1] if "\n" in node else ""
            nodes.append(re.sub(r"\x00\x08\[[^\x00]*\x00\x08\]", "", node).strip("\n"))  # other markers
    return _squeeze("\n\n".join(nodes)) if any(n.strip() for n in nodes) else None


NOT_SCRIPTS = set(".gz .py .pyc .png .yaml .mo .rst .json .vim .txt .pl .pm .js .cmake .bc .so .xml .svg .jar .h .c .html .mod .a .md .debug .pom .sql .php .crt .pc .ph .lang .el .elc .ko .zst .xz".split())  # fmt: skip
SHELLS = re.compile(rb"#!\s*/(usr/)?bin/(env\s+)?(sh|bash|dash)\b")


def is_shell_script(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return bool(SHELLS.match(f.readline(128)))
    except OSError:
        return False


def read_text(path: Path) -> str | None:
    """UTF-8 text, or None for binary / undecodable files."""
    data = _read_bytes(path)
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _squeeze(text: str) -> str:
    """Trailing spaces off, runs of blank lines down to one."""
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


RENDER: dict[str, Callable[[Path], str | None]] = {
    "man": render_man,
    "info": render_info,
    "script": read_text,
    "text": read_text,
}


def source_files(src: Source, owners: dict[str, str]) -> list[Path]:
    """The regular files (not symlinks: an alias repeats its target) of a source, sorted: the files a Debian
    package ships that match its globs (matched against dpkg's lists, not walked: /usr/lib alone can hold a
    million files), or for a source Python ships, those on disk (the stdlib's tests left out)."""
    if src.shipped_by:
        found = (Path(p) for g in src.globs for p in glob.iglob(g, recursive=True))
        found = (p for p in found if not SKIP_PARTS & set(p.parts))
    else:
        match = re.compile("|".join(fnmatch.translate(g) for g in src.globs)).match
        found = (Path(p) for p in owners if match(p))
        if (
            src.kind == "script"
        ):  # not stat()ed and opened: 100,000 libraries, data and other languages' files
            found = (p for p in found if p.suffix not in NOT_SCRIPTS)
    if src.skip:
        skip = re.compile("|".join(fnmatch.translate(g) for g in src.skip)).match
        found = (p for p in found if not skip(str(p)))
    return sorted(set(p for p in found if _regular(p)))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)  # one lstat: a symlink is not followed
    except OSError:  # listed by dpkg, since removed
        return False


# ----------------------------------------------------------------------------------------------------------
# The corpus


def build(
    out: Path,
    *,
    sources: tuple[Source, ...] = SOURCES,
    seed: int = 0,
    val_frac: float = 0.05,
    package_tokens: int = 1_000_000,
    max_files: int | None = None,
    progress: bool = True,
) -> dict:
    """Render, tokenize and shuffle every source into out/train.bin, val.bin (GPT-2 ids, <|endoftext|> after
    each document), meta.json and manifest.json; returns the manifest. `max_files` keeps a seeded sample of
    each source (a quick look, the tests)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from iclaw.model.tokenizer import EOT, VOCAB_SIZE

    if not 0 < val_frac < 1:
        raise IclawError(f"--val-frac {val_frac}: must be between 0 and 1")
    owners, versions = dpkg_owners(), dpkg_versions()
    groff = groff_version()
    docs: list[np.ndarray] = []
    seen: set[bytes] = set()  # sha256 of each kept text: the same page shipped twice counts once
    found, missing = [], []
    columns = [TextColumn("[bold]{task.description:<16}"), BarColumn(), MofNCompleteColumn()]
    columns.append(TextColumn("files  {task.fields[tokens]:,} tokens"))
    with Progress(*columns, disable=not progress) as bar, ThreadPoolExecutor(os.cpu_count()) as pool:
        for src in sources:
            files = source_files(src, owners)
            if src.kind == "script":
                files = [f for f in files if is_shell_script(f)]
            if max_files is not None and len(files) > max_files:
                files = sorted(random.Random(f"{seed}:{src.name}").sample(files, max_files))
            if not files:
                why = f"no files ({EXCLUDES_NOTE})" if owners else "no dpkg database: not a Debian system"
                missing.append({"source": src.name, "glob": list(src.globs), "why": why, "get": src.get})
                continue
            if src.kind == "man" and groff is None:
                why = f"{len(files)} man pages, but groff (which renders them) is not installed"
                get = "apt-get install groff-base"
                missing.append({"source": src.name, "glob": list(src.globs), "why": why, "get": get})
                continue
            entry, kept = _read_source(
                src, files, owners, seen, pool, bar, seed=seed, package_tokens=package_tokens
            )
            entry["packages"] = [
                {"package": p["package"], **about_package(p["package"], versions), **p}
                for p in entry["packages"]
            ]
            entry["renderer"] = groff if src.kind == "man" else src.kind
            found.append(entry)
            docs += kept
    if not docs:
        lines = "\n".join(f"  {m['source']}: {m['why']} ({m['get']})" for m in missing)
        raise IclawError(f"no source of the shell-python corpus has files on this machine:\n{lines}")

    # the documents in a seeded order, so any prefix of train.bin and the val tail sample every source
    random.Random(seed).shuffle(docs)
    stream = np.concatenate(docs)
    n_val = max(1, int(len(stream) * val_frac))
    out = Path(out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    train, val = stream[:-n_val].tobytes(), stream[-n_val:].tobytes()
    write_atomic(out / "train.bin", train)
    write_atomic(out / "val.bin", val)
    manifest = {
        "corpus": "shell-python",
        "seed": seed,
        "val_frac": val_frac,
        "package_tokens": package_tokens,
        "max_files": max_files,
        "tokenizer": "gpt2",
        "dtype": "uint16",
        "machine": {"os": _os_release(), "python": platform.python_version(), "groff": groff},
        "train_tokens": len(stream) - n_val,
        "val_tokens": n_val,
        "documents": len(docs),
        "sha256": {
            "train.bin": hashlib.sha256(train).hexdigest(),
            "val.bin": hashlib.sha256(val).hexdigest(),
        },
        "sources": found,
        "missing": missing,
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    meta = {
        "vocab_size": VOCAB_SIZE,
        "dtype": "uint16",
        "eot": EOT,
        "tokenizer": "gpt2",
        "train_tokens": manifest["train_tokens"],
        "val_tokens": n_val,
        "files": len(docs),
        "source": "shell-python",
        "shuffle_seed": seed,
    }
    write_atomic(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    return manifest


def _read_source(
    src: Source, files: list[Path], owners: dict, seen: set, pool, bar, *, seed: int, package_tokens: int
) -> tuple[dict, list[np.ndarray]]:
    """One source's manifest entry and its documents (token ids + <|endoftext|>), read in a fixed order: by
    package, each package's files shuffled by the seed, so that a package's token cap keeps a seeded sample."""
    from iclaw.model.tokenizer import EOT, get_tokenizer

    tok, render = get_tokenizer(), RENDER[src.kind]
    by_package: dict[str, list[Path]] = {}
    for f in files:
        by_package.setdefault(owners.get(str(f), src.shipped_by), []).append(f)
    work = []
    for package in sorted(by_package):
        group = by_package[package]
        random.Random(f"{seed}:{src.name}:{package}").shuffle(group)
        work += [(package, f) for f in group]
    stats = {p: {"files": 0, "tokens": 0, "left_out": 0} for p in by_package}

    def encode(f: Path) -> tuple[bytes, list[int]] | None:
        try:
            text = render(f)
        except (OSError, EOFError, zlib.error, subprocess.SubprocessError):  # unreadable: skipped, not fatal
            return None
        return None if text is None else (hashlib.sha256(text.encode()).digest(), tok.encode(text))

    def full(package: str) -> bool:
        return src.capped and stats[package]["tokens"] >= package_tokens

    docs, skipped, n_tokens = [], 0, 0
    task = bar.add_task(src.name, total=len(work), tokens=0)
    for (package, _), result in _in_order(pool, encode, work, skip=lambda w: full(w[0])):
        bar.advance(task)
        if full(package):  # decided here, in order, so the sample does not depend on thread timing
            stats[package]["left_out"] += 1
            continue
        if result is None or result[0] in seen:
            skipped += 1
            continue
        seen.add(result[0])
        docs.append(np.asarray(result[1] + [EOT], dtype=DTYPE))
        stats[package]["files"] += 1
        stats[package]["tokens"] += len(docs[-1])
        n_tokens += len(docs[-1])
        bar.update(task, tokens=n_tokens)
    entry = {
        "source": src.name,
        "glob": list(src.globs),
        "files": sum(s["files"] for s in stats.values()),
        "tokens": n_tokens,
        "skipped": skipped,  # aliases, duplicates, binary or unrenderable files
        "left_out": sum(s["left_out"] for s in stats.values()),  # past a package's token cap
        "packages": [{"package": p, **s} for p, s in sorted(stats.items())],
    }
    return entry, docs


def _in_order(pool, fn, items: list, skip: Callable, ahead: int = 16):
    """(item, fn(item)) for each item, in order, computed in `pool` at most `ahead` items in advance. An item
    for which skip(item) is already True when its turn to be submitted comes is not computed (result None)."""
    pending: deque = deque()
    it = iter(items)

    def fill() -> None:
        while len(pending) < ahead:
            item = next(it, None)
            if item is None:
                return
            pending.append((item, None if skip(item) else pool.submit(fn, item[1])))

    fill()
    while pending:
        item, future = pending.popleft()
        result = future.result() if future is not None else None
        fill()
        yield item, result


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None

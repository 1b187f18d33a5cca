"""Hints: what a good shell says next to a failure, so the answer is in the observation and the policy copies it.

One function, `find_hints`, reads a failed run (the command, what it printed, its exit code, its folder) and
returns a few `Hint`s, each a word that failed and the nearest things that exist:

  command   exit 127, `gti: command not found`      -> the nearest executables on the sandbox's PATH and bash
            builtins (zsh's CORRECT); a script in the folder run as a command (`./build.sh: Permission
            denied`, `report.py: command not found`) -> it through its interpreter (`bash build.sh`)
  path      `No such file or directory`, `cannot access`, ... -> for each path in the command (or quoted in
            the error) that does not exist, the nearest names in its folder (bash's cdspell), a name that
            differs only in case first
  folder    ... where nothing is near, the folder the command needs (`cd new-site`, `cp a backup/`, `> out/a`)
            -> `mkdir -p` it first (thefuck's cd_mkdir and cp_create_destination)
  git       git's own "The most similar command is" lines
  python    Python's own "Did you mean: 'x'?"; `No module named 'x'` -> the nearest standard-library module
  option    `unrecognized option '--colr'` -> the nearest long options from the tool's own `--help`;
            `invalid argument 'szie' for '--sort'` -> the nearest of the values the tool lists; make's
            `No rule to make target 'tset'` -> the nearest target in the Makefile
  edit      Python's error read as an edit (iclaw/tools/py_hints.py: `expected ':'`, a module not imported,
            str + int, a key the data file spells otherwise, ...) -> the line it names as it should read, by
            its number (`line 2 -> while n < 2:`): an edit, the program is never re-typed
  fix       a slip whose message says the whole fix (iclaw/tools/sh_hints.py: `cut -f0`, `tar -cfv x.tar`,
            `grep two words f`, `name = x`, `cd..`, `copy a b`, ...) -> the command as it should read
  history   a command that exited 0 before, in this store, close to the one that failed

`render` makes them one line, `[hint: gti -> git, gio | note.txt -> notes.txt]`, which format_output appends
after `[exit N]` so the output cap never cuts it; `substitute` turns a hint into a candidate fix (the word
replaced in the command), which is how `iclaw fix` tries them (iclaw/agent/search.py).

Everything is read on the host from what the sandbox sees (its PATH directories are the host's, mounted read
only; the folder is the task's or the user's), with caps: at most MAX_NAMES entries of any one directory, words
of at most MAX_WORD characters, at most MAX_HINTS hints of RIGHTS names each. Sorted listings and a fixed
distance make the same failure give the same hint in training, eval, chat and fix.
Left out: keyboard-aware distances (a plain Damerau-Levenshtein already puts `gti` next to `git`), and hints
for errors that carry no name (a SyntaxError's position is already in Python's own message).
"""

from __future__ import annotations

import itertools
import os
import pkgutil
import re
import shlex
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from iclaw.tools import py_hints, sh_hints
from iclaw.tools.isolation import SANDBOX_PATH

MAX_NAMES = 5000  # entries read from one directory: a folder of 100,000 files costs what 5,000 do
MAX_WORD = 64  # longer "words" (a pasted blob) are not typos of a name
MAX_HINTS = 3
RIGHTS = 3  # names offered per hint
MAX_LINE = 240  # characters of the rendered line
# True: the fix hints and the newer Python edits (py_hints.seen) go to the search only, not the observation --
# for weights never trained on them (they cost such weights 5.8 points of held-out Python, docs/LOG.md). The
# shipped weights were trained with every hint shown, so they see every hint.
SEARCH_ONLY = False
MAX_PATHS = 8  # paths of one command looked up: a pasted list of 10,000 names must not cost seconds

BUILTINS = (
    "alias bg bind break builtin case cd command continue declare dirs disown echo enable eval exec exit "
    "export false fc fg for function getopts hash help history if jobs kill let local logout popd printf "
    "pushd pwd read readonly return select set shift shopt source test time times trap true type typeset "
    "ulimit umask unalias unset until wait while"
).split()


@dataclass(frozen=True)
class Hint:
    what: str  # command | path | folder | git | python | option | edit | fix | history
    wrong: str  # the word that failed (edit: "line N"; history: the whole command)
    rights: tuple[str, ...]  # nearest first
    shown: bool = True  # in the observation's hint line; False: a candidate for the search only (SEARCH_ONLY)


def distance(a: str, b: str, cap: int = 4) -> int:
    """Damerau-Levenshtein (optimal string alignment): `gti`/`git` and `sl`/`ls` are 1. Stops early past cap."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > cap:
            return cap + 1
        prev2, prev = prev, cur
    return prev[-1]


def allowed(word: str) -> int:
    """How many edits still count as a typo of `word`: 1 up to 4 characters, 2 up to 8, then 3."""
    return 1 if len(word) <= 4 else 2 if len(word) <= 8 else 3


def nearest(word: str, names, limit: int = RIGHTS) -> tuple[str, ...]:
    """The names within `allowed(word)` edits of `word` (or with its stem: `data.csv` -> `data.tsv`,
    `report` -> `report.txt`), nearest first, then shortest, then alphabetical. A one-character word (`$`
    pasted with a prompt) is a typo of too many names to say."""
    if len(word) < 2 or len(word) > MAX_WORD:
        return ()
    cap, stem = allowed(word), word.split(".")[0]
    scored = []
    for n in set(names):
        if n == word:
            continue
        # a name that differs only in case (`readme.md` for README.md) is the nearest of all: zero edits away
        d = 0 if n.lower() == word.lower() else distance(word, n, cap)
        if d > cap and len(stem) >= 3 and n.split(".")[0] == stem:
            d = cap  # same stem, another extension: as far as a typo can be
        if d <= cap:
            scored.append((d, len(n), n))
    return tuple(n for _, _, n in sorted(scored)[:limit])


def listing(folder: Path) -> list[str]:
    """Up to MAX_NAMES names in `folder`, sorted; a folder that cannot be read has none. Names that are
    not UTF-8 come as lone surrogates (os.fsdecode): they are skipped, never offered as a fix."""
    try:
        with os.scandir(folder) as it:
            names = [e.name for e in itertools.islice(it, MAX_NAMES)]
    except OSError:
        return []
    return sorted(n for n in names if n.isprintable() and not _surrogates(n))


def _surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@lru_cache(maxsize=1)
def executables() -> tuple[str, ...]:
    """The names on the sandbox's PATH plus bash's builtins (read once per process; an unreadable PATH
    entry adds nothing)."""
    names = set(BUILTINS)
    for d in SANDBOX_PATH.split(":"):
        names.update(listing(Path(d)))
    return tuple(sorted(names))


# -- what failed -------------------------------------------------------------------------------------------

NOT_FOUND = re.compile(r"(?:^|: )([^\s:'\"]+): (?:command )?not found$", re.M)
MISSING = (
    "No such file or directory",
    "cannot access",
    "cannot stat",
    "cannot open",
    "can't open",
    "not a directory",
)
GIT = re.compile(
    r"git: '([^']+)' is not a git command.*?most similar commands? (?:is|are)\n((?:\t\S+\n?)+)", re.S
)
PY_MEAN = re.compile(r"(?:name|attribute|module) '([^']+)'.*?Did you mean: '([^']+)'\?", re.S)
PY_MODULE = re.compile(r"No module named '?([\w.]+)'?")
Q = "['‘’`]"  # GNU tools quote with ' or, in a UTF-8 locale (the sandbox's), with ‘ ’
VALID = re.compile(
    rf"invalid argument {Q}([^'‘’]+){Q} for {Q}[^'‘’]+{Q}\s*\n"
    rf"Valid arguments are:\n((?:\s+- {Q}[^'‘’]+{Q}.*\n?)+)"
)
MAKE = re.compile(rf"No rule to make target {Q}([^'‘’]+){Q}")
MAKE_TARGET = re.compile(r"^([A-Za-z0-9_][\w.-]*)\s*:(?!=)", re.M)
OPTION = re.compile(r"(?:unrecognized|unknown|invalid) option(?:[^'`\"‘\n]*['`\"‘]|:\s*)(--?[\w-]+)")
QUOTED = re.compile(r"""['"‘’]([^'"‘’\n]{1,200})['"‘’]""")


def words(code: str) -> list[str]:
    """The command's words (shell rules; a line that does not split is split on spaces)."""
    try:
        return shlex.split(code, comments=False)
    except ValueError:
        return code.split()


def find_hints(
    kind: str,
    code: str,
    stdout: str,
    stderr: str,
    exit_code: int,
    cwd: Path | str,
    *,
    history: list[str] | None = None,
    usage=None,
) -> list[Hint]:
    """Hints for a failed run (none for a success). `usage(tool)` returns the tool's `--help` text (run in
    the sandbox by the caller) for option hints; `history`, commands that worked before, newest first."""
    if exit_code == 0 or len(code) > 4 * MAX_LINE * 16:
        return []
    cwd, text = Path(cwd), (stderr or "") + "\n" + (stdout or "")
    text = text[-8192:]  # the end of an error says the most, and a flood must not cost time
    found: list[Hint] = []

    def add(what: str, wrong: str, rights: tuple[str, ...], shown: bool = True) -> None:
        if rights and wrong not in [h.wrong for h in found]:
            found.append(Hint(what, wrong, rights, shown or not SEARCH_ONLY))

    for m in GIT.finditer(text):
        add("git", m.group(1), tuple(s.strip() for s in m.group(2).split("\n") if s.strip())[:RIGHTS])
    for m in PY_MEAN.finditer(text):
        add("python", m.group(1), (m.group(2),))
    if kind == "bash":  # the slips whose message says the whole fix (iclaw/tools/sh_hints.py)
        add("fix", code, tuple(sh_hints.fixes(code, text, cwd))[:RIGHTS], shown=False)
    for m in NOT_RUN.finditer(text):  # a script run as a command, before its name is taken for a typo
        add("command", m.group(1), run_with(m.group(1), cwd))
    if exit_code == 127 or "command not found" in text:
        for m in NOT_FOUND.finditer(text):
            add("command", m.group(1), nearest(m.group(1), executables()))
    for m in VALID.finditer(text):  # GNU tools list the values an option takes
        add("option", m.group(1), nearest(m.group(1), re.findall(rf"- {Q}([^'‘’]+){Q}", m.group(2))))
    for m in MAKE.finditer(text):
        add("option", m.group(1), nearest(m.group(1), make_targets(cwd)))
    for m in PY_MODULE.finditer(text):
        top, _, rest = m.group(1).partition(".")
        pkg = py_hints.stdlib(top) if rest and "." not in rest else None
        if pkg is not None and hasattr(pkg, "__path__"):  # json.tol -> json.tool, its package's own modules
            subs = sorted(f"{top}.{i.name}" for i in pkgutil.iter_modules(pkg.__path__))
            add("python", m.group(1), nearest(m.group(1), subs))
        else:
            add("python", top, nearest(top, sorted(sys.stdlib_module_names)))
    if any(s in text for s in MISSING):
        paths = [w for w in words(code) if _pathlike(w) and w not in executables()] if kind == "bash" else []
        paths += [q for q in QUOTED.findall(text) if _pathlike(q)]
        for p in list(dict.fromkeys(paths))[:MAX_PATHS]:
            near = near_path(p, cwd)
            add("path", p, near)
            if not near and kind == "bash":  # nothing near: perhaps the folder is yet to be made
                folder = missing_folder(p, code, cwd)
                add("folder", folder, (f"mkdir -p {shlex.quote(folder)}",) if folder else ())
    if usage is not None and kind == "bash":
        for m in OPTION.finditer(text):
            opt = m.group(1)
            tool = next((w for w in words(code) if opt in w or not w.startswith("-")), "")
            if opt.startswith("--") and tool:
                add("option", opt, nearest(opt, set(re.findall(r"(?<![\w-])--[a-z][\w-]*", usage(tool)))))
    # Python's message read as an edit of the line it names (iclaw/tools/py_hints.py): of the program, or of
    # the script a command ran (`python3 report.py`), which sed then edits (see substitute)
    script = python_script(code, cwd) if kind == "bash" else ""
    if kind == "python" or script:
        src = code if kind == "python" else (cwd / script).read_text(errors="replace")
        by_lines: dict[str, list[str]] = {}
        for a, b, new in py_hints.edits(src, text, cwd, name=script.rsplit("/", 1)[-1] or "main.py"):
            where = f"line {a}" if a == b else f"lines {a}-{b}"
            by_lines.setdefault(f"{script} {where}".strip(), []).append(new)
        for where, news in by_lines.items():
            add("edit", where, tuple(news), shown=py_hints.seen(text))
    if history and kind == "bash":
        add("history", code, tuple(h for h in history if h != code and distance(code, h, 3) <= 3)[:1])
    return [h for h in found if h.shown][:MAX_HINTS] + [h for h in found if not h.shown][:MAX_HINTS]


def python_script(code: str, cwd: Path) -> str:
    """The Python file a command runs (`python3 report.py --all` -> report.py), if it is in the folder and
    small enough to read (64 KiB); '' otherwise."""
    ws = words(code)
    if len(ws) < 2 or not re.fullmatch(r"python3?(\.\d+)?", ws[0]) or not ws[1].endswith(".py"):
        return ""
    p = cwd / ws[1]
    ok = (
        ".." not in Path(ws[1]).parts and not Path(ws[1]).is_absolute() and p.is_file() and not p.is_symlink()
    )
    return ws[1] if ok and p.stat().st_size <= 65536 else ""


NOT_RUN = re.compile(r"^(?:\S+: )*(?:line \d+: )?(\S+): (?:Permission denied|command not found)$", re.M)


def run_with(word: str, cwd: Path) -> tuple[str, ...]:
    """A script in the folder that was run as a command (`./build.sh`: no executable bit; `report.py`: not on
    PATH) -> the same script through the interpreter its extension or `#!` line names (thefuck's chmod_x and
    python_command): `./build.sh -> bash build.sh`."""
    p = cwd / word
    if ".." in Path(word).parts or not p.is_file():
        return ()
    try:
        with p.open("rb") as f:
            first = f.readline(128)
    except OSError:
        return ()
    name = word.removeprefix("./")
    if word.endswith(".py") or (first.startswith(b"#!") and b"python" in first):
        return (f"python3 {name}",)
    if word.endswith(".sh") or (first.startswith(b"#!") and first.rstrip().endswith((b"sh", b"bash"))):
        return (f"bash {name}",)
    return ()


def make_targets(cwd: Path) -> list[str]:
    """The targets of the folder's Makefile (its first 64 KiB)."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        try:
            with open(cwd / name, encoding="utf-8", errors="replace") as f:
                return MAKE_TARGET.findall(f.read(65536))
        except OSError:
            continue
    return []


def _pathlike(w: str) -> bool:
    return 0 < len(w) <= 4 * MAX_WORD and not w.startswith(("-", "$", "~")) and "\n" not in w and "*" not in w


def near_path(path: str, cwd: Path) -> tuple[str, ...]:
    """For a path that does not exist under cwd, the nearest paths that do (each missing component replaced
    by its nearest sibling): `src/ap.py` -> `src/app.py`, `scr/app.py` -> `src/app.py`."""
    p = Path(path)
    if p.is_absolute() or ".." in p.parts or (cwd / p).exists() or not p.parts:
        return ()
    found = [Path()]
    for part in p.parts:
        nxt = []
        for base in found:
            if (cwd / base / part).exists():
                nxt.append(base / part)
                continue
            names = listing(cwd / base)
            if len(names) >= MAX_NAMES:  # a folder too big to list: ask for the one-edit neighbours instead
                names += [n for n in one_edit_away(part) if os.path.lexists(cwd / base / n)]
            nxt += [base / n for n in nearest(part, names)]
        found = nxt[:RIGHTS]
        if not found:
            return ()
    return tuple(str(f) for f in found)


def missing_folder(path: str, code: str, cwd: Path) -> str:
    """The folder a command needs made, where nothing near the missing path exists (thefuck's cd_mkdir and
    cp_create_destination): `cd new-site` -> `new-site`, `cp a backup/2024/` -> `backup/2024`, `sort a >
    sorted/a.txt` -> `sorted`. '' for a plain missing file, whose folder is there."""
    p = Path(path)
    if p.is_absolute() or ".." in p.parts or not p.parts or (cwd / p).exists():
        return ""
    ws = words(code)
    if path.endswith("/") or any(a == "cd" and b == path for a, b in zip(ws, ws[1:])):
        return str(p)
    parent = p.parent
    return "" if parent == Path() or (cwd / parent).exists() else str(parent)


def one_edit_away(word: str) -> set[str]:
    """Every name one deletion, swap, replacement or insertion from `word` (letters, digits, `._-`)."""
    if len(word) > MAX_WORD:
        return set()
    abc = set("abcdefghijklmnopqrstuvwxyz0123456789._-") | set(word)
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in cuts if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
    out |= {a + c + b[1:] for a, b in cuts if b for c in abc}
    out |= {a + c + b for a, b in cuts for c in abc}
    return out - {word, ""}


def render(hints: list[Hint]) -> str:
    """One line for the observation: `[hint: gti -> git, gio | note.txt -> notes.txt]` ('' for none)."""
    parts = []
    for h in (h for h in hints if h.shown):
        if h.what == "history":
            parts.append(f"worked before: {h.rights[0]}")
        elif h.what == "fix":
            parts.append("try " + ", ".join(h.rights[:RIGHTS]))
        else:
            parts.append(f"{h.wrong} -> {', '.join(r.replace(chr(10), ' ⏎ ') for r in h.rights[:RIGHTS])}")
    if not parts:
        return ""
    line = "[hint: " + " | ".join(parts)
    return (line[: MAX_LINE - 4] + "...]") if len(line) > MAX_LINE - 1 else line + "]"


def substitute(kind: str, code: str, hint: Hint) -> list[str]:
    """Candidate fixes from one hint: the command (or program) with the wrong word replaced by each right one.
    A word is replaced where it stands alone (`gti status` -> `git status`, never inside another word)."""
    if hint.what in ("history", "fix"):  # whole commands
        return list(hint.rights)
    if hint.what == "folder":  # made first, then the command as typed
        return [f"{r} && {code}" for r in hint.rights]
    if hint.what == "edit":  # whole lines, by their numbers: "line 3" or "lines 3-5" (of "report.py")
        (a, _, b), file = hint.wrong.split()[-1].partition("-"), hint.wrong.rsplit(" ", 2)[0]
        a, b = int(a), int(b or a)
        if kind == "bash":  # the script's lines changed by sed (its `c\` keeps the indentation), then the run
            esc = [r.replace("\\", "\\\\").replace("\n", "\\\n").replace("'", "'\\''") for r in hint.rights]
            where = f"{a}" if a == b else f"{a},{b}"
            return [f"sed -i '{where}c\\{e}' {shlex.quote(file)} && {code}" for e in esc]
        lines = code.split("\n")
        return ["\n".join(lines[: a - 1] + [r] + lines[b:]) for r in hint.rights]
    pattern = re.compile(r"(?<![\w./-])" + re.escape(hint.wrong) + r"(?![\w-])")
    if (
        hint.what == "command" and kind == "bash"
    ):  # where a command stands: `chmod +x a.sh && a.sh` -> `./a.sh`
        lead = r"(?:^|(?<=[|;&(])|(?<=\$\())\s*(?:(?:sudo|xargs|time|env|nohup|exec|watch)\s+)?"
        pattern = re.compile("(" + lead + ")" + re.escape(hint.wrong) + r"(?![\w./-])")
    if hint.what in ("python", "git") and kind == "python":
        pattern = re.compile(r"(?<![\w])" + re.escape(hint.wrong) + r"(?![\w])")
    out = []
    for right in hint.rights:
        new, n = pattern.subn(lambda m, r=right: (m.group(1) if m.groups() else "") + r, code)
        if n and new != code:
            out.append(new)
    return out


_USAGE: dict[str, str] = {}


def usage_in(sandbox):
    """`usage(tool)` for find_hints: the tool's `--help` as the sandbox prints it (first 20,000 characters,
    2 s at most), read once per tool and process. Only names on the sandbox's PATH are ever run."""
    import tempfile

    def usage(tool: str) -> str:
        if tool not in executables() or tool in BUILTINS or "/" in tool:
            return ""
        if tool not in _USAGE:
            with tempfile.TemporaryDirectory(prefix="iclaw-usage-") as d:
                r = sandbox.run("bash", f"{shlex.quote(tool)} --help 2>&1 | head -c 20000", d, timeout=2.0)
            _USAGE[tool] = r.stdout
        return _USAGE[tool]

    return usage

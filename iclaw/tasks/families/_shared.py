"""What several task families share (no FAMILY here: this module is not a family): small vocabularies, fixture
builders and name helpers. A family module imports from here, never from another family module; families that
share a fixture builder of their own live in one module (wrong_name.py, file_typo.py, long_option.py, ln.py).

Everything random comes from the rng a family's make() passes in; most names and contents come from
iclaw/tasks/pools.py, so they vary from draw to draw."""

from __future__ import annotations

import random
import shlex

from iclaw.tasks import pools

# ---------------------------------------------------------------------------------- lists in files

NAMES = """alice bob carol dave erin frank grace heidi ivan judy mallory nina oscar peggy quinn rupert sybil
trent ursula victor wendy""".split()
FRUITS = "apple banana cherry grape kiwi lemon mango melon orange peach pear plum".split()
CITIES = "berlin cairo delhi lagos lima madrid oslo paris quito rome seoul tokyo".split()
WORDS = "red green blue fast slow tiny huge quiet loud happy sunny cold warm bright dark soft".split()
# Fixture files of "one item per line" lists; the file name hints at the content.
LIST_FILES = {"names.txt": NAMES, "fruits.txt": FRUITS, "cities.txt": CITIES, "words.txt": WORDS}


def list_fixture(rng: random.Random, dupes: bool = True) -> tuple[str, list[str]]:
    """A file name and 4-8 lines drawn from its vocabulary, unsorted, sometimes with adjacent duplicates
    (so `uniq` and `sort` both change the output). Half the names carry a random suffix (`names_k3.txt`), as
    real file names do: a fix then has to copy the name from the request rather than recall it, the skill a
    policy needs to use any name it has only seen in its context (e.g. in what `ls` printed)."""
    base = rng.choice(sorted(LIST_FILES))
    vocab = LIST_FILES[base]
    fname = base
    if rng.random() < 0.5:
        stem, ext = base.split(".")
        fname = f"{stem}{rng.choice(['_', '-', ''])}{tag(rng)}.{ext}"
    lines = rng.sample(vocab, rng.randint(4, 7))
    if dupes and rng.random() < 0.6:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    return fname, lines


def typo(rng: random.Random, word: str) -> str:
    """One human-looking typo: swap two neighbours, drop a letter, or double one. Never returns `word`."""
    for _ in range(50):
        op = rng.choice(("swap", "drop", "double"))
        if op == "swap" and len(word) >= 2:
            i = rng.randrange(len(word) - 1)
            out = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif op == "drop" and len(word) >= 3:
            i = rng.randrange(len(word))
            out = word[:i] + word[i + 1 :]
        else:
            i = rng.randrange(len(word))
            out = word[: i + 1] + word[i] + word[i + 1 :]
        if out != word:
            return out
    raise ValueError(f"cannot make a typo of {word!r}")


def tag(rng: random.Random, n: int = 2) -> str:
    """A short random suffix such as '7b' that makes a file name unguessable without `ls`."""
    return "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(n))


# -------------------------------------------------------------------------- names, directories, fixtures

# Directory names people really use (plus pools.WORDS, drawn half the time).
DIRS = """src docs data notes logs backup config project photos reports old archive drafts music build site
assets lib scripts shared inbox work export uploads templates tests output results images misc""".split()


def body(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def fresh(rng: random.Random, make, taken: set[str]) -> str:
    """A name from make(rng) that is not in `taken` (and is added to it)."""
    for _ in range(50):
        name = make(rng)
        if name not in taken:
            taken.add(name)
            return name
    raise ValueError("no fresh name")


def file_name(rng: random.Random, taken: set[str], exts: list[str] | None = None) -> str:
    return fresh(rng, lambda r: pools.filename(r, exts or ["txt"]), taken)


def dir_name(rng: random.Random, taken: set[str]) -> str:
    return fresh(rng, lambda r: r.choice(DIRS) if r.random() < 0.5 else r.choice(pools.WORDS), taken)


def list_file(rng: random.Random, taken: set[str], exts: list[str] | None = None) -> tuple[str, list[str]]:
    """(a fresh file name, its 3-8 distinct lines)."""
    return file_name(rng, taken, exts), pools.lines(rng)


def content_for(rng: random.Random, name: str) -> str:
    """Content that fits the extension: a CSV for .csv, log lines for .log, else a list."""
    if name.endswith(".csv"):
        return pools.csv_text(rng)
    if name.endswith(".log"):
        return pools.log_text(rng)
    return body(pools.lines(rng))


def extra_files(rng: random.Random, taken: set[str], k: int, prefix: str = "") -> dict[str, str]:
    """k more small text files (under `prefix`), so a listing is a real listing."""
    out = {}
    for _ in range(k):
        name = file_name(rng, taken, pools.TEXT_EXTS[:4])
        out[prefix + name] = content_for(rng, name)
    return out


# ----------------------------------------- a file that is there under another name (suffix, case, typo)

STEMS = ["notes", "data", "report", "todo", "log", "names", "list", "items"]
EXTS = ["txt", "csv", "log", "md"]
FILE_COMMANDS = ["cat FILE", "wc -l FILE", "head -n 2 FILE", "sort FILE", "tail -n 1 FILE", "sort -r FILE"]
SUFFIXES = ["old", "new", "v2", "2024", "final", "bak", "copy", "draft"]


def random_name(rng: random.Random, stem: str) -> tuple[str, str]:
    """(the real name, the name a user would guess): notes_old.txt, notes.txt."""
    ext = rng.choice(EXTS)
    return f"{stem}_{rng.choice(SUFFIXES)}.{ext}", f"{stem}.{ext}"


FILE_CODES = [
    'print(open("FILE").read().strip())',
    'with open("FILE") as f:\n    print(len(f.readlines()))',
    'lines = open("FILE").read().split()\nprint(sorted(lines)[0])',
    'with open("FILE") as f:\n    print(f.readline().strip().upper())',
]


CASE_EXTS = ["txt", "csv", "md", "log"]


def recase(rng: random.Random, name: str) -> str:
    """The same name with another capitalisation (never equal to `name`)."""
    stem, ext = name.rsplit(".", 1)
    for _ in range(20):
        shape = rng.randrange(5)
        if shape == 0:
            out = f"{stem.capitalize()}.{ext}"
        elif shape == 1:
            out = f"{stem.upper()}.{ext}"
        elif shape == 2:
            out = f"{stem}.{ext.upper()}"
        elif shape == 3:
            out = f"{stem.upper()}.{ext.upper()}"
        else:  # every word capitalised: Sales_Report.csv
            out = f"{stem.title()}.{ext}"
        if out != name:
            return out
    raise ValueError(f"no other capitalisation of {name!r}")


def _key(name: str) -> str:
    return "".join(ch for ch in name.rsplit(".", 1)[0].lower() if ch.isalnum())


def others(rng: random.Random, target: str, k: int) -> dict[str, str]:
    """k more files whose stems differ from `target`'s even ignoring case and separators."""
    files: dict[str, str] = {}
    while len(files) < k:
        name = pools.filename(rng, CASE_EXTS)
        if _key(name) != _key(target):
            files[name if rng.random() < 0.6 else recase(rng, name)] = pools.text_content(rng)
    return files


# ----------------------------------------------------------------------------- directories and outcomes

MKDIR_DIRS = ["out", "build", "backup", "logs", "tmp2", "cache", "data", "site", "dist", "archive"]
MKDIR_SUBDIRS = ["logs", "old", "v1", "v2", "2024", "daily", "raw", "img", "tmp", "new"]


def content_test(path: str, lines: list[str]) -> str:
    """A shell test that passes iff `path` holds exactly these lines."""
    return f"printf '%s\\n' {' '.join(shlex.quote(x) for x in lines)} | cmp -s - {shlex.quote(path)}"

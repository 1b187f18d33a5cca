"""The file is there under another name: six families, shell and Python, on two fixture builders.

wrong-file / py-wrong-file (multi-turn): the name is wrong; the real one carries a suffix.

    fixture: notes_old.txt, todo_v2.md, data_bak.csv   broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory  reference: cat notes_old.txt
    code:    print(open("data.txt").read().strip())    FileNotFoundError: ... 'data.txt'

The suffix is one of eight everyday words (old, new, v2, ...), so a guess is right one time in eight and a
second guess after a failure one time in seven; running `ls` first and taking the one file whose stem
matches is right every time. Measured (2026-11-30, docs/LOG.md): with two random characters as the suffix the tiny policy
had p(copying them out of the listing) ~ 1e-9, so reward never came and GRPO had nothing to reinforce.

wrong-ext / py-wrong-ext (multi-turn): the file exists, under another extension.

    fixture: notes.md, todo_v2.csv       broken: cat notes.txt
    error:   cat: notes.txt: No such file or directory      reference: cat notes.md

The request names the right stem; only a listing says which of the other extensions it has (a guess is right
one time in three). As in wrong-file, `ls` first is what works.

listed-file / py-listed-file: the line lists the directory, then names a file that is not there; the listing
shows the real one.

    fixture: notes_old.txt, todo_v2.md         broken: ls && cat notes.txt
    output:  notes_old.txt / todo_v2.md / cat: notes.txt: No such file or directory
    reference: ls && cat notes_old.txt
    code:    import os / print(sorted(os.listdir("."))) / print(open("data.txt").read().strip())

Single-turn: the output in the request already holds the listing, so the fix copies the real name from it.
It is wrong-file (or, half the time, wrong-ext: `ls && cat notes.txt` -> `ls && cat notes.md`) with the look
already taken by the user: a demonstration that a listing is something to copy names from, suffix or
extension. wrong-file and wrong-ext themselves stay multi-turn -- there the policy has to decide to look.
Without the extension half, no demonstration ever changed an extension, and the policy that ran `ls` in a
wrong-ext task re-typed the old name after it: not one pass in any GRPO rollout (2026-11-30, docs/LOG.md).
"""

from __future__ import annotations

import random

from iclaw.tasks.families._shared import EXTS, FILE_CODES, FILE_COMMANDS, STEMS, list_fixture, random_name
from iclaw.tasks.family import Family, Instance


def suffix_fixture(rng: random.Random, n_max: int) -> tuple[str, str, dict[str, str]]:
    """(the real name, the guessed name, files): 2..n_max list files with suffixed names and distinct stems,
    so exactly one file matches the guessed name's stem."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    real, guessed = random_name(rng, stems[0])
    files = {}
    for stem in stems[1:]:
        _, lines = list_fixture(rng)
        files[random_name(rng, stem)[0]] = "\n".join(lines) + "\n"
    _, lines = list_fixture(rng)
    files[real] = "\n".join(lines) + "\n"
    return real, guessed, dict(sorted(files.items()))  # sorted: the order must not leak the target


def ext_fixture(rng: random.Random, n_max: int) -> tuple[str, str, dict[str, str]]:
    """(the real name, the guessed name, files): one file `stem.ext`, 1..n_max-1 others with other stems."""
    stems = rng.sample(STEMS, rng.randint(2, n_max))
    ext, guessed_ext = rng.sample(EXTS, 2)
    real, guessed = f"{stems[0]}.{ext}", f"{stems[0]}.{guessed_ext}"
    files = {}
    for stem in stems[1:]:
        name = random_name(rng, stem)[0] if rng.random() < 0.5 else f"{stem}.{rng.choice(EXTS)}"
        files[name] = "\n".join(list_fixture(rng)[1]) + "\n"
    files[real] = "\n".join(list_fixture(rng)[1]) + "\n"
    return real, guessed, dict(sorted(files.items()))


def renamed(fixture, n_max: int, templates: list[str]):
    """make() of a family: a FILE template from `templates` run on the guessed name; the fix uses the real one."""

    def make(rng: random.Random) -> Instance:
        real, guessed, files = fixture(rng, n_max)
        cmd = rng.choice(templates)
        return Instance(broken=cmd.replace("FILE", guessed), reference=cmd.replace("FILE", real), files=files)

    return make


wrong_file = renamed(suffix_fixture, 4, FILE_COMMANDS)
py_wrong_file = renamed(suffix_fixture, 3, FILE_CODES)
wrong_ext = renamed(ext_fixture, 4, FILE_COMMANDS)
py_wrong_ext = renamed(ext_fixture, 3, FILE_CODES)
LIST = 'import os\nprint(sorted(os.listdir(".")))\n'


def listed_file(rng: random.Random) -> Instance:
    inst = (wrong_file if rng.random() < 0.5 else wrong_ext)(rng)
    return Instance(broken=f"ls && {inst.broken}", reference=f"ls && {inst.reference}", files=inst.files)


def py_listed_file(rng: random.Random) -> Instance:
    inst = (py_wrong_file if rng.random() < 0.5 else py_wrong_ext)(rng)
    return Instance(broken=LIST + inst.broken, reference=LIST + inst.reference, files=inst.files)


SHELL, PYTHON = ("No such file or directory",), ("FileNotFoundError",)
FAMILIES = (
    Family(
        name="wrong-file",
        kind="bash",
        make=wrong_file,
        description="file name is wrong; the real one has a suffix (ls first, or guess twice)",
        multi_turn=True,
        error_mentions=SHELL,
        source="bash: No such file or directory (the name carries a suffix)",
    ),
    Family(
        name="py-wrong-file",
        kind="python",
        make=py_wrong_file,
        description="code opens a file that is not there; the real one has a suffix (ls first, or guess twice)",
        multi_turn=True,
        error_mentions=PYTHON,
        source="Python: FileNotFoundError (the name carries a suffix)",
    ),
    Family(
        name="wrong-ext",
        kind="bash",
        make=wrong_ext,
        description="the file exists under another extension (notes.txt -> notes.md; ls first)",
        multi_turn=True,
        error_mentions=SHELL,
        source="bash: No such file or directory (the extension differs)",
    ),
    Family(
        name="py-wrong-ext",
        kind="python",
        make=py_wrong_ext,
        description="code opens a file whose extension is wrong (data.txt -> data.csv; ls first)",
        multi_turn=True,
        error_mentions=PYTHON,
        source="Python: FileNotFoundError (the extension differs)",
    ),
    Family(
        name="listed-file",
        kind="bash",
        make=listed_file,
        description="the listing in the output shows the real name (ls && cat notes.txt -> notes_old.txt, notes.md)",
        error_mentions=SHELL,
        source="bash: No such file or directory after an ls (thefuck: no_such_file)",
    ),
    Family(
        name="py-listed-file",
        kind="python",
        make=py_listed_file,
        description="the program prints the listing, then opens a wrong name; copy the real one from the listing",
        error_mentions=PYTHON,
        source="Python: FileNotFoundError after a listing in the output",
    ),
)

"""Two families on one pool of (command, long option) pairs and one fixture builder, option_line().

flag-typo: a misspelled long option. `sort --numric-sort prices.txt` -> `sort --numeric-sort prices.txt`.

    broken: grep --ignore-cas MILK list.txt     error: grep: unrecognized option '--ignore-cas'
    reference: grep --ignore-case MILK list.txt

GNU tools answer "unrecognized option '--reverce'" and name the bad word, so the request determines the
fix. The pool is ~80 (command, long option) pairs of coreutils, grep, sed, ls, cut, tar, gzip, ... .
getopt accepts unambiguous prefixes (`--rev`), so a typo that only drops the tail would not fail: make()
never draws one, and the generator drops what still succeeds or fails another way. Source: GNU getopt_long.

long-opt-dash: a long option written with one dash. `sort -reverse f.txt` -> `sort --reverse f.txt`.

    broken: grep -ignore-case MILK list.txt     error: grep: invalid option -- 'g'
    reference: grep --ignore-case MILK list.txt

With one dash getopt reads the word as a bundle of short options (-i -g -n ...) and stops at the first
letter the tool does not know; the request shows a whole option word after a single dash, so the fix is the
second dash. Entries where the bundle happens to be valid (`ls -all`) or fails another way (`grep
-invert-match` takes `-e rt-match`) are left out of the pool. Source: getopt "invalid option" (a habit from
find/java/gcc, whose long options take one dash).
"""

from __future__ import annotations

import base64
import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, list_file, typo
from iclaw.tasks.family import Family, Instance

# command -> (option, rest of the line); "=V" after the option takes the value V. Placeholders: @F / @G list
# files, @C a csv, @B a base64 file, @U upper-cased word of @F, @W a word of @F, @D a directory, @K 1-3.
# fmt: off
OPTIONS = {
    "sort": [
        ("reverse", "@F"), ("unique", "@F"), ("numeric-sort", "@N"), ("ignore-case", "@F"),
        ("field-separator=,", "-k2 -n @C"), ("key=2", "-t, @C"), ("version-sort", "@F"),
        ("stable", "-k1,1 @F"), ("dictionary-order", "@F"),
    ],
    "uniq": [("count", "@F"), ("repeated", "@F"), ("unique", "@F"), ("ignore-case", "@F")],
    "wc": [("lines", "@F"), ("words", "@F"), ("chars", "@F"), ("bytes", "@G"), ("max-line-length", "@F")],
    "head": [("lines=@K", "@F"), ("bytes=@K", "@G")],
    "tail": [("lines=@K", "@F"), ("bytes=@M", "@G")],
    "cat": [
        ("number", "@F"), ("number-nonblank", "@F"), ("show-ends", "@G"), ("show-all", "@F"),
        ("squeeze-blank", "@F"),
    ],
    "grep": [
        ("count", "@W @F"), ("ignore-case", "@U @F"), ("invert-match", "@W @F"), ("line-number", "@W @F"),
        ("word-regexp", "@W @F"), ("only-matching", "@W @F"), ("files-with-matches", "@W @F @G"),
        ("fixed-strings", "@W @F"), ("max-count=1", "@W @F"), ("extended-regexp", "'@W|@V' @F"),
    ],
    "cut": [("delimiter=,", "-f1 @C"), ("fields=2", "-d, @C"), ("characters=1-3", "@F")],
    "ls": [
        ("all", ""), ("reverse", ""), ("almost-all", ""), ("recursive", ""), ("classify", ""),
        ("directory", "@D"),
    ],
    "mkdir": [("parents", "-v @D/@W/new"), ("verbose", "-p @D/@W")],
    "cp": [("verbose", "@F @W.txt"), ("recursive", "-v @D @W")],
    "mv": [("verbose", "@F @W.txt")],
    "rm": [("verbose", "@F"), ("recursive", "-v @D")],
    "ln": [("symbolic", "-v @F @W.txt"), ("verbose", "-s @F @W.txt")],
    "nl": [("body-numbering=a", "@F"), ("number-width=2", "@F")],
    "tr": [("delete", "aeiou < @F"), ("squeeze-repeats", "a-z < @F")],
    "paste": [("serial", "@F"), ("delimiters=,", "-s @F")],
    "fold": [("width=3", "@F")],
    "fmt": [("width=12", "@F")],
    "seq": [("equal-width", "8 1@M"), ("separator=,", "1 @M")],
    "base64": [("decode", "@B"), ("wrap=0", "@F")],
    "md5sum": [("tag", "@F")],
    "sha256sum": [("tag", "@F")],
    "basename": [("suffix=.txt", "@F"), ("multiple", "@D/@F @D/@G")],
    "stat": [("format=%s", "@F"), ("printf='%n\\n'", "@F")],
    "du": [("bytes", "@F"), ("apparent-size", "-b @G")],
    "file": [("brief", "@F"), ("mime-type", "@F")],
    "xargs": [("max-args=1", "echo < @F")],
    "tee": [("append", "@G < @F")],
    "expand": [("tabs=4", "@F")],
    "column": [("table", "-s, @C"), ("separator=,", "-t @C")],
    "numfmt": [("to=si", "@M000"), ("to=iec", "@M000")],
    "gzip": [("keep", "@F && ls"), ("stdout", "@F | gunzip")],
    "tar": [("verbose", "-cf @W.tar @F"), ("create", "-vf @W.tar @F")],
    "diff": [("brief", "@F @G"), ("ignore-case", "@F @G")],
    "touch": [("no-create", "@W.txt && ls")],
    "readlink": [("canonicalize", "@F")],
    "realpath": [("relative-to=@D", "@F")],
}
# fmt: on
NUMBERS = [str(n) for n in range(1, 200)]


def option_line(rng: random.Random, cmd: str, opt: str, rest: str) -> tuple[str, str, dict[str, str]]:
    """(the line with `--OPT` where the option word goes, the option word, the fixture) for one pool entry."""
    word, eq, value = opt.partition("=")
    taken: set[str] = set()
    f, lines = list_file(rng, taken)
    k = rng.randrange(len(lines))
    lines.insert(k, lines[k])  # one repeated line, so uniq's options all print something
    g, more = list_file(rng, taken)
    d, w, v = dir_name(rng, taken), *rng.sample(sorted(set(lines)), 2)
    files = {f: body(lines), g: body(more), f"{d}/{pools.filename(rng)}": pools.text_content(rng)}
    keys, vals = "@F @G @D @W @V @U @C".split(), [f, g, d, w, v, w.upper(), pools.filename(rng, ["csv"])]
    subs = dict(zip(keys, vals)) | {"@K": str(rng.randint(1, 3)), "@M": str(rng.randint(4, 9))}
    if "@C" in rest:
        files[subs["@C"]] = pools.csv_text(rng)
    if "@N" in rest:
        subs["@N"] = n = pools.filename(rng, ["txt"])
        files[n] = body(rng.sample(NUMBERS, rng.randint(4, 7)))
    if "@B" in rest:
        subs["@B"] = b = pools.stem(rng) + ".b64"
        files[b] = base64.b64encode(body(more).encode()).decode() + "\n"
    line = f"{cmd} --OPT{eq}{value} {rest}".strip()
    for key, s in subs.items():
        line = line.replace(key, s)
    return line, word, dict(sorted(files.items()))


def flag_typo(rng: random.Random) -> Instance:
    cmd = rng.choice(sorted(OPTIONS))
    line, word, files = option_line(rng, cmd, *rng.choice(OPTIONS[cmd]))
    bad = typo(rng, word)
    if word.startswith(bad):
        raise ValueError("a prefix of the option is still accepted")
    return Instance(broken=line.replace("OPT", bad), reference=line.replace("OPT", word), files=files)


# (command, option word) whose one-dash form is a valid bundle, or fails without "invalid option"
# fmt: off
SKIP = {
    ("sort", "ignore-case"), ("sort", "dictionary-order"), ("sort", "stable"), ("sort", "key"),
    ("sort", "field-separator"), ("expand", "tabs"), ("cut", "fields"), ("cut", "delimiter"),
    ("cut", "characters"), ("ls", "all"), ("grep", "files-with-matches"), ("grep", "word-regexp"),
    ("grep", "extended-regexp"), ("grep", "max-count"), ("grep", "invert-match"), ("grep", "fixed-strings"),
    ("grep", "line-number"), ("tar", "create"), ("file", "brief"), ("file", "mime-type"),
    ("basename", "suffix"), ("fmt", "width"), ("seq", "separator"), ("paste", "delimiters"),
    ("nl", "body-numbering"), ("nl", "number-width"), ("diff", "brief"), ("column", "separator"),
    ("fold", "width"), ("base64", "wrap"), ("realpath", "relative-to"),
}
# fmt: on
POOL = [(c, o, r) for c in sorted(OPTIONS) for o, r in OPTIONS[c] if (c, o.split("=")[0]) not in SKIP]


def long_opt_dash(rng: random.Random) -> Instance:
    cmd, opt, rest = rng.choice(POOL)
    line, word, files = option_line(rng, cmd, opt, rest)
    return Instance(
        broken=line.replace("--OPT", "-" + word), reference=line.replace("OPT", word), files=files
    )


FAMILIES = (
    Family(
        name="flag-typo",
        kind="bash",
        make=flag_typo,
        description="misspelled long option (sort --reverce -> --reverse)",
        error_mentions=("unrecognized option",),
        source="GNU getopt_long: unrecognized option",
    ),
    Family(
        name="long-opt-dash",
        kind="bash",
        make=long_opt_dash,
        description="long option with one dash (sort -reverse -> sort --reverse)",
        error_mentions=("invalid option",),
        source="getopt: invalid option (a single-dash long option)",
    ),
)

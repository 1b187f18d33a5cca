"""long-opt-dash: a long option written with one dash. `sort -reverse f.txt` -> `sort --reverse f.txt`.

    broken: grep -ignore-case MILK list.txt     error: grep: invalid option -- 'g'
    reference: grep --ignore-case MILK list.txt

With one dash getopt reads the word as a bundle of short options (-i -g -n ...) and stops at the first
letter the tool does not know; the request shows a whole option word after a single dash, so the fix is the
second dash. Entries where the bundle happens to be valid (`ls -all`) or fails another way (`grep
-invert-match` takes `-e rt-match`) are left out of the pool. Source: getopt "invalid option" (a habit from
find/java/gcc, whose long options take one dash).
"""

from __future__ import annotations

import random

from iclaw.tasks.families.flag_typo import OPTIONS, option_line
from iclaw.tasks.family import Family, Instance

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


def make(rng: random.Random) -> Instance:
    cmd, opt, rest = rng.choice(POOL)
    line, word, files = option_line(rng, cmd, opt, rest)
    return Instance(
        broken=line.replace("--OPT", "-" + word), reference=line.replace("OPT", word), files=files
    )


FAMILY = Family(
    name="long-opt-dash",
    kind="bash",
    make=make,
    description="long option with one dash (sort -reverse -> sort --reverse)",
    accept=lambda error, exit_code: "invalid option" in error,
    source="getopt: invalid option (a single-dash long option)",
)

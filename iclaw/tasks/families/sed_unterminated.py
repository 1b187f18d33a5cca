"""sed-unterminated: a sed `s` (or `y`) command missing its closing delimiter.

    broken: sed 's/milk/bread' list.txt
    error:  sed: -e expression #1, char 12: unterminated `s' command
    reference: sed 's/milk/bread/' list.txt

The fix appends the delimiter the command already uses (`/`, `|`, `#`, `:`, `,`). Also `y/abc/XYZ`, which
sed reports as "unterminated `y' command". Source: thefuck sed_unterminated_s.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, extra_files, list_file
from iclaw.tasks.family import Family, Instance

DELIMS = ["/", "/", "/", "/", "|", "#", ":", ","]
# how the sed call sits in the line (sed last in a pipeline, so its failure is the line's); @S the script
# fmt: off
FORMS = [
    "sed '@S' @F", "sed '@S' @F", "sed -e '@S' @F", "cat @F | sed '@S'", "sed '@S' < @F", "sed -E '@S' @F",
    "sed -i '@S' @F && cat @F", "sed \"@S\" @F", "sort @F | sed '@S'", "sed '1d;@S' @F",
]
# fmt: on


def make(rng: random.Random) -> Instance:
    taken: set[str] = set()
    f, lines = list_file(rng, taken, rng.choice([["txt"], pools.TEXT_EXTS]))
    d = rng.choice(DELIMS)
    w = rng.choice(lines)
    if rng.random() < 0.2:
        w = w[: rng.randint(1, max(1, len(w) - 1))]
    new = rng.choice([rng.choice(pools.WORDS), w.upper(), f"[{w}]", f"{w}_{rng.randint(1, 9)}", ""])
    shape = rng.randrange(6)
    if shape == 0 and new:  # `y/abc/xyz`: transliterate, unterminated the same way
        src = "".join(sorted(set(w)))[:4]
        dst = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in src).upper()
        script = f"y{d}{src}{d}{dst}{d}"
    elif shape == 1:  # an anchored pattern
        script = f"s{d}^{w}{d}{new}{d}"
    else:
        script = f"s{d}{w}{d}{new}{d}"
    if d in w + new:
        raise ValueError("the delimiter occurs in the text")
    form = rng.choice(FORMS)
    files = {f: body(lines)}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    line = form.replace("@F", f)
    return Instance(
        broken=line.replace("@S", script[:-1]),
        reference=line.replace("@S", script),
        files=dict(sorted(files.items())),
    )


FAMILY = Family(
    name="sed-unterminated",
    kind="bash",
    make=make,
    description="sed 's/a/b' missing its last delimiter -> sed 's/a/b/'",
    error_mentions=("unterminated",),
    source="thefuck: sed_unterminated_s",
)

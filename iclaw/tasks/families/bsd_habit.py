"""bsd-habit: a BSD/macOS spelling of a command that GNU/Linux does not accept; the fix is the GNU spelling.

    broken: tail -r notes.txt           error: tail: invalid option -- 'r'        reference: tac notes.txt
    broken: base64 -D key.b64           error: base64: invalid option -- 'D'      reference: base64 -d key.b64
    broken: md5 -r notes.txt            error: md5: command not found             reference: md5sum notes.txt
    broken: sed -i '' 's/a/b/' f && cat f    error: sed: can't read s/a/b/: No such file or directory
                                                                        reference: sed -i 's/a/b/' f && cat f
    broken: gsed 's/a/b/' f             error: gsed: command not found (Homebrew's g-prefixed GNU tools)

Only habits that really fail on GNU are here (`shasum`, `sed -E`, `du -d` work on both). Not `stat -f %z`
either: GNU stat then prints the file system's free block counts, so the recorded error would vary from run
to run. The fix is common knowledge of the two tool sets; the request names the habit.
Source: macOS/BSD man pages vs GNU coreutils.
"""

from __future__ import annotations

import base64
import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, dir_name, extra_files, list_file
from iclaw.tasks.family import Family, Instance

# (broken, reference); @F a list file, @B a base64 file of it, @T a table (words in columns), @D a
# directory holding @F, @W a word of @F, @X a replacement word, @K 1-3, @N 2-9
HABITS = [
    ("tail -r @F", "tac @F"),
    ("tail -r -n @K @F", "tac @F | head -n @K"),
    ("base64 -D @B", "base64 -d @B"),
    ("base64 -D < @B", "base64 -d < @B"),
    ("base64 -D -i @B", "base64 -d @B"),
    ("base64 -b 0 @F", "base64 -w 0 @F"),
    ("md5 @F", "md5sum @F"),
    ("md5 -r @F", "md5sum @F"),
    ("md5 -q @F", "md5sum @F | cut -d' ' -f1"),
    ("sha1 @F", "sha1sum @F"),
    ("sha256 @F", "sha256sum @F"),
    ("sha256 -r @F", "sha256sum @F"),
    ("sha512 @F", "sha512sum @F"),
    ("sed -i '' 's/@W/@X/' @F && cat @F", "sed -i 's/@W/@X/' @F && cat @F"),
    ("sed -i '' -e 's/@W/@X/g' @F && cat @F", "sed -i -e 's/@W/@X/g' @F && cat @F"),
    ("sed -i '' '/@W/d' @F && cat @F", "sed -i '/@W/d' @F && cat @F"),
    ("find . -depth 1 -name @F", "find . -maxdepth 1 -name @F"),
    ("find @D -depth 1 -name '*.txt'", "find @D -maxdepth 1 -name '*.txt'"),
    ("cut -w -f@K @T", "awk '{print $@K}' @T"),
    ("ditto @D @W && ls @W", "cp -R @D @W && ls @W"),
    ("gsed 's/@W/@X/' @F", "sed 's/@W/@X/' @F"),
    ("gsed -n '@Kp' @F", "sed -n '@Kp' @F"),
    ("gsort -u @F", "sort -u @F"),
    ("gsort -V @F", "sort -V @F"),
    ("ghead -n @K @F", "head -n @K @F"),
    ("gtail -n @K @F", "tail -n @K @F"),
    ("gtac @F", "tac @F"),
    ("gwc -l @F", "wc -l @F"),
    ("guniq -c @F", "uniq -c @F"),
    ("gcut -d' ' -f@K @T", "cut -d' ' -f@K @T"),
    ("greadlink -f @F", "readlink -f @F"),
    ("grealpath @D/@F", "realpath @D/@F"),
    ("gls @D", "ls @D"),
    ("gcat -n @F", "cat -n @F"),
    ("gseq @K @N", "seq @K @N"),
    ("gdu -b @F", "du -b @F"),
    ("gstat -c %s @F", "stat -c %s @F"),
    ("gbase64 -d @B", "base64 -d @B"),
    ("gmd5sum @F", "md5sum @F"),
]


def make(rng: random.Random) -> Instance:
    broken, ref = rng.choice(HABITS)
    taken: set[str] = set()
    f, lines = list_file(rng, taken)
    d = dir_name(rng, taken)
    w, x = rng.choice(lines), rng.choice(pools.WORDS)
    subs = {
        "@F": f,
        "@D": d,
        "@W": w if w not in taken and w != d else x,
        "@X": x.upper(),
        "@K": str(rng.randint(1, 3)),
        "@N": str(rng.randint(4, 9)),
        "@B": pools.stem(rng) + rng.choice([".b64", ".txt", ".base64"]),
        "@T": pools.filename(rng, ["txt", "tsv"]),
    }
    if subs["@B"] in taken or subs["@T"] in taken:
        raise ValueError("name clash")
    files = {f: body(lines), f"{d}/{f}": body(pools.lines(rng))}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    if "@B" in broken:
        files[subs["@B"]] = base64.b64encode(body(pools.lines(rng)).encode()).decode() + "\n"
    if "@T" in broken:
        files[subs["@T"]] = body([" ".join(pools.lines(rng, 3)) for _ in range(rng.randint(2, 5))])
    for k, v in subs.items():
        broken, ref = broken.replace(k, v), ref.replace(k, v)
    return Instance(broken=broken, reference=ref, files=dict(sorted(files.items())))


FAMILY = Family(
    name="bsd-habit",
    kind="bash",
    make=make,
    description="BSD/macOS spelling on GNU (tail -r -> tac, base64 -D -> -d, md5 -> md5sum, gsed -> sed)",
    source="BSD/macOS vs GNU coreutils (tail -r, base64 -D, md5, sed -i '', find -depth 1, gsed ...)",
)

"""shell-syntax: bash's grammar typed wrong in an if / for / while / test / assignment; the fix is the grammar.

    broken: if [ -f a.txt ] then cat a.txt; fi      error: syntax error near unexpected token `fi'
    reference: if [ -f a.txt ]; then cat a.txt; fi
    broken: [$n -gt 2] && echo many                 error: [3: command not found
    broken: total = 5 && echo $total                 error: total: command not found

The mistakes of people who write the occasional one-liner: a missing `;` before then / do / done / fi or
`}`, no space inside `[ ]` or after `if`, the wrong closing keyword, spaces around `=`. bash names the token
it choked on (or the word it took for a command), and the fix is fixed by the grammar, not by the files.
Source: bash: syntax error near unexpected token / unexpected end of file; [: missing `]'.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.families._shared import body, extra_files, list_file
from iclaw.tasks.family import Family, Instance

# (broken, reference); @F a list file, @W a word in it, @V a variable name, @K a count below @F's lines,
# @X a file extension present, @N 2-5, @M 6-9
FORMS = [
    ("if [ -f @F ] then cat @F; fi", "if [ -f @F ]; then cat @F; fi"),
    ("if [ -f @F ]; then cat @F fi", "if [ -f @F ]; then cat @F; fi"),
    ("if[ -f @F ]; then wc -l @F; fi", "if [ -f @F ]; then wc -l @F; fi"),
    (
        "if [ -f @F ]; then sort @F; else echo missing; done",
        "if [ -f @F ]; then sort @F; else echo missing; fi",
    ),
    ("if grep -q @W @F then echo found; fi", "if grep -q @W @F; then echo found; fi"),
    ("if [ -d @F ]; then ls @F; else head -n @K @F fi", "if [ -d @F ]; then ls @F; else head -n @K @F; fi"),
    ("for f in *.@X do wc -l $f; done", "for f in *.@X; do wc -l $f; done"),
    ("for f in *.@X; do head -n 1 $f done", "for f in *.@X; do head -n 1 $f; done"),
    ("for f in *.@X; wc -w $f; done", "for f in *.@X; do wc -w $f; done"),
    ("for f in *.@X; do wc -c $f; fi", "for f in *.@X; do wc -c $f; done"),
    ("for i in $(seq @N) do echo $i; done", "for i in $(seq @N); do echo $i; done"),
    ("for w in $(cat @F); do echo ${#w} done", "for w in $(cat @F); do echo ${#w}; done"),
    ("while read line do echo $line; done < @F", "while read line; do echo $line; done < @F"),
    ('while read line; do echo "- $line" done < @F', 'while read line; do echo "- $line"; done < @F'),
    ("[-f @F ] && cat @F", "[ -f @F ] && cat @F"),
    ("[ -f @F] && sort @F", "[ -f @F ] && sort @F"),
    ("[ -s @F ]; && wc -l @F", "[ -s @F ] && wc -l @F"),
    ("[$(wc -l < @F) -gt @K ] && echo long", "[ $(wc -l < @F) -gt @K ] && echo long"),
    ("@V=$(wc -l < @F); [$@V -gt @K] && echo $@V", "@V=$(wc -l < @F); [ $@V -gt @K ] && echo $@V"),
    ("@V = @N && echo $@V", "@V=@N && echo $@V"),
    ("@V = $(wc -l < @F) && echo $@V", "@V=$(wc -l < @F) && echo $@V"),
    ("@V= @W && echo $@V", "@V=@W && echo $@V"),
    ("export @V = @N && echo $@V", "export @V=@N && echo $@V"),
    ("show() { cat @F }; show", "show() { cat @F; }; show"),
    ("count() { wc -l < $1 }; count @F", "count() { wc -l < $1; }; count @F"),
    ("echo $((@N + @M)", "echo $((@N + @M))"),
    ("echo $(( @N * @M )", "echo $(( @N * @M ))"),
    ('echo "lines: $(wc -l < @F"', 'echo "lines: $(wc -l < @F)"'),
]


def make(rng: random.Random) -> Instance:
    broken, ref = rng.choice(FORMS)
    taken: set[str] = set()
    ext = rng.choice(["txt", "md", "log", "csv"])
    f, lines = list_file(rng, taken, [ext])
    files = {f: body(lines)}
    files.update(extra_files(rng, taken, rng.randint(0, 2)))
    var = rng.choice(
        ["n", "count", "total", "lines", "x", "size", "num"] + [w for w in pools.WORDS if len(w) <= 5]
    )
    subs = {
        "@F": f,
        "@W": rng.choice(lines),
        "@V": var,
        "@K": str(rng.randint(1, len(lines) - 1)),
        "@X": ext,
        "@N": str(rng.randint(2, 5)),
        "@M": str(rng.randint(6, 9)),
    }
    for k, v in subs.items():
        broken, ref = broken.replace(k, v), ref.replace(k, v)
    return Instance(broken=broken, reference=ref, files=dict(sorted(files.items())))


FAMILY = Family(
    name="shell-syntax",
    kind="bash",
    make=make,
    description="bash grammar typed wrong: no ; before then/do/done/fi/}, [$x], if[, x = 1 -> the grammar",
    source="bash: syntax error near unexpected token / unexpected end of file; [: missing `]'",
)

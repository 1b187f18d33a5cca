"""quote-special: a character the shell treats specially, left bare or inside the wrong quotes.

    echo 'it's done'              unexpected EOF while looking for matching `''   -> echo "it's done"
    echo total (3 items)          syntax error near unexpected token `('          -> echo "total (3 items)"
    grep salt & pepper menu.txt   pepper: command not found                        -> grep "salt & pepper" menu.txt
    awk -F, "{print $1, $2}" f    awk: syntax error at or near ,                   -> awk -F, '{print $1, $2}' f

An apostrophe ends a single-quoted string; ( ) and & are shell syntax; inside double quotes the shell expands
awk's $1 to nothing. The fix quotes the text the other way. (quote.py is a quote left open at the end of the
line; closing it there would not fix these: `echo 'it's done''` prints "its done".)
Source: bash quoting errors (unexpected EOF, syntax error near unexpected token, command not found).
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

CONTRACTIONS = [
    "it's",
    "don't",
    "can't",
    "won't",
    "I'm",
    "that's",
    "we're",
    "you're",
    "let's",
    "isn't",
    "here's",
]
PAIRS = [
    "salt & pepper",
    "fish & chips",
    "rock & roll",
    "bread & butter",
    "black & white",
    "sweet & sour",
    "cats & dogs",
    "research & development",
    "terms & conditions",
    "pros & cons",
    "q & a",
]
SMILEYS = [":)", ":(", ":-)", ";)", "(y)", "(ok)"]
ECHO = ["echo X", "printf '%s\\n' X", "echo X | tr a-z A-Z", "echo X | wc -c"]


def apostrophe(rng: random.Random) -> tuple[str, str]:
    name, word = rng.choice(pools.NAMES), rng.choice(pools.WORDS)
    text = rng.choice([f"{name}'s {word}", f"{rng.choice(CONTRACTIONS)} {word}", f"{word} is {name}'s"])
    cmd = rng.choice(ECHO)
    return cmd.replace("X", f"'{text}'"), cmd.replace("X", f'"{text}"')


def bare(rng: random.Random) -> tuple[str, str]:
    w, name, n = rng.choice(pools.WORDS), rng.choice(pools.NAMES), rng.randint(2, 99)
    text = rng.choice(
        [
            f"{w} ({rng.choice(pools.WORDS)})",
            f"{name} (admin)",
            f"total ({n} items)",
            f"{w} done {rng.choice(SMILEYS)}",
            f"thanks {name} {rng.choice(SMILEYS)}",
        ]
    )
    cmd = rng.choice(ECHO)
    return cmd.replace("X", text), cmd.replace("X", f'"{text}"')


def ampersand(rng: random.Random) -> tuple[str, str, dict[str, str]]:
    """grep for a phrase with a bare &: the shell runs `grep salt` in the background and `pepper f` fails.
    Not echo: a background `echo salt` prints or not depending on whether the sandbox is torn down first,
    which made generation differ between runs; a background grep reads /dev/null and prints nothing."""
    text = rng.choice(
        [
            rng.choice(PAIRS),
            f"{rng.choice(pools.NAMES)} & {rng.choice(pools.NAMES)}",
            f"{rng.choice(pools.WORDS)} & co",
        ]
    )
    fname = pools.filename(rng, ["txt", "md", "log"])
    rows = pools.lines(rng, rng.randint(2, 5)) + [f"{text} {rng.choice(pools.WORDS)}"]
    rng.shuffle(rows)
    files = {fname: "".join(r + "\n" for r in rows)}
    return f"grep {text} {fname}", f'grep "{text}" {fname}', files


def awk(rng: random.Random) -> tuple[str, str, dict[str, str]]:
    """awk's program in double quotes: $1 and $2 expand to nothing and the program no longer parses."""
    sep = rng.choice([",", " "])
    rows = [(n, rng.randint(1, 99)) for n in rng.sample(pools.NAMES, rng.randint(3, 6))]
    fname = f"{pools.stem(rng)}.{'csv' if sep == ',' else 'txt'}"
    opt = "-F, " if sep == "," else ""
    values = sorted({v for _, v in rows})
    if len(values) < 2:
        raise ValueError("need two distinct values for a comparison that selects some rows")
    cut = rng.choice(values[:-1])  # `$2 > cut` selects at least one row: the reference prints something
    prog = rng.choice(
        [
            "{print $1, $2}",
            "{print $2, $1}",
            f"$2 > {cut} {{print $1}}",
            f"$2 >= {cut} {{print $1, $2}}",
            "{s += $2} END {print s}",
            "{print NR, $1}",
            "{n += $2} END {print n}",
        ]
    )
    files = {fname: "".join(f"{n}{sep}{v}\n" for n, v in rows)}
    return f'awk {opt}"{prog}" {fname}', f"awk {opt}'{prog}' {fname}", files


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(4)
    if shape < 2:
        broken, reference = apostrophe(rng)
        return Instance(broken=broken, reference=reference)
    if shape == 2 and rng.randrange(8) >= 3:  # & keeps the share of these it had when it was echoed
        broken, reference = bare(rng)
        return Instance(broken=broken, reference=reference)
    broken, reference, files = awk(rng) if shape == 3 else ampersand(rng)
    return Instance(broken=broken, reference=reference, files=files)


FAMILY = Family(
    name="quote-special",
    kind="bash",
    make=make,
    description="""an apostrophe, ( ), & or awk's $1 quoted the wrong way (echo 'it's' -> echo "it's")""",
    error_mentions=("unexpected", "syntax error", "not found"),
    source="bash: quoting (unexpected EOF; syntax error near unexpected token; awk syntax error)",
)

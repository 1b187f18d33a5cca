"""Large pools the task families draw names and contents from, so two instances rarely share more than the
mistake itself. Everything is a plain list (seeded draws stay reproducible on every machine); families add
their own domain pools next to their generator."""

from __future__ import annotations

import builtins
import keyword
import random

# ~300 everyday English words: file stems, directory names, identifiers, list contents.
WORDS = """
able acid aged also area army away baby back ball band bank base bath bear beat bell belt best bird
blue boat body bone book boot born boss both bowl bulk burn bush busy cake call calm camp card care
cart case cash cast cell chat chip city clay club coal coat code cold cook cool copy core corn cost
crew crop dark data date dawn deal dear debt deck deep desk dial diet disk dock door dose down draw
drop drum duck dust duty earn east easy edge face fact fair farm fast fear feed file film fine fire
firm fish flag flat flow folk food foot form fort free frog fuel full fund gain game gate gear gift
girl glad goal gold golf good gray grid grow half hall hand hard harm hawk head heat help herb hero
high hill hint hole home hook hope horn host hour huge idea inch iron item jazz join joke jump jury
keep kick kind king kite knee lake lamp land lane last lava lawn lead leaf lean left lens life lift
lime line link lion list load loan lock loft long loop lord loud love luck mail main make mall many
mark mask mass meal meat menu mild mile milk mill mind mint mode moon more moss most move much nail
name navy neck need nest news next nice node noon nose note oven pack page pain pair palm park part
pass path peak pear pine pink pipe plan play plot plum poem poet pole pond pony pool port post pure
quiz race rack rail rain rank rate read rent rest rice rich ride ring rise risk road rock role roof
room root rope rose ruby rule rush safe sage sail salt sand save seal seat seed self ship shoe shop
show side sign silk site size skin slot snow soap sock soft soil song sort soup spot star stem step
stop suit swan tail tale talk tank tape task team tent term test text tide tile time tone tool town
tree trip tube tune turn unit user vase verb view vote wage walk wall wave weed week well west wind
wine wing wire wise wolf wood wool word work yard yarn year zero zone
apple banana cherry grape lemon mango melon orange peach berlin cairo delhi lagos madrid oslo paris
rome seoul tokyo budget invoice report summary backup config notes todo draft ideas photos music
recipe travel health garden kitchen project server client module widget sensor ticket order
""".split()

NAMES = """
alice bob carol dave erin frank grace heidi ivan judy mallory nina oscar peggy quinn rupert sybil trent
ursula victor wendy aaron bella chloe diego emma felix gina hugo iris jack kara liam maya noah olga
pablo rosa sam tara uma vera will xena yuri zoe omar lena ravi sofia tomas anya bruno clara dario
""".split()

# Extensions people really use, and the near-misses they type instead.
TEXT_EXTS = ["txt", "md", "csv", "log", "json", "cfg", "ini", "tsv", "yaml", "conf"]


def stem(rng: random.Random) -> str:
    """A realistic file stem: one or two words, sometimes a number or date, joined the ways people do."""
    shape = rng.randrange(5)
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    if shape == 0:
        return a
    if shape == 1:
        return f"{a}{rng.choice('_-')}{b}"
    if shape == 2:
        return f"{a}{rng.choice(['', '_', '-'])}{rng.randint(1, 99)}"
    if shape == 3:
        return f"{a}_{rng.randint(2019, 2026)}"
    return f"{a}{b.capitalize()}" if rng.random() < 0.3 else f"{a}_{b}"


def filename(rng: random.Random, exts: list[str] | None = None) -> str:
    return f"{stem(rng)}.{rng.choice(exts or TEXT_EXTS)}"


def lines(rng: random.Random, k: int | None = None, pool: list[str] | None = None) -> list[str]:
    """k distinct lines of list-like content (one item per line)."""
    pool = pool or rng.choice([WORDS, NAMES])
    return rng.sample(pool, k or rng.randint(3, 8))


def csv_text(rng: random.Random) -> str:
    """A small CSV with a header: name,score,city rows."""
    cols = rng.choice([["name", "score"], ["name", "age", "city"], ["item", "qty", "price"]])
    rows = [",".join(cols)]
    for _ in range(rng.randint(2, 6)):
        row = []
        for c in cols:
            if c in ("name",):
                row.append(rng.choice(NAMES))
            elif c in ("item", "city"):
                row.append(rng.choice(WORDS))
            elif c == "price":
                row.append(f"{rng.randint(1, 99)}.{rng.randint(0, 99):02d}")
            else:
                row.append(str(rng.randint(1, 99)))
        rows.append(",".join(row))
    return "\n".join(rows) + "\n"


def log_text(rng: random.Random) -> str:
    """A few log lines: date, level, message."""
    out = []
    for i in range(rng.randint(3, 7)):
        level = rng.choice(["INFO", "INFO", "WARN", "ERROR", "DEBUG"])
        out.append(
            f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)} 1{i}:0{rng.randint(0, 9)} {level} "
            f"{rng.choice(WORDS)} {rng.choice(['started', 'stopped', 'failed', 'ok', 'retry'])}"
        )
    return "\n".join(out) + "\n"


def text_content(rng: random.Random) -> str:
    """Content for a text file: a list, a CSV or a log, drawn at random."""
    kind = rng.randrange(3)
    if kind == 0:
        return "\n".join(lines(rng)) + "\n"
    if kind == 1:
        return csv_text(rng)
    return log_text(rng)


def identifier(rng: random.Random) -> str:
    """A Python-style variable name: word or word_word."""
    while True:
        a = rng.choice(WORDS)
        name = a if rng.random() < 0.5 else f"{a}_{rng.choice(WORDS)}"
        if not keyword.iskeyword(name) and not hasattr(builtins, name):
            return name

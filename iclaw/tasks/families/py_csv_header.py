"""py-csv-header (multi-turn): the program reads a CSV column by a header name the file does not have.

    fixture: orders.csv         customer,cost
                                dave,12
    code:    import csv
             for row in csv.DictReader(open("orders.csv")):
                 print(row["price"])
    error:   KeyError: 'price'

The file names the column differently (cost, amount, unit_price ... for price), and nothing in the request
says which: the agent looks (`cat orders.csv` / `head -1 orders.csv`) and copies the real header.
Source: Python: KeyError (csv.DictReader).
"""

from __future__ import annotations

import random
import re

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance
from iclaw.tasks.vary import vary_text

# Header synonyms people really use: the program says one, the file another.
LABELS = [
    ["name", "full_name", "customer", "username", "person", "client", "Name"],
    ["city", "town", "location", "place", "region", "City"],
]
NUMBERS = [
    ["price", "cost", "amount", "unit_price", "total", "Price", "price_usd"],
    ["score", "points", "grade", "marks", "result", "Score"],
    ["qty", "quantity", "count", "units", "Qty", "n_items"],
    ["age", "years", "Age", "age_years"],
]
STEMS = ["data", "sales", "orders", "people", "scores", "report", "export", "list", "table", "records"]

CODES = [
    'import csv\nwith open("F") as f:\n    for row in csv.DictReader(f):\n        print(row["K"])',
    'import csv\nrows = list(csv.DictReader(open("F")))\nprint(sum(int(r["K"]) for r in rows))',
    'import csv\nwith open("F") as f:\n    rows = list(csv.DictReader(f))\nprint(max(int(r["K"]) for r in rows))',
    'import csv\nfor row in csv.DictReader(open("F")):\n    print(row["L"], row["K"])',
    'import csv\nrows = list(csv.DictReader(open("F")))\nbest = max(rows, key=lambda r: int(r["K"]))\nprint(best["L"])',
]


def make(rng: random.Random) -> Instance:
    label_group, num_group = rng.choice(LABELS), rng.choice(NUMBERS)
    label = rng.choice(label_group)
    wrong_num, real_num = rng.sample(num_group, 2)
    code = rng.choice(CODES)
    rows = [f"{label},{real_num}"]
    pool = pools.NAMES if label_group is LABELS[0] else pools.WORDS
    for who in rng.sample(pool, rng.randint(2, 5)):
        rows.append(f"{who},{rng.randint(1, 99)}")
    if rng.random() < 0.4:  # a third column the program does not use
        rows = [
            r + ("," + rng.choice(["id", "note", "date", "ok"]) if i == 0 else f",{i}")
            for i, r in enumerate(rows)
        ]
    fname = (
        rng.choice(STEMS)
        + rng.choice(["", "_" + str(rng.randint(1, 12)), "_" + str(rng.randint(2020, 2026))])
        + ".csv"
    )
    files = {fname: "\n".join(rows) + "\n"}
    for _ in range(rng.randint(0, 2)):  # other files around it
        files.setdefault(pools.filename(rng, ["txt", "md", "log"]), "\n".join(pools.lines(rng)) + "\n")
    code = code.replace("F", fname).replace('"L"', f'"{label}"')
    return Instance(
        broken=code.replace('"K"', f'"{wrong_num}"'),
        reference=code.replace('"K"', f'"{real_num}"'),
        files=files,
        look=f"head -n 3 {fname}" if " " not in fname else f"head -n 3 '{fname}'",  # the header shows it
    )


def vary(files: dict[str, str], rng: random.Random) -> dict[str, str]:
    """The generic variation (the header kept, the names renamed, a row more) and every number of the rows
    moved: the programs print a column's max or the name beside it, which a copied row alone leaves as it
    was. The header is what the task is about, so it stays exactly as it is."""
    shift = rng.randint(1, 9)
    out = {}
    for path, text in vary_text(files, rng).items():
        if path.endswith(".csv"):
            head, _, rows = text.partition("\n")
            text = head + "\n" + re.sub(r"\d+", lambda m: str(int(m.group()) + shift), rows)
        out[path] = text
    return out


FAMILY = Family(
    name="py-csv-header",
    kind="python",
    make=make,
    description="code reads a CSV column by a header the file lacks; look at the file's header line first",
    multi_turn=True,
    error_mentions=("KeyError",),
    source="Python: KeyError (csv.DictReader)",
    vary=vary,
)

"""py-json-api: the json function for a string used on a file, or the other way round; a set dumped.

    json.loads(f)             TypeError: the JSON object must be str, bytes or bytearray, not TextIOWrapper -> json.load(f)
    json.load(text)           AttributeError: 'str' object has no attribute 'read'    -> json.loads(text)
    json.load("data.json")    AttributeError: 'str' object has no attribute 'read'    -> json.load(open("data.json"))
    json.dumps({"a", "b"})    TypeError: Object of type set is not JSON serializable  -> json.dumps(sorted(...))

load/dump take a file, loads/dumps a string. A set has no JSON form: sorted() makes a list whose order
does not depend on hashing. Source: Python TypeError / AttributeError (json module).
"""

from __future__ import annotations

import json
import random
import re

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance
from iclaw.tasks.vary import dump_json, vary_text

JSON_STEMS = ["config", "settings", "data", "users", "scores", "items", "prices", "stats", "meta"]


def _fixture(rng: random.Random) -> tuple[str, str, str]:
    """(file name, its JSON text, an expression of `data` to print)."""
    name = f"{rng.choice(JSON_STEMS + [pools.stem(rng)])}.json"
    keys = rng.sample(pools.WORDS, rng.randint(2, 4))
    if rng.random() < 0.5:
        data = {k: rng.choice([rng.randint(0, 999), rng.choice(pools.WORDS + pools.NAMES)]) for k in keys}
        use = rng.choice([f'data["{rng.choice(keys)}"]', "sorted(data)", "len(data)"])
    else:
        data = [{"name": rng.choice(pools.NAMES), "n": rng.randint(1, 99)} for _ in keys]
        use = rng.choice(['data[0]["name"]', "len(data)", '[d["n"] for d in data]', 'data[-1]["n"]'])
    return name, json.dumps(data, indent=rng.choice([None, 2])) + "\n", use


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(4)
    if shape == 3:  # a set
        v = pools.identifier(rng)
        items = rng.sample(pools.WORDS + pools.NAMES, rng.randint(2, 5))
        if rng.random() < 0.5:
            lit = "{" + ", ".join(f'"{w}"' for w in items) + "}"
            code, expr = f"{v} = {lit}\nprint(json.dumps(@))", v
        else:
            items += rng.sample(items, 1)
            code, expr = (
                f'{v} = {items!r}\nprint(json.dumps({{"{rng.choice(pools.WORDS)}": @}}))',
                f"set({v})",
            )
        code = "import json\n" + code
        return Instance(broken=code.replace("@", expr), reference=code.replace("@", f"sorted({expr})"))
    name, text, use = _fixture(rng)
    f = rng.choice(["f", "fh", "fp", "src"])
    if shape == 0:
        code = f'import json\nwith open("{name}") as {f}:\n    data = json.@({f})\nprint({use})'
        broken, fixed = code.replace("@", "loads"), code.replace("@", "load")
    elif shape == 1:
        t = rng.choice(["text", "raw", "s", "content"])
        code = f'import json\n{t} = open("{name}").read()\ndata = json.@({t})\nprint({use})'
        broken, fixed = code.replace("@", "load"), code.replace("@", "loads")
    else:
        broken = f'import json\ndata = json.load("{name}")\nprint({use})'
        fixed = f'import json\ndata = json.load(open("{name}"))\nprint({use})'
    return Instance(broken=broken, reference=fixed, files={name: text})


def vary(files: dict[str, str], rng: random.Random) -> dict[str, str]:
    """The generic variation (words renamed, lists one longer), every number moved and one key more: the
    programs print values (data["k"], data[-1]["n"]), half of them numbers the generic one keeps, or the keys
    (sorted(data), len(data)), which it keeps too."""
    shift = rng.randint(1, 9)
    out = {}
    for path, text in vary_text(files, rng).items():  # keys hold no letters-only words to keep
        try:
            data = json.loads(re.sub(r"\d+", lambda m: str(int(m.group()) + shift), text))
        except ValueError:  # not the JSON file (the program itself, in a shell view of the task)
            out[path] = text
            continue
        if isinstance(data, dict):
            data[rng.choice([w for w in pools.WORDS if w not in data])] = shift
        out[path] = dump_json(data, like=text)
    return out


FAMILY = Family(
    name="py-json-api",
    kind="python",
    make=make,
    description="json.loads(file) / json.load(str) / json.dumps(set) -> load / loads / sorted()",
    error_mentions=("JSON object must be", "no attribute 'read'", "not JSON serializable"),
    source="Python: TypeError (the JSON object must be str ...) / Object of type set is not JSON serializable",
    vary=vary,
)

"""py-json-repair (outcome-only): json.load fails on a data file that is almost JSON -- a trailing comma
(hand-edited), or single quotes (written with str(dict) instead of json.dump). The data file must be fixed.

    config.json: {'port': 8080, 'host': 'oslo'}       code: cfg = json.load(open("config.json"))
    json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)

Fix: rewrite the file as JSON. Both mistakes are valid Python literals, so one fix covers them:
    data = ast.literal_eval(open("config.json").read()); json.dump(data, open("config.json", "w"))
The test loads the file with json and compares the data. Source: Python json.JSONDecodeError.
"""

from __future__ import annotations

import json
import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

STEMS = ["config", "settings", "data", "users", "scores", "prefs", "options", "profile", "state", "meta"]
KEYS = ["name", "host", "port", "user", "mode", "level", "city", "color", "size", "limit", "owner", "tags"]
SOLUTION = (
    'import ast\nimport json\ndata = ast.literal_eval(open("@N").read())\n'
    'with open("@N", "w") as f:\n    json.dump(data, f)'
)


def _broken_text(rng: random.Random, data: dict) -> str:
    lists = [v for v in data.values() if isinstance(v, list)]
    shape = rng.randrange(3 if lists else 2)
    if shape == 0:  # Python's repr: single quotes
        return repr(data) + "\n"
    if shape == 1:  # a trailing comma after the last member, in a pretty-printed file
        text = json.dumps(data, indent=rng.choice([2, 4]))
        return text[: text.rindex("\n")] + "," + text[text.rindex("\n") :] + "\n"
    inner = json.dumps(lists[0])  # a trailing comma in a list, in a one-line file
    return json.dumps(data).replace(inner, inner[:-1] + ",]", 1) + "\n"


def make(rng: random.Random) -> Instance:
    keys = rng.sample(KEYS, rng.randint(2, 4))
    data: dict = {}
    for k in keys:
        if k in ("port", "level", "size", "limit"):
            data[k] = rng.randint(1, 9999)
        elif k == "tags":
            data[k] = rng.sample(pools.WORDS, rng.randint(1, 3))
        else:
            data[k] = rng.choice(pools.WORDS + pools.NAMES)
    name = f"{rng.choice(STEMS + [pools.stem(rng)])}.json"
    text = _broken_text(rng, data)
    v, key = rng.choice(["cfg", "data", "conf", "settings", "d"]), rng.choice(keys)
    broken = f'import json\n{v} = json.load(open("{name}"))\nprint({v}["{key}"])'
    if rng.random() < 0.4:
        broken = f'import json\nwith open("{name}") as f:\n    {v} = json.load(f)\nprint({v}["{key}"])'
    test = f"python3 -c 'import json; assert json.load(open(\"{name}\")) == {json.dumps(data)}'"
    return Instance(broken=broken, files={name: text}, test=test, solution=SOLUTION.replace("@N", name))


FAMILY = Family(
    name="py-json-repair",
    kind="python",
    make=make,
    description="data file has a trailing comma / single quotes -> rewrite it as JSON",
    outcome_only=True,
    error_mentions=("JSONDecodeError",),
    source="Python: json.JSONDecodeError (Expecting property name enclosed in double quotes)",
)

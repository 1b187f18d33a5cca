"""py-json-write (outcome-only): a program meant to save its data as JSON gets the file handling wrong.

    json.dump(f, data)              TypeError: Object of type TextIOWrapper is not JSON serializable
    json.dump(data, "result.json")  AttributeError: 'str' object has no attribute 'write'
    open("result.json") + dump      FileNotFoundError: [Errno 2] No such file or directory: 'result.json'
    f.write(data)                   TypeError: write() argument must be str, not dict
    json.dumps(data, f)             TypeError: dumps() takes 1 positional argument but 2 were given

Fix: `with open("result.json", "w") as f: json.dump(data, f)`. The test loads the file and compares it with
the data, so any way of writing that JSON passes. Source: Python TypeError / AttributeError (json.dump).
"""

from __future__ import annotations

import json
import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

OUT = ["result.json", "out.json", "summary.json", "counts.json", "report.json", "output.json", "totals.json"]
GOOD = 'with open("@O", "w") as @f:\n    json.dump(@d, @f)'
BAD = [
    'with open("@O", "w") as @f:\n    json.dump(@f, @d)',
    'json.dump(@d, "@O")',
    'with open("@O") as @f:\n    json.dump(@d, @f)',
    'with open("@O", "w") as @f:\n    @f.write(@d)',
    'with open("@O", "w") as @f:\n    json.dumps(@d, @f)',
]


def _data(rng: random.Random) -> tuple[str, str, object]:
    """(variable, code that builds it, its value)."""
    v = pools.identifier(rng)
    words = rng.sample(pools.WORDS + pools.NAMES, rng.randint(2, 4))
    shape = rng.randrange(3)
    if shape == 0:
        value = {w: rng.randint(0, 99) for w in words}
        return v, f"{v} = {json.dumps(value)}", value
    if shape == 1:
        return v, f"{v} = {{w: len(w) for w in {words!r}}}", {w: len(w) for w in words}
    key = rng.choice(["names", "items", "tags", "users", "files"])
    return (
        v,
        f'{v} = {{"{key}": sorted({words!r}), "n": {len(words)}}}',
        {key: sorted(words), "n": len(words)},
    )


def make(rng: random.Random) -> Instance:
    v, build, value = _data(rng)
    out = rng.choice(OUT + [f"{pools.stem(rng)}.json"])
    f = rng.choice(["f", "fh", "fp", "out"])

    def fill(code: str) -> str:
        return "import json\n" + build + "\n" + code.replace("@O", out).replace("@f", f).replace("@d", v)

    test = f"python3 -c 'import json; assert json.load(open(\"{out}\")) == {json.dumps(value)}'"
    return Instance(broken=fill(rng.choice(BAD)), test=test, solution=fill(GOOD))


FAMILY = Family(
    name="py-json-write",
    kind="python",
    make=make,
    description="json.dump(f, data) / no 'w' / f.write(dict) -> json.dump(data, f) on a 'w' file",
    outcome_only=True,
    source="Python: TypeError / AttributeError (json.dump)",
)

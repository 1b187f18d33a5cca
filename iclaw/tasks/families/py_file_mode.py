"""py-file-mode: a file opened in the wrong mode for what the code then does with it.

    with open("log.txt") as f: f.write("x")        io.UnsupportedOperation: not writable       -> "w"
    with open("notes.txt", "w") as f: f.read()     io.UnsupportedOperation: not readable       -> "r"
    open("data.csv", "rb").read().split(",")       TypeError: a bytes-like object is required, not 'str'  -> "r"
    data.count("x") on bytes                     TypeError: argument should be integer or bytes-like object ...

Fix: the mode. The file to write to exists and is empty, so "w" and "a" both give the reference's output;
("w" on a file the code reads would truncate it: the verifier runs every candidate in a fresh fixture).
Source: Python io.UnsupportedOperation / TypeError.
"""

from __future__ import annotations

import random

from iclaw.tasks import pools
from iclaw.tasks.family import Family, Instance

READS = [  # code reading the file @F through f (@M marks the mode argument)
    'with open("@F"@M) as f:\n    print(f.read().strip())',
    'with open("@F"@M) as f:\n    print(len(f.readlines()))',
    'with open("@F"@M) as f:\n    for line in f:\n        print(line.strip().upper())',
    'f = open("@F"@M)\nprint(f.readline().strip())\nf.close()',
]
BYTES = [  # str operations on the content of @F opened with mode @M (rb in the broken version)
    'data = open("@F"@M).read()\nprint(data.split("\\n")[0])',
    'data = open("@F"@M).read()\nprint(data.count("@S"))',
    'data = open("@F"@M).read()\nprint(data.replace("@S", "@T").strip())',
    'with open("@F"@M) as f:\n    print("@S" in f.read())',
    'for line in open("@F"@M):\n    print(line.strip().split(","))',
]


def make(rng: random.Random) -> Instance:
    shape = rng.randrange(3)
    if shape == 0:  # writing to a file opened for reading
        name = pools.filename(rng, ["txt", "log", "md", "csv"])
        items = pools.lines(rng, rng.randint(1, 3))
        var = rng.choice(["f", "out", "fh", "log"])
        if rng.random() < 0.5:
            body = "".join(f'\n    {var}.write("{w}\\n")' for w in items)
        else:
            body = f'\n    for w in {items!r}:\n        {var}.write(w + "\\n")'
        code = f'with open("{name}"@M) as {var}:{body}\nprint(open("{name}").read().strip())'
        broken = code.replace("@M", rng.choice(["", ', "r"']))
        return Instance(broken=broken, reference=code.replace("@M", ', "w"'), files={name: ""})
    name = pools.filename(rng, ["txt", "log", "md", "csv"] if shape == 1 else ["txt", "csv", "log"])
    content = pools.text_content(rng)
    if shape == 1:  # reading a file opened for writing
        code = rng.choice(READS)
        broken = code.replace("@M", rng.choice([', "w"', ', "w"', ', "a"']))
        fixed = code.replace("@M", rng.choice(["", ', "r"']))
    else:  # text operations on bytes
        words = sorted(set(content.replace(",", " ").split()))
        code = rng.choice(BYTES).replace("@T", rng.choice(pools.WORDS)).replace("@S", rng.choice(words))
        broken, fixed = code.replace("@M", ', "rb"'), code.replace("@M", rng.choice(["", ', "r"']))
    return Instance(
        broken=broken.replace("@F", name), reference=fixed.replace("@F", name), files={name: content}
    )


FAMILY = Family(
    name="py-file-mode",
    kind="python",
    make=make,
    description="open() mode wrong for the use: 'r' to write, 'w' to read, 'rb' for text",
    error_mentions=("UnsupportedOperation", "bytes-like object"),
    source="Python: io.UnsupportedOperation (not writable / not readable)",
)

"""Writing files so that a reader never sees half of one: the one atomic writer (task files, data-prep
outputs, summaries and trainer bookkeeping), and JSON through it."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` (str as UTF-8) via a hidden temporary sibling + fsync + rename: `path` is replaced whole,
    or not at all."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)  # the rename itself survives a crash once the directory is synced
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, obj: object) -> None:
    """`obj` as indented JSON (anything JSON does not know, as its str), atomically, creating the parent
    directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(obj, indent=2, default=str) + "\n")

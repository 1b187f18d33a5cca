"""Writing result files: summaries, trainer bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path


def write_json(path: Path, obj) -> None:
    """`obj` as indented JSON (anything JSON does not know, as its str), creating the parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str) + "\n")

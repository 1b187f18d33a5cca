"""The family taxonomy, as `iclaw tasks list` shows it and docs/TASKS.md records it: per family its name, kind,
type (single-turn / look-first / outcome-only), the mistake and its fix (the description), an example (the
broken command of one seeded instance) and where the mistake comes from (the source).

    iclaw tasks list --markdown    # the table of docs/TASKS.md
"""

from __future__ import annotations

import random

from iclaw.tasks.family import Family

EXAMPLE_CHARS = 48


def family_type(f: Family) -> str:
    """single-turn: the error determines the fix; look-first: one look around (`ls`) does; outcome-only:
    a test judges the result (there is no reference output to match)."""
    kinds = (["look-first"] if f.multi_turn else []) + (["outcome-only"] if f.outcome_only else [])
    return " + ".join(kinds) or "single-turn"


def example(f: Family, chars: int = EXAMPLE_CHARS) -> str:
    """One line of one seeded instance's broken command (made, not run), cut to `chars`: the first line, or
    for a program whose first line is also in its fix (`import json`), the first line the fix changes."""
    rng = random.Random(f"iclaw-example:{f.name}")
    for _ in range(100):
        try:
            inst = f.make(rng)
        except ValueError:
            continue
        except Exception as e:  # the list must still print; the generator names the family properly
            return f"(make() failed: {type(e).__name__})"
        lines = inst.broken.strip().splitlines() or [""]
        fix = set((inst.reference or inst.solution or "").splitlines())
        i = next((k for k, line in enumerate(lines) if line not in fix), 0)
        # Leading whitespace stays (an indentation mistake is in it); a tab shows as \t.
        text = lines[i].rstrip().replace("\t", "\\t")
        line = ("... " if i else "") + text + (" ..." if i < len(lines) - 1 else "")
        return line if len(line) <= chars else line[: chars - 3] + "..."
    return "(no instance)"


COLUMNS = ("family", "kind", "type", "mistake -> fix", "example", "source")


def rows(families: dict[str, Family]) -> list[tuple[str, ...]]:
    return [(f.name, f.kind, family_type(f), f.description, example(f), f.source) for f in families.values()]


def _cell(text: str, code: bool = False) -> str:
    # One line (code keeps its spaces: an indentation mistake is in them); a pipe would end the cell.
    text = " ".join(text.splitlines()) if code else " ".join(text.split())
    text = text.replace("|", "\\|")
    if not code or not text.strip():
        return text
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(families: dict[str, Family]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for name, kind, typ, desc, ex, source in rows(families):
        cells = [_cell(name, code=True), kind, typ, _cell(desc), _cell(ex, code=True), _cell(source)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary(families: dict[str, Family]) -> str:
    fams = list(families.values())
    n = {
        "shell": sum(f.kind == "bash" for f in fams),
        "python": sum(f.kind == "python" for f in fams),
        "look-first": sum(f.multi_turn for f in fams),
        "outcome-only": sum(f.outcome_only for f in fams),
    }
    return f"{len(fams)} families: " + ", ".join(f"{v} {k}" for k, v in n.items())

"""The task format: one JSON object per line, written by our generator, by `iclaw tasks mine`, or by hand.

    {"id": "...", "kind": "bash" | "python", "family": "...", "files": {"rel/path": "content"},
     "broken": "...", "reference": "...", "test": "..."}

plus fields we fill in ourselves (all optional on input): error, broken_exit, split, multi_turn, solution.
`reference` is a known-good fix: the verifier compares a candidate's stdout + exit code against it.
`test` is a shell command run after the candidate (in the candidate's directory): exit 0 means pass.
At least one of the two must be present. `solution` is the intended fix of a test-only task; it is kept
for oracle checks and supervised warm-up only, the verifier never looks at it.
A python task's broken / reference / solution is a program run as main.py in the task directory (its
`files` import; a fixture's own main.py is replaced). A file without `error` (hand-written) gets it, and
`broken_exit`, by a run of `broken` in a fresh fixture when eval or training loads it (fill_errors).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from iclaw.errors import IclawError
from iclaw.files import write_atomic

KINDS = ("bash", "python")
SPLITS = ("train", "dev", "heldout")  # dev: for tuning; heldout: for reported figures only
ERROR_CAP = 600  # chars of the broken run's error we keep: enough for a traceback's last lines


@dataclass
class Task:
    id: str
    kind: str  # "bash" | "python"
    family: str
    broken: str
    files: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    test: str | None = None
    error: str | None = None  # what running `broken` really printed (stderr, else stdout tail)
    broken_exit: int | None = None
    split: str | None = None  # "train" | "dev" | "heldout"
    multi_turn: bool = False  # the fix needs information the first observation does not give (e.g. `ls`)
    solution: str | None = None  # intended fix for test-only tasks; NOT used by the verifier
    look: str | None = None  # look-first tasks: the shell call whose output the fix needs (demonstrations)

    @property
    def outcome_only(self) -> bool:
        return self.reference is None

    def to_dict(self) -> dict:
        # Drop empty optional fields so hand-written and generated files look alike.
        d = asdict(self)
        return {k: v for k, v in d.items() if v is not None and v != {} and not (k == "multi_turn" and not v)}

    def to_json(self) -> str:
        # ensure_ascii=False + fixed key order: the same task is always the same bytes.
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: object, where: str) -> Task:
        """Validate a parsed JSON object; `where` (e.g. "tasks.jsonl:7") prefixes every error."""
        if not isinstance(d, dict):
            raise IclawError(f"{where}: expected a JSON object, got {type(d).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise IclawError(
                f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )

        def text(key: str, required: bool = False) -> str | None:
            v = d.get(key)
            if v is None:
                if required:
                    raise IclawError(f"{where}: missing required field '{key}'")
                return None
            if not isinstance(v, str):
                raise IclawError(f"{where}: field '{key}' must be a string, got {type(v).__name__}")
            return v

        task_id = text("id", required=True)
        if not task_id.strip():
            raise IclawError(f"{where}: field 'id' is empty")
        kind = text("kind", required=True)
        if kind not in KINDS:
            raise IclawError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
        broken = text("broken", required=True)
        reference, test = text("reference"), text("test")
        if reference is None and test is None:
            raise IclawError(f"{where}: a task needs a 'reference' or a 'test' (or both)")
        for key, v in (("reference", reference), ("test", test)):
            if v is not None and not v.strip():
                raise IclawError(f"{where}: field '{key}' is empty")
        split = text("split")
        if split is not None and split not in SPLITS:
            raise IclawError(f"{where}: field 'split' must be one of {', '.join(SPLITS)}, got {split!r}")
        multi_turn = d.get("multi_turn", False)
        if not isinstance(multi_turn, bool):
            raise IclawError(f"{where}: field 'multi_turn' must be true or false")
        broken_exit = d.get("broken_exit")
        if broken_exit is not None and (isinstance(broken_exit, bool) or not isinstance(broken_exit, int)):
            raise IclawError(f"{where}: field 'broken_exit' must be an integer")
        files = d.get("files") or {}
        if not isinstance(files, dict):
            raise IclawError(f"{where}: field 'files' must be an object mapping relative paths to text")
        for path, content in files.items():
            check_rel_path(path, where)
            if not isinstance(content, str):
                raise IclawError(f"{where}: files[{path!r}] must be a string, got {type(content).__name__}")
        return cls(
            id=task_id,
            kind=kind,
            family=text("family") or "custom",
            broken=broken,
            files=dict(files),
            reference=reference,
            test=test,
            error=text("error"),
            broken_exit=broken_exit,
            split=split,
            multi_turn=multi_turn,
            solution=text("solution"),
        )


def check_rel_path(path: object, where: str) -> PurePosixPath:
    """A fixture path must stay inside the task directory: relative, no `..`, nothing odd."""
    if not isinstance(path, str) or not path.strip():
        raise IclawError(f"{where}: fixture path {path!r} is empty or not a string")
    if "\x00" in path or "\\" in path:
        raise IclawError(f"{where}: fixture path {path!r} contains a NUL or backslash")
    p = PurePosixPath(path)
    if p.is_absolute():
        raise IclawError(
            f"{where}: fixture path {path!r} is absolute; use a path relative to the task directory"
        )
    if ".." in p.parts:
        raise IclawError(f"{where}: fixture path {path!r} contains '..'")
    if p.parts in ((), (".",)):
        raise IclawError(f"{where}: fixture path {path!r} names the task directory itself")
    return p


def write_fixture(files: dict[str, str], root: Path) -> None:
    """Create the fixture under `root` (which must exist). Paths were validated at load time; check again
    because a Task can also be built in code."""
    for rel, content in files.items():
        p = root / check_rel_path(rel, "fixture")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")


def load_tasks(path: str | Path) -> list[Task]:
    """Read a JSONL task file. Blank lines are skipped; a bad line raises IclawError("FILE:LINE: ...")."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IclawError(f"{path}: no such task file") from None
    except UnicodeDecodeError as e:
        raise IclawError(f"{path}: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise IclawError(f"{path}: cannot read ({e.strerror})") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise IclawError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
        task = Task.from_dict(obj, where)
        if task.id in seen:
            raise IclawError(f"{where}: duplicate task id {task.id!r} (first on line {seen[task.id]})")
        seen[task.id] = lineno
        tasks.append(task)
    return tasks


def save_tasks(tasks: list[Task], path: str | Path) -> None:
    """Write tasks as JSONL, atomically (temp file + rename) so a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(t.to_json() + "\n" for t in tasks))

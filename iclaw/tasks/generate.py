"""The synthetic task generator: seeded, balanced across families, every instance checked in the sandbox.

Splits are decided by the instance, not by the seed: split = a sha256 of the problem as the agent first
sees it (family + broken command; not the fixture's filler content, not the hidden file name of a
multi-turn task), so a given broken command is always train or always held-out, on every run and every
machine, and the two splits share no instance -- nor even a broken command. The id is a sha256 of the whole
instance (fixture included).

Each drawn instance is run through the Verifier before it is kept: the broken version must really fail
(its output is recorded as `error` / `broken_exit`), the reference / intended fix must really pass, and for
test-only tasks doing nothing (`true`) must fail the test. Instances that do not behave are dropped, so the
oracle scores 100 % and broken 0 % by construction.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from iclaw.errors import IclawError
from iclaw.tasks.families import FAMILIES
from iclaw.tasks.family import Family, Instance
from iclaw.tasks.task import ERROR_CAP, SPLITS, Task, check_rel_path
from iclaw.tasks.verifier import Verdict, Verifier

if TYPE_CHECKING:
    from iclaw.tools.sandbox import Sandbox

HELDOUT_PERCENT = 20
DEV_PERCENT = 10


def _sha(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def split_of(family: str, inst: Instance) -> str:
    """heldout (20 %), dev (10 %: what tuning decisions look at) or train, by the broken command's hash."""
    h = int(_sha(["split", family, inst.broken])[:8], 16) % 100
    return "heldout" if h < HELDOUT_PERCENT else "dev" if h < HELDOUT_PERCENT + DEV_PERCENT else "train"


def task_id(family: str, inst: Instance) -> str:
    return f"{family}-{_sha(['id', family, inst.files, inst.broken, inst.reference, inst.test])[:10]}"


_DID_YOU_MEAN = re.compile(r"Did you mean:? '([^']+)'")
# A task's python program is main.py in its directory, and the verifier scrubs that directory, so a
# traceback reads `File "main.py"`. Output logged in workspace mode (chat, fix: mined tasks) names the
# scratch copy instead: /tmp/iclaw/main.py under bwrap, a random iclaw-call-* dir at level "none". Record
# the same name for all of them, so task files do not depend on where their error was captured.
_SCRATCH_CODE = re.compile(r"(?:/tmp/iclaw|/[^\s\"']*/iclaw-call-[^/\s\"']+)/main\.py")


def error_text(stdout: str, stderr: str) -> str:
    """What the broken run 'said', as a terminal shows it: stdout, then stderr; the tail if long -- tracebacks
    end with the point. (stdout matters: a listing printed before the error names the real file.)"""
    both = "\n".join(part for part in (stdout.strip(), stderr.strip()) if part)
    text = _SCRATCH_CODE.sub("main.py", both)
    return text if len(text) <= ERROR_CAP else "..." + text[-(ERROR_CAP - 3) :]


def resolve_families(names: list[str] | None) -> list[Family]:
    if not names:
        return list(FAMILIES.values())
    out = []
    for name in names:
        if name not in FAMILIES:
            raise IclawError(f"--family: unknown family {name!r} (known: {', '.join(FAMILIES)})")
        if FAMILIES[name] not in out:
            out.append(FAMILIES[name])
    return out


def _check(verifier: Verifier, tasks: list[Task], families: dict[str, Family]) -> dict[int, str | None]:
    """Run broken / fix / do-nothing for each candidate task. Returns id(task) -> None for the ones that
    behave (their error filled in), else why the task was dropped."""
    # Doing nothing (`true`) only needs checking against a test: against a reference, the non-empty
    # expected stdout required below already rules it out; `ls` runs only where the reference's output could
    # be a listing. (The fix, the reference itself, does run again: a reference that prints something else
    # each time is dropped.)
    pairs: list[tuple[Task, str]] = []
    for t in tasks:
        pairs += [(t, t.broken), (t, t.reference or t.solution or "")]
        pairs += [(t, h) for h in _hacks(t)]
    verdicts = iter(verifier.verify_many(pairs))
    out: dict[int, str | None] = {}
    for t in tasks:
        broken, fix = next(verdicts), next(verdicts)
        cheap = [(h, next(verdicts)) for h in _hacks(t)]
        out[id(t)] = _drop_reason(t, broken, fix, None, families[t.family])
        for h, v in cheap:
            if out[id(t)] is None and v.passed:
                out[id(t)] = f"a do-nothing candidate ({h!r}) passes"
    listing = [t for t in tasks if out[id(t)] is None and _could_be_a_listing(t, verifier)]
    for t, v in zip(listing, verifier.verify_many([(t, "ls") for t in listing])):
        if v.passed:
            out[id(t)] = "a do-nothing candidate ('ls') passes"
    return out


def _hacks(t: Task) -> list[str]:
    """Candidates that must never pass a test: doing nothing, deleting the fixture. (`ls` does nothing
    to the files either, and a test sees only the files: `true` stands for it.)"""
    if t.test is None:
        return []
    if t.kind == "python":
        return ["pass", "import os\nfor f in os.listdir('.'):\n    os.remove(f)"]
    return ["true", "rm -rf ./* ./.[!.]*"]


def _could_be_a_listing(t: Task, verifier: Verifier) -> bool:
    """Whether `ls` might print what the reference printed: only if its lines are the fixture's top-level
    names (ls prints exactly those, one a line, when not on a terminal)."""
    exp = verifier.expected(t)
    if exp is None or exp.exit_code != 0:
        return False
    names = {p.split("/")[0] for p in t.files if not p.startswith(".")}
    return set(exp.stdout.splitlines()) == names


def _drop_reason(t: Task, broken: Verdict, fix: Verdict, nothing: Verdict | None, fam: Family) -> str | None:
    if nothing is not None and nothing.passed:
        return "doing nothing passes its test"
    if broken.passed:
        return "its broken command passes"
    if not fix.passed:
        return f"its fix fails ({fix.reason})"
    if broken.timed_out or broken.exit_code in (None, 0):
        return "its broken command does not fail visibly (exit 0 or a timeout)"
    if t.reference is not None and not fix.stdout.strip():
        return "its reference prints nothing"  # an empty expected stdout would let `true` pass
    t.error, t.broken_exit = error_text(broken.stdout, broken.stderr), broken.exit_code
    hint = _DID_YOU_MEAN.search(t.error)
    if hint and hint.group(1) not in (t.reference or t.solution or ""):
        return f"Python suggests {hint.group(1)!r}, which the fix does not use"
    if fam.error_mentions and not any(m in t.error for m in fam.error_mentions):
        return f"its broken run's error mentions none of {', '.join(map(repr, fam.error_mentions))}"
    if fam.accept is not None:
        try:
            ok = fam.accept(t.error, t.broken_exit)
        except Exception as e:
            raise IclawError(f"family {fam.name}: accept() failed: {type(e).__name__}: {e}") from e
        if not ok:
            return "its accept() rejects the broken run's error"
    return None


# A family none of whose first this-many checked candidates behaves is broken, not unlucky: every family
# keeps most of its candidates.
FAIL_AFTER = 40


def _instance_problem(inst: object, fam: Family) -> str | None:
    """Why make()'s return value is not an instance this family can turn into a task, or None."""
    if not isinstance(inst, Instance):
        return f"make() returned a {type(inst).__name__}, not an Instance"
    if not isinstance(inst.broken, str) or not inst.broken.strip():
        return "make() returned an instance with an empty broken command"
    if fam.outcome_only and (inst.test is None or inst.reference is not None):
        return "an outcome-only family's instance needs a test and no reference"
    if not fam.outcome_only and inst.reference is None:
        return "make() returned an instance without a reference"
    for key in ("reference", "test", "solution"):
        v = getattr(inst, key)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            return f"make() returned an instance whose {key} is empty or not a string"
    if not isinstance(inst.files, dict) or not all(isinstance(v, str) for v in inst.files.values()):
        return "make() returned an instance whose files are not a dict of text"
    try:
        for path in inst.files:
            check_rel_path(path, "files")
    except IclawError as e:
        return str(e)
    return None


class _FamilyDraw:
    """One family's stream of candidate instances for one split. The rng is seeded by (seed, family) only,
    so adding a family, or asking another family for more, never changes this family's tasks."""

    def __init__(self, family: Family, n: int, split: str, seed: int):
        self.family, self.n, self.split = family, n, split
        self.rng = random.Random(f"iclaw-tasks:{seed}:{family.name}")
        self.kept: list[Task] = []
        self.seen: set[str] = set()
        self.draws, self.max_draws = 0, 200 * n + 2000
        self.made = 0  # draws that gave an instance (make() may raise ValueError: "no instance this time")
        self.last_value_error = ""
        self.checked = 0  # candidates run through the sandbox
        self.last_drop = ""

    @property
    def done(self) -> bool:
        return len(self.kept) >= self.n

    def draw(self) -> list[Task]:
        """Candidates for the next round: a tenth more than still needed. The filter keeps 90-100 % of every
        family's candidates (19 x 40 train tasks: 1,102 of 1,140), so a short round is topped up by the next;
        the tasks kept are the stream's first accepted ones whatever the round sizes."""
        name = self.family.name
        batch: list[Task] = []
        need = self.n - len(self.kept)
        want = max(4, need + need // 10 + 1)
        while len(batch) < want and self.draws < self.max_draws:
            self.draws += 1
            try:
                inst = self.family.make(self.rng)
            except ValueError as e:
                self.last_value_error = str(e) or "ValueError"
                continue
            except Exception as e:  # a bug in the family module: say which family, in one line
                raise IclawError(f"family {name}: make() failed: {type(e).__name__}: {e}") from e
            problem = _instance_problem(inst, self.family)
            if problem is not None:
                raise IclawError(f"family {name}: {problem}")
            self.made += 1
            if split_of(name, inst) != self.split:
                continue
            tid = task_id(name, inst)
            if tid in self.seen:
                continue
            self.seen.add(tid)
            batch.append(
                Task(
                    id=tid,
                    kind=self.family.kind,
                    family=name,
                    broken=inst.broken,
                    files=dict(inst.files),
                    reference=inst.reference,
                    test=inst.test,
                    split=self.split,
                    multi_turn=self.family.multi_turn,
                    solution=inst.solution,
                    look=inst.look,
                )
            )
        if not batch:
            if self.made == 0:
                raise IclawError(
                    f"family {name} cannot produce an instance: make() raised ValueError on all "
                    f"{self.draws} draws (last: {self.last_value_error})"
                )
            if not self.kept and not self.seen:
                raise IclawError(
                    f"family {name}: none of its {self.made} instances falls in the {self.split} split"
                )
            raise IclawError(
                f"--n: family {name} has only {len(self.kept)} distinct valid {self.split} instances "
                f"({self.draws} draws); ask for fewer"
            )
        return batch

    def add_checked(self, batch: list[Task], drops: dict[int, str | None]) -> list[Task]:
        """Keep the batch's good tasks (as many as still needed); refuse a family that never behaves."""
        self.checked += len(batch)
        for t in batch:
            if drops[id(t)] is not None:
                self.last_drop = drops[id(t)]
        new = [t for t in batch if drops[id(t)] is None][: self.n - len(self.kept)]
        self.kept += new
        if not self.kept and self.checked >= FAIL_AFTER:
            raise IclawError(
                f"family {self.family.name} cannot produce a valid task: none of its first {self.checked} "
                f"instances behaves in the sandbox (e.g. {self.last_drop})"
            )
        return new


def generate(
    n: int,
    split: str = "train",
    seed: int = 0,
    families: list[str] | None = None,
    sandbox: Sandbox | None = None,
    progress: Callable[[int], None] | None = None,
    more: dict[str, int] | None = None,
) -> list[Task]:
    """n tasks balanced across `families` (default: all), interleaved so any prefix is balanced too, plus
    `more[family]` tasks of a family on top of its share (a family's tasks are its stream's first ones, so
    the balanced ones are among them). The same arguments give the same tasks, byte for byte. A family that
    cannot produce a valid task raises IclawError naming it (and nothing is returned)."""
    if split not in SPLITS:
        raise IclawError(f"--split: must be one of {', '.join(SPLITS)}, got {split!r}")
    if n < 0:
        raise IclawError(f"--n: must be >= 0, got {n}")
    fams = resolve_families(families)
    by_name = {f.name: f for f in fams}
    verifier = Verifier(sandbox, vary=False)  # the varied copy guards rewards, not which tasks behave
    per_family = [n // len(fams) + (1 if i < n % len(fams) else 0) for i in range(len(fams))]
    unknown = sorted(set(more or {}) - set(by_name))
    if unknown:
        raise IclawError(f"more tasks asked of {', '.join(unknown)}, not among the families generated")
    per_family = [k + (more or {}).get(f.name, 0) for f, k in zip(fams, per_family)]
    streams = [_FamilyDraw(f, k, split, seed) for f, k in zip(fams, per_family)]
    # Rounds: every unfinished family contributes a batch, and one verify_many checks them all (in parallel).
    while not all(s.done for s in streams):
        batches = [(s, s.draw()) for s in streams if not s.done]
        drops = _check(verifier, [t for _, batch in batches for t in batch], by_name)
        for s, batch in batches:
            new = s.add_checked(batch, drops)
            if progress is not None and new:
                progress(len(new))
    out: list[Task] = []
    for i in range(max(per_family, default=0)):  # interleave, so any prefix of the file is balanced
        out += [s.kept[i] for s in streams if i < len(s.kept)]
    return out


def keep_behaving(tasks: list[Task], sandbox: Sandbox | None = None) -> list[Task]:
    """The tasks (of known families, made outside `generate`) that pass its checks, their errors filled in."""
    drops = _check(Verifier(sandbox, vary=False), tasks, FAMILIES)
    return [t for t in tasks if drops[id(t)] is None]


def broken_problem(v: Verdict) -> str | None:
    """Why a task's broken command, run in a fresh fixture, makes no task (None: it fails, as it should).
    The agent is only ever asked about a command that fails (chat and fix leave a succeeding one alone)."""
    if v.passed:
        return "its broken command already passes its check: there is nothing to fix"
    if not v.timed_out and v.exit_code == 0:
        return "its broken command does not fail (exit 0): there is nothing to fix"
    return None


def fill_errors(tasks: list[Task], sandbox: Sandbox | None = None, where: str = "") -> list[Task]:
    """Fill `error` / `broken_exit` of tasks that lack them (e.g. a hand-written file) by running `broken`
    in a fresh fixture, exactly as the generator records them, so the policy's first turn shows the
    command's real output. Returns the same list; tasks that already have an error are left alone.

    A filled task whose broken command does not fail (or already passes) raises IclawError naming it
    (`where`, e.g. the file, prefixes the message); no task is changed then."""
    todo = [t for t in tasks if t.error is None or t.broken_exit is None]
    if not todo:
        return tasks
    verdicts = Verifier(sandbox).verify_many([(t, t.broken) for t in todo])
    bad = [(t, p) for t, v in zip(todo, verdicts) if (p := broken_problem(v)) is not None]
    if bad:
        t, problem = bad[0]
        msg = f"{where}: task {t.id}: {problem}" if where else f"task {t.id}: {problem}"
        if len(bad) > 1:
            others = ", ".join(t.id for t, _ in bad[1:4]) + (", ..." if len(bad) > 4 else "")
            msg += f" (and {len(bad) - 1} more: {others})"
        raise IclawError(msg)
    for t, v in zip(todo, verdicts):
        t.error, t.broken_exit = error_text(v.stdout, v.stderr), v.exit_code
    return tasks

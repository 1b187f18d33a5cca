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
from iclaw.tasks.task import ERROR_CAP, SPLITS, Task
from iclaw.tasks.verifier import Verifier

if TYPE_CHECKING:
    from iclaw.tools.sandbox import Sandbox

HELDOUT_PERCENT = 20


def _sha(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def split_of(family: str, inst: Instance) -> str:
    h = _sha(["split", family, inst.broken])
    return "heldout" if int(h[:8], 16) % 100 < HELDOUT_PERCENT else "train"


def task_id(family: str, inst: Instance) -> str:
    return f"{family}-{_sha(['id', family, inst.files, inst.broken, inst.reference, inst.test])[:10]}"


_DID_YOU_MEAN = re.compile(r"Did you mean:? '([^']+)'")
# At sandbox level "none" the python tool's file lives in a random scratch dir; under bwrap it is always
# /tmp/iclaw/main.py. Record the stable name so task files do not depend on the level.
_SCRATCH_CODE = re.compile(r"/[^\s\"']*/iclaw-call-[^/\s\"']+/main\.py")


def error_text(stdout: str, stderr: str) -> str:
    """What the broken run 'said', as a terminal shows it: stdout, then stderr; the tail if long -- tracebacks
    end with the point. (stdout matters: a listing printed before the error names the real file.)"""
    both = "\n".join(part for part in (stdout.strip(), stderr.strip()) if part)
    text = _SCRATCH_CODE.sub("/tmp/iclaw/main.py", both)
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


def _check(verifier: Verifier, tasks: list[Task]) -> list[Task]:
    """Run broken / fix / do-nothing for each candidate task; return the ones that behave, error filled in."""
    # Doing nothing (`true`) only needs checking against a test: against a reference, the non-empty
    # expected stdout required below already rules it out.
    pairs: list[tuple[Task, str]] = []
    for t in tasks:
        pairs += [(t, t.broken), (t, t.reference or t.solution or "")]
        if t.test is not None:
            pairs.append((t, "true" if t.kind == "bash" else "pass"))
    verdicts = iter(verifier.verify_many(pairs))
    good = []
    for t in tasks:
        broken, fix = next(verdicts), next(verdicts)
        if t.test is not None and next(verdicts).passed:
            continue
        if broken.passed or not fix.passed:
            continue
        if broken.timed_out or broken.exit_code in (None, 0):
            continue  # "broken" must visibly fail, not just print something else
        if t.reference is not None and not fix.stdout.strip():
            continue  # an empty expected stdout would let `true` pass
        t.error, t.broken_exit = error_text(broken.stdout, broken.stderr), broken.exit_code
        hint = _DID_YOU_MEAN.search(t.error)
        if hint and hint.group(1) not in (t.reference or t.solution or ""):
            continue  # Python suggests some other name: the error would point away from the fix
        accept = FAMILIES[t.family].accept
        if accept is not None and not accept(t.error, t.broken_exit):
            continue
        good.append(t)
    return good


class _FamilyDraw:
    """One family's stream of candidate instances for one split. The rng is seeded by (seed, family) only,
    so adding a family, or asking another family for more, never changes this family's tasks."""

    def __init__(self, family: Family, n: int, split: str, seed: int):
        self.family, self.n, self.split = family, n, split
        self.rng = random.Random(f"iclaw-tasks:{seed}:{family.name}")
        self.kept: list[Task] = []
        self.seen: set[str] = set()
        self.draws, self.max_draws = 0, 200 * n + 2000

    @property
    def done(self) -> bool:
        return len(self.kept) >= self.n

    def draw(self) -> list[Task]:
        """Candidates for the next round: a tenth more than still needed. The filter keeps 90-100 % of every
        family's candidates (19 x 40 train tasks: 1,102 of 1,140), so a short round is topped up by the next;
        the tasks kept are the stream's first accepted ones whatever the round sizes."""
        batch: list[Task] = []
        need = self.n - len(self.kept)
        want = max(4, need + need // 10 + 1)
        while len(batch) < want and self.draws < self.max_draws:
            self.draws += 1
            try:
                inst = self.family.make(self.rng)
            except ValueError:
                continue
            if split_of(self.family.name, inst) != self.split:
                continue
            tid = task_id(self.family.name, inst)
            if tid in self.seen:
                continue
            self.seen.add(tid)
            batch.append(
                Task(
                    id=tid,
                    kind=self.family.kind,
                    family=self.family.name,
                    broken=inst.broken,
                    files=dict(inst.files),
                    reference=inst.reference,
                    test=inst.test,
                    split=self.split,
                    multi_turn=self.family.multi_turn,
                    solution=inst.solution,
                )
            )
        if not batch:
            raise IclawError(
                f"--n: family {self.family.name} has only {len(self.kept)} distinct {self.split} instances; "
                "ask for fewer"
            )
        return batch


def generate(
    n: int,
    split: str = "train",
    seed: int = 0,
    families: list[str] | None = None,
    sandbox: Sandbox | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Task]:
    """n tasks balanced across `families` (default: all), interleaved so any prefix is balanced too.
    The same arguments give the same tasks, byte for byte."""
    if split not in SPLITS:
        raise IclawError(f"--split: must be one of {', '.join(SPLITS)}, got {split!r}")
    if n < 0:
        raise IclawError(f"--n: must be >= 0, got {n}")
    fams = resolve_families(families)
    verifier = Verifier(sandbox)
    per_family = [n // len(fams) + (1 if i < n % len(fams) else 0) for i in range(len(fams))]
    streams = [_FamilyDraw(f, k, split, seed) for f, k in zip(fams, per_family)]
    # Rounds: every unfinished family contributes a batch, and one verify_many checks them all (in parallel).
    while not all(s.done for s in streams):
        batches = [(s, s.draw()) for s in streams if not s.done]
        good = set(id(t) for t in _check(verifier, [t for _, batch in batches for t in batch]))
        for s, batch in batches:
            new = [t for t in batch if id(t) in good][: s.n - len(s.kept)]
            s.kept += new
            if progress is not None and new:
                progress(len(new))
    out: list[Task] = []
    for i in range(max(per_family, default=0)):  # interleave, so any prefix of the file is balanced
        out += [s.kept[i] for s in streams if i < len(s.kept)]
    return out


def fill_errors(tasks: list[Task], sandbox: Sandbox | None = None) -> list[Task]:
    """Fill `error` / `broken_exit` of tasks that lack them (e.g. a hand-written file) by running `broken`
    in a fresh fixture. Returns the same list; tasks that already have an error are left alone."""
    todo = [t for t in tasks if t.error is None or t.broken_exit is None]
    if todo:
        for t, v in zip(todo, Verifier(sandbox).verify_many([(t, t.broken) for t in todo])):
            t.error, t.broken_exit = error_text(v.stdout, v.stderr), v.exit_code
    return tasks

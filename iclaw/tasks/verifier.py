"""The verifier: does a candidate fix really fix the task? Its answer is the GRPO reward.

Rules (the same for generated, mined and hand-written tasks):
  * The candidate runs in a FRESH copy of the fixture, in the sandbox, with a short timeout. Nothing the
    policy did during its episode is visible here: the episode's directory is not reused.
  * reference tasks: the reference runs in another fresh fixture (once per task; cached). Pass iff the exit
    codes are equal and stdout is equal, ignoring trailing whitespace (and the run's own directory path,
    which differs between the two copies).
  * ... and where the output follows the files, in a varied copy too: the reference also runs once in a copy
    of the fixture with other contents (vary.py). If it prints something else there (with the same exit
    code), a candidate that matched in the real copy must match in the varied one as well; a candidate that
    prints a literal copy of the output (`printf 'milk\\neggs\\n'` once it has seen shopping.txt) fails there.
    The second run is skipped where the reference prints the same in both copies (its output does not
    depend on the contents: `ls`, `mkdir -v`), where it exits otherwise there (the variation does not suit
    the task), and where the family opts out. Test tasks are judged in the real copy only: a test is
    written against its fixture.
  * test tasks: after the candidate ran, the verifier runs the task's `test` (a shell command string it holds,
    so the candidate cannot edit it) in the candidate's directory. Pass iff the test exits 0.
  * A candidate that times out never passes (whatever it printed or left behind).
  * A python candidate (and reference) is the program main.py in its fresh fixture, run there (the sandbox's
    task mode): the fixture's modules import, and a path it prints (`__file__`, a traceback's
    `File ".../main.py"`) loses the directory like any other, so it reads `main.py` in both copies.

Everything runs through Sandbox.run_many, so a GRPO step's 64 candidates verify in parallel. Cost of the
varied copy: one more reference run per task (cached), and one more run per candidate that already passed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from iclaw.tasks.task import Task, write_fixture
from iclaw.tasks.vary import varied_files

if TYPE_CHECKING:
    from iclaw.tools.sandbox import Sandbox

VERIFY_TIMEOUT_S = 5.0  # a correct fix for our tasks runs in milliseconds; anything slow is a hack or a hang


@dataclass
class Verdict:
    passed: bool
    reason: str  # one short line: "ok", "stdout differs", "exit code 1 != 0", "test failed (exit 1)", ...
    exit_code: int | None = None  # the candidate's
    stdout: str = ""  # the candidate's, normalized (directory path replaced by '.')
    stderr: str = ""
    timed_out: bool = False
    expected_exit: int | None = None  # the reference's (reference tasks)
    expected_stdout: str | None = None
    test_exit: int | None = None  # the test's (test tasks)
    duration_ms: float = 0.0
    varied: bool = False  # the candidate was also run in the varied copy of the fixture

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Expected:
    """What the reference did, in the task's fixture and in its varied copy (cached per task)."""

    exit_code: int | None
    stdout: str
    timed_out: bool
    variation: str = "none"  # none (nothing to vary) | same output | exit differs | checked
    varied: dict[str, str] | None = None  # the varied fixture, when it is checked ("checked")
    varied_stdout: str = ""


def normalize_stdout(s: str) -> str:
    """Trailing whitespace is not part of the answer: strip it per line and at the end."""
    return "\n".join(line.rstrip() for line in s.rstrip().splitlines())


def scrub_dir(text: str, workdir: Path) -> str:
    """Replace this run's private directory with '.', so two fresh copies of a fixture print the same."""
    d = str(workdir)
    return text.replace(d + "/", "").replace(d, ".")


def _rmtree(path: Path) -> None:
    # A candidate may chmod its files to 000; make everything writable again before deleting.
    def onerror(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), stat.S_IRWXU)
            os.chmod(p, stat.S_IRWXU)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)


def _ref_key(task: Task) -> str:
    # Keyed by id AND content, so two files that reuse an id for different tasks never share a cache entry
    # (family and broken too: the varied copy depends on them).
    blob = json.dumps(
        [task.kind, task.family, task.files, task.broken, task.reference], sort_keys=True, ensure_ascii=False
    )
    return task.id + ":" + hashlib.sha256(blob.encode()).hexdigest()[:16]


Call = tuple[str, str, Path, float]  # (kind, code, directory, timeout): one Sandbox.run_many entry


class Verifier:
    def __init__(
        self,
        sandbox: Sandbox | None = None,
        workers: int | None = None,
        timeout: float | None = None,
        vary: bool = True,
    ):
        if sandbox is None:
            from iclaw.tools.sandbox import Limits, Sandbox

            sandbox = Sandbox(Limits(timeout_s=VERIFY_TIMEOUT_S))
        self.sandbox = sandbox
        self.workers = workers
        # Per-call wall clock: short, whatever the sandbox's default is (the agent may allow longer calls).
        self.timeout = min(VERIFY_TIMEOUT_S, sandbox.limits.timeout_s) if timeout is None else timeout
        self.vary = vary  # False: the real fixture only (what `printf` of the output can fool)
        self._ref_cache: dict[str, Expected] = {}

    def verify(self, task: Task, candidate: str) -> Verdict:
        return self.verify_many([(task, candidate)])[0]

    def expected(self, task: Task) -> Expected | None:
        """What the reference did (once verify_many has seen the task), e.g. for the monitor."""
        return self._ref_cache.get(_ref_key(task)) if task.reference is not None else None

    def verify_many(self, pairs: list[tuple[Task, str]]) -> list[Verdict]:
        # A candidate repeated for the same task runs once: the GRPO group of a task the policy has learned
        # writes the same fix eight times (255 fixes in four demo rollout steps, 153 of them distinct).
        first: dict[tuple[int, str], int] = {}  # (the task object, the candidate) -> its slot in `unique`
        unique: list[tuple[Task, str]] = []
        for task, candidate in pairs:
            if (id(task), candidate) not in first:
                first[(id(task), candidate)] = len(unique)
                unique.append((task, candidate))
        root = Path(tempfile.mkdtemp(prefix="iclaw-verify-"))
        try:
            verdicts = self._verify_many(unique, root)
        finally:
            _rmtree(root)
        return [copy.copy(verdicts[first[(id(t), c)]]) for t, c in pairs]

    def _fresh_dir(self, root: Path, name: str, files: dict[str, str]) -> Path:
        d = root / name
        d.mkdir()
        write_fixture(files, d)
        return d

    def _run(self, calls: list[Call]):
        return self.sandbox.run_many(calls, max_workers=self.workers) if calls else []

    def _reference_calls(self, tasks: list[Task], root: Path) -> tuple[list[Call], dict]:
        """The runs of the references not cached yet: each in a fresh fixture and, if the task has one, in
        a varied copy. Returns the calls and key -> (slot, varied slot or None, varied files)."""
        calls: list[Call] = []
        todo: dict[str, tuple[int, int | None, dict | None]] = {}
        for task in tasks:
            key = _ref_key(task)
            if task.reference is None or key in self._ref_cache or key in todo:
                continue
            files = varied_files(task, key) if self.vary else None
            n = len(calls)
            calls.append(
                (task.kind, task.reference, self._fresh_dir(root, f"r{n}", task.files), self.timeout)
            )
            if files is not None:
                calls.append(
                    (task.kind, task.reference, self._fresh_dir(root, f"rv{n}", files), self.timeout)
                )
            todo[key] = (n, n + 1 if files is not None else None, files)
        return calls, todo

    def _cache_references(self, todo: dict, calls: list[Call], results: list) -> None:
        for key, (slot, vslot, files) in todo.items():
            r = results[slot]
            e = Expected(r.exit_code, normalize_stdout(scrub_dir(r.stdout, calls[slot][2])), r.timed_out)
            if vslot is not None and not r.timed_out:
                v = results[vslot]
                out = normalize_stdout(scrub_dir(v.stdout, calls[vslot][2]))
                if v.timed_out or v.exit_code != e.exit_code:
                    e.variation = "exit differs"  # the variation does not suit this task: not used
                elif out == e.stdout:
                    e.variation = "same output"  # the output does not follow the files: nothing to check
                else:
                    e.variation, e.varied, e.varied_stdout = "checked", files, out
            self._ref_cache[key] = e

    def _verify_many(self, pairs: list[tuple[Task, str]], root: Path) -> list[Verdict]:
        # Phase 1: the references we have not seen yet, and every candidate, each in a fresh fixture.
        calls, todo = self._reference_calls([t for t, _ in pairs], root)
        cand_slots: list[int | None] = []
        for i, (task, candidate) in enumerate(pairs):
            if not candidate.strip():
                cand_slots.append(None)
                continue
            cand_slots.append(len(calls))
            calls.append((task.kind, candidate, self._fresh_dir(root, f"c{i}", task.files), self.timeout))
        results = self._run(calls)
        self._cache_references(todo, calls, results)

        verdicts = []
        for i, (task, _) in enumerate(pairs):
            slot = cand_slots[i]
            if slot is None:
                verdicts.append(Verdict(False, "empty candidate"))
                continue
            r, workdir = results[slot], calls[slot][2]
            v = Verdict(
                passed=False,
                reason="",
                exit_code=r.exit_code,
                stdout=normalize_stdout(scrub_dir(r.stdout, workdir)),
                stderr=scrub_dir(r.stderr, workdir),
                timed_out=r.timed_out,
                duration_ms=r.duration_ms,
            )
            exp = self.expected(task)
            if exp is not None:
                v.expected_exit, v.expected_stdout = exp.exit_code, exp.stdout
            if r.timed_out:
                v.reason = "timed out"
            elif task.test is not None:
                v.reason = TEST_PENDING
            elif exp.timed_out:
                v.reason = "reference timed out (the task is broken)"
            else:
                v.reason = _compare(r, workdir, exp.exit_code, exp.stdout)
                v.passed = v.reason == "ok"
            verdicts.append(v)

        # Phase 2, once the candidates are done (and killed): each test, in its candidate's directory; and each
        # candidate that matched a reference whose output follows the files, again, in the varied copy.
        second: dict[int, Call] = {}
        for i, (task, candidate) in enumerate(pairs):
            v = verdicts[i]
            if v.reason == TEST_PENDING:
                second[i] = ("bash", task.test, calls[cand_slots[i]][2], self.timeout)
            elif v.passed and (exp := self.expected(task)).varied is not None:
                second[i] = (task.kind, candidate, self._fresh_dir(root, f"cv{i}", exp.varied), self.timeout)
        for (i, (_, _, workdir, _)), r in zip(second.items(), self._run(list(second.values()))):
            v = verdicts[i]
            if v.reason == TEST_PENDING:
                v.test_exit = r.exit_code
                v.passed = r.exit_code == 0 and not r.timed_out
                v.reason = "ok" if v.passed else f"test failed (exit {r.exit_code})"
                continue
            exp = self.expected(pairs[i][0])
            v.varied, v.reason = True, _compare(r, workdir, exp.exit_code, exp.varied_stdout)
            if v.reason != "ok":
                v.passed, v.reason = (
                    False,
                    f"{v.reason} in the varied fixture (the output must follow the files)",
                )
        return verdicts


TEST_PENDING = "test pending"  # a phase-1 verdict whose test runs in phase 2


def _compare(r, workdir: Path, exit_code: int | None, stdout: str) -> str:
    """Why a candidate's run does not match the reference's (exit code, then stdout), or "ok"."""
    if r.timed_out:
        return "timed out"
    if r.exit_code != exit_code:
        return f"exit code {r.exit_code} != {exit_code}"
    if normalize_stdout(scrub_dir(r.stdout, workdir)) != stdout:
        return "stdout differs"
    return "ok"

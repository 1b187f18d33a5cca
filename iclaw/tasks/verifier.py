"""The verifier: does a candidate fix really fix the task? Its answer is the GRPO reward.

Rules (the same for generated, mined and hand-written tasks):
  * The candidate runs in a FRESH copy of the fixture, in the sandbox, with a short timeout. Nothing the
    policy did during its episode is visible here: the episode's directory is not reused.
  * reference tasks: the reference runs in another fresh fixture (once per task; cached). Pass iff the exit
    codes are equal and stdout is equal, ignoring trailing whitespace (and the run's own directory path,
    which differs between the two copies).
  * test tasks: after the candidate ran, the verifier runs the task's `test` (a shell command string it holds,
    so the candidate cannot edit it) in the candidate's directory. Pass iff the test exits 0.
  * A candidate that times out never passes (whatever it printed or left behind).
  * A python candidate (and reference) is the program main.py in its fresh fixture, run there (the sandbox's
    task mode): the fixture's modules import, and a path it prints (`__file__`, a traceback's
    `File ".../main.py"`) loses the directory like any other, so it reads `main.py` in both copies.

Everything runs through Sandbox.run_many, so a GRPO step's 64 candidates verify in parallel.
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

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


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
    # Keyed by id AND content, so two files that reuse an id for different tasks never share a cache entry.
    blob = json.dumps([task.kind, task.files, task.reference], sort_keys=True, ensure_ascii=False)
    return task.id + ":" + hashlib.sha256(blob.encode()).hexdigest()[:16]


class Verifier:
    def __init__(
        self, sandbox: Sandbox | None = None, workers: int | None = None, timeout: float | None = None
    ):
        if sandbox is None:
            from iclaw.tools.sandbox import Limits, Sandbox

            sandbox = Sandbox(Limits(timeout_s=VERIFY_TIMEOUT_S))
        self.sandbox = sandbox
        self.workers = workers
        # Per-call wall clock: short, whatever the sandbox's default is (the agent may allow longer calls).
        self.timeout = min(VERIFY_TIMEOUT_S, sandbox.limits.timeout_s) if timeout is None else timeout
        self._ref_cache: dict[str, tuple[int, str, bool]] = {}  # key -> (exit code, stdout, timed out)

    def verify(self, task: Task, candidate: str) -> Verdict:
        return self.verify_many([(task, candidate)])[0]

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

    def _fresh_dir(self, root: Path, name: str, task: Task) -> Path:
        d = root / name
        d.mkdir()
        write_fixture(task.files, d)
        return d

    def _verify_many(self, pairs: list[tuple[Task, str]], root: Path) -> list[Verdict]:
        # Phase 1: the references we have not seen yet, and every candidate, each in a fresh fixture.
        calls: list[tuple[str, str, Path, float]] = []
        ref_slots: dict[str, int] = {}
        for task, _ in pairs:
            if task.reference is None:
                continue
            key = _ref_key(task)
            if key not in self._ref_cache and key not in ref_slots:
                ref_slots[key] = len(calls)
                calls.append(
                    (task.kind, task.reference, self._fresh_dir(root, f"r{len(calls)}", task), self.timeout)
                )
        cand_slots: list[int | None] = []
        for i, (task, candidate) in enumerate(pairs):
            if not candidate.strip():
                cand_slots.append(None)
                continue
            cand_slots.append(len(calls))
            calls.append((task.kind, candidate, self._fresh_dir(root, f"c{i}", task), self.timeout))
        results = self.sandbox.run_many(calls, max_workers=self.workers) if calls else []

        for key, slot in ref_slots.items():
            r = results[slot]
            self._ref_cache[key] = (
                r.exit_code,
                normalize_stdout(scrub_dir(r.stdout, calls[slot][2])),
                r.timed_out,
            )

        # Phase 2: the tests, in the candidates' directories, after the candidates are done (and killed).
        test_calls: list[tuple[str, str, Path, float]] = []
        test_slots: dict[int, int] = {}
        for i, (task, _) in enumerate(pairs):
            slot = cand_slots[i]
            if task.test is not None and slot is not None and not results[slot].timed_out:
                test_slots[i] = len(test_calls)
                test_calls.append(("bash", task.test, calls[slot][2], self.timeout))
        test_results = self.sandbox.run_many(test_calls, max_workers=self.workers) if test_calls else []

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
            ref_timed_out = False
            if task.reference is not None:
                v.expected_exit, v.expected_stdout, ref_timed_out = self._ref_cache[_ref_key(task)]
            if r.timed_out:
                v.reason = "timed out"
            elif task.test is not None:
                t = test_results[test_slots[i]]
                v.test_exit = t.exit_code
                v.passed = t.exit_code == 0 and not t.timed_out
                v.reason = "ok" if v.passed else f"test failed (exit {t.exit_code})"
            elif ref_timed_out:
                v.reason = "reference timed out (the task is broken)"
            elif v.exit_code != v.expected_exit:
                v.reason = f"exit code {v.exit_code} != {v.expected_exit}"
            elif v.stdout != v.expected_stdout:
                v.reason = "stdout differs"
            else:
                v.passed, v.reason = True, "ok"
            verdicts.append(v)
        return verdicts

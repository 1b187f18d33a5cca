"""The episode loop: one loop for eval, GRPO rollouts, distillation, chat and fix.

A batch of episodes advances together: every turn, all unfinished episodes sample their next action in one
batched call to the sampler, their tool calls run in parallel in the sandbox, and each gets its observation
appended. Every token carries a mask bit (1 = the policy wrote it), which is the training loss mask.

The fix that counts is the last tool call of the task's kind. For tasks, the verifier re-runs that fix in a
fresh fixture afterwards: nothing the policy did to its own working directory can change the verdict.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from iclaw.agent.policy import Policy
from iclaw.agent.protocol import (
    STOP_TOKENS,
    Action,
    cap_text,
    format_output,
    format_request,
    observation_tokens,
    parse_action,
    render,
    request_tokens,
)
from iclaw.store import now_iso
from iclaw.tools.hints import find_hints, usage_in
from iclaw.tools.hints import render as render_hints


@dataclass
class EpisodeConfig:
    max_turns: int = 2  # policy turns; the last call of the task's kind is the fix
    max_new_tokens: int = 160  # per turn: a fixed Python program is a few lines, longer than a shell fix
    temperature: float = 1.0  # 0 = greedy
    # chat: propose the likeliest command first (as `iclaw fix` does); sample at `temperature` only once the
    # user has declined one, so the next proposal can differ
    greedy_until_declined: bool = False
    # greedy only: where the policy's likeliest token has p < this, copy the context instead (sampler.py);
    # the shipped policy on dev 78.1 -> 79.5 %, with made-up names 20.1 -> 30.8 % (docs/LOG.md, 2026-12-05)
    copy_below: float = 0.5
    top_k: int | None = None
    top_p: float | None = None
    obs_chars: int = 300  # cap on each stream shown back to the policy
    hints: bool = True  # a failed run's observation ends with the nearest names (iclaw/tools/hints.py)
    timeout_s: float = 5.0  # wall clock per tool call


@dataclass
class Episode:
    request: str  # the user turn: broken command + what it printed
    kind: str  # "bash" | "python": which tool's last call is the fix
    workdir: Path
    task: object | None = None  # iclaw.tasks.Task, when the episode comes from a task
    tokens: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)  # 1 = policy token
    logprobs: list[float] = field(default_factory=list)  # sampler log-prob at policy tokens, 0 elsewhere
    prompt_len: int = 0
    turns: list[dict] = field(default_factory=list)  # store rows: {"turn", "role", "text"}
    tool_calls: list[dict] = field(default_factory=list)  # store rows, one per executed call
    last_call: dict = field(default_factory=dict)  # tool kind -> last code run with it
    done: bool = False
    status: str = "running"  # how it ended: submitted | max_turns | truncated | no_fix (store/schema.py ENDS)
    n_turns: int = 0
    n_invalid: int = 0
    n_declined: int = 0
    final: str | None = None  # the submitted fix
    passed: bool | None = None
    reward: float | None = None
    verdict: str = ""
    flags: dict[str, str] = field(default_factory=dict)  # the monitor's (iclaw/tasks/monitor.py): flag -> why
    started_at: str = ""
    ended_at: str = ""

    @property
    def policy_tokens(self) -> int:
        return sum(self.mask)


def task_request(task, workdir: Path | None = None, usage=None) -> str:
    """The user turn of a task; with `workdir` (a copy of its fixture) the hint line too, as fix shows it."""
    output = cap_text((task.error or "").rstrip("\n"), 300)  # the end of an error says the most
    if task.broken_exit is not None:
        output = f"{output}\n[exit {task.broken_exit}]" if output else f"[exit {task.broken_exit}]"
    if workdir is not None:
        exit_code = 1 if task.broken_exit is None else task.broken_exit
        hs = find_hints(task.kind, task.broken, "", task.error or "", exit_code, workdir, usage=usage)
        output = "\n".join(x for x in (output, render_hints(hs)) if x)
    return format_request(task.kind, task.broken, output, task.test)


def new_episode(request: str, kind: str, workdir: Path, task=None) -> Episode:
    toks = request_tokens(request)
    return Episode(
        request=request,
        kind=kind,
        workdir=workdir,
        task=task,
        tokens=list(toks),
        mask=[0] * len(toks),
        logprobs=[0.0] * len(toks),
        prompt_len=len(toks),
        turns=[{"turn": 0, "role": "user", "text": request}],
        started_at=now_iso(),
    )


def _append(ep: Episode, toks: list[int], policy: bool, logprobs: list[float] | None = None) -> None:
    ep.tokens += toks
    ep.mask += [1 if policy else 0] * len(toks)
    ep.logprobs += logprobs if logprobs is not None else [0.0] * len(toks)


# approve(episode, action) -> the action to run (possibly edited) or None to decline; used by chat
Approve = Callable[[Episode, Action], "Action | None"]


def run_episodes(
    policy: Policy,
    episodes: list[Episode],
    sandbox,
    cfg: EpisodeConfig,
    *,
    generator: torch.Generator | None = None,
    approve: Approve | None = None,
    on_event: Callable[[str, Episode, dict], None] | None = None,
) -> list[Episode]:
    """Advance all episodes together until each submits, runs out of turns, or fills its context."""
    block = policy.model.config.block_size
    fit = policy.model.fit  # environment text in ids this model has rows for (a trimmed vocabulary spells
    for e in episodes:  # the rest as bytes); the policy's own tokens are its rows' ids already
        if not any(e.mask):
            e.tokens = fit(e.tokens)
            e.mask, e.logprobs, e.prompt_len = [0] * len(e.tokens), [0.0] * len(e.tokens), len(e.tokens)
    usage = usage_in(sandbox)
    for turn in range(cfg.max_turns):
        active = [e for e in episodes if not e.done]
        for e in active:
            if len(e.tokens) > block:  # the last observation overflowed the context: keep what fits (mask 0)
                del e.tokens[block:], e.mask[block:], e.logprobs[block:]
            if block - len(e.tokens) < 8:  # no room left for a meaningful action
                e.done, e.status = True, "truncated"
        active = [e for e in active if not e.done]
        if not active:
            break
        room = min(block - len(e.tokens) for e in active)
        greedy = cfg.greedy_until_declined and not any(e.n_declined for e in active)
        samples = policy.sample(
            [e.tokens for e in active],
            min(cfg.max_new_tokens, room),
            temperature=0.0 if greedy else cfg.temperature,
            top_k=cfg.top_k,
            top_p=cfg.top_p,
            stop_tokens=STOP_TOKENS,
            generator=generator,
            copy_below=cfg.copy_below,
        )
        last_turn = turn == cfg.max_turns - 1
        calls: list[tuple[Episode, Action]] = []
        for e, toks, lps in zip(active, samples.tokens, samples.logprobs):
            _append(e, toks, True, lps)
            e.n_turns += 1
            e.turns.append({"turn": turn, "role": "assistant", "text": render(toks)})
            action = parse_action(toks)
            if on_event:
                on_event("action", e, {"action": action})
            if action.kind == "done":
                e.done, e.status = True, "submitted"
            elif action.kind == "invalid":
                e.n_invalid += 1
                _observe(e, f"[invalid action: {action.error}]", turn, last_turn, fit)
            else:
                if approve is not None:
                    approved = approve(e, action)
                    if approved is None:
                        e.n_declined += 1
                        _observe(e, "[not run: the user declined this command]", turn, last_turn, fit)
                        continue
                    action = approved
                calls.append((e, action))
        results = sandbox.run_many([(a.kind, a.code, e.workdir) for e, a in calls]) if calls else []
        for (e, a), r in zip(calls, results):
            e.last_call[a.kind] = a.code
            e.tool_calls.append(r.row(turn, e.workdir))
            if on_event:
                on_event("result", e, {"action": a, "result": r})
            out, err = (unroot(x, e.workdir) for x in (r.stdout, r.stderr))
            hs = (
                find_hints(a.kind, a.code, out, err, r.exit_code, e.workdir, usage=usage) if cfg.hints else []
            )
            _observe(
                e, format_output(out, err, r.exit_code, cfg.obs_chars, render_hints(hs)), turn, last_turn, fit
            )
        if last_turn:
            for e in active:
                if not e.done:
                    e.done, e.status = True, "max_turns"
    for e in episodes:
        e.final = e.last_call.get(e.kind)
        if e.final is None and e.status != "truncated":
            e.status = "no_fix"
        e.ended_at = now_iso()
    return episodes


def unroot(text: str, workdir: Path) -> str:
    """Tool output with the working directory's own path made relative (a traceback's main.py, a find
    listing): every episode runs in a fresh directory, and a random path is nothing to learn from."""
    d = str(workdir)
    return text.replace(d + "/", "").replace(d, ".")


def _observe(e: Episode, text: str, turn: int, last_turn: bool, fit: Callable = lambda ids: ids) -> None:
    """Show the policy what happened. On the last turn there is no next policy turn, so the observation is
    recorded for the log but not appended to the token sequence (it would be trained on nothing)."""
    e.turns.append({"turn": turn, "role": "obs", "text": text})
    if not last_turn:
        _append(e, fit(observation_tokens(text)), False)


def judge(episodes: list[Episode], verifier) -> None:
    """Reward = 1 if the verifier passes the final fix in a fresh fixture, else 0."""
    pairs = [(e.task, e.final) for e in episodes if e.task is not None and e.final is not None]
    verdicts = iter(verifier.verify_many(pairs)) if pairs else iter(())
    for e in episodes:
        if e.task is None:
            continue
        if e.final is None:
            e.passed, e.reward, e.verdict = False, 0.0, "no fix submitted"
            continue
        v = next(verdicts)
        e.passed, e.reward, e.verdict = bool(v.passed), 1.0 if v.passed else 0.0, getattr(v, "reason", "")


def episode_record(
    e: Episode,
    *,
    source: str,
    model: str | None,
    checkpoint: str | None,
    run_id: str | None = None,
    step: int | None = None,
) -> dict:
    """The store row (with its turns and tool calls) for one episode."""
    task = e.task
    return {
        "source": source,
        "task_id": getattr(task, "id", None),
        "family": getattr(task, "family", None),
        "model": model,
        "checkpoint": checkpoint,
        "run_id": run_id,
        "step": step,
        "reward": e.reward,
        "status": None if e.passed is None else ("passed" if e.passed else "failed"),
        "final_command": e.final,
        "started_at": e.started_at,
        "ended_at": e.ended_at,
        "meta": {
            "end": e.status,
            "turns": e.n_turns,
            "invalid": e.n_invalid,
            "policy_tokens": e.policy_tokens,
            "verdict": e.verdict,
            "kind": e.kind,
        },
        "turns": e.turns,
        "tool_calls": e.tool_calls,
    }


class Workdirs:
    """Fresh fixture directories for a batch of task episodes, removed afterwards."""

    def __init__(self, prefix: str = "iclaw-ep-"):
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.n = 0

    def for_task(self, task) -> Path:
        from iclaw.tasks.task import write_fixture

        d = self.root / f"{self.n:05d}"
        self.n += 1
        d.mkdir()
        write_fixture(task.files or {}, d)
        return d

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workdirs:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task_episodes(
    tasks: list, repeats: int, workdirs: Workdirs, sandbox=None, hints: bool = True
) -> list[Episode]:
    """`repeats` fresh episodes per task (a GRPO group), each in its own copy of the fixture."""
    eps = []
    usage = usage_in(sandbox) if sandbox is not None else None
    for t in tasks:
        dirs = [workdirs.for_task(t) for _ in range(repeats)]
        req = task_request(t, dirs[0] if hints else None, usage)
        eps += [new_episode(req, t.kind, d, task=t) for d in dirs]
    return eps


def play(
    policy, tasks: list, repeats: int, sandbox, verifier, cfg: EpisodeConfig, generator=None
) -> list[Episode]:
    """`repeats` episodes per task, advanced together in fresh task directories, tools in the sandbox, each
    judged by the verifier: what evaluation and every trainer's rollout do."""
    with Workdirs() as wd:
        eps = task_episodes(tasks, repeats, wd, sandbox, cfg.hints)
        run_episodes(policy, eps, sandbox, cfg, generator=generator)
    judge(eps, verifier)
    return eps

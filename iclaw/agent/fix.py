"""Fix one broken command: run it in the sandbox, and if it fails let the policy fix it (multi-turn).

This is the core that `iclaw fix` and every turn of `iclaw chat` share. It adds nothing to the episode loop
itself: it runs the user's command once (logged as the episode's first tool call, turn 0, so `tasks mine`
can pair it with the fix), builds the request with the same `format_request` that tasks use, and hands one
Episode to `run_episodes` — the loop that eval and training use — with the caller's `approve` and `on_event`
hooks. The episode is written as it runs (Store.begin_episode / append / end_episode): its row and the user's
run first, then each turn and tool call before the terminal shows it, then the verdict. So a turn ended by
Ctrl-C, Ctrl-D at a confirmation, an exception or a killed process keeps every call that ran (a killed one
stays status "running"); the statuses and meta["end"] values are listed in iclaw/store/schema.py.

"Verified" means the fix ran: the final command (the last tool call of the request's kind, as for tasks) is
judged by the exit code of its own run inside the episode: status "passed" when it exited 0, else "failed".
A final `ls` or `pwd` (the policy's look before a fix) is not a fix of some other command, whatever it exits.
It is deliberately not run a second time: in a user's working directory a second run of e.g. `mkdir out`
would fail because the first one worked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from iclaw.agent.protocol import Action, format_output, format_request

if TYPE_CHECKING:  # episode.py imports torch; chat imports this module before torch has loaded
    from iclaw.agent.episode import Episode, EpisodeConfig

MAX_INPUT_CHARS = 64 * 1024  # a command (or snippet) longer than this is refused before anything runs
LOOKS = ("ls", "pwd")  # what the policy runs to look around before its fix: as the last command, not a fix


@dataclass
class FixResult:
    kind: str  # "bash" | "python"
    broken: str  # what the user gave
    first: object  # ToolResult of running it as given
    episode: Episode | None = None  # None when there was nothing to fix
    episode_id: int | None = None  # row id in the store
    final: str | None = None  # the model's (or the user's edited) last command of `kind`
    final_exit: int | None = None  # exit code of that command's run
    cancelled: bool = False  # Ctrl-C during the turn
    note: str = ""  # why no fix was attempted (e.g. the request does not fit the model's context)
    approvals: list[dict] = field(default_factory=list)

    @property
    def needed_fix(self) -> bool:
        return self.first is not None and self.first.exit_code != 0

    @property
    def only_looked(self) -> bool:
        """The last command only looked around (`ls` after `gerp milk notes.txt`): it exits 0 but fixes nothing.
        A look is the fix when the user's command was that look with a typo or other arguments (`sl`, `ls -j`)."""
        final, broken = (self.final or "").split(), self.broken.split() or [""]
        if self.kind != "bash" or not final:
            return False
        plain = not any(c in self.final for c in "|;&<>")
        return plain and final[0] in LOOKS and not one_edit(broken[0], final[0])

    @property
    def fixed(self) -> bool:
        """A fix ran and exited 0 (or the command worked as given)."""
        if not self.needed_fix:
            return self.first is not None
        return self.final is not None and self.final_exit == 0 and not self.only_looked

    @property
    def command(self) -> str:
        """The command that works (or the last one tried)."""
        return self.final if self.needed_fix and self.final is not None else self.broken

    @property
    def exit_code(self) -> int:
        if not self.needed_fix:
            return self.first.exit_code
        return self.final_exit if self.final_exit is not None else self.first.exit_code

    def to_json(self) -> dict:
        return {
            "fixed": self.fixed,
            "command": self.command,
            "exit_code": self.exit_code,
            "episode": self.episode_id,
            "changed": self.command != self.broken,
        }


def one_edit(a: str, b: str) -> bool:
    """Equal, or one character inserted, deleted, replaced, or two neighbours swapped (`sl` / `ls`)."""
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swap = (
            len(diff) == 2 and diff[1] == diff[0] + 1 and (a[diff[0]], a[diff[1]]) == (b[diff[1]], b[diff[0]])
        )
        return len(diff) == 1 or swap
    short, long = sorted((a, b), key=len)
    return len(long) - len(short) == 1 and any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def clean_text(text: str) -> str:
    """Undecodable bytes (a binary paste, a non-UTF-8 argv) arrive as lone surrogates, which SQLite and
    the tokenizer refuse: turn them into U+FFFD so garbage in is logged as garbage, not a crash."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def classify(text: str) -> tuple[str, str]:
    """(kind, code) for what the user typed. The rule (documented in `iclaw chat` /help):

    `/py CODE` or a first line `python:`  → python (prefix removed)
    `/sh CODE`                            → bash   (prefix removed; forces bash for a multi-line script)
    more than one line                    → python (a pasted snippet)
    anything else                         → bash
    """
    stripped = text.strip("\n")
    if stripped.strip() in ("/py", "/sh"):
        return ("python" if stripped.strip() == "/py" else "bash"), ""
    for prefix, kind in (("/py ", "python"), ("/py\n", "python"), ("/sh ", "bash"), ("/sh\n", "bash")):
        if stripped.startswith(prefix):
            return kind, stripped[len(prefix) :].strip("\n")
    first, _, rest = stripped.partition("\n")
    if first.strip().lower().startswith("python:"):
        head = first.strip()[len("python:") :].strip()
        return "python", (head + "\n" + rest if head and rest else head or rest).strip("\n")
    if "\n" in stripped:
        return "python", stripped
    return "bash", stripped.strip()


def tool_call_row(result, turn: int, cwd: Path) -> dict:
    """A ToolResult as a store tool_calls row (the same keys run_episodes writes)."""
    return {
        "turn": turn,
        "tool": result.tool,
        "input": result.input,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "timed_out": result.timed_out,
        "signal": result.signal,
        "cwd": str(cwd),
    }


class Fixer:
    """Runs "try it, then fix it" turns for one policy in one working directory, logging each to `store`."""

    def __init__(
        self,
        policy,
        sandbox,
        store,
        cfg: EpisodeConfig,
        cwd: Path,
        *,
        source: str,
        model_name: str | None = None,
    ):
        self.policy, self.sandbox, self.store, self.cfg = policy, sandbox, store, cfg
        self.cwd = Path(cwd).resolve()
        self.source = source
        self.model_name = model_name

    def run(
        self,
        kind: str,
        code: str,
        *,
        approve: Callable[[Episode, Action], Action | None] | None = None,
        on_event: Callable[[str, Episode, dict], None] | None = None,
        on_first: Callable[[object], None] | None = None,
    ) -> FixResult:
        """Run `code`; if it fails, run one episode to fix it. Ctrl-C cancels the turn and an EOFError from
        `approve` (Ctrl-D at a confirmation) stops it; either way what ran is logged."""
        from iclaw.agent.episode import episode_record, new_episode, run_episodes
        from iclaw.store import now_iso

        started = now_iso()
        try:
            first = self.sandbox.run(kind, code, self.cwd)
        except KeyboardInterrupt:
            return FixResult(kind, code, None, cancelled=True)
        res = FixResult(kind, code, first)
        request = None
        if res.needed_fix:
            out = format_output(first.stdout, first.stderr, first.exit_code, self.cfg.obs_chars)
            request = format_request(kind, code, out)
        user_turn = {"turn": 0, "role": "user", "text": request or code}
        call0 = tool_call_row(first, 0, self.cwd)  # turn 0: the user's own run
        res.episode_id = self.store.begin_episode(
            source=self.source,
            model=self.policy.name or self.model_name,
            checkpoint=self.policy.ckpt_id,
            started_at=started,
            meta=self._base_meta(res),
            turns=[user_turn],
            tool_calls=[call0],
        )
        if on_first is not None:
            on_first(first)
        if not res.needed_fix:
            # Nothing to fix: still one episode (the tool call is data), with no model turn.
            self.store.end_episode(res.episode_id, "passed", meta=self._meta(res, end="nothing_to_fix"))
            return res

        ep = new_episode(request, kind, self.cwd)
        ep.started_at = started
        ep.tool_calls.append(call0)
        res.episode = ep
        written = {"turns": len(ep.turns), "tool_calls": len(ep.tool_calls)}  # begin_episode wrote these

        def unwritten() -> dict:
            new = {
                "turns": ep.turns[written["turns"] :],
                "tool_calls": ep.tool_calls[written["tool_calls"] :],
            }
            written.update(turns=len(ep.turns), tool_calls=len(ep.tool_calls))
            return new

        def write_then_show(event: str, e: Episode, info: dict) -> None:
            # Into the store before the terminal shows it (and before approve asks): what was seen is logged.
            self.store.append(res.episode_id, **unwritten())
            if on_event is not None:
                on_event(event, e, info)

        block = self.policy.model.config.block_size
        if block - len(ep.tokens) < 8:
            res.note = (
                f"the request is {len(ep.tokens)} tokens; the model's context is {block}: "
                "too long to fix (shorten the command or its output)"
            )

        def approve_and_record(e: Episode, action: Action) -> Action | None:
            try:
                out = approve(e, action) if approve is not None else action
            except EOFError:  # Ctrl-D: this command is declined too, then the turn stops
                res.approvals.append(
                    {"turn": e.n_turns - 1, "proposed": action.code, "decision": "declined", "ran": None}
                )
                raise
            decision = "declined" if out is None else ("edited" if out.code != action.code else "approved")
            res.approvals.append(
                {
                    "turn": e.n_turns - 1,
                    "proposed": action.code,
                    "decision": decision,
                    "ran": None if out is None else out.code,
                }
            )
            return out

        error = None
        try:
            run_episodes(
                self.policy,
                [ep],
                self.sandbox,
                self.cfg,
                approve=approve_and_record,
                on_event=write_then_show,
            )
        except KeyboardInterrupt:
            res.cancelled, ep.status = True, "interrupted"
        except EOFError:  # Ctrl-D at a confirmation (or the terminal went away): no, and stop here
            ep.status = "eof"
        except Exception as e:  # logged with what ran, then raised again
            error, ep.status = e, "error"
        if ep.status in ("interrupted", "eof", "error"):
            ep.done, ep.ended_at = True, now_iso()
            ep.final = ep.last_call.get(kind)
        res.final = ep.final
        for c in reversed(ep.tool_calls[1:]):  # the run of the final command (not the user's turn-0 run)
            if c["tool"] == kind and c["input"] == res.final:
                res.final_exit = c["exit_code"]
                break
        rec = episode_record(
            ep, source=self.source, model=self.policy.name or self.model_name, checkpoint=self.policy.ckpt_id
        )
        rec["meta"].update(self._meta(res, end=ep.status))
        if error is not None:
            rec["meta"]["error"] = f"{type(error).__name__}: {error}"
        status = "error" if error is not None else ("passed" if res.fixed else "failed")
        self.store.end_episode(
            res.episode_id,
            status,
            final_command=res.final,
            meta=rec["meta"],
            ended_at=ep.ended_at,
            **unwritten(),
        )
        if error is not None:
            raise error
        return res

    def _base_meta(self, res: FixResult) -> dict:
        """What is known when the episode begins (all that a killed one keeps)."""
        return {
            "kind": res.kind,
            "cwd": str(self.cwd),
            "sandbox": self.sandbox.level,
            "net": bool(self.sandbox.net),
            "broken_exit": res.first.exit_code,
        }

    def _meta(self, res: FixResult, end: str) -> dict:
        return {
            "end": end,
            **self._base_meta(res),
            "fixed": res.fixed,
            "final_exit": res.final_exit,
            "approvals": res.approvals,
            **({"note": res.note} if res.note else {}),
        }


def fix_main(
    command: str,
    *,
    model: str = "demo",
    yes: bool = False,
    as_json: bool = False,
    db: Path | None = None,
    max_turns: int = 3,
    net: bool = False,
    python: bool = False,
    temperature: float = 0.7,
    cwd: Path | None = None,
) -> int:
    """`iclaw fix`: returns the process exit code (0: fixed, see FixResult.fixed; 1: not fixed;
    130: cancelled). The transcript goes to stderr; stdout gets only the fixed command (or, with --json,
    one JSON object), so `$(iclaw fix ...)` and `iclaw fix ... --json | jq` work."""
    import json
    import os
    import sys

    from rich.console import Console

    from iclaw.agent.terminal import Confirm, Transcript, load_policy, stdin_is_tty
    from iclaw.errors import IclawError
    from iclaw.model import registry
    from iclaw.store import Store
    from iclaw.tools.sandbox import Sandbox

    command = clean_text(command)
    kind, code = ("python", command) if python else classify(command)
    if not code.strip():
        raise IclawError("COMMAND: empty command")
    if len(code) > MAX_INPUT_CHARS:
        raise IclawError(f"COMMAND: {len(code):,} characters; the limit is {MAX_INPUT_CHARS:,}")
    if max_turns < 1:
        raise IclawError(f"--max-turns: must be at least 1, got {max_turns}")
    registry.resolve(model)  # an unknown model: one line, before torch loads
    err = Console(stderr=True, highlight=False)
    sandbox = Sandbox(workspace=True, net=net)
    if sandbox.level != "bwrap":
        err.print(
            f"[bold yellow]warning:[/] no bwrap sandbox ({sandbox.reason}): commands run with rlimits "
            "only and can touch your files"
        )
    if yes:
        approve = Confirm(err, auto=True)
    elif stdin_is_tty():
        from prompt_toolkit.output import create_output

        approve = Confirm(err, output=create_output(stdout=sys.stderr))  # keep stdout for the result
    else:
        err.print(
            "[yellow]stdin is not a terminal, so nobody can confirm model commands: each one is "
            "declined (pass --yes to run them, still inside the sandbox)[/]"
        )

        def approve(ep, action):  # noqa: ARG001 — the loop's approve signature
            return None

    with Store(db) as store:
        policy = load_policy(model)
        from iclaw.agent.episode import EpisodeConfig

        cfg = EpisodeConfig(max_turns=max_turns, temperature=temperature)
        fixer = Fixer(policy, sandbox, store, cfg, Path(cwd or os.getcwd()), source="fix", model_name=model)
        view = Transcript(err, policy.label, rate_hint="iclaw replay {id} --rate good")
        res = fixer.run(
            kind,
            code,
            approve=approve,
            on_event=view.on_event,
            on_first=lambda r: view.on_first(kind, code, r),
        )
        view.summary(res)
    if as_json:
        print(json.dumps(res.to_json(), ensure_ascii=False))
    elif res.fixed:
        print(res.command)
    if res.cancelled:
        return 130
    return 0 if res.fixed else 1

"""Fix one broken command: run it in the sandbox, and if it fails find a fix that works, then propose it.

This is the core that `iclaw fix` and every turn of `iclaw chat` share. It runs the user's command once
(logged as the episode's first tool call, turn 0, so `tasks mine` can pair it with the fix) and builds the
request with the same `format_request` that tasks use, its output ending with the hint line
(iclaw/tools/hints.py: the nearest commands, names, options, git's and Python's own suggestions).

`iclaw fix` (search=True) then searches (iclaw/agent/search.py): the hints' candidates, the policy's greedy
episode and, if nothing works yet, a few sampled ones, each run in a throwaway copy of the folder; the ones
that worked are proposed best first through `approve`, and only the approved one runs in the user's folder.
Chat (search=False) hands one Episode to `run_episodes`, asking before each command the model writes.
The episode is written as it runs (Store.begin_episode / append / end_episode): its row and the user's run
first, then each turn and tool call (the search's in the copies too, with their cwd) before the terminal
shows it, then the verdict and every candidate tried (meta["candidates"]). So a turn ended by Ctrl-C, Ctrl-D
at a confirmation, an exception or a killed process keeps every call that ran (a killed one stays status
"running"); the statuses and meta["end"] values are listed in iclaw/store/schema.py.

"Verified" means the fix ran in the user's folder and exited 0: status "passed", else "failed". A final `ls`
or `pwd` (the policy's look before a fix) is not a fix of some other command, whatever it exits. It is
deliberately not run a second time: in a user's working directory a second run of e.g. `mkdir out` would
fail because the first one worked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from iclaw.agent import search as S
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
    candidates: list[dict] = field(default_factory=list)  # every fix tried in a throwaway copy (search.py)

    @property
    def needed_fix(self) -> bool:
        return self.first is not None and self.first.exit_code != 0

    @property
    def only_looked(self) -> bool:
        """The last command only looked around (`ls` after `gerp milk notes.txt`): it exits 0 but fixes nothing.
        A look is the fix when the user's command was that look with a typo or other arguments (`sl`, `ls -j`),
        or when it looks at what the user named (`ls src` for `cat src`): search.only_looks."""
        return self.final is not None and S.only_looks(self.kind, self.broken, self.final)

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
        search: bool = True,
    ):
        self.policy, self.sandbox, self.store, self.cfg = policy, sandbox, store, cfg
        self.cwd = Path(cwd).resolve()
        self.source = source
        self.model_name = model_name
        self.search = search  # fix: search in copies, propose what worked; chat (False): ask at every command

    def run(
        self,
        kind: str,
        code: str,
        *,
        approve: Callable[[Episode, Action], Action | None] | None = None,
        on_event: Callable[[str, Episode, dict], None] | None = None,
        on_first: Callable[[object], None] | None = None,
    ) -> FixResult:
        """Run `code`; if it fails, search for a fix in throwaway copies of the folder (iclaw/agent/search.py)
        and propose the verified candidates, best first, until one is approved: only that one runs here.
        Ctrl-C cancels the turn and an EOFError from `approve` (Ctrl-D at a confirmation) stops it; either way
        what ran is logged."""
        from iclaw.agent.episode import episode_record, new_episode, run_episodes
        from iclaw.store import now_iso
        from iclaw.tools import hints as H

        started = now_iso()
        try:
            first = self.sandbox.run(kind, code, self.cwd)
        except KeyboardInterrupt:
            return FixResult(kind, code, None, cancelled=True)
        res = FixResult(kind, code, first)
        request, hints = None, []
        if res.needed_fix:
            usage = H.usage_in(self.sandbox)
            history = self.store.worked_before(kind) if self.cfg.hints else []
            if self.cfg.hints:
                hints = H.find_hints(
                    kind,
                    code,
                    first.stdout,
                    first.stderr,
                    first.exit_code,
                    self.cwd,
                    history=history,
                    usage=usage,
                )
            out = format_output(
                first.stdout, first.stderr, first.exit_code, self.cfg.obs_chars, H.render(hints)
            )
            request = format_request(kind, code, out)
        user_turn = {"turn": 0, "role": "user", "text": request or code}
        call0 = first.row(0, self.cwd)  # turn 0: the user's own run
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

        scratch = S.Scratch(self.cwd, S.named_in(code)) if self.search else None
        ep = new_episode(request, kind, scratch.fresh() if scratch else self.cwd)
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

        def turn_of(e: Episode) -> int:  # a model turn asks during its turn; a searched fix after them
            return e.n_turns if self.search else e.n_turns - 1

        def approve_and_record(e: Episode, action: Action) -> Action | None:
            try:
                out = approve(e, action) if approve is not None else action
            except EOFError:  # Ctrl-D: this command is declined too, then the turn stops
                res.approvals.append(
                    {"turn": turn_of(e), "proposed": action.code, "decision": "declined", "ran": None}
                )
                raise
            decision = "declined" if out is None else ("edited" if out.code != action.code else "approved")
            res.approvals.append(
                {
                    "turn": turn_of(e),
                    "proposed": action.code,
                    "decision": decision,
                    "ran": None if out is None else out.code,
                }
            )
            return out

        error = None
        try:
            if self.search:
                self._propose(
                    ep, request, kind, code, hints, scratch, write_then_show, approve_and_record, res
                )
            else:  # chat: every command the model writes is asked about and runs here (iclaw/agent/chat.py)
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
            ep.final = None if self.search else ep.last_call.get(kind)
        res.final = ep.final
        for c in reversed(ep.tool_calls[1:]):  # the run in the user's folder (not a try in a copy)
            if c["tool"] == kind and c["input"] == res.final and c["cwd"] == str(self.cwd):
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

    def _propose(self, ep, request, kind, code, hints, scratch, write_then_show, approve, res) -> None:
        """Search (in copies), then propose the working candidates best first; the first approved one runs
        in the user's folder and is the final command. None approved: no final command."""
        with scratch:
            ranked = self._search(ep, request, kind, code, hints, scratch, write_then_show, res)
        ep.workdir, ep.final = self.cwd, None  # what is proposed runs here, once approved
        for cand in ranked:
            proposal = Action(kind, cand.code, changes=tuple(cand.changes))
            write_then_show("proposal", ep, {"action": proposal, "candidate": cand.row()})
            action = approve(ep, proposal)
            if action is None:
                continue
            r = self.sandbox.run(kind, action.code, self.cwd)
            ep.tool_calls.append(r.row(ep.n_turns, self.cwd))
            ep.last_call[kind] = ep.final = action.code
            write_then_show("result", ep, {"action": action, "result": r})
            return

    def _search(self, ep, request, kind, code, hints, scratch, write_then_show, res) -> list:
        """The hints' candidates, the policy's greedy episode (logged, in a copy) and, when nothing works yet,
        sampled ones; each verified in a fresh copy, a failed one given a second round of hints; the working
        ones ranked (iclaw/agent/search.py)."""
        from dataclasses import replace

        from iclaw.agent.episode import new_episode, run_episodes
        from iclaw.tools import hints as H

        usage = H.usage_in(self.sandbox)
        cands: list[S.Candidate] = []

        def tried(new: list[S.Candidate]) -> None:
            new = S.unique(new, cands)
            S.verify(new, kind, code, self.sandbox, scratch)
            cands.extend(new)
            if self.cfg.hints:
                more = S.unique(S.more_hints(kind, code, new, self.cwd, usage=usage), cands)
                S.verify(more, kind, code, self.sandbox, scratch)
                cands.extend(more)

        tried(S.hint_candidates(kind, code, hints))
        cfg = replace(self.cfg, temperature=0.0, greedy_until_declined=False)
        if kind == "bash":  # a shell fix is one line; a policy that loops must not cost seconds
            cfg = replace(cfg, max_new_tokens=min(cfg.max_new_tokens, S.BASH_TOKENS))
        if not res.note:
            run_episodes(self.policy, [ep], self.sandbox, cfg, on_event=write_then_show)
            tried([S.Candidate(ep.final, "greedy")] if ep.final else [])
            if self.cfg.temperature > 0 and S.SAMPLES and not S.rank(cands, kind, code):
                samples = [new_episode(request, kind, scratch.fresh()) for _ in range(S.SAMPLES)]
                run_episodes(
                    self.policy, samples, self.sandbox, replace(cfg, temperature=self.cfg.temperature)
                )
                tried([S.Candidate(e.final, "sample") for e in samples if e.final])
            if cands:
                S.score(self.policy, request, kind, cands)
        res.candidates = [c.row() for c in cands]
        return S.rank(cands, kind, code)

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
            "candidates": res.candidates,
            **({"note": res.note} if res.note else {}),
        }

"""The terminal side of one fix turn, shared by `iclaw chat` (iclaw/agent/chat.py) and `iclaw fix`.

`Transcript` is the episode loop's `on_event` hook: it prints the user's run, each model action and each tool
result as they happen. `Confirm` is its `approve` hook: [y]es / [n]o / [e]dit / [a]lways before a model
command runs; only keys pressed after the question is up can answer it (see Confirm). Output shown here is
capped for the terminal (`cap_display`); the store keeps all of it.
Both front ends also share the prompt's key bindings (`line_keys`), `load_policy` and `stdin_is_tty`.
"""

from __future__ import annotations

import re
import select
import shlex
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from iclaw.agent.fix import FixResult
from iclaw.agent.protocol import Action

DISPLAY_CHARS = 2000  # per stream shown in the terminal; the store keeps what the sandbox captured
QUIET_S = 0.3  # an answer key this soon after other typing is more of that typing, not an answer


def cap_display(text: str, keep: str = "head", limit: int = DISPLAY_CHARS) -> str:
    text = text.rstrip("\n")
    if len(text) <= limit:
        return text
    more = len(text) - limit
    if keep == "head":
        return text[:limit] + f"\n[... {more} more characters; /replay shows all that was kept]"
    return f"[... {more} characters before this; /replay shows all that was kept]\n" + text[-limit:]


def show_code(console: Console, code: str, kind: str, title: str) -> None:
    console.print(f"[bold cyan]{escape(title)}[/] [dim]({kind})[/]")
    console.print(
        Syntax(
            code,
            "python" if kind == "python" else "bash",
            theme="ansi_dark",
            background_color="default",
            word_wrap=True,
        )
    )


def show_run(console: Console, r) -> None:
    """Exit code (coloured), duration, flags, then the output (capped for the terminal)."""
    colour = "green" if r.exit_code == 0 else "red"
    info = [f"[bold {colour}]exit {r.exit_code}[/]", f"{r.duration_ms:.0f} ms"]
    if r.timed_out:
        info.append("[bold red]timed out[/]")
    elif r.signal is not None:
        info.append(f"[red]signal {r.signal}[/]")
    if r.stdout_truncated or r.stderr_truncated:
        info.append("[yellow]output capped by the sandbox[/]")
    console.print("  " + " · ".join(info))
    if r.stdout.strip():
        console.print(escape(cap_display(r.stdout, "head")), soft_wrap=True)
    if r.stderr.strip():
        console.print(f"[red]{escape(cap_display(r.stderr, 'tail'))}[/]", soft_wrap=True)


def load_policy(name: str):
    """Policy for a registered name or a checkpoint path (IclawError if unknown). Imports torch."""
    from iclaw.agent.policy import Policy

    return Policy.load(name)


def line_keys():
    """Enter submits; Esc+Enter, or Enter after a trailing backslash, inserts a newline."""
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    # c-j too: a line typed ahead while a turn runs (terminal in cooked mode) arrives with its Enter as \n
    @kb.add("enter")
    @kb.add("c-j")
    def _enter(event):
        buf = event.current_buffer
        doc = buf.document
        if doc.is_cursor_at_the_end and doc.text.endswith("\\"):  # continuation: `\` + Enter
            buf.delete_before_cursor(1)
            buf.insert_text("\n")
        else:
            buf.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    return kb


class Transcript:
    """Renders one turn as it happens: the user's run, each model action, each tool result, the outcome."""

    def __init__(self, console: Console, label: str, rate_hint: str = "/rate good"):
        self.c, self.label = console, label
        self.rate_hint = rate_hint  # how to rate the episode from here ({id} is filled in)
        self.proposed: str | None = None

    def on_first(self, kind: str, code: str, r) -> None:
        show_code(self.c, code, kind, "you")
        show_run(self.c, r)
        if r.exit_code != 0:
            self.c.print(
                f"[dim]looking for a fix in throwaway copies of this folder ({escape(self.label)})…[/]"
            )

    def on_event(self, event: str, ep, info: dict) -> None:
        a: Action = info["action"]
        if event == "proposal":
            self.proposed = a.code
            show_code(self.c, a.code, a.kind, "fix (it worked in a copy of this folder)")
            return
        if event == "action":
            n = ep.n_turns
            if a.kind == "done":
                self.c.print(f"[magenta]model (turn {n}):[/] done")
            elif a.kind == "invalid":
                said = a.code.replace("\n", "⏎")[:80]
                self.c.print(
                    f"[magenta]model (turn {n}):[/] [dim]invalid action — {escape(a.error)}"
                    + (f": {escape(repr(said))}" if said else "")
                    + "[/]"
                )
            else:
                self.proposed = a.code
                show_code(self.c, a.code, a.kind, f"model (turn {n})")
        elif event == "result":
            if a.code != self.proposed:
                show_code(self.c, a.code, a.kind, "you (edited)")
            show_run(self.c, info["result"])

    def summary(self, res: FixResult) -> None:
        c = self.c
        if res.cancelled:
            c.print(
                "[yellow]cancelled[/]" + (f" · logged as episode {res.episode_id}" if res.episode_id else "")
            )
        elif not res.needed_fix:
            c.print(f"[green]works as is — nothing to fix[/] [dim](episode {res.episode_id})[/]")
        else:
            if res.note:
                c.print(f"[yellow]{escape(res.note)}[/]")
            if res.fixed:
                c.print(f"[bold green]fixed:[/] {escape(res.final)}")
            elif res.only_looked and res.final_exit == 0:
                c.print(f"[bold red]no fix[/] [dim](the model only looked: {escape(res.final)})[/]")
            else:
                why = res.episode.status if res.episode else "?"
                c.print(f"[bold red]no working fix[/] [dim]({why})[/]")
            c.print(
                f"[dim]episode {res.episode_id} · {escape(self.label)} · "
                f"{escape(self.rate_hint.format(id=res.episode_id))} keeps it as a training task[/]"
            )


_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
# `>`, `>|`, `N>`, `&>`: a redirection that truncates its target (not `>>`, `>&2`, `<>`)
_TRUNCATE = re.compile(r"(?<![<>&])(?:&|\d)?>\|?(?![>&])")


def overwritten_files(code: str, cwd: Path) -> list[str]:
    """The files that exist in `cwd` and that the bash command `code` would truncate with a redirection:
    `wc -l notes.txt > notes.txt` empties notes.txt before wc reads it. Quoted text is not a redirection."""
    masked = _QUOTED.sub(lambda m: "_" * len(m.group()), code)
    out = []
    for m in _TRUNCATE.finditer(masked):
        lex = shlex.shlex(code[m.end() :], posix=True, punctuation_chars=";&|<>()")
        try:
            target = lex.get_token()
        except ValueError:  # an unbalanced quote: bash will not run it either
            continue
        if target and not target.startswith(("~", "$")) and (cwd / target).is_file() and target not in out:
            out.append(target)
    return out


class Confirm:
    """The `approve` hook of the episode loop: [y]es / [n]o / [e]dit / [a]lways before a model command runs.

    auto=True (--yes, /yes, or answering `a`) approves without asking; commands still run in the sandbox.
    Except a command that would overwrite a file that exists (`overwritten_files`), or whose dry run in a copy
    deleted, emptied, replaced or changed one (`action.changes`, iclaw/agent/search.py): that is asked about
    always, naming the change, and declined when there is no terminal to ask on.
    Ctrl-C cancels the whole turn (KeyboardInterrupt propagates); Ctrl-D declines and stops the turn
    (EOFError).

    Only a deliberate key answers. Keys typed before the question was up (typed ahead while the model worked)
    are taken off the input first and never read as an answer, and so are keys typed at the question in the
    middle of other typing (a letter within QUIET_S of another key); Enter means yes only when no other key
    came. Those keys are kept in `held`: chat puts them back into the next input line (`typed_ahead`), for
    the user to see and submit, never submitted by themselves."""

    def __init__(self, console: Console, *, auto: bool = False, input=None, output=None):
        self.c, self.auto = console, auto
        self._input, self._output = input, output
        self._session = None
        self.held: list = []  # prompt-toolkit KeyPresses that were typing, not answers

    def session(self):
        from prompt_toolkit import PromptSession

        if self._session is None:
            self._session = PromptSession(
                input=self._input, output=self._output, key_bindings=line_keys(), multiline=True
            )
        return self._session

    def typed_ahead(self) -> str:
        """The held keys as the text they typed (taken once), for the next input line."""
        text, self.held = keys_text(self.held).strip("\n"), []
        return text

    def choose(self) -> str:
        from prompt_toolkit.key_binding import KeyBindings

        session = self.session()
        early = pending_keys(session.app.input)
        self.held += early
        typing = {"at": time.monotonic() if early else None}  # when the last key that was not an answer came

        def other(event) -> None:
            self.held.extend(event.key_sequence)
            typing["at"] = time.monotonic()

        kb = KeyBindings()
        kb.add("<any>")(other)
        for keys, answer in (
            ("y", "y"),
            ("Y", "y"),
            ("enter", "y"),
            ("n", "n"),
            ("N", "n"),
            ("e", "e"),
            ("E", "e"),
            ("a", "a"),
            ("A", "a"),
        ):

            @kb.add(keys)
            def _answer(event, answer=answer, enter=keys == "enter"):
                at = typing["at"]
                if at is not None and (enter or time.monotonic() - at < QUIET_S):
                    other(event)  # part of other typing: kept for the next line, not an answer
                else:
                    event.app.exit(result=answer)

        @kb.add("c-d")
        def _eof(event):
            event.app.exit(exception=EOFError())

        def message() -> str:  # once other keys came, Enter is no answer: no [Y] default to show
            if typing["at"] is None:
                return "run it? [Y]es / [n]o / [e]dit / [a]lways "
            return "run it? press y/n/e/a (what you typed is kept for the next line) "

        # multiline=False: a multiline prompt shows nothing at all once its message is wider than the terminal
        return session.prompt(message, key_bindings=kb, multiline=False)

    def __call__(self, ep, action: Action) -> Action | None:
        clobbers = overwritten_files(action.code, Path(ep.workdir)) if action.kind == "bash" else []
        if clobbers or action.changes:  # asked even under --yes / always: the sandbox writes the user's files
            if clobbers:
                self.c.print(
                    f"[bold yellow]this would overwrite {escape(', '.join(clobbers))}, which exists here[/]"
                )
            if action.changes:
                said = "; ".join(action.changes)
                self.c.print(f"[bold yellow]in a copy of this folder it {escape(said)}[/]")
            if self.auto and self._input is None and not stdin_is_tty():
                self.c.print("[dim]declined: nobody to confirm it (run it yourself if you mean it)[/]")
                return None
        elif self.auto:
            return action
        answer = self.choose()
        if answer == "a":
            self.auto = True
            self.c.print("[dim]auto-approve on until you leave this chat (/yes turns it off)[/]")
            return action
        if answer == "n":
            self.c.print("[dim]declined[/]")
            return None
        if answer == "e":
            try:
                # key_bindings again: prompt() arguments stick to the session, and choose() set its own
                edited = self.session().prompt(
                    "edit> ", default=action.code, key_bindings=line_keys(), multiline=True
                )
            except EOFError:
                return None
            if not edited.strip():
                self.c.print("[dim]empty: declined[/]")
                return None
            return Action(action.kind, code=edited)
        return action


def pending_keys(inp) -> list:
    """Take the keys typed but not read yet off a prompt-toolkit input: those an earlier prompt read past its
    Enter (prompt-toolkit's typeahead), then what waits in the terminal, read in raw mode so that a half-typed
    line the tty's line editor still holds comes too."""
    from prompt_toolkit.input.typeahead import get_typeahead
    from prompt_toolkit.keys import Keys

    keys = list(get_typeahead(inp))
    try:
        with inp.raw_mode():
            while not inp.closed and select.select([inp.fileno()], [], [], 0)[0]:
                keys += inp.read_keys()
            keys += inp.flush_keys()
    except (OSError, ValueError):  # no readable terminal (stdin closed): nothing is pending
        pass
    return [k for k in keys if k.key != Keys.CPRResponse]


def keys_text(keys: list) -> str:
    """The text a list of prompt-toolkit KeyPresses types into a line: characters, pastes, Enter as a newline,
    backspace applied; other keys (arrows, Ctrl-…) dropped."""
    from prompt_toolkit.keys import Keys

    out: list[str] = []
    for k in keys:
        if k.key in (Keys.ControlM, Keys.ControlJ):
            out.append("\n")
        elif k.key == Keys.Backspace:
            if out:
                out.pop()
        elif k.key == Keys.BracketedPaste:
            out.append(k.data)
        elif len(k.key) == 1 and k.key.isprintable():
            out.append(k.key)
    return "".join(out)


def stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False

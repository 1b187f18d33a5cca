"""`iclaw chat`: the interactive agent. Type a broken command, watch it fail in the sandbox, let the policy fix it.

Each input line is one turn of `Fixer.run` (iclaw/agent/fix.py), i.e. one episode of the shared loop:

    you type      `ehco hi`                      runs in the sandbox, in your current directory (writable;
                                                 the rest of the system read-only, home and env hidden,
                                                 no network unless --net), and fails
    the policy    proposes `echo hi`             you answer [y]es / [n]o / [e]dit / [a]lways (Enter = yes)
    the sandbox   runs it; output goes back to the policy, which may try again (--max-turns) or say done

Keys: Enter submits; Esc then Enter (or a line ending in `\\`) inserts a newline; a paste keeps its newlines;
Ctrl-C cancels the current turn (or clears the line), Ctrl-D on an empty line exits; Up/Down and Ctrl-R search
the history, kept in $ICLAW_HOME/chat_history.

Which tool: `/py CODE` or a first line `python:` → Python; `/sh CODE` → bash; input of more than one line →
Python (a pasted snippet); anything else → bash.

Hot reload: before each turn the policy checks the registry's `latest` pointer for its name (one small file
read) and loads a newer checkpoint if a trainer published one; episodes log the checkpoint they ran with.
Checking between turns, never inside one, keeps one checkpoint per logged episode.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from iclaw.agent.fix import MAX_INPUT_CHARS, Fixer, FixResult, classify, clean_text
from iclaw.agent.protocol import Action
from iclaw.errors import IclawError

DISPLAY_CHARS = 2000  # per stream shown in the terminal; the store keeps what the sandbox captured
PROMPT = "iclaw> "
SLASH_HELP = [
    ("/help", "this help"),
    ("/model NAME", "switch to another registered model (or a checkpoint path)"),
    ("/reload", "check now for a newer checkpoint of the current model"),
    ("/yes", "toggle auto-approve of model commands (they still run in the sandbox)"),
    ("/history [N]", "the last N chat episodes in the database"),
    ("/replay [ID]", "show an episode as a transcript (default: the last one)"),
    ("/rate good|bad [ID]", "rate the last episode (good ones become training tasks: `iclaw tasks mine`)"),
    ("/py CODE, /sh CMD", "force Python or bash for this input"),
    ("/quit", "exit (also Ctrl-D)"),
]
COMMANDS = {"help", "model", "reload", "yes", "history", "replay", "rate", "quit", "exit", "q"}


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
            self.c.print(f"[dim]asking {escape(self.label)} to fix it…[/]")

    def on_event(self, event: str, ep, info: dict) -> None:
        a: Action = info["action"]
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
            else:
                why = res.episode.status if res.episode else "?"
                c.print(f"[bold red]no working fix[/] [dim]({why})[/]")
            c.print(
                f"[dim]episode {res.episode_id} · {escape(self.label)} · "
                f"{escape(self.rate_hint.format(id=res.episode_id))} keeps it as a training task[/]"
            )


class Confirm:
    """The `approve` hook of the episode loop: [y]es / [n]o / [e]dit / [a]lways before a model command runs.

    auto=True (--yes, /yes, or answering `a`) approves without asking; commands still run in the sandbox.
    Ctrl-C cancels the whole turn (KeyboardInterrupt propagates); Ctrl-D answers no."""

    def __init__(self, console: Console, *, auto: bool = False, input=None, output=None):
        self.c, self.auto = console, auto
        self._input, self._output = input, output
        self._session = None

    def session(self):
        from prompt_toolkit import PromptSession

        if self._session is None:
            self._session = PromptSession(
                input=self._input, output=self._output, key_bindings=line_keys(), multiline=True
            )
        return self._session

    def choose(self) -> str:
        from prompt_toolkit.key_binding import KeyBindings

        kb = KeyBindings()

        @kb.add("<any>")
        def _ignore(event):
            pass

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
            ("c-d", "n"),
        ):

            @kb.add(keys)
            def _answer(event, answer=answer):
                event.app.exit(result=answer)

        return self.session().prompt("run it? [Y]es / [n]o / [e]dit / [a]lways ", key_bindings=kb)

    def __call__(self, ep, action: Action) -> Action | None:
        if self.auto:
            return action
        answer = self.choose()
        if answer == "a":
            self.auto = True
            self.c.print("[dim]auto-approve on for this session (/yes turns it off)[/]")
            return action
        if answer == "n":
            self.c.print("[dim]declined[/]")
            return None
        if answer == "e":
            try:
                # key_bindings again: prompt() arguments stick to the session, and choose() set its own
                edited = self.session().prompt("edit> ", default=action.code, key_bindings=line_keys())
            except EOFError:
                return None
            if not edited.strip():
                self.c.print("[dim]empty: declined[/]")
                return None
            return Action(action.kind, code=edited)
        return action


class Chat:
    """The REPL. `input`/`output` are prompt-toolkit objects (tests pass a pipe input and DummyOutput)."""

    def __init__(
        self,
        model: str = "demo",
        *,
        db: Path | None = None,
        net: bool = False,
        yes: bool = False,
        max_turns: int = 3,
        temperature: float = 0.7,
        cwd: Path | None = None,
        console: Console | None = None,
        input=None,
        output=None,
        history_path: Path | None = None,
    ):
        from iclaw.model import registry
        from iclaw.store import check_db_file, default_db_path
        from iclaw.tools.sandbox import Sandbox

        self.console = console or Console(highlight=False)
        self.model_name = model
        registry.resolve(model)  # a missing model fails here, in one line, before torch is imported
        self.cwd = Path(cwd or os.getcwd()).resolve()
        self.sandbox = Sandbox(workspace=True, net=net)
        # Slow imports (torch ~2 s, sqlite-utils ~0.5 s on 2 busy cores) run on threads while the prompt is
        # already up: typing the first command overlaps them. The first turn waits for what it needs.
        # A --db that is not SQLite at all still fails here, in one line (a cheap header check).
        self.db_path = Path(db) if db is not None else default_db_path()
        check_db_file(self.db_path)
        self._store = None
        self._opening = None  # Futures, started by _start()
        self.max_turns, self.temperature = max_turns, temperature
        self._policy = None
        self._loading = None
        self._started = False
        self._load_error: str | None = None
        self.last_episode: int | None = None
        self._failed_reload: str | None = None  # a checkpoint that failed to load: don't retry every turn
        self._input, self._output = input, output
        self.history_path = history_path or registry.iclaw_home() / "chat_history"
        self._session = None  # the prompt-toolkit session, made by run()
        self.confirm = Confirm(self.console, auto=yes, input=input, output=output)

    # -- prompt-toolkit -----------------------------------------------------------------------------

    def _make_session(self):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        try:
            self.history_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.history_path, "a"):  # writable? (FileHistory only opens it on the first entry)
                pass
            history = FileHistory(str(self.history_path))
        except OSError as e:
            self.console.print(f"[yellow]history not saved ({escape(str(e))})[/]")
            history = InMemoryHistory()
        return PromptSession(
            history=history,
            key_bindings=line_keys(),
            multiline=True,
            bottom_toolbar=self._toolbar,
            input=self._input,
            output=self._output,
            prompt_continuation=lambda width, n, soft: "." * (width - 1) + " ",
            enable_history_search=False,
        )

    def _start(self) -> None:
        """Start the slow loads. run() calls this only after its prompt session exists: the threads hold the
        GIL for much of an import, and building the session under that contention took ~1.5 s, not 0.1 s."""
        if self._started:
            return
        from iclaw.store import Store

        self._started = True
        model, path = self.model_name, self.db_path
        self._opening = _in_background(lambda: Store(path), "iclaw-open-store")
        self._loading = _in_background(lambda: _load_policy_and_tokenizer(model), "iclaw-load-policy")

    @property
    def store(self):
        """The trajectory Store (waits for it to open; raises its IclawError if it cannot be opened)."""
        self._start()
        if self._store is None:
            self._store = self._opening.result()
        return self._store

    @property
    def policy(self):
        """The loaded Policy (waits for the background load), or None if it failed (message printed)."""
        self._start()
        if self._loading is not None:
            fut, self._loading = self._loading, None
            if not fut.done():
                self.console.print(f"[dim]loading {escape(self.model_name)}…[/]")
            try:
                self._policy = fut.result()
            except Exception as e:  # an IclawError, or a checkpoint torch cannot read: the session stays up
                self._load_error = str(e) or type(e).__name__
                self.console.print(
                    f"[bold red]cannot load {escape(self.model_name)}:[/] {escape(self._load_error)}"
                )
        return self._policy

    @property
    def label(self) -> str:
        if self._policy is not None:
            return self._policy.label
        from iclaw.model import registry

        latest = registry.latest_id(self.model_name) if registry.is_registered(self.model_name) else None
        state = "loading…" if self._loading is not None else "not loaded"
        return f"{self.model_name}@{latest or '-'} ({state})"

    def _toolbar(self) -> str:
        mode = "auto-approve (/yes)" if self.confirm.auto else "confirm each command"
        net = "net on" if self.sandbox.net else "net off"
        return f" {self.label} │ sandbox {self.sandbox.level}, {net} │ {mode} │ /help"

    # -- the loop -----------------------------------------------------------------------------------

    def run(self) -> None:
        c = self.console
        self._session = self._session or self._make_session()
        self._start()
        c.print(
            f"[bold]iclaw chat[/] · {escape(self.label)} · sandbox [bold]{self.sandbox.level}[/] · "
            f"workspace {escape(str(self.cwd))} · type a broken command, /help for more, Ctrl-D to exit"
        )
        if self.sandbox.level != "bwrap":
            c.print(
                f"[bold yellow]warning:[/] no bwrap sandbox ({escape(self.sandbox.reason)}): commands run "
                "with rlimits only and can touch your files"
            )
        while True:
            try:
                text = self._session.prompt(PROMPT)
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line
            except EOFError:
                break
            try:
                if self.handle(text) == "quit":
                    break
            except KeyboardInterrupt:
                c.print("[yellow]cancelled[/]")
            except IclawError as e:  # e.g. the database cannot be written: say so, keep the session
                c.print(f"[bold red]error:[/] {escape(str(e))}")
        c.print("[dim]bye[/]")
        self.close()

    def close(self) -> None:
        # Don't exit while a thread is half-way through importing torch or opening the database.
        for fut in (self._loading, self._opening):
            if fut is not None:
                try:
                    fut.result()
                except Exception:  # we are leaving anyway; a turn would have reported it
                    pass
        if self._opening is not None and self._opening.done() and self._opening.exception() is None:
            self._opening.result().close()

    def handle(self, text: str) -> str | None:
        """One input: a slash command or a command to try and fix. Returns "quit" to end the session."""
        c = self.console
        if not text.strip():
            return None
        text = clean_text(text)
        if len(text) > MAX_INPUT_CHARS:
            c.print(
                f"[yellow]input is {len(text):,} characters; the limit is {MAX_INPUT_CHARS:,} — not run[/]"
            )
            return None
        head = text.strip().split(maxsplit=1)
        word = head[0][1:] if head[0].startswith("/") else None
        if word is not None and word not in ("py", "sh"):
            if "/" in word:  # an absolute path such as /usr/bin/pyhton: a command, not a slash command
                pass
            elif word in COMMANDS:
                return self.slash(word, head[1].strip() if len(head) > 1 else "")
            else:
                c.print(f"[yellow]unknown command /{escape(word)}[/] (type /help)")
                return None
        kind, code = classify(text)
        if not code.strip():
            c.print("[yellow]nothing to run[/]")
            return None
        self.turn(kind, code)
        return None

    def turn(self, kind: str, code: str) -> FixResult | None:
        store = self.store  # before anything runs: a database that cannot be opened fails the turn here
        if self.policy is None:
            self.console.print(
                f"[yellow]no model loaded ({escape(self._load_error or '?')}); load one with /model NAME[/]"
            )
            return None
        self.maybe_reload()
        from iclaw.agent.episode import EpisodeConfig

        cfg = EpisodeConfig(max_turns=self.max_turns, temperature=self.temperature)
        fixer = Fixer(
            self.policy, self.sandbox, store, cfg, self.cwd, source="chat", model_name=self.model_name
        )
        view = Transcript(self.console, self.policy.label)
        res = fixer.run(
            kind,
            code,
            approve=self.confirm,
            on_event=view.on_event,
            on_first=lambda r: view.on_first(kind, code, r),
        )
        if res.episode_id is not None:
            self.last_episode = res.episode_id
        view.summary(res)
        return res

    # -- hot reload -----------------------------------------------------------------------------------

    def maybe_reload(self, force: bool = False) -> None:
        from iclaw.model import registry

        p, c = self.policy, self.console
        if p is None:
            return
        if not p.name:
            if force:
                c.print("[dim]this model was loaded from a path: nothing to reload[/]")
            return
        latest = registry.latest_id(p.name)
        if latest is None or latest == p.ckpt_id:
            if force:
                c.print(f"[dim]{escape(p.label)} is the latest checkpoint[/]")
            return
        if latest == self._failed_reload and not force:
            return
        try:
            new = p.reload_if_newer()
        except Exception as e:  # noqa: BLE001 — any failure keeps the old model; say why
            self._failed_reload = latest
            c.print(
                f"[bold yellow]reload of {escape(p.name)} → {escape(latest)} failed, keeping "
                f"{escape(p.label)}:[/] {escape(str(e) or type(e).__name__)}"
            )
            return
        if new is not None:
            self._failed_reload = None
            c.print(f"[bold green]reloaded {escape(p.name)} → {escape(new)}[/]")

    # -- slash commands -------------------------------------------------------------------------------

    def slash(self, word: str, arg: str) -> str | None:
        c = self.console
        if word in ("quit", "exit", "q"):
            return "quit"
        if word == "help":
            c.print(escape(__doc__.split("\n\n", 1)[1].strip()))
            for cmd, what in SLASH_HELP:
                c.print(f"  [bold]{escape(cmd):22}[/] {escape(what)}")
        elif word == "yes":
            self.confirm.auto = not self.confirm.auto
            c.print(
                "auto-approve "
                + ("[bold]on[/] (commands still run in the sandbox)" if self.confirm.auto else "off")
            )
        elif word == "reload":
            self.maybe_reload(force=True)
        elif word == "model":
            if not arg:
                c.print(f"model: {escape(self.label)} (usage: /model NAME)")
                return None
            try:
                t0 = time.perf_counter()
                self._policy, self._loading = load_policy(arg), None
                self.model_name = arg
                self._failed_reload = None
                c.print(
                    f"[green]now using {escape(self.policy.label)}[/] [dim]({time.perf_counter() - t0:.1f} s)[/]"
                )
            except IclawError as e:
                c.print(f"[yellow]{escape(str(e))}[/] — still using {escape(self.label)}")
            except Exception as e:  # noqa: BLE001 — a broken checkpoint must not end the session
                c.print(
                    f"[yellow]cannot load {escape(arg)}: {escape(str(e) or type(e).__name__)}[/] — still "
                    f"using {escape(self.label)}"
                )
        elif word == "rate":
            parts = arg.split()
            if not parts or parts[0] not in ("good", "bad") or len(parts) > 2:
                c.print("[yellow]usage: /rate good|bad [ID][/]")
                return None
            target = self.last_episode
            if len(parts) == 2:
                if not parts[1].isdigit():
                    c.print(f"[yellow]/rate: {escape(parts[1])} is not an episode id[/]")
                    return None
                target = int(parts[1])
            if target is None:
                c.print("[yellow]nothing to rate yet[/]")
                return None
            try:
                self.store.rate(target, parts[0])
                c.print(f"episode {target} rated [bold]{parts[0]}[/]")
            except IclawError as e:
                c.print(f"[yellow]{escape(str(e))}[/]")
        elif word == "history":
            n = int(arg) if arg.isdigit() else 10
            rows = self.store.episodes(source="chat", limit=n)
            if not rows:
                c.print("[dim]no chat episodes yet[/]")
            for r in reversed(rows):
                meta = r.get("meta") if isinstance(r.get("meta"), dict) else {}
                ok = "[green]fixed[/]" if meta.get("fixed") else "[red]not fixed[/]"
                rating = f" · {r['rating']}" if r.get("rating") else ""
                first = (r.get("final_command") or "").replace("\n", "⏎")[:60]
                c.print(
                    f"  {r['id']:>5}  {(r.get('started_at') or '')[11:19]}  {escape(r.get('checkpoint') or '-')}"
                    f"  {ok}{rating}  {escape(first)}"
                )
        elif word == "replay":
            from iclaw.commands.store import show_episode

            target = int(arg) if arg.isdigit() else self.last_episode
            if target is None:
                c.print("[yellow]nothing to replay yet (usage: /replay ID)[/]")
                return None
            try:
                show_episode(self.store.episode(target), c)
            except IclawError as e:
                c.print(f"[yellow]{escape(str(e))}[/]")
        return None


def _in_background(fn, name: str):
    """A Future for fn(), computed on a thread while the prompt is already up."""
    from concurrent.futures import Future

    fut: Future = Future()

    def work() -> None:
        try:
            fut.set_result(fn())
        except BaseException as e:  # handed to whoever waits on the future
            fut.set_exception(e)

    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


def _load_policy_and_tokenizer(name: str):
    from iclaw.model.tokenizer import get_tokenizer

    policy = load_policy(name)
    get_tokenizer()  # build the BPE tables now too, not during the first turn
    return policy


def stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False

"""`iclaw chat`: the interactive agent. Type a broken command, watch it fail in the sandbox, let the policy fix it.

Each input line is one turn of `Fixer.run` (iclaw/agent/fix.py), i.e. one episode of the shared loop:

    you type      `ehco hi`                      runs in the sandbox, in your current directory (writable;
                                                 the rest of the system read-only, home and env hidden,
                                                 no network unless --net), and fails
    the search    tries fixes in throwaway copies    the hints' candidates (`ehco` -> `echo`), the policy's
                  of the folder                    likeliest fix (up to --max-turns calls), samples if
                                                   nothing worked yet (iclaw/agent/search.py)
    you           see `echo hi`, which worked      [y]es / [n]o (the next fix that worked) / [e]dit /
                  in a copy                        [a]lways (Enter = yes); keys typed before the question
                                                   showed up never answer it: they come back in your
                                                   next input line
    the sandbox   runs the one you approved, here

Keys: Enter submits; Esc then Enter (or a line ending in `\\`) inserts a newline; a paste keeps its newlines;
Ctrl-C cancels the current turn (or clears the line), Ctrl-D at a confirmation declines and ends the turn,
Ctrl-D on an empty line exits; Up/Down and Ctrl-R search the history, kept in $ICLAW_HOME/chat_history.
Every command that runs is in the database as soon as it has run, whatever ends the turn.

Which tool: `/py CODE` or a first line `python:` → Python; `/sh CODE` → bash; input of more than one line →
Python (a pasted snippet); anything else → bash.

Hot reload: before each turn the policy checks the registry's `latest` pointer for its name (one small file
read) and loads a newer checkpoint if a trainer published one; episodes log the checkpoint they ran with.
Checking between turns, never inside one, keeps one checkpoint per logged episode.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from iclaw.agent.fix import MAX_INPUT_CHARS, Fixer, FixResult, classify, clean_text
from iclaw.agent.terminal import Confirm, Transcript, line_keys, load_policy
from iclaw.errors import IclawError

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
                # what was typed while a confirmation waited comes back here, to be seen before it runs
                text = self._session.prompt(PROMPT, default=self.confirm.typed_ahead())
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

        cfg = EpisodeConfig(
            max_turns=self.max_turns, temperature=self.temperature, greedy_until_declined=True
        )
        fixer = Fixer(
            self.policy,
            self.sandbox,
            store,
            cfg,
            self.cwd,
            source="chat",
            model_name=self.model_name,
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
            from iclaw.store.transcript import show_episode

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

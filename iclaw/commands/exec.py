"""`iclaw exec` (run one command in the sandbox, log it) and `iclaw doctor` (what is active, and why).

Only typer + stdlib at module level: the sandbox, the store, rich and torch load inside the commands."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import typer

from iclaw.commands.options import Db


def register(app: typer.Typer) -> None:
    app.command(
        "exec",
        context_settings={"allow_interspersed_args": False},
        help="Run one command in the sandbox and show exit code, duration, stdout and stderr; "
        "logged to the store (source 'exec'). Example: iclaw exec -- 'ls -la | wc -l'",
    )(exec_cmd)
    app.command("doctor", help="Show which sandbox level is active and why, torch/device, store path.")(
        doctor
    )


def exec_cmd(
    command: list[str] = typer.Argument(
        ..., help="The command (joined with spaces, like ssh) or Python code."
    ),
    python: bool = typer.Option(False, "--python", help="Run the text as Python code instead of bash."),
    cwd: Path | None = typer.Option(
        None, "--cwd", help="Writable directory to run in (default: a fresh temporary directory)."
    ),
    timeout: float = typer.Option(10.0, "--timeout", help="Wall-clock limit in seconds."),
    db: Db = None,
    log: bool = typer.Option(True, "--log/--no-log", help="Record the call in the trajectory store."),
    net: bool = typer.Option(False, "--net", help="Allow network access inside the sandbox."),
) -> None:
    from rich.console import Console

    from iclaw.errors import IclawError
    from iclaw.tools.sandbox import Limits, Sandbox

    code = " ".join(command)
    tool = "python" if python else "bash"
    if timeout <= 0:
        raise IclawError(f"--timeout: must be positive, got {timeout}")
    sandbox = Sandbox(Limits(timeout_s=timeout), net=net, workspace=cwd is not None)
    err = Console(stderr=True, highlight=False)
    if sandbox.level != "bwrap":
        err.print(f"[bold yellow]warning:[/] no bwrap sandbox ({sandbox.reason}); running with rlimits only")
    tmp = None
    if cwd is None:
        tmp = tempfile.mkdtemp(prefix="iclaw-exec-")
        workdir = Path(tmp)
    else:
        workdir = cwd.resolve()
        if not workdir.is_dir():
            raise IclawError(f"--cwd: {cwd} is not a directory")
    from iclaw.store import now_iso

    started = now_iso()
    try:
        result = sandbox.run(tool, code, workdir)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    show_result(result, Console(highlight=False), level=sandbox.level)
    if log:
        from iclaw.store import Store

        with Store(db) as store:
            call = result.row(0, None if tmp else workdir)
            eid = store.log_episode(
                source="exec",
                started_at=started,
                final_command=code,
                meta={"sandbox": sandbox.level, "net": net, "temporary_cwd": tmp is not None},
                tool_calls=[call],
            )
        err.print(f"[dim]logged as episode {eid} in {store.path}[/]")
    raise typer.Exit(result.exit_code if 0 <= result.exit_code < 256 else 1)


def show_result(result, console, level: str | None = None) -> None:
    """Render a ToolResult: exit code coloured, duration, flags, then stdout and stderr."""
    from rich.markup import escape

    colour = "green" if result.exit_code == 0 else "red"
    flags = []
    if result.timed_out:
        flags.append("[bold red]timed out[/]")
    if result.signal is not None and not result.timed_out:
        flags.append(f"[red]signal {result.signal}[/]")
    if result.stdout_truncated:
        flags.append("[yellow]stdout truncated[/]")
    if result.stderr_truncated:
        flags.append("[yellow]stderr truncated[/]")
    where = f" · sandbox {level}" if level else ""
    console.print(
        f"[bold {colour}]exit {result.exit_code}[/] · {result.duration_ms:.0f} ms{where}"
        + ("".join(" · " + f for f in flags))
    )
    if result.stdout:
        console.print(escape(result.stdout.rstrip("\n")), soft_wrap=True)
    if result.stderr:
        console.print(f"[red]{escape(result.stderr.rstrip(chr(10)))}[/]", soft_wrap=True)


def doctor(db: Db = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from iclaw.errors import IclawError
    from iclaw.store import default_db_path
    from iclaw.tools.sandbox import Sandbox

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()

    sandbox = Sandbox()
    if sandbox.level == "bwrap":
        table.add_row("sandbox", f"[green]bwrap[/] — {sandbox.reason}")
    else:
        table.add_row(
            "sandbox",
            f"[bold red]none[/] — {sandbox.reason}. Model commands run with your permissions; "
            "train/eval refuse unless --unsafe-no-sandbox.",
        )
    from iclaw.tools.limits import pids_cgroup_root

    cg = pids_cgroup_root()
    table.add_row("pids cgroup", cg if cg else "[yellow]unavailable[/] (fork bombs bounded by timeout only)")
    workdir = tempfile.mkdtemp(prefix="iclaw-doctor-")
    try:
        t0 = time.perf_counter()
        r = sandbox.run("bash", "echo ok", workdir, timeout=10)
        ms = (time.perf_counter() - t0) * 1000
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = r.exit_code == 0 and r.stdout.strip() == "ok"
    table.add_row("self-test", f"[green]ok[/] ({ms:.0f} ms)" if ok else f"[red]failed[/]: {r.stderr.strip()}")

    try:  # torch is heavy: only here
        import torch

        if torch.cuda.is_available():
            device = f"cuda ({torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} device(s))"
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            device = "mps"
        else:
            device = "cpu"
        from iclaw.model.gpt import bf16_supported, default_device

        # bf16 only where it is fast: a CPU without bf16 hardware emulated it 18x (an SFT step) to 180x (a matmul) slower
        precision = "bf16 autocast" if bf16_supported(default_device()) else "fp32 (no fast bf16 here)"
        table.add_row("torch", f"{torch.__version__} · device {device} · {precision}")
    except ImportError:
        table.add_row("torch", "[red]not installed[/]")
    table.add_row("python", f"{sys.version.split()[0]} ({sys.executable})")

    path = db if db is not None else default_db_path()
    if path.exists():
        from iclaw.store import Store

        try:
            with Store(path) as store:
                desc = (
                    f"schema v{store.schema_version()} · {store.count('episodes')} episodes · "
                    f"{store.count('tool_calls')} tool calls"
                )
        except IclawError as e:
            desc = f"[red]{e}[/]"
        table.add_row("store", f"{path.resolve()} ({desc})")
    else:
        table.add_row("store", f"{path.resolve()} (not created yet)")
    home = os.environ.get("ICLAW_HOME")
    table.add_row(
        "ICLAW_HOME", f"{home} (from $ICLAW_HOME)" if home else f"{Path('~/.iclaw').expanduser()} (default)"
    )
    Console(highlight=False).print(table)

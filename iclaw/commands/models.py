"""`iclaw models list|import|info` (the local registry) and `iclaw ppl` (perplexity of a text file).

Only typer and the stdlib at module level: torch is imported inside the commands that need it."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from iclaw.commands.options import Device
from iclaw.errors import IclawError

models_app = typer.Typer(
    help="Local models: names such as 124m or demo → checkpoints under $ICLAW_HOME/models (default ~/.iclaw).",
    no_args_is_help=True,
)


def _fmt_params(n) -> str:
    if not isinstance(n, int):
        return "?"
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


@models_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List registered models: name, latest checkpoint, parameters, source, created."""
    from iclaw.model import registry

    rows = registry.list_models()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not rows:
        console.print(
            f"no models in {registry.models_dir()}; import one with `iclaw models import PATH --name NAME`",
            highlight=False,
        )
        return
    table = Table(title=f"models in {registry.models_dir()} and built in")
    for col in ("name", "latest", "params", "source", "created"):
        table.add_column(col, overflow="fold")
    for r in rows:
        name = f"{r['name']} (built-in)" if r.get("builtin") else r["name"]
        table.add_row(
            name, r["latest"] or "-", _fmt_params(r["params"]), r["source"] or "-", r["created"] or "-"
        )
    console.print(table)


@models_app.command("import")
def import_cmd(
    path: Path = typer.Argument(
        ...,
        help="A nanoGPT ckpt.pt (or its out_dir), a Hugging Face GPT-2 directory, "
        "or an iclaw checkpoint directory.",
    ),
    name: str = typer.Option(..., "--name", "-n", help="Registry name, e.g. 124m."),
) -> None:
    """Import a checkpoint under NAME (vocab padded to 50304; becomes NAME's latest checkpoint)."""
    from iclaw.model import registry

    registry.check_name(name)
    path = path.expanduser()
    if not path.exists():
        raise IclawError(f"{path}: no such file or directory")
    ckpt_id = registry.import_model(path, name)
    info = registry.checkpoint_info(registry.checkpoint_path(name, ckpt_id))
    print(
        f"imported {path} as '{name}' (checkpoint {ckpt_id}, {_fmt_params(info.get('param_count'))} params, "
        f"{info.get('n_layer')}-layer, block size {info.get('block_size')})"
    )


@models_app.command("export")
def export_cmd(
    name: str = typer.Argument(
        ..., help="A registered model name (its latest checkpoint) or a checkpoint path."
    ),
    out: Path = typer.Argument(..., help="nanoGPT's out_dir (ckpt.pt is written in it) or a .pt file."),
) -> None:
    """Write a model as nanoGPT's ckpt.pt, which `iclaw models import` reads back to the same weights."""
    from iclaw.model import registry
    from iclaw.model.importers import export_nanogpt

    registry.resolve(name)  # an unknown name fails before torch loads anything
    out = out.expanduser()
    file = out if out.suffix == ".pt" else out / "ckpt.pt"
    if file.exists():
        raise IclawError(f"{file}: exists; export never overwrites a checkpoint")
    model, meta = registry.load(name)
    export_nanogpt(model, meta, file)
    print(f"exported {name} to {file} (nanoGPT format, vocab_size {model.config.vocab_size})")


@models_app.command("info")
def info_cmd(
    name: str = typer.Argument(..., help="A registered model name."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show a model's config, parameter count, source, creation time and checkpoints."""
    from iclaw.model import registry

    if not registry.is_registered(name):
        if registry.builtin_path(name) is None:
            raise registry.unknown_model(name)
        path = registry.resolve(name)  # checks the weights' sha256 against the card
        card = path / "MODEL_CARD.md"
        if as_json:
            print(json.dumps({"name": name, "builtin": True, "path": str(path), "card": card.read_text()}))
        else:
            print(card.read_text() if card.is_file() else f"{name}: built-in model at {path} (no card)")
        return
    path = registry.resolve(name)
    info = registry._read_json(registry.model_dir(name) / registry.INFO)
    ck = registry.checkpoint_info(path)
    meta_keys = ("iclaw_format", "source", "created", "parent", "step", "param_count", "extra")
    out = {
        "name": name,
        "source": info.get("source"),
        "created": info.get("created"),
        "latest": registry.latest_id(name),
        "params": ck.get("param_count"),
        "config": {k: v for k, v in ck.items() if k not in meta_keys},
        "latest_meta": {k: ck.get(k) for k in ("source", "created", "parent", "step")}
        | (ck.get("extra") or {}),
        "checkpoints": registry.checkpoint_ids(name),
        "path": str(path),
    }
    if as_json:
        print(json.dumps(out, indent=2))
        return
    from rich.console import Console

    c = Console(highlight=False)
    c.print(
        f"[bold]{name}[/]  ({_fmt_params(out['params'])} params, {out['params']:,} exact)"
        if isinstance(out["params"], int)
        else f"[bold]{name}[/]"
    )
    c.print(f"source:   {out['source']}")
    c.print(f"created:  {out['created']}")
    c.print(f"latest:   {out['latest']}  ({out['path']})")
    c.print("config:   " + ", ".join(f"{k}={v}" for k, v in out["config"].items()))
    rows = out["config"].get("vocab_size")
    if out["config"].get("trimmed"):
        c.print(
            f"vocab:    trimmed, {rows} GPT-2 ids ({Path(out['path']) / 'vocab.json'}); others are spelled as bytes"
        )
    else:
        c.print(f"vocab:    GPT-2, {rows} rows")
    c.print(
        "latest checkpoint: " + ", ".join(f"{k}={v}" for k, v in out["latest_meta"].items() if v is not None)
    )
    c.print(f"checkpoints ({len(out['checkpoints'])}, oldest first):")
    for ck_id in out["checkpoints"]:
        mark = "  ← latest" if ck_id == out["latest"] else ""
        c.print(f"  {ck_id}{mark}")


def ppl_cmd(
    file: Path = typer.Argument(..., help="A UTF-8 text file."),
    model: str = typer.Option(..., "--model", "-m", help="A registered name or a checkpoint path."),
    stride: int = typer.Option(0, "--stride", help="Window stride in tokens (default: block size // 2)."),
    device: Device = None,
    as_json: bool = typer.Option(False, "--json", help='Print {"perplexity": X, "tokens": N, ...}.'),
) -> None:
    """Perplexity of FILE under a model: strided sliding window at the model's block size, each token after
    the first scored once (see iclaw/model/ppl.py for exactly which tokens)."""
    from iclaw.model import registry

    path = registry.resolve(model)  # cheap checks first: no torch import for a typo
    if not file.is_file():
        raise IclawError(f"{file}: no such file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise IclawError(f"{file}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if stride < 0:
        raise IclawError(f"--stride {stride}: must be positive")

    from iclaw.model.gpt import default_device
    from iclaw.model.ppl import perplexity_of_text

    dev = device or str(default_device())
    net, meta = registry.load(model, device=dev)
    res = perplexity_of_text(net, text, stride=stride or None, where=str(file))
    res["model"] = meta.get("name") or str(path)
    res["ckpt_id"] = meta.get("ckpt_id")
    if as_json:
        print(json.dumps(res))
    else:
        print(f"perplexity: {res['perplexity']:.4f}")
        print(
            f"tokens scored: {res['tokens']}  (block size {res['block_size']}, stride {res['stride']}, "
            f"model {res['model']} @ {res['ckpt_id']})"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
    app.command("ppl")(ppl_cmd)

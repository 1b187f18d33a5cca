"""The user's own sizes: the literal commands at GPT-2 124M and 774M shapes, on this machine.

    python benchmarks/bench_shapes.py                     # both sizes, every command (~10 min on 2 cores)
    python benchmarks/bench_shapes.py --sizes 124m        # the 124M path only

Random weights in Hugging Face GPT-2 directories (transformers' GPT2Config, nothing downloaded), imported with
`iclaw models import`, then each command the user types, each in its own process under `/usr/bin/time -v`:
wall seconds, seconds per step (the wall time less the same command at 0 steps is not measured: the column is
wall / steps, loading included) and peak RSS. Prints one table; `--json` keeps it.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = {"124m": dict(n_layer=12, n_head=12, n_embd=768), "760m": dict(n_layer=36, n_head=20, n_embd=1280)}


def hf_dir(name: str, root: Path) -> Path:
    """A GPT-2 directory of this shape with random weights (seed 0), built in a child process so its memory
    is not counted against anything measured here."""
    out = root / f"hf-{name}"
    if (out / "model.safetensors").is_file():
        return out
    code = (
        "import sys, torch; from transformers import GPT2Config, GPT2LMHeadModel; torch.manual_seed(0); "
        f"m = GPT2LMHeadModel(GPT2Config(n_positions=1024, vocab_size=50257, **{SHAPES[name]!r})); "
        "m.save_pretrained(sys.argv[1], safe_serialization=True)"
    )
    subprocess.run([sys.executable, "-c", code, str(out)], check=True)
    return out


def timed(argv: list[str], env: dict, cwd: Path, stdin: str | None = None) -> dict:
    """Run one command under /usr/bin/time -v: wall seconds and peak RSS (GiB); a failure is an error here."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.perf_counter()
        p = subprocess.run(
            ["/usr/bin/time", "-v", "-o", tf.name, *argv], env=env, cwd=cwd, input=stdin, capture_output=True,
            text=True,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tf.read())
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return {"seconds": wall, "rss_gib": int(rss.group(1)) / 2**20 if rss else None, "out": p.stdout}


def chat_first_answer(argv: list[str], env: dict, cwd: Path, broken: str, timeout: float = 600) -> dict:
    """`iclaw chat` on a pty: type one broken command, wait for its episode to end, Ctrl-D. Seconds to the
    first prompt and to the first answer; peak RSS from /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        master, slave = pty.openpty()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-v", "-o", tf.name, *argv], stdin=slave, stdout=slave, stderr=slave, env=env,
            cwd=cwd, start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        text, marks = b"", {}

        def wait_for(pattern: bytes) -> None:
            nonlocal text
            while not re.search(pattern, re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", text)):
                if time.perf_counter() - t0 > timeout or proc.poll() is not None:
                    proc.kill()
                    raise SystemExit(
                        f"chat: no {pattern!r} after {timeout:g} s:\n{text[-2000:].decode('utf-8', 'replace')}"
                    )
                if select.select([master], [], [], 1.0)[0]:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        chunk = b""
                    if b"\x1b[6n" in chunk:  # prompt-toolkit asks where the cursor is
                        os.write(master, b"\x1b[1;1R")
                    text += chunk

        wait_for(rb"iclaw>")
        marks["prompt_s"] = time.perf_counter() - t0
        os.write(master, broken.encode() + b"\r")
        wait_for(rb"episode \d+ ")  # the store's id of the episode
        marks["answer_s"] = time.perf_counter() - t0
        wait_for(rb"episode \d+ [\s\S]*iclaw>")  # the next prompt, after the answer
        os.write(master, b"\x04")
        proc.wait(timeout=60)
        os.close(master)
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tf.read())
    return {"seconds": marks["answer_s"], **marks, "rss_gib": int(rss.group(1)) / 2**20 if rss else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="124m,760m", help="comma-separated: 124m, 760m")
    ap.add_argument("--work", type=Path, default=Path("runs/shapes"), help="HF directories, home, store")
    ap.add_argument("--json", type=Path, help="write the table here")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    work = args.work.resolve()
    ws = work / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text("apple\npear\n")
    env = {**os.environ, "ICLAW_HOME": str(work / "home"), "ICLAW_DB": str(work / "t.db")}
    env.pop("ICLAW_MODEL", None)
    iclaw = [sys.executable, "-m", "iclaw"]
    rows = []

    def row(command: str, res: dict, steps: int | None = None) -> None:
        res = {k: v for k, v in res.items() if k != "out"}
        rows.append({"command": command, "steps": steps, **res})
        per = f"{res['seconds'] / steps:7.1f}" if steps else "      -"
        print(f"{command[:92]:92s} {res['seconds']:7.1f} {per} {res['rss_gib']:6.2f}", flush=True)

    print(f"{'command':92s} {'wall s':>7s} {'s/step':>7s} {'RSS GiB':>6s}")
    tasks = work / "tasks.jsonl"
    heldout = work / "heldout.jsonl"
    row("iclaw tasks gen -n 16", timed([*iclaw, "tasks", "gen", "-n", "16", "-o", str(tasks)], env, ws))
    timed([*iclaw, "tasks", "gen", "-n", "4", "--split", "heldout", "-o", str(heldout)], env, ws)
    for name in sizes:
        d = hf_dir(name, work)
        row(f"iclaw models import {d.name} --name {name}", timed([*iclaw, "models", "import", str(d), "--name", name], env, ws))  # fmt: skip
    if "124m" in sizes:
        cmd = ["train", "sft", "--model", "124m", "--tasks", str(tasks), "--out", "124m-sft", "--steps", "2", "--batch-size", "4"]  # fmt: skip
        row("iclaw " + " ".join(cmd), timed([*iclaw, *cmd], env, ws), 2)
        cmd = ["train", "grpo", "--model", "124m", "--tasks", str(tasks), "--out", "124m-grpo", "--beta", "0.04", "--steps", "2", "--group-size", "4", "--tasks-per-step", "2", "--sft-coef", "0", "--set", "max_new_tokens=16"]  # fmt: skip
        row("iclaw " + " ".join(cmd), timed([*iclaw, *cmd], env, ws), 2)
        cmd = ["ablate", "beta", "--model", "124m", "--tasks", str(tasks), "--heldout", str(heldout), "--betas", "0,0.04", "--steps", "1", "--group-size", "4", "--tasks-per-step", "2", "--out", str(work / "ablate.png")]  # fmt: skip
        row("iclaw " + " ".join(cmd), timed([*iclaw, *cmd], env, ws), 2)
        res = chat_first_answer([*iclaw, "chat", "--model", "124m", "--yes", "--max-turns", "1"], env, ws, "cta notes.txt")  # fmt: skip
        row("iclaw chat --model 124m (to its first answer)", res)
    if {"124m", "760m"} <= set(sizes):
        cmd = ["distill", "--teacher", "760m", "--student", "124m", "--tasks", str(tasks), "--steps", "2", "--group-size", "4", "--tasks-per-step", "2", "--set", "max_new_tokens=16"]  # fmt: skip
        row("iclaw " + " ".join(cmd), timed([*iclaw, *cmd], env, ws), 2)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

"""Pretraining data: text files -> nanoGPT-style token files, and a resumable batch loader over them.

`prep` writes into DIR:
    train.bin, val.bin   GPT-2 token ids as a flat uint16 array (np.memmap-able, as nanoGPT's prepare.py
                         writes them); documents are joined with <|endoftext|> after each one
    meta.json            {"vocab_size", "dtype", "eot", "train_tokens", "val_tokens", "files", ...}
Documents are shuffled (seeded) and the last `val_frac` of the token stream becomes val.bin (nanoGPT's
split). Tokens are streamed to disk as they are produced, so corpora larger than memory are fine.

With no inputs the corpus is the Python standard library's own .py sources: always present, offline, and
close to what iclaw's agent reads and writes. The shell-and-Python corpus (man pages, info manuals, scripts,
the stdlib and Python's docs, with a manifest of where each token came from) is iclaw/train/corpus.py.
"""

from __future__ import annotations

import json
import os
import random
import sysconfig
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from iclaw.errors import IclawError
from iclaw.files import write_atomic

DTYPE = np.uint16  # GPT-2's 50304 ids fit in 16 bits
SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__", ".git", "node_modules"}


def stdlib_files() -> list[Path]:
    """The standard library's .py files (installed third-party packages excluded), sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if not (SKIP_DIRS & set(p.relative_to(root).parts)))


def collect_files(inputs: list[Path]) -> list[Path]:
    """Files given directly, plus every file under the directories given (hidden ones skipped), in order."""
    out = []
    for p in inputs:
        p = Path(p).expanduser()
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if f.is_file() and not any(part.startswith(".") or part in SKIP_DIRS for part in rel):
                    out.append(f)
        else:
            raise IclawError(f"{p}: no such file or directory")
    return out


def _read_text(path: Path) -> str | None:
    """The file as UTF-8 text, or None for binary / undecodable files (they are skipped, not fatal)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _encode_all(files: list[Path], workers: int) -> Iterator[tuple[Path, list[int] | None]]:
    """(file, token ids or None if skipped), in file order; tiktoken releases the GIL, so threads help."""
    from iclaw.model.tokenizer import get_tokenizer

    tok = get_tokenizer()

    def one(f: Path):
        text = _read_text(f)
        return f, (tok.encode(text) if text is not None else None)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        chunk = 64 * workers  # bounded look-ahead keeps memory flat on big corpora
        for i in range(0, len(files), chunk):
            yield from pool.map(one, files[i : i + chunk])


def prep(
    inputs: list[Path],
    out: Path,
    *,
    max_files: int | None = None,
    max_tokens: int | None = None,
    val_frac: float = 0.05,
    shuffle: bool = True,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Tokenize `inputs` (files and directories; none = the stdlib's .py files) into out/train.bin, val.bin,
    meta.json. Returns the meta dict."""
    from iclaw.model.tokenizer import EOT, VOCAB_SIZE

    if not 0 < val_frac < 1:
        raise IclawError(f"--val-frac {val_frac}: must be between 0 and 1")
    default = not inputs
    files = stdlib_files() if default else collect_files(inputs)
    if shuffle:
        # training reads the file in order, so mix documents: then any prefix of train.bin (a short run, the
        # --max-tokens cap) and the val tail sample the whole corpus, not its alphabetically first part
        random.Random(seed).shuffle(files)
    if max_files is not None:
        files = files[:max_files]
    if not files:
        raise IclawError("no input files found" + ("" if default else f" in {', '.join(map(str, inputs))}"))
    out = Path(out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".all.bin.tmp-{os.getpid()}"

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [
        TextColumn("[bold]tokenizing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[tokens]:,} tokens"),
        TimeRemainingColumn(),
    ]
    n_tokens, n_docs, skipped = 0, 0, 0
    try:
        with open(tmp, "wb") as f, Progress(*columns, disable=not progress, transient=False) as bar:
            task = bar.add_task("tok", total=len(files), tokens=0)
            for _, ids in _encode_all(files, workers=min(4, os.cpu_count() or 1)):
                bar.advance(task)
                if ids is None:
                    skipped += 1
                    continue
                ids.append(EOT)  # a document boundary the model learns to predict
                if max_tokens is not None and n_tokens + len(ids) > max_tokens:
                    ids = ids[: max_tokens - n_tokens]
                f.write(np.asarray(ids, dtype=DTYPE).tobytes())
                n_tokens += len(ids)
                n_docs += 1
                bar.update(task, tokens=n_tokens)
                if max_tokens is not None and n_tokens >= max_tokens:
                    break
        if n_tokens < 2:
            raise IclawError("the inputs hold no text to train on (every file was empty or binary)")
        # split: the tail of the stream is the validation set
        n_val = max(1, int(n_tokens * val_frac))
        n_train = n_tokens - n_val
        with open(tmp, "rb") as f:
            f.seek(n_train * DTYPE().itemsize)
            val_bytes = f.read()
        write_atomic(out / "val.bin", val_bytes)
        os.truncate(tmp, n_train * DTYPE().itemsize)
        os.replace(tmp, out / "train.bin")  # streamed to its own temporary file: renamed, not rewritten
    finally:
        tmp.unlink(missing_ok=True)
    meta = {
        "vocab_size": VOCAB_SIZE,
        "dtype": "uint16",
        "eot": EOT,
        "tokenizer": "gpt2",
        "train_tokens": n_train,
        "val_tokens": n_val,
        "files": n_docs,
        "skipped_files": skipped,
        "source": "python-stdlib" if default else [str(p) for p in inputs],
        "shuffle_seed": seed if shuffle else None,
    }
    write_atomic(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    return meta


# ----------------------------------------------------------------------------------------------------------
# Loading


def open_split(data_dir: Path, split: str) -> np.memmap:
    """train.bin / val.bin as a read-only uint16 memmap, with errors that name the file."""
    path = Path(data_dir).expanduser() / f"{split}.bin"
    if not path.is_file():
        raise IclawError(f"{path}: no such file (make one with `iclaw data prep FILES --out {data_dir}`)")
    if path.stat().st_size < 2 * DTYPE().itemsize:
        raise IclawError(f"{path}: holds fewer than 2 tokens")
    return np.memmap(path, dtype=DTYPE, mode="r")


class Batches:
    """Consecutive (x, y) windows over a token file, for one rank of `world`.

    Reading in order (not nanoGPT's random offsets) makes the data position one integer that a checkpoint
    can save, so a resumed run sees exactly the batches it would have seen. Each step the ranks take
    adjacent slices of world * B * T tokens; at the end of the file it wraps around (a new epoch)."""

    def __init__(
        self, tokens: np.ndarray, batch: int, seq: int, rank: int = 0, world: int = 1, position: int = 0
    ):
        if len(tokens) < batch * seq + 1:
            raise IclawError(
                f"a batch needs {batch * seq + 1} tokens but the data holds only {len(tokens)}; "
                "use a smaller --batch/--seq or more data"
            )
        self.tokens, self.B, self.T, self.rank, self.world = tokens, batch, seq, rank, world
        self.position = position  # tokens consumed by all ranks together

    def next(self, device) -> tuple:
        import torch

        n = self.B * self.T
        if self.position + self.world * n + 1 > len(self.tokens):
            self.position = 0  # next epoch
        start = self.position + self.rank * n
        if start + n + 1 > len(self.tokens):  # this rank's slice would run off the end: wrap it alone
            start = (self.rank * n) % (len(self.tokens) - n - 1)
        buf = torch.from_numpy(self.tokens[start : start + n + 1].astype(np.int64))
        self.position += self.world * n
        x, y = buf[:-1].view(self.B, self.T), buf[1:].view(self.B, self.T)
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

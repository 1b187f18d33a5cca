"""A trimmed vocabulary for models trained from scratch: the GPT-2 ids a corpus uses, and nothing else.

GPT-2's 50,304-row embedding/head is most of a 7M-parameter policy and most of its compute, while the
agent's corpus uses about a thousand distinct tokens. A model built from scratch therefore keeps only

    every GPT-2 id its corpus uses  +  the 256 single-byte tokens  +  the control markers,

padded (with further GPT-2 ids) to a multiple of 64, so that every row is a real GPT-2 id. Text stays GPT-2
BPE: a token outside the kept set is replaced by the byte tokens it is made of (`fit`), so nothing is lost
and nothing becomes "unknown". Everything outside the model -- protocol, masks, store, parser -- keeps
speaking GPT-2 ids; the model maps ids to its rows on the way in, and the sampler and the log-prob
functions map rows back through `GPT.rows` / `GPT.ids` (iclaw/model/gpt.py).

Imported GPT-2 / nanoGPT checkpoints keep the full vocabulary (no Vocab at all).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from iclaw.errors import IclawError
from iclaw.model.tokenizer import DONE, EOT, VOCAB_SIZE, get_tokenizer

MARKERS = tuple(range(EOT, DONE + 1))  # <|endoftext|> and the agent's control tokens
FILE = "vocab.json"


@lru_cache(maxsize=1)
def byte_ids() -> tuple[int, ...]:
    """The GPT-2 id of each single byte 0..255 (GPT-2 BPE has a token for every byte)."""
    tok = get_tokenizer()
    return tuple(tok.byte_id(b) for b in range(256))


def spell_out(ids: list[int], drop: Iterable[int], *aligned: list) -> list[int] | tuple[list, ...]:
    """`ids` with every id in `drop` replaced by the byte tokens of its text; lists in `aligned` stretched
    along (each value repeated for the bytes of its token). Decoding gives the same text."""
    drop = set(drop)
    if not drop:
        return (ids, *aligned) if aligned else ids
    tok, byte = get_tokenizer(), byte_ids()
    out, rest = [], [[] for _ in aligned]
    for k, i in enumerate(ids):
        pieces = [byte[b] for b in tok.token_bytes(i)] if i in drop else [i]
        out += pieces
        for r, a in zip(rest, aligned):
            r += [a[k]] * len(pieces)
    return (out, *rest) if aligned else out


class Vocab:
    """The sorted GPT-2 ids a model has rows for; row i of the model is GPT-2 id `ids[i]`."""

    def __init__(self, ids: Iterable[int], where: str = "vocabulary"):
        self.ids = sorted(set(int(i) for i in ids))
        bad = [i for i in self.ids if not 0 <= i < VOCAB_SIZE]
        if bad:
            raise IclawError(f"{where}: ids outside GPT-2's 0..{VOCAB_SIZE - 1}: {bad[:5]}")
        missing = sorted((set(byte_ids()) | set(MARKERS)) - set(self.ids))
        if missing:
            raise IclawError(
                f"{where}: the byte tokens and control markers must be kept; missing {missing[:5]}"
            )
        self.kept = frozenset(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.ids == other.ids

    @classmethod
    def build(cls, corpus: Iterable[Iterable[int]], multiple: int = 64) -> Vocab:
        """Every id in `corpus` (sequences of GPT-2 ids), the bytes and the markers, padded with the lowest
        unused GPT-2 ids to a multiple of `multiple` rows (matmul-friendly, as nanoGPT pads 50257)."""
        keep = set(byte_ids()) | set(MARKERS)
        for seq in corpus:
            keep.update(seq)
        keep.discard(-1)
        target = -(-len(keep) // multiple) * multiple
        spare = (i for i in range(EOT) if i not in keep)
        while len(keep) < target:
            keep.add(next(spare))
        return cls(keep)

    @classmethod
    def frequent(cls, counts: Sequence[int], rows: int, base: Vocab | None = None) -> Vocab:
        """A pretraining vocabulary of `rows` rows: `base`'s ids (a task vocabulary: what the policy must
        read and write whole), the bytes and the markers, then a corpus's most frequent GPT-2 ids
        (counts[i]: how often id i occurs; ties go to the lower id), so that real text stops going through
        its bytes."""
        keep = set(byte_ids()) | set(MARKERS) | set(base.ids if base else ())
        if rows < len(keep):
            raise IclawError(
                f"--vocab {rows}: the task vocabulary, bytes and markers alone take {len(keep)} rows"
            )
        by_count = sorted(
            (i for i in range(min(len(counts), EOT)) if counts[i] > 0), key=lambda i: (-counts[i], i)
        )
        # then, should the corpus run out, the lowest unused ids (as `build` pads)
        spare = (i for i in itertools.chain(by_count, range(EOT)) if i not in keep)
        while len(keep) < rows:
            keep.add(next(spare))
        return cls(keep)

    def fit_array(self, tokens: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
        """`fit` for a token file (uint16 GPT-2 ids, e.g. a memmap of train.bin), vectorised: every id outside
        the vocabulary replaced by its byte tokens; the result is longer by the bytes it spelled out."""
        tok, byte = get_tokenizer(), byte_ids()
        kept = np.zeros(VOCAB_SIZE, dtype=bool)
        kept[self.ids] = True
        present = np.unique(np.asarray(tokens))
        drop = [int(i) for i in present if not kept[i]]
        length = np.ones(VOCAB_SIZE, dtype=np.int64)  # tokens each id becomes
        offset = np.zeros(VOCAB_SIZE, dtype=np.int64)  # where a dropped id's bytes start in `spelled`
        spelled = [0]  # a dummy first entry: kept ids have offset 0 and never read it
        for i in drop:
            pieces = [byte[b] for b in tok.token_bytes(i)]
            length[i], offset[i] = len(pieces), len(spelled)
            spelled += pieces
        spelled = np.asarray(spelled, dtype=np.int64)
        out = []
        for start in range(0, len(tokens), chunk):  # in chunks: the index arrays are 8 bytes a token
            ids = np.asarray(tokens[start : start + chunk], dtype=np.int64)
            n = length[ids]
            first = np.repeat(np.cumsum(n) - n, n)  # for each output slot: where its source token starts
            src = np.repeat(ids, n)
            within = np.arange(len(src)) - first  # which byte of its token a slot is
            out.append(np.where(kept[src], src, spelled[offset[src] + within]).astype(tokens.dtype))
        return np.concatenate(out) if out else np.asarray(tokens).copy()

    def fit(self, ids: list[int], *aligned: list) -> list[int] | tuple[list, ...]:
        """`ids` with every id outside the vocabulary spelled out as its byte tokens (lossless: decoding gives
        the same text). Lists in `aligned` (a mask, log-probs) are stretched along with it, each value
        repeated for the bytes of the token it belonged to."""
        return spell_out(ids, [i for i in ids if i not in self.kept], *aligned)

    def words(self) -> list[int]:
        """The kept ids that are neither a single byte nor a marker: the ones a spelled-out word replaces."""
        small = set(byte_ids()) | set(MARKERS)
        return [i for i in self.ids if i not in small]

    # --- on disk: vocab.json beside model.safetensors

    def save(self, directory: Path) -> None:
        (Path(directory) / FILE).write_text(json.dumps({"gpt2_ids": self.ids}) + "\n")

    @classmethod
    def load(cls, directory: Path, rows: int) -> Vocab:
        """Read `vocab.json` of a checkpoint whose model has `rows` embedding rows; one clear error if the
        file is missing, unreadable or does not match the model."""
        path = Path(directory) / FILE
        if not path.is_file():
            raise IclawError(f"{path}: missing (the model has a trimmed vocabulary of {rows} rows)")
        try:
            ids = json.loads(path.read_text())["gpt2_ids"]
            if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
                raise ValueError("gpt2_ids is not a list of integers")
        except (ValueError, KeyError, TypeError) as e:
            raise IclawError(f"{path}: not a vocabulary file ({e})") from None
        if len(set(ids)) != len(ids):
            raise IclawError(f"{path}: {len(ids) - len(set(ids))} duplicate ids")
        vocab = cls(ids, where=str(path))
        if len(vocab) != rows:
            raise IclawError(f"{path}: {len(vocab)} ids, but the model has {rows} embedding rows")
        return vocab

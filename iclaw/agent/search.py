"""Fixes searched and verified: every candidate runs in a throwaway copy of the folder before one is proposed.

`iclaw fix` and chat's proposals come from here. For a failed command:

  1. candidates: the policy's greedy episode (its final command), a few sampled episodes, and the hints'
     substitutions (iclaw/tools/hints.py: `gti status` -> `git status`); a candidate that fails gets one more
     round of hints from its own error (`python src/ap.py` -> `python3 src/ap.py` -> `python3 src/app.py`);
  2. each distinct candidate runs in its own fresh copy of the folder, in the sandbox, and the copy is
     compared with how it was: what the candidate deleted, truncated, replaced or changed;
  3. ranked: works (exit 0, and not only a look such as `ls` after `gerp x`) first, then no change to a file
     that exists (or only to one the user's own command names), then closest to what the user typed
     (`sort fruit.txt` -> `sort fruits.txt`, never `sort notes.txt`), then output over silence, then the
     policy's log-probability of writing it.

The user's folder is never touched here: it is only read (to copy it and for the hints). The copy is the whole
folder when it is small (COPY_FILES entries, COPY_BYTES); in a bigger one only the top-level entries the
candidates name are copied, so a folder of 100,000 files costs what its named files do.
Left out: overlay mounts (bubblewrap 0.8 has no overlay option, and a copy of a small folder takes
milliseconds), and running the policy's looks in the user's folder (the copy shows the same listing).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from iclaw.tools import hints as H

COPY_FILES = 2000  # entries: a project folder; beyond this only what the candidates name is copied
COPY_BYTES = 64 << 20
HASH_BYTES = 1 << 20  # files up to this size are compared by content, bigger ones by size and mtime
SAMPLES = 4  # sampled episodes, when neither a hint nor the greedy episode gave a fix that works
BASH_TOKENS = 64  # per turn of a shell fix's search: a command is a line
MAX_CANDIDATES = 16
LOOKS = ("ls", "pwd")


@dataclass
class Candidate:
    code: str
    source: str  # greedy | sample | hint | history
    result: object = None  # ToolResult of its run in a fresh copy
    changes: list[str] = field(default_factory=list)  # what that run did to files that existed
    distance: int = 0  # edits from what the user typed
    logprob: float = 0.0

    @property
    def works(self) -> bool:
        return self.result is not None and self.result.exit_code == 0 and not self.result.timed_out

    def row(self) -> dict:
        r = self.result
        return {
            "code": self.code,
            "source": self.source,
            "exit_code": None if r is None else r.exit_code,
            "changes": self.changes,
            "distance": self.distance,
            "logprob": round(self.logprob, 3),
        }


def only_looks(kind: str, broken: str, code: str) -> bool:
    """`ls` after `gerp milk notes.txt` exits 0 and fixes nothing; `ls` for `sl` is the fix, and so is
    `ls src` for `cat src` (a look at what the user named)."""
    words, typed = code.split(), broken.split() or [""]
    if kind != "bash" or not words or any(c in code for c in "|;&<>"):
        return False
    named = [w for w in words[1:] if not w.startswith("-") and w in typed[1:]]
    return words[0] in LOOKS and H.distance(typed[0], words[0], 1) > 1 and not named


# -- the throwaway copy ------------------------------------------------------------------------------------


def folder_size(root: Path) -> tuple[int, int]:
    """(entries, bytes) under root, counting stops past COPY_FILES entries."""
    n = size = 0
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            n += 1
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
            if n > COPY_FILES:
                return n, size
    return n, size


def copy_folder(src: Path, dest: Path, names: set[str] | None) -> None:
    """Copy src into the existing dest: all of it (names None), or only those top-level names. Links stay
    links; what cannot be read is left out (the candidate then sees it missing, never the original)."""
    entries = (
        sorted(os.listdir(src)) if names is None else sorted(n for n in names if os.path.lexists(src / n))
    )
    for name in entries:
        s, d = src / name, dest / name
        try:
            if s.is_symlink() or not s.is_dir():
                if s.is_symlink() or s.stat().st_size <= COPY_BYTES:
                    shutil.copy2(s, d, follow_symlinks=False)
            else:
                shutil.copytree(s, d, symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error):
            continue


def snapshot(root: Path) -> dict[str, tuple]:
    """rel path -> (type, size, digest or mtime) for what a candidate could change; git's own files excluded
    (`git status` refreshes .git/index in a copy)."""
    out: dict[str, tuple] = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in files + dirs:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", 0, 0)
            elif st.st_size <= HASH_BYTES:
                try:
                    out[rel] = ("file", st.st_size, hashlib.sha1(Path(p).read_bytes()).hexdigest())
                except OSError:
                    out[rel] = ("file", st.st_size, st.st_mtime_ns)
            else:
                out[rel] = ("file", st.st_size, st.st_mtime_ns)
            if len(out) > 4 * COPY_FILES:
                return out
    return out


def changes(before: dict[str, tuple], after: dict[str, tuple], named: set[str]) -> list[str]:
    """What a run did to files that existed: deleted, replaced (by a link or a folder), truncated, or
    changed (a file the user's own command does not name)."""
    out = []
    for rel, (kind, size, digest) in sorted(before.items()):
        if kind != "file":
            continue
        now, rel = after.get(rel), printable(rel)
        if now is None:
            out.append(f"deletes {rel}")
        elif now[0] != "file":
            out.append(f"replaces {rel} with a {'link' if now[0] == 'link' else 'folder'}")
        elif now[1] < size:
            out.append(f"empties {rel}" if now[1] == 0 else f"truncates {rel}")
        elif now[2] != digest and rel not in named and os.path.basename(rel) not in named:
            out.append(f"changes {rel}")
    return out


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (os.fsdecode's surrogates) shown as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class Scratch:
    """Fresh copies of one folder, one per run, under a temporary root removed on exit."""

    def __init__(self, cwd: Path, names: set[str]):
        self.cwd = cwd
        self.root = Path(tempfile.mkdtemp(prefix="iclaw-try-"))
        n, size = folder_size(cwd)
        self.names = None if (n <= COPY_FILES and size <= COPY_BYTES) else names
        self.n = 0

    def fresh(self, also: set[str] = frozenset()) -> Path:
        """A new copy; of a big folder, the names given at the start and `also` (what a candidate names)."""
        d = self.root / f"{self.n:03d}"
        self.n += 1
        d.mkdir()
        copy_folder(self.cwd, d, None if self.names is None else self.names | also)
        return d

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the search --------------------------------------------------------------------------------------------


def hint_candidates(kind: str, code: str, hint_list: list[H.Hint]) -> list[Candidate]:
    out, seen = [], set()
    for h in hint_list:
        for new in H.substitute(kind, code, h):
            if new not in seen:
                seen.add(new)
                out.append(Candidate(new, "history" if h.what == "history" else "hint"))
    return out


def unique(cands: list[Candidate], seen: list[Candidate] = ()) -> list[Candidate]:
    """First of each distinct command, none already in `seen`, at most MAX_CANDIDATES."""
    have, out = {c.code.strip() for c in seen}, []
    for c in cands:
        if c.code.strip() and c.code.strip() not in have:
            have.add(c.code.strip())
            out.append(c)
    return out[:MAX_CANDIDATES]


def named_in(code: str) -> set[str]:
    """The words of a command that could name a file (for the copy of a big folder and for `changes`)."""
    out = set()
    for w in H.words(code):
        w = w.strip("'\"")
        if w and not w.startswith("-"):
            out.add(w)
            out.add(w.split("/")[0])
    return out


def verify(cands: list[Candidate], kind: str, typed: str, sandbox, scratch: Scratch) -> None:
    """Run each candidate in its own fresh copy; record its result, changes and distance from `typed`."""
    dirs = [scratch.fresh(named_in(c.code)) for c in cands]
    befores = [snapshot(d) for d in dirs]
    results = sandbox.run_many([(kind, c.code, d) for c, d in zip(cands, dirs)])
    named = named_in(typed)
    for c, d, before, r in zip(cands, dirs, befores, results):
        c.result = r
        c.changes = changes(before, snapshot(d), named)
        c.distance = H.distance(typed, c.code, 64)


def rank(cands: list[Candidate], kind: str, typed: str) -> list[Candidate]:
    """The working candidates, best first (see the module docstring)."""
    ok = [
        c
        for c in cands
        if c.works and not only_looks(kind, typed, c.code) and c.code.strip() != typed.strip()
    ]
    return sorted(
        ok,
        key=lambda c: (
            bool(c.changes),
            c.distance,
            not (c.result.stdout.strip() or c.result.stderr.strip()),
            -c.logprob,
        ),
    )


def more_hints(kind: str, typed: str, cands: list[Candidate], cwd: Path, **kw) -> list[Candidate]:
    """Second round: hints from the error of each failed candidate, applied to it."""
    out = []
    for c in cands:
        r = c.result
        if c.works or r is None:
            continue
        hs = H.find_hints(kind, c.code, r.stdout, r.stderr, r.exit_code, cwd, **kw)
        out += hint_candidates(kind, c.code, hs)
    return out


def score(policy, request: str, kind: str, cands: list[Candidate]) -> None:
    """Each candidate's log-probability as the policy's first action for `request` (one batched forward)."""
    import torch

    from iclaw.agent.protocol import action_tokens, request_tokens
    from iclaw.train.rollout import collate, logprobs_and_entropy

    model, block = policy.model, policy.model.config.block_size
    req = model.fit(request_tokens(request))
    rows = []
    for c in cands:
        act = model.fit(action_tokens(kind, c.code))
        if len(req) + len(act) <= block:
            rows.append((c, req + act, [0] * len(req) + [1] * len(act)))
        else:
            c.logprob = float("-inf")
    if not rows:
        return
    batch = collate([r[1] for r in rows], [r[2] for r in rows])
    with torch.no_grad():
        idx, mask = batch.idx.to(policy.device), batch.mask.to(policy.device)
        logp, _ = logprobs_and_entropy(model, idx, mask)
    for (c, _, _), lp in zip(rows, (logp * mask).sum(-1).tolist()):
        c.logprob = lp

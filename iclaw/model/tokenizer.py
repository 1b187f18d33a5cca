"""GPT-2 BPE built offline from the bundled vocabulary, plus the agent's control markers.

tiktoken.get_encoding("gpt2") downloads its files at run time; we build the same encoding from
iclaw/assets/gpt2.tiktoken instead (MIT, OpenAI; see assets/LICENSE-gpt2-tiktoken.txt), so ids match GPT-2.

GPT-2 has 50257 tokens; nanoGPT pads the embedding to 50304. The 47 padded slots are unused by any
pretrained checkpoint, so the agent's control markers live there: each marker is exactly one token, which
makes parsing exact and a loss mask a slice.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
N_BASE = 50257  # GPT-2's real vocabulary: 50256 BPE ranks + <|endoftext|>
VOCAB_SIZE = 50304  # padded to a multiple of 64, as nanoGPT does

EOT = 50256
USER, ASSISTANT, BASH, PYTHON, END, OBS, DONE = range(50257, 50264)
SPECIAL_TOKENS = {
    "<|endoftext|>": EOT,
    "<|user|>": USER,  # starts the task description
    "<|assistant|>": ASSISTANT,  # the environment hands the turn to the policy
    "<|bash|>": BASH,  # the policy opens a shell tool call
    "<|python|>": PYTHON,  # the policy opens a python tool call
    "<|end|>": END,  # closes a user message, a tool call or an observation
    "<|obs|>": OBS,  # tool output (never trained on)
    "<|done|>": DONE,  # the policy submits its last tool call as the fix
}
ID_TO_SPECIAL = {v: k for k, v in SPECIAL_TOKENS.items()}


class Tokenizer:
    """Encode plain text with GPT-2 BPE (markers typed by a user stay plain text); decode any id."""

    vocab_size = VOCAB_SIZE
    n_base = N_BASE

    def __init__(self) -> None:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        path = resources.files("iclaw") / "assets" / "gpt2.tiktoken"
        with resources.as_file(path) as p:
            ranks = load_tiktoken_bpe(str(p))
        self._enc = tiktoken.Encoding(
            name="gpt2-iclaw", pat_str=GPT2_PAT, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": EOT}
        )

    def encode(self, text: str) -> list[int]:
        # disallowed_special=() : a user (or a tool's output) writing "<|endoftext|>" gets plain-text tokens,
        # so nothing outside our own code can inject a control token.
        return self._enc.encode(text, disallowed_special=())

    def decode(self, ids: list[int]) -> str:
        out, run = [], []
        for i in ids:
            if i < EOT:
                run.append(i)
                continue
            if run:
                out.append(self._enc.decode(run, errors="replace"))
                run = []
            out.append(ID_TO_SPECIAL.get(i, f"<|unused{i}|>"))
        if run:
            out.append(self._enc.decode(run, errors="replace"))
        return "".join(out)

    def byte_id(self, b: int) -> int:
        """The id of the single-byte token for byte value `b`."""
        return self._enc.encode_single_token(bytes([b]))

    def token_bytes(self, i: int) -> bytes:
        """The bytes a BPE id stands for (a control marker's text for a marker id)."""
        if i in ID_TO_SPECIAL:
            return ID_TO_SPECIAL[i].encode()
        return self._enc.decode_single_token_bytes(i)

    def decode_text(self, ids: list[int]) -> str:
        """Decode only the BPE ids (control/unused ids dropped): for tool-call bodies."""
        return self._enc.decode([i for i in ids if i < EOT], errors="replace")


@lru_cache(maxsize=1)
def get_tokenizer() -> Tokenizer:
    return Tokenizer()

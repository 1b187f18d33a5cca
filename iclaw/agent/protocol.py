"""The agent protocol: how a task, tool calls and observations become tokens, and back.

One episode is one token sequence:

    <|user|>{request}<|end|>                 environment (mask 0): the broken command and what it printed
    <|assistant|>                            environment (mask 0): the policy's turn starts
    <|bash|>{command}<|end|>                 POLICY (mask 1): a tool call (or <|python|>{code}<|end|>)
    <|obs|>{output}[exit N]<|end|>           environment (mask 0): what the tool printed, capped
    <|assistant|>
    <|done|>                                 POLICY (mask 1): submit the last call as the fix

Every marker is one token in GPT-2's padded vocabulary slots, so parsing is exact (no regexes over model
text) and the loss mask is a set of slices. The fix that the verifier judges is the last tool call of the
task's kind; `<|done|>` (or running out of turns) ends the episode.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclaw.model.tokenizer import ASSISTANT, BASH, DONE, END, OBS, PYTHON, USER, get_tokenizer

STOP_TOKENS = (END, DONE)  # a policy turn ends at either
TOOL_TOKENS = {BASH: "bash", PYTHON: "python"}
TOOL_MARKER = {"bash": BASH, "python": PYTHON}


def cap_text(text: str, limit: int, keep: str = "tail") -> str:
    """Cap text for the model's context; errors live at the end of output, listings at the start."""
    text = text.replace("\r", "")
    if len(text) <= limit:
        return text
    if keep == "head":
        return text[:limit] + "\n[...]"
    return "[...]\n" + text[-limit:]


def format_output(stdout: str, stderr: str, exit_code: int, limit: int = 400, hint: str = "") -> str:
    """What the policy sees of a run: stdout (head), stderr (tail), the exit code, then the hint line
    (iclaw/tools/hints.py), last so that no cap ever cuts it."""
    parts = []
    if stdout.strip():
        parts.append(cap_text(stdout.rstrip("\n"), limit, keep="head"))
    if stderr.strip():
        parts.append(cap_text(stderr.rstrip("\n"), limit, keep="tail"))
    parts.append(f"[exit {exit_code}]")
    if hint:
        parts.append(hint)
    return "\n".join(parts)


def format_request(kind: str, broken: str, output: str, test: str | None = None) -> str:
    """The user turn: the broken command (or program), what it printed, and the check if there is one."""
    if kind == "python":
        head = f"# main.py\n{broken.rstrip()}\n$ python3 main.py\n"
    else:
        head = f"$ {broken.strip()}\n"
    goal = f"\n# goal: `{test}` must succeed" if test else ""
    return head + output.rstrip("\n") + goal


def request_tokens(text: str) -> list[int]:
    """<|user|>{text}<|end|><|assistant|> — the context a fresh episode starts from."""
    return [USER, *get_tokenizer().encode(text), END, ASSISTANT]


def observation_tokens(text: str) -> list[int]:
    """<|obs|>{text}<|end|><|assistant|> — appended after a tool call, handing the turn back to the policy."""
    return [OBS, *get_tokenizer().encode(text), END, ASSISTANT]


def action_tokens(kind: str, code: str | None) -> list[int]:
    """The policy tokens for an action (used to build SFT demonstrations): a tool call, or `done`."""
    if kind == "done":
        return [DONE]
    return [TOOL_MARKER[kind], *get_tokenizer().encode(code or ""), END]


@dataclass
class Action:
    kind: str  # "bash" | "python" | "done" | "invalid"
    code: str = ""  # the command / program for a tool call
    error: str = ""  # why an output could not be parsed (shown to the policy as an observation)
    changes: tuple[str, ...] = ()  # what a dry run of it did to files that exist (iclaw/agent/search.py)


def parse_action(tokens: list[int]) -> Action:
    """Parse one policy turn. Never raises: nonsense becomes an `invalid` action with a reason."""
    tok = get_tokenizer()
    if not tokens:
        return Action("invalid", error="empty turn")
    first = tokens[0]
    if first == DONE:
        return Action("done")
    if first in TOOL_TOKENS:
        body = tokens[1:]
        if not body or body[-1] != END:
            return Action("invalid", code=tok.decode_text(body), error="tool call not closed with <|end|>")
        body = body[:-1]
        if any(t >= tok.n_base - 1 for t in body):  # a control token inside a command is not a command
            return Action("invalid", code=tok.decode_text(body), error="control token inside a tool call")
        code = tok.decode_text(body)
        if not code.strip():
            return Action("invalid", error="empty tool call")
        return Action(TOOL_TOKENS[first], code=code)
    return Action("invalid", code=tok.decode_text(tokens), error="expected <|bash|>, <|python|> or <|done|>")


def render(tokens: list[int]) -> str:
    """Readable text of a token sequence, markers included (for logs and debugging)."""
    return get_tokenizer().decode(tokens)

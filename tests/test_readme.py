"""Every command line in README.md runs as written (issue #59, item 7).

Each `iclaw ...` command (also `python -m iclaw ...` and `torchrun ... -m iclaw ...`) in README's bash
blocks and inline code is parsed by the real command: the subcommand path exists (`--help` exits 0), every
option it uses is one of that command's options, and click parses the line as written (an option that
needs a value gets one, a choice is one of its choices). `python benchmarks/...` and `python dev/...` lines
name a file that exists and flags its `--help` lists. Nothing is run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from iclaw.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SEPARATORS = {";", "&&", "||", "|", "(", ")", "{", "}", "&"}
PLACEHOLDER = "..."  # `iclaw train grpo ... --max-flagged 0.1`: the line's other arguments


ROOT_COMMAND = typer.main.get_command(app)


# Duck-typed: typer >= 0.24 carries its own copy of click, older ones use click itself.
def _is_group(command) -> bool:
    return hasattr(command, "list_commands")


def _block_lines(text: str) -> list[str]:
    """The lines of README's bash blocks."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines += [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def _inline_spans(text: str) -> list[str]:
    """README's inline code spans outside the blocks (`iclaw demo --seed 1 -f wrong-file`)."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def _commands(snippet: str) -> list[list[str]]:
    """The simple commands of one shell line (split at ; && || | and brackets), comments dropped."""
    lexer = shlex.shlex(snippet, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, current = [], []
    for token in lexer:
        if token in SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    return [c for c in commands if c]


def _iclaw_args(words: list[str]) -> list[str] | None:
    """The arguments given to iclaw, or None if the command is not iclaw."""
    if words[0] == "iclaw":
        return words[1:]
    for i in range(len(words) - 1):
        if words[0] in ("python", "python3", "torchrun") and words[i : i + 2] == ["-m", "iclaw"]:
            return words[i + 2 :]
    return None


def _script(words: list[str]) -> list[str] | None:
    """`python benchmarks/x.py --flag ...` -> the script and its arguments."""
    if words[0] in ("python", "python3") and len(words) > 1 and words[1].startswith(("benchmarks/", "dev/")):
        return words[1:]
    return None


def _names_a_subcommand(words: list[str]) -> bool:
    """`train sft ...`, `tasks gen ...`: a group of iclaw's and one of its commands."""
    group = ROOT_COMMAND.get_command(typer.Context(ROOT_COMMAND), words[0])
    return len(words) > 1 and _is_group(group) and words[1] in group.list_commands(typer.Context(group))


def _readme_lines() -> tuple[list[tuple[list[str], str]], list[list[str]]]:
    """(iclaw's arguments, where: "block" line, "inline" span, or "mention" of a subcommand without
    `iclaw`, which may leave out required options) per iclaw command; then the script lines."""
    iclaw, scripts = [], []
    text = README.read_text()
    blocks = [("block", s) for s in _block_lines(text)] + [("inline", s) for s in _inline_spans(text)]
    for where, snippet in blocks:
        try:
            commands = _commands(snippet)
        except ValueError:  # prose in backticks with an odd quote: not a command line
            continue
        for words in commands:
            args = _iclaw_args(words)
            if args is None and where == "inline" and _names_a_subcommand(words):
                args, where = words, "mention"  # `train sft --from-db --tasks replay.jsonl` in prose
            if args and args[0] != "COMMAND":  # `iclaw COMMAND --help` is prose
                iclaw.append((args, where))
            elif (script := _script(words)) is not None:
                scripts.append(script)
    return iclaw, scripts


ICLAW_LINES, SCRIPT_LINES = _readme_lines()


def _resolve(args: list[str]) -> tuple[object, list[str], list[str]]:
    """Walk the groups: (the command, its path of names, the arguments left for it)."""
    command, path, rest = ROOT_COMMAND, [], list(args)
    while _is_group(command) and rest and not rest[0].startswith("-"):
        sub = command.get_command(typer.Context(command), rest[0])
        assert sub is not None, f"`iclaw {' '.join(path + rest[:1])}`: no such command"
        command, path, rest = sub, [*path, rest[0]], rest[1:]
    return command, path, rest


def _options(command) -> set[str]:
    names = {"-h", "--help"}
    for param in command.params:
        if param.param_type_name == "option":
            names |= set(param.opts) | set(param.secondary_opts)
    return names


def _needs_arguments(command) -> bool:
    return any(p.param_type_name == "argument" and p.required for p in command.params)


def test_readme_has_the_commands_it_documents():
    firsts = {args[0] for args, _ in ICLAW_LINES}
    assert {"demo", "fix", "chat", "train", "distill", "pretrain", "replay", "tasks"} <= firsts, firsts
    assert any(args[:2] == ["train", "grpo"] for args, where in ICLAW_LINES if where == "block")


@pytest.mark.parametrize(("args", "where"), ICLAW_LINES, ids=[" ".join(a) for a, _ in ICLAW_LINES])
def test_readme_iclaw_line_parses(args: list[str], where: str):
    line = "iclaw " + " ".join(args)
    elided = PLACEHOLDER in args
    command, path, rest = _resolve([a for a in args if a != PLACEHOLDER])

    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, f"{line}: --help exits {result.exit_code}\n{result.output}"

    known = _options(command)
    for word in rest[: rest.index("--")] if "--" in rest else rest:
        if word.startswith("-") and len(word) > 1 and not re.fullmatch(r"-[\d.]+", word):
            name = word.split("=", 1)[0]
            assert name in known, f"{line}: {name} is not an option of `iclaw {' '.join(path)}`"

    # Parsed as written: values present and of their type. Not for a line whose other arguments are
    # elided (`...`), nor for prose naming a command alone (`iclaw fix` uses ..., `train sft --from-db`).
    alone = where == "inline" and not rest and _needs_arguments(command)
    if elided or _is_group(command) or where == "mention" or alone:
        return
    if path == ["train", "grpo"]:  # --set FIELD=VALUE: FIELD is one of GRPOConfig's, VALUE of its type
        from iclaw.train.common import apply_overrides
        from iclaw.train.config import REMOVED, GRPOConfig

        sets = [rest[i + 1] for i, word in enumerate(rest) if word == "--set"]
        apply_overrides(GRPOConfig(), sets, removed=REMOVED)
    try:
        command.make_context(" ".join(["iclaw", *path]), list(rest))
    except Exception as e:  # click's UsageError, BadParameter, MissingParameter
        if not hasattr(e, "format_message"):
            raise
        pytest.fail(f"{line}: {e.format_message()}")


def test_readme_script_lines_parse():
    """`python benchmarks/x.py --flag ...` (none in README today): the script exists and --help lists each flag."""
    for words in SCRIPT_LINES:
        script = ROOT / words[0]
        assert script.is_file(), f"README names {words[0]}, which does not exist"
        shown = subprocess.run(
            [sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert shown.returncode == 0, shown.stderr
        for word in words[1:]:
            if word.startswith("--"):
                assert word.split("=", 1)[0] in shown.stdout, f"{' '.join(words)}: {word} is not a flag"


def test_readme_names_files_that_exist():
    """Every repository path and script README names in code (iclaw/train/grpo.py, benchmarks/outside.jsonl,
    `bench_sample.py` among the benchmarks) is there."""
    text = README.read_text()
    spans = set(_inline_spans(text)) | set(_block_lines(text))
    words = {w.strip("(),;:") for span in spans for w in span.split()}
    missing = []
    for word in sorted(words):
        if word.startswith(("iclaw/", "benchmarks/", "dev/", "docs/", "tests/", ".ci/")):
            if not (ROOT / word.rstrip("/")).exists():
                missing.append(word)
        elif re.fullmatch(r"\w+\.py", word):
            if not any((ROOT / d / word).exists() for d in ("benchmarks", "dev")) and not list(
                (ROOT / "iclaw").rglob(word)
            ):
                missing.append(word)
    assert not missing, f"README names files that do not exist: {missing}"

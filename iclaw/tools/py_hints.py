"""Python's error messages read as edits: the line a traceback names, as it should read.

`edits(code, text, cwd)` returns (line number, new text) pairs for a failed program, nearest first; the new text
may hold more than one line (an `import` put above line 1, a `global` under a `def`). hints.py makes them
`edit` hints, `line 3 -> total += float(line)`, and the search (iclaw/agent/search.py) runs each in a copy of
the folder, so a rule only has to propose: what does not work is never offered.

Each rule reads what Python printed, the way a person reads a traceback, and names one everyday cause:

  syntax     `expected ':'`, `expected '('` (`def main:`), `'(' was never closed`, print without parentheses,
             `Perhaps you forgot a comma?`, `except A, e:`, `n++`, a keyword used as a name, an unterminated
             string or docstring, a missing or wrong indentation, tabs among spaces, `else if` (elif)
  names      a standard module used but not imported, `self.` left out in a method, a global assigned in a
             function (`global total`), a module called as its own class (`datetime(...)`), a submodule not
             imported (`xml.etree`), a name imported from the wrong module (`collections` -> `collections.abc`),
             `import os.path.join`, a module of the folder misspelt (`util` beside utils.py)
  types      a method not called (`name.upper + "!"`), `x = x.append(...)` / `y = x.sort()`, a function with
             no `return`, str + int, `total += line` (text from a file), `", ".join(ints)`, `range("3")`,
             `map(...)[0]`, `for k, v in d:`, a dict changed while iterated, `C.method()` on the class,
             another language's method (`xs.push`, `s.length`, `d.has_key`), text compared with a number,
             `xs[len(xs) / 2]`, `xs[len(xs)]`, `for i in len(xs)`, `__int__` for `__init__`, a method without self
  data       KeyError -> the nearest key the folder's JSON and CSV files or the program hold; a JSON list
             indexed by a key; json.dumps of a date or an object; JSON written with single quotes; a header row
             read as a number (next(reader))
  files      a folder opened for writing that is not there yet (`os.makedirs` first), a file opened by its name
             that sits in a subfolder (`data/scores.txt`), `os.remove` of a folder,
             a file read after its `with` block, `subprocess.run("wc -l x")` without a list

Left out: fixes a message does not point at (an off-by-one, a missing base case, a wrong format string): the
policy's own samples are what the search tries there. Rules never import what the program imports, except
standard-library modules by name, to look a name up in them.
"""

from __future__ import annotations

import difflib
import importlib
import io
import itertools
import json
import keyword
import pkgutil
import re
import sys
import tokenize
from pathlib import Path

MAX_EDITS = 6  # candidates from one failure
FRAME = re.compile(r'File "([^"]*)", line (\d+)')
LAST = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Warning)): ?(.*)$", re.M)
SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
SEEN = (
    "expected ':'",
    "'(' was never",
    "'[' was never",
    "'{' was never",
    "Missing parentheses",
    "expected an indented",
)
SEEN += ("unterminated string literal",)
MUTATORS = ("append", "extend", "insert", "remove", "sort", "reverse", "clear", "update", "shuffle")
QUOTE = {"(": ")", "[": "]", "{": "}"}
FOREIGN = {  # (type, another language's method name) -> Python's
    ("list", "push"): ("append",),
    ("list", "add"): ("append",),
    ("list", "indexOf"): ("index",),
    ("list", "pushAll"): ("extend",),
    ("list", "addAll"): ("extend",),
    ("set", "push"): ("add",),
    ("set", "append"): ("add",),
    ("str", "toUpperCase"): ("upper",),
    ("str", "toLowerCase"): ("lower",),
    ("str", "trim"): ("strip",),
    ("str", "startsWith"): ("startswith",),
    ("str", "endsWith"): ("endswith",),
    ("str", "indexOf"): ("find",),
    ("str", "replaceAll"): ("replace",),
    ("dict", "keySet"): ("keys",),
    ("dict", "iteritems"): ("items",),
    ("dict", "itervalues"): ("values",),
    ("dict", "iterkeys"): ("keys",),
}


def where(text: str, n_lines: int, name: str = "main.py") -> int:
    """The line of the program (`name`, main.py for the python tool) the traceback names last, or 0."""
    at = [int(n) for f, n in FRAME.findall(text) if f == name or f.endswith("/" + name)]
    return at[-1] if at and 0 < at[-1] <= n_lines else 0


def indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def entries(folder: Path, n: int) -> list[Path]:
    """At most n entries of a folder, unsorted (a folder of 100,000 files costs what n do)."""
    try:
        return list(itertools.islice(folder.iterdir(), n))
    except OSError:
        return []


def closing(line: str, start: int) -> int:
    """The index of the bracket that closes the one at line[start] (strings not looked into), or -1."""
    depth = 0
    for i in range(start, len(line)):
        depth += (line[i] in "([{") - (line[i] in ")]}")
        if depth == 0:
            return i
    return -1


def block_end(lines: list[str], k: int) -> int:
    """The last line (from 1) of the block that starts at line k: the lines indented under it."""
    end = k
    for i in range(k, len(lines)):
        if lines[i].strip() and len(indent(lines[i])) <= len(indent(lines[k - 1])):
            break
        if lines[i].strip():
            end = i + 1
    return end


def stdlib(name: str):
    """A standard-library module by name, or None (nothing else is ever imported here)."""
    if name.split(".")[0] not in sys.stdlib_module_names or name.split(".")[0] in ("antigravity", "this"):
        return None
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def seen(text: str) -> bool:
    """Whether the failure is one whose edit the hint line carried when the shipped weights were measured
    (`expected ':'`, a bracket never closed, print without parentheses, a block not indented, a string not
    closed): those stay in the observation, the rest are for the search only (hints.SEARCH_ONLY)."""
    m = list(LAST.finditer(text))
    return bool(m) and m[-1].group(1) in SYNTAX_ERRORS and m[-1].group(2).startswith(SEEN)


def edits(code: str, text: str, cwd: Path | str = ".", name: str = "main.py") -> list[tuple[int, int, str]]:
    """(first line, last line, new text) candidates for the program `code` (the file `name`) that failed
    with `text`: lines first..last (from 1) read `new text` instead. Most rules change one line."""
    lines = code.split("\n")
    m = list(LAST.finditer(text))
    n = where(text, len(lines), name)
    if not m or not n:
        return []
    err, msg = m[-1].group(1), m[-1].group(2)
    line = lines[n - 1]
    out: list[tuple[int, int, str]] = []
    for rule in SYNTAX if err in SYNTAX_ERRORS else RUNTIME:
        try:
            for e in rule(err, msg, lines, n, line, text, Path(cwd)):
                a, b, t = e if len(e) == 3 else (e[0], e[0], e[1])
                if "\n".join(lines[a - 1 : b]) != t:
                    out.append((a, b, t))
        except (ValueError, IndexError, KeyError, tokenize.TokenError, SyntaxError, AttributeError):
            continue
    return list(dict.fromkeys(out))[:MAX_EDITS]


# -- syntax ----------------------------------------------------------------------------------------------


def colon(err, msg, lines, n, line, text, cwd):
    if msg.startswith("expected ':'"):
        yield n, line.rstrip() + ":"


def else_if(err, msg, lines, n, line, text, cwd):
    """`else if x:` (C, JavaScript): Python spells it `elif`."""
    if re.match(r"^\s*else\s+if\b", line):
        yield n, re.sub(r"^(\s*)else\s+if\b", r"\1elif", line)


def def_parens(err, msg, lines, n, line, text, cwd):
    if msg.startswith("expected '('"):
        yield n, re.sub(r"^(\s*(?:async\s+)?(?:def|class)\s+\w+)\s*:", r"\1():", line)


def never_closed(err, msg, lines, n, line, text, cwd):
    m = re.match(r"'([(\[{])' was never closed", msg)
    if not m:
        return
    close = QUOTE[m.group(1)]
    yield n, line.rstrip() + close
    end = n  # a bracket opened at the end of a line: its items are the indented lines below it
    while end < len(lines) and lines[end].strip() and len(indent(lines[end])) > len(indent(line)):
        end += 1
    if end > n:
        yield end, lines[end - 1] + "\n" + indent(line) + close


def print_parens(err, msg, lines, n, line, text, cwd):
    if msg.startswith("Missing parentheses in call to"):
        word = re.search(r"call to '(\w+)'", msg).group(1)
        head, _, rest = line.rstrip().partition(word + " ")
        if rest:
            yield n, f"{head}{word}({rest.strip()})"


def comma(err, msg, lines, n, line, text, cwd):
    """`print("Total:" total)`: a comma in each gap between two items under the caret."""
    if "forgot a comma" not in msg:
        return
    carets = [c for c in text.split("\n") if set(c.strip()) == {"^"}]
    shown = [t for t in text.split("\n") if t.strip() and t.strip() == line.strip()]
    if not carets or not shown:
        return
    shift = len(shown[-1]) - len(shown[-1].lstrip()) - len(indent(line))
    lo = len(carets[-1]) - len(carets[-1].lstrip()) - shift
    hi = len(carets[-1].rstrip()) - shift
    for gap in re.finditer(r"(?<=[\w\"')\]}])\s+(?=[\w\"'(\[{])", line[lo:hi]):
        a, b = lo + gap.start(), lo + gap.end()
        yield n, line[:a] + ", " + line[b:]


def except_comma(err, msg, lines, n, line, text, cwd):
    if "must be parenthesized" in msg:
        yield n, re.sub(r"except\s+([\w.]+)\s*,\s*(\w+)\s*:", r"except \1 as \2:", line)


def plusplus(err, msg, lines, n, line, text, cwd):
    m = re.match(r"^(\s*)([\w.\[\]]+)\s*(\+\+|--)\s*$", line)
    if m:
        yield n, f"{m.group(1)}{m.group(2)} {m.group(3)[0]}= 1"


def keyword_name(err, msg, lines, n, line, text, cwd):
    """`class = "Physics"`: the keyword renamed `class_` wherever it stands as a name."""
    m = re.match(r"^\s*([a-z]+)\s*=[^=]", line)
    if not m or not keyword.iskeyword(m.group(1)):
        return
    kw, code = m.group(1), "\n".join(lines)
    toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    spots = [
        t.start
        for t, nxt in zip(toks, toks[1:])
        if t.type == tokenize.NAME and t.string == kw and nxt.type != tokenize.NAME
    ]
    new = [list(x) for x in lines]
    for row, col in sorted(spots, reverse=True):
        new[row - 1][col : col + len(kw)] = list(kw + "_")
    rows = sorted({r for r, _ in spots})
    if rows:
        yield rows[0], rows[-1], "\n".join("".join(x) for x in new[rows[0] - 1 : rows[-1]])


def unterminated(err, msg, lines, n, line, text, cwd):
    if msg.startswith("unterminated triple-quoted"):
        q = '"""' if '"""' in line else "'''"
        yield n, line.rstrip() + q
    elif msg.startswith("unterminated string literal"):
        q = next((c for c in line if c in "'\""), "")
        if q:
            yield n, line.rstrip() + q


def indentation(err, msg, lines, n, line, text, cwd):
    body = line.lstrip()
    if err == "TabError" or "tabs and spaces" in msg:  # every indentation made of spaces, a tab as 4 or 8
        tabbed = [k for k, x in enumerate(lines, 1) if "\t" in indent(x)]
        a, b = min(tabbed + [n]), max(tabbed + [n])
        for tab in ("    ", " " * 8):
            yield a, b, "\n".join(indent(x).replace("\t", tab) + x.lstrip() for x in lines[a - 1 : b])
    elif msg.startswith("expected an indented block"):
        yield n, "    " + line
    elif msg.startswith("unexpected indent"):
        prev = next((x for x in reversed(lines[: n - 1]) if x.strip()), "")
        yield n, indent(prev) + body
    elif msg.startswith("unindent does not match"):
        levels = sorted(
            {len(indent(x)) for x in lines[: n - 1] if x.strip()}, key=lambda k: abs(k - len(indent(line)))
        )
        for k in levels[:2]:
            yield n, " " * k + body


SYNTAX = [
    else_if,
    colon,
    def_parens,
    never_closed,
    print_parens,
    comma,
    except_comma,
    plusplus,
    keyword_name,
    unterminated,
]
SYNTAX += [indentation]


# -- names -----------------------------------------------------------------------------------------------


def top(lines: list[str], new: str) -> tuple[int, str]:
    """`new` put above the program's first line (after a `#!` line or a `from __future__` import)."""
    k = 1
    while k < len(lines) and (lines[k - 1].startswith("#!") or lines[k - 1].startswith("from __future__")):
        k += 1
    return k, new + "\n" + lines[k - 1]


def not_imported(err, msg, lines, n, line, text, cwd):
    m = re.match(r"name '(\w+)' is not defined", msg)
    if m and err == "NameError" and stdlib(m.group(1)) is not None:
        yield top(lines, f"import {m.group(1)}")


def missing_self(err, msg, lines, n, line, text, cwd):
    m = re.match(r"name '(\w+)' is not defined", msg)
    if m and f"self.{m.group(1)}" in "\n".join(lines):
        yield n, re.sub(rf"(?<![\w.]){m.group(1)}\b", f"self.{m.group(1)}", line)


def global_name(err, msg, lines, n, line, text, cwd):
    m = re.match(r"(?:cannot access local variable|local variable) '(\w+)'", msg)
    if not m:
        return
    for k in range(n - 1, 0, -1):
        d = re.match(r"^(\s*)def ", lines[k - 1])
        if d:
            body = next((indent(x) for x in lines[k:] if x.strip()), d.group(1) + "    ")
            yield k, lines[k - 1] + "\n" + body + f"global {m.group(1)}"
            return


def module_called(err, msg, lines, n, line, text, cwd):
    """`import datetime` then `datetime(2024, 3, 15)`: the class of the same name was meant."""
    if "'module' object is not callable" not in msg:
        return
    for k, x in enumerate(lines, 1):
        m = re.match(r"^(\s*)import (\w+)\s*$", x)
        if m and re.search(rf"(?<![\w.]){m.group(2)}\(", line) and hasattr(stdlib(m.group(2)), m.group(2)):
            yield k, f"{m.group(1)}from {m.group(2)} import {m.group(2)}"


def submodule(err, msg, lines, n, line, text, cwd):
    """`import xml` then `xml.etree.ElementTree.fromstring(...)`: the submodule imported by its full name."""
    m = re.match(r"module '([\w.]+)' has no attribute '(\w+)'", msg)
    if not m:
        return
    dotted = re.findall(rf"(?<![\w.]){re.escape(m.group(1))}\.{m.group(2)}(?:\.\w+)*", "\n".join(lines))
    for name in sorted(set(dotted), key=len, reverse=True)[:1]:
        parts = name.split(".")
        while len(parts) > 1 and stdlib(".".join(parts)) is None:
            parts.pop()
        if len(parts) > 1:
            yield top(lines, f"import {'.'.join(parts)}")


def wrong_module(err, msg, lines, n, line, text, cwd):
    """`from collections import Mapping`: the standard submodule that has it (collections.abc)."""
    m = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", msg)
    mod = stdlib(m.group(2)) if m else None
    if mod is None or not hasattr(mod, "__path__"):
        return
    for info in pkgutil.iter_modules(mod.__path__):
        sub = stdlib(f"{m.group(2)}.{info.name}") if not info.name.startswith("_") else None
        if sub is not None and hasattr(sub, m.group(1)):
            yield n, line.replace(f"from {m.group(2)} import", f"from {m.group(2)}.{info.name} import")


def local_module(err, msg, lines, n, line, text, cwd):
    """`from util import slugify` beside utils.py: the nearest module in the folder."""
    m = re.match(r"No module named '(\w+)'$", msg)
    if m and stdlib(m.group(1)) is None:
        here = [p.stem for p in entries(cwd, 2000) if p.suffix == ".py" or (p / "__init__.py").is_file()]
        for near in difflib.get_close_matches(m.group(1), here, n=2, cutoff=0.6):
            yield n, re.sub(rf"\b{m.group(1)}\b", near, line, count=1)


def not_a_package(err, msg, lines, n, line, text, cwd):
    m = re.match(r"No module named '([\w.]+)'; '([\w.]+)' is not a package", msg)
    if m:
        yield n, line.replace(m.group(1), m.group(2))


# -- types -----------------------------------------------------------------------------------------------


def not_called(err, msg, lines, n, line, text, cwd):
    """`name.upper + "!"`: a method used without calling it."""
    if "builtin_function_or_method" in msg or "'method'" in msg:
        for m in re.finditer(r"\.(\w+)\b(?!\s*\()", line):
            yield n, line[: m.end()] + "()" + line[m.end() :]


def none_result(err, msg, lines, n, line, text, cwd):
    """`top = scores.sort(...)`, `names = names.append(...)`: the method changes the list and returns None."""
    if "NoneType" not in msg:
        return
    for k, x in enumerate(lines[:n], 1):
        m = re.match(rf"^(\s*)(\w+) = (\w+)\.({'|'.join(MUTATORS)})\((.*)\)\s*$", x)
        if not m:
            continue
        sp, y, obj, meth, args = m.groups()
        if y == obj:
            yield k, f"{sp}{obj}.{meth}({args})"
        elif meth == "sort":
            yield k, f"{sp}{y} = sorted({obj}{', ' + args if args else ''})"
        else:
            yield k, f"{sp}{obj}.{meth}({args})\n{sp}{y} = {obj}"


def no_return(err, msg, lines, n, line, text, cwd):
    """A function that builds a value and never returns it: `return` of the last name it assigned."""
    if "NoneType" not in msg:
        return
    for k, x in enumerate(lines, 1):
        d = re.match(r"^(\s*)def (\w+)\(", x)
        if not d or not re.search(rf"(?<![\w.]){d.group(2)}\(", line):
            continue
        body = []
        for y in lines[k:]:
            if y.strip() and len(indent(y)) <= len(d.group(1)):
                break
            body.append(y)
        if any(re.match(r"^\s*return\b", y) for y in body):
            continue
        names = [a.group(1) for y in body for a in [re.match(r"^\s*(\w+)\s*=[^=]", y)] if a]
        last = max((i for i, y in enumerate(body) if y.strip()), default=-1)
        if names and last >= 0:
            sp = indent(next(y for y in body if y.strip()))
            yield k + last + 1, body[last] + f"\n{sp}return {names[-1]}"


def foreign_method(err, msg, lines, n, line, text, cwd):
    """Another language's name for a method: `stack.push(x)`, `names.length`, `s.toUpperCase()`, `d.has_key(k)`."""
    m = re.match(r"'(list|str|dict|set|tuple)' object has no attribute '(\w+)'", msg)
    if not m:
        return
    kind, name = m.groups()
    size = re.search(rf"([\w.\[\]]+)\.{name}\b(\(\s*\))?", line)
    if name in ("length", "size") and size:
        yield n, line[: size.start()] + f"len({size.group(1)})" + line[size.end() :]
    has = re.search(rf"([\w.\[\]]+)\.{name}\(([^()]+)\)", line)
    if name in ("has_key", "containsKey", "contains", "includes") and has:
        yield n, line[: has.start()] + f"{has.group(2)} in {has.group(1)}" + line[has.end() :]
    for new in FOREIGN.get((kind, name), ()):
        yield n, re.sub(rf"\.{name}\b", f".{new}", line, count=1)


def to_str(err, msg, lines, n, line, text, cwd):
    """`"Total: " + count`: the number turned into text where it is added."""
    if not msg.startswith('can only concatenate str (not "'):
        return
    for m in re.finditer(r"(?<=\+)\s*([\w.]+(?:\([^()]*\))?)(?=\s*(?:\+|\)|$))", line):
        if not m.group(1).isdigit():
            yield n, line[: m.start(1)] + f"str({m.group(1)})" + line[m.end(1) :]


def to_number(err, msg, lines, n, line, text, cwd):
    """`total += line` with a line of a file: the text turned into a number."""
    if not re.match(r"unsupported operand type\(s\) for \+=?: '(int|float)' and 'str'", msg):
        return
    m = re.match(r"^(\s*[\w.\[\]]+\s*\+=\s*)(.+?)\s*$", line)
    if m:
        for f in ("int", "float"):
            yield n, f"{m.group(1)}{f}({m.group(2)})"


def compare_types(err, msg, lines, n, line, text, cwd):
    """`if age >= 18` with age read from a file: the text side turned into a number."""
    m = re.match(r"'([<>=!]+)' not supported between instances of '(\w+)' and '(\w+)'", msg)
    if not m or "str" not in m.group(2, 3) or m.group(2) == m.group(3):
        return
    op, left_is_str = m.group(1), m.group(2) == "str"
    side = r"([\w.]+(?:\[[^\]]*\])?(?:\([^()]*\))?)"
    c = re.search(rf"{side}\s*{re.escape(op)}\s*{side}", line)
    if c:
        i = 1 if left_is_str else 2
        for f in ("int", "float"):
            yield n, line[: c.start(i)] + f"{f}({c.group(i)})" + line[c.end(i) :]


def float_index(err, msg, lines, n, line, text, cwd):
    """`values[len(values) / 2]`: an index made with / is a float; // keeps it whole."""
    if "indices must be integers or slices, not float" in msg:
        yield n, re.sub(r"(?<![/])/(?![/=])", "//", line)


def past_the_end(err, msg, lines, n, line, text, cwd):
    """`queue[len(queue)]`: the last item is at len - 1."""
    if err == "IndexError" and re.search(r"\[\s*len\(([^()]+)\)\s*\]", line):
        yield n, re.sub(r"\[\s*len\(([^()]+)\)\s*\]", r"[len(\1) - 1]", line)


def for_in_len(err, msg, lines, n, line, text, cwd):
    """`for i in len(colors):` / `for i in count:`: a number is not a sequence; range() of it is."""
    m = re.match(r"^(\s*for .+? in )(.+?)(\s*:.*)$", line)
    if m and ("'int' object is not iterable" in msg or "'float' object is not iterable" in msg):
        yield n, f"{m.group(1)}range({m.group(2)}){m.group(3)}"


def init_typo(err, msg, lines, n, line, text, cwd):
    """`Point(2, 3)` -> "Point() takes no arguments": its __init__ is misspelt (`__int__`, `_init_`, `init`)."""
    m = re.match(r"(\w+)\(\) takes no arguments", msg)
    if not m:
        return
    start = next((k for k, x in enumerate(lines, 1) if re.match(rf"^\s*class {m.group(1)}\b", x)), 0)
    for k in range(start + 1, block_end(lines, start) + 1 if start else 0):
        d = re.match(
            r"^(\s*def\s+)(__int__|_init_|__init_|_init__|__innit__|init|__Init__|__init)(\s*\()",
            lines[k - 1],
        )
        if d:
            yield k, d.group(1) + "__init__" + lines[k - 1][d.start(3) :]


def method_self(err, msg, lines, n, line, text, cwd):
    """`Greeter().hello()` -> "hello() takes 0 positional arguments but 1 was given": the method has no `self`."""
    m = re.match(r"(?:\w+\.)?(\w+)\(\) takes (\d+) positional arguments? but (\d+) (?:was|were) given", msg)
    if not m or int(m.group(3)) != int(m.group(2)) + 1:
        return
    for k, x in enumerate(lines, 1):
        d = re.match(rf"^(\s+def\s+{m.group(1)}\s*\()\s*(\w*)", x)
        if d and d.group(2) not in ("self", "cls"):
            yield k, d.group(1) + ("self, " if d.group(2) else "self") + x[d.end(1) :].lstrip()


def join_ints(err, msg, lines, n, line, text, cwd):
    if re.match(r"sequence item \d+: expected str instance", msg):
        yield n, re.sub(r"\.join\(([^()]+)\)", r".join(map(str, \1))", line)


def range_str(err, msg, lines, n, line, text, cwd):
    if "'str' object cannot be interpreted as an integer" in msg:
        yield n, re.sub(r"range\((\w+)\)", r"range(int(\1))", line)


def lazy(err, msg, lines, n, line, text, cwd):
    """`nums = map(...)` then `nums[0]`: the iterator made a list where it is made."""
    m = re.match(
        r"'(map|filter|zip|dict_keys|dict_values|dict_items|generator|reversed)' object is not subscriptable",
        msg,
    )
    if not m:
        return
    for name in re.findall(r"(\w+)\[", line):
        for k, x in enumerate(lines[:n], 1):
            a = re.match(rf"^(\s*){name}\s*=\s*(.+?)\s*$", x)
            if a:
                yield k, f"{a.group(1)}{name} = list({a.group(2)})"


def unpack_dict(err, msg, lines, n, line, text, cwd):
    if msg.startswith(("too many values to unpack", "not enough values to unpack")):
        m = re.match(r"^(\s*for .+ in )(\w+)(\s*:.*)$", line)
        if m:
            yield n, f"{m.group(1)}{m.group(2)}.items(){m.group(3)}"


def changed_size(err, msg, lines, n, line, text, cwd):
    if "changed size during iteration" in msg:
        for k in range(n, 0, -1):
            m = re.match(r"^(\s*for .+ in )(\w+(?:\.\w+\(\))?)(\s*:.*)$", lines[k - 1])
            if m:
                yield k, f"{m.group(1)}list({m.group(2)}){m.group(3)}"
                return


def class_not_instance(err, msg, lines, n, line, text, cwd):
    """`Counter.increment()` or `c = Counter; c.increment()`: the class used where an instance was meant."""
    m = re.match(r"(\w+)\.(\w+)\(\) missing 1 required positional argument: 'self'", msg)
    if not m:
        return
    cls = m.group(1)
    if re.search(rf"\b{cls}\.{m.group(2)}\(", line):
        yield n, re.sub(rf"\b{cls}\.{m.group(2)}\(", f"{cls}().{m.group(2)}(", line)
    for k, x in enumerate(lines[:n], 1):
        if re.match(rf"^\s*\w+\s*=\s*{cls}\s*$", x):
            yield k, x.rstrip() + "()"


def search_not_match(err, msg, lines, n, line, text, cwd):
    """`re.match(...).group()` on None: re.match only looks at the start of the text; re.search anywhere."""
    if re.match(r"'NoneType' object has no attribute '(group|groups|groupdict|start|end|span)'", msg):
        for k, x in enumerate(lines[:n], 1):
            if "re.match(" in x:
                yield k, x.replace("re.match(", "re.search(")


def str_assign(err, msg, lines, n, line, text, cwd):
    """`word[0] = "P"`: text cannot change in place; a new one is built."""
    m = re.match(r"^(\s*)(\w+)\[(\w+)\]\s*=\s*(.+?)\s*$", line)
    if "'str' object does not support item assignment" in msg and m:
        sp, name, i, v = m.groups()
        head = "" if i == "0" else f"{name}[:{i}] + "
        yield n, f"{sp}{name} = {head}{v} + {name}[{int(i) + 1 if i.isdigit() else i + ' + 1'}:]"


def unpack_rest(err, msg, lines, n, line, text, cwd):
    """`date, item, price = line.split(",")` of four fields: the rest kept apart."""
    m = re.match(r"^(\s*)(\w+(?:\s*,\s*\w+)+)\s*=\s*(.+)$", line)
    if msg.startswith("too many values to unpack") and m:
        yield n, f"{m.group(1)}{m.group(2)}, *_ = {m.group(3)}"


def empty_field(err, msg, lines, n, line, text, cwd):
    """`int('')` from text split on "\\n" (its last line is empty): split on any whitespace instead."""
    if re.match(r"(invalid literal for int\(\) with base 10|could not convert string to float): ''", msg):
        for k, x in enumerate(lines[:n], 1):
            new = re.sub(r"""\.split\((["'])\\n\1\)""", ".split()", x)
            if new != x:
                yield k, new


def time_format(err, msg, lines, n, line, text, cwd):
    """`strptime("2024-03-15 14:30", "%Y-%m-%d")`: the format given the time the text goes on with."""
    m = re.match(r"unconverted data remains: (.+)$", msg)
    call = re.search(r"strptime\((.+),\s*(['\"])(.*?)\2\s*\)", line)
    if m and call:
        rest = re.sub(r"\d{1,2}:\d{2}:\d{2}", "%H:%M:%S", m.group(1))
        rest = re.sub(r"\d{1,2}:\d{2}", "%H:%M", rest)
        if "%" in rest:
            a = call.start(3) + len(call.group(3))
            yield n, line[:a] + rest + line[a:]


def defined_later(err, msg, lines, n, line, text, cwd):
    """A decorator (or a call at the top level) that names a function defined further down: that function
    moved above it."""
    m = re.match(r"name '(\w+)' is not defined", msg)
    if err != "NameError" or not m:
        return
    at = next((k for k, x in enumerate(lines, 1) if k > n and re.match(rf"^def {m.group(1)}\(", x)), 0)
    start = n
    while start > 1 and lines[start - 2].startswith("@"):
        start -= 1
    if at and not line.startswith((" ", "\t")):
        end = block_end(lines, at)
        moved = lines[at - 1 : end] + ["", ""] + lines[start - 1 : at - 1]
        yield start, end, "\n".join(moved).rstrip("\n")


# -- data and files --------------------------------------------------------------------------------------


def data_keys(cwd: Path, code: str) -> list[str]:
    """Keys the JSON files and CSV headers hold (the program's own data files, then the folder's; the first 64
    KiB of each), and the program's own dict keys."""
    keys: list[str] = re.findall(r"""["'](\w[\w -]*)["']\s*:""", code)

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                keys.append(str(k))
                walk(v)
        elif isinstance(x, list):
            for v in x[:20]:
                walk(v)

    named = [cwd / n for n in re.findall(r"""["']([^"'\n]+\.(?:json|csv|tsv))["']""", code) if ".." not in n]
    for p in list(dict.fromkeys(named + sorted(entries(cwd, 2000))))[
        :200
    ]:  # the files the program names first
        if p.suffix not in (".json", ".csv", ".tsv") or not p.is_file():
            continue
        try:
            head = p.read_text(errors="replace")[:65536]
        except OSError:
            continue
        if p.suffix == ".json":
            try:
                walk(json.loads(head))
            except ValueError:
                continue
        else:
            first = head.split("\n", 1)[0]
            keys += first.split("\t" if p.suffix == ".tsv" else ",")
    return list(dict.fromkeys(keys))


def near_key(err, msg, lines, n, line, text, cwd):
    """KeyError: the key the data spells otherwise (`userName` -> `user_name`, `database` -> `db`, `Price` ->
    ` Price` of a CSV header written `Item, Price`, which csv reads best with skipinitialspace)."""
    m = re.match(r"'(.+)'$", msg)
    if err != "KeyError" or not m:
        return
    from iclaw.tools.hints import distance

    def norm(s: str) -> str:
        return re.sub(r"[\s_-]", "", s).lower()

    def sub(a: str, b: str) -> bool:  # b's letters in order in a, from its first: database -> db
        it = iter(a)
        return a[:1] == b[:1] and len(b) > 1 and all(c in it for c in b)

    wrong, code = m.group(1), "\n".join(lines)
    keys = [k for k in data_keys(cwd, code) if k != wrong]
    if wrong in [k.strip() for k in keys] and "csv.DictReader(" in code and "skipinitialspace" not in code:
        for k, x in enumerate(lines, 1):
            c = re.search(r"csv\.DictReader\(", x)
            end = closing(x, c.end() - 1) if c else -1
            if end > 0:
                yield k, x[:end] + ", skipinitialspace=True" + x[end:]
    w = norm(wrong)
    close = [
        k
        for k in keys
        if norm(k) == w
        or distance(w, norm(k), 8) <= max(2, len(w) // 3)
        or sub(w, norm(k))
        or sub(norm(k), w)
    ]
    for k in sorted(close, key=lambda k: (norm(k) != w, distance(w, norm(k), 8), len(k)))[:3]:
        for q in "\"'":
            if f"{q}{wrong}{q}" in line:
                yield n, line.replace(f"{q}{wrong}{q}", f"{q}{k}{q}")


def header_row(err, msg, lines, n, line, text, cwd):
    """`int(row[1])` meets 'qty': the file's header row read as data; skipped with next() where the reader is
    made (or the file opened, for a loop over its lines)."""
    m = re.match(
        r"could not convert string to float: '(.*)'$|invalid literal for int\(\) with base 10: '(.*)'$", msg
    )
    word = m and (m.group(1) if m.group(1) is not None else m.group(2))
    if not word or not re.fullmatch(r"[A-Za-z_][\w ]*", word):
        return
    for k in range(n - 1, 0, -1):
        r = re.match(r"^(\s*)(\w+)\s*=\s*csv\.reader\(", lines[k - 1])
        w = re.match(r"^(\s*)with open\(.*\) as (\w+):\s*$", lines[k - 1])
        if r:
            yield k, lines[k - 1] + f"\n{r.group(1)}next({r.group(2)})"
            return
        if w:
            body = next((indent(x) for x in lines[k:n] if x.strip()), w.group(1) + "    ")
            yield k, lines[k - 1] + f"\n{body}next({w.group(2)})"
            return


def first_count(err, msg, lines, n, line, text, cwd):
    """`totals[key] += x` where the key is new: counted from 0 (dict.get)."""
    m = re.match(r"^(\s*)(\w+)\[(.+)\]\s*\+=\s*(.+?)\s*$", line)
    if err == "KeyError" and m:
        sp, d, key, v = m.groups()
        yield n, f"{sp}{d}[{key}] = {d}.get({key}, 0) + {v}"


def list_by_key(err, msg, lines, n, line, text, cwd):
    """A list indexed by a key: `["0"]` meant the number, else the first item was meant (`data[0]["name"]`)."""
    if msg.startswith("list indices must be integers or slices, not str"):
        if re.search(r"""\[(["'])\d+\1\]""", line):
            yield n, re.sub(r"""\[(["'])(\d+)\1\]""", r"[\2]", line)
        for m in re.finditer(r"""(\w+|\])\[(["'])""", line):
            yield n, line[: m.end(1)] + "[0]" + line[m.end(1) :]


def json_default(err, msg, lines, n, line, text, cwd):
    m = re.match(r"Object of type (\w+) is not JSON serializable", msg)
    if not m:
        return
    mine = re.search(rf"^\s*class {m.group(1)}\b", "\n".join(lines), re.M)
    for k in range(n, 0, -1):
        call = re.search(r"json\.dumps?\(", lines[k - 1])
        end = closing(lines[k - 1], call.end() - 1) if call else -1
        if end > 0:
            for f in ("vars", "str") if mine else ("str", "vars"):
                yield k, lines[k - 1][:end] + f", default={f}" + lines[k - 1][end:]
            return


def json_quotes(err, msg, lines, n, line, text, cwd):
    if msg.startswith("Expecting property name enclosed in double quotes"):
        m = re.search(r"json\.loads\((\w+)\)", line)
        if m:
            yield n, line.replace(m.group(0), f"json.loads({m.group(1)}.replace(\"'\", '\"'))")


def make_folder(err, msg, lines, n, line, text, cwd):
    """`open("out/report.txt", "w")` where out/ is not there yet: the folder made first."""
    m = re.match(r"\[Errno 2\] No such file or directory: '(.+)/[^/]+'$", msg)
    if (
        err == "FileNotFoundError"
        and m
        and not (cwd / m.group(1)).exists()
        and re.search(r"""['"][wax]""", line)
    ):
        k, new = top(lines, f'import os\nos.makedirs("{m.group(1)}", exist_ok=True)')
        yield k, new


def elsewhere(err, msg, lines, n, line, text, cwd):
    """`open("scores.txt")` where the file is data/scores.txt: the path it has in the folder (two levels down)."""
    m = re.match(r"\[Errno 2\] No such file or directory: '([^'/]+)'$", msg)
    if err != "FileNotFoundError" or not m:
        return
    dirs = [d for d in entries(cwd, 200) if d.is_dir()]
    dirs += [e for d in dirs[:50] for e in entries(d, 50) if e.is_dir()]
    found = [d / m.group(1) for d in dirs if (d / m.group(1)).is_file()]
    for p in sorted(found)[:2]:
        for q in "\"'":
            if f"{q}{m.group(1)}{q}" in line:
                yield n, line.replace(f"{q}{m.group(1)}{q}", f"{q}{p.relative_to(cwd)}{q}")


def remove_folder(err, msg, lines, n, line, text, cwd):
    """`os.remove("build")` of a folder: os.rmdir for an empty one, shutil.rmtree for the rest."""
    if err == "IsADirectoryError" and re.search(r"os\.(remove|unlink)\(", line):
        yield n, re.sub(r"os\.(remove|unlink)\(", "os.rmdir(", line)
        yield n, indent(line) + "import shutil\n" + re.sub(r"os\.(remove|unlink)\(", "shutil.rmtree(", line)


def open_folder(err, msg, lines, n, line, text, cwd):
    """`open("logs")` of a folder: the files in it."""
    m = re.match(r"\[Errno 21\] Is a directory: '(.+)'$", msg)
    if err == "IsADirectoryError" and m and (cwd / m.group(1)).is_dir() and "open(" in line:
        names = sorted(p.name for p in entries(cwd / m.group(1), 2000) if p.is_file())[:3]
        for q in "\"'":
            for name in names if f"open({q}{m.group(1)}{q}" in line else []:
                yield n, line.replace(f"open({q}{m.group(1)}{q}", f"open({q}{m.group(1)}/{name}{q}")


def after_with(err, msg, lines, n, line, text, cwd):
    if msg.startswith("I/O operation on closed file"):
        for k in range(n - 1, 0, -1):
            m = re.match(r"^(\s*)with .*:\s*$", lines[k - 1])
            if m:
                body = next((indent(x) for x in lines[k:n] if x.strip()), m.group(1) + "    ")
                yield n, body + line.lstrip()
                return


def command_string(err, msg, lines, n, line, text, cwd):
    m = re.match(r"\[Errno 2\] No such file or directory: '([^']+ [^']*)'", msg)
    if m and "subprocess" in "\n".join(lines):
        import shlex

        for q in "\"'":
            if f"{q}{m.group(1)}{q}" in line:
                words = ", ".join(json.dumps(w) for w in shlex.split(m.group(1)))
                yield n, line.replace(f"{q}{m.group(1)}{q}", f"[{words}]")


RUNTIME = [
    not_imported, missing_self, global_name, module_called, submodule, wrong_module, not_a_package,
    local_module, defined_later, not_called, none_result, no_return, foreign_method, to_str, to_number,
    compare_types, float_index, past_the_end, for_in_len, init_typo, method_self, join_ints, range_str, lazy,
    unpack_dict, unpack_rest, changed_size, class_not_instance, search_not_match, str_assign, empty_field,
    time_format, near_key, header_row, first_count, list_by_key, json_default, json_quotes, make_folder,
    elsewhere, remove_folder, open_folder, after_with, command_string,
]  # fmt: skip

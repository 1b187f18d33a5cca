"""A failed shell command read as the command it should have been: the slips whose message (or shape) says the fix.

`fixes(code, text, cwd)` returns whole commands, nearest first; hints.py offers them as one `fix` hint
(`[hint: try cut -d, -f1 users.csv]`) and the search (iclaw/agent/search.py) runs each in a copy of the folder,
so a rule only proposes. Most are thefuck's rules or their kin, each keyed to what the tool printed:

  flags     `cut -f0` (fields count from 1), `awk -f,` (-F), `tar -cfv x.tar` (f takes the next word, so last),
            `chmod x+` (+x), `tail 3 f` (-n 3), `head -n f 3`, `mkdir a/b` (-p), `cp dir` / `rm dir` / `grep dir`
            (-r), `sed -i ''` (macOS), a `|` in grep's pattern (-E), `wc -1` (l), `find -type file` (f),
            `cut -d: 1` (-f1), `sort -t ', '` (one character), `find | xargs` of names with spaces (-print0, -0)
  words     `tar -cf folder x.tar` (the archive first), `grep two words f` (the phrase quoted), `find -name *.py`
            (the glob quoted), `-exec ... {}` (its `\\;`), `s/a/b` (its closing `/`), `sed -n '2,3'` (p),
            `s//var/a//var/b/` (another delimiter), `awk {print $1}` (quoted), `-c 'print('x')'` (outer quotes
            double), `$year_q1` (${year}_q1), `name = x` / `export A = 1`, `[ $n -gt 2]`, `for ...; echo; done`
            (do), `cd..`, `... | out.txt` (> out.txt)
  habits    Windows and macOS names (`copy`, `where`, `del`, `cls`, `findstr`), `sh` for a bash script, a script
            saved with CRLF line ends

Left out: fixes that need to know the intent (which `/` of `s/http://a/http://b/` is the separator, an
apostrophe inside single quotes): the policy's samples are what the search tries there.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

WINDOWS = {
    "copy": "cp",
    "move": "mv",
    "del": "rm",
    "where": "which",
    "cls": "clear",
    "findstr": "grep",
    "md": "mkdir",
}
WINDOWS |= {"rd": "rmdir", "ren": "mv", "tracert": "traceroute", "ipconfig": "ip addr"}


def split(code: str) -> list[str]:
    try:
        return shlex.split(code)
    except ValueError:
        return code.split()


def join(ws: list[str]) -> str:
    return " ".join(w if re.fullmatch(r"[\w@%+=:,./|<>&;*?{}\\-]+", w) else shlex.quote(w) for w in ws)


def fixes(code: str, text: str, cwd: Path) -> list[str]:
    """Whole-command candidates for `code`, which failed printing `text`, in folder `cwd`."""
    out: list[str] = []
    for rule in RULES:
        try:
            out += [c for c in rule(code, text, cwd) if c and c.strip() != code.strip()]
        except (ValueError, IndexError, OSError):
            continue
    return list(dict.fromkeys(out))[:4]


def sub(pattern: str, repl, code: str) -> str:
    return re.sub(pattern, repl, code, count=1)


# -- flags ------------------------------------------------------------------------------------------------


def cut_zero(code, text, cwd):
    if "numbered from 1" in text:
        yield sub(r"(-f\s*)0\b", r"\g<1>1", code)


def awk_F(code, text, cwd):
    m = re.search(r"\bawk\s+-f\s*(\S+)", code)
    if (
        m
        and ("source file" in text or "cannot open" in text)
        and not (cwd / m.group(1).strip("'\"")).is_file()
    ):
        yield code[: m.start()] + code[m.start() : m.end()].replace("-f", "-F", 1) + code[m.end() :]


def option_lookalike(code, text, cwd):
    """`wc -1`: a letter and a digit that look alike (l/1, o/0, I/l) typed for each other."""
    m = re.search(r"invalid option -- '(.)'", text)
    swap = {"1": "l", "l": "1", "0": "o", "o": "0", "I": "l"}
    if m and m.group(1) in swap:
        c = m.group(1)
        yield re.sub(rf"(\s-\w*){re.escape(c)}", lambda x: x.group(1) + swap[c], code, count=1)


def find_type(code, text, cwd):
    """`find . -type file`: -type takes one letter (f, d, l)."""
    letters = {
        "file": "f",
        "files": "f",
        "dir": "d",
        "directory": "d",
        "folder": "d",
        "link": "l",
        "symlink": "l",
    }
    m = re.search(r"(-type\s+)(\w+)", code)
    if m and m.group(2) in letters and "-type" in text:
        yield code[: m.start(2)] + letters[m.group(2)] + code[m.end(2) :]


def cut_list(code, text, cwd):
    """`cut -d: 1 users.txt`: the field list needs its -f; `cut -d, -f 2 3`: one comma-separated list."""
    if "you must specify a list of" in text:
        m = re.search(r"(\bcut\b.*?\s)(\d[\d,-]*)(?=\s)", code)
        if m:
            yield code[: m.start(2)] + "-f" + code[m.start(2) :]
    m = re.search(r"(\bcut\b.*?-f\s*)(\d+)((?:\s+\d+)+)(?=\s)", code)
    if m and text and not (cwd / m.group(3).split()[0]).exists():
        yield code[: m.start(2)] + ",".join([m.group(2), *m.group(3).split()]) + code[m.end(3) :]


def one_char_tab(code, text, cwd):
    """`sort -t ', '`: sort splits on one character."""
    m = re.search(r"(-t\s*)(['\"])\s*(\S)\S*?\s*\2", code)
    if m and "multi-character tab" in text:
        yield code[: m.start(2)] + f"'{m.group(3)}'" + code[m.end() :]


def xargs_spaces(code, text, cwd):
    """`find ... | xargs grep x` with a name that has spaces: NUL-separated names (-print0 / -0)."""
    if re.search(r"\|\s*xargs\s", code) and "No such file or directory" in text and " -0" not in code:
        new = re.sub(r"\|\s*xargs\s", "| xargs -0 ", code, count=1)
        if re.search(r"^\s*find\b", code):
            yield re.sub(r"\s*\|\s*xargs -0 ", " -print0 | xargs -0 ", new, count=1)
        yield re.sub(r"\|\s*xargs\s", "| xargs -d '\\n' ", code, count=1)


def tar_f_last(code, text, cwd):
    """`tar -cfv notes.tar notes`: f names the archive, so it ends the cluster."""
    m = re.search(r"\btar\s+(-?)([a-zA-Z]*f[a-zA-Z]+)\b", code)
    if m and text:
        flags = m.group(2).replace("f", "") + "f"
        yield code[: m.start(2)] + flags + code[m.end(2) :]


def tar_order(code, text, cwd):
    """`tar -cf notes backup.tar`: the archive comes right after f; `tar -czf x.tar.gz` with nothing to add."""
    ws = split(code)
    if not ws or ws[0] != "tar" or len(ws) < 2 or "f" not in ws[1] or "c" not in ws[1]:
        return
    arch = re.compile(r".+\.(tar(\.\w+)?|tgz|tbz2?|txz)$")
    if len(ws) >= 4 and not arch.match(ws[2]) and arch.match(ws[3]) and (cwd / ws[2]).exists():
        yield join(ws[:2] + [ws[3], ws[2]] + ws[4:])
    if len(ws) == 3 and arch.match(ws[2]) and "empty archive" in text:
        stem = re.sub(r"\.(tar(\.\w+)?|tgz|tbz2?|txz)$", "", ws[2])
        if (cwd / stem).exists():
            yield join(ws + [stem])


def chmod_mode(code, text, cwd):
    m = re.search(r"\bchmod\s+([rwxXst]+)([+-=])([ugoa]*)(?=\s)", code)
    if m and "invalid mode" in text:
        yield code[: m.start(1)] + m.group(3) + m.group(2) + m.group(1) + code[m.end(3) :]


def line_count(code, text, cwd):
    """`tail 3 log.txt` (3 taken for a file): -n 3; `head -n log.txt 3`: the two swapped."""
    m = re.search(r"\b(head|tail)\s+(\d+)(?=\s|$)", code)
    if m and not (cwd / m.group(2)).exists():
        yield code[: m.start(2)] + "-n " + m.group(2) + code[m.end(2) :]
    m = re.search(r"\b(head|tail)\s+-n\s*(\S+)\s+(\d+)\b", code)
    if m and "invalid number of lines" in text:
        yield code[: m.start(2)] + m.group(3) + " " + m.group(2) + code[m.end(3) :]


def recursive(code, text, cwd):
    """mkdir of a path whose parents are missing (-p); cp, rm or grep of a folder (-r)."""
    m = re.match(r"^(\s*mkdir)(\s)", code)
    if m and "No such file or directory" in text:
        yield m.group(1) + " -p" + code[m.end(1) :]
    for tool, said in (("cp", "omitting directory"), ("rm", "Is a directory"), ("grep", "Is a directory")):
        m = re.search(rf"(?:^|[;&|]\s*)({tool})\s", code)
        if m and said in text:
            yield code[: m.end(1)] + " -r" + code[m.end(1) :]


def sed_macos(code, text, cwd):
    if re.search(r"\bsed\s+-i\s+(''|\"\")\s", code):
        yield re.sub(r"(\bsed\s+-i)\s+(''|\"\")", r"\1", code, count=1)


def grep_extended(code, text, cwd):
    """`grep "error|warning" f` finds nothing: a basic pattern takes | as a character."""
    ws = split(code)
    if ws[:1] == ["grep"] and not any(w.startswith("-") and "E" in w for w in ws) and "grep:" not in text:
        pat = next((w for w in ws[1:] if not w.startswith("-")), "")
        if re.search(r"[|+?]|\{\d", pat) and "\\|" not in pat:
            yield sub(r"^(\s*grep)\b", r"\1 -E", code)


# -- words ------------------------------------------------------------------------------------------------


def grep_phrase(code, text, cwd):
    """`grep connection refused server.log`: the words before the file are one pattern."""
    ws = split(code)
    if ws[:1] != ["grep"] or "No such file or directory" not in text:
        return
    opts = [w for w in ws[1:] if w.startswith("-")]
    rest = [w for w in ws[1:] if not w.startswith("-")]
    exists = [i for i, w in enumerate(rest) if (cwd / w).exists()]
    if exists and exists[0] >= 2:
        k = exists[0]
        yield join(["grep", *opts]) + " " + shlex.quote(" ".join(rest[:k])) + " " + join(rest[k:])


def find_quotes(code, text, cwd):
    if (
        "paths must precede expression" in text
        or "unknown predicate" in text
        or "missing argument to `-exec'" in text
    ):
        new = re.sub(r"(-i?name\s+)([^\s'\"]*[*?][^\s'\"]*)", r"\1'\2'", code)
        if "missing argument to `-exec'" in text and not re.search(r"\\;|';'|\+\s*$", new):
            new = re.sub(r"\s*\\?\s*$", "", new) + " \\;"
        yield new


def sed_close(code, text, cwd):
    """`sed 's/localhost/127.0.0.1' f`: the s command's closing delimiter."""
    if "unterminated `s' command" not in text:
        return
    for m in re.finditer(r"(['\"]?)s([/|#:,])((?:[^\\'\"]|\\.)*)\1", code):
        d, body = m.group(2), m.group(3)
        if len(re.findall(rf"(?<!\\){re.escape(d)}", body)) == 1:
            yield code[: m.end(3)] + d + code[m.end(3) :]


def sed_print(code, text, cwd):
    """`sed -n '2,3' f`: an address with no command; -n wants p."""
    m = re.search(r"\bsed\s+-n\s+(['\"]?)([\d,$]+|/[^/]*/(?:,\s*/[^/]*/)?)\1(?=\s)", code)
    if m and "missing command" in text:
        yield code[: m.end(2)] + "p" + code[m.end(2) :]


def sed_paths(code, text, cwd):
    """`sed 's//var/www//srv/web/' f`: paths in an s command; another delimiter keeps their slashes."""
    m = re.search(r"(['\"])s/(/[^'\"]*?)/(/[^'\"]*?)/?(g?)\1", code)
    if m and ("unknown option to `s'" in text or "couldn't open file" in text or "No such file" in text):
        a, b = m.group(2).rstrip("/"), m.group(3).rstrip("/")
        for d in "|#,:":
            if d not in a + b:
                yield (
                    code[: m.start()]
                    + f"{m.group(1)}s{d}{a}{d}{b}{d}{m.group(4)}{m.group(1)}"
                    + code[m.end() :]
                )
                return


def awk_program(code, text, cwd):
    """`awk -F, {print $1} f`: the program unquoted (the shell split it and ate its $1)."""
    m = re.search(r"\bawk\b[^'\"{]*?\s(\{[^'\"]*\})(?=\s|$)", code)
    if m and text:
        yield code[: m.start(1)] + f"'{m.group(1)}'" + code[m.end(1) :]


def c_quotes(code, text, cwd):
    """`python3 -c 'print('hi there')'`: quotes inside quotes of the same kind; the outer ones made double."""
    m = re.search(r"(\s-c\s+)'(.*'.*)'\s*$", code)
    if m and not re.search(r"[\"$`\\]", m.group(2)):
        yield code[: m.start(2) - 1] + f'"{m.group(2)}"'


def var_braces(code, text, cwd):
    """`cat sales_$year_q1.csv`: the shell reads $year_q1; ${year}_q1 was meant (a variable set in the line)."""
    if "No such file" not in text and "not found" not in text:
        return
    for m in re.finditer(r"\$([A-Za-z]\w*?)(_\w+)", code):
        if re.search(rf"(^|[;&\s])(export\s+)?{m.group(1)}=", code):
            yield code[: m.start()] + "${" + m.group(1) + "}" + m.group(2) + code[m.end() :]


def assign(code, text, cwd):
    """`name = world`, `export PORT = 8080`: no spaces around = in the shell."""
    m = re.match(r"^(\s*(?:export\s+|local\s+|readonly\s+)?)([A-Za-z_]\w*)\s+=\s+(\S)", code)
    if m and ("command not found" in text or "not a valid identifier" in text):
        yield code[: m.start(2)] + m.group(2) + "=" + code[m.start(3) :]


def brackets(code, text, cwd):
    """`[ $n -gt 2]`, `[$n -gt 2 ]`, `if[ -f x ]`: `[` is a command, its words stand apart; `for f in *.csv do`
    and `for ...; echo $f; done`: the loop's `;` and `do`."""
    if "missing `]'" in text or "[" in code and re.search(r"\[\S|\S\]", code) and "command not found" in text:
        new = re.sub(r"(^|[\s;&|(])\[(?=[^\s\[])", r"\1[ ", code)
        yield re.sub(r"(?<=[^\s\]])\](?=\s|$|;|&|\|)", " ]", new)
    if re.search(r"(^|;\s*)(if|while|until)\[", code):
        yield re.sub(r"(^|;\s*)(if|while|until)\[", r"\1\2 [", code)
    if "unexpected token" in text or "syntax error" in text:
        if re.search(r"\bfor\s+\w+\s+in\s+[^;]*?\s+do\b", code):
            yield re.sub(r"(\bfor\s+\w+\s+in\s+[^;]*?)\s+do\b", r"\1; do", code, count=1)
        elif re.search(r"\bfor\b[^;]*;\s*(?!do\b)", code) and "do" not in split(code):
            yield re.sub(r"(\bfor\b[^;]*;)\s*", r"\1 do ", code, count=1)


def swapped(code, text, cwd):
    """`grep -rn src/ TODO`: the pattern and the folder in each other's place."""
    ws = split(code)
    if ws[:1] == ["grep"] and "No such file or directory" in text:
        rest = [i for i, w in enumerate(ws) if i and not w.startswith("-")]
        if len(rest) == 2 and (cwd / ws[rest[0]]).exists() and not (cwd / ws[rest[1]]).exists():
            ws[rest[0]], ws[rest[1]] = ws[rest[1]], ws[rest[0]]
            yield join(ws)


def look_not_read(code, text, cwd):
    """`cat src` of a folder: its listing (thefuck's cat_dir)."""
    m = re.match(r"^(\s*)cat(\s+\S+)\s*$", code)
    if m and "Is a directory" in text:
        yield m.group(1) + "ls" + m.group(2)


def cd_parent(code, text, cwd):
    if re.search(r"(^|[;&|]\s*)cd\.\.", code):
        yield re.sub(r"(^|[;&|]\s*)cd\.\.", r"\1cd ..", code)


def pipe_to_file(code, text, cwd):
    """`grep ERROR log | errors.txt`: a file name where a command should be -> the output written to it."""
    m = re.search(r"\|\s*([\w.-]+\.\w+)\s*(?=$|&&|;|\|\|)", code)
    if m and "command not found" in text:
        yield (code[: m.start()].rstrip() + " > " + m.group(1) + " " + code[m.end() :].lstrip()).rstrip()


# -- habits -----------------------------------------------------------------------------------------------


def windows(code, text, cwd):
    """Windows names (`copy a b`, `type notes.txt`), `src\\main.py` paths; `-version` for `--version`."""
    m = re.match(r"^(\s*)(\w+)\b", code)
    if m and m.group(2).lower() in WINDOWS and "command not found" in text:
        yield m.group(1) + WINDOWS[m.group(2).lower()] + code[m.end(2) :]
    m = re.match(r"^(\s*)type(\s+(\S+))\s*$", code)
    if m and "not found" in text and (cwd / m.group(3)).is_file():
        yield m.group(1) + "cat" + m.group(2)
    for w in re.findall(r"[\w.-]+(?:\\[\w.-]+)+", code):
        if (cwd / w.replace("\\", "/")).exists():
            yield code.replace(w, w.replace("\\", "/"))
    if re.search(r"\s-(version|help)\b", code):
        yield re.sub(r"(\s)-(version|help)\b", r"\1--\2", code)


def bash_not_sh(code, text, cwd):
    m = re.match(r"^(\s*)sh(\s+\S+\.sh\b)", code)
    if m and ("Syntax error" in text or "not found" in text or "Bad substitution" in text):
        yield m.group(1) + "bash" + code[m.end(1) + 2 :]


def crlf(code, text, cwd):
    """A script saved on Windows: `$'\\r': command not found`."""
    if "$'\\r'" in text or "\r" in text:
        script = next((w for w in split(code) if w.endswith(".sh") and (cwd / w).is_file()), "")
        if script:
            yield f"sed -i 's/\\r$//' {shlex.quote(script)} && {code}"


RULES = [cut_zero, awk_F, tar_f_last, tar_order, chmod_mode, line_count, recursive, sed_macos, grep_extended]
RULES += [option_lookalike, find_type, cut_list, one_char_tab, xargs_spaces]
RULES += [
    grep_phrase,
    swapped,
    find_quotes,
    sed_close,
    sed_print,
    sed_paths,
    awk_program,
    c_quotes,
    var_braces,
]
RULES += [assign, brackets, cd_parent, pipe_to_file]
RULES += [look_not_read, windows, bash_not_sh, crlf]

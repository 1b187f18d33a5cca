"""Shell slips whose message says the fix (iclaw/tools/sh_hints.py): each command below fails in the real sandbox,
and one of the `fix` hint's commands prints what the right command prints. Written for this test, not taken from
benchmarks/outside.jsonl or benchmarks/fresh.jsonl."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclaw.tools import hints as H
from iclaw.tools.sandbox import Sandbox

FILES = {
    "crew.csv": "id,name,role\n1,ines,pilot\n2,omar,cook\n",
    "log.txt": "disk full\nall good\ndisk ok\n",
    "site/index.html": "<h1>hi</h1>\n",
    "pages/a.md": "# a\n",
    "run.sh": "#!/bin/bash\narr=(x y)\necho ${#arr[@]}\n",
    "d.json": '{"a": 1}',
    "notes/to do.txt": "TODO call\n",
    "etc.conf": "root=/srv/old\n",
    "sales_7_q.csv": "x\n",
}
CASES = [
    # (typed, what the right command prints)
    ("cut -d, -f0 crew.csv", "id\n1\n2\n"),
    ("awk -f, '{print $2}' crew.csv", "name\nines\nomar\n"),
    ("tar -cfv site.tar site && tar -tf site.tar | sort", "site/\nsite/index.html\n" * 2),
    ("tar -cf site backup.tar && tar -tf backup.tar | sort", "site/\nsite/index.html\n"),
    ("tail 1 log.txt", "disk ok\n"),
    ("head -n log.txt 1", "disk full\n"),
    ("mkdir out/2025/jan && ls out/2025", "jan\n"),
    ("cp site mirror && ls mirror", "index.html\n"),
    ("grep disk full log.txt", "disk full\n"),
    ("grep -c 'full|ok' log.txt", "2\n"),
    ("sed 's/disk/drive' log.txt", "drive full\nall good\ndrive ok\n"),
    ("sed -i '' 's/good/fine/' log.txt && sed -n 2p log.txt", "all fine\n"),
    ("find pages -name *.md -exec cat {}", "# a\n"),
    ("n = 3 && echo $n", "3\n"),
    ("n=4; [ $n -gt 2] && echo big", "big\n"),
    ("for f in pages/*.md do echo $f; done", "pages/a.md\n"),
    ("cd.. && cd - > /dev/null && ls pages", "a.md\n"),
    ("grep disk log.txt | hits.txt && cat hits.txt", "disk full\ndisk ok\n"),
    ("copy log.txt log2.txt && wc -l < log2.txt", "3\n"),
    ("sh run.sh", "2\n"),
    ("cat pages", "a.md\n"),
    ("grep -rn pages '# a'", "pages/a.md:1:# a\n"),
    ("chmod x+ run.sh && ./run.sh", "2\n"),
    ("python3 -m json.tols d.json", '{\n    "a": 1\n}\n'),
    ("wc -1 < log.txt", "3\n"),
    ("find pages -type file", "pages/a.md\n"),
    ("cut -d, 2 crew.csv", "name\nines\nomar\n"),
    ("sort -t ', ' -k2 crew.csv", "1,ines,pilot\nid,name,role\n2,omar,cook\n"),
    ("find notes -name '*.txt' | xargs cat", "TODO call\n"),
    ("sed -n '2' log.txt", "all good\n"),
    ("sed 's//srv/old//srv/new/' etc.conf", "root=/srv/new\n"),
    ("awk -F, {print $3} crew.csv", "role\npilot\ncook\n"),
    ("python3 -c 'print('two words')'", "two words\n"),
    ("w=7; cat sales_$w_q.csv", "x\n"),
]


@pytest.mark.parametrize("typed,want", CASES, ids=[c[0][:28] for c in CASES])
def test_the_fix_the_message_names(tmp_path: Path, typed: str, want: str):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    sb = Sandbox()
    r = sb.run("bash", typed, tmp_path)
    assert r.exit_code != 0 or not r.stdout, r
    hints = H.find_hints("bash", typed, r.stdout, r.stderr, r.exit_code, tmp_path)
    cands = [c for h in hints for c in H.substitute("bash", typed, h)]
    outs = []
    for c in cands:  # each in its own copy of the fixture, as the search runs them
        d = tmp_path.parent / f"{tmp_path.name}-{len(outs)}"
        for name, text in FILES.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text)
        outs.append(sb.run("bash", c, d))
    assert any(o.exit_code == 0 and o.stdout == want for o in outs), (r.stderr, hints)


def test_a_command_hint_replaces_the_command_only():
    """`chmod +x deploy.sh && deploy.sh`: the second word is run as a command, the first is a file."""
    h = H.Hint("command", "deploy.sh", ("./deploy.sh",))
    assert H.substitute("bash", "chmod +x deploy.sh && deploy.sh", h) == ["chmod +x deploy.sh && ./deploy.sh"]
    assert H.substitute("bash", "sudo gti status", H.Hint("command", "gti", ("git",))) == ["sudo git status"]

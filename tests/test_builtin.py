"""The shipped default policy (iclaw/assets/models/iclaw-small): it loads with nothing trained or imported, its
weights are the ones its card names, it fixes everyday mistakes end to end through the real sandbox with no
--model given, and a corrupted copy is one clear error, never a silent fallback."""

import hashlib
import json
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from iclaw.cli import app
from iclaw.errors import IclawError
from iclaw.model import registry
from tests.test_chat_support import iclaw_argv, subprocess_env

NAME = registry.DEFAULT_MODEL
SHIPPED = registry.builtin_dir() / NAME


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    """An empty ICLAW_HOME and no ICLAW_MODEL: what a new install sees."""
    home = tmp_path / "home"
    monkeypatch.setenv("ICLAW_HOME", str(home))
    monkeypatch.delenv("ICLAW_MODEL", raising=False)
    return home


def test_shipped_files_are_small_and_match_the_card():
    files = {p.name: p for p in SHIPPED.iterdir()}
    for f in (
        "model.safetensors",
        "config.json",
        "vocab.json",
        "MODEL_CARD.md",
        "curves.png",
        registry.SHA_FILE,
    ):
        assert f in files, f
    assert sum(p.stat().st_size for p in files.values()) <= 16 * 2**20
    sha = hashlib.sha256(files["model.safetensors"].read_bytes()).hexdigest()
    assert files[registry.SHA_FILE].read_text().split()[0] == sha
    assert f"`{sha}`" in files["MODEL_CARD.md"].read_text()
    assert json.loads(files["config.json"].read_text())["trimmed"] is True


def test_loads_by_name_lists_as_builtin_and_shows_its_card(fresh_home):
    model, meta = registry.load(NAME)
    assert model.vocab is not None and meta["name"] == NAME and meta["ckpt_id"] == registry.BUILTIN_ID
    rows = {r["name"]: r for r in registry.list_models()}
    assert rows[NAME]["builtin"] is True
    r = CliRunner().invoke(app, ["models", "list", "--json"])
    assert r.exit_code == 0 and {"name": NAME, "builtin": True}.items() <= json.loads(r.output)[0].items()
    r = CliRunner().invoke(app, ["models", "list"])
    assert r.exit_code == 0 and NAME in r.output and "(built-in)" in r.output, r.output
    r = CliRunner().invoke(app, ["models", "info", NAME])
    assert r.exit_code == 0 and "Held-out pass@1" in r.output and "sha256" in r.output, r.output


def test_a_users_entry_of_the_same_name_wins(fresh_home):
    from iclaw.model.gpt import GPT, preset

    registry.publish(NAME, GPT(preset("tiny", n_layer=1)))
    assert registry.resolve(NAME).is_relative_to(fresh_home)
    assert [r["builtin"] for r in registry.list_models() if r["name"] == NAME] == [False]


# (broken command, what the fixed command must print) in a directory holding FILES -- cases the shipped
# policy fixes, greedy (see its card for how often it fixes what)
FILES = {"notes.txt": "milk\neggs\n", "fruits.txt": "pear\napple\n"}
CASES = [
    ('cat "*.txt"', "pear\napple\nmilk\neggs"),
    ("cta notes.txt", "milk\neggs"),
    ("cat fruits.txt | sotr", "apple\npear"),
    ("sotr fruits.txt", "apple\npear"),
    ("gerp milk notes.txt", "milk"),
]


@pytest.mark.parametrize("broken, printed", CASES)
def test_fixes_everyday_mistakes_with_no_model_given(fresh_home, tmp_path, broken, printed):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in FILES.items():
        (ws / name).write_text(text)
    p = subprocess.run(
        iclaw_argv("fix", broken, "--yes", "--json", "--db", str(tmp_path / "t.db")),
        env={k: v for k, v in subprocess_env(fresh_home).items() if k != "ICLAW_MODEL"},
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["fixed"] and out["changed"], (p.stdout, p.stderr)
    from iclaw.store import Store

    with Store(tmp_path / "t.db") as store:
        ep = store.episode(out["episode"])
    assert ep["model"] == NAME and ep["checkpoint"] == registry.BUILTIN_ID
    last = ep["tool_calls"][-1]
    assert last["exit_code"] == 0 and last["stdout"].strip() == printed


def test_corrupted_weights_are_one_clear_error(fresh_home, tmp_path, monkeypatch):
    copy = tmp_path / "models" / NAME
    shutil.copytree(SHIPPED, copy)
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-100:-90] = bytes(b ^ 0xFF for b in data[-100:-90])  # flip bytes inside the weights
    (copy / "model.safetensors").write_bytes(bytes(data))
    monkeypatch.setattr(registry, "builtin_dir", lambda: tmp_path / "models")
    with pytest.raises(IclawError, match=r"model\.safetensors: sha256 .* does not match the model card"):
        registry.resolve(NAME)
    r = CliRunner().invoke(app, ["eval", "--n", "1"])  # no --model: the shipped policy, checked first
    assert isinstance(r.exception, IclawError) and "does not match the model card" in str(r.exception)


def test_train_grpo_on_your_own_failures_hot_reloads_the_running_chat(fresh_home, tmp_path):
    """The shipped policy is the starting point: a chat where the user fixed a command by hand, then
    `iclaw train grpo --model iclaw-small --from-db --out iclaw-small` in another process; the running chat
    reloads the user's new iclaw-small (which now wins over the built-in) before its next turn."""
    from tests.test_chat_support import Pty

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("milk\neggs\n")
    db = tmp_path / "t.db"
    env = {k: v for k, v in subprocess_env(fresh_home).items() if k != "ICLAW_MODEL"}
    term = Pty(iclaw_argv("chat", "--yes", "--max-turns", "1", "--db", str(db)), env, ws)
    try:
        term.expect(r"iclaw>")
        term.send("cta notes.txt\r")
        first = term.expect(rf"episode 1 · {NAME}@{registry.BUILTIN_ID}")
        term.expect(r"iclaw>", start=first.end())
        term.send("cat notes.txt\r")  # the user's own fix: a task for --from-db
        second = term.expect(r"episode 2", start=first.end())
        term.expect(r"iclaw>", start=second.end())
        train = subprocess.run(
            iclaw_argv(
                "train", "grpo", "--model", NAME, "--from-db", "--db", str(db), "--out", NAME,
                "--steps", "1", "--group-size", "2", "--tasks-per-step", "1", "--set", "max_new_tokens=32",
            ),
            env=env, cwd=ws, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert train.returncode == 0, train.stdout + train.stderr
        new = registry.latest_id(NAME)
        assert new and new != registry.BUILTIN_ID
        term.send("cta notes.txt\r")
        term.expect(rf"reloaded {NAME} → {new}", start=second.end())
        third = term.expect(rf"episode \d+ · {NAME}@{new}", start=second.end())  # training logged its own
        term.expect(r"iclaw>", start=third.end())
        term.send("\x04")
        term.expect(r"bye")
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()

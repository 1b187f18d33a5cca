"""The trimmed vocabulary (iclaw/model/vocab.py): lossless text, sampled ids inside the kept set, the same
log-probs through the sampler and the trainer, checkpoints that carry it, and clear errors when it is broken."""

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import iclaw
import iclaw.model.vocab as vocab_module
from iclaw.cli import app
from iclaw.errors import IclawError
from iclaw.model.checkpoint import load_checkpoint, save_checkpoint
from iclaw.model.gpt import GPT, GPTConfig
from iclaw.model.sampler import generate
from iclaw.model.tokenizer import DONE, END, USER, get_tokenizer
from iclaw.model.vocab import MARKERS, Vocab, byte_ids
from iclaw.train.rollout import logprobs_and_entropy
from tests.helpers import SMALL

CORPUS = "$ cta notes.txt\nbash: cta: command not found\n[exit 127]\ncat notes.txt\nmilk\neggs\n"


def trimmed_model(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    vocab = Vocab.build([get_tokenizer().encode(CORPUS)])
    return GPT(GPTConfig(**SMALL), vocab).eval()


def random_text(rng: random.Random, n: int) -> str:
    pools = [range(0x20, 0x7F), range(0xA0, 0x250), range(0x3040, 0x30FF), range(0x4E00, 0x4F00)]
    pools.append(range(0x1F600, 0x1F650))  # emoji: four bytes each
    return "".join(chr(rng.choice(rng.choice(pools))) for _ in range(n)) + rng.choice(["", "\n", "\t x"])


def test_build_keeps_corpus_bytes_and_markers_padded_to_64():
    tok = get_tokenizer()
    ids = tok.encode(CORPUS)
    v = Vocab.build([ids])
    assert len(v) % 64 == 0 and len(v) < 1000
    assert set(ids) | set(byte_ids()) | set(MARKERS) <= v.kept
    assert len(set(byte_ids())) == 256 and tok.decode(list(byte_ids()[65:68])) == "ABC"


def test_fit_is_lossless_and_stays_inside_the_kept_set():
    tok, rng = get_tokenizer(), random.Random(0)
    v = Vocab.build([tok.encode(CORPUS)])
    outside = 0
    for _ in range(200):
        text = random_text(rng, rng.randint(1, 40))
        ids = tok.encode(text)
        outside += sum(i not in v.kept for i in ids)
        fitted = v.fit(ids)
        assert all(i in v.kept for i in fitted)
        assert tok.decode(fitted) == tok.decode(ids) == text
    assert outside > 100  # the texts really used tokens the vocabulary does not have
    ids = tok.encode("cta shopping.txt")  # "shopping" is not in the corpus
    fitted, mask = v.fit(ids, [1] * len(ids))
    assert len(fitted) > len(ids) and mask == [1] * len(fitted) and tok.decode(fitted) == "cta shopping.txt"
    known = [USER, *tok.encode(CORPUS)[:5], END]
    assert v.fit(known) == known  # ids the vocabulary has, and markers, are left alone


def test_pretraining_vocab_keeps_the_task_vocabulary_and_the_corpus_frequent_ids():
    tok, rng = get_tokenizer(), random.Random(1)
    shipped = Path(iclaw.__file__).parent / "assets/models/iclaw-small"
    task = Vocab.load(shipped, json.loads((shipped / "config.json").read_text())["vocab_size"])
    text = Path(vocab_module.__file__).read_text() + "".join(random_text(rng, 30) for _ in range(100))
    ids = np.asarray(tok.encode(text), dtype=np.uint16)
    counts = np.bincount(ids, minlength=50304)
    v = Vocab.frequent(counts, task_size := len(task) + 128, base=task)
    assert len(v) == task_size and task.kept <= v.kept  # every task word stays one row
    new = [i for i in v.ids if i not in task.kept]  # the 128 added: the corpus's most frequent outside it
    unused = [i for i in range(50257) if counts[i] and i not in task.kept]
    top = sorted(unused, key=lambda i: (-counts[i], i))[:128]
    assert sorted(new) == sorted(top) and counts[top[0]] > 1
    with pytest.raises(IclawError, match="--vocab 1000: the task vocabulary"):
        Vocab.frequent(counts, 1000, base=task)
    # a token file fitted at once: the same ids as fit() on the list, and the same text
    fitted = v.fit_array(ids, chunk=1000)
    assert fitted.dtype == np.uint16 and fitted.tolist() == v.fit(ids.tolist())
    assert len(fitted) > len(ids) and tok.decode(fitted.tolist()) == text


def test_sampled_ids_are_kept_and_sampler_logprobs_match_the_scorer():
    model, tok = trimmed_model(), get_tokenizer()
    prompts = [model.fit([USER, *tok.encode(t), END]) for t in ("cta notes.txt", "日本語 zebra", "x")]
    s = generate(model, prompts, 24, temperature=1.0, seed=3, stop_tokens=(END, DONE))
    assert all(i in model.vocab.kept for row in s.tokens for i in row)
    for p, toks, lps in zip(prompts, s.tokens, s.logprobs):
        seq = torch.tensor([p + toks])
        via_trainer, _ = logprobs_and_entropy(model, seq)
        assert torch.allclose(via_trainer[0, len(p) - 1 :], torch.tensor(lps), atol=1e-5)


def test_an_unfitted_id_is_a_clear_error():
    model = trimmed_model()
    unknown = next(i for i in range(50000) if i not in model.vocab.kept)
    with pytest.raises(IclawError, match="not in the model's trimmed vocabulary"):
        model(torch.tensor([[unknown]]))


def test_trimmed_checkpoint_round_trips_and_models_info_shows_it(tmp_path, monkeypatch):
    model = trimmed_model()
    path = save_checkpoint(model, tmp_path / "ck")
    assert json.loads((path / "config.json").read_text())["trimmed"] is True
    back, _ = load_checkpoint(path)
    assert back.vocab == model.vocab and back.config.vocab_size == len(model.vocab)
    x = torch.tensor([model.fit(get_tokenizer().encode(CORPUS))])
    assert torch.equal(back(x)[0], model(x)[0])

    monkeypatch.setenv("ICLAW_HOME", str(tmp_path / "home"))
    r = CliRunner().invoke(app, ["models", "import", str(path), "--name", "trim"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["models", "info", "trim"])
    assert r.exit_code == 0, r.output
    assert f"trimmed, {len(model.vocab)} GPT-2 ids" in r.output


@pytest.mark.parametrize(
    "damage, message",
    [
        ("delete", "vocab.json: missing"),
        ("garbage", "not a vocabulary file"),
        ("short", "ids, but the model has"),
        ("no-bytes", "byte tokens and control markers must be kept"),
    ],
)
def test_missing_or_inconsistent_vocab_file_is_one_clear_error(tmp_path, damage, message):
    path = save_checkpoint(trimmed_model(), tmp_path / "ck")
    f = path / "vocab.json"
    ids = json.loads(f.read_text())["gpt2_ids"]
    if damage == "delete":
        f.unlink()
    elif damage == "garbage":
        f.write_text("{not json")
    elif damage == "short":
        f.write_text(json.dumps({"gpt2_ids": ids[:256] + ids[-8:]}))  # bytes and markers only
    else:
        f.write_text(json.dumps({"gpt2_ids": [i for i in ids if i not in byte_ids()]}))
    with pytest.raises(IclawError, match=message):
        load_checkpoint(path)


def test_full_vocabulary_models_are_unchanged():
    torch.manual_seed(0)
    model = GPT(GPTConfig(**SMALL)).eval()
    assert model.vocab is None and model.config.vocab_size == 50304 and not model.config.trimmed
    ids = get_tokenizer().encode(CORPUS)
    assert model.fit(ids) == ids
    x = torch.tensor([ids])
    assert torch.equal(model.rows(x), x) and torch.equal(model.ids(x), x)


def test_spelled_practice_keeps_the_text_and_stretches_the_mask():
    """SFT's spell practice: chosen word ids become their bytes everywhere in a demonstration, the text and
    the policy/environment split stay the same, and the result stays inside the vocabulary."""
    from iclaw.train.sft import spelled

    tok = get_tokenizer()
    v = Vocab.build([tok.encode(CORPUS)])
    prompt, fix = tok.encode("$ cta notes.txt\n"), tok.encode("cat notes.txt")
    ids, mask = [USER, *prompt, END, *fix, DONE], [0] * (len(prompt) + 2) + [1] * (len(fix) + 1)
    words = set(v.words())
    assert not words & (set(byte_ids()) | set(MARKERS)) and set(prompt) & words
    out, m = spelled(ids, mask, words, 1.0, random.Random(0), block=512)  # every word spelled
    assert tok.decode(out) == tok.decode(ids) and all(i in v.kept for i in out)
    assert not set(out) & words and len(out) > len(ids)
    policy_text = tok.decode([i for i, k in zip(out, m) if k])
    assert policy_text == tok.decode(
        [i for i, k in zip(ids, mask) if k]
    )  # the fix, spelled, is still the target
    assert spelled(ids, mask, words, 0.0, random.Random(0), block=512) == (ids, mask)
    assert len(spelled(ids, mask, words, 1.0, random.Random(0), block=8)[0]) == 8  # cut to the block


def test_spelling_practice_skips_demonstrations_that_look_first():
    """Only a demonstration with one tool call is spelled: a look-first fix copies its name from the listing."""
    from iclaw.agent.protocol import action_tokens, observation_tokens, request_tokens
    from iclaw.train.sft import one_action

    req = request_tokens("$ cat ntoes.txt\ncat: ntoes.txt: No such file or directory\n[exit 1]")
    fix = (
        action_tokens("bash", "cat notes.txt")
        + observation_tokens("milk\n[exit 0]")
        + action_tokens("done", None)
    )
    look = action_tokens("bash", "ls") + observation_tokens("notes.txt\n[exit 0]")
    assert one_action(req + fix)
    assert not one_action(req + look + fix)

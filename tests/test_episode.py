"""The protocol and the episode loop, with real tools in the real sandbox, a real verifier and a real store.

A scripted policy stands in for the model where a test needs the policy to say something specific (the
sandbox, verifier and store are the real ones); an untrained tiny GPT covers "the model says nonsense".
"""

import torch

from iclaw.agent.episode import EpisodeConfig, Workdirs, episode_record, judge, run_episodes, task_episodes
from iclaw.agent.policy import Policy
from iclaw.agent.protocol import action_tokens, parse_action
from iclaw.model.gpt import GPT, preset
from iclaw.model.sampler import Samples
from iclaw.model.tokenizer import BASH, DONE, END, OBS, PYTHON, get_tokenizer
from iclaw.store import Store
from iclaw.tasks import Task, Verifier
from iclaw.tools.sandbox import Limits, Sandbox
from iclaw.train.rollout import collate_episodes, logprobs_and_entropy


class ScriptedPolicy(Policy):
    """Says the given actions in order, one per turn, for every episode."""

    def __init__(self, actions: list[tuple[str, str | None]]):
        torch.manual_seed(0)
        super().__init__(
            GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=512)),
            name="scripted",
            ckpt_id="s1",
            device="cpu",
            fast_sampling=False,
        )
        self.actions = actions
        self.turn = 0

    def sample(self, prompts, max_new_tokens, **kw):
        kind, code = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        toks = action_tokens(kind, code)
        return Samples(
            [list(toks) for _ in prompts], [[-0.5] * len(toks) for _ in prompts], [True] * len(prompts)
        )


WRONG_FILE = Task(
    id="wf-1",
    kind="bash",
    family="wrong-file",
    broken="cat notes.txt",
    files={"notes_7b.txt": "hello\n", "other.csv": "x\n"},
    reference="cat notes_7b.txt",
    error="cat: notes.txt: No such file or directory",
    broken_exit=1,
    multi_turn=True,
)


def _sandbox():
    return Sandbox(Limits(timeout_s=5))


def test_parse_action_never_raises():
    tok = get_tokenizer()
    assert parse_action([DONE]).kind == "done"
    a = parse_action([BASH, *tok.encode("ls -la"), END])
    assert (a.kind, a.code) == ("bash", "ls -la")
    assert parse_action([PYTHON, *tok.encode("print(1)"), END]).kind == "python"
    for bad in (
        [],
        [BASH],
        [BASH, END],
        [BASH, *tok.encode("ls")],
        tok.encode("hello"),
        [BASH, OBS, END],
        [50300, 1, 2],
        [OBS],
    ):
        a = parse_action(bad)
        assert a.kind == "invalid" and a.error


def test_multi_turn_episode_ls_then_fix_passes_and_masks_only_policy_tokens(tmp_path):
    sb = _sandbox()
    pol = ScriptedPolicy([("bash", "ls"), ("bash", "cat notes_7b.txt"), ("done", None)])
    with Workdirs() as wd:
        eps = task_episodes([WRONG_FILE], 1, wd)
        run_episodes(pol, eps, sb, EpisodeConfig(max_turns=3))
    judge(eps, Verifier(sb))
    e = eps[0]
    assert e.status == "submitted" and e.final == "cat notes_7b.txt" and e.passed and e.reward == 1.0
    assert [c["input"] for c in e.tool_calls] == ["ls", "cat notes_7b.txt"]
    assert "notes_7b.txt" in e.tool_calls[0]["stdout"] and e.tool_calls[1]["exit_code"] == 0
    # the mask marks exactly the policy's tokens: the three actions, nothing from prompt or observations
    policy_len = sum(len(action_tokens(k, c)) for k, c in pol.actions)
    assert sum(e.mask) == policy_len == e.policy_tokens
    assert len(e.tokens) == len(e.mask) == len(e.logprobs)
    for t, m in zip(e.tokens, e.mask):
        if t == OBS:
            assert m == 0
    b = collate_episodes(eps)
    assert b.mask.sum().item() == policy_len
    pos = b.mask[0].nonzero().flatten() + 1  # mask[t] talks about token t+1
    assert [e.tokens[p] for p in pos.tolist()] == [t for t, m in zip(e.tokens, e.mask) if m]
    # and the store gets it, with turns to re-tokenize from
    with Store(tmp_path / "t.db") as store:
        eid = store.log_episode(**episode_record(e, source="eval", model="scripted", checkpoint="s1"))
        row = store.episode(eid)
    assert (
        row["status"] == "passed"
        and len(row["tool_calls"]) == 2
        and row["final_command"] == "cat notes_7b.txt"
    )


def test_guessing_without_looking_fails_and_the_workdir_cannot_fool_the_verifier():
    sb = _sandbox()
    # the policy creates the file the broken command wanted, then runs the broken command: it "works" in
    # its own directory, but the verifier re-runs only the final fix in a fresh fixture
    pol = ScriptedPolicy([("bash", "echo hello > notes.txt"), ("bash", "cat notes.txt"), ("done", None)])
    with Workdirs() as wd:
        eps = task_episodes([WRONG_FILE], 2, wd)
        run_episodes(pol, eps, sb, EpisodeConfig(max_turns=3))
    judge(eps, Verifier(sb))
    for e in eps:
        assert e.tool_calls[-1]["exit_code"] == 0
        assert e.passed is False and e.reward == 0.0


def test_untrained_model_episodes_never_crash_and_end():
    sb = _sandbox()
    torch.manual_seed(0)
    pol = Policy(GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=256)), device="cpu")
    with Workdirs() as wd:
        eps = task_episodes([WRONG_FILE], 4, wd)
        run_episodes(
            pol,
            eps,
            sb,
            EpisodeConfig(max_turns=3, max_new_tokens=16),
            generator=torch.Generator().manual_seed(0),
        )
    judge(eps, Verifier(sb))
    for e in eps:
        assert e.done and e.status in ("submitted", "max_turns", "truncated", "no_fix")
        assert e.reward == 0.0 and len(e.tokens) <= 256
        assert e.n_invalid >= 1  # random tokens are not tool calls; each became an observation
        assert any(t["role"] == "obs" and "invalid" in t["text"] for t in e.turns)


def test_an_observation_that_overflows_the_context_is_cut_to_fit():
    # the sampler keeps the policy's tokens within the block, but the observation after them can overflow
    # it; the trainers score every sequence, so one longer than the block must never leave the episode
    sb = _sandbox()
    with Workdirs() as wd:
        prompt = len(task_episodes([WRONG_FILE], 1, wd)[0].tokens)
        block = prompt + 20  # room for a 16-token action, not for the observation after it
        torch.manual_seed(0)
        model = GPT(preset("tiny", n_layer=1, n_head=2, n_embd=32, block_size=block))
        eps = task_episodes([WRONG_FILE], 4, wd)
        run_episodes(
            Policy(model, device="cpu"),
            eps,
            sb,
            EpisodeConfig(max_turns=3, max_new_tokens=16),
            generator=torch.Generator().manual_seed(0),
        )
    assert all(len(e.tokens) == len(e.mask) == len(e.logprobs) <= block for e in eps)
    assert any(e.status == "truncated" for e in eps)
    batch = collate_episodes(eps)
    logp, _ = logprobs_and_entropy(model, batch.idx, batch.mask)  # raised "exceeds the block size" before
    assert torch.isfinite(logp).all()


def test_python_task_fix_uses_last_python_call():
    sb = _sandbox()
    task = Task(
        id="py-1",
        kind="python",
        family="py-syntax",
        broken="print('hi'",
        reference="print('hi')",
        error="SyntaxError: '(' was never closed",
        broken_exit=1,
    )
    pol = ScriptedPolicy([("python", "print('hi')"), ("bash", "ls"), ("done", None)])
    with Workdirs() as wd:
        eps = task_episodes([task], 1, wd)
        run_episodes(pol, eps, sb, EpisodeConfig(max_turns=3))
    judge(eps, Verifier(sb))
    assert eps[0].final == "print('hi')" and eps[0].passed


class RecordingPolicy(ScriptedPolicy):
    """A scripted policy that notes the temperature it is asked to sample at, turn by turn."""

    def __init__(self, actions):
        super().__init__(actions)
        self.temperatures = []

    def sample(self, prompts, max_new_tokens, **kw):
        self.temperatures.append(kw["temperature"])
        return super().sample(prompts, max_new_tokens, **kw)


def _declining_once(flag: bool) -> tuple[list[float], object]:
    pol = RecordingPolicy([("bash", "cat notes.txt"), ("bash", "ls"), ("bash", "cat notes_7b.txt")])
    decisions = iter([False, True, True])  # the user declines the first proposal, approves the rest
    cfg = EpisodeConfig(max_turns=3, temperature=0.7, greedy_until_declined=flag)
    with Workdirs() as wd:
        eps = task_episodes([WRONG_FILE], 1, wd)
        run_episodes(
            pol, eps, _sandbox(), cfg, approve=lambda ep, action: action if next(decisions) else None
        )
    return pol.temperatures, eps[0]


def test_greedy_until_the_user_declines():
    """Chat's proposals: the likeliest one first; after a decline the policy samples, so the next can differ."""
    temps, e = _declining_once(True)
    assert temps == [0.0, 0.7, 0.7]
    assert e.n_declined == 1 and [c["input"] for c in e.tool_calls] == ["ls", "cat notes_7b.txt"]
    temps, e = _declining_once(False)
    assert temps == [0.7, 0.7, 0.7] and e.n_declined == 1

"""Does a policy read the listing it asked for? p(the right name | its own `ls`) on the look-first families.

    python benchmarks/probe_listing_copy.py --tasks runs/demo/train.jsonl --model demo-sft --model demo

For every wrong-file / wrong-ext / py-wrong-file / py-wrong-ext task in --tasks, the episode is written as the
policy would play it when it looks first: the request, `ls`, the listing (really run in the sandbox), and then
the probability of two fixes as the next action: the reference (the name from the listing) and the broken
command again (the name from the request). GRPO can only reinforce the first if sampling ever writes it: a mean
p(reference) of 0.001 gives a group of 8 a success about once in a hundred groups. Prints one JSON line per
model and family.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from iclaw.agent.episode import task_request
from iclaw.agent.protocol import action_tokens, request_tokens
from iclaw.model import registry
from iclaw.tasks import load_tasks
from iclaw.train.common import safe_sandbox
from iclaw.train.rollout import logprobs_and_entropy
from iclaw.train.sft import LOOK, _observe_in_fixtures

FAMILIES = ("wrong-file", "wrong-ext", "py-wrong-file", "py-wrong-ext")


@torch.no_grad()
def action_logprob(model, context: list[int], kind: str, code: str) -> float:
    """log p(the action `code` of `kind` | context) under `model` (ids through the model's vocabulary)."""
    act = action_tokens(kind, code)
    ids, mask = model.fit(context + act, [0] * len(context) + [1] * len(act))
    m = torch.tensor([mask[1:]], dtype=torch.float)  # mask[t] marks target t + 1
    lp, _ = logprobs_and_entropy(model, torch.tensor([ids]), m)
    return float((lp * m).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, required=True, help="a task file (JSONL)")
    ap.add_argument(
        "--model", action="append", required=True, help="registered name or checkpoint (repeatable)"
    )
    args = ap.parse_args()
    tasks = [t for t in load_tasks(args.tasks) if t.family in FAMILIES]
    listings = _observe_in_fixtures([(t, "bash", LOOK) for t in tasks], safe_sandbox(False), 300)
    for name in args.model:
        model, _ = registry.load(name)
        model.eval()
        by_family: dict[str, list[tuple[float, float]]] = {}
        for t, listing in zip(tasks, listings):
            context = request_tokens(task_request(t)) + action_tokens("bash", LOOK) + listing
            p_ref = math.exp(action_logprob(model, context, t.kind, t.reference))
            p_again = math.exp(action_logprob(model, context, t.kind, t.broken))
            by_family.setdefault(t.family, []).append((p_ref, p_again))
        for fam, ps in sorted(by_family.items()):
            n = len(ps)
            row = {
                "model": name,
                "family": fam,
                "tasks": n,
                "p_reference": round(sum(a for a, _ in ps) / n, 4),
                "p_request_name_again": round(sum(b for _, b in ps) / n, 4),
                "share_p_reference_over_0.05": round(sum(a > 0.05 for a, _ in ps) / n, 2),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

"""Held-out evaluation: run the agent on tasks (multi-turn, tools in the sandbox), let the verifier judge only
the final fix in a fresh fixture, and report pass@1 and pass@k overall and per family.

pass@k uses the unbiased estimator of Chen et al. (2021): with n samples of which c pass,
pass@k = 1 - C(n-c, k) / C(n, k).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from math import comb

import torch

from iclaw.agent.episode import EpisodeConfig, episode_record, play


def pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass
class EvalReport:
    tasks: int
    k: int
    samples: int
    pass_at_1: float
    pass_at_k: float
    by_family: dict  # family -> {"tasks", "pass_at_1", "pass_at_k"}
    per_task: dict = field(
        default_factory=dict
    )  # task id -> (family, pass@1): what paired intervals resample

    def to_dict(self) -> dict:
        return {
            "tasks": self.tasks,
            "pass_at_1": self.pass_at_1,
            "pass_at_k": self.pass_at_k,
            "k": self.k,
            "samples": self.samples,
            "by_family": self.by_family,
            "per_task": self.per_task,
        }


def paired_bootstrap(
    base: EvalReport, new: EvalReport, families=None, n: int = 2000, seed: int = 0
) -> dict[str, float]:
    """new − base in pass@1 points over the tasks both ran (optionally only `families`), with a 95 % interval
    from resampling those tasks with replacement (the same draw for both sides: a paired bootstrap)."""
    ids = [
        i
        for i in base.per_task
        if i in new.per_task and (families is None or base.per_task[i][0] in families)
    ]
    if not ids:
        return {"delta": 0.0, "lo": 0.0, "hi": 0.0, "tasks": 0}
    d = torch.tensor([new.per_task[i][1] - base.per_task[i][1] for i in ids], dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    means = d[torch.randint(len(ids), (n, len(ids)), generator=g)].mean(dim=1)
    lo, hi = torch.quantile(means, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return {"delta": 100 * d.mean().item(), "lo": 100 * lo, "hi": 100 * hi, "tasks": len(ids)}


def summarize(per_task: list[tuple[object, int, int]], k: int) -> EvalReport:
    """per_task: (task, n, c) triples."""
    fam: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for t, n, c in per_task:
        fam[t.family].append((n, c))
    by_family = {}
    for f, rows in sorted(fam.items()):
        by_family[f] = {
            "tasks": len(rows),
            "pass_at_1": sum(c / n for n, c in rows) / len(rows),
            "pass_at_k": sum(pass_at_k(n, c, k) for n, c in rows) / len(rows),
        }
    N = max(1, len(per_task))
    return EvalReport(
        tasks=len(per_task),
        k=k,
        samples=per_task[0][1] if per_task else 0,
        pass_at_1=sum(c / n for _, n, c in per_task) / N,
        pass_at_k=sum(pass_at_k(n, c, k) for _, n, c in per_task) / N,
        by_family=by_family,
        per_task={t.id: (t.family, c / n) for t, n, c in per_task},
    )


def evaluate(
    policy,
    tasks: list,
    *,
    sandbox,
    verifier,
    cfg: EpisodeConfig,
    k: int = 1,
    samples: int | None = None,
    batch_tasks: int = 64,
    seed: int = 0,
    store=None,
    progress=None,
) -> EvalReport:
    """Run `samples` (default k) episodes per task in batches; log every episode (source 'eval')."""
    n = samples or k
    gen = torch.Generator(device=policy.device).manual_seed(seed)
    per_task = []
    for i in range(0, len(tasks), batch_tasks):
        chunk = tasks[i : i + batch_tasks]
        eps = play(policy, chunk, n, sandbox, verifier, cfg, generator=gen)
        if store is not None:
            store.log_episodes(
                [episode_record(e, source="eval", model=policy.name, checkpoint=policy.ckpt_id) for e in eps]
            )
        for j, t in enumerate(chunk):
            group = eps[j * n : (j + 1) * n]
            per_task.append((t, n, sum(1 for e in group if e.passed)))
        if progress is not None:
            progress(len(chunk))
    return summarize(per_task, k)


def evaluate_fixed(tasks: list, candidates: list[str | None], *, verifier, progress=None) -> EvalReport:
    """Verifier sanity checks without a model: `--oracle` (each task's reference) or `--broken` (its broken)."""
    per_task = []
    pairs = [(t, c) for t, c in zip(tasks, candidates) if c is not None]
    verdicts = iter(verifier.verify_many(pairs))
    for t, c in zip(tasks, candidates):
        ok = next(verdicts).passed if c is not None else False
        per_task.append((t, 1, int(ok)))
    if progress is not None:
        progress(len(tasks))
    return summarize(per_task, 1)

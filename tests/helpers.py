"""Assertions shared by several test modules."""


def sampled_tokens_by_step(store, run_id: str) -> list[int]:
    """The run's logged `sampled_tokens`, checked against the store: monotone, and after step s exactly the
    policy tokens of the episodes rolled out at steps < s."""
    per_step: dict[int, int] = {}
    for e in store.episodes(run_id=run_id, limit=0):
        per_step[e["step"]] = per_step.get(e["step"], 0) + e["meta"]["policy_tokens"]
    rows = store.metrics(run_id)
    counts = [r["sampled_tokens"] for r in rows]
    assert counts == [sum(n for s, n in per_step.items() if s < r["step"]) for r in rows]
    assert counts[0] > 0 and all(b > a for a, b in zip(counts, counts[1:]))
    return counts

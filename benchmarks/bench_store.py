"""Insert rate of the trajectory store (target: >= 2,000 tool calls/s).

    python benchmarks/bench_store.py [--episodes 500] [--calls 8] [--batch 8]

Writes GRPO-shaped data: episodes of `--calls` tool calls (~300 bytes of output each) and 4 turns,
first one transaction per episode (log_episode), then `--batch` episodes per transaction
(log_episodes, one GRPO step), into a fresh database file with WAL and FTS triggers on."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from iclaw.store import Store


def episode(i: int, calls: int) -> dict:
    return {
        "source": "train",
        "task_id": f"task-{i % 50}",
        "model": "124m",
        "run_id": "bench",
        "step": i // 8,
        "reward": float(i % 2),
        "status": "passed" if i % 2 else "failed",
        "final_command": f"sort -u names{i}.txt",
        "meta": {"group": i // 8},
        "turns": [
            {"turn": t, "role": r, "text": f"turn {t} {r} " + "x" * 120}
            for t in range(2)
            for r in ("assistant", "obs")
        ],
        "tool_calls": [
            {
                "turn": c,
                "tool": "bash",
                "input": f"grep -n pattern{c} file{i}.txt | sort | uniq -c",
                "stdout": f"{c}: line of output for episode {i}\n" * 8,
                "stderr": "" if c % 3 else "grep: warning: something\n",
                "exit_code": c % 2,
                "duration_ms": 3.25,
                "timed_out": False,
                "signal": None,
                "cwd": "/tmp/task",
            }
            for c in range(calls)
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=500)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    eps = [episode(i, args.calls) for i in range(args.episodes)]
    total_calls = args.episodes * args.calls
    with tempfile.TemporaryDirectory() as d:
        with Store(Path(d) / "bench.db") as store:
            t0 = time.perf_counter()
            for e in eps:
                store.log_episode(**e)
            one = time.perf_counter() - t0
            t0 = time.perf_counter()
            for i in range(0, len(eps), args.batch):
                store.log_episodes(eps[i : i + args.batch])
            batched = time.perf_counter() - t0
            t0 = time.perf_counter()
            hits = store.episodes(grep="pattern3", limit=0)
            search = time.perf_counter() - t0
            assert store.count("tool_calls") == 2 * total_calls
        print(f"{args.episodes} episodes x {args.calls} tool calls, WAL + FTS triggers")
        print(
            f"log_episode  (1 transaction/episode):      {total_calls / one:>9,.0f} tool calls/s"
            f"  ({args.episodes / one:,.0f} episodes/s)"
        )
        print(
            f"log_episodes ({args.batch} episodes/transaction):    {total_calls / batched:>9,.0f} tool calls/s"
            f"  ({args.episodes / batched:,.0f} episodes/s)"
        )
        print(f"--grep over {2 * total_calls:,} tool calls: {search * 1000:.1f} ms ({len(hits)} episodes)")


if __name__ == "__main__":
    main()

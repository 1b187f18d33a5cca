"""A user's day, simulated honestly: a stream of everyday mistakes put to `iclaw fix`, each in its own folder, and
the user's own correction typed through iclaw after a fix that failed; all of it logged to one store.

    python benchmarks/user_day.py --out runs/day                      # 200 mistakes of five kinds
    iclaw train grpo --model iclaw-small --from-db --db runs/day/trajectories.db --beta 0.04 --minutes 10 --out day
    iclaw eval --model day --split heldout --n 150 -f case-name -f ...   # new mistakes of the same kinds

The mistakes come from the task generators' train split (made-up names each time), of kinds the shipped policy
mostly fails (docs/LOG.md); nothing else reaches the trainer: it mines the store as a user's would be mined.
Per mistake: `Fixer.run` as `iclaw fix --yes` runs it (the search, its proposal run in the folder); if the
folder's command still fails, the user types the task's reference through `Fixer.run` in the same folder (a
command that works: an episode with nothing to fix, which `tasks mine` pairs with the failure by hand); every
RATE_EVERY-th fixed episode is rated good, as `iclaw replay N --rate good` would.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from iclaw.agent.episode import EpisodeConfig
from iclaw.agent.fix import Fixer
from iclaw.agent.terminal import load_policy
from iclaw.store import Store
from iclaw.tasks.generate import generate
from iclaw.tasks.task import write_fixture
from iclaw.tools.sandbox import Sandbox

KINDS = ["case-name", "name-case", "flag-typo", "run-script", "cd-wrong-dir"]
RATE_EVERY = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/day"), help="folders and trajectories.db go here")
    ap.add_argument("--n", type=int, default=200, help="mistakes in the day")
    ap.add_argument("-f", "--family", action="append", help=f"kinds of mistake (default: {' '.join(KINDS)})")
    ap.add_argument("--model", default="iclaw-small")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if (args.out / "trajectories.db").exists():
        sys.exit(
            f"error: {args.out / 'trajectories.db'} exists: a day is simulated once (pick another --out)"
        )
    tasks = generate(args.n, "train", seed=args.seed, families=args.family or KINDS)
    policy, sandbox = load_policy(args.model), Sandbox(workspace=True)
    cfg = EpisodeConfig(max_turns=3, temperature=0.7)
    counts = {"fixed by iclaw": 0, "corrected by the user": 0, "rated good": 0}
    start = time.time()
    with Store(args.out / "trajectories.db") as store:
        for i, t in enumerate(tasks):
            d = args.out / "folders" / f"{i:04d}"
            d.mkdir(parents=True)
            write_fixture(t.files or {}, d)
            res = Fixer(policy, sandbox, store, cfg, d, source="fix", model_name=args.model).run(
                t.kind, t.broken
            )
            if res.fixed:
                counts["fixed by iclaw"] += 1
                if counts["fixed by iclaw"] % RATE_EVERY == 0:
                    store.rate(res.episode_id, "good")
                    counts["rated good"] += 1
            elif t.reference:
                Fixer(policy, sandbox, store, cfg, d, source="fix", model_name=args.model).run(
                    t.kind, t.reference
                )
                counts["corrected by the user"] += 1
            print(f"\r  {i + 1}/{len(tasks)} {counts}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    summary = {
        "mistakes": len(tasks),
        "families": args.family or KINDS,
        **counts,
        "minutes": (time.time() - start) / 60,
    }
    (args.out / "day.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

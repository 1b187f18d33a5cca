"""thefuck's first suggestion vs `iclaw fix`, on hand-written everyday mistakes (benchmarks/outside.jsonl).

    pip install thefuck                                         # 3.32 from PyPI (see below)
    python benchmarks/bench_thefuck.py                          # thefuck side only
    python benchmarks/bench_thefuck.py --model demo             # and iclaw with that model (name or path)
    python benchmarks/bench_thefuck.py --model runs/x/checkpoints/latest --json thefuck.json

For every task:
  thefuck  the broken command runs once in a fresh sandboxed fixture; thefuck gets Command(script, output),
           output being what it printed (stdout, then stderr), with that directory as the working directory
           (rules such as cat_dir or chmod_x look at the files) and the sandbox's PATH (no_command suggests
           only commands the sandbox has). Its FIRST suggestion is the candidate (that directory's path in it
           written as `.`, as the verifier does); none counts as not fixed. Shell history is empty, so
           no_command ranks by spelling alone; rules' side_effect hooks are not run.
  iclaw    the Fixer behind `iclaw fix --yes` (iclaw/agent/fix.py) runs the broken command in another fresh
           fixture and, as it fails, searches: hint candidates, the model's greedy episode, samples, each tried
           in a throwaway copy (every call sandboxed, episodes logged to a throw-away store unless --db); the
           command it proposes and runs is the candidate. --no-search: the model's episode alone, its final
           command the candidate (as before the search); --no-hints: no hint line and no hint candidates.
Both candidates are judged by the same Verifier, each in its own fresh fixture: stdout and exit code equal to
the reference's, or the task's test passes afterwards.

thefuck has no Python rules. A Python task is shown to it as the shell command `python3 main.py` (the program
in main.py) with the traceback as output, and its suggestion, a shell command, is judged against the fixed
program run the same way (a bash view of the task: the reference writes the fixed main.py, then runs it).

Installing thefuck: `pip install thefuck` into this venv works as is on Python 3.11 (it imports `imp`, which
3.11 still has, with a DeprecationWarning). Python 3.12 removed `imp` and `distutils`, which thefuck 3.32
imports at module level; this script puts small stand-ins for both into sys.modules before importing it
(imp.load_source via importlib, distutils.spawn.find_executable = shutil.which), so no other package is
needed there. thefuck's config, cache and shell history are pointed at a temporary directory, so the user's
own settings and history never influence the figures. Reading them: 3.32, the latest release, drops the quotes
of a command it rewrites (`pyhton3 -c "print(1)"` -> `python3 -c print(1)`; nvbn/thefuck#1282, fixed on master
after the release), and that alone costs it a few shell tasks here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import types
import warnings
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path

from iclaw.errors import IclawError
from iclaw.tasks import Task, Verifier, load_tasks
from iclaw.tasks.task import write_fixture
from iclaw.tasks.verifier import scrub_dir
from iclaw.tools.isolation import SANDBOX_PATH
from iclaw.tools.sandbox import Limits, Sandbox

DEFAULT_TASKS = Path(__file__).with_name("outside.jsonl")


def _shim_py312() -> None:
    """Stand-ins for the two modules thefuck 3.32 imports that Python 3.12 removed (no-ops before 3.12)."""
    import importlib.util

    if importlib.util.find_spec("imp") is None:

        def load_source(name, path):
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module

        sys.modules["imp"] = types.SimpleNamespace(load_source=load_source)
    if importlib.util.find_spec("distutils") is None:
        import shutil

        spawn = types.SimpleNamespace(find_executable=shutil.which)
        sys.modules["distutils"] = types.SimpleNamespace(spawn=spawn)
        sys.modules["distutils.spawn"] = spawn


def load_thefuck(home: Path):
    """A function (script, output, cwd) -> thefuck's first suggestion ('' if none), or None if not installed."""
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        os.environ[var] = str(home / sub)
    (home / "history").write_text("")
    os.environ.update(HISTFILE=str(home / "history"), TF_SHELL="bash", TF_SHELL_ALIASES="")
    _shim_py312()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from thefuck.conf import settings
            from thefuck.corrector import get_corrected_commands
            from thefuck.types import Command
    except ImportError as e:
        print(f"thefuck is not importable ({e}); install it with `pip install thefuck` -- iclaw side only")
        return None
    settings.init()

    def first(script: str, output: str, cwd: Path) -> str:
        old_cwd, old_path = os.getcwd(), os.environ.get("PATH", "")
        os.chdir(cwd)
        os.environ["PATH"] = SANDBOX_PATH  # read once (memoized) by no_command's list of executables
        try:
            return next((c.script for c in get_corrected_commands(Command(script, output))), "")
        except Exception as e:  # a rule that crashes is thefuck's answer too: no suggestion
            print(f"thefuck failed on {script!r}: {e!r}", file=sys.stderr)
            return ""
        finally:
            os.chdir(old_cwd)
            os.environ["PATH"] = old_path

    return first


def as_shell(task: Task) -> Task:
    """The task as a shell user meets it: a Python task becomes `python3 main.py` with the program in main.py."""
    if task.kind == "bash":
        return task
    ref = None
    if task.reference is not None:
        ref = f"cat > main.py <<'ICLAW_EOF'\n{task.reference.rstrip()}\nICLAW_EOF\npython3 main.py"
    return dataclasses.replace(
        task,
        kind="bash",
        files={**task.files, "main.py": task.broken},
        broken="python3 main.py",
        reference=ref,
    )


def fresh(root: Path, name: str, task: Task) -> Path:
    d = root / name
    d.mkdir()
    write_fixture(task.files, d)
    return d


def thefuck_answers(tasks: list[Task], first, sandbox: Sandbox, root: Path) -> list[str]:
    views = [as_shell(t) for t in tasks]
    dirs = [fresh(root, f"tf{i}", v) for i, v in enumerate(views)]
    runs = sandbox.run_many([("bash", v.broken, d) for v, d in zip(views, dirs)])
    out = []
    for v, d, r in zip(views, dirs, runs):
        output = "\n".join(s for s in (r.stdout, r.stderr) if s)
        out.append(scrub_dir(first(v.broken, output, d), d))  # cd_correction answers with absolute paths
    return out


def iclaw_answers(tasks: list[Task], args, sandbox: Sandbox, root: Path) -> list[str]:
    import torch

    from iclaw.agent.episode import EpisodeConfig
    from iclaw.agent.fix import Fixer
    from iclaw.agent.terminal import load_policy
    from iclaw.store import Store

    torch.manual_seed(args.seed)
    policy = load_policy(args.model)
    cfg = EpisodeConfig(max_turns=args.max_turns, temperature=args.temperature, hints=not args.no_hints)
    db = args.db or root / "bench_thefuck.db"
    out = []
    with Store(db) as store:
        for i, t in enumerate(tasks):
            d = fresh(root, f"ic{i}", t)
            fixer = Fixer(
                policy,
                sandbox,
                store,
                cfg,
                d,
                source="bench",
                model_name=args.model,
                search=not args.no_search,
            )
            res = fixer.run(t.kind, t.broken)
            out.append(res.final or "")
            print(f"\r  iclaw {i + 1}/{len(tasks)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def table(rows: list[dict], have_tf: bool, have_ic: bool) -> dict:
    """Print tasks / thefuck fixed / iclaw fixed per family and per kind; return the same figures."""
    fams: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        fams[(r["kind"], r["family"])].append(r)

    def count(rs: list[dict], side: str, have: bool):
        return sum(r[side]["passed"] for r in rs) if have else None

    def line(label: str, rs: list[dict]) -> dict:
        tf, ic = count(rs, "thefuck", have_tf), count(rs, "iclaw", have_ic)
        tf_s, ic_s = ("-" if n is None else str(n) for n in (tf, ic))
        print(f"{label:<24} {len(rs):>5} {tf_s:>8} {ic_s:>6}")
        return {"tasks": len(rs), "thefuck_fixed": tf, "iclaw_fixed": ic}

    print(f"{'family':<24} {'tasks':>5} {'thefuck':>8} {'iclaw':>6}")
    families = {
        f"{k}/{f}": line(f"{f} ({'sh' if k == 'bash' else 'py'})", rs) for (k, f), rs in sorted(fams.items())
    }
    print("-" * 46)
    totals = {}
    for kind, label in (("bash", "shell total"), ("python", "python total")):
        totals[kind] = line(label, [r for r in rows if r["kind"] == kind])
    totals["all"] = line("all", rows)
    return {"families": families, "totals": totals}


def against(rows: list[dict], old: list[dict], where: Path) -> None:
    """iclaw's fixes now against an earlier run's on the same tasks, paired by task id."""
    import torch

    then = {r["id"]: r["iclaw"]["passed"] for r in old}
    for label, kinds in (("shell", ("bash",)), ("python", ("python",)), ("all", ("bash", "python"))):
        both = [r for r in rows if r["kind"] in kinds and r["id"] in then]
        if not both:
            continue
        d = torch.tensor(
            [float(r["iclaw"]["passed"]) - float(then[r["id"]]) for r in both], dtype=torch.float64
        )
        g = torch.Generator().manual_seed(0)
        means = d[torch.randint(len(d), (2000, len(d)), generator=g)].mean(dim=1)
        lo, hi = (100 * torch.quantile(means, torch.tensor([0.025, 0.975], dtype=torch.float64))).tolist()
        was, now = sum(then[r["id"]] for r in both), sum(r["iclaw"]["passed"] for r in both)
        print(
            f"{label}: {was} -> {now} of {len(both)} against {where}, {100 * d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tasks", nargs="?", type=Path, default=DEFAULT_TASKS, help="JSONL task file")
    ap.add_argument(
        "--model", help="also run `iclaw fix` with this model (registered name or checkpoint path)"
    )
    ap.add_argument(
        "--max-turns", type=int, default=3, help="iclaw: model turns per fix (iclaw fix's default)"
    )
    ap.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="iclaw: temperature of the sampled candidates (0: none)",
    )
    ap.add_argument(
        "--no-hints", action="store_true", help="iclaw: no hint line, no hint candidates (ablation)"
    )
    ap.add_argument(
        "--no-search",
        action="store_true",
        help="iclaw: the model's episode alone, as before the search (ablation)",
    )
    ap.add_argument(
        "--all-hints",
        action="store_true",
        help="iclaw: every hint in the observation (hints.SEARCH_ONLY off), for weights trained on them",
    )
    ap.add_argument(
        "--against",
        type=Path,
        help="an earlier --json of the same tasks: iclaw now minus iclaw then, paired bootstrap 95 %%",
    )
    ap.add_argument("--seed", type=int, default=0, help="iclaw: torch seed")
    ap.add_argument(
        "--db", type=Path, help="iclaw: keep the episodes in this store (default: a temporary one)"
    )
    ap.add_argument("--limit", type=int, help="only the first N tasks (a quick look)")
    ap.add_argument("--json", type=Path, help="write the figures and every task's answers here")
    args = ap.parse_args()

    if args.all_hints:
        from iclaw.tools import hints

        hints.SEARCH_ONLY = False
    if args.model:
        from iclaw.model import registry

        registry.resolve(args.model)  # an unknown model: one line now, not after the thefuck side ran
    tasks = load_tasks(args.tasks)[: args.limit]
    sandbox = Sandbox(Limits(timeout_s=5.0))
    print(f"{len(tasks)} tasks from {args.tasks}; sandbox level {sandbox.level}")
    verifier = Verifier(sandbox)
    with tempfile.TemporaryDirectory(prefix="iclaw-bench-thefuck-") as tmp:
        root = Path(tmp)
        (root / "thefuck").mkdir()
        first = load_thefuck(root / "thefuck")
        tf = thefuck_answers(tasks, first, sandbox, root) if first else None
        ic = iclaw_answers(tasks, args, sandbox, root) if args.model else None
        views = [as_shell(t) for t in tasks]
        tf_v = verifier.verify_many(list(zip(views, tf))) if tf is not None else None
        ic_v = verifier.verify_many(list(zip(tasks, ic))) if ic is not None else None

    rows = []
    for i, t in enumerate(tasks):
        row = {"id": t.id, "kind": t.kind, "family": t.family, "broken": t.broken}
        for side, answers, verdicts in (("thefuck", tf, tf_v), ("iclaw", ic, ic_v)):
            if answers is None:
                row[side] = {"passed": False, "command": None, "reason": "not run"}
            else:
                row[side] = {
                    "passed": verdicts[i].passed,
                    "command": answers[i],
                    "reason": verdicts[i].reason,
                }
        rows.append(row)
    figures = table(rows, tf is not None, ic is not None)
    if args.json:
        tf_version = version("thefuck") if tf is not None else None
        summary = {"tasks_file": str(args.tasks), "thefuck": tf_version, "model": args.model, **figures}
        summary["tasks"] = rows
        args.json.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    if args.against and ic is not None:
        against(rows, json.loads(args.against.read_text())["tasks"], args.against)


if __name__ == "__main__":
    try:
        main()
    except IclawError as e:
        sys.exit(f"error: {e}")

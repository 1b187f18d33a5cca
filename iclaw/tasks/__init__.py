"""Tasks: the JSONL format, the synthetic families and generator, mining from the store, and the verifier.

from iclaw.tasks import load_tasks, generate, Verifier
tasks = generate(100, split="train", seed=0)
verdicts = Verifier(sandbox).verify_many([(t, t.reference) for t in tasks])
"""

from iclaw.tasks.families import FAMILIES
from iclaw.tasks.family import Family, Instance
from iclaw.tasks.generate import fill_errors, generate
from iclaw.tasks.mine import mine_tasks
from iclaw.tasks.task import Task, load_tasks, save_tasks
from iclaw.tasks.verifier import Verdict, Verifier

__all__ = [
    "FAMILIES",
    "Family",
    "Instance",
    "Task",
    "Verdict",
    "Verifier",
    "fill_errors",
    "generate",
    "load_tasks",
    "mine_tasks",
    "save_tasks",
]

"""On-policy distillation: the student acts, the teacher grades every token it wrote.

    for step:
        tasks     <- sample_tasks(...)                        (iclaw/train/onpolicy.py: resume and ranks agree)
        episodes  <- G student episodes per task              (the shared episode loop, tools in the sandbox)
        logp_old  <- the student's log-probs of its own tokens, before the update
        logp_tch  <- the teacher's log-probs of exactly those token ids (no grad, its own device and dtype)
        update    <- ppo_epochs optimizer steps on the `sampled` or the `full` reverse KL, KL(student || teacher),
                     optionally plus W x the verifier's GRPO advantage     (distill_loss.py: the two formulas)
                     and sft_coef x the NLL of PTX_BATCH demonstrations   (PPO-ptx, as in GRPO; off by default)
                     at an lr warmed up linearly over the first `warmup` steps
        every probe_every steps: the probe KL (below), the run's headline
        publish a checkpoint every save_every steps (atomic; `latest` pointer), exactly like GRPO

The probe. Each step's KL is read on that step's tasks, so it moves with what was drawn as much as with what
was learned. The probe is fixed: PROBE_TASKS tasks of the pool, PROBE_SAMPLES student episodes each at one
sampling seed, scored for the exact KL over the vocabulary (where the two share it) and the sampled-token
estimate. Readings differ only by the student's weights (and the episodes those weights sample).

The teacher is frozen, keeps its own device and dtype, and must share the student's tokenizer: it scores the
student's token ids (distill_teacher.py: loading, and the vocabulary, block-size and memory checks, all made
from the configs before any weights are read).

The bookkeeping around the loop (resume, seeding, this rank's tasks, logging, the wall-clock budget, publishing,
`sampled_tokens`) is shared with GRPO: iclaw/train/onpolicy.py.
"""

from __future__ import annotations

import json
import time

import torch

from iclaw.agent.policy import Policy
from iclaw.errors import IclawError
from iclaw.train.common import interrupted, stop_on_ctrl_c
from iclaw.train.config import DistillConfig
from iclaw.train.distill_loss import (
    chunked_logprobs,
    distill_update,
    full_kl,
    position_logits,
    teacher_logits_at,
)
from iclaw.train.distill_teacher import check_pair, load_teacher, resolve_teacher_dtype
from iclaw.train.grpo import group_advantages, ptx_batch
from iclaw.train.onpolicy import OnPolicyRun, restore_or_seed, resume_policy, sample_tasks
from iclaw.train.rollout import collate_episodes, rollout, rollout_stats
from iclaw.train.sft import check_ptx, ptx_demos

KL_MODES = ("sampled", "full")
PROBE_TASKS, PROBE_SAMPLES, PROBE_SEED = 32, 2, 20261207  # the same probe for every run, seed and step


# ------------------------------------------------------------------------------------------------- probe


@torch.no_grad()
def probe_kl(policy: Policy, teacher, probe: list, sandbox, verifier, episode_cfg, cfg, dev, tdev) -> dict:
    """KL(student || teacher) per student token on the fixed probe: `probe_kl` exact over the vocabulary (only
    where both have the same rows), `probe_kl_sampled` the one-sample estimate at the token drawn, and the
    probe episodes' pass rate."""
    from iclaw.model.gpt import autocast

    model = policy.model
    gen = torch.Generator(device=dev).manual_seed(PROBE_SEED)
    eps = rollout(policy, probe, PROBE_SAMPLES, sandbox, verifier, episode_cfg, generator=gen)
    batch = collate_episodes(eps).to(dev)
    rows = [(getattr(m.vocab, "ids", None), m.config.vocab_size) for m in (model, teacher)]
    same_rows = rows[0] == rows[1]  # the exact KL compares the two logit rows column by column
    exact = sampled = n = 0.0
    for i in range(0, batch.idx.size(0), cfg.micro_batch):
        mb = batch.rows(slice(i, i + cfg.micro_batch))
        keep = mb.mask.bool()
        with autocast(dev, cfg.amp):
            s_logits = position_logits(model, mb.idx, mb.mask).float()
        s_lp = torch.log_softmax(s_logits, -1).gather(-1, model.rows(mb.idx[:, 1:][keep])[:, None])
        t_lp, _ = chunked_logprobs(teacher, mb, tdev, cfg.amp, cfg.micro_batch)
        sampled += (s_lp.squeeze(-1) - t_lp[keep]).sum().item()
        if same_rows:
            exact += (
                full_kl(s_logits, teacher_logits_at(teacher, mb.idx, mb.mask, tdev, cfg.amp)).sum().item()
            )
        n += keep.sum().item()
    n = max(n, 1.0)
    out = {"probe_kl_sampled": sampled / n, "probe_pass": sum(e.reward or 0.0 for e in eps) / len(eps)}
    if same_rows:
        out["probe_kl"] = exact / n
    return out


# ------------------------------------------------------------------------------------------------- loop


def check_config(cfg: DistillConfig) -> None:
    if cfg.kl not in KL_MODES:
        raise IclawError(f"--kl: must be one of {', '.join(KL_MODES)}, got {cfg.kl!r}")
    if cfg.group_size < 1:
        raise IclawError("--group-size: must be at least 1")
    if cfg.reward_weight != 0 and cfg.group_size < 2:
        raise IclawError(
            "--group-size: must be at least 2 with --reward-weight (advantages compare episodes within a group)"
        )
    if cfg.tasks_per_step < 1:
        raise IclawError("--tasks-per-step: must be at least 1")
    if cfg.steps < 1:
        raise IclawError("--steps: must be at least 1")
    if cfg.save_every < 1:
        raise IclawError("--set save_every: must be at least 1")
    if cfg.max_turns < 1:
        raise IclawError("--max-turns: must be at least 1")
    resolve_teacher_dtype(cfg.teacher_dtype, torch.device("cpu"))  # an unknown name raises here


def train_distill(
    cfg: DistillConfig,
    tasks: list,
    *,
    sandbox,
    verifier,
    store=None,
    resume: bool = False,
    device: str | None = None,
    run_id: str | None = None,
    log_dir: str = "runs",
    show_progress: bool = True,
    echo=print,
    demos: list | None = None,
) -> dict:
    """Run on-policy distillation; returns a summary dict (run_id, steps, checkpoint, seconds, history,
    stopped). Rank 0 logs and publishes. `demos` ((tokens, mask) pairs) feed the ptx term (cfg.sft_coef)."""
    from iclaw.model import registry
    from iclaw.train.common import live_progress, setup_distributed
    from iclaw.train.optim import make_optimizer

    check_config(cfg)
    if not tasks:
        raise IclawError("no usable tasks to distill on")
    check_ptx(cfg.sft_coef, demos)
    rank, world, dev = setup_distributed(device)
    if cfg.tasks_per_step % world:
        raise IclawError(
            f"--tasks-per-step {cfg.tasks_per_step} must be divisible by the number of ranks {world}"
        )
    tdev = torch.device(cfg.teacher_device) if cfg.teacher_device else dev
    if tdev.type == "cuda" and tdev.index is None and dev.type == "cuda":
        tdev = dev  # plain "cuda" under torchrun means this rank's GPU, not every rank on GPU 0

    trainer_state = None
    teacher_name = cfg.teacher
    if resume:
        policy, trainer_state = resume_policy(cfg.out, "distill", dev)
        student_source = trainer_state["student"]
        teacher_name = trainer_state["teacher"]  # the run's own teacher, whatever --teacher says now
    else:
        try:
            student_source = str(registry.resolve(cfg.student))
        except IclawError as e:
            raise IclawError(f"--student: {e}") from None
        policy = Policy.load(student_source, device=dev)
    model = policy.model
    if demos:  # the ptx term's demonstrations, in ids the model has rows for
        demos = [model.fit(t, m) for t, m in demos]
    teacher, teacher_source = load_teacher(
        teacher_name, model, tdev, cfg.teacher_dtype, echo, cfg.student, cfg.kl
    )
    opt = make_optimizer(model, cfg.lr)
    restore_or_seed(opt, trainer_state, cfg.seed, rank)

    run = OnPolicyRun.start(
        "distill",
        cfg,
        trainer_state,
        rank=rank,
        world=world,
        device=dev,
        store=store,
        log_dir=log_dir,
        run_id=run_id,
    )
    last_ckpt = policy.ckpt_id
    probe, probes = sample_tasks(tasks, min(PROBE_TASKS, len(tasks)), step=0, seed=PROBE_SEED), []

    def read_probe(step: int) -> dict:  # rank 0 only: the reading is logged, it steers nothing
        if rank != 0 or not cfg.probe_every or (step % cfg.probe_every and step != cfg.steps):
            return {}
        r = probe_kl(policy, teacher, probe, sandbox, verifier, run.episode_cfg, cfg, dev, tdev)
        probes.append({"step": step, **r})
        if run.metrics_log is not None:  # runs/<run_id>/probe.jsonl: the curve to plot, step 0 included
            with open(run.metrics_log.dir / "probe.jsonl", "a") as f:
                f.write(json.dumps(probes[-1]) + "\n")
        return r

    def publish(
        step: int,
    ) -> str:  # the run's lineage: in the trainer state for --resume, in the meta to read
        lineage = {"student": student_source, "teacher": teacher_source}
        return run.publish(
            step, model, opt, state=lineage, meta={"parent": student_source, "teacher": teacher_source}
        )

    with live_progress(
        cfg.steps, f"distill {cfg.teacher} → {cfg.out}", enabled=show_progress and rank == 0
    ) as progress:
        progress(completed=run.start_step)
        step = run.start_step
        if step == 0:
            read_probe(0)  # before any update
        while step < cfg.steps:
            run.stopped = run.budget_spent()
            if run.stopped:
                break
            # roll out: G student episodes per task, tools in the sandbox, judged by the verifier
            t0 = time.time()
            eps = run.rollout(policy, tasks, step, sandbox, verifier)
            t_rollout = time.time() - t0
            run.record_episodes(eps, step, source="distill", checkpoint=policy.ckpt_id)
            rewards = torch.tensor([e.reward or 0.0 for e in eps], dtype=torch.float32)
            seq_adv = group_advantages(rewards, cfg.group_size).to(dev) if cfg.reward_weight else None
            m = {"reward_mean": rewards.mean().item(), **rollout_stats(eps)}

            # score: the student's and the teacher's log-probs of every token the student wrote
            t1 = time.time()
            batch = collate_episodes(eps).to(dev)
            logp_old, ent = chunked_logprobs(model, batch, dev, cfg.amp, cfg.micro_batch, with_entropy=True)
            logp_tch, _ = chunked_logprobs(teacher, batch, tdev, cfg.amp, cfg.micro_batch)
            t_teacher = time.time() - t1
            mask = batch.mask
            n_tok = mask.sum().clamp(min=1).item()
            diff = (logp_old - logp_tch) * mask
            m["kl_to_teacher"] = diff.sum().item() / n_tok  # mean of log p_s - log p_t: unbiased reverse KL
            m["kl_to_teacher_k3"] = ((torch.exp(-diff) + diff - 1) * mask).sum().item() / n_tok  # >= 0
            m["teacher_logp"] = (logp_tch * mask).sum().item() / n_tok
            m["student_logp"] = (logp_old * mask).sum().item() / n_tok
            m["entropy"] = (ent * mask).sum().item() / n_tok
            m["sampler_logp_gap"] = ((logp_old - batch.sampler_logp).abs() * mask).sum().item() / n_tok

            # update: ppo_epochs optimizer steps on the distillation loss, lr warmed up linearly
            lr = cfg.lr * min(1.0, (step + 1) / max(cfg.warmup, 1))
            for g in opt.param_groups:
                g["lr"] = lr
            stats: dict = {}
            ptx = ptx_batch(demos, model.config.block_size, dev) if cfg.sft_coef > 0 else None
            for _ in range(cfg.ppo_epochs):
                stats = distill_update(
                    model,
                    opt,
                    batch,
                    logp_old,
                    logp_tch,
                    seq_adv,
                    cfg,
                    device=dev,
                    teacher=teacher,
                    teacher_device=tdev,
                    ptx=ptx,
                )
                if stats.get("skipped"):
                    echo(f"step {step}: non-finite loss or gradient — update skipped")
                    break
            policy.sync()
            m.update(stats)
            m.update(
                {
                    "lr": lr,
                    "t_rollout": t_rollout,
                    "t_teacher": t_teacher,
                    "t_train": time.time() - t1,
                    "rows": int(batch.idx.size(0)),
                }
            )
            step += 1
            m.update(read_probe(step))
            run.log(step, m)
            kl_shown = {"kl_full": m["kl_full"]} if "kl_full" in m else {"kl": m["kl_to_teacher"]}
            if "probe_kl" in m or "probe_kl_sampled" in m:
                kl_shown["probe_kl"] = m.get("probe_kl", m.get("probe_kl_sampled"))
            progress(1, **kl_shown, reward=m["reward_mean"], pass_rate=m["pass_rate"])

            # publish: an atomic checkpoint; `latest` moves for hot-reload
            if run.should_publish(step):
                last_ckpt = publish(step)
    if run.publish_on_stop(step):
        last_ckpt = publish(step)
    return run.summary(step, last_ckpt, teacher=teacher_source, student=student_source, probes=probes)


def run_distill(
    cfg: DistillConfig,
    *,
    tasks_file=None,
    from_db: bool = False,
    db=None,
    resume: bool = False,
    device: str | None = None,
    allow_unsafe: bool = False,
    show_progress: bool = True,
    echo=None,
) -> dict:
    """The body of `iclaw distill`: check the flags and names, load tasks, sandbox and store, train, report.
    Uses the same task pool and sandbox policy as `iclaw train grpo` (iclaw/train/common.py)."""
    from rich.console import Console

    from iclaw.model import registry
    from iclaw.store import Store
    from iclaw.tasks import Verifier
    from iclaw.train.common import safe_sandbox, task_pool

    if echo is None:
        console = Console(highlight=False)
        echo = console.print
    check_config(cfg)
    registry.check_name(cfg.out)
    if not resume:  # unknown names fail here, before any sandbox, task or file work
        for flag, name in (("--student", cfg.student), ("--teacher", cfg.teacher)):
            try:
                registry.resolve(name)
            except IclawError as e:
                raise IclawError(f"{flag}: {e}") from None
        check_pair(cfg.teacher, cfg.student, cfg.kl)  # vocabularies and block sizes, from the configs
    sandbox = safe_sandbox(allow_unsafe)
    tasks = task_pool(tasks_file, from_db, db, sandbox=sandbox)
    demos = None  # --set sft_coef=X: the ptx term imitates the pool's reference fixes, as in train grpo
    if cfg.sft_coef > 0:
        start = registry.resolve(cfg.out if resume else cfg.student)
        demos = ptx_demos(cfg.sft_coef, tasks, sandbox, start, cfg.seed)
    echo(f"distilling {cfg.teacher} into {cfg.student} → {cfg.out} on {len(tasks)} tasks (--kl {cfg.kl})")
    with Store(db) as store, stop_on_ctrl_c():
        summary = train_distill(
            cfg,
            tasks,
            sandbox=sandbox,
            verifier=Verifier(sandbox),
            store=store,
            resume=resume,
            device=device,
            show_progress=show_progress,
            echo=echo,
            demos=demos,
        )
    if summary.get("stopped"):
        echo(f"stopped: {summary['stopped']}")
    line = f"run {summary['run_id']}: {summary['steps']} steps in {summary['seconds']:.0f}s; "
    line += f"latest checkpoint {cfg.out} → {summary['checkpoint']}"
    hist, probes = summary["history"], summary["probes"]
    if len(probes) > 1:
        key = "probe_kl" if "probe_kl" in probes[0] else "probe_kl_sampled"
        readings = ", ".join(f"{p[key]:.3f} (step {p['step']})" for p in probes)
        echo(f"probe KL to the teacher ({PROBE_TASKS} tasks x {PROBE_SAMPLES}, {key}): {readings}")
    if hist:
        line += (
            f"; kl_to_teacher {hist[0]['kl_to_teacher']:.4f} → {hist[-1]['kl_to_teacher']:.4f}"
            f", pass rate {hist[0]['pass_rate']:.2f} → {hist[-1]['pass_rate']:.2f}"
        )
    echo(line)
    interrupted(summary)
    return summary

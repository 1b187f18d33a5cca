"""On-policy distillation: the student acts, the teacher grades every token it wrote.

    for step:
        tasks     <- sample_tasks(...)                        (iclaw/train/loop.py: resume and ranks agree)
        episodes  <- G student episodes per task              (the shared episode loop, tools in the sandbox)
        logp_old  <- the student's log-probs of its own tokens, before the update
        logp_tch  <- the teacher's log-probs of exactly those token ids (no grad, its own device and dtype)
        sampled:  A_t  = -(logp_old_t - logp_tch_t) + W * A_seq          a per-token advantage, then
                  loss = token-mean of -min(ratio_t * A_t, clip(ratio_t) * A_t),  ratio = exp(logp_new - logp_old)
        full:     loss = token-mean over policy positions of KL(p_s || p_t) = sum_v p_s(v) (log p_s(v) - log p_t(v))
                         + the GRPO clipped loss with advantages W * A_seq
        publish a checkpoint every save_every steps (atomic; `latest` pointer), exactly like GRPO

Both losses are reverse KL, KL(student || teacher), on the states the student itself visits: the student is
corrected where it actually goes wrong (unlike SFT on teacher traces), and the signal is dense, one number per
token (unlike RL's one bit per episode). `sampled` is the one-sample estimate log p_s(x) - log p_t(x) of the
per-token KL at the token the student drew (tinker-cookbook's recipe); `full` is the exact KL over the whole
vocabulary at each policy position (GKD with beta = 1), which needs a shared vocabulary: we score the student's
token ids with the teacher, so both models must use the same tokenizer.

Only the student's own tokens count: the mask from the episode loop is 0 on the prompt, tool observations and
padding, and the heads run only at mask-1 positions, so those positions get no gradient at all.

A_seq is the verifier's group-relative advantage (iclaw.train.grpo.group_advantages); W = --reward-weight
(default 0: pure distillation; the reward is still measured and logged).

The bookkeeping around the loop (resume, seeding, this rank's tasks, logging, the wall-clock budget, publishing,
`sampled_tokens`) is shared with GRPO: iclaw/train/loop.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclaw.agent.policy import Policy
from iclaw.errors import IclawError
from iclaw.train.grpo import group_advantages, grpo_loss
from iclaw.train.loop import BUDGETS, OnPolicyRun, restore_or_seed, resume_policy
from iclaw.train.rollout import Batch, collate_episodes, logprobs_and_entropy, rollout_stats

KL_MODES = ("sampled", "full")
TEACHER_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class DistillConfig:
    teacher: str = "760m"  # registry name or path of the teacher (frozen)
    student: str = "124m"  # registry name or path of the starting student
    out: str = "distill"  # registry name checkpoints are published under
    steps: int = 50
    kl: str = "sampled"  # sampled | full
    reward_weight: float = 0.0  # W: weight of the verifier's GRPO advantage added to the distillation term
    group_size: int = 4  # G student episodes per task (>= 2 only needed when reward_weight != 0)
    tasks_per_step: int = 8  # global, across all ranks
    lr: float = 1e-4
    eps: float = 0.2  # clip range of the ratio (sampled mode, and the reward term)
    eps_high: float | None = None
    scale_rewards: str = "group"
    ppo_epochs: int = 1
    micro_batch: int = 16  # rows per forward/backward; full mode holds two (tokens x vocab) float32 tensors
    grad_clip: float = 1.0
    weight_decay: float = 0.0
    temperature: float = 1.0
    top_k: int | None = None
    max_turns: int = 2
    max_new_tokens: int = 48
    save_every: int = 10
    seed: int = 0
    amp: bool = True
    teacher_device: str | None = None  # None = the student's device
    teacher_dtype: str = "auto"  # auto (bf16 on CUDA, else float32) | float32 | bfloat16 | float16
    minutes: float | None = None  # optional wall-clock budget (stops early, publishes)
    max_tokens: int | None = None  # optional budget of sampled policy tokens (stops early, publishes)


# ------------------------------------------------------------------------------------------------ losses


def distill_advantages(
    logp_old: torch.Tensor,  # (...) the student's log-prob of each sampled token, before the update
    logp_teacher: torch.Tensor,  # (...) the teacher's log-prob of the same token
    seq_adv: torch.Tensor | None = None,  # (...) the verifier's GRPO advantage, broadcast to each token
    reward_weight: float = 0.0,
) -> torch.Tensor:
    """Per-token advantage: minus the one-sample reverse-KL estimate, plus W times the sequence advantage.
    A token the teacher finds likelier than the student did is pushed up; one it finds unlikely, down."""
    adv = -(logp_old - logp_teacher).detach()
    if reward_weight and seq_adv is not None:
        adv = adv + reward_weight * seq_adv.detach().to(adv.dtype)
    return adv


def token_pg_loss(
    logp_new: torch.Tensor,  # (...) has grad
    logp_old: torch.Tensor,  # (...)
    advantages: torch.Tensor,  # (...) one advantage per token
    mask: torch.Tensor,  # (...) 1 = a policy token
    eps: float = 0.2,
    eps_high: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO's clipped surrogate with a per-token advantage, token-mean over the mask.

    This *is* iclaw.train.grpo.grpo_loss (beta = 0, token-mean): viewing every token as a one-token
    "sequence" (N, 1) gives each its own advantage, and token-mean aggregation does not care how tokens are
    grouped into rows, so the value and gradient are exactly those of the per-token formula."""
    return grpo_loss(
        logp_new.reshape(-1, 1),
        logp_old.reshape(-1, 1),
        None,
        advantages.reshape(-1),
        mask.reshape(-1, 1),
        eps=eps,
        beta=0.0,
        eps_high=eps_high,
        loss_agg="token-mean",
    )


def sampled_distill_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    logp_teacher: torch.Tensor,
    mask: torch.Tensor,
    *,
    seq_adv: torch.Tensor | None = None,
    reward_weight: float = 0.0,
    eps: float = 0.2,
    eps_high: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The `sampled` loss on (B, T) log-probs of the sampled tokens; seq_adv is (B,) when given.
    At the first update (logp_new == logp_old) its value is the masked mean of log p_s - log p_t: the KL."""
    if seq_adv is not None:
        seq_adv = seq_adv[:, None].expand_as(logp_old)
    adv = distill_advantages(logp_old, logp_teacher, seq_adv, reward_weight)
    return token_pg_loss(logp_new, logp_old, adv.masked_fill(~mask.bool(), 0.0), mask, eps, eps_high)


def full_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_s || p_t) = sum_v p_s(v) (log p_s(v) - log p_t(v)) at each position: (..., V) -> (...), float32.
    Exactly 0 when the two logit rows are equal (log_softmax of equal inputs gives equal outputs)."""
    ls = F.log_softmax(student_logits.float(), dim=-1)
    lt = F.log_softmax(teacher_logits.float().detach(), dim=-1)  # the teacher is a target, never trained
    return (ls.exp() * (ls - lt)).sum(-1)


def full_kl_loss(
    student_logits: torch.Tensor,  # (B, T, V), or (N, V) already at policy positions
    teacher_logits: torch.Tensor,  # same shape
    mask: torch.Tensor | None = None,  # (B, T) / (N,); None = every position counts
) -> tuple[torch.Tensor, torch.Tensor]:
    """The `full` loss: the token-mean of KL(p_s || p_t) over policy positions, and the per-position KL
    (N,) at those positions. Masked positions are dropped before the softmax, so their gradient is exactly 0
    (and a -inf in their padding logits cannot turn into nan)."""
    if mask is not None:
        keep = mask.bool()
        student_logits, teacher_logits = student_logits[keep], teacher_logits[keep]
    kl = full_kl(student_logits, teacher_logits)
    return kl.sum() / max(kl.numel(), 1), kl.detach()


# ------------------------------------------------------------------------------------ heads at positions


def position_logits(model, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits (N, V) predicting idx[:, t+1] at the N positions where mask (B, T-1) is 1, in the model's
    compute dtype. The 50k-wide head runs only there (cf. rollout.logprobs_and_entropy)."""
    h = model.hidden(idx[:, :-1])
    return model.lm_head(h[mask.bool()])


def chunked_logprobs(model, batch: Batch, device, amp: bool, rows: int, with_entropy: bool = False):
    """logprobs_and_entropy over the batch in chunks of `rows`, run on `device`, results on the batch's
    device. The model may live elsewhere (the teacher on its own GPU)."""
    from iclaw.model.gpt import autocast

    out_dev = batch.idx.device
    lps, ents = [], []
    for i in range(0, batch.idx.size(0), rows):
        idx, mask = batch.idx[i : i + rows].to(device), batch.mask[i : i + rows].to(device)
        with torch.no_grad(), autocast(device, amp):
            lp, ent = logprobs_and_entropy(model, idx, mask, with_entropy=with_entropy)
        lps.append(lp.to(out_dev))
        if with_entropy:
            ents.append(ent.to(out_dev))
    return torch.cat(lps), (torch.cat(ents) if with_entropy else None)


def teacher_logits_at(teacher, idx: torch.Tensor, mask: torch.Tensor, device, amp: bool) -> torch.Tensor:
    """The teacher's logits (N, V) at the student's policy positions, computed on the teacher's device,
    returned as float32 on the caller's device."""
    from iclaw.model.gpt import autocast

    with torch.no_grad(), autocast(device, amp):
        logits = position_logits(teacher, idx.to(device), mask.to(device))
    return logits.float().to(idx.device)


# ------------------------------------------------------------------------------------------------ teacher


def resolve_teacher_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":  # bf16 halves a big teacher's memory on GPU; CPU keeps float32 (autocast does bf16)
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    if name not in TEACHER_DTYPES:
        raise IclawError(
            f"--teacher-dtype: unknown dtype {name!r} (known: auto, {', '.join(TEACHER_DTYPES)})"
        )
    return TEACHER_DTYPES[name]


def check_teacher(teacher, student, teacher_name: str, student_name: str) -> str | None:
    """Raise on a teacher that cannot grade the student's tokens; return a warning line for a smaller one.
    Depth and width may differ freely: the teacher only has to score the same token ids."""
    tv, sv = teacher.config.vocab_size, student.config.vocab_size
    if tv != sv:
        raise IclawError(
            f"--teacher {teacher_name}: vocabulary size {tv} differs from the student's ({student_name}) {sv}; "
            "on-policy distillation scores the student's own token ids with the teacher, so both must share "
            "one tokenizer"
        )
    tb, sb = teacher.config.block_size, student.config.block_size
    if tb < sb:
        raise IclawError(
            f"--teacher {teacher_name}: block size {tb} is smaller than the student's ({student_name}) {sb}; "
            "the teacher could not score the student's longest episodes"
        )
    tp, sp = teacher.num_params(), student.num_params()
    if tp < sp:
        return (
            f"warning: teacher {teacher_name} has fewer parameters ({tp:,}) than the student {student_name} "
            f"({sp:,}); distilling proceeds, but the student is pulled towards a smaller model"
        )
    return None


def load_teacher(
    name: str, student, device: torch.device, dtype: str = "auto", echo=print, student_name: str = "student"
):
    """(frozen teacher on `device`, resolved checkpoint path). A missing teacher is the registry's
    unknown-model error, named after --teacher."""
    from iclaw.model import registry

    try:
        path = registry.resolve(name)
    except IclawError as e:
        raise IclawError(f"--teacher: {e}") from None
    teacher, _ = registry.load(path, device=device)
    warning = check_teacher(teacher, student, name, student_name)
    if warning:
        echo(warning)
    teacher = teacher.to(resolve_teacher_dtype(dtype, device)).eval().requires_grad_(False)
    return teacher, str(path)


# ------------------------------------------------------------------------------------------------ update


def distill_update(
    model,
    opt,
    batch: Batch,
    logp_old: torch.Tensor,  # (B, T-1)
    logp_teacher: torch.Tensor,  # (B, T-1)
    seq_adv: torch.Tensor | None,  # (B,) or None
    cfg: DistillConfig,
    *,
    device,
    teacher=None,  # needed for kl == "full"
    teacher_device=None,
) -> dict:
    """One optimizer step over the whole batch, in micro-batches weighted by their share of the policy tokens
    (so the gradient is the full batch's token-mean gradient, on one process or averaged over ranks).
    Same structure as trainer.grpo_update; only the per-micro-batch loss differs.

    Under torchrun the gradients are all-reduced by hand after the backward passes, not by a DDP wrapper:
    the heads run on the trunk's hidden states (`position_logits`), which bypasses DDP's forward, and DDP only
    synchronises gradients of backward passes that follow its own forward."""
    import torch.distributed as dist

    from iclaw.model.gpt import autocast
    from iclaw.train.common import all_reduce_sum

    world = dist.get_world_size() if dist.is_initialized() else 1
    B = batch.idx.size(0)
    total = all_reduce_sum(batch.mask.sum().item(), device)
    n_mb = max(1, (B + cfg.micro_batch - 1) // cfg.micro_batch)
    W = cfg.reward_weight
    acc: dict[str, float] = {}
    opt.zero_grad(set_to_none=True)
    model.train()
    for i in range(n_mb):
        sl = slice(i * cfg.micro_batch, (i + 1) * cfg.micro_batch)
        mb = batch.rows(sl)
        keep = mb.mask.bool()
        n = keep.sum().item()
        share = n * world / max(total, 1.0)
        old, tch = logp_old[sl][keep], logp_teacher[sl][keep]  # (N,) at the policy tokens
        a_seq = seq_adv[sl][:, None].expand_as(keep)[keep] if seq_adv is not None else None
        ones = torch.ones_like(old)
        with autocast(device, cfg.amp):
            logits = position_logits(model, mb.idx, mb.mask)  # (N, V)
        logp_all = F.log_softmax(logits.float(), dim=-1)
        logp_new = logp_all.gather(-1, mb.idx[:, 1:][keep][:, None]).squeeze(-1)
        if cfg.kl == "sampled":
            adv = distill_advantages(old, tch, a_seq, W)
            loss, st = token_pg_loss(logp_new, old, adv, ones, cfg.eps, cfg.eps_high)
            stats = {
                "pg_loss": st["pg_loss"],
                "clip_frac": st["clip_frac"],
                "ratio_mean": st["ratio_mean"],
            }
        else:
            t_logits = teacher_logits_at(teacher, mb.idx, mb.mask, teacher_device or device, cfg.amp)
            loss, _ = full_kl_loss(logits, t_logits)
            stats = {"kl_full": loss.item()}
            if W and a_seq is not None:  # the verifier's signal, as GRPO's clipped loss, on top
                pg, st = token_pg_loss(logp_new, old, W * a_seq, ones, cfg.eps, cfg.eps_high)
                loss = loss + pg
                stats.update(pg_loss=st["pg_loss"], clip_frac=st["clip_frac"], ratio_mean=st["ratio_mean"])
        (loss * share).backward()
        w = n / max(batch.mask.sum().item(), 1.0)
        for k, v in stats.items():
            acc[k] = acc.get(k, 0.0) + v * w
        acc["loss"] = acc.get("loss", 0.0) + loss.item() * share / world
    model.eval()
    if world > 1:  # average over ranks, as DDP would (share carries the factor world)
        for p in model.parameters():
            if p.requires_grad:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
                p.grad.div_(world)
    finite = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    if not finite or acc["loss"] != acc["loss"]:
        opt.zero_grad(set_to_none=True)
        acc.update(skipped=1.0, grad_norm=float("nan"))
        return acc
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    acc.update(skipped=0.0, grad_norm=float(gn))
    return acc


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
        raise IclawError("--save-every: must be at least 1")
    if cfg.temperature < 0:
        raise IclawError("--temperature: must be >= 0")
    if cfg.max_turns < 1:
        raise IclawError("--max-turns: must be at least 1")
    if cfg.teacher_dtype != "auto" and cfg.teacher_dtype not in TEACHER_DTYPES:
        raise IclawError(
            f"--teacher-dtype: unknown dtype {cfg.teacher_dtype!r} (known: auto, {', '.join(TEACHER_DTYPES)})"
        )


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
) -> dict:
    """Run on-policy distillation; returns a summary dict (run_id, steps, checkpoint, seconds, history,
    stopped). Rank 0 logs and publishes."""
    from iclaw.model import registry
    from iclaw.train.common import live_progress, make_optimizer, setup_distributed

    check_config(cfg)
    if not tasks:
        raise IclawError("no usable tasks to distill on")
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
    teacher, teacher_source = load_teacher(teacher_name, model, tdev, cfg.teacher_dtype, echo, cfg.student)
    opt = make_optimizer(model, cfg.lr, cfg.weight_decay)
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
            seq_adv = (
                group_advantages(rewards, cfg.group_size, cfg.scale_rewards).to(dev)
                if cfg.reward_weight
                else None
            )
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

            # update: ppo_epochs optimizer steps on the distillation loss
            stats: dict = {}
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
                )
                if stats.get("skipped"):
                    echo(f"step {step}: non-finite loss or gradient — update skipped")
                    break
            policy.sync()
            m.update(stats)
            m.update(
                {
                    "lr": cfg.lr,
                    "t_rollout": t_rollout,
                    "t_teacher": t_teacher,
                    "t_train": time.time() - t1,
                    "rows": int(batch.idx.size(0)),
                }
            )
            step += 1
            run.log(step, m)
            kl_shown = {"kl_full": m["kl_full"]} if "kl_full" in m else {"kl": m["kl_to_teacher"]}
            progress(1, **kl_shown, reward=m["reward_mean"], pass_rate=m["pass_rate"])

            # publish: an atomic checkpoint; `latest` moves for hot-reload
            if run.should_publish(step):
                last_ckpt = publish(step)
    if run.stopped in BUDGETS and rank == 0 and step > run.start_step:
        last_ckpt = publish(step)
    return run.summary(step, last_ckpt, teacher=teacher_source, student=student_source)


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
    Uses the same task pool and sandbox policy as `iclaw train grpo` (iclaw/train/setup.py)."""
    from rich.console import Console

    from iclaw.model import registry
    from iclaw.store import Store
    from iclaw.tasks import Verifier
    from iclaw.train.setup import safe_sandbox, task_pool

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
    tasks = task_pool(tasks_file, from_db, db)
    sandbox = safe_sandbox(allow_unsafe)
    echo(f"distilling {cfg.teacher} into {cfg.student} → {cfg.out} on {len(tasks)} tasks (--kl {cfg.kl})")
    with Store(db) as store:
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
        )
    if summary.get("stopped"):
        echo(f"stopped: {summary['stopped']}")
    line = f"run {summary['run_id']}: {summary['steps']} steps in {summary['seconds']:.0f}s; "
    line += f"latest checkpoint {cfg.out} → {summary['checkpoint']}"
    hist = summary["history"]
    if hist:
        line += (
            f"; kl_to_teacher {hist[0]['kl_to_teacher']:.4f} → {hist[-1]['kl_to_teacher']:.4f}"
            f", pass rate {hist[0]['pass_rate']:.2f} → {hist[-1]['pass_rate']:.2f}"
        )
    echo(line)
    return summary

"""Optimizers and the learning-rate schedule, in one place.

    make_optimizer        AdamW for SFT, GRPO and distillation (fused: one kernel on CPU and CUDA)
    configure_optimizers  pretraining's: AdamW (nanoGPT's setup) or Muon for the hidden matrices
    warmup_cosine         linear warm-up, then cosine decay to a floor: SFT's and pretraining's schedule

The two AdamW factories decay the same tensors (every >= 2-D one) but differ in kernel (make_optimizer is
fused on CPU too, configure_optimizers only on CUDA) and parameter order, so folding one into the other would
change the numbers of the runs it builds; both stay, side by side.

Muon (Keller Jordan, modded-nanogpt): for a 2-D weight, take the SGD-momentum update (Nesterov, 0.95) and
replace it by the nearest semi-orthogonal matrix U V^T (its singular values all set to ~1), computed with 5
Newton-Schulz iterations. Every direction of the matrix then moves by the same amount, instead of the update
being dominated by a few large singular directions. It is only meant for hidden 2-D matrices: embeddings,
the (tied) head, the MoE router and all vectors (biases, norm gains) stay on AdamW.

Learning rate: following Moonlight ("Muon is Scalable for LLM Training", Liu et al. 2025) we scale the
orthogonal update by 0.2 * sqrt(max(rows, cols)), which gives it about the RMS of a typical AdamW update. So
Muon uses the same lr, schedule and weight decay as AdamW, and a trainer that sets `group["lr"]` on every
param group (as nanoGPT-style loops do) drives both kinds of group correctly.

Both updates live in one torch.optim.Optimizer (`Muon`), so trainers see a single object with the usual
step / zero_grad / state_dict / load_state_dict.
"""

from __future__ import annotations

import math

import torch

NS_COEFFS = (3.4445, -4.7750, 2.0315)  # quintic Newton-Schulz coefficients from modded-nanogpt


def make_optimizer(
    model: torch.nn.Module, lr: float, weight_decay: float = 0.0, betas: tuple[float, float] = (0.9, 0.95)
) -> torch.optim.AdamW:
    """AdamW; weight decay only on 2-D weights (matrices, embeddings), never on biases and norms."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    fused = next(model.parameters()).device.type in ("cuda", "cpu")  # one kernel instead of a loop per tensor
    return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=fused)


def warmup_cosine(lr: float, step: int, warmup: int, progress: float, min_lr_frac: float) -> float:
    """Linear warm-up over the first `warmup` steps, then cosine decay from lr to min_lr_frac * lr as
    `progress` (the decay's fraction done, steps or wall-clock) goes from 0 to 1."""
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * (min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def orthogonalize(G: torch.Tensor, steps: int = 5, eps: float = 1e-7, bf16: bool = False) -> torch.Tensor:
    """Approximately U V^T for G = U S V^T, by the quintic iteration X <- aX + b(XX^T)X + c(XX^T)^2 X; G may
    be a stack of same-shaped matrices (..., rows, cols), each orthogonalised on its own.

    Dividing by the Frobenius norm first puts every singular value in (0, 1]; the coefficients are tuned to
    push them toward 1 fast rather than exactly (they end up roughly in [0.7, 1.2]), which is all Muon
    needs. `bf16` (a trainer passes it where it trains under bf16 autocast): the iteration is stable in bf16,
    and on a 2-core CPU with bf16 hardware 2.4x faster than fp32 for a 6 x 192 body's matrices; fp32 keeps a
    resumed run bit-exact, which bf16 CPU kernels do not promise."""
    a, b, c = NS_COEFFS
    X = G.bfloat16() if bf16 else G.float()
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + eps)
    tall = X.size(-2) > X.size(-1)
    if tall:  # iterate on the wide orientation: X X^T is then the smaller Gram matrix
        X = X.mT
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    if tall:
        X = X.mT
    return X.to(G.dtype)


class Muon(torch.optim.Optimizer):
    """Muon on param groups with muon=True, AdamW on the rest (groups with muon=False).

    Group options: lr, weight_decay (decoupled, lr * wd, as AdamW), muon (bool); Muon groups also momentum,
    nesterov, ns_steps; AdamW groups also betas, eps."""

    def __init__(
        self,
        params,
        lr: float = 6e-4,
        weight_decay: float = 0.0,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_steps: int = 5,
        ns_bf16: bool = False,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
    ):
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            muon=True,
            momentum=momentum,
            nesterov=nesterov,
            ns_steps=ns_steps,
            ns_bf16=ns_bf16,
            betas=betas,
            eps=eps,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            if group["muon"] and any(p.dim() != 2 for p in group["params"]):
                raise ValueError(
                    "Muon groups may only hold 2-D matrices; put other parameters in muon=False groups"
                )

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            updates: dict[torch.Size, list] = {}  # Muon: same-shaped updates are orthogonalised as one stack
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, state = p.grad, self.state[p]
                p.mul_(1 - lr * wd)  # decoupled weight decay (no-op when wd = 0)
                if group["muon"]:
                    m = group["momentum"]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(g)
                    buf = state["momentum_buffer"]
                    buf.lerp_(g, 1 - m)  # buf = m * buf + (1 - m) * g
                    u = g.lerp(buf, m) if group["nesterov"] else buf  # Nesterov: look one momentum step ahead
                    updates.setdefault(p.shape, []).append((p, u))
                else:  # AdamW, written out
                    b1, b2 = group["betas"]
                    if "step" not in state:
                        state["step"] = 0
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    state["step"] += 1
                    t = state["step"]
                    state["exp_avg"].lerp_(g, 1 - b1)
                    state["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
                    denom = (state["exp_avg_sq"] / (1 - b2**t)).sqrt_().add_(group["eps"])
                    p.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1**t))
            for shape, pairs in updates.items():
                ortho = orthogonalize(
                    torch.stack([u for _, u in pairs]), group["ns_steps"], bf16=group.get("ns_bf16", False)
                )
                for (p, _), o in zip(pairs, ortho):
                    p.add_(o, alpha=-lr * 0.2 * math.sqrt(max(shape[0], shape[1])))
        return loss


def param_groups(model: torch.nn.Module) -> dict[str, list[tuple[str, torch.nn.Parameter]]]:
    """Split parameters the way both optimizers need: 'hidden' 2-D matrices inside the blocks (Muon's; the
    MoE router excluded), 'embed' (wte = the tied head, wpe, router: 2-D but not hidden matrices), and
    'vector' (biases, norm gains: never weight-decayed)."""
    out: dict[str, list] = {"hidden": [], "embed": [], "vector": []}
    for name, p in model.named_parameters():  # named_parameters() yields the tied wte/lm_head once
        if not p.requires_grad:
            continue
        if p.dim() < 2:
            out["vector"].append((name, p))
        elif name.startswith("transformer.h.") and not name.endswith("mlp.gate.weight"):
            out["hidden"].append((name, p))
        else:
            out["embed"].append((name, p))
    return out


def configure_optimizers(
    model: torch.nn.Module,
    optimizer: str = "adamw",
    lr: float = 6e-4,
    weight_decay: float = 0.1,
    betas: tuple[float, float] = (0.9, 0.95),
    *,
    momentum: float = 0.95,
    ns_bf16: bool = False,
) -> torch.optim.Optimizer:
    """Pretraining's optimizer (iclaw pretrain, bench arch).

    adamw: nanoGPT's recipe, weight decay on every >= 2-D tensor, none on vectors.
    muon:  Muon (same lr and weight decay, see the module docstring) on the hidden matrices; AdamW on
           embeddings/head/router (decayed) and vectors (not decayed)."""
    groups = param_groups(model)
    if optimizer == "adamw":
        decay = [p for _, p in groups["hidden"] + groups["embed"]]
        no_decay = [p for _, p in groups["vector"]]
        fused = all(p.is_cuda for p in decay + no_decay)
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=lr,
            betas=betas,
            fused=fused or None,
        )
    if optimizer == "muon":
        specs = [
            {"params": [p for _, p in groups["hidden"]], "muon": True, "weight_decay": weight_decay},
            {"params": [p for _, p in groups["embed"]], "muon": False, "weight_decay": weight_decay},
            {"params": [p for _, p in groups["vector"]], "muon": False, "weight_decay": 0.0},
        ]
        return Muon([s for s in specs if s["params"]], lr=lr, momentum=momentum, betas=betas, ns_bf16=ns_bf16)
    from iclaw.errors import IclawError

    raise IclawError(f"--optimizer {optimizer!r}: choose adamw or muon")

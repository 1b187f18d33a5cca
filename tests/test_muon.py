"""Muon: Newton-Schulz gives a near-orthogonal update; parameter grouping; state round-trips."""

import torch

from iclaw.model.gpt import GPT, GPTConfig
from iclaw.train.optim import Muon, configure_optimizers, orthogonalize


def test_newton_schulz_is_close_to_orthogonal():
    torch.manual_seed(0)
    for shape in ((32, 32), (16, 48), (48, 16)):
        # a badly conditioned matrix: singular values spread over 2 orders of magnitude
        u, _ = torch.linalg.qr(torch.randn(shape[0], shape[0]))
        v, _ = torch.linalg.qr(torch.randn(shape[1], shape[1]))
        k = min(shape)
        s = torch.logspace(-1, 1, k)
        G = u[:, :k] @ torch.diag(s) @ v[:, :k].T
        sv = torch.linalg.svdvals(orthogonalize(G))
        assert sv.min() > 0.6 and sv.max() < 1.25, sv


def test_a_stack_is_orthogonalised_matrix_by_matrix():
    """Muon orthogonalises same-shaped updates as one stack: each comes out as it would alone."""
    torch.manual_seed(0)
    for shape in ((3, 16, 48), (2, 48, 16)):
        G = torch.randn(shape) * torch.tensor([1.0, 10.0, 0.1][: shape[0]])[:, None, None]
        together = orthogonalize(G)
        for i in range(shape[0]):
            torch.testing.assert_close(together[i], orthogonalize(G[i]), atol=2e-2, rtol=0)


def test_muon_step_is_orthogonal_update_with_adamw_rms():
    torch.manual_seed(0)
    W = torch.nn.Parameter(torch.randn(24, 40))
    b = torch.nn.Parameter(torch.zeros(40))
    opt = Muon([{"params": [W], "muon": True}, {"params": [b], "muon": False}], lr=0.01)
    W0 = W.detach().clone()
    W.grad = torch.randn(24, 40) * torch.logspace(-3, 0, 40)  # very uneven gradient
    b.grad = torch.randn(40)
    opt.step()
    step = (W0 - W.detach()) / (0.01 * 0.2 * 40**0.5)
    sv = torch.linalg.svdvals(step)
    assert sv.min() > 0.6 and sv.max() < 1.25  # every direction moves about equally
    # RMS of the update ~ 0.2 * lr for a wide range of shapes (what lets Muon reuse AdamW's lr)
    rms = (W0 - W.detach()).pow(2).mean().sqrt() / 0.01
    assert 0.12 < rms < 0.3
    assert torch.allclose(b.detach(), -0.01 * torch.sign(b.grad), atol=1e-4)  # AdamW's first step: lr * sign


def test_configure_optimizers_groups_and_state_dict():
    cfg = GPTConfig(
        block_size=32, vocab_size=256, n_layer=2, n_head=2, n_embd=32, mlp="moe", n_routed_experts=4
    )
    m = GPT(cfg)
    opt = configure_optimizers(m, "muon", lr=1e-3, weight_decay=0.1)
    ids = {id(p): n for n, p in m.named_parameters()}
    groups = [(g["muon"], g["weight_decay"], {ids[id(p)] for p in g["params"]}) for g in opt.param_groups]
    muon_names = groups[0][2]
    assert groups[0][0] and all(n.startswith("transformer.h.") for n in muon_names)
    assert not any(n.endswith("gate.weight") for n in muon_names)  # the router stays on AdamW
    assert "transformer.wte.weight" in groups[1][2] and not groups[1][0]
    assert groups[2][1] == 0.0 and all(m.get_parameter(n).dim() == 1 for n in groups[2][2])
    assert sum(len(g[2]) for g in groups) == len(list(m.parameters()))
    # a step, then the state survives a save/load round trip into a fresh optimizer
    x = torch.randint(0, 256, (2, 16))
    m(x[:, :-1], x[:, 1:])[1].backward()
    opt.step()
    opt2 = configure_optimizers(m, "muon", lr=1e-3, weight_decay=0.1)
    opt2.load_state_dict(opt.state_dict())
    p = next(iter(opt.param_groups[0]["params"]))
    assert torch.equal(opt2.state[p]["momentum_buffer"], opt.state[p]["momentum_buffer"])
    adamw = configure_optimizers(m, "adamw")
    assert isinstance(adamw, torch.optim.AdamW) and len(adamw.param_groups) == 2

"""Adam's preconditioner in the edge-of-stability observables, pinned by hand and by torch.

``P = sqrt(v^_t) + eps`` with ``v^_t`` the bias-corrected second moment including this step's
gradient (``t`` counted after the increment, as torch does). Checked against torch's own state
after the step, against the first step's known answer ``P = |g| + eps``, and through the two
first records of ``run_edge`` recomputed here by hand (one Adam step written out; the
Hessian-vector products by double backward, checked against finite differences in
``test_adam_edge.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.adam import adam_preconditioner
from gaugedyn.experiments.adam_stability._edge import _flat, _setup, run_edge, threshold


def _model_and_loss(seed=0):
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    net = net.double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    x = torch.randn(10, 3, generator=g, dtype=torch.float64)
    y = torch.randn(10, 1, generator=g, dtype=torch.float64)
    return net, lambda: ((net(x) - y) ** 2).mean()


def test_threshold_is_the_heavy_ball_edge():
    assert threshold(0.9) == pytest.approx(38.0, rel=1e-14)
    assert threshold(0.5) == pytest.approx(6.0, rel=1e-14)


OPTIMIZERS = {
    "Adam": (torch.optim.Adam, 0.0),
    "Adam, coupled decay": (torch.optim.Adam, 0.3),
    "AdamW, decoupled decay": (torch.optim.AdamW, 0.3),
}


@pytest.mark.parametrize("kind", list(OPTIMIZERS))
@pytest.mark.parametrize("before", [0, 1, 4])
def test_preconditioner_equals_torchs_bias_corrected_state_after_the_step(before, kind):
    beta2, eps = 0.95, 1e-3
    net, loss = _model_and_loss(1)
    params = list(net.parameters())
    cls, wd = OPTIMIZERS[kind]
    opt = cls(params, lr=1e-2, betas=(0.8, beta2), eps=eps, weight_decay=wd)
    for _ in range(before):
        opt.zero_grad()
        loss().backward()
        opt.step()
    grads = torch.autograd.grad(loss(), params)
    P = adam_preconditioner(opt, grads)
    if before == 0 and wd == 0:  # known answer: v^_1 = g^2
        torch.testing.assert_close(P, _flat(grads).abs() + eps, rtol=1e-14, atol=0)
    for p, g in zip(params, grads):  # the same from .grad
        p.grad = g.clone()
    torch.testing.assert_close(adam_preconditioner(opt), P, rtol=0, atol=0)
    for p, g in zip(params, grads):
        p.grad = g.clone()
    opt.step()
    want = []
    for p in params:
        st = opt.state[p]
        assert int(st["step"]) == before + 1
        want.append((st["exp_avg_sq"] / (1 - beta2 ** int(st["step"]))).sqrt() + eps)
    torch.testing.assert_close(P, _flat(want), rtol=1e-13, atol=0)


def test_the_preconditioner_refuses_what_it_cannot_read():
    from gaugedyn import InputError

    net, _ = _model_and_loss(1)
    with pytest.raises(InputError, match="SGD"):
        adam_preconditioner(torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(InputError, match="1 grads"):
        adam_preconditioner(torch.optim.Adam(net.parameters()), [torch.zeros(1)])


def test_first_two_records_of_run_edge_by_hand():
    lr, beta1, beta2, eps, seed, n = 1e-2, 0.5, 0.9, 1e-8, 3, 32
    out = run_edge("mse", lr, beta1, beta2, 2, seed, n_samples=n, lanczos_every=1000, eps=eps)
    model, fn = _setup("mse", n, seed)
    params = list(model.parameters())

    def grad_at(theta):
        torch.nn.utils.vector_to_parameters(theta, params)
        return _flat(torch.autograd.grad(fn(), params)).detach()

    def hvp(theta, d):  # double backward (exact across ReLU kinks, unlike differences)
        torch.nn.utils.vector_to_parameters(theta, params)
        g = _flat(torch.autograd.grad(fn(), params, create_graph=True))
        return _flat(torch.autograd.grad(g @ d, params)).detach()

    th0 = _flat(params).detach().clone()
    g0 = grad_at(th0)
    P0 = g0.abs() + eps  # v^_1 = g0^2
    d0 = g0 / P0
    kappa0 = float(d0 @ hvp(th0, d0) / (d0 @ (P0 * d0)))
    th1 = th0 - lr * g0 / (g0.abs() + eps)  # Adam's first step: m^ = g0, v^ = g0^2
    g1 = grad_at(th1)
    v1 = beta2 * (1 - beta2) * g0 * g0 + (1 - beta2) * g1 * g1
    P1 = (v1 / (1 - beta2**2)).sqrt() + eps
    d1 = g1 / P1
    kappa1 = float(d1 @ hvp(th1, d1) / (d1 @ (P1 * d1)))
    dth = th1 - th0
    secant1 = float(dth @ (g1 - g0) / (dth @ (P1 * dth)))
    cosine1 = float(g1 @ g0 / (g1.norm() * g0.norm()))
    np.testing.assert_allclose(out["kappa_g"], [kappa0, kappa1], rtol=1e-9)
    assert np.isnan(out["secant"][0]) and out["secant"][1] == pytest.approx(secant1, rel=1e-6)
    assert out["cosine"][1] == pytest.approx(cosine1, rel=1e-9)
    assert out["threshold"] == pytest.approx(2 * (1 + beta1) / (1 - beta1))

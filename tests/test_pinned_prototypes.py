"""The prototype model's initialisation law and training length, pinned.

The law (``w ~ N(0, n^2)``, ``a ~ N(0, 1/n)``, ``c = 0``; ``b = -w u`` with ``u ~ U[0, 1]`` or
``b ~ N(0, n^2)``) is written here a second time on the same generator stream, and checked in
law on a large draw; ``train(steps=k)`` is checked against ``k`` steps of ``torch.optim.Adam`` on
the autograd loss written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from gaugedyn.experiments.prototypes import Runs, initial_parameters, prototypes_of, train


def _reference_init(seed, n, init):
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, n, size=n)
    b = -w * rng.uniform(0.0, 1.0, size=n) if init == "inside" else rng.normal(0.0, n, size=n)
    a = rng.normal(0.0, 1.0 / np.sqrt(n), size=n)
    return {"w": w, "b": b, "a": a}


@pytest.mark.parametrize("init", ["inside", "broad"])
@pytest.mark.parametrize("n", [3, 40])
def test_initial_parameters_follow_the_law_on_the_same_stream(init, n):
    got = initial_parameters(np.random.default_rng(9), n, init)
    want = _reference_init(9, n, init)
    for key in "wba":
        np.testing.assert_allclose(got[key], want[key], rtol=1e-14, atol=0)
    assert got["c"].shape == () and float(got["c"]) == 0.0


def test_initial_parameters_in_law():
    """Scales on a width of 20,000 (5 standard errors), and the prototypes' laws by
    Kolmogorov-Smirnov at level 1e-3: uniform on [0, 1] (inside), standard Cauchy (broad)."""
    n = 20_000
    inside = initial_parameters(np.random.default_rng(1), n, "inside")
    broad = initial_parameters(np.random.default_rng(2), n, "broad")
    se = np.sqrt(2.0 / n)  # relative standard error of a sample variance
    for p in (inside, broad):
        assert abs(np.var(p["w"]) / n**2 - 1) < 5 * se
        assert abs(np.var(p["a"]) * n - 1) < 5 * se
    assert abs(np.var(broad["b"]) / n**2 - 1) < 5 * se
    assert stats.kstest(prototypes_of(inside["w"], inside["b"]), "uniform").pvalue > 1e-3
    assert stats.kstest(prototypes_of(broad["w"], broad["b"]), "cauchy").pvalue > 1e-3


def _runs(seed, B=3, N=5):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 1, (B, N)), axis=1)
    p0 = [initial_parameters(rng, N, "inside") for _ in range(B)]
    return Runs(
        x=x,
        y=np.sin(2 * np.pi * x),
        w=np.stack([q["w"] for q in p0]),
        b=np.stack([q["b"] for q in p0]),
        a=np.stack([q["a"] for q in p0]),
        c=np.zeros(B),
        mask=np.zeros((B, 3)),
        chamfer=np.zeros(B),
        tau=np.full(B, 0.1),
    )


@pytest.mark.parametrize("steps", [1, 3])
def test_train_takes_exactly_the_stated_number_of_adam_steps(steps):
    """With the structural losses masked off, ``L = mean_j (f(x_j) - y_j)^2`` per run; ``steps``
    steps of torch's Adam on the sum over runs, through autograd, must give the same weights,
    and the recorded fits are the loss at 0 and after ``steps`` steps."""
    runs, lr = _runs(4), 0.05
    out = train(runs, steps=steps, lr=lr, weight=0.0, dtype=torch.float64, record=(0, steps))
    params = [
        torch.tensor(getattr(runs, k), dtype=torch.float64, requires_grad=True) for k in "wbac"
    ]
    x, y = (torch.tensor(v, dtype=torch.float64) for v in (runs.x, runs.y))
    opt = torch.optim.Adam(params, lr=lr)

    def fit():
        w, b, a, c = params
        h = torch.exp(-0.5 * (w[:, :, None] * x[:, None, :] + b[:, :, None]) ** 2)
        return ((torch.einsum("bn,bnm->bm", a, h) + c[:, None] - y) ** 2).mean(dim=1)

    first = fit().detach().numpy()
    for _ in range(steps):
        opt.zero_grad()
        fit().sum().backward()
        opt.step()
    for key, p in zip("wbac", params):
        np.testing.assert_allclose(out[key], p.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["fit_history"][0], first, rtol=1e-12)
    np.testing.assert_allclose(out["fit_history"][1], fit().detach().numpy(), rtol=1e-10)

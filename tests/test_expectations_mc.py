"""Every closed-form Gaussian expectation against Monte Carlo, within 4 standard errors.

Configurations (>= 20 per form) mix nearly aligned, orthogonal, nearly opposite and random
weight vectors with unequal norms; one fixed numpy Generator drives everything.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf

from gaugedyn.symbolic._gaussian_relu import numeric
from gaugedyn.theory import _generated_kernels as gk

D = 4
N_SAMPLES = 200_000
N_CONFIGS = 24
KINDS = ("aligned", "orthogonal", "opposite", "random")


def relu(z):
    return np.maximum(z, 0.0)


def g_erf(z):
    return erf(z / np.sqrt(2.0))


def dg_erf(z):
    return np.sqrt(2.0 / np.pi) * np.exp(-(z**2) / 2)


def _unit(rng):
    v = rng.normal(size=D)
    return v / np.linalg.norm(v)


def _pair(rng, kind):
    """Two vectors with the given relative orientation and unequal random norms."""
    u = _unit(rng)
    p = _unit(rng)
    p -= (p @ u) * u
    p /= np.linalg.norm(p)
    angle = {
        "aligned": rng.uniform(1e-3, 0.05),
        "orthogonal": np.pi / 2 + rng.uniform(-1e-3, 1e-3),
        "opposite": np.pi - rng.uniform(0.02, 0.1),  # >= ~600 samples in the active wedge
        "random": rng.uniform(0, np.pi),
    }[kind]
    v = np.cos(angle) * u + np.sin(angle) * p
    return u * rng.uniform(0.3, 3.0), v * rng.uniform(0.3, 3.0)


def _configs(rng, count, n_vectors):
    """``count`` stacks of ``n_vectors`` vectors; the first pair has the prescribed geometry."""
    out = []
    for i in range(count):
        u, v = _pair(rng, KINDS[i % len(KINDS)])
        rest = [rng.normal(size=D) * rng.uniform(0.3, 2.0) for _ in range(n_vectors - 2)]
        if n_vectors >= 3 and i % 3 == 0:  # a further vector nearly aligned with u
            rest[0] = u * rng.uniform(0.5, 2.0) + 0.02 * rng.normal(size=D)
        out.append(np.array([u, v, *rest]))
    return out


@pytest.fixture()
def rng(request):
    """A fresh generator per test (deterministic under any test order or xdist split)."""
    return np.random.default_rng([20261129, len(request.node.name)])


def assert_mc(samples, exact, label):
    """``samples``: (n,) or (n, k) Monte Carlo draws; ``exact``: the closed form."""
    samples = np.asarray(samples, dtype=np.float64)
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(samples.shape[0])
    gap = np.abs(mean - np.asarray(exact))
    assert np.all(gap <= 4 * se + 1e-12), f"{label}: |MC - exact| = {gap} > 4 SE = {4 * se}"


def _x(rng):
    return rng.standard_normal((N_SAMPLES, D))


def test_relu_forms_against_monte_carlo(rng):
    f = numeric()
    for cfg in _configs(rng, N_CONFIGS, 3):
        u, v, w = cfg
        x = _x(rng)
        lu, lv, lw = x @ u, x @ v, x @ w
        q1, q2, c = u @ u, v @ v, u @ v
        assert_mc(relu(lu) * relu(lv), f["pair"](q1, q2, c), "E[relu relu]")
        assert_mc(relu(lu) * relu(lv), gk.pair_relu(q1, q2, c), "generated pair_relu")
        assert_mc((lu > 0) * (lv > 0), f["dkernel"](q1, q2, c), "E[relu' relu']")
        assert_mc((lu > 0)[:, None] * relu(lv)[:, None] * x, f["tian"](u, v), "Tian gradient")
        assert_mc(relu(lu), f["mean"](q1), "E[relu(u.x)]")
        assert_mc(relu(lu)[:, None] * x, f["first_moment"](u), "E[relu(u.x) x]")
        assert_mc(relu(lu) ** 2, f["self"](q1), "E[relu^2]")
        Q = cfg @ cfg.T
        # E[relu'(l_i) l_k relu(l_j)] with (i, j, k) = (u, v, w)
        exact = f["cross"](Q[0, 0], Q[1, 1], Q[0, 1], Q[2, 0], Q[2, 1])
        assert_mc((lu > 0) * lw * relu(lv), exact, "E[relu'(l_i) l_k relu(l_j)]")


def test_erf_forms_against_monte_carlo(rng):
    for cfg in _configs(rng, N_CONFIGS, 4):
        x = _x(rng)
        lam = x @ cfg.T
        C = cfg @ cfg.T
        l1, l2, l3, l4 = lam.T
        assert_mc(g_erf(l1) * g_erf(l2), gk.pair_erf(C[0, 0], C[1, 1], C[0, 1]), "I2")
        assert_mc(g_erf(l1) ** 2, gk.self_erf(C[0, 0]), "erf self")
        assert_mc(dg_erf(l1) * dg_erf(l2), gk.erf_j2(C[0, 0], C[0, 1], C[1, 1]), "J2")
        i3 = gk.erf_i3(C[0, 0], C[0, 1], C[0, 2], C[1, 1], C[1, 2], C[2, 2])
        assert_mc(dg_erf(l1) * l2 * g_erf(l3), i3, "I3")
        iu = np.triu_indices(4)
        i4 = gk.erf_i4(*C[iu])
        assert_mc(dg_erf(l1) * dg_erf(l2) * g_erf(l3) * g_erf(l4), i4, "I4")


def test_linear_pair_against_monte_carlo(rng):
    for cfg in _configs(rng, N_CONFIGS, 2):
        u, v = cfg
        x = _x(rng)
        assert_mc((x @ u) * (x @ v), gk.pair_linear(u @ u, v @ v, u @ v), "E[u.x v.x]")
        assert_mc((x @ u) ** 2, gk.self_linear(u @ u), "E[(u.x)^2]")


def test_monte_carlo_check_detects_a_wrong_form(rng):
    """The 4-SE criterion has power: a 5% error in the arc-cosine kernel is caught."""
    u, v = _pair(rng, "aligned")
    x = _x(rng)
    exact = gk.pair_relu(u @ u, v @ v, u @ v)
    with pytest.raises(AssertionError):
        assert_mc(relu(x @ u) * relu(x @ v), 1.05 * exact, "perturbed")

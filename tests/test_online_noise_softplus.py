"""Softplus's noise term by the scrambled-Sobol rule with its smoothed-ReLU control variate
(``RELU_MIXTURES``; ``gaugedyn.training._online_ode.relu_mixture_noise`` and the compiled
``_ode_kernels.relu_mixture_noise``): the mixture within its declared error of softplus; the
control's noise term exact (against randomised QMC of the mixture's own integrand, which is
smooth) and wrong when a factor's smoothing variance or a weight is planted wrong; the rule's
difference vanishing node by node where the activation is the mixture; the compiled kernel and
the numpy reference the same estimator to round-off; both paths' trajectories the same to
1e-8."""

import functools

import numpy as np
import pytest
from scipy.stats import norm, qmc

from gaugedyn.theory import Activation, random_problem
from gaugedyn.training import _ode_kernels, _online_ode, online_ode
from gaugedyn.training._online_ode import (
    RELU_MIXTURES,
    mixture_values,
    noise_term,
    quadrature_noise,
    relu_mixture_noise,
    rule_control,
    sobol_expectation,
)


def _gram(Q, R, T):
    return np.block([[Q, R], [R.T, T]])


@functools.lru_cache(maxsize=2)
def _state(K):
    """``(a, b, C)`` of softplus's random problem at K = M (``random_problem(50, ...)``)."""
    problem = random_problem(50, K, K, np.random.default_rng(0), activation="softplus")
    a, Q, R, b, T = problem.order_parameters()
    return a, b, _gram(Q, R, T)


def _mixture_rqmc(control, a, b, C, log2=16, seeds=6):
    """``E[h'(u_i) h'(u_k) e_h^2]`` of the mixture ``control`` by randomised QMC (``seeds``
    scramblings of ``2^log2`` points on the eigen factor): mean and standard error."""
    K = a.shape[0]
    lam, U = np.linalg.eigh(C)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    runs = []
    for seed in range(seeds):
        X = norm.ppf(qmc.Sobol(d=C.shape[0], scramble=True, seed=seed).random_base2(log2)) @ A.T
        H, Hp = mixture_values(control, X)
        e = H[:, :K] @ a - H[:, K:] @ b
        G = Hp[:, :K]
        runs.append((G * (e * e)[:, None]).T @ G / X.shape[0])
    runs = np.array(runs)
    return runs.mean(axis=0), runs.std(axis=0, ddof=1) / np.sqrt(seeds)


def test_the_declared_mixture_is_close_to_softplus():
    """`RELU_MIXTURES`' softplus entry: weights summing to 1 (softplus's limits) and within
    1.3e-3 of softplus, its derivative within 9.5e-4 of the logistic (its declaration)."""
    control = rule_control("sobol", "softplus")
    assert control.shape == (3, 2) and np.all(control[2] == 1.0)
    assert control[0].sum() == pytest.approx(1.0, abs=1e-12)
    x = np.linspace(-8.0, 8.0, 4001)
    h, d = mixture_values(control, x)
    assert np.abs(np.logaddexp(0.0, x) - h).max() < 1.3e-3
    assert np.abs(0.5 * (1.0 + np.tanh(x / 2.0)) - d).max() < 9.5e-4


def test_the_compiled_mixture_is_the_numpy_one():
    """`_ode_kernels.mixture` (the control's value and slope node by node) equals
    `mixture_values` (and so the smoothed ReLU ``x Phi(x / s) + s phi(x / s)``) to round-off."""
    control = rule_control("sobol", "softplus")
    x = np.linspace(-9.0, 9.0, 181)
    h, d = mixture_values(control, x)
    got = np.array([_ode_kernels.mixture(control, v) for v in x])
    np.testing.assert_allclose(got[:, 0], h, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(got[:, 1], d, rtol=1e-14, atol=1e-15)
    w, s = control[0], control[1]
    direct = sum(w[j] * (x * norm.cdf(x / s[j]) + s[j] * norm.pdf(x / s[j])) for j in range(2))
    np.testing.assert_allclose(h, direct, rtol=1e-13, atol=1e-15)


def test_the_controls_noise_term_is_exact():
    """K = M = 2: the mixture's noise term by orthant moments (numpy and compiled) within
    four standard errors (plus 1e-5 of its largest entry) of randomised QMC of its own smooth
    integrand."""
    a, b, C = _state(2)
    control = rule_control("sobol", "softplus")
    exact = relu_mixture_noise(control, a, b, C)
    E = np.zeros((2, 2))
    _ode_kernels.relu_mixture_noise(C, np.concatenate([a, -b]), 2, control, E)
    np.testing.assert_allclose(np.triu(E) + np.triu(E, 1).T, exact, rtol=1e-13)
    ref, se = _mixture_rqmc(control, a, b, C)
    scale = np.abs(ref).max()
    assert np.all(np.abs(exact - ref) <= 4 * se + 1e-5 * scale)


@pytest.mark.parametrize("plant", ["variance", "weight"])
def test_a_planted_control_is_caught(plant):
    """The same comparison fails where each factor's smoothing variance is ``s`` instead of
    ``s^2`` (the mixture's scales moved in the exact term only) or where a weight is missing
    from the exact term: the known answer separates them."""
    a, b, C = _state(2)
    control = rule_control("sobol", "softplus")
    planted = control.copy()
    if plant == "variance":
        planted[1] = np.sqrt(control[1])
    else:
        planted[0, 1] = 0.0
    wrong = relu_mixture_noise(planted, a, b, C)
    ref, se = _mixture_rqmc(control, a, b, C)
    assert np.any(np.abs(wrong - ref) > 4 * se + 1e-5 * np.abs(ref).max())


def test_the_difference_vanishes_where_the_activation_is_the_mixture(monkeypatch):
    """An activation that is the mixture itself, declared as its own control: the rule's mean
    of the difference vanishes node by node and `sobol_expectation` is the control's exact
    noise term to round-off; a control 1% off in one scale (still unbiased) is not exact."""
    import torch

    control = rule_control("sobol", "softplus")
    w, s = (tuple(float(v) for v in row) for row in control[:2])

    def h(x):
        return sum(
            wj
            * (
                x * torch.special.ndtr(x / sj)
                + sj * torch.exp(-0.5 * (x / sj) ** 2) / np.sqrt(2 * np.pi)
            )
            for wj, sj in zip(w, s, strict=True)
        )

    def dh(x):
        return sum(wj * torch.special.ndtr(x / sj) for wj, sj in zip(w, s, strict=True))

    act = Activation("smoothed_relu_mixture", h, dh)
    a, b, C = _state(2)
    exact = relu_mixture_noise(control, a, b, C)
    monkeypatch.setattr(_online_ode, "RELU_MIXTURES", {act.name: (w, s)})
    got = sobol_expectation(act, None, a, b, C)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-13 * np.abs(exact).max())
    monkeypatch.setattr(_online_ode, "RELU_MIXTURES", {act.name: (w, (s[0] * 1.01, s[1]))})
    off = sobol_expectation(act, None, a, b, C)
    assert np.abs(off - exact).max() > 1e-9 * np.abs(exact).max()


@pytest.mark.parametrize("K", [2, 4])
def test_compiled_and_numpy_are_the_same_estimator(K):
    """The compiled noise term (`quadrature_noise`) and `noise_term`'s numpy one (the control's
    exact term plus the rule's mean of the difference) agree to round-off, and the method is
    the Sobol rule with 2^SOBOL_LOG2["softplus"] nodes."""
    problem = random_problem(50, K, K, np.random.default_rng(0), activation="softplus")
    a, Q, R, b, T = problem.order_parameters()
    assert _online_ode.noise_method("softplus") == "sobol"
    ref = noise_term(a, Q, R, b, T, "softplus")
    got = quadrature_noise("softplus", None, a, Q, R, b, T)
    size = np.abs(a).max() ** 2 * (np.abs(a).sum() + np.abs(b).sum()) ** 2
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * size)
    assert _online_ode.rule_nodes("sobol", 2 * K, "softplus").shape == (
        2 ** _online_ode.SOBOL_LOG2["softplus"],
        2 * K,
    )


def test_the_trajectory_of_both_paths_agrees():
    """K = M = 2 to t = 3 at tight tolerances: the compiled path (LSODA) and the numpy
    reference (DOP853) on the same rule agree to 1e-8."""
    problem = random_problem(20, 2, 2, np.random.default_rng(6), activation="softplus")
    ts = np.array([0.0, 1.0, 3.0])
    kw = {"rtol": 1e-11, "atol": 1e-13, "noise_check": "off"}
    fast = online_ode(problem, 1.0, ts, method="compiled", **kw)
    ref = online_ode(problem, 1.0, ts, method="reference", **kw)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)


def test_the_declaration_is_the_one_read():
    """`RELU_MIXTURES` is what `rule_control` reads (family 1, `CONTROL_FAMILIES`)."""
    w, s = RELU_MIXTURES["softplus"]
    control = rule_control("sobol", "softplus")
    np.testing.assert_array_equal(control[:2], [w, s])
    assert _online_ode.CONTROL_FAMILIES[int(control[2, 0])] == "smoothed_relu"
    assert rule_control("quadrature", "softplus").shape == (3, 0)


def test_the_stored_orthant_probabilities_change_no_bit():
    """The compiled control term at K = 2, M = 3 (fields of two sizes): with the orthant
    probabilities stored by their multisets and computed afresh for every moment the same
    bits (`smoothed_orthant4` takes the factors in their keys' order), and both the numpy
    twin's sum of every term to round-off."""
    problem = random_problem(50, 2, 3, np.random.default_rng(4), activation="softplus")
    a, Q, R, b, T = problem.order_parameters()
    C = np.ascontiguousarray(_gram(Q, R, T))
    c = np.concatenate([a, -b])
    control = rule_control("sobol", "softplus")
    stored, fresh = np.zeros((2, 2)), np.zeros((2, 2))
    _ode_kernels.mixture_sums(C, c, 2, control, stored, True)
    _ode_kernels.mixture_sums(C, c, 2, control, fresh, False)
    np.testing.assert_array_equal(stored, fresh)
    twin = relu_mixture_noise(control, a, b, C)
    np.testing.assert_allclose(np.triu(stored) + np.triu(stored, 1).T, twin, rtol=1e-13)

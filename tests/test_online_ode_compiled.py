"""The compiled online ODE of every compiled activation other than erf
(``gaugedyn.training._ode_kernels``) against the numpy reference ``OnlineODE``: the right-hand
sides on the direct rule (fields of rank <= 4) and the four-point rule (rank 5), with and
without the classical options, and whole trajectories."""

import numpy as np
import pytest

from gaugedyn.theory import ACTIVATIONS, random_problem
from gaugedyn.training import OnlineODE, online_ode
from gaugedyn.training._online_ode import compiled_rhs

COMPILED = [a.name for a in ACTIVATIONS.values() if a.compiled and a.name != "erf"]
OPTIONS = dict(weight_decay=0.1, lr2=0.5, label_noise=0.3)


def _states(problem, rng, n):
    a0, Q0, R0, _, _ = problem.order_parameters()
    K, M = R0.shape
    for _ in range(n):
        Q = Q0 + 0.05 * rng.standard_normal((K, K))
        yield np.concatenate(
            [
                a0 + 0.1 * rng.standard_normal(K),
                ((Q + Q.T) / 2).ravel(),
                (R0 + 0.05 * rng.standard_normal((K, M))).ravel(),
            ]
        )


def _pair(problem, name, options, eta=0.7, batch=2):
    _, _, R0, b, T = problem.order_parameters()
    K, M = R0.shape
    opts = dict(weight_decay=0.0, lr2=1.0, label_noise=0.0) | options
    ref = OnlineODE(K, M, b, T, name, eta, batch, True, **opts)
    return compiled_rhs(K, M, b, T, eta, batch, True, activation=name, **opts), ref


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_rhs_is_the_reference_on_the_direct_rule(name):
    """K = M = 2 (rank 4: one Gauss-Hermite rule for the whole noise term): round-off agreement,
    with and without the options; the options move the right-hand side by far more."""
    problem = random_problem(30, 2, 2, np.random.default_rng(2), activation=name)
    rng = np.random.default_rng(3)
    for options in ({}, OPTIONS):
        f, ref = _pair(problem, name, options)
        for y in _states(problem, rng, 2):
            r = ref(0.0, y)
            np.testing.assert_allclose(f(0.0, y), r, rtol=0, atol=1e-11 * np.abs(r).max())
    y = next(_states(problem, rng, 1))
    f0, _ = _pair(problem, name, {})
    _, ref1 = _pair(problem, name, OPTIONS)
    assert np.abs(f0(0.0, y) - ref1(0.0, y)).max() > 1e-4 * np.abs(ref1(0.0, y)).max()


@pytest.mark.parametrize("name", ["tanh", "softplus", "leaky_relu"])
def test_compiled_rhs_is_the_reference_on_the_four_point_rule(name):
    """K = 3, M = 2 (rank 5: the noise term by four-point integrals, repeated fields among
    them): round-off agreement with the options."""
    problem = random_problem(30, 3, 2, np.random.default_rng(4), activation=name)
    f, ref = _pair(problem, name, OPTIONS)
    y = next(_states(problem, np.random.default_rng(5), 1))
    r = ref(0.0, y)
    np.testing.assert_allclose(f(0.0, y), r, rtol=0, atol=1e-11 * np.abs(r).max())


@pytest.mark.parametrize("name", ["tanh", "softplus", "leaky_relu"])
def test_compiled_trajectory_is_the_reference_trajectory(name):
    """K = M = 1 to t = 4 at tight tolerances: the compiled path (LSODA) and the reference
    (DOP853) agree to 1e-8 with the options."""
    problem = random_problem(20, 1, 1, np.random.default_rng(6), activation=name)
    times = np.concatenate([[0.0], np.geomspace(1e-2, 4.0, 8)])
    kw = dict(rtol=1e-11, atol=1e-13)
    for options in (OPTIONS,):
        fast = online_ode(problem, 0.8, times, **kw, **options)
        ref = online_ode(problem, 0.8, times, method="reference", **kw, **options)
        for key in ("a", "Q", "R"):
            np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)

"""The smooth activations' noise term at full rank (K = M = 4, fields of rank 8) against Monte
Carlo, which forms ``e`` draw by draw so that nothing cancels: softplus's four-point rule within
four standard errors, tanh's scrambled-Sobol rule within four standard errors and 2% of the term
(``benchmarks/bench_online_noise_accuracy.py`` measures both at more states); and the compiled
noise term's invariance under a permutation of the students."""

import functools

import numpy as np
import pytest

from gaugedyn.theory import activation_of, on_numpy, random_problem
from gaugedyn.training import online_ode
from gaugedyn.training._online_ode import compiled_rhs


def _state(name, t):
    """``(a, Q, R, b, T)`` of the random problem after the noise-free flow to ``t``."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    a, Q, R, b, T = problem.order_parameters()
    if t > 0:
        sol = online_ode(problem, 1.0, np.array([0.0, t]), noise=False)
        a, Q, R = sol["a"][-1], sol["Q"][-1], sol["R"][-1]
    return a, Q, R, b, T


def _compiled_noise(name, a, Q, R, b, T):
    """``a_i a_k E_ik``: the compiled right-hand side's ``dQ`` with the noise term less without
    (eta = 1, batch 1)."""
    K, M = R.shape
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    with_noise = compiled_rhs(K, M, b, T, 1.0, 1, True, activation=name)(0.0, y)
    without = compiled_rhs(K, M, b, T, 1.0, 1, False, activation=name)(0.0, y)
    return (with_noise - without)[K : K + K * K].reshape(K, K)


@functools.lru_cache(maxsize=4)
def _monte_carlo_at(name, t, samples, seed):
    """`_monte_carlo` at `_state(name, t)`, kept: the softplus check and its control share it."""
    return _monte_carlo(name, *_state(name, t), samples, np.random.default_rng(seed))


def _monte_carlo(name, a, Q, R, b, T, samples, rng):
    """``a_i a_k E[g'(u_i) g'(u_k) e^2]`` by Monte Carlo: mean and standard error."""
    act = activation_of(name)
    g, gp = on_numpy(act.function), on_numpy(act.derivative)
    C = np.block([[Q, R], [R.T, T]])
    lam, U = np.linalg.eigh((C + C.T) / 2)
    A = U * np.sqrt(np.maximum(lam, 0.0))
    K = a.shape[0]
    s1, s2, n = np.zeros((K, K)), np.zeros((K, K)), 0
    while n < samples:
        X = rng.standard_normal((100_000, C.shape[0])) @ A.T
        e = g(X[:, :K]) @ a - g(X[:, K:]) @ b
        G = gp(X[:, :K]) * a
        Y = G[:, :, None] * G[:, None, :] * (e * e)[:, None, None]
        s1 += Y.sum(0)
        s2 += (Y * Y).sum(0)
        n += X.shape[0]
    mean = s1 / n
    return mean, np.sqrt((s2 / n - mean * mean) / n)


@pytest.mark.parametrize("t", [0.0, 1000.0])
def test_softplus_noise_term_within_four_standard_errors_of_monte_carlo(t):
    state = _state("softplus", t)
    got = _compiled_noise("softplus", *state)
    mean, se = _monte_carlo_at("softplus", t, 1_000_000, 5)
    assert np.all(np.abs(got - mean) <= 4 * se)


def test_monte_carlo_check_sees_a_wrong_noise_term():
    """The check above fails for the noise term of a teacher 2% off (its power)."""
    a, Q, R, b, T = _state("softplus", 0.0)
    got = _compiled_noise("softplus", a, Q, R, 1.02 * b, T)
    mean, se = _monte_carlo_at("softplus", 0.0, 1_000_000, 5)
    assert not np.all(np.abs(got - mean) <= 4 * se)


@pytest.mark.parametrize("t", [0.0, 1000.0])
def test_tanh_noise_term_agrees_with_monte_carlo(t):
    """Tanh's noise term (the scrambled-Sobol rule, `noise_method`) within four standard errors
    of Monte Carlo plus 2% of the term, at the start and once the students fit the teacher
    (where the four-point rule it replaced was off by more than ten times the term); a
    teacher 10% off is caught (the control)."""
    state = _state("tanh", t)
    got = _compiled_noise("tanh", *state)
    mean, se = _monte_carlo("tanh", *state, 400_000, np.random.default_rng(6))
    bar = 4 * se + 0.02 * np.abs(mean).max()
    assert np.all(np.diag(mean) > 20 * np.diag(se))  # Monte Carlo resolves the diagonal
    assert np.all(np.abs(got - mean) <= bar)
    a, Q, R, b, T = state
    assert not np.all(np.abs(_compiled_noise("tanh", a, Q, R, 1.1 * b, T) - mean) <= bar)


@pytest.mark.parametrize(("name", "tol"), [("gelu", 1e-9), ("softplus", 1e-4)])
def test_permuting_the_students_permutes_the_noise_term(name, tol):
    """Gelu's four-point rule to round-off; softplus's Sobol rule within its error (its control's
    exact term permutes exactly, the fixed nodes do not permute with the fields: 6e-6 of the
    largest entry at t = 0, ``bench_noise_qmc.py``)."""
    a, Q, R, b, T = _state(name, 0.0)
    perm = np.array([2, 0, 3, 1])
    got = _compiled_noise(name, a, Q, R, b, T)
    permuted = _compiled_noise(name, a[perm], Q[np.ix_(perm, perm)], R[perm], b, T)
    np.testing.assert_allclose(
        permuted, got[np.ix_(perm, perm)], rtol=0, atol=tol * np.abs(got).max()
    )

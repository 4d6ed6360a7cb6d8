"""Tanh's noise term by the scrambled-Sobol rule (``noise_method() == "sobol"``,
``gaugedyn.training._online_ode.sobol_expectation`` and the compiled
``_ode_kernels.sobol_noise``): exact where the integrand is a polynomial of degree 2 in the
fields (the linear activation, by the centred, whitened nodes), within its stated error of erf's
closed forms, the compiled kernel and the numpy reference the same rule to round-off at the
noise-free flow's states, continuous in the state (the symmetric root, whatever the
eigenvectors' signs), and the trajectories of both paths the same to 1e-8."""

import functools

import numpy as np
import pytest

from gaugedyn.theory import activation_of, random_problem
from gaugedyn.training import _ode_kernels, _online_ode, online_ode
from gaugedyn.training._online_ode import (
    noise_term,
    quadrature_noise,
    sobol_expectation,
    sobol_factor,
    sobol_nodes,
)


@functools.lru_cache(maxsize=1)
def _flow_states():
    """``(b, T, [(a, Q, R)])``: tanh's noise-free flow at t = 0, 10, 100, 1000 (K = M = 4, the
    problem of ``bench_online_noise_accuracy.py``)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="tanh")
    _, _, _, b, T = problem.order_parameters()
    sol = online_ode(problem, 1.0, np.array([0.0, 10.0, 100.0, 1000.0]), noise=False)
    return b, T, [(sol["a"][i], sol["Q"][i], sol["R"][i]) for i in range(4)]


def _gram(Q, R, T):
    return np.block([[Q, R], [R.T, T]])


def _compiled(name, a, b, C):
    """The compiled kernel's Sobol rule for activation ``name`` (any code): ``E`` whole."""
    E = np.zeros((a.shape[0], a.shape[0]))
    one = np.zeros((1, 1))
    _ode_kernels.noise_expectation(
        int(activation_of(name).code),
        False,
        _online_ode.NOISE_METHODS.index("sobol"),
        np.zeros((3, 0)),
        a,
        b,
        np.ascontiguousarray(C),
        np.concatenate([a, -b]),
        one,
        one,
        np.ones(1, dtype=np.int64),
        sobol_nodes(C.shape[0]),
        E,
    )
    return np.triu(E) + np.triu(E, 1).T


def test_the_nodes_are_centred_and_whitened():
    Z = sobol_nodes(8)
    assert Z.shape == (2**_online_ode.SOBOL_LOG2, 8)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-13)
    np.testing.assert_allclose(Z.T @ Z / Z.shape[0], np.eye(8), atol=1e-12)


def test_the_linear_activation_is_exact():
    """``g(z) = z``: ``E_ik = c^T C c`` exactly (degree 2), numpy and compiled."""
    b, T, states = _flow_states()
    a, Q, R = states[0]
    C = _gram(Q, R, T)
    c = np.concatenate([a, -b])
    exact = np.full((4, 4), c @ C @ c)
    np.testing.assert_allclose(sobol_expectation("linear", None, a, b, C), exact, rtol=1e-12)
    np.testing.assert_allclose(_compiled("linear", a, b, C), exact, rtol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_erf_against_its_closed_forms(scale):
    """On erf (``gaugedyn derive``'s closed forms), at a random problem and with its students
    shrunk toward the teacher (``scale``), the rule is within 0.3% of the largest entry (4e-4
    measured at the first)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(3), activation="erf")
    a, Q, R, b, T = problem.order_parameters()
    Q, R = scale**2 * Q + (1 - scale**2) * np.eye(4), scale * R
    exact = noise_term(a, Q, R, b, T, "erf") / np.outer(a, a)
    got = _compiled("erf", a, b, _gram(Q, R, T))
    assert np.abs(got - exact).max() <= 3e-3 * np.abs(exact).max()
    wrong = _compiled("erf", a, 1.01 * b, _gram(Q, R, T))  # the control: a teacher 1% off
    assert np.abs(wrong - exact).max() > 3e-3 * np.abs(exact).max()


def test_compiled_and_numpy_are_the_same_rule():
    """At the noise-free flow's states (t = 0 to 1000; fields of rank 8 down to 4): the
    compiled noise term and `noise_term`'s numpy one agree to round-off."""
    b, T, states = _flow_states()
    for a, Q, R in states:
        ref = noise_term(a, Q, R, b, T, "tanh")
        got = quadrature_noise("tanh", None, a, Q, R, b, T)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-11 * np.abs(ref).max())


def test_the_factor_is_the_symmetric_root_and_continuous():
    """`sobol_factor` is symmetric with ``A A^T = C`` (also where ``C`` is singular); a change of
    ``C`` by 1e-9 moves the noise term by a like amount relative, at the flow's t = 1000 state,
    where eigenvalues of ``C`` lie within 1e-10 of each other (an eigen factor's axes turn
    there)."""
    b, T, states = _flow_states()
    a, Q, R = states[-1]
    C = _gram(Q, R, T)
    A = sobol_factor(C)
    np.testing.assert_allclose(A, A.T, atol=1e-14)
    lam, U = np.linalg.eigh(C)
    np.testing.assert_allclose(A @ A, (U * np.maximum(lam, 0)) @ U.T, atol=1e-12)
    rng = np.random.default_rng(1)
    E0 = sobol_expectation("tanh", None, a, b, C)
    for _ in range(3):
        D = rng.standard_normal((8, 8))
        D[4:, 4:] = 0.0
        E1 = sobol_expectation("tanh", None, a, b, C + 1e-9 * (D + D.T))
        assert np.abs(E1 - E0).max() <= 1e-4 * np.abs(E0).max()


def test_noise_terms_method_sobol_only_where_chosen():
    b, T, states = _flow_states()
    a, Q, R = states[0]
    with pytest.raises(_online_ode.InputError, match="method='sobol' is not allowed"):
        noise_term(a, Q, R, b, T, "softplus", method="sobol")


def test_the_trajectory_of_both_paths_agrees():
    """K = M = 2 to t = 3 at tight tolerances: the compiled path (LSODA) and the numpy
    reference (DOP853) on the same rule agree to 1e-8."""
    problem = random_problem(20, 2, 2, np.random.default_rng(6), activation="tanh")
    times = np.array([0.0, 0.5, 1.5, 3.0])
    kw = dict(rtol=1e-10, atol=1e-12, noise_check="off")
    fast = online_ode(problem, 0.8, times, **kw)
    ref = online_ode(problem, 0.8, times, method="reference", **kw)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)

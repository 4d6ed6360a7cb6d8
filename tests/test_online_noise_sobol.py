"""Tanh's noise term by the scrambled-Sobol rule with its erf-mixture control variate
(``noise_method() == "sobol"``, ``gaugedyn.training._online_ode.sobol_expectation`` and the
compiled ``_ode_kernels.sobol_noise`` and ``mixture_noise``): exact where the integrand is a
polynomial of degree 2 in the fields (the linear activation, by the centred, whitened nodes);
without the control within its stated error of erf's closed forms; the control exact for erf
itself (the difference vanishes) and within the plain rule's error of the plain rule of 2^14
nodes at the flow's states; the compiled kernel and the numpy reference the same rule to
round-off; continuous in the state (the symmetric root, whatever the eigenvectors' signs); the
trajectories of both paths the same to 1e-8; the compiled flow Jacobian and Monte Carlo sums
the numpy reference's."""

import dataclasses
import functools

import numpy as np
import pytest

from gaugedyn.theory import activation_of, random_problem
from gaugedyn.training import _ode_kernels, _online_ode, online_ode
from gaugedyn.training._online_ode import (
    ERF_MIXTURES,
    mixture_noise,
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


def _compiled(name, a, b, C, control=None):
    """The compiled kernel's Sobol rule for activation ``name`` (any code) with the control
    variate ``control`` (``None``: the package's, `rule_control`, with its field table): ``E``
    whole."""
    table = np.zeros((0, 1, 4))
    if control is None:
        control = _online_ode.rule_control("sobol", name)
        table = _online_ode.field_table("sobol", name)
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
        sobol_nodes(C.shape[0], _online_ode.sobol_log2(name)),
        np.ascontiguousarray(control, dtype=np.float64),
        table,
        E,
    )
    return np.triu(E) + np.triu(E, 1).T


def test_the_nodes_are_centred_and_whitened():
    Z = sobol_nodes(8, 8)
    assert Z.shape == (2**8, 8)
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
def test_erf_against_its_closed_forms(scale, monkeypatch):
    """On erf (``gaugedyn derive``'s closed forms), at a random problem and with its students
    shrunk toward the teacher (``scale``), the rule without a control variate at 2^14 nodes is
    within 0.3% of the largest entry (4e-4 measured at the first)."""
    monkeypatch.setattr(_online_ode, "SOBOL_LOG2", {"tanh": 14})
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
    compiled noise term and `noise_term`'s numpy one (the same estimator: the control's
    closed form plus the rule's mean of the difference) agree to round-off."""
    b, T, states = _flow_states()
    for a, Q, R in states:
        ref = noise_term(a, Q, R, b, T, "tanh")
        got = quadrature_noise("tanh", None, a, Q, R, b, T)
        # the control's closed form sums terms c_p c_q I4 (|I4| <= 1) in another order than
        # numpy: round-off relative to (sum |c|)^2 a_i a_k, not to their (late: small) sum
        size = np.abs(a).max() ** 2 * (np.abs(a).sum() + np.abs(b).sum()) ** 2
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * size)


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
        noise_term(a, Q, R, b, T, "gelu", method="sobol")


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


def test_the_control_is_exact_for_erf_itself(monkeypatch):
    """Erf students and teacher with erf itself as the mixture (``alpha = beta = 1``): the
    rule's difference vanishes node by node and the estimate is erf's closed form to round-off
    at 2^8 nodes, compiled and numpy (`sobol_expectation`); a mixture 1% off in scale (still
    unbiased) is not exact, but within the rule's error."""
    problem = random_problem(50, 4, 4, np.random.default_rng(3), activation="erf")
    a, Q, R, b, T = problem.order_parameters()
    C = _gram(Q, R, T)
    exact = noise_term(a, Q, R, b, T, "erf") / np.outer(a, a)
    tol = 1e-12 * np.abs(exact).max()
    one = np.array([[1.0], [1.0], [0.0]])
    np.testing.assert_allclose(_compiled("erf", a, b, C, one), exact, rtol=0, atol=tol)
    monkeypatch.setattr(_online_ode, "ERF_MIXTURES", {"erf": ((1.0,), (1.0,))})
    np.testing.assert_allclose(sobol_expectation("erf", None, a, b, C), exact, rtol=0, atol=tol)
    off = _compiled("erf", a, b, C, np.array([[1.0], [1.01], [0.0]]))
    assert 1e3 * tol < np.abs(off - exact).max() < 1e-2 * np.abs(exact).max()


def test_the_control_agrees_with_the_plain_rule_within_its_error(monkeypatch):
    """At the noise-free flow's states the package's rule (2^8 nodes with the control) and the
    plain rule of 2^14 nodes agree within the sum of their errors measured against the
    reference (``bench_noise_qmc.py``: up to 1.2e-2 and 5.5e-3 of the largest entry); the
    controlled rule with the mixture's closed form left out (planted) does not."""
    b, T, states = _flow_states()
    control = _online_ode.rule_control("sobol", "tanh")
    for a, Q, R in states:
        C = _gram(Q, R, T)
        got = _compiled("tanh", a, b, C)
        with monkeypatch.context() as m:
            m.setattr(_online_ode, "SOBOL_LOG2", {"tanh": 14})
            plain = _compiled("tanh", a, b, C, np.zeros((3, 0)))
        scale = np.abs(plain).max()
        assert np.abs(got - plain).max() <= 2e-2 * scale
        planted = got - mixture_noise(control, a, b, C)
        assert np.abs(planted - plain).max() > 2e-2 * scale


def test_the_declared_mixture_is_close_to_tanh():
    """`ERF_MIXTURES`' tanh entry: weights summing to 1 (tanh's limits) and within 1.6e-3 of
    tanh everywhere (its declaration)."""
    from scipy.special import erf

    alpha, beta = ERF_MIXTURES["tanh"]
    assert sum(alpha) == pytest.approx(1.0, abs=1e-12)
    x = np.linspace(-8.0, 8.0, 4001)
    h = sum(al * erf(be * x / np.sqrt(2.0)) for al, be in zip(alpha, beta, strict=True))
    assert np.abs(np.tanh(x) - h).max() < 1.6e-3


@pytest.mark.parametrize("name", ["tanh", "softplus", "leaky_relu"])
def test_the_compiled_flow_jacobian_is_the_flows_differences(name):
    """`compiled_flow_jacobian` (each column recomputing one field's coefficients at most)
    against `flow_jacobian`'s differences of the whole compiled flow, plain and with the
    options, at a state whose two copies of ``Q`` differ (the lower one is never read)."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    a, Q, R, b, T = problem.order_parameters()
    Q = Q.copy()
    Q[1, 0] += 0.3
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    for opts in ({}, {"weight_decay": 0.1, "lr2": 0.5}):
        flow = _online_ode.compiled_rhs(4, 4, b, T, 0.7, 1, False, activation=name, **opts)
        ref = _online_ode.flow_jacobian(flow)(0.0, y)
        got = _online_ode.compiled_flow_jacobian(name, 4, 4, b, T, 0.7, **opts)(0.0, y)
        # forward differences magnify a last-bit change of the flow by 1 / h, about 1e8
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def test_the_compiled_monte_carlo_sums_are_numpys():
    """`monte_carlo_noise` with its sums compiled (an activation with a code) and in numpy (the
    same activation without one): the same draws, the same mean and standard errors."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="tanh")
    a, Q, R, b, T = problem.order_parameters()
    plain = dataclasses.replace(activation_of("tanh"), code=None)
    m1, s1 = _online_ode.monte_carlo_noise("tanh", None, a, Q, R, b, T, 2**16, 0)
    m0, s0 = _online_ode.monte_carlo_noise(plain, plain, a, Q, R, b, T, 2**16, 0)
    np.testing.assert_allclose(m1, m0, rtol=0, atol=1e-12 * np.abs(m0).max())
    np.testing.assert_allclose(s1, s0, rtol=0, atol=1e-12 * np.abs(s0).max())


def test_the_trajectory_of_both_paths_agrees_at_k_m_4():
    """The benchmark's problem (K = M = 4, fields of rank 8: the mixture's closed form over all
    eight fields) to t = 10 at tight tolerances: the compiled path (LSODA, the compiled flow
    Jacobian) and the numpy reference (DOP853) agree to 1e-8."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="tanh")
    times = np.array([0.0, 2.0, 10.0])
    kw = dict(rtol=1e-10, atol=1e-12, noise_check="off")
    fast = online_ode(problem, 1.0, times, **kw)
    ref = online_ode(problem, 1.0, times, method="reference", **kw)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", ["tanh", "softplus"])
def test_the_field_table_is_the_functions(name):
    """`_ode_kernels.field_values` from `field_table` is ``g``, ``g'`` and the control's ``h``,
    ``h'`` to 3e-14 (the declaration of ``FIELD_TABLE_DEGREE``) inside the table's reach and
    outside it (the functions themselves), a teacher's field ``g`` and ``h`` alone; the table
    of another activation is caught."""
    from gaugedyn.theory import on_numpy
    from gaugedyn.training._online_ode import field_table, mixture_values

    act = activation_of(name)
    control = _online_ode.rule_control("sobol", name)
    x = np.concatenate([np.linspace(-13.0, 13.0, 20_001), [-12.0, 12.0, 0.0]])
    h, dh = mixture_values(control, x)
    want = np.stack([on_numpy(act.function)(x), on_numpy(act.derivative)(x), h, dh], 1)

    def got(table, student=True):
        return np.array(
            [_ode_kernels.field_values(act.code, control, table, v, student) for v in x]
        )

    table = field_table("sobol", name)
    assert table.shape == (192, 9, 4)
    np.testing.assert_allclose(got(table), want, rtol=0, atol=3e-14)
    np.testing.assert_allclose(got(table, False)[:, [0, 2]], want[:, [0, 2]], rtol=0, atol=3e-14)
    assert not np.any(got(table, False)[:, [1, 3]])
    other = field_table("sobol", "softplus" if name == "tanh" else "tanh")
    assert np.abs(got(other) - want).max() > 1e-3

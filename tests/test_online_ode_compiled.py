"""The compiled online ODE of every compiled activation other than erf
(``gaugedyn.training._ode_kernels``) against the numpy reference ``OnlineODE``: the right-hand
sides on the direct rule (fields of rank <= 4) and the four-point rule (rank 5), with and
without the classical options, and whole trajectories."""

import numpy as np
import pytest
from _properties import properties
from hypothesis import given
from hypothesis import strategies as st

from gaugedyn.theory import ACTIVATIONS, random_problem
from gaugedyn.training import OnlineODE, online_ode
from gaugedyn.training._online_ode import compiled_rhs, flow_jacobian

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
    """K = 3, M = 2 (rank 5: softplus's noise term by four-point integrals, repeated fields
    among them; tanh's by the scrambled-Sobol rule): round-off agreement with the options."""
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


def test_the_flow_jacobian_is_the_flows_derivative():
    """`flow_jacobian` (the Jacobian LSODA gets where the noise term is costly) against central
    differences of the numpy reference's flow (``noise=False``) with the options; and the noise
    term's own derivative, which it leaves out, is far larger than that agreement (so the test
    would see a Jacobian of the whole right-hand side, or of the wrong flow)."""
    problem = random_problem(30, 2, 2, np.random.default_rng(7), activation="relu")
    _, _, R0, b, T = problem.order_parameters()
    K, M = R0.shape
    opts = dict(weight_decay=0.1, lr2=0.5)
    jac = flow_jacobian(compiled_rhs(K, M, b, T, 0.7, 2, False, activation="relu", **opts))
    flow = OnlineODE(K, M, b, T, "relu", 0.7, 2, False, **opts)
    whole = OnlineODE(K, M, b, T, "relu", 0.7, 2, True, **opts)
    y = next(_states(problem, np.random.default_rng(8), 1))

    def central(f):
        cols = []
        for j in range(y.size):
            h = 1e-6 * max(abs(y[j]), 1.0)
            up, down = y.copy(), y.copy()
            up[j] += h
            down[j] -= h
            cols.append((f(0.0, up) - f(0.0, down)) / (2 * h))
        return np.stack(cols, axis=1)

    def symmetric(J):
        # the derivative along Q_ij = Q_ji moved together (the compiled code reads Q's upper
        # triangle, the reference its lower one)
        J = J.copy()
        for i in range(K):
            for j in range(i + 1, K):
                up, low = K + i * K + j, K + j * K + i
                J[:, up] += J[:, low]
                J[:, low] = 0.0
        return J

    J = symmetric(jac(0.0, y))
    ref = symmetric(central(flow))
    np.testing.assert_allclose(J, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
    assert np.abs(symmetric(central(whole)) - ref).max() > 1e-3 * np.abs(ref).max()


@properties(60)
@given(
    st.lists(
        st.sampled_from([0.0, -0.0, 1e-300, -2.5, 3.0]) | st.floats(-5.0, 5.0),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**32 - 1),
)
def test_the_flow_jacobian_is_any_flows_derivative_at_any_state(values, seed):
    """`flow_jacobian` of a flow with a known derivative, ``f(y) = A y + y^2 / 2`` (derivative
    ``A + diag(y)``), at any state, zero and tiny components included (LSODA starts from a
    zero second layer or a zero overlap): every column finite and the derivative's within the
    forward difference's truncation (``h / 2`` on the diagonal) and round-off
    (``n eps |f| / h``), ``h = sqrt(eps) max(|y_j|, 1e-5)``; the given state unchanged."""
    y = np.array(values)
    n = y.size
    A = np.random.default_rng(seed).standard_normal((n, n))
    times = set()

    def flow(t, z):
        times.add(t)
        return A @ z + z * z / 2

    before = y.copy()
    J = flow_jacobian(flow)(0.25, y)
    assert J.shape == (n, n) and np.all(np.isfinite(J))
    h = np.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), 1e-5)
    size = np.abs(A) @ (np.abs(y) + h) + (np.abs(y) + h) ** 2  # a bound on |f| at both points
    tol = 0.51 * np.diag(h) + 4 * (n + 1) * np.finfo(float).eps * size[:, None] / h[None, :]
    np.testing.assert_array_less(np.abs(J - (A + np.diag(y))), tol + 1e-300)
    assert np.array_equal(y, before) and times == {0.25}


def test_relu_trajectory_with_the_flow_jacobian_is_the_reference_trajectory():
    """ReLU at K = M = 2 (the orthant noise term, integrated by LSODA with the flow's Jacobian)
    against the reference (DOP853 on the numpy right-hand side) to t = 4: 1e-8."""
    problem = random_problem(20, 2, 2, np.random.default_rng(9), activation="relu")
    times = np.concatenate([[0.0], np.geomspace(1e-2, 4.0, 8)])
    kw = dict(rtol=1e-11, atol=1e-13)
    fast = online_ode(problem, 0.8, times, **kw, **OPTIONS)
    ref = online_ode(problem, 0.8, times, method="reference", **kw, **OPTIONS)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)


def test_a_failed_newton_iteration_on_the_flow_jacobian_falls_back_to_lsodas_differences(
    monkeypatch,
):
    """Where LSODA fails with the flow's Jacobian (here one made of NaN, which LSODA reports as
    a successful run of NaN states), `online_ode` reruns with LSODA's own differences of the
    whole right-hand side: the trajectory of the plain run, within the tolerance."""
    from gaugedyn.training import _online_ode

    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation="relu")
    times = np.linspace(0.0, 100.0, 6)
    kw = dict(rtol=1e-8, atol=1e-10)
    plain = online_ode(problem, 1.0, times, **kw)
    used = []

    def broken(*args, **kw):
        def jac(t, y):
            used.append(t)
            return np.full((y.size, y.size), np.nan)

        return jac

    monkeypatch.setattr(_online_ode, "compiled_flow_jacobian", broken)
    fallback = online_ode(problem, 1.0, times, **kw)
    assert used
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fallback[key], plain[key], rtol=0, atol=1e-6)


@pytest.mark.parametrize("start", [0.0, 0.5])
def test_one_record_per_asked_time_with_or_without_t_zero(start):
    """``times`` not starting at 0 are integrated from ``t = 0`` and that start is dropped once:
    one record per asked time, the same states at the shared times either way."""
    problem = random_problem(20, 2, 2, np.random.default_rng(1), activation="relu")
    times = np.linspace(start, 5.0, 7)
    o = online_ode(problem, 1.0, times, rtol=1e-9, atol=1e-11)
    assert o["Q"].shape[0] == o["a"].shape[0] == o["R"].shape[0] == times.size
    ref = online_ode(problem, 1.0, np.concatenate([[0.0], times[times > 0]]), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(o["Q"][-1], ref["Q"][-1], rtol=0, atol=1e-7)


@pytest.mark.parametrize("method", ["auto", "reference"])
@pytest.mark.parametrize("activation", ["erf", "relu", "tanh"])
def test_times_zero_alone_gives_the_start(activation, method):
    """``times=[0.0]`` passes validation, so it gives what it asks for: the start, once, on
    either path, with nothing integrated and nothing checked (it raised "Nothing was done")."""
    problem = random_problem(20, 2, 2, np.random.default_rng(3), activation=activation)
    a0, Q0, R0, _, _ = problem.order_parameters()
    o = online_ode(problem, 0.5, [0.0], method=method)
    assert np.array_equal(o["t"], [0.0])
    for key, start in (("a", a0), ("Q", Q0), ("R", R0)):
        assert o[key].shape == (1, *start.shape)
        np.testing.assert_array_equal(o[key][0], start)
    assert o["noise_check"]["checks"] == [] and o["noise_check"]["passed"] is None


def test_softplus_shared_exponential_gives_the_bits_of_each_function():
    """`_ode_kernels.softplus_pair()` (one ``exp(-|x|)``, through `g_pair()` and `g_triple()`)
    gives the bits of ``g``, ``g'`` and ``g''`` evaluated apart, on both sides of 0, at 0 and
    where the exponential under- or overflows."""
    from gaugedyn.training import _ode_kernels
    from gaugedyn.training._online_kernels import g, g_prime, g_second

    xs = np.concatenate(
        [np.random.default_rng(1).standard_normal(200) * 6, [0.0, -0.0, 1e-300, -1e-300]]
    )
    xs = np.concatenate([xs, [40.0, -40.0, 750.0, -750.0, np.inf, -np.inf]])
    for x in xs:
        apart = (g(4, x), g_prime(4, x), g_second(4, x))
        assert _ode_kernels.g_triple(4, x) == apart, x
        assert _ode_kernels.g_pair(4, x) == apart[:2], x


@pytest.mark.parametrize("name", ["softplus", "tanh"])
@pytest.mark.parametrize("nodes", [None, 7, 6, 5])
def test_hermite_coefficients_are_the_node_by_node_sums_to_the_bit(name, nodes):
    """`_ode_kernels.hermite_coefficients()` (the nodes four at a time) gives the bits of the
    sums node by node in the nodes' order (plain Python floats here), with any remainder of
    nodes; ``nodes``: the first that many of the activation's rule (``None``: all of it)."""
    from gaugedyn.theory import activation_of
    from gaugedyn.training import _ode_kernels
    from gaugedyn.training._online_ode import _flow_rules

    act = activation_of(name)
    _, _, z, w, basis_t = _flow_rules(act)
    if nodes is not None:
        z, w, basis_t = z[150 : 150 + nodes], w[150 : 150 + nodes], basis_t[150 : 150 + nodes]
        basis_t = np.ascontiguousarray(basis_t)
    q = 1.37
    A = np.empty((2, 2, basis_t.shape[1]))
    got = _ode_kernels.hermite_coefficients(int(act.code), q, z, w, basis_t, A, 1)
    sq = float(np.sqrt(q))
    a0, a1 = [0.0] * basis_t.shape[1], [0.0] * basis_t.shape[1]
    S = dS = 0.0
    for j in range(z.size):
        G, P, G2 = _ode_kernels.g_triple(int(act.code), sq * float(z[j]))
        pz = P * float(z[j])
        for k in range(basis_t.shape[1]):
            a0[k] += float(basis_t[j, k]) * G
            a1[k] += float(basis_t[j, k]) * pz
        S += float(w[j]) * G * G
        dS += float(w[j]) * (P * P + G * G2)
    assert got == (S, dS)
    np.testing.assert_array_equal(A[1, 0], a0)
    np.testing.assert_array_equal(A[1, 1], np.array(a1) / (2.0 * sq))


@pytest.mark.parametrize("name", ["softplus", "relu"])
def test_teacher_coefficients_are_those_of_every_state(name):
    """`_ode_kernels.teacher_coefficients()` (computed once per right-hand side function) are
    the bits `field_coefficients()` gives the teacher's fields at a state's Gram matrix, and
    `compiled_rhs` with them is the reference's right-hand side."""
    from gaugedyn.theory import activation_of
    from gaugedyn.training import _ode_kernels
    from gaugedyn.training._online_ode import _flow_rules

    act = activation_of(name)
    problem = random_problem(30, 3, 2, np.random.default_rng(4), activation=name)
    a, Q, R, b, T = problem.order_parameters()
    assert not np.allclose(np.diag(T), T[0, 0])  # distinct teacher variances
    u, _, z, w, basis_t = _flow_rules(act)
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    C, _ = _ode_kernels.state_gram(y, 3, 2, b, T)
    A = np.zeros((5, 2, basis_t.shape[1] if not act.homogeneous else 1))
    S, dS = np.zeros(5), np.zeros(5)
    args = (int(act.code), bool(act.homogeneous), u)
    for p in range(5):
        _ode_kernels.field_coefficients(*args, C, z, w, basis_t, A, S, dS, p)
    tA, tS, tdS = _ode_kernels.teacher_coefficients(*args, T, z, w, basis_t)
    np.testing.assert_array_equal(tS, S[3:])
    np.testing.assert_array_equal(tdS, dS[3:])
    if not act.homogeneous:
        np.testing.assert_array_equal(tA, A[3:])
    ref = OnlineODE(3, 2, b, T, name, 0.8, 1, True)(0.0, y)
    fast = compiled_rhs(3, 2, b, T, 0.8, 1, True, activation=name)(0.0, y)
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-12 * np.abs(ref).max())

"""Integrator efficiency and accuracy against references with known solutions: step counts
against scipy's Radau, error proportional to tolerance, the Rodas4 dense output's order and its
published coefficients, and gradient-descent event times against the recorded iterates."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from gaugedyn.theory import _rosenbrock as rb
from gaugedyn.theory import alignment, single, solve, state_to_order_parameters
from gaugedyn.theory._flows import initial_state

EPS = 1e-4


def _kaps(t, y, p):
    """Kaps' problem, stiff for small EPS: ``y = (exp(-2t), exp(-t))`` exactly."""
    y1, y2 = y[..., 0], y[..., 1]
    return np.stack([-(2 + 1 / EPS) * y1 + y2**2 / EPS, y1 - y2 - y2**2], axis=-1)


def _kaps_jac(t, y, p):
    y2 = y[..., 1]
    one = np.ones_like(y2)
    return np.stack(
        [np.stack([-(2 + 1 / EPS) * one, 2 * y2 / EPS], -1), np.stack([one, -1 - 2 * y2], -1)], -2
    )


def _kaps_exact(t):
    return np.stack([np.exp(-2 * t), np.exp(-t)], axis=-1)


_P = np.array([[1.0, 1.0], [1.0, 2.0]])
_LAMBDA = np.array([-1.0, -1e3])
_A_LIN = _P @ np.diag(_LAMBDA) @ np.linalg.inv(_P)


def _linear(t, y, p):
    """``y' = A y`` with eigenvalues ``-1, -1000``: ``y = P exp(Lambda t) P^-1 y0`` exactly."""
    return y @ _A_LIN.T


def _linear_jac(t, y, p):
    return np.broadcast_to(_A_LIN, y.shape[:-1] + (2, 2)).copy()


def _linear_exact(t):
    c = np.linalg.solve(_P, np.array([1.0, 0.0]))
    return (np.exp(np.multiply.outer(t, _LAMBDA)) * c) @ _P.T


# Rodas4 is not stage-order-3 as Radau IIA is, so on Prothero-Robinson-type problems
# (u' = -lambda (u - g) + g') it loses order when h lambda >> 1 and tolerances are tight; the
# bound below is stated where the method is in its regime (rtol >= 1e-6 on these problems).
PROBLEMS = {
    "kaps": (_kaps, _kaps_jac, _kaps_exact, np.array([1.0, 1.0]), 5.0),
    "linear": (_linear, _linear_jac, _linear_exact, np.array([1.0, 0.0]), 10.0),
}


def _rodas(name, rtol, atol):
    fun, jac, exact, y0, t_end = PROBLEMS[name]
    t_eval = np.linspace(0.0, t_end, 41)
    res = rb.rodas4(
        fun, jac, y0[None], None, lambda p, i: p, np.array([t_end]), t_eval, rtol=rtol, atol=atol
    )
    y_true = exact(t_eval)
    err = np.max(np.abs(res.y[0] - y_true) / (atol + rtol * np.abs(y_true)))
    return int(res.nsteps[0]), err


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_rodas_steps_within_twice_radau(name):
    fun, jac, _, y0, t_end = PROBLEMS[name]
    for rtol in (1e-4, 1e-5, 1e-6):
        atol = 1e-2 * rtol
        steps, _ = _rodas(name, rtol, atol)
        radau = solve_ivp(
            lambda t, y: fun(t, y, None),
            (0.0, t_end),
            y0,
            method="Radau",
            rtol=rtol,
            atol=atol,
            jac=lambda t, y: jac(t, y, None),
        )
        assert steps <= 2 * (len(radau.t) - 1), (name, rtol, steps, len(radau.t) - 1)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_rodas_error_is_proportional_to_tolerance(name):
    tols = np.geomspace(1e-4, 1e-7, 4)
    errs = np.array([_rodas(name, tol, 1e-2 * tol)[1] for tol in tols])
    # the normalised error (y - y_true)/(atol + rtol |y_true|) stays of order one ...
    assert np.all(errs <= 50.0) and np.all(errs >= 1e-2), errs
    # ... so the absolute error follows the tolerance with slope one
    slope = np.polyfit(np.log(tols), np.log(errs * tols), 1)[0]
    assert 0.8 <= slope <= 1.2, slope


# Hairer & Wanner's RODAS (rodas.f, subroutine ROCOE, METH = 1): gamma, a_ij, c_ij (the
# k-form of Solving ODEs II, Sect. IV.7) and the dense-output coefficients d_2j, d_3j
PUBLISHED = {
    "gamma": 0.25,
    "a": {
        (2, 1): 1.544,
        (3, 1): 0.9466785280815826,
        (3, 2): 0.2557011698983284,
        (4, 1): 3.314825187068521,
        (4, 2): 2.896124015972201,
        (4, 3): 0.9986419139977817,
        (5, 1): 1.221224509226641,
        (5, 2): 6.019134481288629,
        (5, 3): 12.53708332932087,
        (5, 4): -0.6878860361058950,
    },
    "c": {
        (2, 1): -5.6688,
        (3, 1): -2.430093356833875,
        (3, 2): -0.2063599157091915,
        (4, 1): -0.1073529058151375,
        (4, 2): -9.594562251023355,
        (4, 3): -20.47028614809616,
        (5, 1): 7.496443313967647,
        (5, 2): -10.24680431464352,
        (5, 3): -33.99990352819905,
        (5, 4): 11.70890893206160,
        (6, 1): 8.083246795921522,
        (6, 2): -7.981132988064893,
        (6, 3): -31.52159432874371,
        (6, 4): 16.31930543123136,
        (6, 5): -6.058818238834054,
    },
    "d2": (
        10.12623508344586,
        -7.487995877610167,
        -34.80091861555747,
        -7.992771707568823,
        1.025137723295662,
    ),
    "d3": (
        -0.6762803392801253,
        6.087714651680015,
        16.43084320892478,
        24.76722511418386,
        -6.594389125716872,
    ),
}


def test_rodas4_tableau_is_the_published_one():
    assert rb.GAMMA == PUBLISHED["gamma"]
    A = np.zeros((6, 5))
    C = np.zeros((6, 5))
    for (i, j), v in PUBLISHED["a"].items():
        A[i - 1, j - 1] = v
    A[5] = A[4] + np.eye(5)[4]  # stiffly accurate: stage 6 starts from y_1 = stage-5 point + k_5
    for (i, j), v in PUBLISHED["c"].items():
        C[i - 1, j - 1] = v
    np.testing.assert_array_equal(rb._A, A)
    np.testing.assert_array_equal(rb._C, C)
    np.testing.assert_array_equal(rb._H, np.array([PUBLISHED["d2"], PUBLISHED["d3"]]))


def _one_step(h):
    """One Rodas4 step of ``y' = -y^2`` from ``y(0) = 1`` (exact ``1/(1 + t)``) of size ``h``."""
    sys = rb.System(
        fun=lambda t, y, p: -y * y,
        jac=lambda t, y, p: (-2 * y)[:, :, None],
        params=None,
        take=lambda p, i: p,
        rtol=1.0,
        atol=1.0,
    )
    st = rb.init(sys, np.ones((1, 1)), np.array([h]), np.array([0.0]))
    rb.evaluate(sys, st)
    st.h[:] = h
    y_new, _, ks, hh = rb.attempt(sys, st, np.array([0]))
    d1, d2 = rb.dense_coefficients(ks)
    return st.y, y_new, d1, d2


def test_dense_output_converges_at_order_three():
    hs = np.geomspace(0.01, 0.16, 5)
    s = np.array([0.3, 0.5, 0.8])
    errs = []
    for h in hs:
        y0, y1, d1, d2 = _one_step(h)
        got = rb.dense(
            s, np.repeat(y0, 3, 0), np.repeat(y1, 3, 0), np.repeat(d1, 3, 0), np.repeat(d2, 3, 0)
        )[:, 0]
        errs.append(np.max(np.abs(got - 1 / (1 + s * h))))
    # an interpolant of order 3 has local error O(h^4) inside the step
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert 3.6 <= slope <= 4.8, (slope, errs)


def test_gd_event_times_match_the_crossing_on_the_recorded_iterates():
    eta = 0.05
    pr = single(10, "w-heavy")
    n_steps = 3000
    t_all = np.arange(n_steps + 1) * eta
    sol = solve(pr, dynamics="gd", eta=eta, t_max=float(t_all[-1]), t_eval=t_all)
    assert sol.t.size == n_steps + 1 and np.isfinite(sol.specialization_time[0])
    y0, p = initial_state(pr)
    g = np.max(sol.observables["alignment"][:, :, 0], axis=1) - sol.definitions.threshold
    # the same observable recomputed from the iterates' order parameters
    np.testing.assert_allclose(
        g + sol.definitions.threshold,
        np.max(alignment(sol.Q, sol.R, p.T)[:, :, 0], axis=1),
        rtol=1e-14,
    )
    k = int(np.flatnonzero(g >= 0)[0])
    t_ref = (k - 1 + g[k - 1] / (g[k - 1] - g[k])) * eta
    assert abs(sol.specialization_time[0] - t_ref) <= 1e-9 * eta
    a, Q, R = state_to_order_parameters(y0, p)
    assert alignment(Q, R, p.T)[0, 0] < sol.definitions.threshold


def test_rodas_step_controller_rarely_rejects_on_smooth_flows():
    # err ** (-1/4) is the controller of a fourth-order method: on smooth flows its proposals
    # land inside the tolerance, so rejected steps are rare (0-1 per trajectory here). A
    # controller of the wrong order (err ** (-1/2)) overshoots and rejects 2-21% of its steps.
    from gaugedyn.theory import random_problem, single, solve_batch

    probs = [single(10, "w-heavy"), single(100, "a-heavy"), single(30, "w-heavy", 2.0)]
    probs += [random_problem(20, 3, 3, np.random.default_rng(i)) for i in range(3)]
    for pr in probs:
        d = solve_batch([pr], t_max=300.0, rtol=1e-8, atol=1e-10).diagnostics[0]
        assert d["nrejected"] <= max(2, 0.01 * d["nsteps"]), d
    fun = lambda t, y, p: -y * y  # noqa: E731
    jac = lambda t, y, p: (-2 * y)[:, :, None]  # noqa: E731
    r = rb.rodas4(
        fun,
        jac,
        np.ones((1, 1)),
        None,
        lambda p, i: p,
        np.array([10.0]),
        np.linspace(0, 10, 51),
        rtol=1e-9,
        atol=1e-9,
    )
    assert r.nrejected[0] <= 2, r.nrejected

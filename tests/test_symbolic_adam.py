"""The Adam series of m / sqrt(v) against direct integration of the continuous-time moments."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from gaugedyn.symbolic._adam_series import terms


def g(t):
    return 1.5 + np.sin(t) + 0.3 * np.cos(2.3 * t)


def dg(t):
    return np.cos(t) - 0.69 * np.sin(2.3 * t)


def ddg(t):
    return -np.sin(t) - 1.587 * np.cos(2.3 * t)


T_EVAL = np.linspace(0.0, 2.0, 21)


def _exact(tau1, tau2, sign):
    def rhs(t, y):
        gt = sign * g(t)
        return [(gt - y[0]) / tau1, (gt**2 - y[1]) / tau2]

    t0 = -4.0  # transients decay by exp(-4 / tau) before t = 0
    sol = solve_ivp(
        rhs,
        (t0, T_EVAL[-1]),
        [sign * g(t0), g(t0) ** 2],
        method="DOP853",
        t_eval=T_EVAL,
        rtol=1e-12,
        atol=1e-14,
    )
    assert sol.success
    m, v = sol.y
    return m / np.sqrt(v)


def _errors(alpha1, alpha2, taus, sign):
    ev = terms()
    e1, e2 = [], []
    for tau in taus:
        u = _exact(alpha1 * tau, alpha2 * tau, sign)
        tr = ev(sign * g(T_EVAL), sign * dg(T_EVAL), sign * ddg(T_EVAL), alpha1 * tau, alpha2 * tau)
        first = tr["sign"] * 1 + tr["lag"]
        second = first + tr["curvature"] + tr["nonlinear"]
        e1.append(np.max(np.abs(u - first)))
        e2.append(np.max(np.abs(u - second)))
    return np.array(e1), np.array(e2)


TAUS = np.array([0.005, 0.01, 0.02, 0.04])


def _slope(taus, err):
    return np.polyfit(np.log(taus), np.log(err), 1)[0]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_series_error_falls_at_the_predicted_order(sign):
    e1, e2 = _errors(1.0, 2.5, TAUS, sign)
    assert 1.8 < _slope(TAUS, e1) < 2.2, e1
    assert 2.7 < _slope(TAUS, e2) < 3.3, e2
    assert np.all(e2 < e1)


def test_tied_betas_have_no_lag_and_second_order_error():
    ev = terms()
    tr = ev(g(T_EVAL), dg(T_EVAL), ddg(T_EVAL), 0.03, 0.03)
    assert np.all(tr["lag"] == 0) and np.all(tr["curvature"] == 0)
    e1, e2 = _errors(1.0, 1.0, TAUS, 1.0)
    assert 1.8 < _slope(TAUS, e1) < 2.2
    assert 2.7 < _slope(TAUS, e2) < 3.3


def test_lag_term_is_the_leading_correction_when_untied():
    """Dropping the lag term leaves a first-order error: the lag is really there."""
    ev = terms()
    errs = []
    for tau in TAUS:
        u = _exact(tau, 3 * tau, 1.0)
        tr = ev(g(T_EVAL), dg(T_EVAL), ddg(T_EVAL), tau, 3 * tau)
        errs.append(np.max(np.abs(u - tr["sign"])))
    assert 0.85 < _slope(TAUS, np.array(errs)) < 1.15
    tr = ev(g(T_EVAL), dg(T_EVAL), ddg(T_EVAL), 0.01, 0.03)
    np.testing.assert_allclose(tr["lag"], 0.02 * dg(T_EVAL) / np.abs(g(T_EVAL)), rtol=1e-13)

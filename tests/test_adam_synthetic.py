"""Measured parts on synthetic signals against the series, with fitted orders of error."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.adam import measured_vs_series, order_check, transition_fraction
from gaugedyn.stats import loglog_fit

LAMS = 1e-3 * 2.0 ** -np.arange(5)


@pytest.mark.parametrize("signal", ["exponential", "oscillating", "sign_changing"])
@pytest.mark.parametrize("betas", [(0.9, 0.99), (0.99, 0.9), (0.8, 0.95)])
def test_lag_and_ratio_orders(signal, betas):
    r = order_check(signal, *betas, LAMS)
    assert 1.8 < r["slope_lag1"] < 2.3, r["slope_lag1"]  # lag - (tau2-tau1) g'/|g| = O(eps^2)
    assert 2.5 < r["slope_lag2"] < 3.5, r["slope_lag2"]  # second-order series: O(eps^3)
    assert 2.5 < r["slope_ratio2"] < 3.5, r["slope_ratio2"]
    assert np.all(r["max_transition"] == 0.0)
    # the first-order term carries the lag: relative error falls like eps
    assert np.all(np.diff(r["err_lag1"] / r["lag"]) < 0)
    assert r["err_lag1"][-1] / r["lag"][-1] < 0.05


def test_lag_sign_and_scaling_with_memory_gap():
    # lag grows with (tau2 - tau1), flips with it, and vanishes with it
    out = {}
    for b1, b2 in ((0.9, 0.99), (0.99, 0.9), (0.9, 0.95), (0.95, 0.95)):
        r = measured_vs_series("exponential", [1e-4], b1, b2)
        out[(b1, b2)] = float(r["lag"][0, 0])
    assert out[(0.95, 0.95)] == 0.0
    assert out[(0.9, 0.99)] > 0 > out[(0.99, 0.9)]
    assert np.isclose(out[(0.9, 0.99)], -out[(0.99, 0.9)], rtol=0.05)
    assert np.isclose(out[(0.9, 0.99)] / out[(0.9, 0.95)], (100 - 10) / (20 - 10), rtol=0.05)


def test_lag_series_error_falls_as_memory_grows_on_slow_signal():
    # memory times grow (tau2 = 2 tau1) while the signal slows as tau^-2, so eps = tau2 lam -> 0
    taus = np.array([5.0, 10.0, 20.0, 40.0])
    rel = []
    for tau in taus:
        b1, b2 = 1 - 1 / tau, 1 - 1 / (2 * tau)
        r = measured_vs_series("oscillating", [0.01 / tau**2], b1, b2, points=(0.7,))
        rel.append(abs(r["lag"][0, 0] - r["series_lag1"][0, 0]) / abs(r["series_lag1"][0, 0]))
    assert 0.8 < loglog_fit(taus, rel).slope * -1 < 1.2  # relative error O(eps) = O(1/tau)


@pytest.mark.parametrize("beta2,lam", [(0.9, 0.01), (0.99, 0.01), (0.99, 0.003)])
def test_transition_fraction_matches_phase_lag(beta2, lam):
    r = transition_fraction(beta2, lam, periods=5)
    assert abs(r["measured"] - r["predicted"]) < 2 * lam / np.pi  # at most one step per crossing
    assert r["measured"] > 0


def test_bad_signal():
    with pytest.raises(InputError, match="signal"):
        order_check("square", 0.9, 0.99, LAMS)
    with pytest.raises(InputError, match="lams"):
        order_check("exponential", 0.9, 0.99, [0.0, 1e-3])

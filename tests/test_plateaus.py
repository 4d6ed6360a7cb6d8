"""Plateaus, the time spent at a saddle, escape times and the catalogue: the plateau finder on
loss curves with known flat stretches and with none (known-answer controls), the escape slope
``1 / lambda_+``, and a small catalogue."""

import numpy as np
import pytest
from scipy.optimize import brentq

from gaugedyn import InputError
from gaugedyn.theory import (
    Problem,
    catalogue,
    critical_point,
    escape_times,
    flat_stretches,
    plateaus,
    random_problem,
    realize,
    single,
    solve,
    time_spent,
)

# --- known-answer controls of the plateau finder -----------------------------------------------

H1, T1, H2, T2, END, P = 0.3, 10.0, 0.6, 1000.0, 0.01, 4


def _two_drops(t):
    """Flat at 0.91, a drop at t = 10 to 0.61, flat, a drop at t = 1000 to 0.01."""
    return END + H1 / (1 + (t / T1) ** P) + H2 / (1 + (t / T2) ** P)


def _two_drops_rate(t):
    x, y = (t / T1) ** P, (t / T2) ** P
    return (H1 * P * x / (1 + x) ** 2 + H2 * P * y / (1 + y) ** 2) / np.maximum(t, 1e-300)


def _slope(t):
    return t * _two_drops_rate(t) / _two_drops(t)


@pytest.mark.parametrize("given_rate", [True, False])
def test_finder_locates_known_flat_stretches(given_rate):
    """The interior stretch is where the log-log slope is at most ``flatness``: its ends are
    the roots of ``slope(t) = flatness`` (within one sample); the initial and final stretches
    are labelled as such; the same with the rate from finite differences."""
    t = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 321)])
    L = _two_drops(t)
    found = flat_stretches(t, L, _two_drops_rate(t) if given_rate else None, flatness=0.05)
    kinds = [s.kind for s in found]
    assert kinds == ["initial", "interior", "final"], found
    mid = found[1]
    lo = brentq(lambda x: _slope(x) - 0.05, 12.0, 100.0)
    hi = brentq(lambda x: _slope(x) - 0.05, 100.0, 900.0)
    step = t[2] / t[1]
    assert lo / step <= mid.t_start <= lo * step and hi / step <= mid.t_end <= hi * step
    assert abs(mid.level - 0.61) < 0.01
    final_start = brentq(lambda x: _slope(x) - 0.05, 2000.0, 1e5)
    assert final_start / step <= found[2].t_start <= final_start * step


def test_finder_is_scale_free_in_the_loss():
    """The same curve a million times smaller has the same stretches (a criterion on the loss
    range would see the lower plateau's drop as flat)."""
    t = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 321)])
    a = flat_stretches(t, _two_drops(t))
    b = flat_stretches(t, 1e-6 * _two_drops(t))
    assert [(s.i_start, s.i_end, s.kind) for s in a] == [(s.i_start, s.i_end, s.kind) for s in b]


@pytest.mark.parametrize("curve", ["power", "exponential", "steady drop"])
def test_finder_sees_no_plateau_where_there_is_none(curve):
    """A power law ``(1 + t)^-1/2``, an exponential decay to zero and a steady linear drop have
    no interior plateau (only the initial stretch every curve has as ``t -> 0``)."""
    t = np.concatenate([[0.0], np.geomspace(1e-3, 30.0, 200)])
    L = {"power": (1 + t) ** -0.5, "exponential": np.exp(-t), "steady drop": 1.0 - 0.03 * t}[curve]
    kinds = [s.kind for s in flat_stretches(t, L)]
    assert "interior" not in kinds and kinds[0] == "initial"


def test_time_spent_known_answer():
    """Entry into and exit from the band around the middle level, against the roots of the
    curve (linear interpolation on a fine grid)."""
    t = np.linspace(0.0, 5000.0, 500001)
    L = _two_drops(t)
    level, width = 0.61, 0.02 * 0.61
    entry, exit_ = time_spent(t, L, level, width)
    assert abs(entry - brentq(lambda x: _two_drops(x) - level - width, 1.0, 100.0)) < 1e-3
    assert abs(exit_ - brentq(lambda x: _two_drops(x) - level + width, 100.0, 2000.0)) < 1e-3
    assert np.isnan(time_spent(t, L, 5.0, 0.01)[0])


def test_finder_refuses_bad_curves():
    t = np.geomspace(1e-3, 1.0, 10)
    with pytest.raises(InputError, match="flatness"):
        flat_stretches(t, np.ones(10), flatness=0.0)
    with pytest.raises(InputError, match="increasing"):
        flat_stretches(t[::-1], np.ones(10))
    with pytest.raises(InputError, match="positive"):
        flat_stretches(t, np.zeros(10))
    with pytest.raises(InputError, match="one length"):
        flat_stretches(t, np.ones(9))


# --- plateaus of real trajectories and escape ---------------------------------------------------


def test_single_erf_plateau_is_the_saddle_at_a_zero():
    """The erf ``single`` set-up (w-heavy) starts on a plateau whose critical point is the
    saddle ``a = 0``, ``w . v = 0``: loss ``1/6``, index 1."""
    pr = single(20, "w-heavy", activation="erf")
    sol = solve(pr, formulation="order-parameters")
    first = plateaus(sol, pr)[0]
    assert first.kind == "initial" and first.point.grad_norm < 1e-10
    assert abs(first.loss - 1 / 6) < 1e-10 and first.index == 1
    assert 0.05 * sol.specialization_time[0] < first.time_spent < sol.specialization_time[0]
    with pytest.raises(InputError, match="Problem"):
        plateaus(sol, "teacher")


def test_escape_time_grows_as_log_over_lambda():
    """From starts ``eps`` along the unstable direction of a ReLU saddle, the time spent grows as
    ``ln(1/eps) / lambda_+``: the fitted slope within 1% of ``1 / lambda_+``."""
    pr = random_problem(20, 2, 2, np.random.default_rng(1), activation="relu", scale=0.1)
    sol = solve(pr, formulation="order-parameters", t_max=100)
    k = int(np.searchsorted(sol.t, 11.9))
    saddle = critical_point(realize(sol.a[k], sol.Q[k], sol.R[k], pr.b, pr.V @ pr.V.T, "relu"))
    out = escape_times(saddle, np.geomspace(1e-2, 1e-5, 4))
    assert abs(out["slope"] * saddle.lambda_plus - 1.0) < 0.01
    with pytest.raises(InputError, match="eps"):
        escape_times(saddle, [0.1])
    minimum = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
    with pytest.raises(InputError, match="index 0"):
        escape_times(minimum, [1e-2, 1e-3])


def test_small_catalogue():
    """Every entry refined below 1e-10; the basins and the unresolved starts add up to the
    starts; no two entries are the same point."""
    from gaugedyn.theory import same_point

    rng = np.random.default_rng(123)
    V = rng.normal(size=(2, 8))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    teacher = Problem(a=np.ones(2), W=V.copy(), b=np.ones(2), V=V, activation="erf")
    cat = catalogue(teacher, starts=6, t_max=300.0)
    assert cat.entries
    assert all(e.point.grad_norm < 1e-10 for e in cat.entries)
    ends = sum(len(e.ends) for e in cat.entries) + len(cat.unresolved)
    assert ends == 6
    for i, e in enumerate(cat.entries):
        for f in cat.entries[i + 1 :]:
            assert not same_point(e.point, f.point)
    summary = cat.to_dict()
    assert summary["starts"] == 6 and len(summary["entries"]) == len(cat.entries)
    b = cat.basin(cat.entries[0])
    assert b["low"] <= b["share"] <= b["high"]
    with pytest.raises(InputError, match="starts"):
        catalogue(teacher, starts=0)

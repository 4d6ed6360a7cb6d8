"""Quadrature and differentiation on the log-spaced time grids of the gauge experiments."""

from __future__ import annotations

import numpy as np


def integrate_log(t: np.ndarray, f: np.ndarray) -> float:
    """``int_0^{t_end} f dt`` on a grid ``0, t_1 < ... (log-spaced)``: Simpson in ``log t``.

    The piece ``[0, t_1]`` is taken by the trapezoid rule (it is ``O(t_1)``).
    """
    from scipy.integrate import simpson

    t, f = np.asarray(t, dtype=float), np.asarray(f, dtype=float)
    head = 0.5 * (f[0] + f[1]) * (t[1] - t[0]) if t[0] == 0.0 else 0.0
    tt, ff = (t[1:], f[1:]) if t[0] == 0.0 else (t, f)
    return float(head + simpson(ff * tt, x=np.log(tt)))


def cumulative(t: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Running integral ``int_0^t f ds`` over the grid (``scipy.integrate.cumulative_trapezoid``)."""
    from scipy.integrate import cumulative_trapezoid

    return cumulative_trapezoid(np.asarray(f, dtype=float), np.asarray(t, dtype=float), initial=0.0)


def time_derivative(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``dy/dt`` on a log-spaced grid ``t > 0`` (time axis first), by second-order finite
    differences in ``log t`` (``numpy.gradient``, one-sided second order at the ends):
    ``dy/dt = (dy/d log t) / t``."""
    t = np.asarray(t, dtype=float)
    dlog = np.gradient(np.asarray(y, dtype=float), np.log(t), axis=0, edge_order=2)
    return dlog / t.reshape((-1,) + (1,) * (dlog.ndim - 1))

r"""Synthetic gradient signals and the series terms the measured parts must approach.

A signal is $g_k = G(\lambda (k - T))$ for steps $k = 1, \dots, T$: $\lambda$ (``lam``) is its
slowness (the memory measured in signal time scales is $\epsilon = \tau_2 \lambda$). For weights
$(1-b)\, b^j$ the EMA moments are $\mathbb{E}[j] = \tau - 1$ and
$\mathbb{E}[j^2]/2 = \mu(\tau) = (\tau-1)(2\tau-1)/2$, so for a slowly varying signal of constant
sign ($g' = dg/dk$)

$$
\begin{aligned}
\mathrm{lag} &= (\tau_2-\tau_1)\, g'/|g|
+ \left[(\mu_1-\mu_2)\, g'' + (\tau_2-\tau_1)(\tau_2-1)\, g'^2/g\right]/|g| + O(\epsilon^3), \\
\mathrm{ratio} &= -\operatorname{sign}(g)\, \tau_2 (\tau_2-1) (g'/g)^2 / 2 + O(\epsilon^3), \\
\mathrm{transition} &= 0, \qquad \mathrm{sign} = \operatorname{sign}(g).
\end{aligned}
$$

The first-order lag is exactly the continuous-time term $(\tau_2-\tau_1)\, g'/|g|$; the discrete
$-1$ shifts cancel in it. The ``g''`` term is the curvature part of the lag.
"""

from __future__ import annotations

import numpy as np

from .._errors import InputError
from ..stats import loglog_fit
from ._decomposition import decompose_history

SIGNALS: dict[str, tuple] = {
    "exponential": (np.exp, np.exp, np.exp),
    "oscillating": (
        lambda x: 2.0 + np.sin(x),
        np.cos,
        lambda x: -np.sin(x),
    ),
    "sign_changing": (np.sin, np.cos, lambda x: -np.sin(x)),
}


def _tau(beta: float) -> float:
    return 1.0 / (1.0 - beta)


def series_terms(g, dg, d2g, beta1: float, beta2: float) -> dict[str, np.ndarray]:
    r"""The series terms of the parts at a point with gradient ``g``, ``g'``, ``g''`` (per step).

    Parameters
    ----------
    g, dg, d2g : array_like
        The gradient and its first and second derivatives in steps, at the point (arrays
        broadcast together).
    beta1 : float
        The first moment's decay; $\tau_1 = 1/(1 - \beta_1)$.
    beta2 : float
        The second moment's decay; $\tau_2 = 1/(1 - \beta_2)$.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``sign``, ``lag1`` (first order), ``curvature`` (the ``g''`` term of the lag),
        ``lag_cross`` (its $g'^2$ term), ``lag2 = lag1 + curvature + lag_cross`` and
        ``ratio2``; ``inf`` or ``nan`` where ``g = 0``.
    """
    g, dg, d2g = (np.asarray(a, dtype=float) for a in (g, dg, d2g))
    t1, t2 = _tau(beta1), _tau(beta2)
    mu1, mu2 = (t1 - 1) * (2 * t1 - 1) / 2, (t2 - 1) * (2 * t2 - 1) / 2
    a = np.abs(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _terms(g, dg, d2g, a, t1, t2, mu1, mu2)


def _terms(g, dg, d2g, a, t1, t2, mu1, mu2):
    lag1 = (t2 - t1) * dg / a
    curv = (mu1 - mu2) * d2g / a
    cross = (t2 - t1) * (t2 - 1) * dg**2 / (g * a)
    ratio2 = -np.sign(g) * t2 * (t2 - 1) * (dg / g) ** 2 / 2
    return {
        "sign": np.sign(g),
        "lag1": lag1,
        "curvature": curv,
        "lag_cross": cross,
        "lag2": lag1 + curv + cross,
        "ratio2": ratio2,
    }


def signal_history(signal: str, lams, beta: float, points=(0.0,), burn: float = 60.0):
    r"""Gradient histories ``(T, len(lams), len(points))`` ending at ``G(point)`` for each column.

    ``beta`` is the longest memory; $T = \mathit{burn} \cdot \tau$ steps so the bias-correction transient is
    $< e^{-\mathit{burn}}$.
    Returns ``(grads, x_end)`` with ``x_end`` the signal argument of the last step per column.
    """
    if signal not in SIGNALS:
        raise InputError(f"signal={signal!r} is not allowed; choose one of {sorted(SIGNALS)}")
    lams = np.asarray(lams, dtype=float)
    if np.any(lams <= 0):
        raise InputError(f"lams={lams.tolist()} is not allowed; slownesses must be > 0")
    pts = np.asarray(points, dtype=float)
    T = int(burn * _tau(beta)) + 1
    k = np.arange(1, T + 1, dtype=float)[:, None, None]
    x = lams[None, :, None] * (k - T) + pts[None, None, :]
    return SIGNALS[signal][0](x), x[-1]


def measured_vs_series(signal: str, lams, beta1: float, beta2: float, points=(0.0,)) -> dict:
    r"""Measured parts of the last update against the series terms, per ``lam`` and point.

    Uses $\epsilon = 0$; the history is $60\tau$ steps long for the longer memory.

    Parameters
    ----------
    signal : str
        The signal shape ``G``, a key of `SIGNALS`.
    lams : array_like
        The slownesses ``lam`` (positive): ``g_k = G(lam (k - T) + point)``.
    beta1 : float
        The first moment's decay.
    beta2 : float
        The second moment's decay.
    points : sequence of float
        The signal arguments ``G(point)`` at which the last step lands.

    Returns
    -------
    dict
        Arrays of shape ``(len(lams), len(points))``: the measured ``lag``, ``ratio``,
        ``transition``, ``sign``, the series terms of `series_terms()` prefixed ``series_``,
        and ``g`` (the gradient at the last step).

    Raises
    ------
    InputError
        When ``signal`` is not a key of `SIGNALS` or a slowness is not positive.
    """
    grads, x = signal_history(signal, lams, max(beta1, beta2), points)
    parts = decompose_history(grads, beta1, beta2, eps=0.0)
    G, dG, d2G = SIGNALS[signal]
    lam = np.asarray(lams, dtype=float)[:, None]
    ser = series_terms(G(x), lam * dG(x), lam**2 * d2G(x), beta1, beta2)
    out = {k: np.asarray(getattr(parts, k))[-1] for k in ("sign", "lag", "transition", "ratio")}
    out.update({f"series_{k}": v for k, v in ser.items()})
    out["g"] = G(x)
    return out


def order_check(signal: str, beta1: float, beta2: float, lams, points=(0.0, 0.7, 1.9)) -> dict:
    r"""Errors of the measured parts against the series, and their fitted orders in ``lam``.

    Errors are maxima over ``points`` (restricted to ``|g| > 1/2``):
    ``lag - lag1`` (predicted order 2), ``lag - lag2`` (order 3), ``ratio - ratio2`` (order 3),
    ``|transition|`` (0 without a sign change in the window).

    Parameters
    ----------
    signal : str
        The signal shape, a key of `SIGNALS`.
    beta1 : float
        The first moment's decay.
    beta2 : float
        The second moment's decay.
    lams : array_like
        The slownesses (positive) over which the orders are fitted.
    points : sequence of float
        The signal arguments at which the last step lands; at least one with ``|g| > 1/2``
        for each ``lam``.

    Returns
    -------
    dict
        ``lams``, the error arrays ``err_lag1``, ``err_lag2``, ``err_ratio2``,
        ``max_transition`` and ``lag`` (each per ``lam``), and the fitted log-log slopes
        ``slope_lag1``, ``slope_lag2``, ``slope_ratio2`` (``nan`` when an error is zero).

    Raises
    ------
    InputError
        When no point has ``|g| > 1/2`` for some ``lam``, ``signal`` is not a key of
        `SIGNALS`, or a slowness is not positive.
    """
    r = measured_vs_series(signal, lams, beta1, beta2, points)
    mask = np.abs(r["g"]) > 0.5
    if not np.all(mask.any(axis=1)):
        raise InputError(f"points={points!r}: no point with |g| > 1/2 for signal {signal!r}")

    def err(a):
        return np.where(mask, np.abs(a), 0.0).max(axis=1)

    out = {
        "lams": np.asarray(lams, dtype=float),
        "err_lag1": err(r["lag"] - r["series_lag1"]),
        "err_lag2": err(r["lag"] - r["series_lag2"]),
        "err_ratio2": err(r["ratio"] - r["series_ratio2"]),
        "max_transition": err(r["transition"]),
        "lag": err(r["lag"]),
    }
    for k in ("lag1", "lag2", "ratio2"):
        e = out[f"err_{k}"]
        out[f"slope_{k}"] = loglog_fit(out["lams"], e).slope if np.all(e > 0) else float("nan")
    return out


def transition_fraction(beta2: float, lam: float, periods: int = 20) -> dict:
    r"""Fraction of steps in transition for $g = \sin(\lambda k)$ (``lam`` $= \lambda$) against
    $\phi/\pi$.

    $\phi = \arctan\bigl(\beta_2 \sin\lambda / (1 - \beta_2 \cos\lambda)\bigr)$ is the exact
    phase lag of the $\beta_2$-EMA, so the smoothed sign trails the gradient's sign for
    $\phi/\lambda$ steps after each of the two zero crossings per period. Both moments use
    ``beta2``; the first $60\tau_2$ steps are a burn-in.

    Parameters
    ----------
    beta2 : float
        The EMA decay ``b2``.
    lam : float
        The signal's angular frequency per step (positive).
    periods : int
        How many signal periods are measured after the burn-in.

    Returns
    -------
    dict
        ``measured`` (the fraction of steps in transition), ``predicted`` ($\phi/\pi$) and
        ``first_order`` ($(\tau_2 - 1)\, \lambda/\pi$).
    """
    tau2 = _tau(beta2)
    n = int(60 * tau2 + periods * 2 * np.pi / lam)
    k = np.arange(1, n + 1, dtype=float)
    g = np.sin(lam * k)
    parts = decompose_history(g[:, None], beta2, beta2, eps=0.0)
    tail = np.asarray(parts.transition)[int(60 * tau2) :, 0]
    phi = np.arctan2(beta2 * np.sin(lam), 1 - beta2 * np.cos(lam))
    return {
        "measured": float(np.mean(tail != 0)),
        "predicted": float(phi / np.pi),
        "first_order": float((tau2 - 1) * lam / np.pi),
    }

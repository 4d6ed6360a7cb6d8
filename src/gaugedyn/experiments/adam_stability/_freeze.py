"""The frozen-``v`` comparison, and the models on which its answer is known.

The edge-of-stability mechanism says that Adam's second moment ``v`` drives the preconditioned
sharpness ``S = lambda_max(P^-1/2 H P^-1/2)``, ``P = sqrt(v^) + eps``, up to the threshold
``2 (1 + beta1) / (1 - beta1) / lr`` and holds it there. `freeze_arms()` runs Adam (the
*adaptive* arm) and, from the first step where ``lr S`` reaches ``fraction`` of the threshold, a
copy whose preconditioner is held at its value then (the *frozen* arm: ``m`` still updated and
bias-corrected by the step count); `edge_times()` reads the first step at which each arm
reaches the edge (``lr S >= EDGE_FRACTION * thr``).

- Frozen **before** the edge (``fraction`` well below ``EDGE_FRACTION``), the comparison can
  fail: where ``v`` is what raises ``S``, the frozen arm reaches the edge much later than the
  adaptive one, or never; where ``v`` plays no part, both arrive together.
- Frozen **at** the edge, the frozen arm starts on the edge: it is heavy-ball momentum with a
  fixed preconditioner, held at its own threshold by its own dynamics, so "the frozen copy stays
  on the edge" is expected whether or not ``v`` drives the dynamics (tests show it on both models).

The models, each ``(grad, sharpness, theta0)`` with exact gradients and sharpness:

- `diagonal_quadratic_model()`: ``L = sum h_i theta_i^2 / 2``; ``S = max h_i / P_i``. A fixed
  ``P`` leaves ``S`` constant, so adaptation of ``v`` is the only mechanism that moves it;
- `sharpening_model()`: a curvature ``e^phi`` that grows as ``phi`` relaxes to a target
  above the edge (progressive sharpening), run with a *fixed* preconditioner in both arms
  (``fixed=p``: no ``v`` at all): it reaches the edge without ``v``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ._protocol import ADAM_EPS, EDGE_FRACTION

FREEZE_BEFORE = 0.5
"""The fraction of the threshold at which the controls freeze ``v`` before the edge."""

Model = tuple[Callable, Callable, np.ndarray]


def diagonal_quadratic_model(dim: int = 20, h_range=(1.0, 100.0), seed: int = 0) -> Model:
    """``L = sum h_i theta_i^2 / 2``, ``h`` log-spaced over ``h_range``, ``theta_0 ~ N(0, 1)``."""
    h = np.logspace(math.log10(h_range[0]), math.log10(h_range[1]), dim)
    theta0 = np.random.default_rng(seed).standard_normal(dim)
    return (lambda th: h * th), (lambda th, P: float(np.max(h / P))), theta0


def sharpening_model(lr: float, beta1: float, p: float = 1.0, time: float = 200.0) -> Model:
    """``L = e^phi theta^2 / 2 + mu (phi - phi*)^2 / 2`` from ``theta = 1e-3``: the curvature in
    ``theta``, ``e^phi``, grows as ``phi`` relaxes to ``phi*`` over about ``time`` steps of a
    fixed preconditioner ``p`` (``mu = p / (time lr)``), from half the threshold
    (``lr e^phi0 / p = thr / 2``) to three times it; the Hessian
    ``[[e^phi, e^phi theta], [e^phi theta, e^phi theta^2 / 2 + mu]]`` is exact."""
    from ._edge import threshold  # torch-backed: imported when a model runs

    thr = threshold(beta1)
    mu = p / (time * lr)
    phi0, phi_star = math.log(0.5 * thr * p / lr), math.log(3.0 * thr * p / lr)

    def grad(th):
        x, phi = th
        e = math.exp(phi)
        return np.array([e * x, 0.5 * e * x * x + mu * (phi - phi_star)])

    def sharpness(th, P):
        x, phi = th
        e = math.exp(phi)
        H = np.array([[e, e * x], [e * x, 0.5 * e * x * x + mu]])
        s = 1.0 / np.sqrt(P)
        return float(np.linalg.eigvalsh(s[:, None] * H * s[None, :])[-1])

    return grad, sharpness, np.array([1e-3, phi0])


def freeze_arms(
    model: Model,
    lr: float,
    beta1: float,
    beta2: float,
    steps: int,
    fraction: float,
    fixed: float | None = None,
    eps: float = ADAM_EPS,
) -> dict:
    """Both arms (module doc) for ``steps`` steps: ``adaptive`` and ``frozen``, the per-step
    ``lr S / thr`` of each (``nan`` for the frozen arm before the freeze), and ``freeze_step``
    (``-1`` if the adaptive arm never reached ``fraction``). ``fixed``: the preconditioner is
    that constant in both arms (no ``v`` at all)."""
    grad, sharpness, theta0 = model
    from ._edge import threshold  # torch-backed: imported when a model runs

    thr = threshold(beta1)
    th, m, v = theta0.astype(float).copy(), np.zeros_like(theta0, float), None
    out = {"adaptive": np.full(steps, np.nan), "frozen": np.full(steps, np.nan)}
    frozen = None  # (theta, m, P)
    t_f = -1
    for t in range(1, steps + 1):
        g = grad(th)
        m = beta1 * m + (1 - beta1) * g
        v = (1 - beta2) * g * g if v is None else beta2 * v + (1 - beta2) * g * g
        P = np.sqrt(v / (1 - beta2**t)) + eps if fixed is None else np.full_like(th, fixed)
        out["adaptive"][t - 1] = lr * sharpness(th, P) / thr
        if frozen is None and out["adaptive"][t - 1] >= fraction:
            frozen, t_f = (th.copy(), m.copy(), P.copy()), t - 1
        if frozen is not None:
            fth, fm, fP = frozen
            out["frozen"][t - 1] = lr * sharpness(fth, fP) / thr
            fm = beta1 * fm + (1 - beta1) * grad(fth) if t - 1 > t_f else fm
            fth = fth - lr * (fm / (1 - beta1**t)) / fP
            frozen = (fth, fm, fP) if np.all(np.isfinite(fth)) else frozen
        th = th - lr * (m / (1 - beta1**t)) / P
        if not np.all(np.isfinite(th)):
            break
    return out | {"freeze_step": t_f, "threshold": thr}


def first_at_edge(t, ratio, start: int = 0) -> int:
    """The first step of ``t`` at or after ``start`` with ``ratio = lr S / thr >=
    EDGE_FRACTION`` (``nan`` never counts); ``-1`` when there is none."""
    t, r = np.asarray(t), np.nan_to_num(np.asarray(ratio, float), nan=-1.0)
    hit = np.flatnonzero((t >= start) & (r >= EDGE_FRACTION))
    return int(t[hit[0]]) if hit.size else -1


def censored_delay(t_adaptive: int, t_frozen: int, end: int) -> float:
    """Steps by which the frozen arm reaches the edge after the adaptive one: ``t_frozen -
    t_adaptive``; ``end - t_adaptive`` (a lower bound: the run ends first) when the frozen arm
    never does; ``nan`` when the adaptive arm never does."""
    if t_adaptive < 0:
        return math.nan
    return float((end if t_frozen < 0 else t_frozen) - t_adaptive)


def edge_times(arms: dict) -> tuple[int, int]:
    """First step at which the adaptive and the frozen arm reach the edge (``lr S >=
    EDGE_FRACTION * thr``); ``-1`` when an arm never does."""
    t = np.arange(np.asarray(arms["adaptive"]).size)
    return first_at_edge(t, arms["adaptive"]), first_at_edge(t, arms["frozen"])


def delay(arms: dict) -> float:
    """`censored_delay()` of the two arms (the run's last step the bound)."""
    ta, tf = edge_times(arms)
    return censored_delay(ta, tf, np.asarray(arms["adaptive"]).size - 1)


def frozen_rise(arms: dict) -> float:
    """Today's at-the-edge reading: ``log10`` of the frozen arm's median ``lr S / thr`` over the
    steps after the freeze (the ``frozen_v_rises`` finding's per-seed value)."""
    f = np.asarray(arms["frozen"])
    f = f[np.isfinite(f)]
    return float(np.log10(np.median(f))) if f.size else math.nan

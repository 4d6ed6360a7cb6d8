"""The measures of a trained prototype network, defined once (numpy and scipy, no torch).

For one run with training inputs ``x`` (``M`` of them), prototypes ``p = -b/w`` (``N`` of them,
``N = M``) and hidden responses ``h_ij = phi(w_i x_j + b_i)``:

- reconstruction error: ``min_sigma (1/M) sum_j |x_j - p_sigma(j)|`` over one-to-one
  assignments ``sigma`` (``scipy.optimize.linear_sum_assignment``); in 1-D the sorted matching is
  optimal, so it equals the 1-Wasserstein distance between the two empirical measures;
- usage ratio: the number of distinct prototypes that some sample is assigned to, over ``N``;
  ``"nearest"`` assigns a sample to its nearest prototype, ``"argmax"`` to the neuron with the
  largest response ``h_ij`` (1 when every neuron serves a sample, ``1/N`` when one serves all);
- outside fraction: the fraction of prototypes outside the convex hull ``[min x, max x]``;
- fit error: ``mean_j (f(x_j) - y_j)^2``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

USAGES = ("nearest", "argmax")

DEFINITIONS = {
    "prototype": "p_i = -b_i / w_i, the input where neuron i's response phi(w_i x + b_i) peaks",
    "reconstruction_error": "min over one-to-one assignments sigma of (1/M) sum_j |x_j - "
    "p_sigma(j)| (scipy.optimize.linear_sum_assignment)",
    "usage_ratio_nearest": "number of distinct prototypes that are the nearest prototype of some "
    "training input, divided by N",
    "usage_ratio_argmax": "number of distinct neurons that have the largest hidden response "
    "phi(w_i x_j + b_i) at some training input, divided by N",
    "outside_fraction": "fraction of prototypes outside [min_j x_j, max_j x_j]",
    "fit_error": "mean_j (f(x_j) - y_j)^2 on the training set after training",
}


def reconstruction_error(x: np.ndarray, p: np.ndarray) -> float:
    """``min_sigma mean_j |x_j - p_sigma(j)|`` for one run (``len(x) == len(p)``).

    A non-finite prototype makes the error ``inf``.
    """
    x, p = np.asarray(x, dtype=float), np.asarray(p, dtype=float)
    if x.shape != p.shape or x.ndim != 1:
        raise ValueError(f"x {x.shape} and p {p.shape} must be 1-D of the same length")
    if not np.all(np.isfinite(p)):
        return float("inf")
    cost = np.abs(x[:, None] - p[None, :])
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def usage_ratio(
    x: np.ndarray, p: np.ndarray, *, kind: str = "nearest", responses: np.ndarray | None = None
) -> float:
    """Distinct prototypes used by the samples, over ``N`` (``responses``: ``(N, M)`` for
    ``kind="argmax"``)."""
    if kind not in USAGES:
        raise ValueError(f"usage kind {kind!r} not in {USAGES}")
    p = np.asarray(p, dtype=float)
    if kind == "nearest":
        owner = np.argmin(np.abs(np.asarray(x, dtype=float)[None, :] - p[:, None]), axis=0)
    else:
        if responses is None:
            raise ValueError("usage kind 'argmax' needs the responses")
        owner = np.argmax(np.asarray(responses, dtype=float), axis=0)
    return float(np.unique(owner).size / p.size)


def outside_fraction(x: np.ndarray, p: np.ndarray) -> float:
    """Fraction of ``p`` outside ``[min x, max x]`` (non-finite counts as outside)."""
    x, p = np.asarray(x, dtype=float), np.asarray(p, dtype=float)
    inside = (p >= x.min()) & (p <= x.max())
    return float(1.0 - inside.mean())


def fit_error(f: np.ndarray, y: np.ndarray) -> float:
    """``mean_j (f_j - y_j)^2``."""
    return float(np.mean((np.asarray(f, dtype=float) - np.asarray(y, dtype=float)) ** 2))


def measure_runs(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray, a: np.ndarray, c: np.ndarray
) -> dict[str, np.ndarray]:
    """Every measure of a batch: ``x``, ``y`` ``(B, M)``; ``w``, ``b``, ``a`` ``(B, N)``;
    ``c`` ``(B,)``. Returns ``(B,)`` arrays and the prototypes ``(B, N)``, in float64."""
    p = -b / w
    h = np.exp(-0.5 * (w[:, :, None] * x[:, None, :] + b[:, :, None]) ** 2)
    f = np.einsum("bn,bnm->bm", a, h) + c[:, None]
    out = {"prototypes": p}
    out["reconstruction_error"] = np.array([reconstruction_error(xi, pi) for xi, pi in zip(x, p)])
    out["usage_nearest"] = np.array([usage_ratio(xi, pi) for xi, pi in zip(x, p)])
    out["usage_argmax"] = np.array(
        [usage_ratio(xi, pi, kind="argmax", responses=hi) for xi, pi, hi in zip(x, p, h)]
    )
    out["outside_fraction"] = np.array([outside_fraction(xi, pi) for xi, pi in zip(x, p)])
    out["fit_error"] = np.array([fit_error(fi, yi) for fi, yi in zip(f, y)])
    return out

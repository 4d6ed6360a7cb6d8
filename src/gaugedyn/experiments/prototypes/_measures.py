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
    r"""The reconstruction error of one run,

    $$\min_\sigma \frac{1}{M} \sum_j |x_j - p_{\sigma(j)}|$$

    over one-to-one assignments $\sigma$ (`scipy.optimize.linear_sum_assignment`): in 1-D the
    1-Wasserstein distance between the two empirical measures.

    Parameters
    ----------
    x : numpy.ndarray
        ``(M,)``: the run's training inputs.
    p : numpy.ndarray
        ``(M,)``: its prototypes, as many as inputs.

    Returns
    -------
    float
        The error; ``inf`` when a prototype is not finite.

    Raises
    ------
    ValueError
        When ``x`` and ``p`` are not 1-D arrays of the same length.
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
    r"""The number of distinct prototypes some sample is assigned to, over $N$: 1 when every neuron
    serves a sample, $1/N$ when one serves all.

    Parameters
    ----------
    x : numpy.ndarray
        ``(M,)``: the run's training inputs.
    p : numpy.ndarray
        ``(N,)``: its prototypes.
    kind : str
        One of `USAGES`: ``"nearest"`` assigns a sample to its nearest prototype, ``"argmax"`` to
        the neuron with the largest response $h_{ij}$.
    responses : numpy.ndarray, optional
        ``(N, M)``: the hidden responses $h_{ij} = \phi(w_i x_j + b_i)$; needed for
        ``kind="argmax"``, unused otherwise.

    Returns
    -------
    float
        The ratio, in $[1/N, 1]$.

    Raises
    ------
    ValueError
        When ``kind`` is not one of `USAGES`, or is ``"argmax"`` without ``responses``.
    """
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
    r"""The fraction of prototypes outside the inputs' hull $[\min_j x_j, \max_j x_j]$ (a
    non-finite prototype counts as outside).

    Parameters
    ----------
    x : numpy.ndarray
        ``(M,)``: the run's training inputs (at least one).
    p : numpy.ndarray
        ``(N,)``: its prototypes.

    Returns
    -------
    float
        The fraction, in $[0, 1]$.
    """
    x, p = np.asarray(x, dtype=float), np.asarray(p, dtype=float)
    inside = (p >= x.min()) & (p <= x.max())
    return float(1.0 - inside.mean())


def fit_error(f: np.ndarray, y: np.ndarray) -> float:
    r"""The mean squared fit error $\frac{1}{M}\sum_j (f_j - y_j)^2$.

    Parameters
    ----------
    f : numpy.ndarray
        The network's outputs on the training inputs.
    y : numpy.ndarray
        The targets, of the same shape.

    Returns
    -------
    float
        The error.
    """
    return float(np.mean((np.asarray(f, dtype=float) - np.asarray(y, dtype=float)) ** 2))


def measure_runs(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray, a: np.ndarray, c: np.ndarray
) -> dict[str, np.ndarray]:
    """Every measure of a batch of trained runs (module docstring), from their final parameters.

    Parameters
    ----------
    x : numpy.ndarray
        ``(B, M)``: each run's training inputs.
    y : numpy.ndarray
        ``(B, M)``: their targets.
    w : numpy.ndarray
        ``(B, N)``: the input weights.
    b : numpy.ndarray
        ``(B, N)``: the biases.
    a : numpy.ndarray
        ``(B, N)``: the output weights.
    c : numpy.ndarray
        ``(B,)``: the output biases.

    Returns
    -------
    dict of str to numpy.ndarray
        Float64: ``prototypes`` ``(B, N)``, and per run ``(B,)``: ``reconstruction_error``,
        ``usage_nearest``, ``usage_argmax``, ``outside_fraction`` and ``fit_error``.

    Raises
    ------
    ValueError
        When the width ``N`` differs from the number of samples ``M`` (the reconstruction error
        matches prototypes to inputs one to one).
    """
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

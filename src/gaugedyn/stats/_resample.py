r"""Resamples of a finding's own per-seed values: the noise a finding's power and the audit's
resampled rows are simulated with.

A finding's per-seed values, centred on the parameter its rule judges (the mean, or the median
for a median rule; for a slope, the residuals of the line), are resampled with replacement, a
seed's row of cells kept together (any dependence between cells is kept), and smoothed with a
small Gaussian kernel (Silverman's bandwidth $0.9 \min(s, \mathrm{IQR} / 1.34)\, n^{-1/5}$ per
cell) with Efron's shrinkage $1 / \sqrt{1 + h^2 / s^2}$ (and $\sqrt{n / (n - 1)}$), so the
resampled values have the sample's variance (with $n - 1$) and keep its skew and tails but have
no ties the sample does not have. The smoothed
distribution's own centre is then placed exactly where the simulation puts the parameter (for a
median, the root of the kernel mixture's distribution function at 1/2), so "on the threshold"
means the resampling distribution's parameter is the threshold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._errors import InputError


def _mixture_median(points: np.ndarray, h: float) -> float:
    r"""The median of the mixture of $\mathcal{N}(\mathit{point}, h^2)$ over ``points`` (equal
    weights)."""
    from scipy import optimize, special

    if h <= 0:
        return float(np.median(points))

    def f(t: float) -> float:
        return float(np.mean(special.ndtr((t - points) / h))) - 0.5

    lo, hi = float(points.min()) - 10 * h, float(points.max()) + 10 * h
    return float(optimize.brentq(f, lo, hi, xtol=1e-14 * max(1.0, abs(hi - lo))))


class Resampler:
    """Smoothed resamples of stored per-seed values, centred on ``rule``'s parameter.

    ``values`` as a finding stores them (``per_seed``): one array for a threshold or band
    rule, ``(n, cells)`` for a cell rule, ``[x, y]`` for a paired rule (its differences
    $x - y$ are resampled) or a slope rule (its residuals; ``x`` is kept fixed). Rows with a
    non-finite member are left out. `samples()` gives ``reps`` data sets for
    ``rule.evaluate`` whose parameter is ``truth`` (one value, or one per cell); ``scale`` is
    the per-cell spread the audit's margins are measured in (the standard deviation for a mean
    or a slope, ``1.4826 MAD`` for a median)."""

    def __init__(self, rule: Any, values: Any):
        self.rule = rule
        if rule.estimator in ("point", "proportion"):
            raise InputError(
                f"rule {rule.name!r}: its values are not resampled (a deterministic value has "
                "no noise; 0/1 outcomes are Bernoulli at the simulated probability)"
            )
        self.x = None
        if rule.paired or rule.estimator == "slope":
            x, y = (np.asarray(v, dtype=float).ravel() for v in values)
            keep = np.isfinite(x) & np.isfinite(y)
            x, y = x[keep], y[keep]
            if rule.paired:
                e = (x - y)[:, None]
            else:
                self.x = x
                xc = x - x.mean()
                b = float(xc @ (y - y.mean()) / (xc @ xc)) if np.ptp(x) > 0 else 0.0
                r = y - y.mean() - b * xc
                e = (r * math.sqrt(x.size / max(x.size - 2, 1)))[:, None]
        else:
            v = np.asarray(values, dtype=float)
            v = v[:, None] if v.ndim == 1 else v
            e = v[np.all(np.isfinite(v), axis=1)]
        if e.shape[0] < 2:
            raise InputError(
                f"values: {e.shape[0]} complete row(s); at least 2 are needed to resample"
            )
        self.n, self.cells = e.shape
        median = rule.center == "median"
        centre = np.median(e, axis=0) if median else e.mean(axis=0)
        e = e - centre
        s = e.std(axis=0)
        iqr = np.subtract(*np.percentile(e, [75, 25], axis=0))
        h = 0.9 * np.minimum(s, np.where(iqr > 0, iqr / 1.34, s)) * self.n ** (-0.2)
        shrink = np.where(s > 0, 1 / np.sqrt(1 + np.divide(h**2, s**2, where=s > 0, out=h * 0)), 1)
        shrink = shrink * math.sqrt(self.n / (self.n - 1))  # the variance s^2 with n - 1
        self.points, self.h = e * shrink, h * shrink
        self.sd = e.std(axis=0, ddof=1)
        if median:
            shift = [_mixture_median(self.points[:, c], self.h[c]) for c in range(self.cells)]
            self.points = self.points - np.asarray(shift)
        mad = 1.4826 * np.median(np.abs(e), axis=0)
        self.scale = np.where(median, mad, e.std(axis=0, ddof=1))

    def noise(self, rng: np.random.Generator, reps: int) -> np.ndarray:
        """``(reps, n, cells)`` resampled values, each cell's centre at 0."""
        rows = rng.integers(0, self.n, size=(reps, self.n))
        return self.points[rows] + self.h * rng.standard_normal((reps, self.n, self.cells))

    def samples(self, rng: np.random.Generator, reps: int, truth: Any) -> tuple:
        """``reps`` data sets for ``rule.evaluate`` with the parameter at ``truth`` (a scalar,
        or one value per cell)."""
        e = self.noise(rng, reps)
        t = np.broadcast_to(np.asarray(truth, dtype=float), (self.cells,))
        if self.rule.cells:
            return (t + e,)
        e = e[..., 0]
        if self.rule.paired:
            return (t[0] + e, np.zeros_like(e))
        if self.rule.estimator == "slope":
            assert self.x is not None
            return (self.x, t[0] * (self.x - self.x.mean()) + e)
        return (t[0] + e,)

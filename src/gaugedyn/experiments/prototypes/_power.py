"""The seed count of the headline finding, chosen before the run from the power of its rule on
resampled pilot values at the declared smallest difference of interest.

For per-seed values ``v`` of shape ``(S, cells)`` (a pilot run's paired log ratios
``log(err_k / err_cov)``), the power at ``n`` seeds is the probability that the finding's rule
says HELD on ``n`` rows drawn from a smoothed bootstrap of the pilot rows (a seed's row kept
together, so the cells' dependence is kept), each cell shifted so that its median lies the
smallest difference ``effect`` on the claimed side of the threshold:

    power(n) = P(rule(V*_n) = HELD),   V*_n[i, c] = v[r_i, c] - m_c + h_c z_ic + (t + effect),

with ``r_i`` uniform over the pilot rows, ``h_c`` a kernel bandwidth (Silverman's rule; a
smoothed bootstrap, so ties in a small pilot do not become ties of the resamples), ``z_ic``
standard normal and ``m_c`` the median of the cell's smoothed distribution (the mixture of
normals of sd ``h_c`` at its pilot values), so that the truth is exactly ``t + effect``. The seed count is the smallest candidate whose
power reaches the target (0.8).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import stats


def _mixture_median(points: np.ndarray, h: float) -> float:
    """The median of the smoothed bootstrap's distribution (an equal mixture of normals of sd
    ``h`` at ``points``), by bisection: where the mixture's CDF is 1/2."""
    from scipy.special import ndtr

    if h <= 0:
        return float(np.median(points))
    lo, hi = float(points.min()) - 10 * h, float(points.max()) + 10 * h
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.mean(ndtr((mid - points) / h)) < 0.5 else (lo, mid)
    return 0.5 * (lo + hi)


def _smoothed(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``v`` centred so that each cell's smoothed distribution has median 0, and each
    cell's bandwidth."""
    v = np.asarray(v, dtype=float)
    v = v[np.all(np.isfinite(v), axis=1)]
    if v.ndim != 2 or v.shape[0] < 2:
        raise ValueError(f"pilot values of shape {np.shape(v)}: need (S >= 2, cells), finite")
    e = v - np.median(v, axis=0)
    s = e.std(axis=0, ddof=1)
    iqr = np.subtract(*np.percentile(e, [75, 25], axis=0))
    h = 0.9 * np.minimum(s, np.where(iqr > 0, iqr / 1.34, s)) * v.shape[0] ** (-0.2)
    shift = np.array([_mixture_median(e[:, c], float(h[c])) for c in range(e.shape[1])])
    return e - shift, h


def power_at_seeds(
    pilot: np.ndarray,
    seeds: int,
    effect: float,
    *,
    rule: str = "every_cell_median",
    threshold: float = 0.0,
    direction: str = ">",
    reps: int = 1000,
    rng: np.random.Generator,
) -> float:
    """P(HELD) of ``rule`` at ``seeds`` seeds with every cell's median ``effect`` on the claimed
    side of ``threshold`` (module doc)."""
    e, h = _smoothed(pilot)
    rows = rng.integers(0, e.shape[0], size=(reps, int(seeds)))
    truth = threshold + (effect if direction == ">" else -effect)
    samples = e[rows] + h * rng.standard_normal((reps, int(seeds), e.shape[1])) + truth
    out = stats.RULES[rule].evaluate((samples,), threshold, direction, rng=rng)
    return float(np.mean(out["code"] == 1))


def seeds_for_power(
    pilot: np.ndarray,
    effect: float,
    *,
    target: float = 0.8,
    candidates: Sequence[int] = (20, 30, 40, 60, 80, 100, 120, 160, 200, 300, 400),
    seed: int = 0,
    **kw,
) -> tuple[int | None, dict[int, float]]:
    """The smallest of ``candidates`` whose power (`power_at_seeds`) reaches ``target``
    (``None`` when none does) and the power at each candidate tried."""
    powers: dict[int, float] = {}
    for n in sorted(int(c) for c in candidates):
        rng = np.random.default_rng(np.random.SeedSequence([seed, n]))
        powers[n] = power_at_seeds(pilot, n, effect, rng=rng, **kw)
        if powers[n] >= target:
            return n, powers
    return None, powers

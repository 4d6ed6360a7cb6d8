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

import math
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


# -- a seed count per size ----------------------------------------------------------------------
#
# The every-cell rule says HELD when every cell's interval lies on the claimed side, each cell
# bounded alone (intersection-union), so its verdict is HELD exactly when it is HELD at every
# size, and the sizes' values are independent (each size is its own task, with its own seeds):
# the joint power is the product over sizes of the power at each size, its three cells (the
# other approaches against coverage, one seed's row kept together) resampled jointly. A seed
# count per size then buys the joint power where it is cheapest.


def size_cells(n_sizes: int, i: int, approaches: int = 3) -> list[int]:
    """The columns of size ``i`` in the headline's approach-major layout (``(plain, sep, ov) x
    N``): ``[i, n_sizes + i, 2 n_sizes + i]``."""
    if not 0 <= i < n_sizes:
        raise ValueError(f"size index {i}: must lie in [0, {n_sizes})")
    return [k * n_sizes + i for k in range(approaches)]


def pooled(*parts: np.ndarray) -> np.ndarray:
    """Per-seed values of several runs of the same cells, one under the other (``(sum S,
    cells)``): the rows of every part, ``nan`` kept, so that each size's cells keep every row
    complete at that size (`power_curves` and `joint_power` drop a row per size, where one of
    that size's cells is not finite), however many seeds another size had."""
    arrays = [np.asarray(v, dtype=float) for v in parts]
    if not arrays or any(a.ndim != 2 or a.shape[1] != arrays[0].shape[1] for a in arrays):
        shapes = [a.shape for a in arrays]
        raise ValueError(f"per-seed values of shapes {shapes}: need two-dimensional, equal columns")
    return np.vstack(arrays)


def power_curves(
    pilot: np.ndarray,
    n_sizes: int,
    candidates: Sequence[int],
    effect: float,
    *,
    reps: int = 2000,
    seed: int = 0,
    **kw,
) -> np.ndarray:
    """``(n_sizes, len(candidates))``: per size, the power of the rule on that size's cells
    (`power_at_seeds`) at each candidate seed count, every cell's truth ``effect`` beyond the
    threshold; each entry from its own stream ``SeedSequence([seed, size index, count])``."""
    v = np.asarray(pilot, dtype=float)
    if v.ndim != 2 or v.shape[1] % n_sizes:
        raise ValueError(f"pilot values of shape {v.shape}: need (S, a multiple of {n_sizes})")
    out = np.empty((n_sizes, len(candidates)))
    for i in range(n_sizes):
        cols = v[:, size_cells(n_sizes, i, v.shape[1] // n_sizes)]
        for j, n in enumerate(candidates):
            rng = np.random.default_rng(np.random.SeedSequence([seed, i, int(n)]))
            out[i, j] = power_at_seeds(cols, int(n), effect, reps=reps, rng=rng, **kw)
    return out


def cheapest_counts(
    curves: np.ndarray, candidates: Sequence[int], costs: Sequence[float], target: float
) -> tuple[list[int], float] | None:
    """The seed count per size (one of ``candidates`` each) of least total cost
    ``sum(costs[i] * count[i])`` whose joint power, the product of ``curves[i, count]``, reaches
    ``target``, and that joint power; ``None`` when even the largest counts do not. Exact: the
    sizes are combined one at a time, keeping only the (cost, power) pairs no other pair beats
    on both."""
    curves = np.asarray(curves, dtype=float)
    cand = [int(c) for c in candidates]
    if curves.shape != (len(costs), len(cand)):
        raise ValueError(
            f"curves of shape {curves.shape}: need (sizes = {len(costs)}, candidates = {len(cand)})"
        )
    if not all(float(c) > 0 for c in costs) or not 0 < target <= 1:
        raise ValueError(f"costs {list(costs)} must be positive and target {target} in (0, 1]")
    front: list[tuple[float, float, tuple[int, ...]]] = [(0.0, 1.0, ())]
    for i, cost in enumerate(costs):
        pairs = [
            (c + float(cost) * n, p * float(curves[i, j]), pick + (n,))
            for c, p, pick in front
            for j, n in enumerate(cand)
            if curves[i, j] > 0
        ]
        pairs.sort(key=lambda t: (t[0], -t[1]))
        front, best = [], -1.0
        for c, p, pick in pairs:  # the Pareto front: cheaper first, kept only if more powerful
            if p > best:
                front.append((c, p, pick))
                best = p
    reach = [(c, p, pick) for c, p, pick in front if p >= target]
    if not reach:
        return None
    c, p, pick = min(reach, key=lambda t: t[0])
    return list(pick), p


def joint_power(
    pilot: np.ndarray,
    counts: Sequence[int],
    effect: float,
    *,
    reps: int = 4000,
    seed: int = 1,
    **kw,
) -> tuple[float, list[float]]:
    """The every-cell rule's power with ``counts[i]`` seeds at size ``i`` (the product over
    sizes of `power_at_seeds` on that size's cells) and each size's power, from the streams
    ``SeedSequence([seed, size index, count])``."""
    v = np.asarray(pilot, dtype=float)
    n_sizes = len(counts)
    per = [
        power_at_seeds(
            v[:, size_cells(n_sizes, i, v.shape[1] // n_sizes)],
            int(n),
            effect,
            reps=reps,
            rng=np.random.default_rng(np.random.SeedSequence([seed, i, int(n)])),
            **kw,
        )
        for i, n in enumerate(counts)
    ]
    return float(np.prod(per)), per


def product_se(per: Sequence[float], reps: int) -> float:
    """The Monte Carlo standard error of a product of independent rates ``per``, each a share
    of ``reps`` simulated experiments (the delta method: ``P sqrt(sum (1 - p) / (p reps))``)."""
    p = np.asarray(per, dtype=float)
    if np.any(p <= 0):
        return 0.0 if np.any(p == 0) and np.all(p >= 0) else math.nan
    return float(np.prod(p) * np.sqrt(np.sum((1 - p) / (p * int(reps)))))

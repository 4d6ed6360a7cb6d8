"""Intervals, fits and verdict words over `scipy.stats`, the core of `gaugedyn.stats`
(module docstring there); the verdict rules (``_rules``) build on it."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._errors import InputError
from . import _checks as _check

CONFIDENCE = 0.95
"""The confidence level of every interval the package reports."""

N_RESAMPLES = 2000
"""Bootstrap resamples (scipy's BCa needs a few thousand for stable 95% endpoints)."""

DIRECTIONS = (">", "<")


class Interval(NamedTuple):
    """An estimate with its two-sided confidence interval."""

    estimate: float
    low: float
    high: float

    def as_list(self) -> list[float]:
        return [float(self.low), float(self.high)]


class LineFit(NamedTuple):
    """``y = slope x + intercept`` by least squares, with the slope's t interval."""

    slope: float
    intercept: float
    slope_low: float
    slope_high: float
    stderr: float
    r: float
    n: int

    @property
    def slope_interval(self) -> Interval:
        return Interval(self.slope, self.slope_low, self.slope_high)


def generator(seed: np.random.SeedSequence | int, *labels: Any) -> np.random.Generator:
    """A generator derived from ``seed`` and ``labels`` (hashed, order-sensitive).

    ``seed`` is a run's root seed or a task's ``SeedSequence``; two labels give independent
    streams, the same labels the same stream.
    """
    if isinstance(seed, np.random.SeedSequence):
        entropy, key = seed.entropy, tuple(seed.spawn_key)
    else:
        entropy, key = int(seed), ()
    words = []
    for label in labels:
        digest = hashlib.sha256(repr(label).encode()).digest()
        words.append(int.from_bytes(digest[:4], "little"))
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key + tuple(words)))


def _finite_1d(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    return a[np.isfinite(a)]


def bootstrap_ci(
    data: Any,
    statistic: Callable = np.mean,
    *,
    rng: np.random.Generator,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    method: str = "percentile",
) -> Interval:
    """Bootstrap interval of ``statistic`` over the finite entries of ``data`` (one sample).

    ``scipy.stats.bootstrap`` with ``method`` (``"percentile"`` by default: it never fails on
    degenerate samples, where BCa does). Fewer than two finite values give ``nan`` endpoints; a
    constant sample gives a zero-width interval.
    """
    confidence = _check.confidence(confidence)
    from scipy import stats

    x = _finite_1d(data)
    if x.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    est = float(statistic(x))
    if x.size < 2:
        return Interval(est, math.nan, math.nan)
    if np.all(x == x[0]):
        return Interval(est, est, est)
    res = stats.bootstrap(
        (x,),
        lambda s, axis=-1: statistic(s, axis=axis),
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=rng,
    )
    ci = res.confidence_interval
    return Interval(est, float(ci.low), float(ci.high))


def paired_ci(
    samples: Sequence[Any],
    statistic: Callable,
    *,
    rng: np.random.Generator,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    method: str = "percentile",
) -> Interval:
    """Bootstrap interval of ``statistic(*samples)`` with the samples resampled as pairs.

    ``samples`` are equal-length arrays indexed by seed; a seed where any sample is not finite
    is dropped from all. ``statistic(*arrays, axis=-1)`` must be vectorised over ``axis``, for
    instance ``lambda x, y, axis=-1: np.mean(x - y, axis=axis)``.
    """
    confidence = _check.confidence(confidence)
    from scipy import stats

    arrays = [np.asarray(s, dtype=float).ravel() for s in samples]
    n = {a.size for a in arrays}
    if len(n) != 1:
        raise ValueError(f"paired samples have different lengths {sorted(n)}")
    keep = np.all([np.isfinite(a) for a in arrays], axis=0)
    arrays = [a[keep] for a in arrays]
    if arrays[0].size == 0:
        return Interval(math.nan, math.nan, math.nan)
    est = float(statistic(*arrays, axis=-1))
    if arrays[0].size < 2:
        return Interval(est, math.nan, math.nan)
    if all(np.all(a == a[0]) for a in arrays):
        return Interval(est, est, est)
    res = stats.bootstrap(
        tuple(arrays),
        statistic,
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=rng,
    )
    ci = res.confidence_interval
    return Interval(est, float(ci.low), float(ci.high))


def independent_ci(
    samples: Sequence[Any],
    statistic: Callable,
    *,
    rng: np.random.Generator,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    method: str = "percentile",
) -> Interval:
    """Bootstrap interval of ``statistic(*samples)`` with each sample resampled on its own
    (unpaired: the samples come from different seeds or sizes). ``statistic(*arrays, axis=-1)``
    must be vectorised over ``axis``. The samples are used as given (no filtering)."""
    confidence = _check.confidence(confidence)
    from scipy import stats

    arrays = tuple(np.asarray(s, dtype=float).ravel() for s in samples)
    est = float(statistic(*arrays, axis=-1))
    res = stats.bootstrap(
        arrays,
        statistic,
        paired=False,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=rng,
    )
    ci = res.confidence_interval
    return Interval(est, float(ci.low), float(ci.high))


def mean_difference_ci(
    x: Any, y: Any, *, rng: np.random.Generator, confidence: float = CONFIDENCE
) -> Interval:
    """Paired bootstrap interval of ``mean(x - y)`` (``x[i]``, ``y[i]`` from the same seed)."""
    return paired_ci(
        (x, y), lambda a, b, axis=-1: np.mean(a - b, axis=axis), rng=rng, confidence=confidence
    )


def ratio_ci(
    num: Any, den: Any, *, rng: np.random.Generator, confidence: float = CONFIDENCE
) -> Interval:
    """Paired bootstrap interval of ``mean(num) / mean(den)``."""
    return paired_ci(
        (num, den),
        lambda a, b, axis=-1: np.mean(a, axis=axis) / np.mean(b, axis=axis),
        rng=rng,
        confidence=confidence,
    )


def proportion_ci(k: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """The Wilson interval of ``k`` successes in ``n`` trials (``scipy.stats.binomtest``)."""
    from scipy import stats

    confidence = _check.confidence(confidence)
    k, n = _check.counts(k, n)
    if n <= 0:
        return Interval(math.nan, math.nan, math.nan)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(k / n, float(ci.low), float(ci.high))


def mean_ci(x: Any, confidence: float = CONFIDENCE) -> Interval:
    """Student-t interval of the mean of the finite entries of ``x``."""
    confidence = _check.confidence(confidence)
    from scipy import stats

    a = _finite_1d(x)
    if a.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    m = float(a.mean())
    if a.size < 2:
        return Interval(m, math.nan, math.nan)
    half = float(stats.t.ppf(0.5 + confidence / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
    return Interval(m, m - half, m + half)


def band(x: Any, axis: int = 0, q: tuple[float, float] = (0.1, 0.9)) -> np.ndarray:
    """``(low quantile, median, high quantile)`` of ``x`` along ``axis``, ignoring nan, stacked
    on a new first axis (the seed band drawn around a median curve)."""
    x = np.asarray(x, dtype=float)
    lo, hi = np.nanquantile(x, q, axis=axis)
    return np.stack([lo, np.nanmedian(x, axis=axis), hi])


def line_fit(x: Any, y: Any, confidence: float = CONFIDENCE) -> LineFit:
    """Least-squares line through the finite pairs, with a t interval on the slope
    (``scipy.stats.linregress``). Fewer than three points give ``nan`` interval endpoints."""
    confidence = _check.confidence(confidence)
    from scipy import stats

    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n < 2 or np.all(x == x[0]):
        return LineFit(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, n)
    res = stats.linregress(x, y)
    if n < 3:
        return LineFit(
            float(res.slope),
            float(res.intercept),
            math.nan,
            math.nan,
            math.nan,
            float(res.rvalue),
            n,
        )
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 2) * res.stderr)
    return LineFit(
        float(res.slope),
        float(res.intercept),
        float(res.slope - half),
        float(res.slope + half),
        float(res.stderr),
        float(res.rvalue),
        n,
    )


def loglog_fit(x: Any, y: Any, confidence: float = CONFIDENCE) -> LineFit:
    """`line_fit()` of ``log y`` against ``log x`` over the positive finite pairs: the slope
    is the power-law exponent and ``exp(intercept)`` its prefactor."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    return line_fit(np.log(x[keep]), np.log(y[keep]), confidence)


def local_slopes(x: Any, y: Any) -> np.ndarray:
    """``d log y / d log x`` between consecutive points (shows a power law's drift)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    return np.diff(ly) / np.diff(lx)


def verdict(interval: Interval | Sequence[float], threshold: float, direction: str = ">") -> str:
    """``HELD`` when the whole interval lies on the claimed side of ``threshold``, ``NOT HELD``
    when it lies wholly on the other side (or touches the threshold from there), ``UNRESOLVED``
    when it straddles the threshold or has a non-finite endpoint.

    ``direction=">"`` claims ``value > threshold``; ``"<"`` claims ``value < threshold``.
    """
    if direction not in DIRECTIONS:
        raise InputError(f"direction={direction!r} is not allowed; allowed: one of {DIRECTIONS}")
    threshold = _check.threshold(threshold)
    if isinstance(interval, Interval):
        low, high = interval.low, interval.high
    else:
        try:
            low, high = interval[-2:]
        except (TypeError, ValueError):
            raise InputError(
                f"interval={interval!r} is not allowed; allowed: an Interval or (low, high)"
            ) from None
    low, high = _check.endpoints(low, high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return "UNRESOLVED"
    if direction == ">":
        if low > threshold:
            return "HELD"
        return "NOT HELD" if high <= threshold else "UNRESOLVED"
    if high < threshold:
        return "HELD"
    return "NOT HELD" if low >= threshold else "UNRESOLVED"


def rule_text(threshold: float, direction: str = ">", confidence: float = CONFIDENCE) -> str:
    """The words of `verdict()`'s rule, recorded with every finding."""
    other = "<=" if direction == ">" else ">="
    return (
        f"HELD if the {confidence:.0%} interval lies wholly {direction} {threshold:g}; "
        f"NOT HELD if it lies wholly {other} {threshold:g}; otherwise UNRESOLVED"
    )


def compare(theory: Any, simulation: Any) -> dict[str, float]:
    """Theory against simulation on the same grid: the relative Frobenius error
    ``|sim - th|_F / |th|_F`` and the mean absolute error, both always reported (as
    neural-tangents' ``assert_close_matrices`` does). Non-finite entries of either are left out."""
    th = np.asarray(theory, dtype=float)
    sim = np.asarray(simulation, dtype=float)
    if th.shape != sim.shape:
        raise ValueError(f"theory shape {th.shape} differs from simulation shape {sim.shape}")
    keep = np.isfinite(th) & np.isfinite(sim)
    if not np.any(keep):
        return {"relative_frobenius": math.nan, "mean_absolute": math.nan, "n": 0}
    diff = sim[keep] - th[keep]
    norm = float(np.linalg.norm(th[keep]))
    rel = float(np.linalg.norm(diff) / norm) if norm > 0 else math.inf
    return {
        "relative_frobenius": rel,
        "mean_absolute": float(np.mean(np.abs(diff))),
        "n": int(keep.sum()),
    }

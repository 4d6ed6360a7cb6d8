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
    r"""$y = \mathit{slope}\, x + \mathit{intercept}$ by least squares, with the slope's t
    interval."""

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

    Parameters
    ----------
    seed : numpy.random.SeedSequence or int
        A run's root seed, or a task's ``SeedSequence`` (its entropy and spawn key are kept).
    *labels : Any
        Words that name the stream (a finding id, a rule name, an index); each is hashed from its
        ``repr`` and appended to the spawn key, in order.

    Returns
    -------
    numpy.random.Generator
        A ``default_rng`` on the derived ``SeedSequence``.
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
    r"""Bootstrap interval of ``statistic`` over the finite entries of ``data`` (one sample).

    ``scipy.stats.bootstrap`` with ``method`` (``"percentile"`` by default: it never fails on
    degenerate samples, where BCa does). Fewer than two finite values give ``nan`` endpoints; a
    constant sample gives a zero-width interval.

    Parameters
    ----------
    data : Any
        The sample, flattened; non-finite entries are left out.
    statistic : Callable
        The statistic, vectorised over an ``axis`` keyword (``np.mean``, ``np.median``).
    rng : numpy.random.Generator
        The resampling generator (see `generator()`).
    confidence : float
        The confidence level, in $(0, 1)$.
    n_resamples : int
        Bootstrap resamples.
    method : str
        ``scipy.stats.bootstrap``'s method: ``"percentile"``, ``"basic"`` or ``"BCa"``.

    Returns
    -------
    Interval
        ``statistic`` of the finite entries, with the bootstrap endpoints.

    Raises
    ------
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
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
    r"""Bootstrap interval of ``statistic(*samples)`` with the samples resampled as pairs.

    ``samples`` are equal-length arrays indexed by seed; a seed where any sample is not finite
    is dropped from all. ``statistic(*arrays, axis=-1)`` must be vectorised over ``axis``, for
    instance ``lambda x, y, axis=-1: np.mean(x - y, axis=axis)``. No finite seed gives ``nan``
    throughout, one seed ``nan`` endpoints, and constant samples a zero-width interval.

    Parameters
    ----------
    samples : Sequence[Any]
        Equal-length arrays, entry ``i`` of each from seed ``i``.
    statistic : Callable
        ``statistic(*arrays, axis=-1)``, vectorised over ``axis``.
    rng : numpy.random.Generator
        The resampling generator (see `generator()`).
    confidence : float
        The confidence level, in $(0, 1)$.
    n_resamples : int
        Bootstrap resamples.
    method : str
        ``scipy.stats.bootstrap``'s method: ``"percentile"``, ``"basic"`` or ``"BCa"``.

    Returns
    -------
    Interval
        ``statistic`` of the kept seeds, with the bootstrap endpoints.

    Raises
    ------
    ValueError
        When the samples have different lengths.
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
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
    r"""Bootstrap interval of ``statistic(*samples)`` with each sample resampled on its own
    (unpaired: the samples come from different seeds or sizes). ``statistic(*arrays, axis=-1)``
    must be vectorised over ``axis``. The samples are used as given (no filtering).

    Parameters
    ----------
    samples : Sequence[Any]
        The samples, of any lengths, each flattened.
    statistic : Callable
        ``statistic(*arrays, axis=-1)``, vectorised over ``axis``.
    rng : numpy.random.Generator
        The resampling generator (see `generator()`).
    confidence : float
        The confidence level, in $(0, 1)$.
    n_resamples : int
        Bootstrap resamples.
    method : str
        ``scipy.stats.bootstrap``'s method: ``"percentile"``, ``"basic"`` or ``"BCa"``.

    Returns
    -------
    Interval
        ``statistic`` of the samples, with the bootstrap endpoints.

    Raises
    ------
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
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
    r"""Paired bootstrap interval of $\overline{x - y}$ (``x[i]``, ``y[i]`` from the same seed):
    `paired_ci()` of the mean difference.

    Parameters
    ----------
    x, y : Any
        Equal-length per-seed values; a seed where either is not finite is dropped.
    rng : numpy.random.Generator
        The resampling generator (see `generator()`).
    confidence : float
        The confidence level, in $(0, 1)$.

    Returns
    -------
    Interval
        The mean difference and its percentile bootstrap interval.

    Raises
    ------
    ValueError
        When ``x`` and ``y`` have different lengths.
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
    return paired_ci(
        (x, y), lambda a, b, axis=-1: np.mean(a - b, axis=axis), rng=rng, confidence=confidence
    )


def ratio_ci(
    num: Any, den: Any, *, rng: np.random.Generator, confidence: float = CONFIDENCE
) -> Interval:
    r"""Paired bootstrap interval of $\bar{n} / \bar{d}$, the ratio of the means of ``num`` and
    ``den`` (`paired_ci()`: seed ``i`` of each is resampled together).

    Parameters
    ----------
    num, den : Any
        Equal-length per-seed numerators and denominators; a seed where either is not finite is
        dropped.
    rng : numpy.random.Generator
        The resampling generator (see `generator()`).
    confidence : float
        The confidence level, in $(0, 1)$.

    Returns
    -------
    Interval
        The ratio of means and its percentile bootstrap interval.

    Raises
    ------
    ValueError
        When ``num`` and ``den`` have different lengths.
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
    return paired_ci(
        (num, den),
        lambda a, b, axis=-1: np.mean(a, axis=axis) / np.mean(b, axis=axis),
        rng=rng,
        confidence=confidence,
    )


def proportion_ci(k: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    r"""The Wilson interval of ``k`` successes in ``n`` trials (``scipy.stats.binomtest``); ``n = 0``
    gives ``nan`` throughout.

    Parameters
    ----------
    k : int
        Successes, a whole number with $0 \le k \le n$.
    n : int
        Trials, a whole number $\ge 0$.
    confidence : float
        The confidence level, in $(0, 1)$.

    Returns
    -------
    Interval
        $k / n$ with the Wilson endpoints.

    Raises
    ------
    InputError
        When ``k`` or ``n`` is not a whole number, $k > n$, $n < 0$, or ``confidence`` is not in
        $(0, 1)$.
    """
    from scipy import stats

    confidence = _check.confidence(confidence)
    k, n = _check.counts(k, n)
    if n <= 0:
        return Interval(math.nan, math.nan, math.nan)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(k / n, float(ci.low), float(ci.high))


def mean_ci(x: Any, confidence: float = CONFIDENCE) -> Interval:
    r"""Student-t interval of the mean of the finite entries of ``x``:
    $\bar{x} \pm t_{(1+c)/2,\,n-1}\, s / \sqrt{n}$. No finite entry gives ``nan`` throughout, one
    entry ``nan`` endpoints.

    Parameters
    ----------
    x : Any
        The sample, flattened; non-finite entries are left out.
    confidence : float
        The confidence level $c$, in $(0, 1)$.

    Returns
    -------
    Interval
        The mean and its t interval.

    Raises
    ------
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
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
    r"""``(low quantile, median, high quantile)`` of ``x`` along ``axis``, ignoring nan, stacked
    on a new first axis (the seed band drawn around a median curve).

    Parameters
    ----------
    x : Any
        The values, for instance seeds by times.
    axis : int
        The axis reduced (the seed axis).
    q : tuple[float, float]
        The low and high quantiles, in $[0, 1]$.

    Returns
    -------
    numpy.ndarray
        Shape ``(3, ...)``: the low quantile, the median and the high quantile.
    """
    x = np.asarray(x, dtype=float)
    lo, hi = np.nanquantile(x, q, axis=axis)
    return np.stack([lo, np.nanmedian(x, axis=axis), hi])


def line_fit(x: Any, y: Any, confidence: float = CONFIDENCE) -> LineFit:
    r"""Least-squares line $y = a x + b$ through the finite pairs, with a t interval on the slope
    (``scipy.stats.linregress``): $a \pm t_{(1+c)/2,\,n-2}\,\mathrm{se}(a)$. Fewer than two
    points (or a constant ``x``) give ``nan`` throughout; two points give ``nan`` interval
    endpoints.

    Parameters
    ----------
    x, y : Any
        The points, flattened to equal length; a pair with a non-finite coordinate is left out.
    confidence : float
        The confidence level $c$ of the slope's interval, in $(0, 1)$.

    Returns
    -------
    LineFit
        Slope, intercept, slope interval, slope standard error, correlation $r$ and the number
        of points used.

    Raises
    ------
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
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
    r"""`line_fit()` of $\log y$ against $\log x$ over the positive finite pairs: the slope is the
    power-law exponent $p$ in $y = C x^p$ and $e^{\text{intercept}}$ its prefactor $C$.

    Parameters
    ----------
    x, y : Any
        The points, flattened to equal length; a pair with a non-positive or non-finite
        coordinate is left out.
    confidence : float
        The confidence level of the exponent's interval, in $(0, 1)$.

    Returns
    -------
    LineFit
        The fit in log-log coordinates.

    Raises
    ------
    InputError
        When ``confidence`` is not a number in $(0, 1)$.
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    return line_fit(np.log(x[keep]), np.log(y[keep]), confidence)


def local_slopes(x: Any, y: Any) -> np.ndarray:
    r"""$\Delta \log y / \Delta \log x$ between consecutive points (shows a power law's drift).

    Parameters
    ----------
    x, y : Any
        The points, of equal shape, positive (a non-positive value gives ``nan`` or ``inf``).

    Returns
    -------
    numpy.ndarray
        One slope per consecutive pair: one entry fewer than ``x``.
    """
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    return np.diff(ly) / np.diff(lx)


def verdict(interval: Interval | Sequence[float], threshold: float, direction: str = ">") -> str:
    r"""``HELD`` when the whole interval lies on the claimed side of ``threshold``, ``NOT HELD``
    when it lies wholly on the other side (or touches the threshold from there), ``UNRESOLVED``
    when it straddles the threshold or has a non-finite endpoint.

    ``direction=">"`` claims $\mathit{value} > \mathit{threshold}$; ``"<"`` claims
    $\mathit{value} < \mathit{threshold}$.

    Parameters
    ----------
    interval : Interval or Sequence[float]
        An `Interval`, or a sequence whose last two entries are ``(low, high)``.
    threshold : float
        The claimed bound, a finite number.
    direction : str
        ``">"`` or ``"<"``: the side of ``threshold`` the statement claims.

    Returns
    -------
    str
        ``"HELD"``, ``"NOT HELD"`` or ``"UNRESOLVED"``.

    Raises
    ------
    InputError
        When ``direction`` is not ``">"`` or ``"<"``, ``threshold`` is not a finite number, or
        ``interval`` is not an interval of two numbers with $\mathit{low} \le \mathit{high}$.
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
    """The words of `verdict()`'s rule, recorded with every finding.

    Parameters
    ----------
    threshold : float
        The claimed bound.
    direction : str
        ``">"`` or ``"<"``: the side of ``threshold`` the statement claims.
    confidence : float
        The interval's confidence level, written as a percentage.

    Returns
    -------
    str
        One sentence: when the rule says ``HELD``, ``NOT HELD`` and ``UNRESOLVED``.
    """
    other = "<=" if direction == ">" else ">="
    return (
        f"HELD if the {confidence:.0%} interval lies wholly {direction} {threshold:g}; "
        f"NOT HELD if it lies wholly {other} {threshold:g}; otherwise UNRESOLVED"
    )


def compare(theory: Any, simulation: Any) -> dict[str, float]:
    r"""Theory against simulation on the same grid: the relative Frobenius error
    $\lVert s - t \rVert_F / \lVert t \rVert_F$ and the mean absolute error $\overline{|s - t|}$,
    both always reported (as neural-tangents' ``assert_close_matrices`` does). Non-finite entries
    of either are left out; a zero theory gives an infinite relative error, no finite pair ``nan``.

    Parameters
    ----------
    theory : Any
        The theory's values $t$.
    simulation : Any
        The simulated values $s$, of the same shape.

    Returns
    -------
    dict[str, float]
        ``relative_frobenius``, ``mean_absolute`` and ``n`` (the entries compared).

    Raises
    ------
    ValueError
        When the two shapes differ.
    """
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

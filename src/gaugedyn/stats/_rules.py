r"""The catalogue of verdict rules: each turns per-seed values into HELD / NOT HELD / UNRESOLVED.

A rule is one named object (`Rule`) holding its test statistic, its interval, its verdict,
its assumptions and the words of its rule; `RULES` maps each name to its rule, so a finding
names the rule it was judged by. Every rule reads its verdict off a 95% interval of one
parameter (never a min or max inside a bootstrap; a band rule's word past either edge off the
97.5% one):

- *threshold* rules claim $\theta > c$ (or $\theta < c$): HELD when the interval lies wholly on the
  claimed side, NOT HELD when it lies wholly on the other side (touching $c$ counts as the
  other side), UNRESOLVED otherwise; each side is a one-sided test at 2.5%;
- *band* rules claim $lo < \theta < hi$ (``inside``, equivalence by two one-sided tests at
  2.5% each) or $\theta$ outside $[lo, hi]$ (``outside``, a relevant difference); the word
  that needs the interval past either edge (NOT HELD of ``inside``, HELD of ``outside``) reads
  the 97.5% interval, each edge at 1.25%, so at an edge it is at most 2.5% even where the far
  edge adds its own chance (a band narrow against the spread);
- *cell* rules claim $\theta_c > c$ in every cell (intersection-union test: HELD when every
  cell's own test holds; NOT HELD when some cell is on the wrong side after Holm's correction)
  or in some cell (union-intersection test: HELD when some cell holds after Holm; NOT HELD when
  every cell's own test says the wrong side). Their interval is one for $\min_c \theta_c$ (or
  $\max_c \theta_c$) built from the per-cell one-sided bounds, so the verdict is again the
  interval's.

The rules' error rates, interval coverage and power are measured by simulation in
`gaugedyn.stats._audit` (``gaugedyn audit-rules``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError
from . import _estimators as est
from ._intervals import CONFIDENCE, Interval

WORDS = {1: "HELD", 0: "UNRESOLVED", -1: "NOT HELD"}
UNDERPOWERED = 0.8
"""Power below which a finding is labelled ``underpowered``."""
DEPENDS = "depends on the reading"

ESTIMATORS = (
    "mean",
    "paired",
    "median",
    "paired_median",
    "paired_sign",
    "slope",
    "proportion",
    "point",
)
CLAIMS = ("threshold", "inside", "outside", "every_cell", "some_cell")
_MIN_N = {
    "mean": 2,
    "paired": 2,
    "median": 6,
    "paired_median": 6,
    "paired_sign": 2,
    "slope": 6,
    "proportion": 1,
    "point": 1,
}
r"""The fewest values a rule judges (fewer: UNRESOLVED with the reason). A median needs 6, the
fewest for which an order statistic reaches the 95% level ($2^{-n} \le 2.5\%$); a slope needs 6
rows: 4 residual degrees of freedom, and 3 left for the lack-of-fit test."""
LACK_OF_FIT = 0.05
"""A slope rule says UNRESOLVED when its quadratic term is significant at this level
(`gaugedyn.stats._estimators.lack_of_fit()`): the rows bend, and a line's slope is not the
parameter the claim is about."""


@dataclass(frozen=True)
class Judgement:
    """A rule's verdict on one data set, with everything needed to recompute it.

    ``values`` are the per-seed values as judged (``[x, y]`` pairs for a paired or slope rule,
    one row per seed and one column per cell for a cell rule); ``cells`` (cell rules only) holds
    per cell the estimate, the 95% interval and the Holm-adjusted one-sided p-value of the side
    that decides the verdict; ``draw`` (randomised rules only: the proportion and the median
    rules) is the uniform draw the interval was computed with (one per cell for a cell rule), so
    the verdict can be recomputed from the record.
    ``reason`` says why a sample could not be judged (too few values or rows, no spread, ties,
    a line that does not fit: the verdict is then UNRESOLVED) or which cells could not;
    ``lack_of_fit`` (slope rules) is the p-value of the quadratic term added to the line;
    ``edge_interval`` (band rules) is the 97.5% interval the word past an edge reads (NOT HELD
    of ``inside``, HELD of ``outside``), beside the 95% ``(low, high)`` the other word reads.
    """

    rule: str
    verdict: str
    estimate: float
    low: float
    high: float
    threshold: Any
    direction: str
    n: int
    words: str
    values: Any = None
    cells: list | None = None
    draw: float | list[float] | None = None
    reason: str | None = None
    lack_of_fit: float | None = None
    edge_interval: tuple[float, float] | None = None

    @property
    def interval(self) -> Interval:
        return Interval(self.estimate, self.low, self.high)

    def as_dict(self) -> dict:
        d = {
            "rule": self.rule,
            "verdict": self.verdict,
            "estimate": self.estimate,
            "interval": [self.low, self.high],
            "threshold": self.threshold,
            "direction": self.direction,
            "n": self.n,
            "words": self.words,
            "per_seed": self.values,
        }
        if self.cells is not None:
            d["cells"] = self.cells
        if self.draw is not None:
            d["uniform_draw"] = self.draw
        if self.reason is not None:
            d["reason"] = self.reason
        if self.lack_of_fit is not None:
            d["lack_of_fit"] = self.lack_of_fit
        if self.edge_interval is not None:
            d["edge_interval"] = list(self.edge_interval)
        return d


def _g(v: Any) -> str:
    return f"{v:g}" if isinstance(v, int | float) else str(v)


def _codes_threshold(low, high, threshold, direction):
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if direction == ">":
        return np.where(low > threshold, 1, np.where(high <= threshold, -1, 0))
    return np.where(high < threshold, 1, np.where(low >= threshold, -1, 0))


def _codes_band(low, high, edge_low, edge_high, band, inside):
    """A band claim's codes: the word that needs the interval on both sides of the band (inside
    it, or inside the closed band for NOT HELD of ``outside``) reads the 95% interval
    ``(low, high)``; the word that needs it past either edge reads the wider interval
    ``(edge_low, edge_high)`` whose sides are at half the level each, so at an edge that word
    is at most one side's size (2.5%) even where the far edge adds its own chance."""
    lo, hi = band
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    edge_low, edge_high = np.asarray(edge_low, dtype=float), np.asarray(edge_high, dtype=float)
    if inside:
        within = (low > lo) & (high < hi)
        closed_beyond = (edge_high <= lo) | (edge_low >= hi)
        return np.where(within, 1, np.where(closed_beyond, -1, 0))
    beyond = (edge_high < lo) | (edge_low > hi)
    closed_within = (low >= lo) & (high <= hi)
    return np.where(beyond, 1, np.where(closed_within, -1, 0))


@dataclass(frozen=True)
class Rule:
    """A verdict rule: an estimator (``mean``, ``paired``, ``median``, ``slope``,
    ``proportion``; ``point``, a deterministic value whose interval is the value itself) with
    one-sided bounds at 2.5% (a band claim's word past an edge: at 1.25%), and the geometry of
    its claim (``threshold``, ``inside``, ``outside``, ``every_cell``, ``some_cell``).

    ``judge(*samples, threshold=..., direction=...)`` gives a `Judgement`;
    ``evaluate`` is the same rule vectorised over leading (experiment) axes, used by the audit;
    its power (the probability of HELD when the truth lies ``effect`` standard deviations
    inside the claim) is `gaugedyn.stats.power()` (simulated, as the audit does).
    """

    name: str
    estimator: str
    claim: str
    statistic: str
    interval_words: str
    assumptions: str
    options: Mapping[str, Any] = field(default_factory=dict)

    # -- the claim's geometry -------------------------------------------------------------------

    @property
    def directions(self) -> tuple[str, ...]:
        if self.claim in ("inside", "outside"):
            return (self.claim,)
        return (">", "<")

    @property
    def cells(self) -> bool:
        return self.claim in ("every_cell", "some_cell")

    @property
    def randomised(self) -> bool:
        """Whether the rule's interval uses a uniform draw: the randomised exact proportion and
        the median rules (the randomised sign test), one draw per experiment (per cell for a
        cell rule)."""
        if self.estimator in ("median", "paired_median", "paired_sign"):
            return True
        return self.estimator == "proportion" and self.options.get("method") == "randomised"

    @property
    def center(self) -> str:
        """The location the rule's parameter is (``mean`` or ``median``)."""
        medians = ("median", "paired_median", "order_statistics", "interpolated")
        return "median" if self.estimator in medians else "mean"

    @property
    def paired(self) -> bool:
        """Whether the rule judges the per-seed differences $x - y$ of two samples."""
        return self.estimator in ("paired", "paired_median", "paired_sign")

    def words(
        self, threshold: Any, direction: str | None = None, confidence: float = CONFIDENCE
    ) -> str:
        """The rule in words, as recorded with every finding (a threshold may be a symbol),
        ending with when it says UNRESOLVED whatever the interval (`caveat()`)."""
        return self._claim_words(threshold, direction, confidence) + self.caveat

    @property
    def caveat(self) -> str:
        """When the rule says UNRESOLVED whatever the data's side: too few values, no spread,
        a line that does not fit (empty for the proportion and deterministic rules)."""
        if self.estimator == "slope":
            return (
                f"; UNRESOLVED with fewer than {_MIN_N['slope']} rows (4 residual degrees of "
                f"freedom), a zero-width interval, or a quadratic term significant at "
                f"{LACK_OF_FIT:.0%} (lack of fit)"
            )
        if self.center == "median":
            return (
                f"; UNRESOLVED with fewer than {_MIN_N['median']} values or a zero-width "
                "interval (tied order statistics)"
            )
        if self.estimator in ("mean", "paired"):
            return "; UNRESOLVED where the interval has zero width (no spread)"
        if self.estimator == "paired_sign":
            return (
                f"; UNRESOLVED with fewer than {_MIN_N['paired_sign']} values or where every "
                "difference is tied (no seed off the threshold)"
            )
        return ""

    def _claim_words(self, threshold: Any, direction: str | None, confidence: float) -> str:
        threshold = (
            tuple(map(_g, threshold)) if isinstance(threshold, tuple | list) else _g(threshold)
        )
        ci = (
            self.interval_words
            if self.estimator == "point"
            else f"the {confidence:.0%} {self.interval_words}"
        )
        if self.claim in ("inside", "outside"):
            lo, hi = threshold
            wide = (
                f"widened to {1 - (1 - confidence) / 2:.1%} (each edge tested at "
                f"{(1 - confidence) / 4:.2%})"
            )
            inner = (
                f"HELD if {ci} lies wholly inside ({lo}, {hi}); NOT HELD if that interval, "
                f"{wide}, lies wholly at or beyond one edge; otherwise UNRESOLVED"
            )
            if self.claim == "outside":
                inner = (
                    f"HELD if {ci}, {wide}, lies wholly beyond one edge of [{lo}, {hi}]; "
                    f"NOT HELD if the {confidence:.0%} interval lies wholly inside it; "
                    "otherwise UNRESOLVED"
                )
            return f"{self.name}: {inner}"
        direction = direction or ">"
        other = "<=" if direction == ">" else ">="
        if self.estimator == "paired_sign":
            side = "above" if direction == ">" else "below"
            return (
                f"{self.name}: HELD if {ci} of the share of seeds with x - y {direction} "
                f"{threshold} among those where x - y != {threshold} (ties dropped; the sign "
                f"test inverted) lies wholly {side} 1/2; NOT HELD if it lies wholly on the "
                "other side of 1/2 (touching counts as the other side); otherwise UNRESOLVED"
            )
        if self.claim == "threshold":
            return (
                f"{self.name}: HELD if {ci} lies wholly {direction} {threshold}; "
                f"NOT HELD if it lies wholly {other} {threshold}; otherwise UNRESOLVED"
            )
        side = f"{direction} {threshold}"
        test = "the one-sided t test"
        if self.estimator == "median":
            test = (
                "the randomised sign test that interval inverts (its one-sided p-values, at the "
                "cell's uniform draw)"
            )
        if self.estimator == "proportion":
            test = (
                "the randomised binomial test that interval inverts (its one-sided p-values, at "
                "the cell's uniform draw)"
            )
        if self.claim == "every_cell":
            return (
                f"{self.name}: HELD if in every cell {ci} lies wholly {side}; NOT HELD if "
                f"some cell lies {other} {threshold} by {test} at 2.5% after "
                "Holm's correction over the cells; otherwise UNRESOLVED"
            )
        return (
            f"{self.name}: HELD if some cell lies {side} by {test} at 2.5% after "
            f"Holm's correction over the cells; NOT HELD if in every cell {ci} lies wholly "
            f"{other} {threshold}; otherwise UNRESOLVED"
        )

    # -- vectorised core ------------------------------------------------------------------------

    def bounds(
        self,
        samples: Sequence[np.ndarray],
        level: float,
        draws: np.ndarray | None = None,
        side: str | None = None,
    ) -> est.Bounds:
        """One-sided bounds at ``level`` of the rule's parameter over the last axis (``draws``:
        one uniform draw per experiment, for a randomised rule). ``side`` ``"lower"`` or
        ``"upper"``: only that bound is needed (the randomised proportion interval then
        skips the other's root find and leaves it NaN; other estimators give both)."""
        if self.estimator == "mean":
            return est.t_bounds(samples[0], level)
        if self.estimator == "paired":
            return est.t_bounds(np.asarray(samples[0]) - np.asarray(samples[1]), level)
        if self.estimator == "paired_sign":
            if draws is None:
                raise ValueError(f"{self.name}: a randomised rule needs its uniform draws")
            d = np.asarray(samples[0], dtype=float) - np.asarray(samples[1], dtype=float)
            return est.randomised_sign_bounds(d, 0.0, level, draws)
        if self.estimator in ("median", "paired_median"):
            if draws is None:
                raise ValueError(f"{self.name}: a randomised rule needs its uniform draws")
            x = np.asarray(samples[0], dtype=float)
            if self.estimator == "paired_median":
                x = x - np.asarray(samples[1], dtype=float)
            return est.randomised_median_bounds(x, level, draws)
        if self.estimator == "interpolated":
            return est.median_bounds(samples[0], level)
        if self.estimator == "slope":
            return est.slope_bounds(samples[0], samples[1], level)
        if self.estimator == "bootstrap":
            return est.bootstrap_bounds(
                samples[0], level, self.options["method"], self.options["rng"]
            )
        if self.estimator == "point":
            v = np.asarray(samples[0], dtype=float)[..., 0]
            return est.Bounds(v, v, v)
        if self.estimator == "order_statistics":
            return est.median_bounds(samples[0], level, interpolate=False)
        if self.randomised:
            if draws is None:
                raise ValueError(
                    f"{self.name}: a randomised rule needs one uniform draw per experiment (draws)"
                )
            return est.randomised_proportion_bounds(samples[0], level, draws, side)
        return est.proportion_bounds(samples[0], level, self.options.get("method", "wilson"))

    def pvalues(
        self, x: np.ndarray, threshold: float, draws: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(p_above, p_below)`` one-sided p-values of the per-cell test (cell rules): the
        t test for a mean, for a median the randomised sign test its interval inverts
        (`gaugedyn.stats._estimators.randomised_median_pvalues()`, the cell's draw), so a
        cell's p-value, its interval and the verdict come from one test."""
        if self.estimator == "median":
            return est.randomised_median_pvalues(x, threshold, draws)
        if self.estimator == "proportion":
            return est.randomised_proportion_pvalues(x, threshold, draws)
        return est.t_pvalues(x, threshold)

    def _open(self, b: est.Bounds) -> est.Bounds:
        """``b`` with every zero-width interval opened to ``(-inf, inf)``: a sample with no
        spread (every value equal, or the deciding order statistics tied) cannot be judged."""
        if self.estimator in ("point", "proportion"):
            return b
        flat = np.asarray(b.lower) == np.asarray(b.upper)
        return est.Bounds(
            b.estimate, np.where(flat, -np.inf, b.lower), np.where(flat, np.inf, b.upper)
        )

    def evaluate(
        self,
        samples: Sequence[np.ndarray],
        threshold: Any,
        direction: str,
        confidence: float = CONFIDENCE,
        *,
        rng: np.random.Generator | None = None,
        draws: Any = None,
    ) -> dict[str, np.ndarray]:
        """Verdict codes (1 HELD, 0 UNRESOLVED, -1 NOT HELD), estimate and interval over the
        leading axes. Cell rules take ``samples[0]`` of shape ``(..., n, cells)`` and also
        return ``cell_low`` / ``cell_high`` / ``cell_estimate`` ``(..., cells)``. A randomised
        rule takes one uniform draw per experiment, ``draws`` or else drawn from ``rng``, and
        returns them as ``draw``. A zero-width interval (no spread, ties) is UNRESOLVED (a
        cell with one cannot be judged); a slope rule also returns ``lack_of_fit`` and is
        UNRESOLVED below `_MIN_N` rows or where the line does not fit
        (`LACK_OF_FIT`). A band rule also returns ``edge_low`` / ``edge_high``, the 97.5%
        interval its word past an edge reads."""
        level = 0.5 + confidence / 2
        if not self.cells:
            out = {}
            if self.randomised:
                if draws is None:
                    if rng is None:
                        raise InputError(
                            f"rng=None is not allowed for rule {self.name!r}: its "
                            "interval is randomised; pass a generator (from the "
                            "run's seed) or the draws"
                        )
                    draws = rng.random(np.shape(samples[0])[:-1])
                out["draw"] = draws = np.asarray(draws, dtype=float)
            if self.estimator == "paired_sign":  # the share of untied signs against 1/2
                x = np.asarray(samples[0], dtype=float) - threshold
                b = self.bounds((x, samples[1]), level, draws)
                code = _codes_threshold(b.lower, b.upper, 0.5, direction)
                few = np.shape(samples[-1])[-1] < _MIN_N[self.estimator]
                code = np.where(few, 0, code)
                return out | {"code": code, "estimate": b.estimate, "low": b.lower, "high": b.upper}
            b = self.bounds(samples, level, draws)
            flat = self.estimator not in ("point", "proportion") and np.asarray(b.lower == b.upper)
            if self.claim == "threshold":
                code = _codes_threshold(b.lower, b.upper, threshold, direction)
            else:  # the word past either edge: each edge at half the one-sided level
                e = self.bounds(samples, 1 - (1 - level) / 2, draws)
                code = _codes_band(
                    b.lower, b.upper, e.lower, e.upper, threshold, self.claim == "inside"
                )
                out |= {"edge_low": e.lower, "edge_high": e.upper}
            few = np.shape(samples[-1])[-1] < _MIN_N.get(self.estimator, 1)
            code = np.where(flat | few, 0, code)
            if self.estimator == "slope":
                n = np.shape(samples[0])[-1]
                out["lack_of_fit"] = lof = est.lack_of_fit(samples[0], samples[1])
                bent = (n < _MIN_N["slope"]) | (np.nan_to_num(lof, nan=1.0) < LACK_OF_FIT)
                code = np.where(bent, 0, code)
            return out | {"code": code, "estimate": b.estimate, "low": b.lower, "high": b.upper}
        x = np.swapaxes(np.asarray(samples[0], dtype=float), -1, -2)  # (..., cells, n)
        m = x.shape[-2]
        extra = {}
        if self.randomised:  # one draw per cell
            if draws is None:
                if rng is None:
                    raise InputError(
                        f"rng=None is not allowed for rule {self.name!r}: its interval is "
                        "randomised; pass a generator (from the run's seed) or the draws"
                    )
                draws = rng.random(x.shape[:-1])
            extra["draw"] = draws = np.asarray(draws, dtype=float)
        low_side_min = (self.claim == "every_cell") == (direction == ">")
        plain = self._open(self.bounds((x,), level, draws))
        holm_side = "upper" if low_side_min else "lower"  # the Holm-level bound that is read
        holm = self._open(self.bounds((x,), 1 - (1 - level) / m, draws, holm_side))
        if x.shape[-1] < _MIN_N.get(self.estimator, 1):  # too few values: no cell can be judged
            plain, holm = (
                self._open(est.Bounds(b.estimate, b.estimate, b.estimate)) for b in (plain, holm)
            )
        if low_side_min:  # the parameter is min_c theta_c
            estimate = plain.estimate.min(axis=-1)
            low, high = plain.lower.min(axis=-1), holm.upper.min(axis=-1)
        else:  # the parameter is max_c theta_c
            estimate = plain.estimate.max(axis=-1)
            low, high = holm.lower.max(axis=-1), plain.upper.max(axis=-1)
        return extra | {
            "code": _codes_threshold(low, high, threshold, direction),
            "estimate": estimate,
            "low": low,
            "high": high,
            "cell_estimate": plain.estimate,
            "cell_low": plain.lower,
            "cell_high": plain.upper,
        }

    # -- one data set ---------------------------------------------------------------------------

    def _check_claim(self, threshold: Any, direction: str | None, confidence: float):
        if not (isinstance(confidence, int | float) and 0 < confidence < 1):
            raise InputError(f"confidence={confidence!r} is not allowed: a number in (0, 1)")
        if self.claim in ("inside", "outside"):
            ok = (
                isinstance(threshold, Sequence)
                and len(threshold) == 2
                and all(isinstance(v, int | float) and math.isfinite(v) for v in threshold)
                and threshold[0] < threshold[1]
            )
            if not ok:
                raise InputError(
                    f"threshold={threshold!r} is not allowed for rule "
                    f"{self.name!r}: a band (lo, hi) of finite numbers, lo < hi"
                )
            if self.estimator == "proportion" and not 0 <= threshold[0] < threshold[1] <= 1:
                raise InputError(
                    f"threshold={threshold!r} is not allowed for rule {self.name!r}: a band "
                    "(lo, hi) of proportions, 0 <= lo < hi <= 1"
                )
            if direction not in (None, self.claim):
                raise InputError(
                    f"direction={direction!r} is not allowed for rule "
                    f"{self.name!r}: {self.claim!r} (or omit it)"
                )
            return (float(threshold[0]), float(threshold[1])), self.claim
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
        ):
            raise InputError(
                f"threshold={threshold!r} is not allowed for rule {self.name!r}: a finite number"
            )
        if self.estimator == "proportion" and not 0 <= threshold <= 1:
            raise InputError(
                f"threshold={threshold!r} is not allowed for rule {self.name!r}: a proportion "
                "in [0, 1]"
            )
        direction = ">" if direction is None else direction
        if direction not in self.directions:
            raise InputError(
                f"direction={direction!r} is not allowed for rule {self.name!r}: '>' or '<'"
            )
        return float(threshold), direction

    def _clean(self, samples: tuple) -> tuple[np.ndarray, ...]:
        want = 2 if self.paired or self.estimator == "slope" else 1
        if len(samples) != want:
            what = "two arrays (x, y)" if want == 2 else "one array of per-seed values"
            raise InputError(f"samples: rule {self.name!r} takes {what}, got {len(samples)}")
        try:
            arrays = [np.asarray(s, dtype=float) for s in samples]
        except (TypeError, ValueError) as err:
            raise InputError(
                f"values: not numeric ({err}); rule {self.name!r} takes arrays of numbers"
            ) from None
        if self.cells:
            if arrays[0].ndim != 2 or arrays[0].shape[1] < 1:
                raise InputError(
                    f"values of shape {arrays[0].shape} are not allowed for rule "
                    f"{self.name!r}: a 2-D array (seeds, cells)"
                )
            a = arrays[0][np.isfinite(arrays[0])]
            if self.estimator == "proportion" and not np.all((a == 0) | (a == 1)):
                raise InputError(
                    f"values are not allowed for rule {self.name!r}: outcomes 0 or 1 "
                    "(or booleans), one per trial and cell"
                )
            return (arrays[0],)
        arrays = [a.ravel() for a in arrays]
        if want == 2 and arrays[0].size != arrays[1].size:
            raise InputError(
                f"samples: rule {self.name!r} needs x and y of equal length, got "
                f"{arrays[0].size} and {arrays[1].size}"
            )
        keep = np.all([np.isfinite(a) for a in arrays], axis=0)
        arrays = [a[keep] for a in arrays]
        if self.estimator == "point" and arrays[0].size > 1:
            raise InputError(
                f"values: rule {self.name!r} takes one value (a deterministic "
                f"computation has no seeds to pool), got {arrays[0].size}"
            )
        if self.estimator == "proportion" and not np.all((arrays[0] == 0) | (arrays[0] == 1)):
            raise InputError(
                f"values are not allowed for rule {self.name!r}: outcomes 0 or 1 "
                "(or booleans), one per trial"
            )
        return tuple(arrays)

    def judge(
        self,
        *samples: Any,
        threshold: Any,
        direction: str | None = None,
        confidence: float = CONFIDENCE,
        rng: np.random.Generator | None = None,
        draw: float | Sequence[float] | None = None,
    ) -> Judgement:
        """The rule's verdict on one data set. Non-finite values are dropped (a seed with any
        non-finite member is dropped whole). A sample the rule cannot judge is ``UNRESOLVED``
        with the ``reason``: fewer values than the rule's minimum (`_MIN_N`: 2 for a
        mean, 6 for a median, 6 rows for a slope), no spread or tied order statistics (a
        zero-width interval), a slope whose ``x`` takes one value or whose rows bend (its
        quadratic term significant at `LACK_OF_FIT`, recorded as ``lack_of_fit``). A
        randomised rule (the proportion and the median rules) needs ``rng``, a generator
        derived from the run's seed (`gaugedyn.stats.generator()`), from which it takes one
        uniform draw (one per cell for a cell rule), recorded in the judgement so that the
        verdict can be recomputed: ``draw`` (the recorded draw in ``[0, 1)``, or the list of
        them) instead of ``rng`` recomputes it."""
        threshold, direction = self._check_claim(threshold, direction, confidence)
        arrays = self._clean(samples)
        drawn: float | list[float] | None = None
        if self.randomised:
            drawn = self._check_draw(rng, draw, arrays[0].shape[1] if self.cells else None)
        elif draw is not None:
            raise InputError(
                f"draw={draw!r} is not allowed for rule {self.name!r}: only a "
                "randomised rule (the proportion and the median rules) takes a uniform draw"
            )
        words = self.words(threshold, direction, confidence)
        if isinstance(drawn, float):
            words += f" (uniform draw u = {drawn!r}, from the run's analysis seed)"
        elif drawn is not None:
            words += " (one uniform draw per cell, from the run's analysis seed, recorded)"
        values = [a.tolist() for a in arrays] if len(arrays) == 2 else arrays[0].tolist()
        if self.cells:
            return self._judge_cells(arrays[0], threshold, direction, confidence, words, drawn)
        n = int(arrays[0].size)
        claim = (threshold, direction, n, words, values)
        reason = self._too_few(n, arrays)
        if reason:
            nan = math.nan
            centre = self._centre(arrays, threshold)
            return Judgement(
                self.name, "UNRESOLVED", centre, nan, nan, *claim, draw=drawn, reason=reason
            )
        out = self.evaluate(arrays, threshold, direction, confidence, draws=drawn)
        word, lof = WORDS[int(out["code"])], None
        low, high = float(out["low"]), float(out["high"])
        if self.estimator == "paired_sign":
            if not np.any(arrays[0] - arrays[1] != threshold):
                word, reason = "UNRESOLVED", "every difference is tied: no seed off the threshold"
        elif self.estimator not in ("point", "proportion") and low == high:
            word, reason = "UNRESOLVED", self._flat_reason()
        if self.estimator == "slope":
            lof = float(out["lack_of_fit"])
            if reason is None and lof < LACK_OF_FIT:
                word = "UNRESOLVED"
                reason = (
                    f"lack of fit: the quadratic term added to the line has p = {lof:.3g} "
                    f"< {LACK_OF_FIT:g} (the rows bend; the slope is not one exponent)"
                )
        edge = None
        if "edge_low" in out:
            edge = (float(out["edge_low"]), float(out["edge_high"]))
        return Judgement(
            self.name,
            word,
            float(out["estimate"]),
            low,
            high,
            *claim,
            draw=drawn,
            reason=reason,
            lack_of_fit=lof,
            edge_interval=edge,
        )

    def _too_few(self, n: int, arrays: Sequence[np.ndarray]) -> str | None:
        """Why ``n`` values cannot be judged by this rule (``None`` when they can)."""
        need = _MIN_N[self.estimator]
        if self.estimator == "slope" and n < need:
            return (
                f"too few rows: {n} rows leave {max(n - 2, 0)} residual degrees of freedom; "
                f"a slope needs at least {need} (4 residual degrees of freedom and a "
                "lack-of-fit test)"
            )
        if n < need:
            what = (
                "for a finite 95% interval of the median (2^-n <= 2.5%)"
                if self.center == "median"
                else "for an interval"
            )
            return f"too few values: {n}, at least {need} needed {what}"
        if self.estimator == "slope" and np.ptp(arrays[0]) == 0:
            return "x takes a single value: no slope"
        return None

    def _centre(self, arrays: Sequence[np.ndarray], threshold: Any = 0.0) -> float:
        """The rule's estimate where there are too few values for an interval (``nan`` where
        there is none: no values, or a slope through fewer than two distinct ``x``)."""
        a = arrays[0]
        if self.paired:
            a = arrays[0] - arrays[1]
        if self.estimator == "slope":
            x, y = arrays
            return float(np.polyfit(x, y, 1)[0]) if np.unique(x).size >= 2 else math.nan
        if self.estimator == "paired_sign":
            untied = a[a != threshold]
            return float(np.mean(untied > threshold)) if untied.size else math.nan
        if a.size == 0 or self.estimator == "point":
            return float(a[0]) if a.size else math.nan
        return float(np.median(a) if self.center == "median" else np.mean(a))

    def _flat_reason(self) -> str:
        if self.center == "median":
            return "zero-width interval: the order statistics that bound the median are tied"
        if self.estimator == "slope":
            return "zero-width interval: the rows lie exactly on a line (no residual spread)"
        return "zero-width interval: every value is the same (no spread)"

    def _check_draw(self, rng: Any, draw: Any, cells: int | None = None) -> Any:
        """The uniform draw (``cells`` of them for a cell rule): ``draw`` checked, or taken
        from ``rng``."""
        if draw is not None:
            many = list(draw) if isinstance(draw, list | tuple | np.ndarray) else [draw]
            ok = (
                all(
                    isinstance(d, int | float) and not isinstance(d, bool) and 0 <= d < 1
                    for d in many
                )
                and rng is None
                and len(many) == (cells or 1)
                and (cells is not None or not isinstance(draw, list | tuple | np.ndarray))
            )
            if not ok:
                what = f"a list of {cells} numbers" if cells else "a number"
                raise InputError(
                    f"draw={draw!r} is not allowed for rule {self.name!r}: {what} in [0, 1), "
                    "the recorded uniform draw, given without rng"
                )
            return [float(d) for d in many] if cells is not None else float(draw)
        if not isinstance(rng, np.random.Generator):
            raise InputError(
                f"rng={rng!r} is not allowed for rule {self.name!r}: its interval "
                "is randomised; pass rng=gaugedyn.stats.generator(seed, label) "
                "from the run's analysis seed, so that a rerun reproduces the "
                "verdict (or draw=, the recorded uniform draw)"
            )
        if cells is not None:
            return [float(d) for d in rng.random(cells)]
        return float(rng.random())

    def _cell_bounds(
        self,
        cols: list[np.ndarray],
        whys: list[str | None],
        level: float,
        holm_level: float,
        draws: Any,
        holm_side: str,
    ) -> dict[int, tuple[est.Bounds, est.Bounds]]:
        """Per judgeable cell (``whys[c]`` None), its bounds at ``level`` and its
        ``holm_side`` bound at ``holm_level``. The randomised proportion rule bounds every cell
        in one vectorised root find per level (the cells' trial counts may differ; each bound
        is the root find of that cell alone, element by element); other rules cell by cell."""
        judged = [c for c, why in enumerate(whys) if why is None]
        if not (self.randomised and self.estimator == "proportion" and judged):
            return {
                c: (
                    self.bounds((cols[c],), level, None if draws is None else draws[c]),
                    self.bounds(
                        (cols[c],), holm_level, None if draws is None else draws[c], holm_side
                    ),
                )
                for c in judged
            }
        k = np.array([np.rint(cols[c].sum()) for c in judged])
        n = np.array([float(cols[c].size) for c in judged])
        u = np.array([draws[c] for c in judged], dtype=float)
        plain = est._randomised_bounds(k, n, level, u)
        holm = est._randomised_bounds(k, n, holm_level, u, holm_side)
        return {
            c: (
                est.Bounds(k[i] / n[i], plain[0][i], plain[1][i]),
                est.Bounds(k[i] / n[i], holm[0][i], holm[1][i]),
            )
            for i, c in enumerate(judged)
        }

    def _judge_cells(self, x, threshold, direction, confidence, words, draws) -> Judgement:
        """Cells may lose different seeds to non-finite values, so each is bounded alone. A cell
        the rule cannot judge (too few values, no spread, tied order statistics) gets the
        interval ``(-inf, inf)`` and p-value 1: it cannot be on either side, so an
        ``every_cell`` claim is not HELD while it is there, but another cell can still make it
        NOT HELD; the judgement's ``reason`` names such cells."""
        level = 0.5 + confidence / 2
        m = x.shape[1]
        min_side = (self.claim == "every_cell") == (direction == ">")
        holm_side = "upper" if min_side else "lower"  # the Holm-level bound that is read
        rows: list[tuple] = []
        bad: list[str] = []
        cols = [x[:, c][np.isfinite(x[:, c])] for c in range(m)]
        whys = [self._too_few(col.size, (col,)) for col in cols]
        bounds = self._cell_bounds(cols, whys, level, 1 - (1 - level) / m, draws, holm_side)
        for c, (col, why) in enumerate(zip(cols, whys)):
            u = None if draws is None else draws[c]
            if why is None:
                b, h = bounds[c]
                flat = float(b.lower) == float(b.upper) or float(h.lower) == float(h.upper)
                if flat and self.estimator != "proportion":  # an interval of a share may be
                    why = self._flat_reason()  # a point (every trial a success, u near 1)
            if why is not None:
                centre = np.median if self.center == "median" else np.mean
                estimate = float(centre(col)) if col.size else math.nan
                bad.append(f"cell {c}: {why}")
                inf = math.inf
                rows.append(
                    (estimate if col.size else math.nan, -inf, inf, -inf, inf, 1, 1, col.size)
                )
                continue
            above, below = self.pvalues(col, threshold, u)
            rows.append(
                (
                    float(b.estimate),
                    float(b.lower),
                    float(b.upper),
                    float(h.lower),
                    float(h.upper),
                    float(above),
                    float(below),
                    col.size,
                )
            )
        r = np.array(rows, dtype=float)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # every cell's estimate nan
            if min_side:
                estimate, low, high = np.nanmin(r[:, 0]), r[:, 1].min(), r[:, 4].min()
            else:
                estimate, low, high = np.nanmax(r[:, 0]), r[:, 3].max(), r[:, 2].max()
        wrong = r[:, 6] if direction == ">" else r[:, 5]
        right = r[:, 5] if direction == ">" else r[:, 6]
        deciding = wrong if self.claim == "every_cell" else right
        adjusted = est.holm(np.where(np.isfinite(deciding), deciding, 1.0))
        word = WORDS[int(_codes_threshold(low, high, threshold, direction))]
        cells = [
            {"estimate": row[0], "interval": [row[1], row[2]], "n": int(row[7]), "p_holm": float(p)}
            for row, p in zip(rows, adjusted)
        ]
        return Judgement(
            self.name,
            word,
            float(estimate),
            float(low),
            float(high),
            threshold,
            direction,
            int(x.shape[0]),
            words,
            x.tolist(),
            cells,
            draw=draws,
            reason="; ".join(bad) or None,
        )


_T = "Student t interval of the mean"
_T_PAIRED = "Student t interval of the mean paired difference"
_MEDIAN = (
    "randomised exact interval of the median (the randomised sign test inverted: an order "
    "statistic or its neighbour, chosen by one uniform draw, so it covers exactly 95% for any "
    "continuous distribution)"
)
_TIES = (
    "any distribution, ties included: a value on an edge counts against HELD and for NOT HELD, "
    "so each word is at most 2.5% for every distribution (exactly 2.5% at the boundary for a "
    "continuous one)"
)
_SLOPE = "Student t interval of the least-squares slope"
_STEVENS = "randomised exact (Stevens 1950) interval of the proportion"
_INDEPENDENT = "independent seeds (one value per seed)"
_NORMALISH = (
    "the seed mean is close to normal: exact for normal values, conservative for "
    "symmetric heavy tails (t(3)); under-covers for strongly skewed values "
    "(lognormal at 10 seeds: use a median rule)"
)
_BAND_INSIDE = "HELD by two one-sided tests at 2.5% each; NOT HELD past either edge at 1.25%"
_BAND_OUTSIDE = "HELD past either edge at 1.25%; NOT HELD by two one-sided tests at 2.5% each"
_POINT = (
    "the value of one deterministic computation (a numerical integration, "
    "bit-reproducible for the same configuration); no sampling error, so the interval is "
    "the point itself and nothing is simulated: the audit lists the rule as not simulated "
    "and the power at a value is 1 when the value lies on the claimed side, else 0"
)
_CELLS = (
    "each cell as its base rule; any dependence between cells (Holm's correction and the "
    "intersection-union test need no independence)"
)

_CATALOGUE = (
    Rule(
        "mean_threshold",
        "mean",
        "threshold",
        "mean of the per-seed values",
        _T,
        f"{_INDEPENDENT}; {_NORMALISH}",
    ),
    Rule(
        "paired_difference",
        "paired",
        "threshold",
        "mean over seeds of x - y, the two measured on the same seed",
        _T_PAIRED,
        f"pairs independent across seeds; {_NORMALISH}",
    ),
    Rule(
        "paired_median",
        "paired_median",
        "threshold",
        "median over seeds of x - y, the two measured on the same seed",
        "randomised exact interval of the median paired difference (the randomised sign test "
        "inverted)",
        f"pairs independent across seeds; x - y of any shape; {_TIES}",
    ),
    Rule(
        "paired_sign",
        "paired_sign",
        "threshold",
        "share of seeds with x - y beyond the threshold among those where x - y is not on it "
        "(ties dropped), the two measured on the same seed",
        "randomised exact (Stevens 1950) interval",
        "pairs independent across seeds; x - y of any distribution, ties allowed (few distinct "
        "values, most seeds exactly on the threshold); the claim is that x - y falls beyond "
        "the threshold more often than short of it. The interval inverts the randomised sign "
        "test with ties dropped (scipy.stats.binom tails over the untied seeds, one uniform "
        "draw u per finding from the run's analysis seed, recorded with it): exact at every "
        "count of untied seeds; for paired 0/1 outcomes it is McNemar's exact test",
    ),
    Rule(
        "equivalence",
        "mean",
        "inside",
        "mean of the per-seed values",
        _T,
        f"{_INDEPENDENT}; {_NORMALISH}; {_BAND_INSIDE}",
    ),
    Rule(
        "relevant_difference",
        "mean",
        "outside",
        "mean of the per-seed values",
        _T,
        f"{_INDEPENDENT}; {_NORMALISH}; {_BAND_OUTSIDE}",
    ),
    Rule(
        "slope_threshold",
        "slope",
        "threshold",
        "least-squares slope of y on x",
        _SLOPE,
        "independent residuals of constant variance, close to normal; x fixed",
    ),
    Rule(
        "slope_band",
        "slope",
        "inside",
        "least-squares slope of y on x",
        _SLOPE,
        f"independent residuals of constant variance, close to normal; x fixed; {_BAND_INSIDE}",
    ),
    Rule(
        "proportion",
        "proportion",
        "threshold",
        "share of successes among n trials",
        _STEVENS,
        "independent trials with one success probability; the interval inverts the "
        "randomised binomial test (scipy.stats.binom tails, one uniform draw u per finding "
        "from the run's analysis seed, recorded with it), so its coverage is exactly 95% at "
        "every n and p and a rerun reproduces the verdict",
        options={"method": "randomised"},
    ),
    Rule(
        "proportion_band",
        "proportion",
        "inside",
        "share of successes among n trials",
        _STEVENS,
        "independent trials with one success probability p; the claim is lo < p < hi. HELD "
        "when the 95% randomised exact interval lies inside (lo, hi), NOT HELD when its 97.5% "
        "widening lies at or beyond one edge. Each end of the randomised interval misses p "
        "with chance exactly its one-sided level at every n and p (the proportion rule's "
        "interval, one uniform draw u per finding from the run's analysis seed, recorded "
        "with it), so for p at or beyond an edge HELD is at most 2.5% (its lower end above "
        "lo >= p, or its upper end below hi <= p), and for p inside the closed band NOT HELD "
        "is at most 1.25% + 1.25% = 2.5% (one end past each edge)",
        options={"method": "randomised"},
    ),
    Rule(
        "median_threshold",
        "median",
        "threshold",
        "median of the per-seed values",
        _MEDIAN,
        f"{_INDEPENDENT}; any shape (heavy tails, skew); {_TIES}",
    ),
    Rule(
        "median_band",
        "median",
        "inside",
        "median of the per-seed values",
        _MEDIAN,
        f"{_INDEPENDENT}; any shape; {_TIES}; {_BAND_INSIDE}",
    ),
    Rule(
        "median_relevant_difference",
        "median",
        "outside",
        "median of the per-seed values",
        _MEDIAN,
        f"{_INDEPENDENT}; any shape; {_TIES}; {_BAND_OUTSIDE}",
    ),
    Rule(
        "every_cell",
        "mean",
        "every_cell",
        "per cell, the mean of the per-seed values",
        _T + " per cell",
        f"{_CELLS}; {_NORMALISH}",
    ),
    Rule(
        "some_cell",
        "mean",
        "some_cell",
        "per cell, the mean of the per-seed values",
        _T + " per cell",
        f"{_CELLS}; {_NORMALISH}",
    ),
    Rule(
        "every_cell_median",
        "median",
        "every_cell",
        "per cell, the median of the per-seed values",
        _MEDIAN + " per cell",
        f"{_CELLS}; any shape; {_TIES}",
    ),
    Rule(
        "some_cell_median",
        "median",
        "some_cell",
        "per cell, the median of the per-seed values",
        _MEDIAN + " per cell",
        f"{_CELLS}; any shape; {_TIES}",
    ),
    Rule(
        "every_cell_proportion",
        "proportion",
        "every_cell",
        "per cell, the share of successes among the trials",
        _STEVENS + " per cell",
        f"{_CELLS}; in each cell independent trials with one success probability; the "
        "interval inverts the randomised binomial test (one uniform draw per cell from the "
        "run's analysis seed, recorded), exact in each cell, so HELD is at most 2.5% when some "
        "cell is on or beyond the threshold (intersection-union) and NOT HELD at most 2.5% when "
        "every cell is on the claimed side (Holm). A band claim lo < p_c < hi in every cell is "
        "this rule on the cells x and 1 - x at thresholds lo and 1 - hi",
        options={"method": "randomised"},
    ),
    Rule(
        "deterministic",
        "point",
        "threshold",
        "the one value of a deterministic computation",
        "the interval of the value (the point itself: no sampling error)",
        _POINT,
    ),
)

RULES: dict[str, Rule] = {r.name: r for r in _CATALOGUE}
"""Every verdict rule by name."""

_REJECTED = "rejected by the audit: under-covers at 10 seeds"
CANDIDATES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "mean_threshold[percentile bootstrap]",
            "bootstrap",
            "threshold",
            "mean",
            "percentile bootstrap interval of the mean",
            _REJECTED,
            options={"method": "percentile"},
        ),
        Rule(
            "mean_threshold[BCa bootstrap]",
            "bootstrap",
            "threshold",
            "mean",
            "BCa bootstrap interval of the mean",
            _REJECTED,
            options={"method": "BCa"},
        ),
        Rule(
            "median_threshold[exact order statistics]",
            "order_statistics",
            "threshold",
            "median",
            "order-statistic interval of the median at the next attainable level",
            "rejected by the audit: over-covers at 10 seeds (97.9% for a nominal 95%)",
        ),
        Rule(
            "median_threshold[interpolated order statistics]",
            "interpolated",
            "threshold",
            "median",
            "interval of the median from the sign test's order statistics interpolated as "
            "Hettmansperger and Sheather (1986)",
            "rejected by the audit: on skewed values it says HELD (or NOT HELD) on the "
            "threshold 3.0% of the time at 10 seeds (lognormal, log-sd 1), above 2.5% + 2 "
            "s.e.; the catalogue's median rules invert the randomised sign test instead",
        ),
        Rule(
            "proportion[Wilson]",
            "proportion",
            "threshold",
            "share of successes",
            "Wilson interval",
            "rejected by the audit: its coverage jumps with n and p (exact "
            "binomial sums: 97.9% at 10 trials and p = 1/2, 91.4% at 10 and p = 0.05, 92.3% at 16 "
            "and p = 1/2, 98.3% at 6 and p = 0.8); no interval that is not randomised attains "
            "93-97% at every trial count",
            options={"method": "wilson"},
        ),
        Rule(
            "proportion[Clopper-Pearson]",
            "proportion",
            "threshold",
            "share of successes",
            "Clopper-Pearson interval",
            "rejected by the audit: over-covers (conservative)",
            options={"method": "exact"},
        ),
    )
}
"""Rules the audit tried and rejected, kept so ``gaugedyn audit-rules --candidates`` shows why
the catalogue's rules were chosen instead (they are not in `RULES`)."""


def rule(name: str) -> Rule:
    """The rule called ``name``.

    Parameters
    ----------
    name : str
        A rule's name, a key of `RULES` (``"mean_threshold"``, ``"median_threshold"``, ...).

    Returns
    -------
    Rule
        ``RULES[name]``.

    Raises
    ------
    InputError
        When ``name`` is not a catalogue rule (the message names the allowed ones).
    """
    if name not in RULES:
        raise InputError(f"rule={name!r} is not a verdict rule: one of {', '.join(RULES)}")
    return RULES[name]


def judge(
    name: str,
    *samples: Any,
    threshold: Any,
    direction: str | None = None,
    confidence: float = CONFIDENCE,
    rng: np.random.Generator | None = None,
    draw: float | Sequence[float] | None = None,
) -> Judgement:
    r"""``RULES[name].judge(*samples, threshold=..., direction=..., rng=..., draw=...)``
    (``rng`` or ``draw``: only for a randomised rule, the proportion and median rules).

    Parameters
    ----------
    name : str
        The rule's name, a key of `RULES`.
    *samples : Any
        The per-seed values: one array, or two (``x, y``) for a paired or a slope rule; a seed
        with a non-finite member is dropped.
    threshold : Any
        A finite number, or a band ``(lo, hi)`` with $lo < hi$ for an ``inside``/``outside``
        rule.
    direction : str or None
        ``">"`` or ``"<"`` (``None``: ``">"``); for a band rule its claim or ``None``.
    confidence : float
        The confidence level, in $(0, 1)$.
    rng : numpy.random.Generator or None
        For a randomised rule: the generator of its uniform draw, derived from the run's seed
        (`generator()`).
    draw : float or Sequence[float] or None
        For a randomised rule instead of ``rng``: the recorded draw in $[0, 1)$ (one per cell for
        a cell rule), to recompute a verdict.

    Returns
    -------
    Judgement
        The verdict with its interval, threshold, rule words and per-seed values (``UNRESOLVED``
        with a ``reason`` where the rule cannot judge the sample).

    Raises
    ------
    InputError
        When ``name`` is not a rule, or the threshold, direction, confidence, number of samples,
        ``rng`` or ``draw`` is not one the rule allows.
    """
    return rule(name).judge(
        *samples,
        threshold=threshold,
        direction=direction,
        confidence=confidence,
        rng=rng,
        draw=draw,
    )


def combine_readings(readings: Mapping[str, Judgement | str]) -> dict:
    """One finding judged under each documented reading: ``{"verdict": word, "readings":
    {reading: word}}`` where ``word`` is the common verdict, or ``"depends on the reading"``
    (`DEPENDS`) when the readings disagree.

    Parameters
    ----------
    readings : Mapping[str, Judgement or str]
        The verdict under each reading, as a `Judgement` or its word (``"HELD"``, ``"NOT HELD"``
        or ``"UNRESOLVED"``).

    Returns
    -------
    dict
        ``verdict`` (the common word or `DEPENDS`) and ``readings`` (``{reading: word}``).

    Raises
    ------
    InputError
        When ``readings`` is empty or holds a word that is not a verdict.
    """
    if not readings:
        raise InputError("readings: at least one reading is needed")
    words = {k: (v.verdict if isinstance(v, Judgement) else str(v)) for k, v in readings.items()}
    bad = sorted(set(words.values()) - set(WORDS.values()))
    if bad:
        raise InputError(f"readings: verdict {bad[0]!r} is not one of {sorted(WORDS.values())}")
    common = set(words.values())
    return {"verdict": common.pop() if len(common) == 1 else DEPENDS, "readings": words}


def finding_record(
    judgement: Judgement,
    *,
    power: float | None = None,
    readings: Mapping[str, Judgement | str] | None = None,
) -> dict:
    r"""What a finding stores so its verdict can be recomputed from the summary alone: the
    judgement (``rule``, ``per_seed``, interval, threshold, words), its ``power`` at the
    paper's value for the seeds used (`gaugedyn.stats.power_at()`) with the label
    ``underpowered`` below `UNDERPOWERED`, and its ``readings`` (``{reading: verdict}``; by default
    the one reading judged). With several readings, ``verdict`` is `combine_readings()`'.

    Parameters
    ----------
    judgement : Judgement
        The finding's judgement under its headline reading.
    power : float or None
        The rule's power for this finding, a probability in $[0, 1]$ (``nan``: not computable;
        ``None``: not recorded).
    readings : Mapping[str, Judgement or str] or None
        The verdict under each documented reading; ``None`` records the one judged.

    Returns
    -------
    dict
        ``judgement.as_dict()`` with ``power``, ``underpowered`` (when ``power`` is given) and
        ``readings``; ``verdict`` is the combined one when ``readings`` is given.

    Raises
    ------
    InputError
        When ``power`` is not a probability or ``nan``, or a reading's word is not a verdict.
    """
    d = judgement.as_dict()
    if power is not None:
        ok = isinstance(power, int | float) and (0 <= power <= 1 or math.isnan(power))
        if not ok:
            raise InputError(
                f"power={power!r} is not allowed: a probability in [0, 1] (nan: not computable)"
            )
        d["power"] = float(power)
        d["underpowered"] = None if math.isnan(power) else bool(power < UNDERPOWERED)
    combined = combine_readings(readings if readings else {"as judged": judgement})
    d["readings"] = combined["readings"]
    if readings:
        d["verdict"] = combined["verdict"]
    return d

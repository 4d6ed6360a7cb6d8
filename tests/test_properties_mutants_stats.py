"""Properties written for generated mutants that survived the suite (``tools/mutate.py
--generated --select coverage``; the record is ``tools/mutation-data/generated.json``): each
states what the function guarantees, and fails on the mutant named beside it."""

from __future__ import annotations

import math
import operator
import re

import numpy as np
import pytest
from _properties import properties
from hypothesis import assume, given
from hypothesis import strategies as st

from gaugedyn import stats

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@properties(25)
@given(
    threshold=st.floats(-1e6, 1e6, allow_nan=False),
    direction=st.sampled_from([">", "<"]),
    width=st.floats(1e-3, 1e3),
)
def test_the_rule_words_state_the_relations_verdict_applies(threshold, direction, width):
    # stats:_intervals:613:20:comparison (the NOT HELD relation of the words reversed)
    text = stats.rule_text(threshold, direction)
    held = re.search(r"HELD if the \S+ interval lies wholly (\S+) ", text)
    not_held = re.search(r"NOT HELD if it lies wholly (\S+) ", text)
    assert held and not_held, text
    assert held.group(1) == direction
    # an interval wholly on each side, touching the threshold: the words' relation holds for
    # both ends exactly when verdict() says the word
    for interval in ([threshold - width, threshold], [threshold, threshold + width]):
        for word, relation in (("HELD", held.group(1)), ("NOT HELD", not_held.group(1))):
            says = all(_OPS[relation](x, threshold) for x in interval)
            assert says == (stats.verdict(interval, threshold, direction) == word), (
                text,
                interval,
            )


_PAIRED = {
    "paired_difference": lambda d, t: float(np.mean(d)),
    "paired_median": lambda d, t: float(np.median(d)),
    "paired_sign": lambda d, t: float(np.mean(d[d != t] > t)) if np.any(d != t) else math.nan,
}


@properties(25)
@given(
    rule=st.sampled_from(sorted(_PAIRED)),
    x=st.floats(-1e3, 1e3),
    y=st.floats(-1e3, 1e3),
    shift=st.floats(-1e3, 1e3),
)
def test_a_paired_rule_below_its_minimum_reports_the_centre_of_the_differences(rule, x, y, shift):
    # stats:_rules:620:16:off-by-one (the differences taken as y - y)
    def estimate(a, b):
        rng = np.random.default_rng(0) if stats.RULES[rule].randomised else None
        j = stats.judge(rule, np.array([a]), np.array([b]), threshold=0.0, direction=">", rng=rng)
        assert j.verdict == "UNRESOLVED" and j.n == 1  # one pair: too few for an interval
        return j.estimate

    want = _PAIRED[rule](np.array([x - y]), 0.0)
    got = estimate(x, y)
    assert (not math.isfinite(want) and not math.isfinite(got)) or got == pytest.approx(
        want, abs=1e-9
    )
    # a constant added to both sides of the pair leaves the difference, and the estimate
    again = estimate(x + shift, y + shift)
    d = (x + shift) - (y + shift)
    assert (not math.isfinite(again) and d == 0) or again == pytest.approx(
        _PAIRED[rule](np.array([d]), 0.0), abs=1e-9
    )


@properties(25)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=12))
def test_the_lower_median_is_the_ceil_n_over_2_th_smallest(values):
    # adam:_spikes:265:40:swap (the order statistic's index (n - 1) // 2 as 2 // (n - 1))
    from gaugedyn.adam._spikes import lower_median

    x = np.array(values)
    want = np.sort(x)[math.ceil(x.size / 2) - 1]
    assert lower_median(x) == want
    # along another axis, column by column
    both = np.stack([x, -x], axis=1)
    np.testing.assert_array_equal(
        lower_median(both, axis=0), [want, np.sort(-x)[math.ceil(x.size / 2) - 1]]
    )


@properties(20)
@given(n=st.integers(8, 40), seed=st.integers(0, 2**32 - 1))
def test_the_interpolated_median_bound_is_continuous_at_every_attainable_level(n, seed):
    # stats:_estimators:88:13:factor (the interpolation weight not divided by the gap between
    # the two bracketing binomial levels). At an attainable level 1 - c(k + 1) the bound is
    # the order statistic X(k + 1); just above that level it interpolates between X(k) and
    # X(k + 1) with a weight that tends to X(k + 1): no jump
    from scipy import stats as sps

    x = np.random.default_rng(seed).standard_normal(n)
    gap = float(np.ptp(x))
    for k in range(1, n // 2 - 1):
        c = float(sps.binom.cdf(k, n, 0.5))  # c(k + 1)
        if not 1e-6 < c < 0.4:
            continue
        at = stats.median_bounds(x, 1.0 - c).lower
        near = stats.median_bounds(x, 1.0 - c + 1e-12).lower
        assert abs(float(near) - float(at)) <= 1e-6 * gap, (n, k)


@properties(20)
@given(n=st.integers(2, 16), level=st.floats(0.5, 0.99), seed=st.integers(0, 2**32 - 1))
def test_a_median_bound_whose_bracket_reaches_the_middle_is_not_interpolated(n, level, seed):
    # stats:_estimators:87:17:factor (``2 * k >= n`` to ``2 >= n``). Where the order statistics
    # that bracket the level meet at the middle of the sample (2 k >= n), interpolating would
    # move each one-sided bound between the two middle values, inside the median's own
    # bracket: the bounds are the plain order statistics there
    from scipy import stats as sps

    k = int(np.searchsorted(sps.binom.cdf(np.arange(n), n, 0.5), 1.0 - level, side="right"))
    assume(k > 0 and 2 * k >= n)
    x = np.random.default_rng(seed).standard_normal(n)
    interpolated = stats.median_bounds(x, level)
    plain = stats.median_bounds(x, level, interpolate=False)
    assert float(interpolated.lower) == float(plain.lower)
    assert float(interpolated.upper) == float(plain.upper)


def _rising(rule: stats.Rule, n: int) -> tuple[np.ndarray, ...]:
    """``n`` distinct per-seed values (two cells for a cell rule) that ``rule`` accepts."""
    x = np.arange(n, dtype=float) * 0.75 + 0.5
    if rule.cells:
        return (np.stack([x, x[::-1] + 0.25], axis=1),)
    if rule.estimator == "slope":
        return (np.arange(n, dtype=float), 2.0 * np.arange(n) + np.sin(np.arange(n)))
    if rule.paired:
        return (x, np.zeros(n))
    return (x,)


@pytest.mark.parametrize(
    "name", [n for n, r in stats.RULES.items() if r.estimator not in ("point", "proportion")]
)
def test_a_rules_caveat_states_the_fewest_values_it_judges(name):
    # stats:_rules:238:11:comparison (every mean rule's words given the median rules' count of
    # 6, every median rule's given none). The count in the caveat is the least n at which the
    # verdict is not UNRESOLVED for too few values; a caveat without a count judges two
    rule = stats.RULES[name]

    def too_few(n: int) -> bool:
        rng = stats.generator(0, "caveat", name) if rule.randomised else None
        band = rule.claim in ("inside", "outside")
        j = stats.judge(
            name,
            *_rising(rule, n),
            threshold=(-1.0, 1.0) if band else 0.0,
            direction=None if band else rule.directions[0],
            rng=rng,
        )
        return "too few" in (j.reason or "")

    stated = re.search(r"fewer than (\d+) (?:values|rows)", rule.caveat)
    if stated is None:
        assert not too_few(2), rule.caveat
    else:
        n = int(stated.group(1))
        assert too_few(n - 1) and not too_few(n), rule.caveat


@properties(30)
@given(
    n=st.integers(1, 40),
    data=st.data(),
    level=st.sampled_from([0.9, 0.975, 0.99, 1 - 0.025 / 42]),
)
def test_a_randomised_bound_asked_alone_is_that_bound_of_the_pair(n, data, level):
    """``randomised_proportion_bounds(..., side=s)`` computes the bound ``s`` exactly as the
    pair does (``side=None``) and leaves only the other one NaN, for either side, any count of
    successes and any draw (the every-cell rule reads its Holm-level bound on one side only)."""
    from gaugedyn.stats import _estimators as est

    k = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=5))
    x = (np.arange(n)[None, :] < np.asarray(k)[:, None]).astype(float)
    u = np.asarray(data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(k), max_size=len(k))))
    both = est.randomised_proportion_bounds(x, level, u)
    assert np.all(np.isfinite(both.lower)) and np.all(np.isfinite(both.upper))
    low = est.randomised_proportion_bounds(x, level, u, side="lower")
    high = est.randomised_proportion_bounds(x, level, u, side="upper")
    np.testing.assert_array_equal(low.lower, both.lower)
    np.testing.assert_array_equal(high.upper, both.upper)
    assert np.all(np.isnan(low.upper)) and np.all(np.isnan(high.lower))
    np.testing.assert_array_equal(low.estimate, both.estimate)


@properties(25)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=5))
def test_a_median_rule_below_its_minimum_reports_the_median(values):
    # stats:_rules:686:26:comparison (the first value reported in place of the median)
    x = np.array(values)
    j = stats.judge(
        "median_threshold", x, threshold=0.0, direction=">", rng=np.random.default_rng(0)
    )
    assert j.verdict == "UNRESOLVED" and j.reason.startswith("too few values")
    assert j.estimate == pytest.approx(float(np.median(x)), rel=1e-12, abs=1e-9)


@properties(25)
@given(
    rule=st.sampled_from(["every_cell_median", "some_cell_median"]),
    n=st.integers(1, 5),
    data=st.data(),
)
def test_a_median_cell_below_its_minimum_reports_the_cells_median(rule, n, data):
    # stats:_rules:752:38:comparison (an unjudged cell's estimate the mean, not the median)
    x = np.array(
        data.draw(
            st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2), min_size=n, max_size=n)
        )
    )
    j = stats.judge(rule, x, threshold=0.0, direction=">", rng=np.random.default_rng(0))
    assert j.verdict == "UNRESOLVED"
    for c, cell in enumerate(j.cells):
        assert cell["interval"] == [-math.inf, math.inf]
        assert cell["estimate"] == pytest.approx(float(np.median(x[:, c])), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("direction, side", [(">", "above"), ("<", "below")])
def test_the_sign_rules_words_name_the_side_of_one_half_its_direction_claims(direction, side):
    # stats:_rules:281:30:comparison (the side of 1/2 named against the direction)
    words = stats.RULES["paired_sign"].words(0.0, direction)
    assert f"x - y {direction} 0 " in words
    assert f"lies wholly {side} 1/2; NOT HELD" in words, words


@properties(25)
@given(n=st.integers(1, 40), u=st.floats(0.0, 1.0), threshold=st.floats(-1e3, 1e3))
def test_values_tied_at_the_threshold_count_against_both_sides_of_the_median_test(n, u, threshold):
    # stats:_estimators:229:15:comparison (a tie dropped from the count against "below")
    from gaugedyn.stats import _estimators as est

    above, below = est.randomised_median_pvalues(np.full(n, threshold), threshold, u)
    floor = 1.0 - 0.5**n  # P(B <= n - 1): every value counts against each side
    assert above >= floor - 1e-12 and below >= floor - 1e-12

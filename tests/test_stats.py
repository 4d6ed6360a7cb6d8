"""The statistics module: intervals from scipy.stats, verdicts from intervals, derived generators."""

import math

import numpy as np
import pytest

from gaugedyn import stats
from gaugedyn.experiments import Param, finding


def test_verdict_is_three_valued_and_directional():
    assert stats.verdict((0.2, 0.4), 0.1, ">") == "HELD"
    assert stats.verdict((0.0, 0.05), 0.1, ">") == "NOT HELD"
    assert stats.verdict((0.05, 0.2), 0.1, ">") == "UNRESOLVED"
    assert stats.verdict((0.0, 0.05), 0.1, "<") == "HELD"
    assert stats.verdict((0.2, 0.4), 0.1, "<") == "NOT HELD"
    assert stats.verdict((math.nan, 0.4), 0.1, ">") == "UNRESOLVED"
    with pytest.raises(ValueError):
        stats.verdict((0, 1), 0.5, ">=")


def test_finding_carries_interval_rule_and_verdict():
    c = finding("x.y", "value above 0.1", stats.Interval(0.3, 0.05, 0.5), 0.1)
    d = c.to_dict()
    assert d["verdict"] == "UNRESOLVED" and not d["passed"] and d["interval"] == [0.05, 0.5]
    assert "UNRESOLVED" in d["rule"]
    assert finding("x.y", "s", (0.3, 0.2, 0.5), 0.1).passed


def test_bootstrap_covers_the_mean_and_depends_on_the_generator():
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 1.0, 400)
    a = stats.bootstrap_ci(x, rng=stats.generator(7, "a"))
    assert a.low < 2.0 < a.high and a.low < a.estimate < a.high
    assert a == stats.bootstrap_ci(x, rng=stats.generator(7, "a"))
    assert a != stats.bootstrap_ci(x, rng=stats.generator(7, "b"))


def test_paired_interval_uses_pairs():
    rng = np.random.default_rng(2)
    base = rng.normal(0, 10, 50)
    iv = stats.mean_difference_ci(
        base + 1.0 + rng.normal(0, 0.01, 50), base, rng=stats.generator(0, "p")
    )
    assert 0.99 < iv.low < iv.high < 1.01


def test_wilson_matches_closed_form():
    k, n, z = 7, 20, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    iv = stats.proportion_ci(k, n)
    assert iv.low == pytest.approx(centre - half, rel=1e-9)
    assert iv.high == pytest.approx(centre + half, rel=1e-9)


def test_loglog_fit_recovers_exponent_and_interval_contains_it():
    x = np.logspace(1, 4, 12)
    y = 3 * x**2 * np.exp(np.random.default_rng(3).normal(0, 0.01, 12))
    fit = stats.loglog_fit(x, y)
    assert fit.slope_low < 2 < fit.slope_high and fit.slope == pytest.approx(2, abs=0.01)
    np.testing.assert_allclose(stats.local_slopes([1, 10, 100], [1, 100, 10000]), [2, 2])


def test_compare_reports_both_measures():
    c = stats.compare([1.0, 2.0, 2.0], [1.0, 2.0, 2.3])
    assert c["relative_frobenius"] == pytest.approx(0.1) and c["mean_absolute"] == pytest.approx(
        0.1
    )
    with pytest.raises(ValueError):
        stats.compare([1.0], [1.0, 2.0])


def test_param_bounds_derive_check_and_text():
    p = Param(int, 10, lo=1, hi=1000, why="memory", help="n")
    assert p.validate(10) is None
    assert p.validate(1001) == "an integer in [1, 1000] (upper bound: memory)"
    q = Param(list, [1, 2], lo=0, hi=5, min_len=1, max_len=3, distinct=True)
    assert q.validate([1, 2]) is None
    assert q.validate([1, 1]) is not None and q.validate([1, 2, 3, 4]) is not None
    assert q.validate([6]) is not None and q.validate([]) is not None
    r = Param(str, "a", choices=("a", "b"))
    assert r.validate("c") == "one of a, b"


def test_band_is_low_median_high_over_the_first_axis():
    x = np.arange(11.0)[:, None] * np.ones((1, 3))
    lo, med, hi = stats.band(x)
    np.testing.assert_allclose(lo, 1.0)
    np.testing.assert_allclose(med, 5.0)
    np.testing.assert_allclose(hi, 9.0)


def test_param_item_type_of_lists():
    p = Param(list, [1, 2], item=int, lo=0, hi=9, max_len=4)
    assert p.validate([1, 2]) is None
    assert p.validate([1, 2.5]) is not None and p.validate([True]) is not None
    assert "integers" in p.describe()
    assert Param(list, [1.0], item=float, hi=2, max_len=2).validate([1, 1.5]) is None


def test_independent_interval_resamples_each_sample_on_its_own():
    rng = np.random.default_rng(4)
    x, y = rng.normal(3.0, 0.1, 60), rng.normal(1.0, 0.1, 40)
    iv = stats.independent_ci(
        (x, y),
        lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis),
        rng=stats.generator(1, "r"),
    )
    assert iv.low < 3.0 < iv.high and iv.high - iv.low < 0.5


def test_mean_interval_is_scipys_student_t_interval():
    from scipy import stats as sps

    x = np.random.default_rng(8).normal(1.0, 2.0, 25)
    iv = stats.mean_ci(x)
    lo, hi = sps.t.interval(0.95, x.size - 1, loc=x.mean(), scale=sps.sem(x))
    assert iv.low == pytest.approx(lo, rel=1e-12) and iv.high == pytest.approx(hi, rel=1e-12)

"""The paired sign rule (``paired_sign``): the share of untied seeds on the claimed side against
1/2, the randomised exact binomial interval over the untied seeds; for paired 0/1 outcomes it is
McNemar's exact test (``scipy.stats.binomtest`` on the discordant pairs)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss

from gaugedyn import InputError, stats
from gaugedyn.stats import _audit, _rules


def _judge(x, y, draw, direction=">", threshold=0.0):
    return stats.judge(
        "paired_sign", x, y, threshold=threshold, direction=direction, draw=float(draw)
    )


@pytest.mark.parametrize("k,m", [(0, 1), (3, 3), (6, 6), (7, 8), (9, 12), (15, 20), (20, 40)])
def test_with_the_draw_at_zero_it_is_mcnemars_exact_test(k, m):
    """Paired 0/1 outcomes, ``k`` pairs where only ``x`` succeeds and ``m - k`` where only
    ``y`` does, the rest concordant: with the draw at 0 the rule says HELD exactly when
    ``scipy.stats.binomtest(k, m, 1/2, alternative="greater")`` rejects at 2.5%, and NOT HELD
    exactly when the ``"less"`` side does (touching counts as the other side)."""
    concordant = 10
    x = [1] * k + [0] * (m - k) + [1] * (concordant // 2) + [0] * (concordant // 2)
    y = [0] * k + [1] * (m - k) + [1] * (concordant // 2) + [0] * (concordant // 2)
    j = _judge(x, y, 0.0)
    held = ss.binomtest(k, m, 0.5, alternative="greater").pvalue <= 0.025
    assert (j.verdict == "HELD") == held
    assert j.estimate == pytest.approx(k / m)
    assert j.n == m + concordant


def test_its_interval_is_the_proportion_rules_on_the_untied_signs():
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, 0.0, 0.0, 1.0, 1.0], size=40)
    for u in (0.0, 0.3, 0.9):
        j = _judge(d + 0.2, np.full(40, 0.2), u)
        signs = (d[d != 0] > 0).astype(float)
        p = stats.judge("proportion", signs, threshold=0.5, draw=u)
        assert (j.low, j.high, j.estimate) == pytest.approx((p.low, p.high, p.estimate))
        assert j.verdict == p.verdict


def test_tied_seeds_change_nothing_and_all_tied_is_unresolved():
    x, y = [1, 1, 1, 1, 1, 1, 1, 0], [0] * 8
    a = _judge(x, y, 0.4)
    b = _judge(x + [0.5] * 30, y + [0.5] * 30, 0.4)
    assert (a.verdict, a.low, a.high) == (b.verdict, b.low, b.high)
    j = _judge([0.5] * 40, [0.5] * 40, 0.99)
    assert j.verdict == "UNRESOLVED" and "tied" in j.reason
    assert (j.low, j.high) == (0.0, 1.0)


def test_heavily_tied_values_with_an_effect_are_held_where_the_median_rule_cannot_judge():
    """Eight of 40 seeds differ, every one on the claimed side: the sign rule says HELD at any
    draw; the median of the differences is the tied zero, so ``paired_median`` is UNRESOLVED."""
    x = [0.5] * 8 + [0.0] * 32
    y = [0.0] * 40
    for u in (0.0, 0.5, 0.999):
        assert _judge(x, y, u).verdict == "HELD"
        assert stats.judge("paired_median", x, y, threshold=0.0, draw=u).verdict == "UNRESOLVED"


def test_failing_data_are_not_held():
    """Built to fail: the untied seeds favour the other member (eight of nine), or split
    evenly; the rule never says HELD, and says NOT HELD on the first."""
    x = [0.0] * 8 + [0.5] + [0.0] * 31
    y = [0.5] * 8 + [0.0] + [0.0] * 31
    for u in (0.0, 0.5, 0.999):
        assert _judge(x, y, u).verdict == "NOT HELD"
        even = _judge([1] * 10 + [0] * 10, [0] * 10 + [1] * 10, u)
        assert even.verdict == "UNRESOLVED"
    assert _judge(x, y, 0.5, direction="<").verdict == "HELD"


def test_threshold_and_direction_are_the_claims():
    """``x - y > c``: the differences are compared with ``c`` (ties are ``x - y = c``)."""
    x = np.array([0.3] * 20 + [0.1] * 12)
    y = np.zeros(32)
    assert _judge(x, y, 0.5, threshold=0.1).verdict == "HELD"  # 20 above, 12 tied
    assert _judge(x, y, 0.5, threshold=0.3).verdict == "NOT HELD"  # 20 tied, 12 below


@pytest.mark.parametrize("shape", _audit.TIE_SHAPES)
def test_the_audit_keeps_its_size_and_coverage_on_tied_signs(shape):
    """Known answers by simulation: on the threshold (share 1/2) HELD and NOT HELD each at most
    2.5% + 2 s.e.; a margin off, the wrong word at most 5% + 2 s.e.; coverage 93-97% at 40
    seeds; power grows as the ties thin."""
    row = _audit.audit_rule("paired_sign", 40, shape=shape, reps=4000, seed=7)
    assert not _audit.misses(row), row
    assert row["bar"] == "ok"


def test_power_at_uses_the_findings_own_share_of_ties():
    x = [0.5] * 4 + [0.0] * 36
    j = _judge(x, [0.0] * 40, 0.5)
    few = _audit.power_at(j, 1.0, reps=4000, seed=1).rate
    j2 = _judge([0.5] * 20 + [0.0] * 20, [0.0] * 40, 0.5)
    many = _audit.power_at(j2, 1.0, reps=4000, seed=1).rate
    null = _audit.power_at(j2, 0.5, reps=4000, seed=1).rate
    assert few < 0.5 < 0.99 < many
    assert null < 0.025 + 2 * np.sqrt(0.025 * 0.975 / 4000)


def test_the_tied_kind_chooses_it_and_refuses_the_median_rule():
    m = stats.Measure("tied", "a switch rate", 0.25)
    assert m.rule("paired") == "paired_sign"
    with pytest.raises(InputError, match="paired_sign"):
        m.check("paired_median")
    with pytest.raises(InputError, match="threshold"):
        m.rule("threshold")
    # continuous noise has no ties: its power is the untied shape's
    rule = stats.RULES["paired_sign"]
    assert _audit.power(rule, 40, 0.3, shape="normal") == _audit.power(rule, 40, 0.3, shape="ties0")


@pytest.mark.parametrize("direction,draw", [(">", 0.99), ("<", 0.01)])
def test_at_its_fewest_values_the_vectorised_rule_still_judges(direction, draw):
    """At exactly the rule's fewest values (two seeds), both signs on the claimed side and the
    randomised interval's draw at its far end, the interval leaves 1/2 behind: ``judge`` says
    HELD, and ``Rule.evaluate`` (what the audit and the power simulate) says the same, not
    UNRESOLVED; one seed fewer is UNRESOLVED in both."""
    rule = stats.RULES["paired_sign"]
    sign = 1.0 if direction == ">" else -1.0
    x, y = np.array([2.0, 3.0]) * sign, np.zeros(2)
    j = _judge(x, y, draw, direction=direction)
    assert j.verdict == "HELD" and j.n == 2
    two = rule.evaluate((x[None, :], y[None, :]), 0.0, direction, draws=np.array([draw]))
    assert _rules.WORDS[int(two["code"][0])] == "HELD"
    assert _judge(x[:1], y[:1], draw, direction=direction).verdict == "UNRESOLVED"
    one = rule.evaluate((x[None, :1], y[None, :1]), 0.0, direction, draws=np.array([draw]))
    assert _rules.WORDS[int(one["code"][0])] == "UNRESOLVED"

"""The two-sided proportion rule ``proportion_band`` (issue 41, item 5): its verdict is the
randomised binomial test's at each edge, at and one count beside the edge; it is symmetric under
``p -> 1 - p``; its false words are at most 2.5% (exact sums over the counts, the uniform draw
integrated exactly); and ``perturbations.symmetric_control``, judged by it, fails on outcomes
built to fail."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _properties import properties
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import stats as sps

from gaugedyn import InputError, stats
from gaugedyn.experiments.gauge import _analysis as ga

RULE = "proportion_band"
FEW = properties(40)


def _outcomes(k: int, n: int) -> np.ndarray:
    return np.r_[np.ones(k), np.zeros(n - k)]


def _cdf(p: float, k: int, n: int, u: float) -> float:
    """$F_p(k + u) = P_p(X < k) + u P_p(X = k)$ (scipy.stats.binom), written out here."""
    return float(sps.binom.cdf(k - 1, n, p) + u * sps.binom.pmf(k, n, p))


def _counting_word(k: int, n: int, u: float, lo: float, hi: float) -> str | None:
    """The word from the randomised binomial tests at the edges: HELD when the test of
    ``p <= lo`` and the test of ``p >= hi`` both reject at 2.5%; NOT HELD when the test of
    ``p >= lo`` or of ``p <= hi`` rejects at 1.25%; ``None`` within 1e-9 of a level (there the
    root finder's last digit decides)."""
    f_lo, f_hi = _cdf(lo, k, n, u), _cdf(hi, k, n, u)
    levels = (0.975, 0.025, 0.0125, 0.9875)
    if any(abs(f - v) < 1e-9 for f in (f_lo, f_hi) for v in levels):
        return None
    if f_lo > 0.975 and f_hi < 0.025:
        return "HELD"
    if f_lo <= 0.0125 or f_hi >= 0.9875:
        return "NOT HELD"
    return "UNRESOLVED"


@FEW
@given(
    n=st.integers(1, 120),
    frac=st.floats(0.0, 1.0),
    width=st.integers(1, 40),
    shift=st.sampled_from([-1, 0, 1]),
    side=st.sampled_from(["lo", "hi"]),
    u=st.floats(0.0, 1.0, exclude_max=True),
)
def test_the_word_is_the_randomised_tests_at_and_one_count_beside_each_edge(
    n, frac, width, shift, side, u
):
    """An edge at the estimate ``k/n`` or one count beside it, the other edge ``width`` counts
    away: the word is the randomised binomial tests' (95% for HELD, each edge at 1.25% for NOT
    HELD), for every count, band and draw."""
    k = round(frac * n)
    edge = (k + shift) / n
    lo, hi = (edge, edge + width / n) if side == "lo" else (edge - width / n, edge)
    lo, hi = max(lo, 0.0), min(hi, 1.0)  # success probabilities
    assume(lo < hi)
    word = _counting_word(k, n, u, lo, hi)
    assume(word is not None)
    j = stats.judge(RULE, _outcomes(k, n), threshold=(lo, hi), draw=u)
    assert j.verdict == word, (k, n, u, lo, hi, j.low, j.high, j.edge_interval)


@FEW
@given(
    n=st.integers(1, 120),
    frac=st.floats(0.0, 1.0),
    lo=st.integers(0, 900).map(lambda i: i / 1000),
    width=st.integers(10, 500).map(lambda i: i / 1000),
    u=st.floats(0.001, 0.999),
)
def test_the_rule_is_symmetric_under_p_to_one_minus_p(n, frac, lo, width, u):
    """Outcomes flipped, the band reflected to ``(1 - hi, 1 - lo)`` and the draw to ``1 - u``:
    the same word, the interval reflected ($F'_{1-p}(n - k + 1 - u) = 1 - F_p(k + u)$)."""
    k = round(frac * n)
    hi = min(lo + width, 1.0)
    x = _outcomes(k, n)
    assume(_counting_word(k, n, u, lo, hi) is not None)
    a = stats.judge(RULE, x, threshold=(lo, hi), draw=u)
    b = stats.judge(RULE, 1.0 - x, threshold=(1.0 - hi, 1.0 - lo), draw=1.0 - u)
    assert a.verdict == b.verdict
    assert math.isclose(a.low, 1.0 - b.high, abs_tol=1e-7)
    assert math.isclose(a.high, 1.0 - b.low, abs_tol=1e-7)


def _word_chances(p: float, n: int, lo: float, hi: float, split: bool = True) -> tuple:
    """``(P(HELD), P(NOT HELD))`` at success probability ``p``: the sum over the counts of the
    share of draws ``u`` giving each word (``F`` is linear in ``u``, so each word's draws are
    an interval, integrated exactly). ``split=False``: NOT HELD read off the 95% interval (the
    single-interval band rule, the mutant the 97.5% widening replaces)."""
    edge = (0.0125, 0.9875) if split else (0.025, 0.975)
    held = not_held = 0.0
    for k in range(n + 1):
        w = sps.binom.pmf(k, n, p)
        a_lo, b_lo = sps.binom.cdf(k - 1, n, lo), sps.binom.pmf(k, n, lo)
        a_hi, b_hi = sps.binom.cdf(k - 1, n, hi), sps.binom.pmf(k, n, hi)

        def share(a, b, above, level):  # the share of u in [0, 1) with a + u b > level (or <=)
            if b == 0:
                hit = a > level if above else a <= level
                return float(hit)
            t = (level - a) / b
            return float(np.clip(1 - t, 0, 1) if above else np.clip(t, 0, 1))

        # HELD: F_lo > 0.975 and F_hi < 0.025; both rise in u, so the draws form an interval
        u_from = 1 - share(a_lo, b_lo, True, 0.975)  # F_lo > 0.975 for u above this
        u_to = share(a_hi, b_hi, False, 0.025)  # F_hi <= 0.025 for u below this
        held += w * max(0.0, u_to - u_from)
        # NOT HELD: F_lo <= edge[0] (u below one cut) or F_hi >= edge[1] (u above another)
        below = share(a_lo, b_lo, False, edge[0])
        above = share(a_hi, b_hi, True, edge[1] - 1e-300)
        not_held += w * min(1.0, below + above)
    return held, not_held


@pytest.mark.parametrize("n", [6, 10, 32, 80, 160, 576])
def test_the_false_words_are_at_most_two_and_a_half_percent_exactly(n):
    """Exact chances (no simulation) at the symmetric control's band ``1/2 +- 2/sqrt(n)`` and a
    narrow band: HELD with ``p`` on either edge (the claim false by nothing) at most 2.5%; NOT
    HELD with ``p`` on an edge or at the centre (the claim true) at most 2.5%; read off the 95%
    interval, NOT HELD on an edge of a narrow band exceeds 2.5%."""
    for half in (ga.symmetric_band(n)[1] - 0.5, 0.05 / math.sqrt(n)):
        lo, hi = 0.5 - half, 0.5 + half
        for p in (lo, hi):
            held, not_held = _word_chances(p, n, lo, hi)
            assert held <= 0.025 + 1e-9, (n, half, p, held)
            assert not_held <= 0.025 + 1e-9, (n, half, p, not_held)
        assert _word_chances(0.5, n, lo, hi)[1] <= 0.025 + 1e-9
    lo, hi = 0.5 - 0.05 / math.sqrt(n), 0.5 + 0.05 / math.sqrt(n)
    assert _word_chances(hi, n, lo, hi, split=False)[1] > 0.025 + 1e-3


def test_the_exact_chances_match_the_rule_on_simulated_trials():
    """The exact sums above against the rule itself: 4,000 experiments of 80 trials at the upper
    edge of the control's band agree within 4 Monte Carlo standard errors."""
    n, reps = 80, 4000
    lo, hi = ga.symmetric_band(n)
    g = np.random.default_rng(11)
    x = (g.random((reps, n)) < hi).astype(float)
    code = stats.RULES[RULE].evaluate((x,), (lo, hi), "inside", rng=g)["code"]
    held, not_held = _word_chances(hi, n, lo, hi)
    for rate, exact in ((np.mean(code == 1), held), (np.mean(code == -1), not_held)):
        se = math.sqrt(max(exact * (1 - exact), 1e-6) / reps)
        assert abs(rate - exact) <= 4 * se, (rate, exact)


def test_the_audit_rows_of_proportion_band_meet_the_bars():
    """The audit's rows at the control's trial counts (quick 80, full 576): false HELD at the
    edge, false NOT HELD at the centre, coverage and power, within the bars."""
    for n in (80, 576):
        row = stats.audit_rule(RULE, n, reps=3000, seed=5)
        assert row["bar"] == "ok", row
        assert row["power"].rate > 0.8  # at p = 1/2, the control's truth


def _control(won: np.ndarray):
    return ga._symmetric_control_check(won, np.random.SeedSequence(4))


def test_the_symmetric_control_fails_on_outcomes_built_to_fail():
    g = np.random.default_rng(3)
    assert _control(g.random(576) < 0.5).passed
    lopsided = _control(g.random(576) < 0.7)  # one copy favoured at lambda = 1
    assert not lopsided.passed and lopsided.tolerance["verdict"] == "NOT HELD"
    near_edge = _control(g.random(576) < ga.symmetric_band(576)[1])
    assert near_edge.tolerance["verdict"] != "HELD" or near_edge.interval[1] < 0.5834
    assert not _control(np.zeros(0, dtype=bool)).passed  # no trials: UNRESOLVED
    rec = lopsided.to_dict()
    assert rec["rule"] == RULE and len(rec["per_seed"]) == 576
    again = stats.judge(
        RULE,
        rec["per_seed"],
        threshold=rec["tolerance"]["threshold"],
        draw=rec["tolerance"]["uniform_draw"],
    )  # the check recomputes from its record
    assert again.verdict == rec["tolerance"]["verdict"] and again.low == rec["interval"][0]


def test_the_symmetric_band_is_four_binomial_standard_errors():
    for n in (80, 576):
        lo, hi = ga.symmetric_band(n)
        assert math.isclose(hi - 0.5, 4 * math.sqrt(0.25 / n)) and math.isclose(0.5 - lo, hi - 0.5)
    assert ga.symmetric_band(1) == (0.0, 1.0)


# -- every_cell_proportion: a share in every cell (a band in every cell: the cells x and 1 - x) --

CELLS = "every_cell_proportion"


@FEW
@given(
    n=st.integers(1, 60),
    ks=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    c=st.integers(1, 99).map(lambda i: i / 100),
    us=st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=4, max_size=4),
)
def test_every_cell_proportion_is_its_cells_randomised_tests_with_holm(n, ks, c, us):
    """HELD exactly when every cell's randomised test of ``p <= c`` rejects at 2.5%; NOT HELD
    exactly when some cell's test of ``p >= c`` rejects at 2.5% / m (Holm's first step); the
    recorded Holm p-values are those tests' (``F_c(k + u)`` written out with scipy)."""
    ks = [min(k, n) for k in ks]
    m = len(ks)
    x = np.column_stack([_outcomes(k, n) for k in ks])
    u = us[:m]
    f = [_cdf(c, k, n, v) for k, v in zip(ks, u)]
    assume(all(abs(v - t) > 1e-9 for v in f for t in (0.975, 0.025 / m, 1 - 0.025 / m, 0.025)))
    j = stats.judge(CELLS, x, threshold=c, direction=">", draw=u)
    held = all(v > 0.975 for v in f)
    not_held = min(f) <= 0.025 / m
    assert j.verdict == ("HELD" if held else "NOT HELD" if not_held else "UNRESOLVED")
    holm_first = min(v * m for v in f)
    assert math.isclose(min(cell["p_holm"] for cell in j.cells), min(holm_first, 1.0))


def test_every_cell_proportion_fails_a_cell_built_to_fail_and_a_band_by_doubling():
    """Six cells of 64 trials at p = 1/2 are inside (0.1, 0.9) in every cell (HELD: the cells x
    and 1 - x above 0.1); one cell moved to p = 0 (a curve shifted out of the band) is NOT
    HELD at 64 trials, and UNRESOLVED at 32 at this draw (there its p-value is u 0.9^32 =
    3.4% u, times Holm's 12); one cell at p = 0.9 (on the band's edge) is never HELD."""
    g = np.random.default_rng(7)
    x = (g.random((64, 6)) < 0.5).astype(float)
    both = np.hstack([x, 1 - x])
    assert stats.judge(CELLS, both, threshold=0.1, rng=g).verdict == "HELD"
    out = x.copy()
    out[:, 3] = 0.0
    assert stats.judge(CELLS, np.hstack([out, 1 - out]), threshold=0.1, rng=g).verdict == (
        "NOT HELD"
    )
    short = np.hstack([out, 1 - out])[:32]
    assert stats.judge(CELLS, short, threshold=0.1, rng=g).verdict == "UNRESOLVED"
    edge = x.copy()
    for _ in range(50):
        edge[:, 1] = g.random(64) < 0.9
        j = stats.judge(CELLS, np.hstack([edge, 1 - edge]), threshold=0.1, rng=g)
        assert j.verdict != "HELD" or j.cells[7]["interval"][0] > 0.1


def test_the_audit_rows_of_every_cell_proportion_meet_the_bars():
    row = stats.audit_rule(CELLS, 32, cells=8, reps=2000, seed=3)
    assert row["bar"] == "ok", row


@pytest.mark.parametrize("rule", ["proportion", "every_cell_proportion"])
def test_power_at_simulates_every_cell_of_a_proportion_rule(rule):
    """`gaugedyn.stats.power_at` of a proportion rule draws Bernoulli outcomes at the value in
    every cell at the judged count: with one cell its power is the one cell's; with four
    independent cells every-cell HELD needs each cell's interval above the threshold, so the
    power is the one cell's to the fourth (within 4 Monte Carlo standard errors)."""
    g = np.random.default_rng(3)
    one = (g.random((40, 1)) < 0.3).astype(float)
    if rule == "proportion":
        j = stats.judge(rule, one[:, 0], threshold=0.1, direction=">", rng=g)
        single = stats.judge("every_cell_proportion", one, threshold=0.1, direction=">", rng=g)
        a = stats.power_at(j, 0.25, reps=4000, seed=1)
        b = stats.power_at(single, 0.25, reps=4000, seed=2)
        assert abs(a.rate - b.rate) <= 4 * math.hypot(a.se, b.se), (a, b)
        assert 0.5 < a.rate < 0.95, a  # neither certain nor hopeless: the comparison can fail
        return
    four = (g.random((40, 4)) < 0.3).astype(float)
    p1 = stats.power_at(stats.judge(rule, one, threshold=0.1, direction=">", rng=g), 0.25, seed=1)
    p4 = stats.power_at(stats.judge(rule, four, threshold=0.1, direction=">", rng=g), 0.25, seed=2)
    se = math.hypot(p4.se, 4 * p1.rate**3 * p1.se)
    assert abs(p4.rate - p1.rate**4) <= 4 * se, (p1, p4)
    assert 0.5 < p1.rate < 0.95 and p4.rate < 0.5, (p1, p4)


@pytest.mark.parametrize(
    ("rule", "threshold"),
    [
        ("proportion_band", (-0.1, 0.5)),
        ("proportion_band", (0.5, 1.2)),
        ("proportion", 1.5),
        ("every_cell_proportion", -0.2),
    ],
)
def test_a_proportion_claim_outside_zero_one_is_refused(rule, threshold):
    """A proportion's threshold or band edge outside [0, 1] is one InputError naming the value
    and what is allowed."""
    x = np.r_[np.ones(10), np.zeros(10)]
    x = x[:, None] if rule == "every_cell_proportion" else x
    direction = None if rule == "proportion_band" else ">"
    with pytest.raises(InputError) as err:
        stats.judge(rule, x, threshold=threshold, direction=direction, rng=np.random.default_rng(0))
    text = str(err.value)
    assert f"threshold={threshold!r}" in text and rule in text, text
    assert ("0 <= lo < hi <= 1" if rule == "proportion_band" else "in [0, 1]") in text, text


@pytest.mark.parametrize("rule", ["proportion", "every_cell_proportion", "proportion_band"])
@pytest.mark.parametrize("value", [-0.1, -1e-12, 1 + 1e-12, 1.25])
def test_power_at_refuses_a_true_rate_outside_zero_one(rule, value):
    """The true rate `gaugedyn.stats.power_at` simulates a proportion rule (or the sign rule)
    at is a probability: a value outside [0, 1] is one InputError (a ValueError) naming the
    value and what is allowed, not clipped to the nearest end; [0, 1]'s own ends are
    simulated (all outcomes 0, all 1)."""
    g = np.random.default_rng(0)
    x = np.r_[np.ones(12), np.zeros(8)]
    x = x[:, None] if rule == "every_cell_proportion" else x
    threshold, direction = ((0.2, 0.8), None) if rule == "proportion_band" else (0.5, ">")
    j = stats.judge(rule, x, threshold=threshold, direction=direction, rng=g)
    with pytest.raises(ValueError) as err:
        stats.power_at(j, value, reps=10)
    assert isinstance(err.value, InputError)
    text = str(err.value)
    assert f"value={value!r}" in text and rule in text and "in [0, 1]" in text, text
    if rule == "proportion":  # HELD needs rate > 1/2: never at 0, nearly always at 1
        assert stats.power_at(j, 0.0, reps=200).rate == 0.0
        assert stats.power_at(j, 1.0, reps=200).rate > 0.9


@pytest.mark.parametrize("value", [-0.5, 1.5])
def test_power_at_refuses_a_sign_share_outside_zero_one(value):
    """The sign rule's value is the share of untied seeds on the claimed side: outside [0, 1]
    it is refused the same way."""
    d = np.r_[np.ones(9), -np.ones(3), np.zeros(8)]
    g = np.random.default_rng(0)
    j = stats.judge("paired_sign", d, np.zeros_like(d), threshold=0.0, direction=">", rng=g)
    with pytest.raises(InputError, match=rf"value={value!r} .*paired_sign.*in \[0, 1\]"):
        stats.power_at(j, value, reps=10)
    assert stats.power_at(j, 1.0, reps=200).rate > stats.power_at(j, 0.0, reps=200).rate


def test_every_cell_proportion_reports_each_cells_share_and_the_smallest():
    # _cell_bounds: a cell's estimate is its share of successes, not its count (the line above
    # stats:_rules:761:27:factor, an equivalent mutant of the Holm-level bound, whose estimate is unread)
    x = np.zeros((8, 3))
    x[:6, 0], x[:4, 1], x[:7, 2] = 1.0, 1.0, 1.0
    j = stats.judge(CELLS, x, threshold=0.1, rng=np.random.default_rng(2))
    assert [c["estimate"] for c in j.cells] == pytest.approx([0.75, 0.5, 0.875])
    assert j.estimate == pytest.approx(0.5)

"""The verdict rules of gaugedyn.stats: closed forms, the cell rules' error rates by vectorised
simulation, the quick audit against its bars, bad input, and the audit-rules command."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from gaugedyn import InputError, stats
from gaugedyn.cli import main
from gaugedyn.stats import _audit, _estimators


def test_the_quick_audit_meets_the_bars():
    """Every rule of the catalogue against its bars at the quick audit's sizes
    (`_audit.AUDIT_QUICK`, as ``gaugedyn audit-rules --quick``): the every-cell rule of 0/1
    outcomes at 6 cells, every trial count (the full audit runs it at the sizes of the
    published checks, `tests/test_proportion_band.py` at 8 cells), the other cell rules at 42."""
    rows = stats.audit(seed=1, shapes=("normal", "t3"), **_audit.AUDIT_QUICK)
    assert {r["rule"] for r in rows} == set(stats.RULES)
    assert {r["cells"] for r in rows if r["rule"] == "every_cell_proportion"} == {6}
    assert {r["cells"] for r in rows if r["rule"] == "every_cell"} == {42}
    assert {(r["seeds"], r["shape"]) for r in rows if r["rule"] == "every_cell"} == {
        (10, "normal"),
        (10, "t3"),
        (40, "normal"),
        (40, "t3"),
    }
    assert {r["seeds"] for r in rows if r["rule"] == "proportion"} == set(_audit.AUDIT_TRIALS)
    assert all(
        set(r["coverage_by_p"]) == set(_audit.COVERAGE_P) for r in rows if r["rule"] == "proportion"
    )
    listed = [r for r in rows if r["bar"] == _audit.NOT_SIMULATED]
    assert [r["rule"] for r in listed] == ["deterministic"]
    rows = [r for r in rows if r not in listed]
    misses = [
        f"{r['rule']} n={r['seeds']} {r['shape']}: {r['bar']}"
        for r in rows
        if not r["bar"].startswith("ok")
    ]
    assert not misses, "\n".join(misses)
    for r in rows:  # the on-threshold HELD rate is a one-sided test's size, 2.5%
        assert r["held_at_boundary"].rate <= 0.025 + 3 * max(r["held_at_boundary"].se, 0.0035)


def test_every_cell_rarely_says_not_held_on_a_true_claim():
    """42 cells, each 0.3 sd on the true side, 10 seeds, 2,000 simulated experiments: the
    intersection-union rule says NOT HELD in at most 5% (the min-inside-a-bootstrap rule it
    replaces said NOT HELD in all of them)."""
    rng = np.random.default_rng(np.random.SeedSequence(2024))
    x = 0.3 + rng.standard_normal((2000, 10, 42))
    out = stats.RULES["every_cell"].evaluate((x,), 0.0, ">")
    not_held = float(np.mean(out["code"] == -1))
    assert not_held <= 0.05
    assert out["code"].shape == (2000,)
    one = stats.judge("every_cell", x[0], threshold=0.0)
    assert one.verdict == stats._rules.WORDS[int(out["code"][0])]
    assert math.isclose(one.low, out["low"][0]) and math.isclose(one.high, out["high"][0])


def test_mean_rules_are_scipys_t_interval():
    x = np.array([0.3, 1.2, -0.4, 0.8, 2.1, 0.5, 0.9, -0.1, 1.4, 0.7])
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    j = stats.judge("mean_threshold", x, threshold=0.0)
    assert j.verdict == "HELD" and math.isclose(j.low, ci.low) and math.isclose(j.high, ci.high)
    assert j.interval == stats.mean_ci(x)
    y = x - 0.25 + np.array([0.1, -0.2, 0.05, 0.0, 0.15, -0.1, 0.2, -0.05, 0.1, -0.15])
    p = stats.judge("paired_difference", x, y, threshold=0.4, direction="<")
    ci = sps.ttest_rel(x, y).confidence_interval(0.95)
    assert math.isclose(p.low, ci.low) and math.isclose(p.high, ci.high) and p.verdict == "HELD"
    assert stats.judge("equivalence", x - x.mean(), threshold=(-1, 1)).verdict == "HELD"
    assert stats.judge("equivalence", x + 5, threshold=(-1, 1)).verdict == "NOT HELD"
    assert stats.judge("equivalence", x, threshold=(-0.6, 0.6)).verdict == "UNRESOLVED"
    assert stats.judge("relevant_difference", x + 5, threshold=(-1, 1)).verdict == "HELD"
    assert stats.judge("relevant_difference", 0.01 * x, threshold=(-1, 1)).verdict == "NOT HELD"
    above, below = _estimators.t_pvalues(x, 0.5)
    assert math.isclose(above, sps.ttest_1samp(x, 0.5, alternative="greater").pvalue)
    assert math.isclose(below, sps.ttest_1samp(x, 0.5, alternative="less").pvalue)


def test_slope_rules_are_linregress_with_its_t_interval():
    x = np.arange(8.0)
    y = 2.0 * x + np.array([0.1, -0.3, 0.2, 0.0, -0.1, 0.4, -0.2, 0.1])
    fit = stats.line_fit(x, y)
    j = stats.judge("slope_band", x, y, threshold=(1.5, 2.5))
    assert j.verdict == "HELD" and math.isclose(j.estimate, fit.slope)
    assert math.isclose(j.low, fit.slope_low) and math.isclose(j.high, fit.slope_high)
    assert stats.judge("slope_threshold", x, y, threshold=3.0).verdict == "NOT HELD"
    assert stats.judge("slope_threshold", x[:2], y[:2], threshold=0.0).verdict == "UNRESOLVED"


def test_proportion_bounds_are_binomtest_and_clopper_pearson_known_values():
    lo, hi = _estimators.proportion_table(10, 0.975, "exact")
    assert math.isclose(hi[0], 1 - 0.025 ** (1 / 10))  # k = 0: 1 - (alpha/2)^(1/n)
    assert math.isclose(lo[10], 0.025 ** (1 / 10))
    assert np.allclose([lo[5], hi[5]], [0.187086, 0.812914], atol=1e-6)
    wilson = stats._rules.CANDIDATES["proportion[Wilson]"]  # rejected by the audit
    outcomes = np.array([1] * 14 + [0] * 6)
    out = wilson.evaluate((outcomes,), 0.5, ">")
    ci = sps.binomtest(14, 20).proportion_ci(0.95, method="wilson")
    assert math.isclose(out["low"], ci.low) and math.isclose(out["high"], ci.high)
    assert (float(out["low"]), float(out["high"])) == stats.proportion_ci(14, 20)[1:]


def test_randomised_proportion_bounds_are_clopper_pearson_at_the_ends_of_the_draw():
    """``u = 0`` gives the Clopper-Pearson lower bound and ``u = 1`` its upper bound (beta
    quantiles, an independent closed form); between them the bounds solve
    ``P(X < k) + u P(X = k) = level`` (binomial tails)."""
    n, ks = 16, np.arange(17)
    x = (np.arange(n) < ks[:, None]).astype(float)  # one row per k successes
    zero = _estimators.randomised_proportion_bounds(x, 0.975, np.zeros(17))
    one = _estimators.randomised_proportion_bounds(x, 0.975, np.ones(17))
    inner = slice(1, 16)
    assert np.allclose(
        zero.lower[inner], sps.beta.ppf(0.025, ks[inner], n - ks[inner] + 1), atol=1e-10
    )
    assert np.allclose(
        one.upper[inner], sps.beta.ppf(0.975, ks[inner] + 1, n - ks[inner]), atol=1e-10
    )
    u = np.linspace(0.05, 0.95, 17)
    b = _estimators.randomised_proportion_bounds(x, 0.975, u)
    f = sps.binom.cdf(ks - 1, n, b.lower) + u * sps.binom.pmf(ks, n, b.lower)
    g = sps.binom.cdf(ks - 1, n, b.upper) + u * sps.binom.pmf(ks, n, b.upper)
    assert np.allclose(f[1:], 0.975, atol=1e-9) and np.allclose(g[:-1], 0.025, atol=1e-9)
    assert np.all(b.lower <= b.upper) and np.all((zero.lower <= b.lower) & (b.upper <= one.upper))
    assert b.lower[0] == 0.0 and b.upper[-1] == 1.0  # k = 0 with u <= 0.975; k = n, u >= 0.025


@pytest.mark.parametrize("n", [10, 16])
def test_randomised_proportion_covers_95_percent_where_wilson_cannot(n):
    """At 10 and 16 trials (the experiments' counts) the rule's 95% interval covers the true
    success probability 93-97% of the time at every p tried; Wilson's misses the band at one
    of them (98% at 10 trials and p = 1/2, 92% at 16)."""
    rng = np.random.default_rng(np.random.SeedSequence([24, n]))
    rule, wilson = stats.RULES["proportion"], stats._rules.CANDIDATES["proportion[Wilson]"]
    reps = 4000
    for p in (0.05, 0.5, 0.8):
        x = (rng.random((reps, n)) < p).astype(float)
        out = rule.evaluate((x,), 0.5, ">", rng=rng)
        cover = float(np.mean((out["low"] <= p) & (p <= out["high"])))
        assert 0.93 <= cover <= 0.97, (n, p, cover)
    x = (rng.random((reps, n)) < 0.5).astype(float)
    out = wilson.evaluate((x,), 0.5, ">")
    assert not 0.93 <= np.mean((out["low"] <= 0.5) & (0.5 <= out["high"])) <= 0.97


def test_the_proportion_verdict_is_reproducible_from_the_seed_and_the_record():
    outcomes = np.array([1] * 14 + [0] * 6)
    seed = np.random.SeedSequence(7)
    a = stats.judge("proportion", outcomes, threshold=0.5, rng=stats.generator(seed, "rate"))
    b = stats.judge("proportion", outcomes, threshold=0.5, rng=stats.generator(seed, "rate"))
    other = stats.judge("proportion", outcomes, threshold=0.5, rng=stats.generator(seed, "x"))
    assert a == b and a.draw is not None and other.draw != a.draw
    assert repr(a.draw) in a.words and a.as_dict()["uniform_draw"] == a.draw
    again = stats.judge("proportion", a.as_dict()["per_seed"], threshold=0.5, draw=a.draw)
    assert again == a
    with pytest.raises(InputError, match="rng=None"):
        stats.judge("proportion", outcomes, threshold=0.5)
    with pytest.raises(InputError, match="draw=1.5"):
        stats.judge("proportion", outcomes, threshold=0.5, draw=1.5)
    with pytest.raises(InputError, match="draw=0.5"):
        stats.judge("mean_threshold", outcomes, threshold=0.5, draw=0.5)


def test_deterministic_is_a_catalogue_rule_whose_interval_is_the_point():
    j = stats.judge("deterministic", [15975.4], threshold=100.0)
    assert j.verdict == "HELD" and j.interval == (15975.4, 15975.4, 15975.4) and j.n == 1
    assert stats.judge("deterministic", [3.0], threshold=3.0).verdict == "NOT HELD"
    assert stats.judge("deterministic", [np.nan], threshold=3.0).verdict == "UNRESOLVED"
    assert stats.power_at(j, 1e4) == (1.0, 0.0) and stats.power_at(j, 50.0) == (0.0, 0.0)
    with pytest.raises(InputError, match="one value"):
        stats.judge("deterministic", [1.0, 2.0], threshold=0.0)
    assert stats.audit_rule("deterministic", 10)["bar"] == _audit.NOT_SIMULATED


def test_every_published_finding_names_a_catalogue_rule():
    """Every finding of every published summary (results-data/*/summary.json) was judged by a
    rule of the catalogue, so its verdict can be recomputed and its rule is audited."""
    import json

    root = Path(__file__).resolve().parents[1] / "results-data"
    summaries = sorted(root.glob("*/summary.json"))
    assert summaries
    used = {}
    for path in summaries:
        for c in json.loads(path.read_text(encoding="utf-8"))["claims"]:
            if c.get("kind") == "finding":
                used.setdefault(c.get("rule"), []).append(f"{path.parent.name}: {c['id']}")
    unknown = {r: ids for r, ids in used.items() if r not in stats.RULES}
    assert not unknown, unknown
    assert "deterministic" in used and "proportion" in used


def test_median_bounds_are_order_statistics_where_the_level_is_attainable():
    x = np.arange(1.0, 11.0)  # X(k) = k
    for k in (1, 2, 3):
        level = 1 - sps.binom.cdf(k - 1, 10, 0.5)  # X(k) misses the median with P(B <= k-1)
        b = _estimators.median_bounds(x, level)
        assert math.isclose(b.lower, k) and math.isclose(b.upper, 11 - k)
    k, lam = _estimators._hs_weights(10, 0.975)  # interpolated between X(2) and X(3)
    assert k == 2 and 0 < lam < 1
    assert 2 < _estimators.median_bounds(x, 0.975).lower < 3
    assert np.isinf(_estimators.median_bounds(x[:4], 0.975).lower)  # 2^-4 > 2.5%: no bound
    above, below = _estimators.sign_pvalues(np.array([1, 2, 3, -1, 4, 5, 6, 0.5]), 0.0)
    assert math.isclose(above, sps.binomtest(7, 8, alternative="greater").pvalue)
    assert math.isclose(below, sps.binomtest(7, 8, alternative="less").pvalue)


def test_holm_adjusts_as_in_holm_1979():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert np.allclose(stats.holm(p), [0.03, 0.06, 0.06, 0.02])
    assert np.allclose(
        stats.holm(np.stack([p, p[::-1]])), [[0.03, 0.06, 0.06, 0.02], [0.02, 0.06, 0.06, 0.03]]
    )


def test_cell_rules_decide_by_cell():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((10, 5)) * 0.1
    held = stats.judge("every_cell", base + 1.0, threshold=0.0)
    assert held.verdict == "HELD" and len(held.cells) == 5
    wrong = base + 1.0
    wrong[:, 2] -= 3.0  # one cell far on the wrong side
    j = stats.judge("every_cell", wrong, threshold=0.0)
    assert j.verdict == "NOT HELD" and j.cells[2]["p_holm"] < 0.025
    near = base + 1.0
    near[:, 2] -= 1.0  # one cell on the threshold: neither
    assert stats.judge("every_cell", near, threshold=0.0).verdict == "UNRESOLVED"
    assert stats.judge("some_cell", wrong - 2.0, threshold=0.0).verdict == "NOT HELD"
    assert stats.judge("some_cell", near - 1.0, threshold=-0.5).verdict == "HELD"
    assert stats.judge("every_cell", -wrong, threshold=0.0, direction="<").verdict == "NOT HELD"
    g = stats.generator(0, "every_cell_median")
    assert stats.judge("every_cell_median", base + 1.0, threshold=0.0, rng=g).verdict == "HELD"
    missing = base + 1.0
    missing[0, 1] = np.nan  # a cell may lose a seed
    assert stats.judge("every_cell", missing, threshold=0.0).cells[1]["n"] == 9


def test_power_matches_the_noncentral_t():
    rate, se = stats.power(stats.RULES["mean_threshold"], 10, 0.8, reps=4000, seed=5)
    exact = sps.nct.sf(sps.t.ppf(0.975, 9), 9, 0.8 * math.sqrt(10))
    assert abs(rate - exact) < 4 * se


def test_power_at_the_papers_value_matches_the_noncentral_t():
    x = np.random.default_rng(11).normal(0.3, 1.0, 10)
    judged = stats.judge("mean_threshold", x, threshold=0.0)
    rate, se = stats.power_at(judged, 0.5, reps=4000, seed=2)
    exact = sps.nct.sf(sps.t.ppf(0.975, 9), 9, 0.5 / x.std(ddof=1) * math.sqrt(10))
    assert abs(rate - exact) < 4 * se
    paired = stats.judge(
        "paired_difference", x, x - 0.2 + 0.1 * np.cos(np.arange(10)), threshold=0.0
    )
    assert stats.power_at(paired, 0.2, reps=500).rate > 0.99
    assert stats.power_at(stats.judge("mean_threshold", [1.0], threshold=0), 1).rate == 0.0
    flat = stats.judge("mean_threshold", [1.0, 1.0, 1.0], threshold=0)  # no spread to resample
    assert math.isnan(stats.power_at(flat, 1).rate)
    cells = stats.judge("every_cell", 0.3 + np.zeros((10, 4)) + x[:, None], threshold=0.0)
    assert stats.power_at(cells, 0.0, reps=500).rate <= 0.025  # on the threshold: at most the size


def test_empirical_shape_resamples_given_values():
    values = np.random.default_rng(9).lognormal(size=60)
    row = stats.audit_values("median_threshold", values, 1.0, ">", reps=500, barred=False)
    assert row["shape"] == "resampled" and row["seeds"] == 60 and row["bar"].startswith("not")
    assert 0.90 < row["coverage"].rate < 0.99


def test_findings_carry_rule_values_power_and_readings():
    j = stats.judge("mean_threshold", [0.2, 0.4, 0.1, 0.5], threshold=0.0)
    d = stats.finding_record(j, power=0.42)
    assert d["rule"] == "mean_threshold" and d["per_seed"] == [0.2, 0.4, 0.1, 0.5]
    assert d["underpowered"] and d["readings"] == {"as judged": j.verdict}
    other = stats.judge("mean_threshold", [-0.2, 0.4, -0.1, 0.05], threshold=0.0)
    d = stats.finding_record(j, power=0.9, readings={"window A": j, "window B": other})
    assert d["verdict"] == stats.DEPENDS and not d["underpowered"]
    assert d["readings"] == {"window A": "HELD", "window B": "UNRESOLVED"}
    assert stats.combine_readings({"a": "HELD", "b": "HELD"})["verdict"] == "HELD"


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: stats.judge("nope", [1, 2], threshold=0), "rule"),
        (lambda: stats.judge("mean_threshold", [1, 2], threshold="x"), "threshold"),
        (lambda: stats.judge("mean_threshold", [1, 2], threshold=0, direction=">="), "direction"),
        (lambda: stats.judge("equivalence", [1, 2], threshold=(1, -1)), "threshold"),
        (lambda: stats.judge("every_cell", [1, 2, 3], threshold=0), "values"),
        (lambda: stats.judge("proportion", [0, 2, 1], threshold=0.5), "values"),
        (lambda: stats.judge("paired_difference", [1, 2], [1], threshold=0), "samples"),
        (lambda: stats.judge("mean_threshold", [1, 2], threshold=0, confidence=1.5), "confidence"),
        (lambda: stats.audit(seeds=[1]), "seeds"),
        (lambda: stats.audit(reps=0), "reps"),
        (lambda: stats.audit(shapes=["cauchy"]), "shape"),
        (lambda: stats.audit(effect=-1.0), "effect"),
        (
            lambda: stats.finding_record(
                stats.judge("mean_threshold", [1, 2], threshold=0), power=2.0
            ),
            "power",
        ),
        (lambda: stats.combine_readings({"a": "MAYBE"}), "readings"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(InputError, match=name):
        call()


def test_audit_rules_command_exit_codes(capsys, monkeypatch):
    assert main(["audit-rules", "--seeds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seeds=2" in err
    assert main(["audit-rules", "--workers", "0"]) == 2
    assert "--workers 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["audit-rules", "--reps", "x"])
    assert exit_.value.code == 2
    assert "--reps" in capsys.readouterr().err
    quick = [
        "audit-rules",
        "--quick",
        "--rules",
        "mean_threshold",
        "--seeds",
        "10",
        "--reps",
        "300",
        "--no-progress",
    ]
    assert main(quick + ["--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "Produced by `gaugedyn audit-rules --quick --seeds 10 --rules "
        "mean_threshold --reps 300 --markdown` on "
    )
    assert "| mean_threshold | 10 | 1 | t3 |" in out
    monkeypatch.setattr(_audit, "COVERAGE_BAR", (0.99, 1.0))
    assert main(quick) == 1
    assert "MISS: coverage" in capsys.readouterr().out


def test_audit_rules_quick_simulates_the_quick_tests_sizes(capsys):
    """``gaugedyn audit-rules --quick`` takes its cell counts from `_audit.AUDIT_QUICK`, as the
    quick audit test: the every-cell rule of 0/1 outcomes at 6 cells, the other cell rules at
    42 (a few experiments per scenario: the sizes are checked, not the bars)."""
    args = ["audit-rules", "--quick", "--rules", "every_cell_proportion", "every_cell"]
    args += ["--seeds", "10", "--trials", "6", "--shapes", "normal", "--reps", "20"]
    assert main([*args, "--markdown", "--no-progress"]) in (0, 1)
    out = capsys.readouterr().out
    assert "| every_cell_proportion | 6 | 6 | bernoulli |" in out, out
    assert "| every_cell | 10 | 42 | normal |" in out, out


def test_the_rejected_bootstrap_candidates_still_miss_the_coverage_bar():
    """Why the catalogue uses t intervals: at 10 seeds the BCa and percentile bootstrap
    intervals of the mean cover about 89-90% (nominal 95%) on normal values."""
    for name in ("mean_threshold[BCa bootstrap]", "mean_threshold[percentile bootstrap]"):
        row = stats.audit_rule(stats._rules.CANDIDATES[name], 10, reps=300, seed=4)
        assert row["coverage"].rate < 0.93
        assert row["bar"].startswith("MISS") and "coverage" in row["bar"]


DOC = Path(__file__).resolve().parents[1] / "docs" / "verdict-rules.md"


def test_the_docs_page_runs_and_has_every_generated_block():
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
    for name in ("kinds", "catalogue", "named", "resampled", "candidates"):
        assert f"<!-- audit-data {name} -->" in text, name


def test_median_rules_decide_text_and_p_values_from_one_test():
    """400 simulated cell data sets (10 and 40 seeds, 6 cells, lognormal): whenever a median
    cell rule says HELD or NOT HELD, the deciding Holm-adjusted p-value it records is at most
    2.5%, and otherwise above it (the exact sign test's p-values, recorded before, disagreed
    with the interpolated interval's verdict in 13-19 of 400)."""
    rng = np.random.default_rng(np.random.SeedSequence(41))
    disagree = 0
    for i in range(400):
        n = (10, 40)[i % 2]
        x = rng.lognormal(size=(n, 6)) - 1.0 + rng.normal(0, 0.3, size=6)
        for name in ("every_cell_median", "some_cell_median"):
            j = stats.judge(name, x, threshold=0.0, rng=stats.generator(i, name))
            p = min(c["p_holm"] for c in j.cells)
            decided = j.verdict == ("NOT HELD" if name == "every_cell_median" else "HELD")
            disagree += decided != (p <= 0.025)
    assert disagree == 0
    for n in (6, 10, 25, 40):  # the interval is the inverted test, at every draw
        x = rng.lognormal(size=(200, n))
        u = rng.uniform(size=200)
        thr = np.quantile(x, rng.uniform(0.2, 0.8), axis=-1)
        b = _estimators.randomised_median_bounds(x, 0.975, u)
        above, below = _estimators.randomised_median_pvalues(x, thr[:, None], u)
        assert np.array_equal(b.lower > thr, above < 0.025)
        assert np.array_equal(b.upper < thr, below < 0.025)


def test_degenerate_samples_are_unresolved_with_the_reason():
    zeros = np.zeros(40)  # shared_representation's switch-rate difference: 40 identical zeros
    for name in ("mean_threshold", "median_threshold", "equivalence"):
        thr = (-0.05, 0.05) if name == "equivalence" else 0.05
        j = stats.judge(name, zeros, threshold=thr, rng=stats.generator(0, name))
        assert j.verdict == "UNRESOLVED" and "zero-width" in j.reason, (name, j)
    j = stats.judge("paired_difference", np.ones(10), np.zeros(10), threshold=0.5)
    assert j.verdict == "UNRESOLVED" and "no spread" in j.reason
    ties = np.array([0.0] * 30 + [1.0, 2.0, 3.0, -1.0])  # the bounding order statistics tied
    g = stats.generator(0, "ties")
    j = stats.judge("median_threshold", ties, threshold=0.5, direction="<", rng=g)
    assert j.verdict == "UNRESOLVED" and "tied" in j.reason and j.as_dict()["reason"] == j.reason
    j = stats.judge("median_threshold", [1.0, 2.0, 3.0, 4.0, 5.0], threshold=0.0, rng=g)
    assert j.verdict == "UNRESOLVED" and "at least 6" in j.reason
    assert stats.judge("mean_threshold", [1.0], threshold=0.0).reason.startswith("too few")
    cells = np.random.default_rng(2).normal(-3.0, 0.1, (10, 3))
    cells[:, 1] = 7.0  # one cell without spread: it is not judged, the others still are
    j = stats.judge("every_cell", cells, threshold=0.0)
    assert j.verdict == "NOT HELD" and "cell 1" in j.reason and j.cells[1]["p_holm"] == 1.0
    assert stats.judge("every_cell", np.abs(cells) + 1, threshold=0.0).verdict == "UNRESOLVED"


def test_slopes_need_six_rows_and_a_line_that_fits():
    """A slope needs 4 residual degrees of freedom and a lack-of-fit test (the quadratic term's
    t test, as ordinary least squares with x^2 gives it); rows that bend are UNRESOLVED."""
    rng = np.random.default_rng(5)
    x = np.arange(5.0)
    j = stats.judge("slope_band", x, 2 * x + 0.01 * rng.standard_normal(5), threshold=(1, 3))
    assert j.verdict == "UNRESOLVED" and "too few rows" in j.reason
    x = np.arange(8.0)
    bent = 0.5 * x**2 + 0.05 * rng.standard_normal(8)
    design = np.stack([np.ones(8), x, x**2], 1)
    coef, rss = np.linalg.lstsq(design, bent, rcond=None)[:2]
    t = coef[2] / math.sqrt(rss[0] / 5 * np.linalg.inv(design.T @ design)[2, 2])
    j = stats.judge("slope_threshold", x, bent, threshold=0.0)
    assert math.isclose(j.lack_of_fit, 2 * sps.t.sf(abs(t), 5), rel_tol=1e-9)
    assert j.verdict == "UNRESOLVED" and j.reason.startswith("lack of fit")
    line = 2 * x + 0.1 * rng.standard_normal(8)
    j = stats.judge("slope_threshold", x, line, threshold=0.0)
    assert j.verdict == "HELD" and j.lack_of_fit > 0.05 and j.reason is None
    out = stats.RULES["slope_threshold"].evaluate((x, np.stack([bent, line])), 0.0, ">")
    assert list(out["code"]) == [0, 1]  # the audit judges the same rule


def test_median_cell_rules_name_the_test_their_p_values_come_from():
    """The median cell rules' words name the randomised sign test, whose p-values they record
    (`test_median_rules_decide_text_and_p_values_from_one_test`), not the interpolated order
    statistics used before."""
    for name in ("every_cell_median", "some_cell_median"):
        words = stats.RULES[name].words(0.0, ">")
        assert "by the randomised sign test that interval inverts" in words
        assert "interpolated" not in words


@pytest.mark.parametrize("rule", ["equivalence", "median_band", "slope_band"])
def test_a_band_says_not_held_at_its_edge_at_most_one_sides_size(rule):
    """A band narrow against the spread: with the truth on its upper edge, NOT HELD comes from
    that edge (2.5% of a 95% interval's side) and from the interval falling wholly below the
    far edge too. Each edge tested at 1.25% (the 97.5% interval) keeps the two together at
    most 2.5% + 2 Monte Carlo s.e.; one 95% interval for both edges (the rule before) does
    not, so the test can fail."""
    r = stats.RULES[rule]
    n, reps, lo, hi = 8, 20000, -0.05, 0.05
    rng = np.random.default_rng(7)
    if r.estimator == "slope":
        x = np.linspace(-1.0, 1.0, n)
        x = (x - x.mean()) / x.std()
        samples = (x, hi * x + rng.standard_normal((reps, n)))
    else:
        samples = (hi + rng.standard_normal((reps, n)),)
    draws = rng.random(reps) if r.randomised else None
    out = r.evaluate(samples, (lo, hi), "inside", draws=draws)
    rate = np.mean(out["code"] == -1)
    assert rate <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps), rate
    one = r.bounds(samples, 0.975, draws)  # the single 95% interval for both edges
    before = np.mean((one.upper <= lo) | (one.lower >= hi))
    assert before > 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps), before
    # the words say which interval decides which word
    assert "widened to 97.5% (each edge tested at 1.25%)" in r.words((lo, hi))


def test_a_band_word_past_an_edge_needs_the_wider_interval():
    """Values whose 95% interval lies below the band but whose 97.5% one reaches into it are
    UNRESOLVED, not NOT HELD (inside), and not HELD (outside)."""
    base = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, -0.8, 0.8, -0.2, 0.2, 0.0])
    base = (base - base.mean()) / base.std(ddof=1)
    se = 1 / math.sqrt(base.size)
    t95, t975 = sps.t.ppf(0.975, base.size - 1), sps.t.ppf(0.9875, base.size - 1)
    lo = (t95 + t975) / 2 * se  # between the two upper bounds of a sample centred at 0
    x = base
    inside = stats.judge("equivalence", x, threshold=(lo, lo + 1))
    outside = stats.judge("relevant_difference", x, threshold=(lo, lo + 1))
    assert inside.high < lo and inside.verdict == "UNRESOLVED"
    assert outside.verdict == "UNRESOLVED"
    far = stats.judge("equivalence", x, threshold=(t975 * se * 1.01, t975 * se * 1.01 + 1))
    assert far.verdict == "NOT HELD"

"""Seed-based checks judged by catalogue rules (issue 41, item 5): :func:`gaugedyn.harness.checked`
and the gauge checks moved onto it, each fed data built to pass and data built to fail."""

from __future__ import annotations

import numpy as np
import pytest
from _properties import properties
from hypothesis import given
from hypothesis import strategies as st

from gaugedyn import stats
from gaugedyn.experiments.gauge import _analysis as ga
from gaugedyn.harness import checked


def test_a_checked_claim_passes_on_its_expected_word_only():
    g = np.random.default_rng(0)
    above = stats.judge("mean_threshold", 1.0 + 0.1 * g.standard_normal(20), threshold=0.0)
    flat = stats.judge("mean_threshold", 0.1 * g.standard_normal(20), threshold=0.0)
    below = stats.judge("mean_threshold", -1.0 + 0.1 * g.standard_normal(20), threshold=0.0)
    assert checked("c", "s", above).passed and checked("c", "s", above).kind == "check"
    assert not checked("c", "s", flat).passed and not checked("c", "s", below).passed
    assert checked("c", "s", below, expect="not HELD").passed
    assert checked("c", "s", flat, expect="not HELD").passed
    assert not checked("c", "s", above, expect="not HELD").passed
    d = checked("c", "s", above).to_dict()
    assert d["rule"] == "mean_threshold" and len(d["per_seed"]) == 20
    assert d["tolerance"]["verdict"] == "HELD" and "verdict" not in d
    with pytest.raises(ValueError, match="expect"):
        checked("c", "s", above, expect="NOT HELD")


def _remaining(values: np.ndarray):
    tasks = [{"K": k} for k in range(2, 2 + values.shape[1])]
    results = [{"remaining": values[:, i]} for i in range(values.shape[1])]
    return ga._remaining_function_check(tasks, results, "", np.random.SeedSequence(3))


def test_the_remaining_function_check_fails_where_one_median_is_not_below_the_limit():
    g = np.random.default_rng(2)
    small = np.exp(g.normal(np.log(1e-3), 1.0, size=(64, 3)))  # lognormal, medians 1e-3
    assert _remaining(small).passed
    one_high = small.copy()
    one_high[:, 2] = np.exp(g.normal(np.log(0.2), 1.0, size=64))  # one K's median 0.2
    assert not _remaining(one_high).passed
    on_limit = small.copy()
    on_limit[:, 1] = np.exp(g.normal(np.log(ga.REMAINING_LIMIT), 1.0, size=64))
    assert not _remaining(on_limit).passed  # a median on the limit is not shown below it
    assert not _remaining(small[:5]).passed  # five seeds: too few for the median rule


def test_every_check_declared_off_the_catalogue_is_a_published_check_without_a_rule():
    """`Experiment.off_catalogue` names only checks of the experiment's published run that no
    rule judged (a stale entry, or one whose check has moved onto the catalogue, fails), and the
    generated list on docs/verdict-rules.md counts both kinds."""
    import json
    from pathlib import Path

    from gaugedyn.harness import _audit_plan as ap
    from gaugedyn.harness._config import resolve_experiment

    root = Path(__file__).resolve().parents[1]
    declared = 0
    for path in sorted((root / "results-data").glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        off = resolve_experiment(summary["experiment"]).off_catalogue
        checks = {c["id"]: c for c in summary["claims"] if c.get("kind") == "check"}
        for cid in off:
            assert cid in checks, (summary["experiment"], cid)
            assert checks[cid].get("rule") is None, cid
            declared += 1
    text = "\n".join(ap.checks_table(root))
    assert f"{declared} not yet" in text
    assert text.count("off the catalogue") == declared


def _scaling(ratio_of_d, dims=(6, 8, 11, 16, 23, 32), flow_of_d=lambda d: d**2.0):
    """The two exponent checks of ``gauge_in_training_scaling`` on built ratios."""
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.gauge_in_training_scaling import EXPERIMENT

    config = config_of(EXPERIMENT, quick=True)
    d = np.asarray(dims, dtype=float)
    claims = ga._scaling_exponent_checks(config, list(dims), ratio_of_d(d), flow_of_d(d))
    return {c.id.split(".")[1]: c for c in claims}


def test_the_scaling_exponent_checks_are_the_slope_rules_and_fail_on_data_built_to_fail():
    """``ratio_grows`` is ``slope_threshold`` above 0 on (log D, log ratio) and
    ``ratio_exponent_matches_flow`` is ``slope_band`` inside +-tolerance on (log D,
    log(ratio / flow's ratio)); both pass on a ratio that follows the flow and fail on a flat
    ratio, an exponent 0.5 from the flow's, five rows (four residual degrees of freedom needed)
    and rows that bend."""
    wobble = 1 + 0.01 * np.array([1, -1, 1, -1, 1, -1])
    good = _scaling(lambda d: d**2 * wobble)
    for c in good.values():
        d = c.to_dict()
        assert c.kind == "check" and c.passed and d["tolerance"]["verdict"] == "HELD"
    assert good["ratio_grows"].rule == "slope_threshold"
    assert good["ratio_exponent_matches_flow"].rule == "slope_band"
    assert good["ratio_grows"].measured == pytest.approx(2.0, abs=0.02)
    flat = _scaling(lambda d: 5.0 * wobble)
    assert not flat["ratio_grows"].passed and not flat["ratio_exponent_matches_flow"].passed
    steep = _scaling(lambda d: d**2.5 * wobble)
    assert steep["ratio_grows"].passed and not steep["ratio_exponent_matches_flow"].passed
    assert steep["ratio_exponent_matches_flow"].to_dict()["tolerance"]["verdict"] == "NOT HELD"
    five = _scaling(lambda d: d**2 * wobble[:5], dims=(6, 8, 11, 16, 23))
    for c in five.values():
        assert not c.passed and c.to_dict()["tolerance"]["verdict"] == "UNRESOLVED"
        assert "UNRESOLVED" in c.statement
    bent = _scaling(lambda d: d**2 * np.exp(0.3 * (np.log(d) - np.log(d).mean()) ** 2))
    for c in bent.values():
        assert not c.passed and c.to_dict()["tolerance"]["verdict"] == "UNRESOLVED"
    # the flow's own bend is not the trained runs' misfit: a ratio that bends as the flow does
    bends = _scaling(
        lambda d: d**2 * np.exp(0.3 * np.log(d) ** 2) * wobble,
        flow_of_d=lambda d: d**2 * np.exp(0.3 * np.log(d) ** 2),
    )
    assert bends["ratio_exponent_matches_flow"].passed


def test_the_band_check_is_every_cell_proportion_on_the_shares_below_and_above_the_curve():
    """A curve inside the seeds' 10-90% band at every declared cell: HELD on a curve at the
    seeds' median in every cell; not HELD when one cell has the curve below 95% of the seeds
    (outside the band), nor when the curve lies above every seed in one cell."""
    g = np.random.default_rng(4)
    seeds, times = 64, 4
    t = np.linspace(0.0, 8.0, 33)
    loss = g.standard_normal((seeds, t.size))
    assert ga.declared_records(t, 8.0) == [8, 16, 24, 32]
    median = np.median(loss, axis=0)
    below = ga.below_curve(t, loss, median, 8.0)
    assert below.shape == (seeds, times) and np.all(below.mean(axis=0) == 0.5)
    ok = ga.band_check("x.band", "s", below, np.random.SeedSequence(1), expected="HELD")
    assert ok.passed and ok.rule == "every_cell_proportion"
    assert len(ok.to_dict()["tolerance"]["uniform_draw"]) == 2 * times
    low = median.copy()
    low[16] = np.quantile(loss[:, 16], 0.05)  # the second declared time: below the band
    out = ga.band_check(
        "x.band", "s", ga.below_curve(t, loss, low, 8.0), np.random.SeedSequence(1), "HELD"
    )
    assert not out.passed
    high = median.copy()
    high[32] = loss[:, 32].max() + 1.0  # the last declared time: above every seed
    out = ga.band_check(
        "x.band", "s", ga.below_curve(t, loss, high, 8.0), np.random.SeedSequence(1), "HELD"
    )
    assert not out.passed and out.to_dict()["tolerance"]["verdict"] == "NOT HELD"


@properties(40)
@given(
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=30, unique=True),
    st.floats(0.01, 120.0),
)
def test_a_declared_record_is_the_nearest_record_to_each_declared_time(times, length):
    """`declared_records`: for every declared fraction ``f`` of the run (``BAND_TIMES``) the
    record nearest ``f * length`` on any increasing grid (the earlier of two equally near),
    against a plain search over every record."""
    from gaugedyn.experiments.gauge import _protocol as gp

    t = np.sort(np.asarray(times))
    got = ga.declared_records(t, length)
    assert len(got) == len(gp.BAND_TIMES)
    for f, i in zip(gp.BAND_TIMES, got):
        target = f * length
        nearest = min(range(t.size), key=lambda j: (abs(t[j] - target), j))
        assert i == nearest, (f, target, t)


@properties(20)
@given(st.permutations([250, 400, 100, 1000]), st.integers(32, 64))
def test_the_noise_term_check_reads_the_largest_d_at_the_end_of_the_run(dims, seeds):
    """``erf_noise_term_needed`` judges the seeds of the largest ``D`` (whatever the order of
    the tasks) at the last declared time, nothing else: every seed there above the ODE without
    the term and every other cell below it is HELD; the reverse is not (at 32 seeds or more,
    where no seed below is HELD for every uniform draw: 1 - 0.05^(1/32) < 0.1)."""
    rng = np.random.default_rng(seeds)
    for top_below in (0.0, 1.0):
        erf = []
        for D in dims:
            below = np.full((seeds, 4), 1.0 - top_below)
            if D == max(dims):
                below[:, -1] = top_below
            erf.append(
                (
                    {"dim": D},
                    {
                        "worst": {"ode_eta1": 1.0},
                        "below": {"ode_eta1": below},
                        "at": [1.0, 2.0, 3.0, 4.0],
                    },
                )
            )
        claim = ga._online_sgd_noise_check(erf, dims, np.random.SeedSequence(int(rng.integers(9))))
        assert claim.rule == "every_cell_proportion"
        assert claim.passed is (top_below == 0.0), (dims, top_below, claim.statement)


@pytest.mark.parametrize("centre", ["ode", "ode_eta1"])
def test_the_noise_term_check_needs_the_seeds_above_the_ode_without_it(centre):
    """erf results built around the online ODE with its eta^2 term (spread ``0.02 D^-1/2``):
    the ODE inside the band and the ODE without the term below it at the end (both checks
    HELD); built around the ODE without the term, both fail."""
    from _gauge_helpers import config_of, fake_online_sgd_results

    from gaugedyn.experiments.gauge.online_sgd import EXPERIMENT

    cfg = config_of(EXPERIMENT, quick=True)
    tasks, results = fake_online_sgd_results(EXPERIMENT, cfg, "erf", noise=centre == "ode")
    _, claims = ga._online_sgd_analyse_erf(cfg, tasks, results, "erf", np.random.SeedSequence(5))
    by_id = {c.id: c for c in claims}
    for cid in ("online_sgd.erf_within_spread", "online_sgd.erf_noise_term_needed"):
        assert by_id[cid].rule == "every_cell_proportion"
        assert by_id[cid].passed is (centre == "ode"), (cid, by_id[cid].statement)
    spread = by_id["online_sgd.erf_spread_exponent"]  # 0.02 D^-1/2 about either curve
    assert spread.rule == "slope_band" and spread.passed, spread.statement

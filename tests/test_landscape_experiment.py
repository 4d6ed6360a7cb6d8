"""The landscape experiment's analysis, fed results built to pass and built to fail."""

import numpy as np
import pytest

from gaugedyn.experiments.gauge import _analysis as ga
from gaugedyn.experiments.gauge import _landscape as study
from gaugedyn.experiments.gauge.landscape import EXPERIMENT

EPS = list(np.geomspace(1e-2, 1e-6, 9))


def _escape(lam, slope_ratio, offset=3.0):
    x = np.log(1 / np.array(EPS))
    t = (slope_ratio * x + offset) / lam
    return {
        "eps": EPS,
        "lambda_plus": lam,
        "loss": 0.1,
        "index": 1,
        "plus": list(t),
        "minus": list(t + 0.01),
    }


def _end(modes=None, units=None, escape=None, act="relu", **kw):
    rec = {
        "kind": "interior",
        "loss": 0.1,
        "grad_norm": 1e-13,
        "index": 1,
        "singular": False,
        "distance": 0.1,
        "hessian_error": 1e-12,
        "modes": modes
        or {
            "measured": 3,
            "rotation": 1,
            "gauge": 2,
            "coinciding": 0,
            "dead": 0,
            "predicted": 3,
            "unexplained": 0,
        },
        "units": units or {"active": [0, 1], "dead": [], "collapsed": [], "coinciding": []},
    }
    if escape is not None:
        rec["escape"] = escape
    if act == "erf":
        rec["rescaling_residual"] = 0.5
    return rec | kw


def _sources(*ends, act="relu"):
    src = {"kind": "random", "activation": act, "K": 2, "seed": 0}
    return [({"kind": "source"}, {"source": src, "plateaus": list(ends)})]


def test_escape_finding_holds_at_slope_one_and_not_at_nine_tenths():
    held = ga._landscape_escape_finding(_sources(_end(escape=_escape(0.1, 1.0))))
    assert held.verdict == "HELD" and len(held.readings) == 2
    off = ga._landscape_escape_finding(_sources(_end(escape=_escape(0.1, 0.9))))
    assert off.verdict == "NOT HELD"


def test_zero_mode_finding_fails_on_a_missing_mode():
    good = _sources(_end())
    assert ga._landscape_zero_mode_claims(good, [])[0].verdict == "HELD"
    missing = {
        "measured": 2,
        "rotation": 1,
        "gauge": 2,
        "coinciding": 0,
        "dead": 0,
        "predicted": 3,
        "unexplained": -1,
    }
    bad = _sources(_end(), _end(modes=missing))
    assert ga._landscape_zero_mode_claims(bad, [])[0].verdict == "NOT HELD"


def test_erf_gauge_check_fails_when_a_generator_is_a_zero_mode():
    erf = _sources(_end(act="erf"), act="erf")
    assert ga._landscape_zero_mode_claims(erf, [])[1].passed
    erf[0][1]["plateaus"][0]["rescaling_residual"] = 1e-9
    assert not ga._landscape_zero_mode_claims(erf, [])[1].passed


def _gauge(la, lw, ta, tw, same=True):
    common = {
        "grad_norm": 1e-13,
        "index": 1,
        "same_as_balanced": same,
        "delta": [0.0],
        "escape": [],
        "common_distance": 1e-3,
        "loss": 0.1,
    }
    return {
        "gauges": {
            "a-heavy": common | {"lambda_plus": la, "common_time": ta},
            "balanced": common | {"lambda_plus": 1.0, "common_time": 5.0},
            "w-heavy": common | {"lambda_plus": lw, "common_time": tw},
        }
    }


def test_gauge_findings_read_rate_and_clock():
    cfg = {"gauge_strength": 4.0}
    same_saddle, rate, clock = ga._landscape_gauge_claims(_gauge(2.0, 0.1, 2.5, 50.0), cfg)
    assert same_saddle.passed and rate.verdict == "HELD" and clock.verdict == "HELD"
    _, rate, clock = ga._landscape_gauge_claims(_gauge(1.0, 1.02, 5.0, 9.0), cfg)
    assert rate.verdict == "NOT HELD" and clock.verdict == "NOT HELD"
    assert not ga._landscape_gauge_claims(_gauge(2.0, 0.1, 2.5, 50.0, same=False), cfg)[0].passed


def test_checks_fail_on_failed_controls_and_missing_plateau_ends():
    controls = {
        k: True
        for k in (
            "finder_present",
            "finder_absent",
            "refiner_minimum",
            "refiner_saddle",
            "refiner_absent",
            "escape_present",
            "escape_absent",
            "dedup_present",
            "dedup_absent",
        )
    }
    assert all(c.passed for c in ga._landscape_control_checks(controls))
    controls["finder_absent"] = False
    assert [c.id for c in ga._landscape_control_checks(controls) if not c.passed] == [
        "landscape.control.finder_absent"
    ]
    cfg = {"near": 0.5, "min_plateau_ends": 2}
    one = _sources(_end())
    hessian, ends = ga._landscape_plateau_checks(one, cfg)
    assert hessian.passed and not ends.passed
    far = _sources(_end(), _end(distance=0.9))
    assert not ga._landscape_plateau_checks(far, cfg)[1].passed
    wrong = _sources(_end(hessian_error=1e-4))
    assert not ga._landscape_plateau_checks(wrong, cfg)[0].passed


def test_quick_configuration_declares_enough_escape_starts():
    quick = EXPERIMENT.params["escape_eps"].quick
    assert len(quick) - 2 >= 4  # the slope's residual degrees of freedom
    tasks = EXPERIMENT.tasks(
        {k: (p.quick if p.quick is not None else p.default) for k, p in EXPERIMENT.params.items()}
    )
    kinds = {t["kind"] for t in tasks}
    assert kinds == {"source", "gauge", "catalogue", "single", "controls"}


@pytest.mark.parametrize("band", [0.02])
def test_controls_pass_on_the_real_instruments(band):
    out = study.controls_task(band)
    assert all(v is True for k, v in out.items() if k != "escape_slope_ratio"), out


def test_the_landscape_figure_arrays_are_the_results_read_plainly():
    """`_landscape_arrays_of` against a plain reading of built results: each catalogue entry's
    row, one escape array per refined end with an escape reading (``ln(1/eps)`` and
    ``lambda_+ T`` of both signs; an end without one skipped), its label and the slope
    judgement of each sign, the gauge task's three copies in the order a-heavy, balanced,
    w-heavy, and each single-start row."""
    entry = {
        "loss": 0.1,
        "index": 1,
        "basin": {"share": 0.5, "low": 0.2, "high": 0.8},
        "visits": 2,
        "newton": 5,
    }
    catalogue = [({"activation": "relu", "K": 2}, {"entries": [entry, entry | {"loss": 0.3}]})]
    escapes = [_escape(0.1, 1.0), _escape(2.0, 0.5, offset=1.0)]
    sources = _sources(_end(escape=escapes[0]), _end(), _end(escape=escapes[1]))
    single = {
        "activation": "erf",
        "gauge": "w-heavy",
        "dim": 8,
        "specialization_time": 12.0,
        "distance": 0.2,
        "loss": 0.05,
        "index": 0,
        "unstable_rates": [],
        "grad_norm": 1e-12,
    }
    by = {
        "catalogue": catalogue,
        "source": sources,
        "gauge": [({"kind": "gauge"}, _gauge(2.0, 0.1, 2.5, 50.0))],
        "single": [({"kind": "single"}, single), ({"kind": "single"}, single | {"gauge": "a"})],
    }
    arrays = ga._landscape_arrays_of(by)
    np.testing.assert_array_equal(
        arrays["catalogue_relu_K2"], [[0.1, 1, 0.5, 0.2, 0.8, 2, 5], [0.3, 1, 0.5, 0.2, 0.8, 2, 5]]
    )
    assert [k for k in arrays if k.startswith("escape_") and k[7:].isdigit()] == [
        "escape_0",
        "escape_1",
    ]
    slopes = []
    for k, e in enumerate(escapes):
        x = np.array([np.log(1.0 / eps) for eps in e["eps"]])
        plus = np.array([e["lambda_plus"] * t for t in e["plus"]])
        minus = np.array([e["lambda_plus"] * t for t in e["minus"]])
        np.testing.assert_allclose(arrays[f"escape_{k}"], [x, plus, minus], rtol=1e-14)
        assert f"lambda_+ = {e['lambda_plus']:.3g}" in str(arrays["escape_labels"][k])
        for y in (plus, minus):
            b = ga._landscape_judge_slope(x, y)
            slopes.append([b.estimate, b.low, b.high])
    np.testing.assert_allclose(arrays["escape_slopes"], slopes, rtol=1e-12)
    assert len(arrays["escape_labels"]) == 2
    np.testing.assert_array_equal(
        arrays["gauge"], [[2.0, 2.5, 1e-3], [1.0, 5.0, 1e-3], [0.1, 50.0, 1e-3]]
    )
    np.testing.assert_array_equal(
        arrays["single"],
        [
            [1, 1, 8, 12.0, 0.2, 0.05, 0, np.nan, 1e-12],
            [1, 0, 8, 12.0, 0.2, 0.05, 0, np.nan, 1e-12],
        ],
    )


def test_the_balanced_saddle_is_kept_across_gauge_strengths_and_equals_a_fresh_one():
    """`gauge_task()` refines the balanced saddle once per problem and settings: a second gauge
    strength reads the kept one (the same object), another problem is computed afresh, and the kept
    record equals one computed with no cache."""
    source = {"kind": "random", "activation": "relu", "K": 3, "dim": 20, "seed": 0, "scale": 0.1}
    point = study.plateau_point(source, 2000.0, 0.05, 0.5, 1)
    settings = ((1e-3,), 0.02, 1e-3)
    study._balanced_kept.cache_clear()
    first = study.gauge_task(point, 4.0, *settings)
    second = study.gauge_task(point, 2.0, *settings)
    info = study._balanced_kept.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    base = study.with_gauge(point.problem, names=["balanced"] * point.problem.K)
    key = study._problem_key(base)
    kept = study._balanced(key, base, *settings)
    assert kept is study._balanced(key, base, *settings)
    fresh = study._balanced(None, base, *settings)
    assert fresh is not kept
    for got in (first, second):
        rec, ref = got["gauges"]["balanced"], fresh[2]
        assert rec["index"] == ref["index"] and rec["same_as_balanced"]
        np.testing.assert_allclose(
            [rec["loss"], rec["lambda_plus"], *rec["escape"], rec["common_time"]],
            [ref["loss"], ref["lambda_plus"], *ref["escape"], ref["common_time"]],
            rtol=1e-9,
        )
    moved = base.replace(a=base.a * 1.01)
    study._balanced(study._problem_key(moved), moved, *settings)
    assert study._balanced_kept.cache_info().misses == 2

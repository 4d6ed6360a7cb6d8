"""Seed-based checks judged by catalogue rules (issue 41, item 5): :func:`gaugedyn.harness.checked`
and the gauge checks moved onto it, each fed data built to pass and data built to fail."""

from __future__ import annotations

import numpy as np
import pytest

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

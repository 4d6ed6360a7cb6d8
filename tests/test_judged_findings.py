"""Findings judged by the verdict-rule catalogue: what a summary stores, and what the report marks."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.harness import Claim, judged
from gaugedyn.harness._report import claim_row
from gaugedyn.stats import Measure, generator, judge

SIGNED = Measure("symmetric", "a signed difference", 0.5)


def _values(shift: float, n: int = 10, seed: int = 0) -> np.ndarray:
    return shift + np.random.default_rng(seed).standard_normal(n)


def test_a_judged_finding_carries_its_rule_values_power_and_reading():
    j = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    c = judged("x", "the mean is positive", j, measure=SIGNED.at(3.0)).to_dict()
    assert c["verdict"] == "HELD" and c["rule"] == "mean_threshold"
    assert c["per_seed"] == pytest.approx(list(_values(3.0)))
    assert 0.9 < c["power"] <= 1.0 and c["underpowered"] is False
    assert c["readings"] == {"as judged": "HELD"}
    # the verdict is recomputable from the summary alone
    again = judge(
        c["rule"],
        np.array(c["per_seed"]),
        threshold=c["tolerance"]["threshold"],
        direction=c["tolerance"]["direction"],
    )
    assert again.verdict == c["verdict"] and [again.low, again.high] == c["interval"]
    assert c["tolerance"]["measure"]["power_at"] == 3.0  # the paper's value
    assert c["tolerance"]["reading_detail"]["as judged"]["per_seed"] == c["per_seed"]


def test_readings_that_disagree_give_depends_on_the_reading_and_the_report_shows_each():
    held = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    not_held = judge("mean_threshold", _values(-3.0), threshold=0.0, direction=">")
    c = judged("x", "s", held, measure=SIGNED, readings={"settled": held, "transient": not_held})
    assert c.verdict == "depends on the reading" and not c.passed
    row = claim_row("exp", c.to_dict())
    assert "settled: HELD" in row["verdict"] and "transient: NOT HELD" in row["verdict"]
    agree = judged("y", "s", held, measure=SIGNED.at(3.0), readings={"a": held, "b": held})
    assert agree.verdict == "HELD" and claim_row("exp", agree.to_dict())["verdict"] == "HELD"


def test_a_weak_finding_is_marked_underpowered():
    j = judge("mean_threshold", _values(0.3, n=4), threshold=0.0, direction=">")
    c = judged("x", "s", j, measure=SIGNED.at(0.3)).to_dict()
    assert c["underpowered"] is True and "underpowered" in claim_row("e", c)["verdict"]


def test_a_claim_whose_verdict_contradicts_its_readings_is_refused():
    with pytest.raises(ValueError, match="readings give"):
        Claim(
            "x",
            "s",
            1.0,
            None,
            None,
            True,
            kind="finding",
            verdict="HELD",
            readings={"a": "HELD", "b": "NOT HELD"},
        )


def test_every_reading_is_stored_so_the_verdict_recomputes_from_the_summary():
    from gaugedyn.harness._rejudge import recompute

    held = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    other = judge("mean_threshold", _values(-3.0, seed=1), threshold=0.0, direction=">")
    c = judged("x", "s", held, measure=SIGNED, readings={"a": held, "b": other}).to_dict()
    detail = c["tolerance"]["reading_detail"]
    assert set(detail) == {"a", "b"} and detail["b"]["per_seed"] == other.values
    assert c["tolerance"]["primary_reading"] == "a"
    assert recompute(c) == ("same", [])
    detail["b"]["per_seed"][0] += 100.0  # a tampered value
    status, problems = recompute(c)
    assert status == "differs" and any("'b'" in p for p in problems)


def test_the_power_is_at_the_declared_effect_on_the_findings_own_noise():
    """Same seeds, same rule, same mean: values with different noise get different powers
    (the power is simulated on resamples of each finding's own values, in its own units)."""
    rng = np.random.default_rng(4)
    tight = judge("mean_threshold", 0.3 + 0.1 * rng.standard_normal(10), threshold=0.0)
    wide = judge("mean_threshold", 0.3 + 1.0 * rng.standard_normal(10), threshold=0.0)
    a = judged("a", "s", tight, measure=SIGNED.at(None)).power
    b = judged("b", "s", wide, measure=SIGNED.at(None)).power
    assert a > 0.99 and b < 0.5


def test_a_rule_the_measure_does_not_choose_is_refused():
    """A long-tailed measure (an error, a time, a ratio) is judged by its median: a mean
    rule on it is refused before anything is recorded."""
    errors = Measure("long-tailed", "a reconstruction error difference", 0.01)
    j = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    with pytest.raises(InputError, match="median_threshold"):
        judged("x", "s", j, measure=errors)
    g = generator(0, "errors")
    ok = judge(errors.rule("threshold"), _values(3.0), threshold=0.0, direction=">", rng=g)
    assert judged("x", "s", ok, measure=errors).rule == "median_threshold"

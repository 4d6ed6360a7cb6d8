"""Findings judged by the verdict-rule catalogue: what a summary stores, and what the report marks."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.harness import Claim, judged
from gaugedyn.harness._report import claim_row
from gaugedyn.stats import judge


def _values(shift: float, n: int = 10, seed: int = 0) -> np.ndarray:
    return shift + np.random.default_rng(seed).standard_normal(n)


def test_a_judged_finding_carries_its_rule_values_power_and_reading():
    j = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    c = judged("x", "the mean is positive", j, paper_value=3.0).to_dict()
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


def test_readings_that_disagree_give_depends_on_the_reading_and_the_report_shows_each():
    held = judge("mean_threshold", _values(3.0), threshold=0.0, direction=">")
    not_held = judge("mean_threshold", _values(-3.0), threshold=0.0, direction=">")
    c = judged("x", "s", held, readings={"settled": held, "transient": not_held})
    assert c.verdict == "depends on the reading" and not c.passed
    row = claim_row("exp", c.to_dict())
    assert "settled: HELD" in row["verdict"] and "transient: NOT HELD" in row["verdict"]
    agree = judged("y", "s", held, readings={"a": held, "b": held})
    assert agree.verdict == "HELD" and claim_row("exp", agree.to_dict())["verdict"] == "HELD"


def test_a_weak_finding_is_marked_underpowered():
    j = judge("mean_threshold", _values(0.3, n=4), threshold=0.0, direction=">")
    c = judged("x", "s", j, paper_value=0.3).to_dict()
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

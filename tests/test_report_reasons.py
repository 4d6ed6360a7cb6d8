"""The report explains: every finding gets a one-line reason from its rule and numbers, a quick
run's artefacts are labelled and kept out of the counts, and stdout is a short summary."""

from __future__ import annotations

import json
import math

import pytest

from gaugedyn.harness._report import (
    _counts,
    artefact,
    claim_row,
    reason,
    summary_text,
    write_index,
    write_report,
)


def finding(verdict, interval, threshold=0.5, direction=">", rule="median_threshold", **kw):
    detail = {
        "estimate": kw.pop(
            "estimate", sum(interval) / 2 if all(map(math.isfinite, interval)) else 0.0
        ),
        "interval": list(interval),
        "threshold": threshold,
        "direction": direction,
        "rule": rule,
        "verdict": verdict,
        **kw,
    }
    return {
        "id": "f",
        "kind": "finding",
        "verdict": verdict,
        "measured": detail["estimate"],
        "interval": list(interval),
        "readings": {"as judged": verdict},
        "tolerance": {"primary_reading": "as judged", "reading_detail": {"as judged": detail}},
    }


@pytest.mark.parametrize(
    ("verdict", "interval", "direction", "says"),
    [
        ("HELD", (0.6, 0.9), ">", "lower bound 0.6 > 0.5"),
        ("NOT HELD", (0.1, 0.4), ">", "upper bound 0.4 <= 0.5"),
        ("UNRESOLVED", (0.3, 0.7), ">", "the interval [0.3, 0.7] contains the threshold 0.5"),
        ("HELD", (0.1, 0.4), "<", "upper bound 0.4 < 0.5"),
        ("NOT HELD", (0.6, 0.9), "<", "lower bound 0.6 >= 0.5"),
    ],
)
def test_a_reason_names_the_bound_that_crossed_the_threshold(verdict, interval, direction, says):
    assert reason(finding(verdict, interval, direction=direction)) == says


def test_a_reason_for_bands_readings_and_rules_own_words():
    band = finding("NOT HELD", (1.3, 1.4), threshold=[0.85, 1.15], direction="inside")
    assert reason(band) == "the interval [1.3, 1.4] lies outside the band [0.85, 1.15]"
    split = finding("HELD", (0.6, 0.9))
    split["verdict"] = "depends on the reading"
    split["readings"] = {"current": "HELD", "memory": "NOT HELD"}
    assert reason(split) == "the readings disagree: current HELD; memory NOT HELD"
    few = finding("UNRESOLVED", (math.nan, math.nan), reason="too few values: 3")
    assert reason(few) == "too few values: 3"
    check = {"id": "c", "kind": "check", "passed": False, "measured": 2.0, "expected": 1.0}
    check["tolerance"] = 0.1
    assert reason(check) == "measured 2 is outside 1 +- 0.1"


def test_quick_artefacts_are_labelled_and_not_counted():
    empty = finding("UNRESOLVED", (math.nan, math.nan), estimate=math.nan)
    few = finding("UNRESOLVED", (math.nan, math.nan), estimate=0.4, reason="too few values: 3")
    assert artefact(few, quick=True) == (
        "quick-run artefact: no finite interval at this size (too few values: 3)"
    )
    flat = finding("HELD", (0.7, 0.7))
    exact = finding("HELD", (0.7, 0.7), rule="deterministic")
    real = finding("HELD", (0.6, 0.9))
    assert artefact(empty, quick=True) and artefact(flat, quick=True)
    assert artefact(exact, quick=True) is None and artefact(real, quick=True) is None
    assert artefact(empty, quick=False) is None  # a full run's empty interval is real
    rows = [claim_row("x", c, quick=True) for c in (empty, flat, exact, real)]
    assert _counts(rows).startswith("2 held, 0 not held, 0 unresolved")
    assert _counts(rows).endswith("2 quick-run artefact(s) not counted")
    assert rows[0]["reason"].startswith("quick-run artefact")


def test_every_finding_of_the_report_has_a_reason_and_stdout_is_short(tmp_path):
    claims = [finding("HELD", (0.6 + i / 100, 0.9)) | {"id": f"f{i}"} for i in range(300)]
    (tmp_path / "spike_boundary").mkdir()
    summary = {"experiment": "spike_boundary", "claims": claims, "status": "complete"}
    (tmp_path / "spike_boundary" / "summary.json").write_text(json.dumps(summary))
    write_index(tmp_path, {"runs": ["spike_boundary"], "errors": {}, "quick": False})
    path, rows = write_report(tmp_path)
    lines = [x for x in path.read_text().splitlines() if x.startswith("| spike_boundary | f")]
    assert lines and all(x.split(" | ")[-1].strip(" |").startswith("lower bound") for x in lines)
    assert all(r["reason"] for r in rows)
    out = summary_text(tmp_path)
    assert len(out.splitlines()) < 100 and max(map(len, out.splitlines())) <= 120
    assert "300 held" in out


def test_a_log_ratio_is_shown_with_the_ratio_it_stands_for():
    from gaugedyn.harness._report import on_scale

    def measured(x, unit):
        return {"kind": "finding", "measured": x, "tolerance": {"measure": {"unit": unit}}}

    assert on_scale(measured(1.0, "per seed, log10 of the run's lr S / threshold")) == (
        "1 (a ratio of 10)"
    )
    assert on_scale(measured(0.0, "per seed, the mean of log(t_w / t_a)")) == "0 (a ratio of 1)"
    assert on_scale(measured(2.0, "log-log slope of the deviation against n")) == "2"
    assert on_scale(measured(2.0, "a share of the update")) == "2"

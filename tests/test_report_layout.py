"""The reproduction report as a researcher reads it: one section per paper first, appendices last."""

from __future__ import annotations

import json

from gaugedyn.harness._report import write_index, write_report
from gaugedyn.papers import PAPERS


def _summary(name: str, claims: list[dict]) -> dict:
    return {
        "experiment": name,
        "status": "passed",
        "configuration": {"experiment": name},
        "diagnostics": {"tasks": {"tasks": 1, "computed": 1}},
        "claims": claims,
        "figures": [],
    }


def _finding(cid: str, verdict: str, expected: str) -> dict:
    return {
        "id": cid,
        "statement": f"statement of {cid}",
        "kind": "finding",
        "measured": 1.0,
        "expected": expected,
        "tolerance": {},
        "passed": verdict == "HELD",
        "verdict": verdict,
        "interval": [0.5, 1.5],
    }


def test_the_report_opens_with_one_section_per_paper_and_ends_with_the_claims_table(tmp_path):
    long_value = "a paper value of " + "many words " * 12  # longer than any table cell's cut
    runs = {
        "clock": [
            _finding("clock.a", "HELD", long_value),
            {"id": "clock.check", "kind": "check", "passed": True, "measured": 0.0},
        ],
        "beta_grid": [
            _finding("bg.x", "NOT HELD", "> 0.5"),
            _finding("bg.y", "depends on the reading", "> 0.5"),
        ],
        "toy": [_finding("toy.z", "UNRESOLVED", "> 0")],
    }
    for name, claims in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(_summary(name, claims)))
    write_index(tmp_path, {"runs": list(runs), "errors": {}, "quick": True})
    path, rows = write_report(tmp_path)
    text = path.read_text()
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert [h.split(":")[0][3:] for h in heads[: len(PAPERS)]] == [
        p.name.split(":")[0] for p in PAPERS
    ]
    assert heads[len(PAPERS) :] == [
        "## Other experiments",
        "## Appendix A: every claim",
        "## Appendix B: the runs",
    ]
    for paper in PAPERS:
        if paper.title:
            assert paper.title in text
    assert long_value.strip() in text  # the paper's value is never cut in its paper's section
    assert "provisional (quick)" in text.split("## ")[0]
    gauge = text.split("## ")[1]
    assert "Findings" in gauge and "1 held" in gauge and "Checks: 1 of 1 passed" in gauge
    adam = text.split("## ")[2]
    assert "1 not held" in adam and "1 depends on the reading" in adam
    assert text.index("## Appendix A") > text.index("## Other experiments")
    assert len(rows) == 5


def test_published_counts_include_findings_that_depend_on_the_reading():
    from gaugedyn.publish import verdict_counts

    summary = {
        "claims": [
            _finding("a", "depends on the reading", "> 0"),
            _finding("b", "HELD", "> 0"),
            {"id": "c", "kind": "check", "passed": True},
        ]
    }
    c = verdict_counts([summary])
    assert (c["depends on the reading"], c["HELD"], c["PASS"]) == (1, 1, 1)

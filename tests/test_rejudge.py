"""Every published verdict recomputes from its run's ``summary.json`` alone (``gaugedyn
rejudge``), and a tampered stored value is caught."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gaugedyn import stats
from gaugedyn.cli import main
from gaugedyn.harness._rejudge import check_summary

ROOT = Path(__file__).resolve().parents[1]
RUNS = sorted((ROOT / "results-data").glob("*/summary.json"))


def _summary(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", RUNS, ids=[p.parent.name for p in RUNS])
def test_every_committed_run_recomputes_from_its_summary(path):
    """Every finding recomputes (primary and each reading, proportion draws included), or is
    marked as judged under the rules before issue 41 (its other readings were never stored);
    every check judged by a catalogue rule recomputes."""
    rows = check_summary(_summary(path))
    bad = [f"{fid}: {status}: {problems}" for fid, status, problems in rows if status != "same"]
    marked = [r for r in rows if r[1] == "marked"]
    assert not [b for b in bad if ": marked:" not in b], "\n".join(bad)
    assert not marked or path.parent.name in (
        "prototypes",
        "shared_representation",
        "spike_boundary",
        # published on main beside issue 41, before their analyses stored every reading: kept
        # under the old rules, marked, until their next full run
        "conservation_laws",
        "landscape",
        "auxiliary",
    )


def test_proportion_and_reading_dependent_findings_recompute():
    """The findings the documented recompute failed on before (9 proportion findings, no draw
    stored; the "depends on the reading" findings, other readings not stored) recompute now,
    except those marked as kept under the old rules."""
    proportion = depends = 0
    for path in RUNS:
        for c in _summary(path).get("claims", []):
            if c.get("kind") != "finding":
                continue
            rules = {c.get("rule")} | {
                r.get("rule") for r in (c["tolerance"].get("reading_detail") or {}).values()
            }
            if "proportion" in rules or c.get("verdict") == "depends on the reading":
                status, problems = check_summary({"claims": [c]})[0][1:]
                if status == "marked":
                    continue
                assert status == "same", (c["id"], problems)
                proportion += "proportion" in rules
                depends += c.get("verdict") == "depends on the reading"
    assert proportion >= 9 and depends >= 1, (proportion, depends)


def _tampered(tmp_path: Path, change) -> tuple[Path, str]:
    summary = _summary(ROOT / "results-data" / "gauge_under_adam" / "summary.json")
    out = copy.deepcopy(summary)
    fid = change(out)
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(out), encoding="utf-8")
    return run, fid


def _first_proportion(summary: dict) -> dict:
    return next(
        c for c in summary["claims"] if c.get("kind") == "finding" and c.get("rule") == "proportion"
    )


def test_a_tampered_value_or_draw_fails_rejudge_naming_the_finding(tmp_path, capsys):
    def flip_outcome(summary):
        c = _first_proportion(summary)
        rec = next(iter(c["tolerance"]["reading_detail"].values()))
        rec["per_seed"][0] = 1.0 - rec["per_seed"][0]
        return c["id"]

    def move_draw(summary):
        c = _first_proportion(summary)
        rec = next(iter(c["tolerance"]["reading_detail"].values()))
        rec["uniform_draw"] = (rec["uniform_draw"] + 0.5) % 1.0
        return c["id"]

    assert main(["rejudge", str(ROOT / "results-data" / "gauge_under_adam")]) == 0
    for n, change in enumerate((flip_outcome, move_draw)):
        run, fid = _tampered(tmp_path / str(n), change)
        capsys.readouterr()
        assert main(["rejudge", str(run)]) == 1
        err = capsys.readouterr().err
        assert fid in err and "DIFFERS" in err, err


def test_a_tampered_check_fails_rejudge_naming_it(tmp_path, capsys):
    """The checks judged by catalogue rules recompute from the summary too (``online_sgd``:
    ``every_cell_proportion`` with its draws, ``slope_band``); a moved value, draw, estimate or
    verdict is reported by the check's id."""
    source = ROOT / "results-data" / "online_sgd"
    summary = _summary(source / "summary.json")
    checks = {c["id"]: c for c in summary["claims"] if c.get("kind") == "check" and c.get("rule")}
    band, slope = "online_sgd.chain_within_spread", "online_sgd.chain_spread_exponent"
    assert checks[band]["rule"] == "every_cell_proportion" and checks[slope]["rule"] == "slope_band"

    def flip_outcome(c):  # one seed's outcome in the cell the estimate is read from
        rows = c[band]["per_seed"]
        cell = next(
            k
            for k in range(len(rows[0]))
            if sum(r[k] for r in rows) / len(rows) == c[band]["measured"]
        )
        seed = next(i for i, r in enumerate(rows) if r[cell] == 1.0)
        rows[seed][cell] = 0.0

    def move_draw(c):
        draws = c[band]["tolerance"]["uniform_draw"]
        c[band]["tolerance"]["uniform_draw"] = [(u + 0.5) % 1.0 for u in draws]

    def move_row(c):
        c[slope]["per_seed"][1][0] += 0.05

    def move_estimate(c):
        c[slope]["measured"] += 0.01

    def flip_verdict(c):
        c[slope]["tolerance"]["verdict"] = "NOT HELD"

    capsys.readouterr()
    assert main(["rejudge", str(source)]) == 0
    out = capsys.readouterr().out
    assert f"{len(checks)} checks judged by a catalogue rule; {len(checks)} recompute" in out
    for n, change in enumerate((flip_outcome, move_draw, move_row, move_estimate, flip_verdict)):
        tampered = copy.deepcopy(summary)
        change({c["id"]: c for c in tampered["claims"] if c.get("kind") == "check"})
        run = tmp_path / str(n)
        run.mkdir()
        (run / "summary.json").write_text(json.dumps(tampered), encoding="utf-8")
        capsys.readouterr()
        assert main(["rejudge", str(run)]) == 1, change.__name__
        err = capsys.readouterr().err
        fid = band if change in (flip_outcome, move_draw) else slope
        assert f"{fid}: DIFFERS" in err, (change.__name__, err)


def test_a_stored_verdict_that_its_values_contradict_fails():
    c = next(
        c
        for path in RUNS
        for c in _summary(path).get("claims", [])
        if c.get("kind") == "finding"
        and c.get("verdict") in ("HELD", "NOT HELD")
        and c.get("rule") in stats.RULES
        and check_summary({"claims": [c]})[0][1] == "same"
    )
    c = copy.deepcopy(c)
    c["verdict"] = "NOT HELD" if c["verdict"] == "HELD" else "HELD"
    status, problems = check_summary({"claims": [c]})[0][1:]
    assert status == "differs" and any("verdict" in p for p in problems), problems


def test_a_band_readings_97_5_interval_is_stored_and_a_tampered_one_fails():
    """A band rule's word past an edge reads the 97.5% interval; a reading stores it beside the
    95% one, rejudge recomputes it, and a stored one that its values contradict is reported."""
    from gaugedyn.harness import reading_record

    x = [0.1, 0.4, -0.2, 0.3, 0.05, 0.25, 0.15, -0.1]
    j = stats.judge("equivalence", x, threshold=(-1.0, 1.0))
    rec = reading_record(j)
    assert rec["edge_interval"][0] < rec["interval"][0] < rec["interval"][1]
    assert rec["interval"][1] < rec["edge_interval"][1]
    claim = {
        "id": "band",
        "kind": "finding",
        "verdict": j.verdict,
        "readings": {"as judged": j.verdict},
        "tolerance": {"reading_detail": {"as judged": rec}},
    }
    assert check_summary({"claims": [claim]})[0][1] == "same"
    rec["edge_interval"] = list(rec["interval"])  # the single 95% interval read for both words
    status, problems = check_summary({"claims": [claim]})[0][1:]
    assert status == "differs" and any("97.5% interval" in p for p in problems), problems


def asserted_from_degenerate(summary: dict) -> list[tuple]:
    """Every HELD or NOT HELD of a summary, a finding's own and each stored reading's, read off
    a zero-width interval (the 95% one, or a band rule's 97.5% one; a deterministic value aside:
    its interval is the exact value) or off a slope through fewer than 6 rows (4 residual
    degrees of freedom): ``(finding, reading, what, value)``."""
    bad = []
    for c in summary.get("claims", []):
        if c.get("kind") != "finding":
            continue
        tol = c.get("tolerance") or {}
        own = {"verdict": c.get("verdict"), "rule": c.get("rule"), "interval": c.get("interval")}
        judged = [("finding", own | {"n": tol.get("n"), "edge_interval": None})]
        judged += list((tol.get("reading_detail") or {}).items())
        for name, rec in judged:
            if rec.get("verdict") not in ("HELD", "NOT HELD"):
                continue
            rule = str(rec.get("rule"))
            for key in ("interval", "edge_interval"):
                iv = rec.get(key)  # a one-sided bound is stored "inf"
                if rule != "deterministic" and iv is not None and not float(iv[0]) < float(iv[1]):
                    bad.append((c["id"], name, f"zero-width {key}", iv))
            if rule.startswith("slope") and not (rec.get("n") or 0) >= 6:
                bad.append((c["id"], name, "rows", rec.get("n")))
    return bad


@pytest.mark.parametrize("path", RUNS, ids=[p.parent.name for p in RUNS])
def test_no_published_verdict_from_a_zero_width_interval_or_a_short_slope(path):
    """HELD and NOT HELD, of every finding and every stored reading of every committed run,
    come from an interval of positive width (a deterministic value aside) and, for a slope,
    from at least 6 rows (4 residual degrees of freedom)."""
    assert not asserted_from_degenerate(_summary(path))


def test_a_verdict_from_a_zero_width_interval_or_a_short_slope_is_caught():
    """Built to fail: a published summary whose HELD comes from a zero-width interval, whose
    reading's NOT HELD comes from a slope through 5 rows, and whose band reading's 97.5%
    interval has zero width, is caught three times; UNRESOLVED and deterministic values are
    not."""
    path = next(p for p in RUNS if p.parent.name == "finite_sample")
    summary = _summary(path)
    assert not asserted_from_degenerate(summary)
    claims = [c for c in summary["claims"] if c.get("kind") == "finding"]
    flat = copy.deepcopy(claims[0]) | {"id": "flat", "verdict": "HELD", "rule": "median_threshold"}
    flat["interval"] = [0.5, 0.5]
    short = copy.deepcopy(flat) | {"id": "short", "verdict": "UNRESOLVED"}
    short["tolerance"]["reading_detail"] = {
        "five rows": {"rule": "slope_band", "verdict": "NOT HELD", "n": 5, "interval": [0, 1]},
        "edge": {
            "rule": "median_band",
            "verdict": "NOT HELD",
            "interval": [0.1, 0.3],
            "edge_interval": [0.2, 0.2],
        },
    }
    fine = copy.deepcopy(flat) | {"id": "fine", "verdict": "UNRESOLVED"}
    point = copy.deepcopy(flat) | {"id": "point", "rule": "deterministic"}
    point["tolerance"]["reading_detail"] = {}
    found = asserted_from_degenerate({"claims": [flat, short, fine, point]})
    assert sorted((f[0], f[2]) for f in found) == [
        ("flat", "zero-width interval"),
        ("short", "rows"),
        ("short", "zero-width edge_interval"),
    ], found


def test_power_below_the_rules_minimum_count_is_zero():
    g = stats.generator(0, "few")
    few = stats.judge("median_threshold", [1.0, 2.0, 3.0], threshold=0.0, rng=g)
    assert few.verdict == "UNRESOLVED" and stats.power_at(few, 5.0).rate == 0.0
    enough = stats.judge(
        "median_threshold", [1.0, 2.0, 3.0, 2.5, 1.5, 4.0, 2.2], threshold=0.0, rng=g
    )
    assert stats.power_at(enough, 5.0, reps=200).rate > 0.5


def test_power_of_a_median_rule_on_mostly_tied_values_is_simulated():
    """Values whose MAD is 0 (most of them tied) but that vary get a power, not ``nan``: far
    on the claimed side every simulated experiment's interval clears the threshold; at the
    threshold the word is rare (``nan`` only where every value is the same)."""
    g = stats.generator(0, "tied")
    x = np.r_[np.zeros(30), np.linspace(-0.2, 0.2, 10)]
    j = stats.judge("median_threshold", x, threshold=0.005, direction="<", rng=g)
    assert j.reason and "zero-width" in j.reason  # the published case: tied order statistics
    far, on = stats.power_at(j, -1.0, reps=400), stats.power_at(j, 0.005, reps=400)
    assert far.rate == 1.0 and on.rate <= 0.1, (far, on)
    flat = stats.judge("median_threshold", np.zeros(40), threshold=0.005, direction="<", rng=g)
    assert math.isnan(stats.power_at(flat, -1.0, reps=50).rate)


def test_a_cell_reading_without_seeds_recomputes_as_unresolved():
    # a cell rule judged on no seeds is stored as [] (JSON keeps no (0, cells) shape)
    from gaugedyn.harness._rejudge import judge_record

    rec = {
        "rule": "every_cell_median",
        "per_seed": [],
        "threshold": 0.0,
        "direction": ">",
        "uniform_draw": 0.5,
    }
    assert judge_record(rec).verdict == "UNRESOLVED"


def test_rejudging_under_a_changed_rule_rejudges_every_reading_and_marks_the_breakdown():
    """The switch finding as judged before its measure was declared ``tied`` (every reading
    by ``paired_median``): judged again from its stored values under the current rules, every
    reading takes the ``paired_sign`` rule its measure now chooses, with a draw from the run's
    seed, and recomputes; its verdicts per pulse strength (judged by the analysis on values
    the summary does not store) stay, marked with the rule that judged them."""
    from gaugedyn.harness._rejudge import rejudge_current

    summary = _summary(ROOT / "results-data/shared_representation/summary.json")
    claim = copy.deepcopy(
        next(c for c in summary["claims"] if c["id"].endswith("switch.rate_difference"))
    )
    tol = claim["tolerance"]
    tol.pop("breakdown_judged_under", None)
    for rec in tol["reading_detail"].values():  # as the run judged them
        rec["rule"] = "paired_median"
        rec.pop("uniform_draw", None)
    claim["rule"] = "paired_median"
    old = {
        "experiment": summary["experiment"],
        "configuration": summary["configuration"],
        "claims": [claim],
    }
    new = rejudge_current(old, command="test")
    got = new["claims"][0]
    assert {r["rule"] for r in got["tolerance"]["reading_detail"].values()} == {"paired_sign"}
    assert got["tolerance"]["breakdown_judged_under"] == "paired_median"
    assert got["tolerance"]["by_strength"] == tol["by_strength"]
    assert check_summary({"claims": [got]})[0][1] == "same"
    again = rejudge_current(new, command="test")["claims"][0]  # nothing moves: the mark stays
    assert again["tolerance"]["breakdown_judged_under"] == "paired_median"
    assert again["verdict"] == got["verdict"]


def test_rejudging_keeps_the_names_an_analysis_stored_for_its_cells():
    """An analysis may store its cells' names in ``tolerance.cells`` (auxiliary's
    ``closed_form.simulation``: one name per set-up); judged again under the current rules the
    finding keeps them, its readings keep the rule's per-cell records, and nothing else moves."""
    from gaugedyn.harness._rejudge import rejudge_current

    summary = _summary(ROOT / "results-data/auxiliary/summary.json")
    claim = next(c for c in summary["claims"] if c["id"] == "closed_form.simulation")
    names = claim["tolerance"]["cells"]
    assert names and all(isinstance(v, str) for v in names)
    again = rejudge_current(summary | {"claims": [claim]})["claims"][0]
    assert again["tolerance"]["cells"] == names
    for rec in again["tolerance"]["reading_detail"].values():
        assert all(isinstance(v, dict) for v in rec["cells"])
    assert again["verdict"] == claim["verdict"] and again["interval"] == claim["interval"]


@pytest.mark.parametrize("path", RUNS, ids=[p.parent.name for p in RUNS])
def test_every_committed_summary_is_strict_json(path):
    """Every committed summary, as run or as judged again, is strict JSON (no ``NaN`` or
    ``Infinity``: a re-judged spike_boundary and prototypes held them)."""

    def refuse(name: str):
        raise ValueError(f"{path}: not strict JSON: {name}")

    json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def test_a_summary_judged_again_is_strict_json(tmp_path):
    """``gaugedyn rejudge RUN --current-rules --out DIR`` writes strict JSON, as every summary is
    (non-finite numbers as ``"nan"``, ``"inf"``, ``"-inf"``): spike_boundary's stored values hold
    non-finite intervals (a slope through too few rows)."""

    def refuse(name: str):
        raise ValueError(f"not strict JSON: {name}")

    out = tmp_path / "again"
    run = ROOT / "results-data" / "spike_boundary"
    assert main(["rejudge", str(run), "--current-rules", "--out", str(out)]) == 0
    text = (out / "summary.json").read_text(encoding="utf-8")
    again = json.loads(text, parse_constant=refuse)
    assert '"nan"' in text and check_summary(again)


def test_rejudging_rewords_a_statement_that_names_another_location_than_its_rule():
    """prototypes' coverage finding as published before its statement was corrected ("the mean
    over seeds" under ``median_threshold``): judged again under the current rules, its statement
    names the median, the change is recorded, and nothing else moves; judged again, nothing is
    re-worded."""
    from gaugedyn.harness._rejudge import rejudge_current

    summary = _summary(ROOT / "results-data/prototypes/summary.json")
    claim = copy.deepcopy(
        next(c for c in summary["claims"] if c["id"].startswith("coverage_keeps_inside["))
    )
    assert claim["rule"] == "median_threshold"
    stale = claim["statement"].replace("the median over seeds", "the mean over seeds")
    assert "the mean over seeds" in stale
    old = summary | {"claims": [claim | {"statement": stale}]}
    new = rejudge_current(old, command="test")
    got = new["claims"][0]
    assert got["statement"] == stale.replace("the mean over seeds", "the median over seeds")
    assert new["rejudged"]["reworded"] == [
        {
            "id": claim["id"],
            "old": "the mean over seeds",
            "new": "the median over seeds",
            "why": "its rule median_threshold judges the median over seeds",
        }
    ]
    assert {k: v for k, v in got.items() if k != "statement"} == {
        k: v for k, v in claim.items() if k != "statement"
    }
    assert rejudge_current(new, command="test")["rejudged"]["reworded"] == []


def test_rewording_follows_the_rules_location_and_leaves_mixed_readings_alone():
    from gaugedyn.harness._rejudge import _reword

    def claim(rule, statement, readings=()):
        detail = {name: {"rule": r} for name, r in readings}
        return {
            "id": "f",
            "rule": rule,
            "statement": statement,
            "tolerance": {"reading_detail": detail},
        }

    c = claim("mean_threshold", "x: the median over seeds of y > 0")
    assert _reword(c)["new"] == "the mean over seeds"
    assert c["statement"] == "x: the mean over seeds of y > 0"
    c = claim("median_threshold", "x: the median over seeds of y > 0")
    assert _reword(c) is None and c["statement"] == "x: the median over seeds of y > 0"
    mixed = claim(
        "median_threshold",
        "x: the mean over seeds of y > 0",
        [("a", "median_threshold"), ("b", "mean_threshold")],
    )
    assert _reword(mixed) is None and "the mean over seeds" in mixed["statement"]
    assert _reword(claim("no_such_rule", "the mean over seeds")) is None

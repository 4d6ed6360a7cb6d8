"""Rules chosen from declared measures, and held to the committed audit of the data they judge:
no rule is used where the audit says it fails, the page is the data's, and a seeded subset of
the audit recomputes exactly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gaugedyn import InputError, stats
from gaugedyn.harness import _audit_plan as ap
from gaugedyn.stats import _audit

ROOT = Path(__file__).resolve().parents[1]
DATA = ap.read_data(ROOT)


def _bar(rate: _audit.Rate) -> float:
    return _audit.SIZE_BAR + 2 * rate.se


KNOWN_MISSES = {
    # Rules whose size is exactly 2.5% by construction (a t test on normal cells; the randomised
    # sign test on values whose median lies between two order statistics), confirmed 2.4 Monte
    # Carlo s.e. above 2.5% (2.78% +- 0.12%, 2.81% +- 0.13%) among some 1,500 barred rates. At
    # 100,000 experiments both read 2.5% (gaugedyn audit-rules --rules every_cell --seeds 40
    # --cells 6 --shapes normal --reps 100000 --seed 7: 2.5% +- 0.05%; the beta_grid row:
    # test_the_documented_resampled_miss_is_chance):
    "every_cell at 40 seeds x 6 cells, normal: MISS: held-at-boundary",
    "median_threshold (published) on beta_grid: finding:char_transformer:lag_substantial:"
    "beta2>beta1 [memory/norm]: MISS: held-at-boundary",
    # The same randomised sign test on adam_edge's mean-squared core-wall exponent (10 seeds, the
    # reading at 2.25; published 2026-12-07): 2.77% +- 0.13% at 16,000 experiments, 2.1 s.e.
    # above; 2.51% +- 0.05% at 100,000 (test_the_documented_resampled_miss_is_chance)
    "median_threshold (published) on adam_edge: adam_edge.core_wall_exponent:mse:lr0.01:b0.9:"
    "b20.995 [threshold 2.25]: MISS: held-at-boundary",
}
"""Barred rows of the committed audit that miss a bar, each with why (none may be added)."""


def test_the_committed_audit_refuses_no_rule_where_it_is_used():
    """Every barred row (a shape of a kind whose rule it is, at a size an experiment uses; a
    published finding's own resampled values under the rule that judges them) meets the bars,
    but for the documented misses of :data:`KNOWN_MISSES`."""
    assert DATA is not None, f"no {ap.AUDIT_DATA}"
    assert set(ap.refused(DATA)) <= KNOWN_MISSES, set(ap.refused(DATA)) - KNOWN_MISSES
    assert {r["rule"] for r in DATA["named"]} == set(stats.RULES)
    shapes = {s for k in stats.KINDS.values() for s in k.shapes} - {"bernoulli"}
    assert shapes <= {r["shape"] for r in DATA["named"]}


@pytest.mark.parametrize(
    "experiment, finding_id, reading",
    [
        ("beta_grid", "finding:char_transformer:lag_substantial:beta2>beta1", "memory/norm"),
        ("adam_edge", "adam_edge.core_wall_exponent:mse:lr0.01:b0.9:b20.995", "threshold 2.25"),
    ],
)
def test_the_documented_resampled_miss_is_chance(experiment, finding_id, reading):
    """The resampled rows of :data:`KNOWN_MISSES` (the randomised sign test, exact 2.5% when
    the median lies between two order statistics) simulated again at 100,000 experiments with
    another seed: HELD at the boundary within 2.5% + 2 Monte Carlo s.e."""
    summary = json.loads((ROOT / f"results-data/{experiment}/summary.json").read_text())
    [finding] = [f for f in summary["claims"] if f["id"] == finding_id]
    detail = finding["tolerance"]["reading_detail"][reading]
    row = _audit.audit_values(
        "median_threshold",
        detail["per_seed"],
        detail["threshold"],
        detail["direction"],
        reps=100_000,
        seed=7,
    )
    assert row["held_at_boundary"].rate <= _bar(row["held_at_boundary"])
    assert row["bar"] == "ok"
    assert any(finding_id in m and f"[{reading}]" in m for m in KNOWN_MISSES)


def test_a_row_that_misses_a_bar_is_refused():
    row = dict(DATA["named"][0]) | {"bar": "MISS: held-at-boundary"}
    assert ap.refused({"named": [row]}) == [
        f"{row['rule']} at {row['seeds']} seeds x {row['cells']} cells, {row['shape']}: "
        "MISS: held-at-boundary"
    ]


def test_every_published_finding_has_its_measures_rule_or_is_marked():
    """A finding is judged by the rule its declared measure chooses, except those marked as
    judged under the rules before issue 41 (their other readings were never stored)."""
    for f in ap.published(ROOT):
        if f["old_rules"] or f["measure"] is None:
            assert f["old_rules"], f["id"]
            continue
        for rec in f["readings"].values():
            if rec.get("rule") in stats.RULES:
                f["measure"].check(rec["rule"])


def test_the_page_is_generated_from_the_data_and_the_data_from_the_plan():
    spec = importlib.util.spec_from_file_location("doc", ROOT / "tools" / "verdict_rules_doc.py")
    doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc)
    assert doc.main(["--check"]) == 0


def test_a_seeded_subset_of_the_audit_recomputes_exactly():
    """Each row comes from its own seed: a few rows simulated again give the committed rates."""
    named = [
        r
        for r in DATA["named"]
        if r["rule"] in ("median_threshold", "every_cell_median", "mean_threshold")
        and r["seeds"] <= 10
        and r["cells"] <= 6
        and not r.get("confirmed")
    ][:3]
    resampled = [r for r in DATA["resampled"] if not r.get("confirmed")][:2]
    assert named and resampled
    plan = ap.plan(ROOT)
    for group, rows in (("named", named), ("resampled", resampled)):
        p = plan[group]
        for r in rows:
            key = (
                [r["experiment"], r["finding"], r["reading"], r["rule"]]
                if group == "resampled"
                else [r["rule"], r["seeds"], r["cells"], r["shape"]]
            )
            spec = next(s for s in p if ap._key(s) == key)
            again = ap.run_row(
                group,
                spec,
                seed=DATA["seed"],
                reps=DATA["reps"],
                resampled_reps=DATA["resampled_reps"],
            )
            assert json.loads(json.dumps(again)) == r, key


@pytest.mark.parametrize("cells", [6, 18])
def test_lognormal_cells_on_the_threshold_say_neither_word_too_often(cells):
    """Lognormal (sigma 1) cells, 40 seeds, every cell's median on the threshold: the rule the
    experiments use on such cells (a long-tailed measure's every-cell rule) says NOT HELD at most
    2.5% + 2 MC s.e. of 2,000 simulated experiments with the skew away from the claimed side,
    and HELD at most that with the skew toward it; the t-based rule fails the first."""
    rule = stats.rule_for("long-tailed", "every_cell")
    away = _audit.audit_rule(rule, 40, cells=cells, shape="lognormal1-away", reps=2000, seed=41)
    toward = _audit.audit_rule(rule, 40, cells=cells, shape="lognormal1-toward", reps=2000, seed=42)
    for r, key in ((away, "not_held_at_boundary"), (away, "one_cell_not_held")):
        assert r[key].rate <= _bar(r[key]), (key, r[key])
    assert toward["held_at_boundary"].rate <= _bar(toward["held_at_boundary"])
    t_based = _audit.audit_rule(
        "every_cell", 40, cells=cells, shape="lognormal1-away", reps=2000, seed=41
    )
    assert t_based["not_held_at_boundary"].rate > _bar(t_based["not_held_at_boundary"])
    with pytest.raises(InputError, match="every_cell_median"):
        stats.Measure("long-tailed", "an error", 0.1).check("every_cell")


def test_every_protocol_states_its_declared_measures():
    spec = importlib.util.spec_from_file_location("pm", ROOT / "tools" / "protocol_measures.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0


@pytest.mark.parametrize("rule", ["every_cell_median", "every_cell", "median_threshold"])
def test_a_reading_judged_on_no_seeds_has_nothing_to_audit(rule):
    """A reading judged on no seeds is stored as ``[]`` (JSON keeps no ``(0, cells)`` shape):
    the audit's plan has nothing of it to simulate, for cell rules as for the others."""
    assert ap._shape_of(stats.RULES[rule], []) is None
    assert (
        ap._shape_of(
            stats.RULES[rule], [[1.0, 2.0], [3.0, 4.0]] if stats.RULES[rule].cells else [1.0, 2.0]
        )
        is not None
    )

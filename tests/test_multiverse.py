"""Known-answer controls in runs, declared set-up spaces, and ``gaugedyn multiverse``.

The harness's part on a toy (``toy_experiments:JUDGED``: one finding, a mean against a
threshold; a space over the threshold and the draws; controls of its readout, which ``broken``
breaks): a failed control stops a run before any task and names its instrument; bad
declarations are refused before any work; the specifications; robustness, the specification
curves, resuming from the store, the report and the published tables. Then the quick
multiverse of every experiment with findings, each on a reduced quick configuration and one of
its declared constants (every declared specification is checked to be a valid configuration).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.harness import (
    Choice,
    Control,
    make_config,
    run_multiverse,
    specifications,
)

sys.path.insert(0, str(Path(__file__).parent))
from toy_experiments import JUDGED, Judged, invoke, to_toml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _toml(tmp_path: Path, **params) -> Path:
    path = tmp_path / "judged.toml"
    data = {"experiment": "toy_experiments:JUDGED", "seed": 3}
    if params:
        data["params"] = params
    path.write_text(to_toml(data))
    return path


@pytest.fixture
def toy_path(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


# --- controls in runs ------------------------------------------------------------------------


def test_a_failed_control_stops_the_run_before_any_task_and_names_its_instrument(
    tmp_path, capsys, toy_path
):
    cfg = _toml(tmp_path, broken=True)
    code, out, err = invoke(["run", cfg, "--out", tmp_path / "run", "--executor", "serial"], capsys)
    assert code == 1
    assert "readout.planted (instrument: mean readout)" in err and "no task was run" in err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "controls failed" and summary["claims"] == []
    failed = [c for c in summary["controls"] if not c["passed"]]
    assert [c["id"] for c in failed] == ["readout.planted"]  # the negative case still passes
    assert not any((tmp_path / "run" / ".tasks").glob("*/*.json"))  # no task ran
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Known-answer controls: 1 of 2 passed (the run stopped before its tasks)" in report


def test_passed_controls_are_stored_and_reported_and_a_reproduce_fails_on_a_failed_one(
    tmp_path, capsys, toy_path
):
    cfg = _toml(tmp_path)
    code, _, _ = invoke(["run", cfg, "--out", tmp_path / "ok", "--executor", "serial"], capsys)
    assert code == 0
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert [c["passed"] for c in summary["controls"]] == [True, True]
    assert {c["kind"] for c in summary["controls"]} == {"positive", "negative"}
    assert summary["space"]["threshold"] == {
        "default": 0.0,
        "lo": -0.5,
        "hi": 2.0,
        "scale": "linear",
        "why": "the paper says only 'positive'",
    }
    report = (tmp_path / "ok" / "report.md").read_text()
    assert "| readout.planted | mean readout | positive |" in report
    assert "Robustness: not judged in this run" in report
    sims = tmp_path / "sims"
    sims.mkdir()
    (sims / "judged.toml").write_text(_toml(tmp_path, broken=True).read_text())
    code, out, err = invoke(
        ["reproduce", "--simulations", sims, "--out", tmp_path / "rep", "--executor", "serial"],
        capsys,
    )
    assert code == 1 and "judged:control:readout.planted" in err


class _Variant(Judged):
    pass


def _variant(**attrs):
    exp = _Variant()
    for k, v in attrs.items():
        setattr(exp, k, v)
    return exp


def _two(c1, c2):
    return lambda self, config: [c1, c2]


_OK = Control("a", "readout", "positive", "case", "proves", lambda: (1, True))


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        ({"space": {"thresold": Choice(lo=0.0, hi=1.0, why="w")}}, "did you mean space.threshold"),
        ({"space": {"threshold": Choice(lo=1.0, hi=1.0, why="w")}}, "is empty"),
        ({"space": {"threshold": Choice(lo=1.0, hi=2.0, why="w")}}, "lies outside the range"),
        ({"space": {"threshold": Choice(values=(0.0,), why="w")}}, "no alternative"),
        ({"space": {"threshold": Choice(lo=0.0, hi=1.0, scale="log", why="w")}}, "lo > 0"),
        ({"space": {"threshold": Choice(lo=-1.0, hi=1.0)}}, "why is empty"),
        ({"space": {"threshold": Choice(values=(99.0,), why="w")}}, "threshold = 99.0"),
        ({"space": {"broken": Choice(lo=0.0, hi=1.0, why="w")}}, "needs a numeric setting"),
        ({"controls": _two(_OK, _OK)}, "declared twice"),
        ({"controls": _two(_OK, dataclasses.replace(_OK, id="b"))}, "has no negative control"),
        ({"controls": _two(_OK, dataclasses.replace(_OK, id="b", kind="maybe"))}, "maybe"),
        ({"controls": _two(_OK, dataclasses.replace(_OK, id="B!", kind="negative"))}, "B!"),
        ({"controls": _two(_OK, dataclasses.replace(_OK, id="b", case=" "))}, "case is empty"),
    ],
)
def test_bad_declarations_are_refused_before_any_work(attrs, words):
    if "controls" in attrs:
        _Variant.controls = attrs.pop("controls")
    try:
        with pytest.raises(InputError, match=words.replace("(", r"\(")):
            make_config(_variant(**attrs))
    finally:
        _Variant.controls = Judged.controls


def test_a_configurations_space_table_narrows_or_extends_the_declaration(
    tmp_path, capsys, toy_path
):
    from gaugedyn.harness import load_config

    path = tmp_path / "narrow.toml"
    path.write_text(
        'experiment = "toy_experiments:JUDGED"\n[space.threshold]\nvalues = [0.5]\n'
        'why = "one referee"\n[space.shift]\nlo = 0.5\nhi = 2.0\nscale = "log"\nwhy = "w"\n'
    )
    cfg = load_config(path)
    assert cfg.space["threshold"].values == (0.5,) and cfg.space["shift"].scale == "log"
    path.write_text('experiment = "toy_experiments:JUDGED"\n[space.threshold]\nvalus = [1]\n')
    code, _, err = invoke(["multiverse", path, "--out", tmp_path / "mv"], capsys)
    assert code == 2 and "unknown key space.threshold.valus" in err
    assert not (tmp_path / "mv").exists()


def test_specifications_are_the_primary_each_end_and_a_seeded_joint_sample():
    cfg = make_config(JUDGED)
    specs = specifications(cfg.space, JUDGED.params, cfg.params, 3, seed=5)
    kinds = [s["kind"] for s in specs]
    assert kinds[:5] == ["primary", "end", "end", "end", "end"] and kinds.count("joint") == 3
    assert [s["values"] for s in specs[1:5]] == [
        {"threshold": -0.5},
        {"threshold": 2.0},
        {"draws": 10},
        {"draws": 40},
    ]
    assert specs == specifications(cfg.space, JUDGED.params, cfg.params, 3, seed=5)
    assert specs[5:] != specifications(cfg.space, JUDGED.params, cfg.params, 3, seed=6)[5:]
    for s in specs[5:]:
        assert -0.5 <= s["values"].get("threshold", 0.0) <= 2.0
        assert s["values"].get("draws", 20) in (10, 20, 40)


def test_robustness_counts_verdicts_names_flips_and_calls_opposites_unrobust():
    from gaugedyn.harness._multiverse import robustness

    def spec(sid, kind, values, verdict):
        return {"id": sid, "kind": kind, "values": values, "findings": {"f": {"verdict": verdict}}}

    specs = [
        spec("primary", "primary", {}, "HELD"),
        spec("t=lo", "end", {"t": 0}, "HELD"),
        spec("t=hi", "end", {"t": 2}, "UNRESOLVED"),
        spec("d=lo", "end", {"d": 1}, "HELD"),
        spec("joint 1", "joint", {"t": 1, "d": 1}, "HELD"),
        {"id": "x", "kind": "end", "values": {"e": 1}, "findings": {}},  # did not judge it
    ]
    r = robustness("f", specs)
    assert r["robust"] and r["specifications"] == 5 and r["not_judged"] == 1
    assert r["shares"]["HELD"] == pytest.approx(0.8) and r["unresolved_share"] == 0.2
    assert r["flipping"] == ["t"] and r["opposite"] == [] and r["joint_differing"] == 0
    specs.append(spec("joint 2", "joint", {"d": 3}, "NOT HELD"))
    r = robustness("f", specs)
    assert not r["robust"] and r["opposite"] == ["joint 2"] and r["joint_differing"] == 1


def test_the_multiverse_writes_the_primary_run_with_robustness_and_resumes(
    tmp_path, capsys, toy_path
):
    cfg = _toml(tmp_path)
    out = tmp_path / "mv"
    argv = ["multiverse", cfg, "--out", out, "--samples", "2", "--executor", "serial"]
    code, stdout, err = invoke(argv, capsys)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    (finding,) = [c for c in summary["claims"] if c["kind"] == "finding"]
    r = finding["robustness"]
    assert r["specifications"] == 7 and set(r["shares"]) == {
        "HELD",
        "NOT HELD",
        "UNRESOLVED",
        "depends on the reading",
    }
    assert math.isclose(sum(r["shares"].values()), 1.0)
    assert "threshold" in r["flipping"] and not r["robust"]  # threshold 2 is above the mean 1
    assert finding["verdict"] == "HELD" and r["opposite"]
    mv = summary["multiverse"]
    assert [s["id"] for s in mv["specifications"]][:3] == [
        "primary",
        "threshold=-0.5",
        "threshold=2.0",
    ]
    assert all(s["status"] == "passed" for s in mv["specifications"])
    assert mv["space"]["draws"]["values"] == [10, 40]
    assert {f["name"] for f in summary["figures"]} == {"specification_curve_1"}
    assert (out / "figures" / "specification_curve_1.png").is_file()
    report = (out / "report.md").read_text()
    assert "Robustness over the declared set-up space" in report and "flipped by" in report
    assert "NOT robust" in stdout
    code, _, err = invoke(argv, capsys)  # resumes: every specification read back
    assert code == 0 and err.count(": stored") == 7
    assert json.loads((out / "summary.json").read_text())["claims"] == summary["claims"]
    code, _, _ = invoke(["plot", out], capsys)  # the curves redraw from the stored arrays
    assert code == 0 and (out / "figures" / "specification_curve_1.png").is_file()


def test_require_cache_refuses_a_multiverse_with_anything_to_compute_and_reuses_a_full_store(
    tmp_path, capsys, toy_path
):
    cfg = _toml(tmp_path)
    store = tmp_path / "store"
    base = ["multiverse", cfg, "--samples", "1", "--executor", "serial", "--store", store]
    code, _, err = invoke([*base, "--out", tmp_path / "refused", "--require-cache"], capsys)
    assert code == 2 and "--require-cache" in err and "nothing was computed" in err
    assert not (tmp_path / "refused" / "summary.json").exists()
    assert not any(store.glob("*/*.json"))  # nothing computed, nothing stored
    code, _, err = invoke([*base, "--out", tmp_path / "first"], capsys)
    assert code == 0, err
    code, _, err = invoke([*base, "--out", tmp_path / "again", "--require-cache"], capsys)
    assert code == 0, err
    first, again = (
        json.loads((tmp_path / d / "summary.json").read_text()) for d in ("first", "again")
    )
    assert again["claims"] == first["claims"]


def test_a_specification_whose_controls_fail_is_named_and_fails_the_multiverse(
    tmp_path, capsys, toy_path
):
    path = tmp_path / "space.toml"
    path.write_text(
        'experiment = "toy_experiments:JUDGED"\n[space.broken]\nvalues = [true]\n'
        'why = "an instrument that misreads"\n'
    )
    code, _, err = invoke(
        ["multiverse", path, "--out", tmp_path / "mv", "--samples", "0", "--executor", "serial"],
        capsys,
    )
    assert code == 1 and "specification broken=True: controls failed (readout.planted)" in err
    summary = json.loads((tmp_path / "mv" / "summary.json").read_text())
    assert summary["status"] == "specifications failed"
    (finding,) = [c for c in summary["claims"] if c["kind"] == "finding"]
    assert finding["robustness"]["not_judged"] == 1


def test_a_multiverse_needs_a_space(tmp_path, capsys):
    code, _, err = invoke(["multiverse", ROOT / "simulations/dissipation.toml"], capsys)
    assert code == 2 and "declares no set-up space" in err


def test_a_published_multiverse_adds_robustness_to_the_tables(
    tmp_path, capsys, toy_path, monkeypatch
):
    from gaugedyn.harness import EXPERIMENTS
    from gaugedyn.publish import add_run, claims_table, load_published, robustness_table

    # publish takes registered experiments only: the toy is registered for this test
    monkeypatch.setitem(EXPERIMENTS, "judged", "toy_experiments")
    out = tmp_path / "mv"
    command = {"command": "multiverse", "config": "judged.toml", "quick": False}
    run_multiverse(
        make_config(JUDGED), out, samples=1, executor="serial", progress=None, command=command
    )
    root = tmp_path / "repo"
    (root / "results-data").mkdir(parents=True)
    add_run(out, root)
    data = load_published(root)
    table = claims_table("judged", data)
    assert table[0].endswith("over the set-up space |") and "over 6 specs" in table[2]
    rob = robustness_table("judged", data)
    assert rob[0].startswith("| finding | verdict | specifications |")
    assert "| `mean_positive` | HELD | 6 |" in rob[2] and "threshold" in rob[2]


# --- the quick multiverse of every experiment with findings ----------------------------------

# Each experiment's quick configuration made smaller still, and one constant of its space: the
# test checks that every declared specification is a configuration and that the constant's
# specifications run and are judged, not the numbers, so the sizes only need to keep the controls
# and the findings computable (the spike boundary's two smallest 1 - beta2 need the longest
# settling runs; the shared representation's family is narrowed to one candidate, its
# calibration to two seeds and two loss weights, its networks and step counts to a few units;
# the edge of stability runs half the steps on its smallest sample; the prototypes train 1,000
# steps, read at one budget; the landscape's catalogues start one student each and its six
# escapes start within one decade, 1e-2 to 1e-3, not four). Where a constant changes only some
# tasks, the cheaper one is varied (auxiliary: the linear-response step lin_eta re-runs 6 of its
# 50 tasks, map_gamma 16). The third entry names the test that draws the experiment's own
# figures from a small run's arrays, where this one leaves them out (they were most of its time;
# the specification curves are still drawn here).
REDUCED = {
    "adam_edge": (
        {"losses": ["mse"], "steps": 150, "n_samples": 32, "quadratic_steps": 1000},
        "separation_factor",
        None,
    ),
    "auxiliary": (
        {"dims": [300], "weight_dim": 100, "wide_dim": 100, "map_rhos": [0.0, 1.0]},
        "lin_eta",
        None,
    ),
    "beta_grid": (
        {"tasks": ["teacher_student"], "seeds": 2},
        "skip",
        "test_adam_experiments.py::test_beta_grid_end_to_end_lag_exactly_zero_on_the_diagonal",
    ),
    "clock": (
        {},
        "threshold",
        "test_gauge_experiments.py::test_reduced_run_passes_its_claims_and_draws[clock]",
    ),
    "conservation_laws": (
        {"families": ["linear2"], "recorder_models": [], "drift_models": ["mlp"]},
        "rtol",
        None,
    ),
    "finite_sample": ({"seeds": 8, "ns": [100, 1000, 10000]}, "tolerance", None),
    "gauge_on_networks": (
        {"slope_models": ["mlp"], "optimizers": ["gd"], "seeds": 2, "steps": 100},
        "gauge",
        "test_gauge_on_networks.py::test_a_reduced_run_passes_its_checks_and_keeps_the_function",
    ),
    "gauge_under_adam": (
        {"seeds": 2, "steps": 200, "betas": [[0.9, 0.9], [0.9, 0.999]]},
        "threshold",
        "test_adam_experiments.py::test_gauge_under_adam_end_to_end",
    ),
    "landscape": (
        {"starts": 1, "escape_eps": [float(v) for v in np.geomspace(1e-2, 1e-3, 6)]},
        "gauge_strength",
        None,
    ),
    "ownership_patterns": (
        {"Ks": [2], "scales": [0.2, 1.0]},
        "function_tol",
        "test_gauge_experiments.py::test_reduced_run_passes_its_claims_and_draws"
        "[ownership_patterns]",
    ),
    "prototypes": (
        {"sizes": [3, 5], "seeds": 2, "steps": 1000, "budgets": [1000], "cap": 1000},
        "lr",
        "test_prototypes.py::test_a_small_run_reports_every_finding_with_its_rule_and_readings",
    ),
    "shared_representation": (
        {
            "acquisition": "rate",
            "d_Z": 1,
            "lr": 0.01,
            "readout": "common",
            "pulse": "mild",
            "seeds": 2,
            "calibration_seeds": 2,
            "w_grid": [0.8, 0.99],
            "horizon": 10,
            "formation_steps": 30,
            "ancestor_steps": 10,
            "record_every": 10,
            "width": 8,
            "batch": 16,
            "eval_n": 64,
        },
        "control_period",
        "test_shared_representation.py::test_small_run_reports_every_finding_under_both_readouts",
    ),
    "spike_boundary": (
        {
            "ns": [2.0],
            "tasks": [],
            "check_steps": 500,
            "one_minus_beta2": [float(v) for v in np.logspace(np.log10(3e-5), np.log10(0.3), 9)],
        },
        "spike_rise",
        None,
    ),
}


def test_every_experiment_with_findings_declares_a_space_and_is_covered_here():
    from gaugedyn.harness import EXPERIMENTS, resolve_experiment
    from gaugedyn.publish import load_published

    published = load_published(ROOT)
    with_findings = {
        name
        for name, s in published.items()
        if any(c.get("kind") == "finding" for c in s.get("claims", []))
    }
    assert with_findings == set(REDUCED)
    for name in EXPERIMENTS:
        exp = resolve_experiment(name)
        assert bool(exp.space) == (name in with_findings), name


def test_the_tests_named_to_draw_an_experiments_figures_exist():
    """A quick multiverse that skips its experiment's own figures names the test that draws
    them from a small run's arrays; that test exists."""
    for name, (_, _, where) in REDUCED.items():
        if where:
            path, test = where.split("::")
            assert f"def {test.split('[')[0]}(" in (ROOT / "tests" / path).read_text(), name


def _check_quick_multiverse(summary: dict, out: Path, constant: str, ends: list) -> None:
    """What a quick multiverse of a real experiment must show, each recomputed here from the
    per-specification verdicts of ``summary["multiverse"]`` (not by the package's functions):
    the primary and one specification per end of ``constant``, each run and judged and each
    stored once under its own settings; every finding's robustness counted over the
    specifications that judged it (its shares, the constant that flips it, whether an
    opposite verdict occurs); the primary specification's verdicts those of the run; the
    specification curves' verdict codes; the specification-curve figure drawn."""
    from gaugedyn.harness._folders import TASKS
    from gaugedyn.harness._multiverse import CODES
    from gaugedyn.harness._store import ResultStore

    assert summary["status"] in ("passed", "claims failed"), summary["status"]
    specs = summary["multiverse"]["specifications"]
    assert [s["kind"] for s in specs] == ["primary"] + ["end"] * len(ends)
    assert [s["values"] for s in specs[1:]] == [{constant: v} for v in ends]
    assert all(s["status"] in ("passed", "claims failed") for s in specs), specs
    store = ResultStore(out / TASKS)  # one record per specification, each under its settings
    stored = [
        m["specification"]["id"]
        for m in map(store.meta, store.keys())
        if m and "specification" in m
    ]
    assert sorted(stored) == sorted(s["id"] for s in specs)
    findings = [c for c in summary["claims"] if c["kind"] == "finding"]
    assert findings
    for c in findings:
        verdicts = {s["id"]: s["verdicts"][c["id"]] for s in specs if c["id"] in s["verdicts"]}
        r, n = c["robustness"], len(verdicts)
        assert n >= 1 and r["specifications"] == n and r["not_judged"] == len(specs) - n
        assert r["shares"] == pytest.approx(
            {w: sum(v == w for v in verdicts.values()) / n for w in r["shares"]}
        )
        primary = verdicts.get("primary")
        moved = [v for k, v in verdicts.items() if k != "primary"]
        assert r["flipping"] == ([constant] if any(v != primary for v in moved) else [])
        assert r["robust"] == (not {"HELD", "NOT HELD"} <= set(verdicts.values()))
        if primary is not None:
            assert primary == c["verdict"], c["id"]
    with np.load(out / "arrays.npz") as arrays:
        assert list(arrays["multiverse__findings"]) == [c["id"] for c in findings]
        assert list(arrays["multiverse__specifications"]) == [s["id"] for s in specs]
        assert arrays["multiverse__verdict"].tolist() == [
            [CODES[s["verdicts"][c["id"]]] if c["id"] in s["verdicts"] else -1 for s in specs]
            for c in findings
        ]
    assert "specification_curve_1" in {f["name"] for f in summary["figures"]}
    assert (out / "figures" / "specification_curve_1.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REDUCED))
def test_the_quick_multiverse_of_each_experiment_with_findings(name, tmp_path, monkeypatch):
    from gaugedyn.harness import load_config
    from gaugedyn.harness._multiverse import with_values

    overrides, constant, figures_elsewhere = REDUCED[name]
    full = load_config(ROOT / f"simulations/{name}.toml", quick=True)
    for spec in specifications(full.space, full.experiment.params, full.params, 1, full.seed):
        with_values(full, spec["values"])  # every declared specification is a configuration
    cfg = load_config(ROOT / f"simulations/{name}.toml", quick=True, overrides=overrides)
    cfg = dataclasses.replace(cfg, space={constant: cfg.space[constant]})
    if figures_elsewhere:  # drawn from a small run's arrays there; the curves still drawn here
        monkeypatch.setattr(type(cfg.experiment), "plot", lambda self, arrays, config, out: [])
    outcome = run_multiverse(cfg, tmp_path / name, samples=0, executor="serial", progress=None)
    ends = [s["values"][constant] for s in outcome.summary["multiverse"]["specifications"][1:]]
    assert ends == pytest.approx(cfg.space[constant].ends(cfg.params[constant]))
    _check_quick_multiverse(outcome.summary, tmp_path / name, constant, ends)

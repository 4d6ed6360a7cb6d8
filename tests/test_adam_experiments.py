"""The declared Adam experiments: beta_grid and gauge_under_adam, end to end on tiny
configurations, and their check / finding logic on inputs built to pass and to fail."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.experiments import make_config
from gaugedyn.experiments.adam_split import _gauge_analysis as gaa
from gaugedyn.experiments.adam_split import _grid_analysis as bga
from gaugedyn.experiments.adam_split import _protocol as ap
from gaugedyn.experiments.adam_split import beta_grid as bg
from gaugedyn.experiments.adam_split import gauge_under_adam as ga
from gaugedyn.plotting import style
from gaugedyn.stats import measure_of

SEED = np.random.SeedSequence(2026)  # the analysis seed of runs analysed directly


def _run(experiment, params, tmp_path):
    cfg = make_config({"experiment": experiment.name, "seed": 3, "params": params})
    results = [
        experiment.run_task(t, np.random.SeedSequence(7, spawn_key=(i,)))
        for i, t in enumerate(cfg.tasks)
    ]
    out = experiment.analyse(dict(cfg.params), cfg.tasks, results, SEED)
    arrays, claims = out[0], out[1]
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    assert all(v.dtype != object for v in arrays.values())
    with style("Agg"):
        names = experiment.plot(arrays, dict(cfg.params), tmp_path)
    for name in names:
        name = name[0] if isinstance(name, tuple) else name
        assert (tmp_path / f"{name}.png").stat().st_size > 0  # PNG alone: tests/conftest.py
    return cfg, results, arrays, claims


def _checks(claims):
    return [c for c in claims if c.kind == "check"]


# ---------------------------------------------------------------------------- beta_grid


def test_beta_grid_end_to_end_lag_exactly_zero_on_the_diagonal(tmp_path):
    cfg, results, arrays, claims = _run(
        bg.EXPERIMENT,
        {
            "tasks": ["teacher_student"],
            "beta1s": [0.9, 0.99],
            "beta2s": [0.9, 0.99],
            "steps": 15,
            "seeds": 2,
        },
        tmp_path,
    )
    assert len(cfg.tasks) == 1  # every cell and seed of a task trained as one program
    checks = _checks(claims)
    assert {c.id for c in checks} == {
        "beta_grid.lag_zero_on_diagonal",
        "beta_grid.parts_sum_to_update",
        "beta_grid.update_is_applied_step",
        "beta_grid.recorder_matches_reference",
    }
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    for task in ("teacher_student",):
        lag = arrays[f"{task}__share_lag_squared_current"]
        assert lag.shape == (2, 2)
        assert lag[0, 0] == 0.0 and lag[1, 1] == 0.0
        assert lag[0, 1] > 0 and lag[1, 0] > 0
        shares = sum(
            arrays[f"{task}__share_{k}_squared_current"] for k in ("sign", "lag", "residual")
        )
        np.testing.assert_allclose(shares, 1.0, rtol=1e-12)
        assert arrays[f"{task}__verdicts"].shape == (9,)
    (r,) = results
    assert np.asarray(r["sums"]).shape == (8, 15, 9)
    for c, (b1, b2, _) in enumerate(bg.copies_of(cfg.tasks[0])):
        lag = np.asarray(r["sums"])[c, :, 2]
        assert np.all(lag == 0.0) if b1 == b2 else np.all(lag > 0.0)
    assert list(r["reference_index"]) == [0, 2, 4, 6]  # seed 0 of the four corners
    findings = [c for c in claims if c.id.startswith("finding:")]
    assert len(findings) == 9 and all(c.kind == "finding" and not c.fails_run for c in findings)
    assert all(
        c.verdict in ("HELD", "NOT HELD", "UNRESOLVED", "depends on the reading") for c in findings
    )
    for c in findings:  # rule, per-seed values, power and the verdict of every reading
        d = c.to_dict()
        rule = measure_of(ap.FINDING_MEASURES, c.id).rule("threshold")  # the declared choice
        assert d["rule"] == rule and len(d["per_seed"]) <= 2 and "power" in d
        assert len(d["readings"]) == (1 if ":tied_smoother:" in c.id else 4)
    assert all(c.statement.startswith("provisional (reduced configuration): ") for c in findings)


def _fake_results():
    task = {
        "task": "teacher_student",
        "beta1s": [0.9, 0.99],
        "beta2s": [0.9, 0.99],
        "seeds": 1,
        "steps": 10,
        "lr": 0.0,
        "reference": "corners",
    }
    sums = np.ones((4, 10, 9))
    sums[[0, 3], :, 2] = 0.0  # the tied copies (0.9, 0.9) and (0.99, 0.99): no lag
    result = {
        "sums": sums,
        "reference_index": np.arange(4),
        "reference_error": np.full(4, 1e-7),
        "sum_error": np.full(4, 1e-16),
        "lag_abs_max": np.array([0.0, 0.3, 0.3, 0.0]),
        "applied_ratio": np.full(4, 0.5),
    }
    return [task], [result]


def _broken(result, key, value):
    out = {k: np.array(v, copy=True) for k, v in result.items()}
    if key == "sums":
        out["sums"][0, 9, 2] = 1e-300  # one step of the tied copy (0.9, 0.9) with a lag
    else:
        out[key][0] = value
    return out


@pytest.mark.parametrize(
    "key, value, claim",
    [
        ("sums", None, "beta_grid.lag_zero_on_diagonal"),
        ("lag_abs_max", 1e-300, "beta_grid.lag_zero_on_diagonal"),
        ("sum_error", 1e-11, "beta_grid.parts_sum_to_update"),
        ("applied_ratio", 1.5, "beta_grid.update_is_applied_step"),
        ("reference_error", 1e-3, "beta_grid.recorder_matches_reference"),
    ],
)
def test_beta_grid_checks_fail_on_broken_inputs(key, value, claim):
    tasks, results = _fake_results()
    good = {c.id: c for c in bga.correctness_claims(tasks, results)}
    assert all(c.passed for c in good.values())
    claims = {c.id: c for c in bga.correctness_claims(tasks, [_broken(results[0], key, value)])}
    assert not claims[claim].passed
    assert all(c.passed for k, c in claims.items() if k != claim)


def test_beta_grid_rejects_a_grid_without_tied_cells():
    with pytest.raises(InputError, match="tied"):
        make_config(
            {"experiment": "beta_grid", "params": {"beta1s": [0.8, 0.9], "beta2s": [0.95, 0.99]}}
        )
    with pytest.raises(InputError, match="beta1s"):
        make_config({"experiment": "beta_grid", "params": {"beta1s": [0.5, 1.0]}})


def test_beta_grid_quick_is_a_real_grid_over_all_tasks():
    cfg = make_config({"experiment": "beta_grid"}, quick=True)
    p = cfg.params
    assert len(p["beta1s"]) >= 3 and set(p["beta1s"]) == set(p["beta2s"])
    assert set(p["tasks"]) == set(ap.TASKS) and p["seeds"] >= 2
    full = make_config({"experiment": "beta_grid"}).params
    assert len(full["beta1s"]) >= 4 and len(full["beta2s"]) >= 4
    kinds = [ap.TASK_KINDS[t] for t in full["tasks"]]
    assert kinds.count("vision") == 3 and kinds.count("language") == 3
    assert kinds.count("neither") == 1


def test_beta_grid_bounds_are_one_error_line():
    with pytest.raises(InputError, match="seeds.*50"):
        make_config({"experiment": "beta_grid", "params": {"seeds": 51}})
    with pytest.raises(InputError, match="beta1s"):
        make_config({"experiment": "beta_grid", "params": {"beta1s": [0.9, 0.9999]}})


# ---------------------------------------------------------------------------- gauge_under_adam


def test_gauge_under_adam_end_to_end(tmp_path):
    cfg, results, a, claims = _run(
        ga.EXPERIMENT,
        {
            "dims": [8],
            "betas": [[0.9, 0.9], [0.9, 0.99]],
            "seeds": 3,
            "steps": 80,
            "lr": 0.05,
            "bins": 5,
        },
        tmp_path,
    )
    checks = _checks(claims)
    assert len(checks) == 4 and all(c.passed for c in checks), [c for c in checks if not c.passed]
    tied, untied = 0, 1
    assert np.all(a["share_dup"][0, tied, :, 1] == 0.0)
    assert np.all(a["share_single"][0, tied, :, 1] == 0.0)
    assert np.all(a["share_dup"][0, untied, :, 1] > 0.0)
    np.testing.assert_allclose(a["share_dup"].sum(-1), 1.0, rtol=1e-12)
    assert np.all((a["owner_lo"] <= a["owner_rate"]) & (a["owner_rate"] <= a["owner_hi"]))
    ok = np.isfinite(a["gap"])
    assert np.all(a["gap_lo"][ok] <= a["gap"][ok] + 1e-12)
    reported = [c for c in claims if c.id.startswith(("finding:", "measurement:"))]
    assert {c.id for c in reported} == (
        {f"finding:{k}:D8" for k in ("owner_rate", "gauge_gap")}
        | {f"measurement:{k}:D8" for k in ("gauge_gap", "lag_share", "delta_drift")}
    )
    assert all(not c.fails_run for c in reported)
    found = [c for c in reported if c.kind == "finding"]
    assert all(
        c.verdict in ("HELD", "NOT HELD", "UNRESOLVED", "depends on the reading") for c in found
    )
    for c in found:
        d = c.to_dict()
        assert d["rule"] in ("proportion", "median_threshold") and "power" in d
        assert set(d["readings"]) == set(ap.GROUPS) and d["per_seed"]
    assert all(c.statement.startswith("provisional (reduced configuration): ") for c in found)


def test_probe_leaves_the_trainer_trajectory_unchanged():
    from gaugedyn.theory import duplicates
    from gaugedyn.training import TrainConfig, train

    problem = duplicates(6, ["a-heavy", "w-heavy"])
    task = {
        "lr": 0.05,
        "steps": 25,
        "batch": 4,
        "beta1": 0.9,
        "beta2": 0.95,
        "threshold": 0.95,
        "prune_tol": 1e-2,
        "bins": 5,
        "skip": 0.0,
        "seeds": 2,
    }
    probed, probe = ga.train_probed(problem, task, root_seed=11)
    plain = train(
        problem,
        TrainConfig(optimizer="adam", lr=0.05, steps=25, samples=None, batch=4, betas=(0.9, 0.95)),
        seeds=2,
        root_seed=11,
    )
    for key in ("time", "a", "Q", "R", "loss", "loss_empirical"):
        np.testing.assert_array_equal(getattr(probed, key), getattr(plain, key), err_msg=key)
    assert probe["probe_calls"] == 25 and probe["probe_counter_ok"]
    assert probe["share_bins"].shape == (5, 2, 3)
    assert np.all(probe["share_mean"][..., 1] > 0)
    assert probe["sum_error"] <= ap.SUM_TOL and probe["applied_error"] <= ap.APPLIED_TOL


def test_probed_runs_in_threads_match_serial_runs():
    from concurrent.futures import ThreadPoolExecutor

    from gaugedyn.theory import single

    task = {
        "lr": 0.05,
        "steps": 20,
        "batch": 4,
        "beta1": 0.9,
        "beta2": 0.99,
        "threshold": 0.95,
        "prune_tol": 1e-2,
        "bins": 4,
        "skip": 0.0,
        "seeds": 2,
    }
    jobs = [(single(6, g), r) for g, r in (("w-heavy", 1), ("a-heavy", 2), ("w-heavy", 3))]
    serial = [ga.train_probed(p, task, root_seed=r)[1] for p, r in jobs]
    with ThreadPoolExecutor(3) as pool:
        threaded = list(pool.map(lambda j: ga.train_probed(j[0], task, root_seed=j[1])[1], jobs))
    for s, t in zip(serial, threaded):
        assert t["probe_calls"] == 20 and t["probe_counter_ok"]
        np.testing.assert_array_equal(t["share_mean"], s["share_mean"])
        np.testing.assert_array_equal(t["share_bins"], s["share_bins"])


def test_probe_refuses_steps_without_adam_state():
    from gaugedyn.adam import AdamProbe
    from gaugedyn.theory import single
    from gaugedyn.training import TrainConfig, train

    probe = AdamProbe(steps=3, bins=1, skip=0.0)
    with pytest.raises(InputError, match="adam"):
        train(single(6, "w-heavy"), TrainConfig(lr=0.01, steps=3, samples=20), on_step=probe)


def _fake_cell(tied: bool, S: int = 4, K: int = 2):
    r = {
        "probe_calls": np.array([20, 20, 20]),
        "probe_counter_ok": True,
        "sum_error": 1e-16,
        "applied_error": 1e-16,
        "lag_norm_max": 0.0 if tied else 0.1,
        "share_dup": np.tile([0.8, 0.0 if tied else 0.1, 0.1], (S, K, 1)),
        "share_w": np.tile([0.8, 0.0 if tied else 0.1, 0.1], (S, 1)),
        "share_a": np.tile([0.8, 0.0 if tied else 0.1, 0.1], (S, 1)),
    }
    t = {"beta1": 0.9, "beta2": 0.9 if tied else 0.99, "steps": 20}
    return t, r


@pytest.mark.parametrize(
    "broken, claim",
    [
        ({"probe_calls": np.array([20, 19, 20])}, "gauge_under_adam.probe_saw_every_step"),
        ({"probe_counter_ok": False}, "gauge_under_adam.probe_saw_every_step"),
        ({"sum_error": 1e-10}, "gauge_under_adam.parts_sum_to_update"),
        ({"applied_error": 1e-9}, "gauge_under_adam.update_is_applied_step"),
        ({"lag_norm_max": 1e-200}, "gauge_under_adam.lag_zero_when_tied"),
    ],
)
def test_gauge_under_adam_checks_fail_on_broken_inputs(broken, claim):
    (t0, r0), (t1, r1) = _fake_cell(True), _fake_cell(False)
    good = {c.id: c for c in gaa.check_claims([t0, t1], [r0, r1])}
    assert all(c.passed for c in good.values())
    bad = {c.id: c for c in gaa.check_claims([t0, t1], [{**r0, **broken}, r1])}
    assert not bad[claim].passed
    assert all(c.passed for k, c in bad.items() if k != claim)


def test_gap_interval_geometric_mean_and_coverage():
    from gaugedyn.stats import generator

    rng = generator(5, "test")
    est, lo, hi, n = gaa.gap_interval([6.0, 6.0, np.nan, 6.0], [2.0, 2.0, 1.0, 2.0], rng)
    assert (est, lo, hi, n) == (pytest.approx(3.0), pytest.approx(3.0), pytest.approx(3.0), 3)
    num = np.exp(rng.normal(np.log(5.0), 0.3, size=200))
    est, lo, hi, n = gaa.gap_interval(num, np.ones(200), rng)
    assert n == 200 and lo < 5.0 < hi and lo < est < hi and hi / lo < 1.2
    assert np.isnan(gaa.gap_interval([np.nan], [1.0], rng)[0])


def test_gauge_findings_judge_the_interval():
    a = {
        "dims": np.array([8]),
        "beta1": np.array([0.9, 0.9]),
        "beta2": np.array([0.9, 0.99]),
        "tied": np.array([True, False]),
        "owner_count": np.array([[8.0, 1.0]]),
        "t_spec_w": np.array([[np.linspace(4.0, 4.4, 8), np.linspace(0.8, 1.25, 8)]]),
        "t_spec_a": np.ones((1, 2, 8)),
    }
    found = {c.id: c for c in gaa._group_findings(a, 0, 8, 2, "", np.random.SeedSequence(0))}
    rate, gap = found["finding:owner_rate:D8"], found["finding:gauge_gap:D8"]
    assert rate.readings == {
        "all configurations": "UNRESOLVED",
        "tied": "HELD",
        "untied": "NOT HELD",
    }
    assert gap.readings == {"all configurations": "HELD", "tied": "HELD", "untied": "UNRESOLVED"}
    assert rate.verdict == gap.verdict == "depends on the reading" and not rate.passed
    from gaugedyn.stats import judge

    d = rate.to_dict()  # recomputed from the record alone
    again = judge(
        d["rule"], d["per_seed"], threshold=0.5, direction=">", draw=d["tolerance"]["uniform_draw"]
    )
    assert [again.low, again.high] == d["interval"] and again.verdict == "UNRESOLVED"
    # built to hold in every group, and built to fail in every group
    held = {
        c.id: c
        for c in gaa._group_findings(
            a
            | {
                "owner_count": np.array([[8.0, 8.0]]),
                "t_spec_w": np.full((1, 2, 8), 4.0) + np.linspace(0, 0.1, 8),
            },
            0,
            8,
            2,
            "",
            np.random.SeedSequence(0),
        )
    }
    assert {c.verdict for c in held.values()} == {"HELD"}
    failed = {
        c.id: c
        for c in gaa._group_findings(
            a
            | {
                "owner_count": np.array([[0.0, 1.0]]),
                "t_spec_w": np.full((1, 2, 8), 0.5) + np.linspace(0, 0.1, 8),
            },
            0,
            8,
            2,
            "",
            np.random.SeedSequence(0),
        )
    }
    assert {c.verdict for c in failed.values()} == {"NOT HELD"}


def test_declared_configurations_hold_the_full_grid_and_tied_and_untied_betas():
    from pathlib import Path

    from gaugedyn.experiments import available_experiments, load_config

    assert {"beta_grid", "gauge_under_adam"} <= set(available_experiments())
    sims = Path(__file__).resolve().parents[1] / "simulations"
    full = load_config(sims / "beta_grid.toml")
    assert len(full.params["tasks"]) == 7 and len(full.params["beta1s"]) >= 4
    assert len(full.tasks) == 7 and full.params["seeds"] >= 10
    copies = sum(len(bg.copies_of(t)) for t in full.tasks)
    n = len(full.params["beta1s"]) * len(full.params["beta2s"])
    assert copies == 7 * n * full.params["seeds"]
    quick = load_config(sims / "beta_grid.toml", quick=True)
    assert sum(len(bg.copies_of(t)) for t in quick.tasks) < copies / 2
    for q in (False, True):
        cfg = load_config(sims / "gauge_under_adam.toml", quick=q)
        tied = [b1 == b2 for b1, b2 in cfg.params["betas"]]
        assert any(tied) and not all(tied) and cfg.params["seeds"] >= 8

"""References for the findings' analysis glue that generated mutants slipped past
(``tools/mutate.py --generated``; the record is ``tools/mutation-data/generated.json``): each
test computes the measure a second, plainly written way on built inputs, or sits exactly on a
claim's threshold on the side its definition gives, and fails on the mutant named beside it."""

from __future__ import annotations

import numpy as np
import pytest

_SEED = np.random.SeedSequence(2053)


def _clock_results(lift: float) -> dict:
    t = np.linspace(0.0, 1.0, 60)
    return {
        "t": t,
        "rho": t,
        "alignment": t**2 + lift * np.sin(np.pi * t),
        "mu_R": np.full(t.size, 2.0),
        "mu_T": np.full(t.size, 0.5),
        "specialization_time": 0.5,
    }


@pytest.mark.parametrize("step", [0, -1])
def test_the_path_distance_claim_needs_the_distance_strictly_above_its_bound(step):
    # findings:_analysis:85:46:comparison (gauge clock: "the Hausdorff distance exceeds the
    # bound" taken as "reaches it"); the bound is set exactly at the measured distance (not
    # HELD: equal does not exceed) and one float below it (HELD)
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge import _analysis as ga
    from gaugedyn.experiments.gauge import _paths as paths
    from gaugedyn.experiments.gauge.clock import EXPERIMENT

    config = config_of(EXPERIMENT, quick=True, n_path=20)
    tasks = [{"gauge": "w-heavy"}, {"gauge": "a-heavy"}]
    results = [_clock_results(0.0), _clock_results(0.3)]
    n = int(config["n_path"])
    haus = paths.hausdorff(*(paths.resample_path(r["rho"], r["alignment"], n) for r in results))
    assert haus > 0.05
    config["path_bound"] = float(np.nextafter(haus, -np.inf)) if step else haus
    arrays, claims = ga.clock(config, tasks, results, _SEED)
    claim = next(c for c in claims if c.id == "clock.path_distance")
    assert float(arrays["hausdorff"]) == haus
    assert claim.passed == bool(step)


def test_the_online_worst_gap_is_in_units_of_the_seed_band_half_width(monkeypatch):
    # findings:_analysis:935:28:factor (gauge online SGD: the ODE's worst distance from the
    # median not divided by the band's half-width)
    import gaugedyn.training
    from gaugedyn.experiments.gauge import _analysis as ga

    monkeypatch.setattr(gaugedyn.training, "online_ode", lambda *a, **k: dict.fromkeys("aQR"))
    t = np.array([0.0, 0.6, 1.0, 2.0, 4.0])  # D = 20, MIN_STEPS = 10: t = 0 is left out
    monkeypatch.setattr(ga, "population_loss", lambda *a, **k: np.full(t.size, 0.5))
    task = {"kind": "chain", "dim": 20, "eta": 0.5, "t_max": 4.0, "seeds": 11}
    # per time: centre c and width d; 11 seeds at c + d * linspace(-1, 1, 11), so the 10%, 50%
    # and 90% quantiles are c - 0.8 d, c, c + 0.8 d and the half-width is 0.8 d
    c = np.array([9.0, 0.6, 0.51, 0.5, 0.45])
    d = np.array([1e-6, 1.0, 0.001, 0.3, 0.05])
    loss = c + d * np.linspace(-1.0, 1.0, 11)[:, None]
    out = ga._online_sgd_erf_task(task, {"t": t, "loss": loss}, "chain")
    want = max(abs(c[j] - 0.5) / (0.8 * d[j]) for j in range(1, t.size))
    assert want == pytest.approx(0.01 / 0.0008)
    assert out["worst"]["ode"] == pytest.approx(want, rel=1e-9)
    assert out["total"] == 4


@pytest.mark.parametrize("above", [False, True])
def test_a_copy_at_exactly_the_pruning_tolerance_is_not_pruned(above):
    # findings:_analysis:1099:24:comparison (gauge ownership: "pruned (|rho| < tol)" taken as
    # |rho| <= tol); the largest non-favourable |rho| at the check time sits exactly at the
    # tolerance (not pruned) or one float below it (pruned)
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.ownership import EXPERIMENT

    config = config_of(EXPERIMENT, quick=True, Ks=[2, 3])
    tol, t_check = float(config["prune_tol"]), float(config["t_check"])
    level = float(np.nextafter(tol, -np.inf)) if above else tol
    tasks, results = EXPERIMENT.tasks(config), []
    for task in tasks:
        K = task["K"]
        t = np.linspace(0, t_check, 5)
        rho = np.where(np.eye(K, dtype=bool)[:, None, :], 1.0, 0.1 * tol) * np.ones((K, t.size, K))
        rho[0, -1, 1] = -level  # |rho| is what is compared
        results.append(
            {
                "t": t,
                "rho": rho,
                "owner": np.arange(K),
                "pruning_time": np.where(np.eye(K, dtype=bool), np.nan, 0.5 * t_check),
                "specialization_time": np.full(K, 0.1),
                "remaining": np.full(K, 1e-6),
            }
        )
    claims = {c.id: c for c in EXPERIMENT.analyse(config, tasks, results, _SEED)[1]}
    assert claims["ownership.pruned"].measured == level
    assert claims["ownership.pruned"].passed == above


def test_the_selection_rate_outside_the_region_counts_the_selected_patterns():
    # findings:_analysis:1216:29:comparison (gauge ownership patterns: the rate outside the
    # claimed region counting the patterns not selected, outcome != 0)
    from gaugedyn.experiments.gauge import _analysis as ga

    config = {
        "gap_claim": 0.5,
        "scale_claim": 1.0,
        "region_rate": 0.9,
        "scales": [0.5, 1.0],
        "Ks": [2],
        "dim": 10,
        "function_tol": 0.05,
        "t_end": 10.0,
    }
    # inside the region (gap >= 0.5, s >= 1): three patterns; outside with gap > 0: five, of
    # which two are selected (outcome 0); a zero gap (a tie) is outside every count
    gap = np.array([0.6, 0.7, 0.9, 0.1, 0.2, 0.3, 0.6, 0.8, 0.0])
    scale = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 1.0])
    outcome = np.array([0, 0, 0, 0, 1, 2, 0, 3, 0])
    arr = {"gap": gap, "scale": scale, "outcome": outcome}
    outside = ~((gap >= 0.5) & (scale >= 1.0)) & (gap > 0)
    rate = sum(1 for o, keep in zip(outcome, outside) if keep and o == 0) / outside.sum()
    assert rate == 2 / 5
    claim = ga._ownership_patterns_region_claim(config, arr, np.array([0.6, np.nan]), _SEED)
    assert f"outside it (gap > 0) {rate:.2f};" in claim.statement
    assert "(3 of 3)" in claim.statement


def test_the_benefit_maps_error_bar_is_the_standard_error_of_the_seed_mean():
    # findings:_analysis:322:13:swap (auxiliary: the map's error bar sqrt(n) / sd instead of
    # sd / sqrt(n))
    from test_auxiliary_experiment import _map

    from gaugedyn.experiments.auxiliary import _analysis as aux

    tasks, results = _map(False, np.random.default_rng(11), seeds=9)
    arrays, _ = aux.benefit_map(tasks, results, _SEED)
    for reading in ("one_output", "two_heads"):
        cells = [tuple(k) for k in arrays[f"map_cells_{reading}"]]
        single = {
            t["sigma"]: r for t, r in zip(tasks, results) if t["reading"] == reading and t["single"]
        }
        want = []
        for rho, sigma in cells:
            (r,) = [
                r
                for t, r in zip(tasks, results)
                if t["reading"] == reading
                and not t["single"]
                and (t["rho"], t["sigma"]) == (rho, sigma)
            ]
            b = list(single[sigma]["eps_window"] - r["eps_window"])
            mean = sum(b) / len(b)
            sd = (sum((x - mean) ** 2 for x in b) / (len(b) - 1)) ** 0.5
            want.append(sd / len(b) ** 0.5)
        assert max(want) < 0.01
        np.testing.assert_allclose(arrays[f"map_sim_se_{reading}"], want, rtol=1e-9)


@pytest.mark.parametrize("half", [0, 1])
def test_the_no_benefit_control_fails_on_a_gap_between_halves_of_either_sign(half):
    # findings:_analysis:420:45:sign (auxiliary: the negative control's values not mirrored,
    # so a "benefit" of the second half over the first, a negative difference, went unseen)
    from test_auxiliary_experiment import _map

    from gaugedyn.experiments.auxiliary import _analysis as aux

    tasks, results = _map(False, np.random.default_rng(7))
    sound = {c.id: c for c in aux.map_controls(tasks, results)}
    assert sound["benefit.control_no_benefit.one_output"].passed
    for t, r in zip(tasks, results):
        if t["single"]:
            h = len(r["eps_window"]) // 2
            r["eps_window"][half * h : (half + 1) * h] += 0.01
    broken = {c.id: c for c in aux.map_controls(tasks, results)}
    assert not broken["benefit.control_no_benefit.one_output"].passed


def test_the_single_task_form_is_one_on_runs_that_obey_it():
    # findings:_analysis:639:12:sign (auxiliary: the single-task form's 1 + gamma^2 written
    # 1 - gamma^2); PROTOCOL.md: q = (1 + gamma) eps_m^aux / ((1 + gamma^2) eps_m^single),
    # so runs built with eps_m^aux = (1 + gamma^2) / (1 + gamma) eps_m^single give q = 1
    from test_auxiliary_experiment import _fdt_sim, _quick

    from gaugedyn.experiments.auxiliary import _analysis as aux

    tasks, results = _fdt_sim(1.0, np.random.default_rng(8))
    single = {
        (t["activation"], t["reading"]): r
        for t, r in zip(tasks, results)
        if t["rho"] == 1.0 and t["gamma"] == 0.0
    }
    for t, r in zip(tasks, results):
        if t["rho"] == 1.0 and t["gamma"] > 0:
            g = t["gamma"]
            r["eps_main"] = (1 + g**2) / (1 + g) * single[t["activation"], t["reading"]]["eps_main"]
    arrays, claims = aux.fdt_sim(tasks, results, _quick(), _SEED)
    qs = [v for k, v in arrays.items() if k.startswith("fdtsim_single_")]
    assert qs
    for q in qs:
        np.testing.assert_allclose(q, 1.0, rtol=1e-12)
    j = next(c for c in claims if c.id == "fdt.single_task.erf")
    assert j.readings["one_output"] == "HELD"

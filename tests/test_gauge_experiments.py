"""The six gauge experiments: reduced runs whose claims pass, and claim logic on built inputs.

Each experiment is run in-process on a reduced configuration (tasks, ``run_task``, ``analyse``)
and its claims must pass; then ``analyse`` is fed constructed results built to pass and to fail,
so every claim is shown able to fail on the quantity it states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gaugedyn.experiments import _gauge_common as gc
from gaugedyn.experiments.clock import EXPERIMENT as CLOCK
from gaugedyn.experiments.dimension_scaling import EXPERIMENT as SCALING
from gaugedyn.experiments.dissipation import EXPERIMENT as DISSIPATION
from gaugedyn.experiments.gradient_descent import EXPERIMENT as GD
from gaugedyn.experiments.gradient_descent import crossing_time
from gaugedyn.experiments.ownership import EXPERIMENT as OWNERSHIP
from gaugedyn.experiments.perturbations import EXPERIMENT as PERTURBATIONS

REDUCED = {
    SCALING: dict(dims=[100, 1000, 10000], large_dim=100),
    CLOCK: dict(dim=30, t_max=5e3, n_times=200, n_path=120),
    OWNERSHIP: dict(Ks=[2, 3], dim=30, t_check=4.0, n_times=40),
    PERTURBATIONS: dict(strengths=[1.0, 10.0], epsilons=[0.01, 0.1], n_samples=8,
                        claim_strength=10.0, claim_epsilon=0.1, t_max=50.0),
    GD: dict(etas=[3e-4, 1e-3, 3e-3], selection_etas=[1e-2]),
    DISSIPATION: dict(dim=30, t_max=5e3, per_decade=40),
}


def verdicts(claims) -> dict[str, bool]:
    return {c.id: bool(c.passed) for c in claims}


@pytest.fixture(scope="module", params=list(REDUCED), ids=lambda e: e.name)
def reduced_run(request):
    experiment = request.param
    config = gc.config_of(experiment, quick=True, **REDUCED[experiment])
    tasks, results, arrays, claims = gc.run_inline(experiment, config)
    return experiment, config, tasks, results, arrays, claims


def test_reduced_run_passes_its_claims_and_draws(reduced_run, tmp_path):
    experiment, config, tasks, results, arrays, claims = reduced_run
    assert claims, experiment.name
    failed = [(c.id, c.measured, c.tolerance) for c in claims if not c.passed]
    assert not failed, failed
    for c in claims:
        assert c.id.startswith(experiment.name + ".")
        assert c.to_dict()["passed"] is True
    for name, value in arrays.items():
        assert np.asarray(value).dtype != object, name
    np.savez(tmp_path / "arrays.npz", **arrays)  # figures are drawn from the stored arrays alone
    with np.load(tmp_path / "arrays.npz", allow_pickle=False) as f:
        stored = {k: f[k] for k in f.files}
    from gaugedyn.plotting import style

    with style("Agg"):
        figures = experiment.plot(stored, config, tmp_path)
    assert figures
    for name, caption in figures:
        assert caption, name
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.pdf").exists()


def test_tasks_are_json_and_seedless():
    import json

    for experiment in REDUCED:
        config = gc.config_of(experiment, quick=False)
        tasks = experiment.tasks(config)
        assert tasks and all(isinstance(t, dict) for t in tasks)
        json.dumps(tasks)


# --- claim logic on constructed inputs ----------------------------------------------------


def _scaling(ratio_exponent: float):
    config = gc.config_of(SCALING, quick=True, dims=[1000, 10000, 100000], large_dim=1000)
    tasks = SCALING.tasks(config)
    results = []
    for t in tasks:
        D = t["dim"]
        T = 8.0 * D if t["gauge"] == "w-heavy" else 8.0 * D ** (1.0 - ratio_exponent)
        results.append({"specialization_time": T})
    return verdicts(SCALING.analyse(config, tasks, results)[1])


def test_scaling_claim_fails_for_a_ratio_slope_of_one_and_a_half():
    assert _scaling(2.0)["dimension_scaling.ratio_exponent"]
    bad = _scaling(1.5)
    assert not bad["dimension_scaling.ratio_exponent"]
    assert not bad["dimension_scaling.a_heavy_exponent"]
    assert bad["dimension_scaling.w_heavy_exponent"]


def test_scaling_claim_fails_when_a_run_never_specializes():
    config = gc.config_of(SCALING, quick=True, dims=[1000, 10000, 100000], large_dim=1000)
    tasks = SCALING.tasks(config)
    results = [{"specialization_time": math.nan if i == 0 else 1.0} for i in range(len(tasks))]
    assert not any(verdicts(SCALING.analyse(config, tasks, results)[1]).values())


def _clock_results(same_path: bool):
    t = np.linspace(0, 10, 400)
    m = 0.1 + 0.85 * (1 - np.exp(-t))
    rho_a = 1.0 + 0 * t
    rho_w = rho_a if same_path else 0.4 + 0.6 * (1 - np.exp(-t))
    out = []
    for rho, mu_t, tt in ((rho_w, 0.01, t * 7.0), (rho_a, 100.0, t)):  # w-heavy on a slower clock
        out.append({"t": tt, "rho": rho, "alignment": m, "mu_R": 10.0 + 0 * t, "mu_T": mu_t + 0 * t,
                    "delta0": -9.9 if mu_t < 1 else 9.9, "rho0": 1.0, "specialization_time": 3.0})
    return out


def test_clock_claim_fails_when_one_path_is_the_other_on_a_new_clock():
    config = gc.config_of(CLOCK, quick=True, n_path=200)
    tasks = CLOCK.tasks(config)
    good = verdicts(CLOCK.analyse(config, tasks, _clock_results(same_path=False))[1])
    bad = verdicts(CLOCK.analyse(config, tasks, _clock_results(same_path=True))[1])
    assert good["clock.path_distance"] and not bad["clock.path_distance"]
    results = _clock_results(same_path=False)
    results[1]["mu_R"] = results[1]["mu_R"] * 1.01
    assert not verdicts(CLOCK.analyse(config, tasks, results)[1])["clock.reaction_mobility"]


def _ownership(wrong_owner=False, unpruned=False):
    config = gc.config_of(OWNERSHIP, quick=True, Ks=[2, 3])
    tasks = OWNERSHIP.tasks(config)
    results = []
    for task in tasks:
        K = task["K"]
        t = np.linspace(0, config["t_check"], 5)
        rho = np.where(np.eye(K, dtype=bool)[:, None, :], 1.0, 1e-6) * np.ones((K, t.size, K))
        prune = np.where(np.eye(K, dtype=bool), np.nan, 0.5)
        owner = np.arange(K)
        if wrong_owner and K == 3:
            owner = owner[::-1].copy()
        if unpruned and K == 3:
            rho[0, -1, 1] = 0.05
            prune[0, 1] = np.nan
        results.append({"t": t, "rho": rho, "owner": owner, "pruning_time": prune,
                        "specialization_time": np.full(K, 0.1), "contribution": np.full(K, 1e-6)})
    return verdicts(OWNERSHIP.analyse(config, tasks, results)[1])


def test_ownership_claims_fail_on_the_wrong_owner_or_an_unpruned_copy():
    assert all(_ownership().values())
    assert not _ownership(wrong_owner=True)["ownership.owner"]
    bad = _ownership(unpruned=True)
    assert bad["ownership.owner"] and not bad["ownership.pruned"]


def _perturbations(loss_in_region=False, biased_control=False):
    config = gc.config_of(PERTURBATIONS, quick=True, strengths=[1.0, 10.0], epsilons=[0.01, 0.1],
                          n_samples=40, claim_strength=10.0, claim_epsilon=0.1)
    tasks = PERTURBATIONS.tasks(config)
    rng = np.random.default_rng(0)
    results = []
    for task in tasks:
        if task["strength"] == 1.0:
            owner = np.zeros((2, 40), int) if biased_control else np.tile([0, 1], (2, 20))
        else:
            owner = np.zeros((2, 40), int)
            if loss_in_region:
                owner[1, 7] = 1
        results.append({"owner": owner, "loser_pruned": rng.random((2, 40)) < 0.5,
                        "rho0": np.ones((2, 40, 2))})
    return verdicts(PERTURBATIONS.analyse(config, tasks, results)[1])


def test_perturbation_claims_fail_on_a_loss_in_the_region_or_a_biased_control():
    assert all(_perturbations().values())
    assert not _perturbations(loss_in_region=True)["perturbations.win_region"]
    assert not _perturbations(biased_control=True)["perturbations.symmetric_control"]


def _gd(order: float, owner: int = 0):
    config = gc.config_of(GD, quick=True)
    tasks = GD.tasks(config)
    results = []
    for task in tasks:
        if task["kind"] == "flow":
            results.append({"t": np.array([0.0, 1.0]), "alignment": np.zeros((2, 2)),
                            "rho": np.ones((2, 2)), "specialization_time": 0.066, "owner": 0,
                            "pruning_time": np.array([np.nan, 1.2])})
        elif task["kind"] == "error":
            results.append({"specialization_time": 0.066 * (1 + 3 * task["eta"] ** order),
                            "step_time": 0.066, "steps": 10})
        else:
            results.append({"t": np.array([0.0, 1.0]), "rho": np.ones((2, 2)), "owner": owner,
                            "pruning_time": np.array([np.nan, 1.3]), "delta_drift": 1e-3})
    return verdicts(GD.analyse(config, tasks, results)[1])


def test_gd_claims_fail_on_second_order_errors_or_lost_selection():
    assert all(_gd(1.0).values())
    assert not _gd(2.0)["gradient_descent.error_slope"]
    assert not _gd(1.0, owner=1)["gradient_descent.selection"]


def test_dissipation_claim_fails_when_the_integral_misses_the_loss_drop():
    config = gc.config_of(DISSIPATION, quick=True)
    tasks = DISSIPATION.tasks(config)

    def results(gap):
        t = np.array([0.0, 1.0, 2.0])
        return [{"t": t, "loss": np.array([0.3, 0.1, 0.0]), "reaction": np.ones(3),
                 "transport": np.ones(3), "integral_reaction": 0.1,
                 "integral_transport": 0.2 * (1 + gap), "specialization_time": 1.0}
                for _ in tasks]

    assert verdicts(DISSIPATION.analyse(config, tasks, results(0.0))[1])["dissipation.balance"]
    assert not verdicts(DISSIPATION.analyse(config, tasks, results(1e-3))[1])["dissipation.balance"]


# --- helpers --------------------------------------------------------------------------------


def test_loglog_fit_recovers_a_power_law_with_an_interval_that_covers_it():
    rng = np.random.default_rng(1)
    x = np.logspace(0, 4, 12)
    y = 3.0 * x**1.7 * np.exp(0.05 * rng.normal(size=x.size))
    fit = gc.loglog_fit(x, y)
    assert fit["ci"][0] < 1.7 < fit["ci"][1]
    assert abs(fit["slope"] - 1.7) < 0.05
    assert math.isinf(gc.loglog_fit(x[:2], y[:2])["se"])


def test_path_distances_ignore_the_clock_but_see_the_path():
    s = np.linspace(0, 1, 300)
    P = gc.resample_path(s, s**2, 200)
    Q = gc.resample_path(s**3, s**6, 200)  # same curve, different parametrization
    R = gc.resample_path(s, s**2 + 0.1, 200)
    assert gc.hausdorff(P, Q) < 1e-2 and gc.frechet(P, Q) < 1e-2
    assert gc.hausdorff(P, R) == pytest.approx(0.1 / math.sqrt(1 + 0), rel=0.5)
    assert gc.frechet(P, R) >= gc.hausdorff(P, R) - 1e-12


def test_log_quadrature_and_crossing_time():
    t = np.concatenate([[0.0], np.logspace(-8, 2, 1001)])
    assert gc.integrate_log(t, np.exp(-t)) == pytest.approx(1 - np.exp(-100), rel=1e-8)
    tt = np.linspace(0, 1, 11)
    assert crossing_time(tt, tt, 0.55) == pytest.approx(0.55)
    assert math.isnan(crossing_time(tt, tt, 2.0))


def test_declared_configurations_load_and_reject_bad_values(tmp_path):
    from pathlib import Path

    from gaugedyn import InputError
    from gaugedyn.experiments import load_config

    root = Path(__file__).resolve().parents[1] / "simulations"
    for experiment in REDUCED:
        for quick in (False, True):
            cfg = load_config(root / f"{experiment.name}.toml", quick=quick)
            assert cfg.name == experiment.name and cfg.tasks
    bad = tmp_path / "bad.toml"
    bad.write_text('experiment = "ownership"\nseed = 0\n[params]\nKs = [1, 2]\n')
    with pytest.raises(InputError, match="Ks"):
        load_config(bad)


def test_divergent_members_of_a_batch_are_isolated():
    from gaugedyn import DivergenceError
    from gaugedyn.theory import random_problem

    # member 15 of this stream sends a[0] to infinity at t = 0.072; the batched solver marks it
    rng = np.random.default_rng(1)
    probs = [random_problem(50, 4, 4, rng, scale=3.0) for _ in range(16)]
    grid = np.array([0.0, 0.25, 0.5])
    out = gc.trajectories_or_none([probs[0], probs[15]], grid, atol=1e-10)
    assert out[1] is None
    alone = gc.trajectories([probs[0]], grid, atol=1e-10)[0]
    for key in ("a", "Q", "loss"):
        np.testing.assert_array_equal(out[0][key], alone[key])
    with pytest.raises(DivergenceError), np.errstate(all="ignore"):
        gc.trajectories([probs[0], probs[15]], grid, atol=1e-10)


def test_shared_list_check_and_remaining_contribution():
    check = gc.int_list(2, 4, 16)
    assert check([4, 16])
    assert not any(check(v) for v in ([4], [4, 4], [4, 17], [3, 5], [True, 5], [4.0, 5], "ab", None))
    assert gc.int_list(2, 4, distinct=False)([4, 4])
    # copy 1 is the teacher itself (a = 1, |w| = 1): it carries all of ||f*||
    a, Q = np.array([0.3, 1.0]), np.eye(2)
    assert gc.remaining_contribution(a, Q, owner=0) == pytest.approx(1.0, rel=1e-12)
    assert gc.remaining_contribution(a, Q, owner=1) == pytest.approx(0.3, rel=1e-12)
    fit = gc.loglog_fit([1.0, 2.0, 4.0], [1.0, 4.0, 16.0])
    assert gc.fit_row(fit)[0] == pytest.approx(2.0) and gc.fit_row(fit).shape == (4,)

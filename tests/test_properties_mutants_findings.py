"""Properties of the findings' analysis glue written for generated mutants that survived the
suite (``tools/mutate.py --generated --select coverage``; the record is
``tools/mutation-data/generated.json``): each fails on the mutant named beside it."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn import stats
from gaugedyn.experiments.auxiliary import _analysis as aux
from gaugedyn.experiments.auxiliary import _protocol as aux_pc


@pytest.mark.parametrize(
    ("fid", "form", "threshold", "side"),
    [
        # every cell claimed above 0; an error claimed below its tolerance; a band
        ("fdt.sim.erf", "every_cell", 0.0, ">"),
        ("forcing_noise.balance", "every_cell", 0.0, ">"),
        ("fdt.ode.erf", "threshold", aux_pc.FDT_ODE_TOLERANCE, "<"),
        ("fdt.single_task.erf", "inside", (0.9, 1.1), "inside"),
    ],
)
def test_a_reading_without_values_is_judged_on_its_claims_side(fid, form, threshold, side):
    # findings:_analysis:62:54:comparison (auxiliary: the side of an every-cell claim reversed)
    kept = stats.judge("deterministic", np.array([0.5]), threshold=1.0, direction="<")
    out = aux._filled(
        {"kept": kept, "gone": "no values: the runs diverged"}, fid, form, threshold, 0
    )
    assert out["kept"] is kept
    j = out["gone"]
    assert j.verdict == "UNRESOLVED" and j.n == 0
    assert j.direction == side
    # the stored judgement recomputes from what it stores
    again = stats.judge(
        j.rule,
        np.empty((0, 1)) if stats.RULES[j.rule].cells else np.empty(0),
        threshold=j.threshold,
        direction=None if side == "inside" else side,
        rng=np.random.default_rng(0) if stats.RULES[j.rule].randomised else None,
    )
    assert (again.verdict, again.direction) == (j.verdict, j.direction)


def test_a_boundary_statement_lists_the_readings_beside_the_primary_one():
    # findings:_spike_analysis:199:87:comparison (the primary reading listed as the other)
    from gaugedyn.experiments.adam_stability._spike_analysis import _task_claim

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    edges = {
        ("t", "settled", "init"): 0.5 * a,
        ("t", "transient", "init"): 3 * a**3,  # a different slope: a different estimate
    }
    c = _task_claim("t", a, edges)
    slopes = c.tolerance["slopes"]
    primary = next(k for k in slopes if f"slope ({k})" in c.statement)
    others = c.statement.split("other readings: ")[1].split("; C = ")[0]
    listed = [part.split(": ")[0] for part in others.split("; ")]
    assert listed == [k for k in slopes if k != primary]
    for k in listed:
        assert f"{k}: {slopes[k][0]:.3g} [" in others


_SEED = np.random.SeedSequence(2026)


def _scaling_claim(n_never: int):
    """The scaling experiment's count of censored runs on built runs: the ratio grows as D,
    ``n_never`` of the runs never specialise (NaN, counted at the end of their run)."""
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.gauge_in_training_scaling import EXPERIMENT

    cfg = config_of(EXPERIMENT, quick=True)
    tasks = EXPERIMENT.tasks(cfg)
    rng = np.random.default_rng(0)
    results, left = [], n_never
    for task in tasks:
        D = task["dim"]
        base = 5.0 * D if task["gauge"] == "w-heavy" else 1.0 / D
        times = base * (1 + 0.01 * rng.normal(size=6))
        if task["gauge"] == "a-heavy" and left:  # censored fast runs stay below the median
            k = min(left, 2)
            times[:k], left = np.nan, left - k
        results.append(
            {
                "specialization_time": times,
                "theory_time": np.array(base),
                "steps": np.array(100),
                "run_time": np.array(0.5 * base),
            }
        )
    assert left == 0
    claims = {c.id: c for c in EXPERIMENT.analyse(cfg, tasks, results, _SEED)[1]}
    return claims["gauge_in_training_scaling.runs_specialize"], 6 * len(tasks)


def test_the_scaling_claim_allows_a_tenth_of_the_runs_unspecialised_and_no_more():
    # findings:_analysis:559:59:factor (gauge: the 10% allowance taken as 0.1 runs)
    for n_never in (0, 1, 3):
        claim, n_total = _scaling_claim(n_never)
        assert n_never <= 0.1 * n_total
        assert claim.passed, (n_never, claim.statement)
        assert f"{n_never} of {n_total} runs did not specialize" in claim.statement
    claim, n_total = _scaling_claim(n_total // 10 + 1)
    assert not claim.passed


def test_closed_form_cells_are_named_by_their_time_in_units_of_the_step():
    # findings:_analysis:170:14:factor (auxiliary: the cell's time tau named without eta)
    tasks = [
        {"kind": "closed_form", "rho": 0.5, "sigma": 0.1, "eta": 0.25},
        {"kind": "other"},
        {"kind": "closed_form", "rho": 0.0, "sigma": 0.2, "eta": 2.0},
    ]
    steps = np.array([0.0, 4.0, 40.0])  # the recorded times, in steps
    results = [
        {"t": steps, "eps_main": np.ones((3, 3)) * 2.0, "cf": np.array([1.0, 1.0, 2.0])},
        {},
        {"t": steps, "eps_main": np.ones((3, 3)), "cf": np.array([1.0, 0.5, 1.0])},
    ]
    values, names = aux._relative(tasks, results, "cf")
    assert values.shape == (3, 4)
    np.testing.assert_allclose(values[0], [1.0, 0.0, 1.0, 0.0])
    taus = [float(n.split("tau=")[1]) for n in names]
    np.testing.assert_allclose(taus, [4 * 0.25, 40 * 0.25, 4 * 2.0, 40 * 2.0])
    assert names[0].startswith("rho=0.5, sigma=0.1, ")


@pytest.mark.parametrize(
    ("closure", "passes"), [(1e-9, True), (np.nextafter(1e-9, 1.0), False), (0.0, True)]
)
def test_the_closure_control_passes_at_its_tolerance_and_fails_just_beyond(closure, passes):
    # findings:_analysis:503:12:comparison (auxiliary: "<= 1e-9" applied as "< 1e-9")
    from test_auxiliary_experiment import _claim, _map

    tasks, results = _map(False, np.random.default_rng(7))
    for r in results:
        if "closure" in r:
            r["closure"] = np.full(np.shape(r["closure"]), closure)
    claim = _claim(aux.map_controls(tasks, results), "forcing_noise.closure")
    assert claim.passed == passes


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # medians and means of no seeds
def test_the_ownership_claim_does_not_pass_on_no_runs():
    # findings:_analysis:461:24:comparison (gauge: "every seed" held over zero seeds)
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.gauge_in_training_ownership import EXPERIMENT

    cfg = config_of(EXPERIMENT, quick=True, Ks=[2])
    tasks = EXPERIMENT.tasks(cfg)
    results = [
        {
            "owner": np.zeros(0, dtype=int),
            "remaining": np.linspace(5e-5, 2e-4, 6),
            "flow_remaining": np.array(1e-5),
            "t": np.array([0.0, 1.0]),
            "rho": np.ones((0, 2, 2)),
        }
        for _ in tasks
    ]
    claims = {c.id: c for c in EXPERIMENT.analyse(cfg, tasks, results, _SEED)[1]}
    assert not claims["gauge_in_training_ownership.owner_every_seed"].passed


def test_gd_relative_error_is_relative_to_the_flow_time():
    # findings:_analysis:859:10:factor (gauge: the error not divided by the flow's time; the
    # slope of the log-log fit cannot see a constant factor, the stored error can)
    from gaugedyn.experiments.gauge._analysis import gradient_descent

    etas = [0.01, 0.02, 0.04, 0.08]
    t_flow = 40.0
    tasks = [{"eta": e} for e in etas]
    results = [{"flow_time": t_flow, "specialization_time": t_flow * (1 + 0.3 * e)} for e in etas]
    arrays, claims = gradient_descent({"slope_tol": 0.1, "dim": 10}, tasks, results, None)
    np.testing.assert_allclose(arrays["relative_error"], 0.3 * np.array(etas), rtol=1e-9)
    assert claims[0].passed and abs(claims[0].measured - 1.0) < 1e-6
    # the same runs in another time unit: the relative error and the verdict do not move
    again = [
        {"flow_time": 7 * r["flow_time"], "specialization_time": 7 * r["specialization_time"]}
        for r in results
    ]
    arrays7, _ = gradient_descent({"slope_tol": 0.1, "dim": 10}, tasks, again, None)
    np.testing.assert_allclose(arrays7["relative_error"], arrays["relative_error"], rtol=1e-9)


def test_the_grid_heatmap_loss_ratio_is_the_final_over_the_initial_loss():
    # findings:_grid_analysis:217:30:swap (the ratio inverted)
    from gaugedyn.experiments.adam_split._grid import FIELDS
    from gaugedyn.experiments.adam_split._grid_analysis import grid_arrays

    rng = np.random.default_rng(3)
    shape = (2, 3, 4)  # beta1 x beta2 x seeds
    per = {f: rng.uniform(0.5, 2.0, shape) for f in FIELDS}
    per["cell_diverged"] = np.zeros(shape[:2], dtype=bool)
    table = {"beta1s": [0.8, 0.9], "beta2s": [0.9, 0.99, 0.999], "tasks": {"t": per}}
    tasks, results = [], []
    for b1 in table["beta1s"]:
        for b2 in table["beta2s"]:
            tasks.append({"task": "t", "beta1": b1, "beta2": b2})
            results.append({"sums": np.ones((5, 8))})
    arrays = grid_arrays(table, tasks, results)
    want = per["final_loss"].mean(-1) / per["initial_loss"].mean(-1)
    np.testing.assert_allclose(arrays["t__loss_ratio"], want, rtol=1e-12)


@pytest.mark.parametrize("at_check", [True, False])
def test_a_copy_pruned_exactly_at_the_check_time_counts_as_pruned_by_then(at_check):
    # findings:_analysis:1099:44:comparison (gauge ownership: "pruned by t_check" taken as
    # strictly before it)
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.ownership import EXPERIMENT

    config = config_of(EXPERIMENT, quick=True, Ks=[2, 3])
    t_check = float(config["t_check"])
    when = t_check if at_check else np.nextafter(t_check, np.inf)
    tasks, results = EXPERIMENT.tasks(config), []
    for task in tasks:
        K = task["K"]
        t = np.linspace(0, t_check, 5)
        rho = np.where(np.eye(K, dtype=bool)[:, None, :], 1.0, 1e-6) * np.ones((K, t.size, K))
        prune = np.where(np.eye(K, dtype=bool), np.nan, 0.5)
        prune[0, 1] = when  # the last copy to go, at the check time or one float after it
        results.append(
            {
                "t": t,
                "rho": rho,
                "owner": np.arange(K),
                "pruning_time": prune,
                "specialization_time": np.full(K, 0.1),
                "remaining": np.full(K, 1e-6),
            }
        )
    claims = {c.id: c for c in EXPERIMENT.analyse(config, tasks, results, _SEED)[1]}
    assert claims["ownership.pruned"].passed == at_check


def _control_claim(n_samples: int, wins_at_control: int):
    from _gauge_helpers import config_of

    from gaugedyn.experiments.gauge.perturbations import EXPERIMENT

    config = config_of(
        EXPERIMENT,
        quick=True,
        strengths=[1.0, 10.0],
        epsilons=[0.01, 0.1],
        n_samples=n_samples,
        claim_strength=10.0,
        claim_epsilon=0.1,
    )
    tasks, results = EXPERIMENT.tasks(config), []
    for task in tasks:
        owner = np.zeros((2, n_samples), int)
        if task["strength"] == 1.0:  # the control: the favourable copy (0) wins this often
            owner.flat[wins_at_control:] = 1
        results.append(
            {
                "owner": owner,
                "loser_pruned": np.ones((2, n_samples), bool),
                "rho0": np.ones((2, n_samples, 2)),
            }
        )
    claims = EXPERIMENT.analyse(config, tasks, results, _SEED)[1]
    return next(c for c in claims if c.id == "perturbations.symmetric_control")


def test_the_symmetric_control_is_judged_on_every_control_sample_inside_four_standard_errors():
    # the control judged by proportion_band on the pooled outcomes at lambda = 1: 8 samples x
    # 2 epsilons = 16 samples, four binomial standard errors of 1/2 are 4 sqrt(0.25 / 16) = 0.5,
    # so the band is (0, 1); 8 of 16 won lies well inside it (HELD), every one won sits on its
    # edge (an interval reaching 1 is not inside: not HELD), and the check records all 16
    half = _control_claim(8, 8)
    assert half.passed and half.rule == "proportion_band" and len(half.per_seed) == 16
    assert list(half.tolerance["threshold"]) == [0.0, 1.0]
    edge = _control_claim(8, 16)
    assert edge.measured == 1.0 and not edge.passed


def test_the_online_spread_is_the_mean_seed_spread_over_the_last_four_fifths_of_the_run(
    monkeypatch,
):
    # findings:_analysis:933:22:off-by-one (the late window measured from the next-to-last
    # time instead of the last)
    import gaugedyn.training
    from gaugedyn.experiments.gauge import _analysis as ga

    # the spread reads only the simulated losses: the ODE curves beside it are stubbed out
    monkeypatch.setattr(gaugedyn.training, "online_ode", lambda *a, **k: dict.fromkeys("aQR"))
    monkeypatch.setattr(ga, "population_loss", lambda *a, **k: np.full(6, 0.5))

    task = {"kind": "chain", "dim": 20, "eta": 0.5, "t_max": 10.0, "seeds": 4}
    t = np.array([0.0, 1.0, 1.9, 2.5, 5.0, 10.0])  # late: t >= 2 (0.2 of the last time)
    rng = np.random.default_rng(5)
    spread_by_time = np.array([3.0, 2.0, 1.0, 0.1, 0.2, 0.3])
    loss = 0.5 + spread_by_time * rng.standard_normal((task["seeds"], t.size)) * 1e-3
    out = ga._online_sgd_erf_task(task, {"t": t, "loss": loss}, "chain")
    late = t >= 0.2 * t.max()
    want = float(np.mean(np.std(loss[:, late], axis=0)))
    assert out["spread"] == pytest.approx(want, rel=1e-12)


def test_the_prototypes_share_on_the_claimed_side_counts_the_values_beyond_the_threshold():
    # findings:_analysis:237:51:factor (prototypes: the share read off the claim's sign alone)
    from gaugedyn.experiments.prototypes import _analysis as pa
    from gaugedyn.experiments.prototypes import prototypes as ex

    cfg = {k: v.default for k, v in ex.Prototypes.params.items()} | {"sizes": [3, 10, 100]}
    judge = pa.Judge(cfg, {}, root=np.random.SeedSequence(1))
    v = np.tile([[0.5, -0.2, 0.3], [0.1, 0.4, -0.3], [0.2, 0.2, 0.2], [0.6, -0.1, 0.05]], (3, 1))
    share = {}
    for direction in (">", "<"):
        claim = judge.finding("overlap_harmful", "s", v, "every_cell", 0.1, direction)
        share[direction] = claim.tolerance["share_on_claimed_side"]
    assert share[">"] == np.mean(v > 0.1) and share["<"] == np.mean(v < 0.1)
    assert share[">"] + share["<"] == pytest.approx(1 - np.mean(v == 0.1), abs=1e-15)


def test_local_slopes_are_the_edges_slopes_bracketed_by_their_intervals():
    # findings:_spike_analysis:154:10:swap (the upper end of a slope's range negated) and
    # findings:_spike_analysis:150:20:swap (the edges read as float(edges))
    from gaugedyn.experiments.adam_stability._spike_analysis import local_slopes

    rng = np.random.default_rng(4)
    a = np.exp(rng.uniform(-5, 0, size=6))
    edge = np.exp(rng.uniform(-6, -1, size=6))
    edges = np.stack([edge, edge * rng.uniform(0.3, 0.9, 6), edge * rng.uniform(1.1, 3, 6)], 1)
    s = local_slopes(a, edges)
    order = np.argsort(a)
    la, le = np.log(a[order]), np.log(edges[order, 0])
    np.testing.assert_allclose(s[:, 0], np.diff(le) / np.diff(la), rtol=1e-12)
    assert np.all(s[:, 1] < s[:, 0]) and np.all(s[:, 0] < s[:, 2])
    perm = rng.permutation(6)  # the rows' order in the input is not the slopes' order
    np.testing.assert_allclose(local_slopes(a[perm], edges[perm]), s, rtol=1e-12)
    edges[order[2], 2] = np.inf  # an open upper end: the ranges beside it open
    s = local_slopes(a, edges)
    assert not np.isfinite(s[1, 2]) and s[1, 2] > 0  # open above
    assert not np.isfinite(s[2, 1]) and s[2, 1] < 0  # open below


def test_the_level_interval_is_three_numbers_with_or_without_two_edges():
    # findings:_spike_analysis:388:15:factor (one nan instead of three below two rows)
    from gaugedyn.experiments.adam_stability._spike_analysis import level_interval

    a = np.array([0.1, 0.2, 0.3])
    for cb in ([np.nan, np.nan, np.nan], [1e-3, np.nan, np.nan]):
        out = level_interval(a, np.array(cb))
        assert len(out) == 3 and not np.any(np.isfinite(out))
    est, low, high = level_interval(a, np.array([1e-3, 2e-3, 4e-3]))
    assert low <= est <= high


def _shared_builder(results: dict):
    from gaugedyn.experiments.adam_state import _analysis as sa

    return sa, sa.Builder({}, results, np.random.SeedSequence(7))


def test_a_shared_representation_table_row_is_the_primary_meanings_reading():
    # findings:_analysis:180:19:comparison (adam_state: the table filled from the other meanings)
    rng = np.random.default_rng(8)
    r = {
        m: {
            f"t2_x_{t}{sfx}": rng.normal(size=(9, 1)) + (t == "a") * k
            for t in "ab"
            for sfx in ("", "_probe")
        }
        for k, m in enumerate(("rate", "step"))
    }
    sa, b = _shared_builder(r)
    b.judge_contrast("switch.rate_difference", "t", "t2_x", 0.0, ">", "switch")
    for ro, sfx in sa.SUFFIX.items():
        j = stats.judge(
            b.measure_of("switch.rate_difference").rule("paired"),
            *b.pair("t2_x", None, ro, r["rate"]),
            threshold=0.0,
            direction=">",
            rng=b.rng(f"shared_representation.switch.rate_difference rate/{ro}"),
        )
        assert b.table["t2_x" + sfx] == [j.estimate, j.low, j.high], ro


def test_each_routes_switch_rate_is_its_own_switched_over_its_own_specialized():
    # findings:_analysis:352:49:off-by-one (adam_state: the acquisition route's count of
    # specialized checkpoints taken from the update route)
    rng = np.random.default_rng(9)
    r = {}
    for sfx in ("", "_probe"):
        for t, p in (("a", 0.7), ("b", 0.3)):
            spec = (rng.random((8, 5)) < p).astype(float)
            r[f"t2_combined_own_specialized_{t}{sfx}"] = spec
            r[f"t2_combined_own_switch_{t}{sfx}"] = spec * (rng.random((8, 5)) < 0.5)
    sa, b = _shared_builder({"rate": r})
    sa._switch(b)
    rates = {c.id: c for c in b.claims if c.kind == "measurement"}
    for sfx in sa.SUFFIX.values():
        for tag, t in (("acquisition", "a"), ("update", "b")):
            s = int(r[f"t2_combined_own_switch_{t}{sfx}"].sum())
            n = int(r[f"t2_combined_own_specialized_{t}{sfx}"].sum())
            c = rates[f"shared_representation.switch.rate.{tag}{sfx}"]
            assert f"{s} switched of {n} specialized" in c.statement
            assert c.interval == stats.proportion_ci(s, n).as_list()


def test_a_spike_boundary_scans_arrays_agree_with_its_status_codes_and_diagnostics():
    # findings:_spike_analysis:100:50:off-by-one (the edge interval's upper end read from a
    # column past the interval) and findings:_spike_analysis:102:50:comparison (the share of
    # undetermined cells counted over the determined ones)
    from gaugedyn.experiments.adam_stability import _spike_analysis as sa
    from gaugedyn.experiments.adam_stability._protocol import CODES, WINDOWS

    rows, cols, seeds = 3, 6, 12  # enough seeds for unanimous cells to close both ends
    a, c = np.array([0.05, 0.1, 0.2]), np.geomspace(1e-4, 1e-1, cols)
    st = np.full((rows, cols, seeds, len(WINDOWS)), CODES["quiet"], dtype=np.int8)
    st[:, :2] = CODES["spiky"]
    st[0, 3, :3, 0] = CODES["undetermined"]
    st[2, 1, :1, 1] = CODES["undetermined"]
    tasks = [{"kind": "1d", "n": 2.0, "start": s} for s in ("orbit", "generic")]
    results = [{"a": a, "c": c, "status": st, "steps_run": 10}] * 2
    arrays, _, diag = sa.analyse(tasks, results, np.random.SeedSequence(1))
    for start in ("orbit", "generic"):
        for w, window in enumerate(WINDOWS):
            key = f"n2_{start}_{window}"
            undetermined = (st[..., w] == CODES["undetermined"]).sum(axis=-1)  # per cell
            np.testing.assert_array_equal(arrays[f"{key}__undetermined"], undetermined / seeds)
            assert diag["systems"][key]["undetermined_cells"] == undetermined.sum()
            interval = np.array(diag["systems"][key]["boundary_interval"])
            np.testing.assert_array_equal(arrays[f"{key}__boundary_low"], interval[:, 0])
            np.testing.assert_array_equal(arrays[f"{key}__boundary_high"], interval[:, 1])
            low, edge = arrays[f"{key}__boundary_low"], arrays[f"{key}__boundary"]
            high = arrays[f"{key}__boundary_high"]
            assert np.all(np.isfinite(high)) and np.all((low <= edge) & (edge <= high))


def test_the_grid_readme_table_shows_every_finding_in_its_tasks_row_and_its_column(tmp_path):
    # findings:_grid_analysis:240:39:off-by-one (the columns named by the id past the finding)
    import json

    from gaugedyn.experiments.adam_split._grid_analysis import readme_table

    claims = [
        {
            "id": f"adam_split:{task}:{name}",
            "kind": "finding",
            "verdict": "HELD",
            "measured": 0.5 + i,
            "interval": [0.25 + i, 0.75 + i],
        }
        for i, (task, name) in enumerate(
            [("mlp", "claim"), ("mlp", "region:lag"), ("cnn", "claim"), ("cnn", "match:x:y")]
        )
    ]
    claims.append({"id": "adam_split:mlp:exact", "kind": "check", "passed": True})
    (tmp_path / "summary.json").write_text(json.dumps({"claims": claims}))
    lines = readme_table(tmp_path / "summary.json").splitlines()
    head = [h.strip() for h in lines[0].strip("|").split("|")]
    assert head == ["task", "claim", "region:lag", "match:x:y"]
    rows = {
        r.split("(")[0].strip("| "): [x.strip() for x in r.strip("|").split("|")] for r in lines[2:]
    }
    for c in claims[:4]:
        _, task, name = c["id"].split(":", 2)
        cell = rows[task][head.index(name)]
        assert cell == f"HELD {c['measured']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]"


def test_the_auxiliary_analysis_reports_the_controls_of_its_own_tasks_and_results(monkeypatch):
    # findings:_analysis:752:14:swap (auxiliary: the map's controls given the results as tasks)
    from test_auxiliary_experiment import _map, _quick

    tasks, results = _map(False, np.random.default_rng(7))
    sections = ("trajectories", "closed_form", "benefit_map", "forcing_noise", "fdt_ode", "fdt_sim")
    for section in sections:  # the sections' own claims have their own tests
        monkeypatch.setattr(aux, section, lambda *a: ({}, []))
    _, claims, _ = aux.analyse(_quick(), tasks, results, np.random.SeedSequence(3))
    want = aux.map_controls(tasks, results) + [aux.optimal_gamma_table(_quick())]
    assert [(c.id, c.passed, c.measured) for c in claims] == [
        (c.id, c.passed, c.measured) for c in want
    ]
    assert all(c.passed for c in claims)


def _plateau(loss, index=1, distance=1e-3, error=1e-9):
    return {
        "loss": loss,
        "index": index,
        "grad_norm": 1e-13,
        "singular": False,
        "distance": distance,
        "hessian_error": error,
    }


def test_the_landscape_judges_its_sources_plateau_ends_and_its_catalogues_shares(monkeypatch):
    # findings:_analysis:1420:14:swap (gauge: the plateau checks given the config as sources)
    # and findings:_analysis:1733:25:factor (the unresolved starts counted, not their share)
    from gaugedyn.experiments.gauge import _analysis as ga

    for part in ("_landscape_arrays_of", "_landscape_catalogue_table"):  # tested on their own
        monkeypatch.setattr(ga, part, lambda *a: {})
    for part in (
        "_landscape_control_checks",
        "_landscape_zero_mode_claims",
        "_landscape_gauge_claims",
        "_landscape_catalogue_checks",
        "_landscape_single_measurements",
    ):
        monkeypatch.setattr(ga, part, lambda *a: [])
    monkeypatch.setattr(ga, "_landscape_escape_finding", lambda sources: None)
    source = {"activation": "relu", "K": 2, "kind": "random", "seed": 0}
    plateaus = [_plateau(0.1), _plateau(0.05, error=3e-9), _plateau(0.02, distance=0.5)]
    entry = {
        "basin": {"share": 0.5, "low": 0.2, "high": 0.8, "count": 6},
        "modes": dict.fromkeys(
            ("measured", "predicted", "rotation", "gauge", "coinciding", "dead"), 0
        ),
        "unstable_rates": [0.3],
        "loss": 0.1,
        "grad_norm": 1e-13,
        "index": 1,
        "visits": 2,
        "newton": 5,
    }
    catalogue = {"entries": [entry], "unresolved": [1, 4, 7], "starts": 12, "singular": 0}
    by_kind = {
        "controls": {},
        "source": {"source": source, "plateaus": plateaus},
        "catalogue": catalogue,
        "gauge": {},
        "single": {},
    }
    tasks = [{"kind": k, "activation": "relu", "K": 2} for k in by_kind]
    config = {"near": 0.01, "min_plateau_ends": 1}
    _, claims, _ = ga.landscape(config, tasks, list(by_kind.values()), np.random.SeedSequence(4))
    claims = {c.id: c for c in claims if c is not None}
    hessian = claims["landscape.hessian_matches_reference"]
    assert hessian.measured == 3e-9 and hessian.passed
    refined = claims["landscape.plateau_ends_refined"]
    assert refined.measured == 2 and refined.passed  # the third end was never near
    assert claims["landscape.catalogue:relu:K2:unresolved"].measured == 3 / 12
    assert claims["landscape.catalogue:relu:K2:0"].measured == 0.5


def _map_result(eps: float, theory: float, ode: float) -> dict:
    w = np.full(4, eps)
    return {
        "eps_window": w,
        "closed_window": theory,
        "ode_window": ode,
        "drift_total": w,
        "diffusion_total": w,
        "drift_window": w,
        "diffusion_window": w,
        "ode_drift_total": ode,
        "ode_diffusion_total": 2.0 * ode,
        "gauge_slope": np.zeros(4),
    }


def test_a_map_cell_is_one_readings_single_task_run_less_its_auxiliary_run():
    # findings:_analysis:273:11:comparison (the other reading's cells taken instead)
    # findings:_analysis:279:25:swap (the ODE benefit as auxiliary minus single-task)
    # findings:_analysis:290:41:swap (the ODE's diffusion total as auxiliary minus single-task)
    tasks, results = [], []
    for reading, rho in (("one_output", 0.5), ("two_heads", 0.25)):
        for single, (eps, ode) in ((True, (0.3, 0.7)), (False, (0.1, 0.2))):
            tasks.append(
                {"kind": "map", "reading": reading, "single": single, "rho": rho, "sigma": 1.0}
            )
            results.append(_map_result(eps, ode, ode))
    cells = aux._map_cells(tasks, results, "one_output")
    assert list(cells) == [(0.5, 1.0)]
    c = cells[(0.5, 1.0)]
    assert c["ode"] == pytest.approx(0.5) and c["theory"] == pytest.approx(0.5)
    assert c["ode_drift_total"] == pytest.approx(0.5)
    assert c["ode_diffusion_total"] == pytest.approx(1.0)
    np.testing.assert_allclose(c["benefit"], 0.2)


def test_the_linear_diffusion_control_reads_the_one_output_runs():
    # findings:_analysis:473:11:comparison (the two-head runs read instead)
    dtot = np.array([0.9, 1.1, 1.0, 1.0])
    tasks = [{"kind": "map", "reading": "one_output", "dim": 1e9}]
    results = [{"diffusion_total": dtot, "closed_diffusion": 1.0, "closure": np.zeros(2)}]
    claims = {c.id: c for c in aux._decomposition_controls(tasks, results)}
    assert claims["forcing_noise.control_linear_diffusion"].passed
    assert claims["forcing_noise.closure"].passed


def test_the_simulated_fdt_ratio_is_the_joint_error_above_its_floor_over_the_noise_term():
    # findings:_analysis:616:17:sign (the floor L_J* added instead of subtracted)
    eta, trace, e_star, g = 0.1, 2.0, 0.25, 0.5
    rows = []
    for rho in (0.5, 1.0):
        main = np.full(5, 0.2)
        # eps_m + g eps_a = E* + 1.1 * eta Tr N / 4: the ratio is 1.1
        aux_err = (e_star + 1.1 * eta * trace / 4.0 - main) / g
        rows.append(
            (
                {"gamma": g, "eta": eta, "rho": rho},
                {
                    "eps_main": main,
                    "eps_aux": aux_err,
                    "E_star": e_star,
                    "trace": trace,
                    "ode_ratio": np.ones(5),
                },
            )
        )
    arrays: dict = {}
    aux._fdt_sim_rows("erf", "one_output", rows, arrays, 0)
    for rho in (0.5, 1.0):
        np.testing.assert_allclose(arrays[f"fdtsim_ratio_erf_one_output_rho{rho:g}_g0.5"], 1.1)


def test_the_edge_level_claims_interval_is_its_low_and_high_ends():
    # findings:_spike_analysis:418:17:off-by-one (the interval without its low end)
    from gaugedyn.experiments.adam_stability import _spike_analysis as sa

    a = np.array([0.05, 0.08, 0.2, 0.3])
    cb = np.array([1e-3, 2e-3, 3e-3, 5e-3])
    edges = {("n2", w, s): cb for w in sa.WINDOWS for s in sa.STARTS}
    claim = sa._level_claim(a, edges)
    level, low, high = claim.tolerance["level"][next(iter(claim.tolerance["level"]))]
    assert claim.measured == level
    assert tuple(claim.interval) == (low, high) and low <= level <= high


def test_the_networks_function_check_passes_at_its_tolerance_and_fails_just_beyond():
    # findings:_analysis:657:28:comparison (gauge: "<= FUNCTION_TOL" applied as "<")
    from gaugedyn.experiments.gauge import _analysis as ga
    from gaugedyn.experiments.gauge import _protocol as gp

    for change, passes in ((gp.FUNCTION_TOL, True), (np.nextafter(gp.FUNCTION_TOL, 1.0), False)):
        owner = {("mlp", "adam"): {"function_change": np.array([0.0, change])}}
        (claim,) = ga._networks_checks(owner, {})
        assert claim.id == "gauge_on_networks.function_unchanged"
        assert claim.measured == change and claim.passed is passes


def test_the_networks_transport_ratio_is_read_at_the_last_recorded_step():
    # findings:_analysis:772:47:off-by-one (gauge: the w-heavy mu_T read one step earlier)
    from gaugedyn.experiments.gauge import _analysis as ga
    from gaugedyn.experiments.gauge import _digits as dg

    seeds, steps = 3, 4
    mu_t = np.ones((seeds, steps, 2))
    mu_t[:, :, dg.A_HEAVY] = np.arange(1.0, steps + 1.0)  # 1, 2, 3, 4 over the steps
    mu_t[:, :, dg.W_HEAVY] = np.arange(2.0, 2.0 * steps + 1.0, 2.0)[None] * [[1], [2], [4]]
    d = {"change": np.ones((seeds, steps, 2)), "delta0": np.ones((seeds, 2)), "mu_T": mu_t}
    out = {c.id: c for c in ga._networks_measurements({("mlp", "gd"): d}, {})}
    # a plain reading: last a-heavy over last w-heavy per seed, 4 / (8 s) for s = 1, 2, 4
    expected = np.median([4.0 / 8.0, 4.0 / 16.0, 4.0 / 32.0])
    assert out["gauge_on_networks.transport_ratio:mlp:gd"].measured == pytest.approx(expected)


def test_the_gd_error_slope_passes_at_a_tolerance_equal_to_its_distance_from_one():
    # findings:_analysis:905:51:comparison (gauge: "within tol of 1" applied as "closer than")
    from gaugedyn.experiments.gauge._analysis import gradient_descent

    etas = [0.01, 0.02, 0.04, 0.08]
    tasks = [{"eta": e} for e in etas]
    results = [{"flow_time": 40.0, "specialization_time": 40.0 * (1 + 0.3 * e**1.2)} for e in etas]
    _, (first,) = gradient_descent({"slope_tol": 0.5, "dim": 10}, tasks, results, None)
    assert first.measured == pytest.approx(1.2) and first.passed
    at = abs(first.measured - 1.0)
    for tol, passes in ((at, True), (np.nextafter(at, 0.0), False)):
        _, (claim,) = gradient_descent({"slope_tol": tol, "dim": 10}, tasks, results, None)
        assert claim.measured == first.measured and claim.passed is passes


def _dissipation_runs():
    t = np.concatenate([[0.0], np.geomspace(1e-2, 10.0, 41)])
    out = []
    for gauge, speed in (("w-heavy", 1.0), ("a-heavy", 1.5)):
        rho = np.exp(-speed * t)
        m = 1.0 - 0.5 * np.exp(-t)
        mu_r, mu_t = np.ones_like(t), 2.0 * np.ones_like(t)
        reaction = (speed * rho) ** 2 / mu_r
        transport = (0.5 * np.exp(-t)) ** 2 / (1.0 - m * m) / mu_t
        loss = 1.0 + rho
        result = {
            "t": t,
            "loss": loss,
            "reaction": reaction,
            "transport": transport,
            "integral_reaction": 0.6 * (loss[0] - loss[-1]),
            "integral_transport": 0.4 * (loss[0] - loss[-1]),
            "rho": rho,
            "alignment": m,
            "mu_R": mu_r,
            "mu_T": mu_t,
            "specialization_time": 3.0,
        }
        out.append(({"gauge": gauge}, result))
    return [task for task, _ in out], [r for _, r in out]


def test_the_dissipation_split_passes_at_a_tolerance_equal_to_its_gap():
    # findings:_analysis:258:56:comparison (gauge: "<= split_rtol" applied as "<")
    from gaugedyn.experiments.gauge._analysis import dissipation

    tasks, results = _dissipation_runs()
    config = {"rtol_balance": 1e-6, "split_rtol": 1.0, "t_max": 10.0, "dim": 5}
    _, claims = dissipation(config, tasks, results, None)
    gap = {c.id: c.measured for c in claims}["dissipation.reaction_split"]
    assert 0.0 < gap < 1.0
    for stol, passes in ((gap, True), (np.nextafter(gap, 0.0), False)):
        _, claims = dissipation(config | {"split_rtol": stol}, tasks, results, None)
        claim = {c.id: c for c in claims}["dissipation.reaction_split"]
        assert claim.measured == gap and claim.passed is passes


def _landscape_source(activation, plateaus):
    source = {"activation": activation, "K": 2, "kind": "random", "seed": 0}
    return ({"kind": "source"}, {"source": source, "plateaus": plateaus})


def test_two_required_plateau_ends_must_come_from_both_relu_and_erf():
    # findings:_analysis:1650:42:comparison (gauge: "need < 2" taken as "need <= 2", so two
    # ends of one activation passed a claim that needs ReLU and erf)
    from gaugedyn.experiments.gauge import _analysis as ga

    config = {"near": 0.01, "min_plateau_ends": 2}
    relu_only = [_landscape_source("relu", [_plateau(0.1), _plateau(0.05)])]
    both = [_landscape_source("relu", [_plateau(0.1)]), _landscape_source("erf", [_plateau(0.2)])]
    for sources, passes in ((relu_only, False), (both, True)):
        claims = {c.id: c for c in ga._landscape_plateau_checks(sources, config)}
        refined = claims["landscape.plateau_ends_refined"]
        assert refined.measured == 2 and refined.passed is passes
    one = {
        c.id: c for c in ga._landscape_plateau_checks(relu_only, config | {"min_plateau_ends": 1})
    }
    assert one["landscape.plateau_ends_refined"].passed  # one end needs no second activation


def test_the_escape_slope_is_lambda_t_regressed_on_log_one_over_eps():
    # findings:_analysis:1669:29:swap (gauge: ln(1/eps) regressed on lambda_+ T instead)
    from gaugedyn.experiments.gauge import _analysis as ga

    eps = np.geomspace(1e-8, 1e-3, 6)
    x = np.log(1.0 / eps)
    lam = 2.0
    times = (0.96 * x + 0.3 + 0.05 * np.array([1, -1, 0, 1, -1, 0])) / lam
    escape = {"eps": eps, "lambda_plus": lam, "plus": times, "minus": times}
    plateau = _plateau(0.1) | {"kind": "saddle", "escape": escape}
    claim = ga._landscape_escape_finding([_landscape_source("relu", [plateau])])
    slope = np.polyfit(x, lam * times, 1)[0]  # the plain least-squares slope of y on x
    assert claim.measured == pytest.approx(slope, rel=1e-9)
    assert 0.95 < slope < 0.97


def test_the_finite_sample_deviation_is_each_seeds_rms_over_the_recorded_times(monkeypatch):
    # findings:_analysis:323:52:off-by-one (gauge: the deviations reshaped by the number of times
    # instead of the number of seeds, mixing seeds and times)
    from gaugedyn.experiments.gauge import _analysis as ga
    from gaugedyn.experiments.gauge import _protocol as gp

    def population(problem, t, dynamics="flow", **kw):  # the population runs, tested elsewhere
        s = 0.9 if dynamics == "gd" else 1.0
        decay = np.exp(-s * t)
        return {
            "t": t,
            "loss": decay,
            "alignment": (1.0 - 0.5 * decay)[:, None],
            "rho": 1.0 + decay,
            "reaction": np.stack([decay, 2 * decay], axis=-1),
            "transport": np.stack([decay**2, decay], axis=-1),
        }

    monkeypatch.setattr(ga.gt, "trajectory", population)

    config = {"eta": 0.05, "dim": 4, "strength": 3.0, "seeds": 3, "t_max": 1.0, "tolerance": 0.2}
    t = np.array([0.0, 0.25, 0.5, 1.0])
    tasks = [{"n": n, "dim": 4, "strength": 3.0} for n in (10, 100, 1000)]
    rng = np.random.default_rng(5)
    results = []
    for _ in tasks:  # 3 seeds, 4 recorded times: the two axes are told apart
        res = {"t": t}
        for k in gp.OBSERVABLES:
            res[k] = 0.5 + 0.4 * rng.random((3, t.size))
        results.append(res)
    arrays, _ = ga.finite_sample(config, tasks, results, np.random.SeedSequence(1))
    for k in gp.OBSERVABLES:
        ref = ga._metric(k, arrays[f"gd_{k}"])
        plain = [
            [np.sqrt(np.mean((ga._metric(k, seed) - ref) ** 2)) for seed in res[k]]
            for res in results
        ]
        np.testing.assert_allclose(arrays[f"deviation_{k}"], plain, rtol=1e-12)


def test_the_gauge_in_training_ratio_fit_is_log_ratio_on_log_d():
    # findings:_analysis:537:22:swap (the stored fit of log D on log ratio instead)
    from gaugedyn.experiments.gauge import _analysis as ga

    dims = [10, 20, 40, 80, 160, 320]
    tasks, results = [], []
    for D in dims:
        for g, scale in (("w-heavy", 3.0 * D**2), ("a-heavy", 1.0)):
            tasks.append({"gauge": g, "dim": D})
            ts = scale * np.array([0.9, 1.0, 1.1, 1.0, 0.95, 1.05])
            results.append(
                {"specialization_time": ts, "run_time": 1e12, "theory_time": scale, "steps": [1]}
            )
    config = {"dims": dims, "n_factor": 4, "seeds": 6, "horizon": 10.0, "exponent_tolerance": 0.2}
    arrays, _ = ga.gauge_in_training_scaling(config, tasks, results, np.random.SeedSequence(3))
    slope, intercept = arrays["fit"][:2]
    assert slope == pytest.approx(2.0, abs=1e-9)  # ratio = 3 D^2 exactly (equal medians' scale)
    assert intercept == pytest.approx(np.log(3.0), abs=1e-9)
    assert arrays["fit_theory"][0] == pytest.approx(2.0, abs=1e-9)


def test_the_trajectory_claim_reports_the_largest_mean_distance_in_standard_errors():
    # findings:_analysis:111:20:swap (the standard error over the distance reported instead)
    time = np.array([0.0, 0.5, 1.0])
    sims = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])  # mean 1, standard error exactly 1
    results, tasks = [], []
    for far in (3.0, 5.0):  # |mean - ODE| / standard error: 3 and 5 (the largest over runs: 5)
        ode = np.array([1.0 + 9.0, 1.0 - far, 1.0 + 2.0])  # t = 0 is before T_MIN: not read
        tasks.append(
            {
                "kind": "trajectory",
                "activation": "erf",
                "reading": "r",
                "backend": "chain",
                "dim": int(far),
            }
        )
        results.append(
            {"t": time}
            | {f"eps_{k}": sims for k in ("main", "aux")}
            | {f"ode_{k}": ode for k in ("main", "aux")}
            | {f"ode_no_noise_{k}": ode for k in ("main", "aux")}
        )
    _, claims = aux.trajectories(tasks, results)
    statement = {c.id: c for c in claims}["trajectory.erf"].statement
    assert statement.endswith("(largest |mean - ODE| / standard error 5.00)")


def test_the_linear_diffusion_control_passes_at_four_and_a_half_standard_errors():
    # findings:_analysis:495:12:comparison (the control failed at exactly its 4.5 bound)
    tasks = [{"kind": "map", "reading": "one_output", "dim": 10}]
    for shift, passes in ((4.5, True), (4.5 + 1e-9, False)):
        # mean shift, standard error exactly 1 (sqrt(2) / sqrt(2)); closed form 0: no correction
        dtot = np.array([shift - 1.0, shift + 1.0])
        results = [{"diffusion_total": dtot, "closed_diffusion": 0.0, "closure": np.zeros(2)}]
        c = {c.id: c for c in aux._decomposition_controls(tasks, results)}[
            "forcing_noise.control_linear_diffusion"
        ]
        assert c.passed is passes, (shift, c.measured)


def test_the_slope_claim_counts_the_primary_readings_rows_with_an_edge():
    # findings:_spike_analysis:370:77:off-by-one (every row counted, not the beta1 >= 0.9 ones)
    from gaugedyn.experiments.adam_stability import _spike_analysis as sp

    a = np.array([0.02, 0.04, 0.06, 0.1, 0.3, 0.5])  # 1 - beta1: four rows with beta1 >= 0.9
    edge = 0.5 * a**3
    edge[1] = np.nan  # one primary row without an edge
    edges = {
        ("n2", w, s): edge * (1.0 + 0.1 * i) for i, w in enumerate(sp.WINDOWS) for s in sp.STARTS
    }
    c = sp._slope_claim("spike_boundary.cubic_quadratic", "x", "n2", a, edges, (2.0, 4.0), 3.0)
    primary = next(k for k in c.tolerance["slopes"] if f"slope ({k})" in c.statement)
    assert primary.split(", ")[1] == sp.ROWSETS[0]
    assert ", 3 rows); claim slope" in c.statement


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_task_constant_has_an_interval_from_two_rows_with_an_edge(n):
    # findings:_spike_analysis:300:7:comparison (two rows taken as too few for an interval)
    from gaugedyn.experiments.adam_stability._spike_analysis import task_C

    a = np.linspace(0.1, 0.5, n + 1)
    cb = 2.0 * a * np.exp(np.linspace(-0.5, 0.5, n + 1))
    cb[-1] = np.nan  # a row without an edge is left out
    est, low, high = task_C(a, cb)
    assert np.isfinite([est, low, high]).all() and low < est < high
    assert est == pytest.approx(np.exp(np.mean(np.log(cb[:-1] / a[:-1]))), rel=1e-12)
    one = task_C(a[:1], cb[:1])  # one row: its value, no interval
    assert one[0] == pytest.approx(cb[0] / a[0], rel=1e-12) and not np.isfinite(one[1:]).any()


def test_the_fitted_level_reads_the_primary_rows_only():
    # findings:_spike_analysis:366:29:off-by-one (the level averaged over every row, not the
    # beta1 >= 0.9 rows of the primary reading)
    from gaugedyn.experiments.adam_stability import _spike_analysis as sp

    a = np.array([0.02, 0.05, 0.1, 0.3, 0.5])
    cb = 0.5 * a**3
    cb[3:] = 0.4 * a[3:]  # rows with beta1 < 0.9 far from the cubic edge: another level
    edges = {("n2", "settled", "orbit"): cb}
    keep = a <= 0.1
    want = 10 ** np.mean(np.log10(sp.turn_growth(a[keep], cb[keep])))
    every = 10 ** np.mean(np.log10(sp.turn_growth(a, cb)))
    assert not np.isclose(want, every, rtol=1e-3)  # the rows chosen decide the level
    assert sp._level({"n2": a}, edges) == pytest.approx(want, rel=1e-12)
    assert not np.isfinite(sp._level({"n3": a}, edges))


def test_the_control_band_is_closed_at_both_ends_as_the_odes_is():
    # findings:_analysis:119:63:comparison (the noise-free ODE on the band's upper end read as
    # outside it, where the ODE itself on that end reads inside)
    time = np.array([0.0, 0.5, 1.0])
    sims = np.ones((4, 3))  # every quantile 1: the band is the single value 1
    tasks, results = [], []
    for backend in ("compiled", "chain"):
        tasks.append(
            {
                "kind": "trajectory",
                "activation": "erf",
                "reading": "r",
                "backend": backend,
                "dim": 100,
            }  # fmt: skip
        )
        results.append(
            {"t": time}
            | {f"eps_{k}": sims for k in ("main", "aux")}
            | {f"ode_{k}": np.ones(3) for k in ("main", "aux")}
            | {f"ode_no_noise_{k}": np.ones(3) for k in ("main", "aux")}
        )
    _, claims = aux.trajectories(tasks, results)
    by_id = {c.id: c for c in claims}
    assert by_id["trajectory.erf"].passed  # the ODE on the band's ends: inside
    assert not by_id["trajectory.erf.control_noise_term"].passed  # so is the control: not out
    results[1]["ode_no_noise_main"] = np.array([1.0, 1.0, 1.0 + 1e-12])
    _, claims = aux.trajectories(tasks, results)
    assert {c.id: c for c in claims}["trajectory.erf.control_noise_term"].passed

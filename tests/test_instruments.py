"""Every instrument's known-answer controls pass, and fail when the instrument is broken.

For each instrument a broken version is handed to the controls (or patched where the analysis
reads it): the published spike detector's envelope stride, a reduction that drops divergence, a
boundary finder off by a cell, a slope fit in linear units, ``v`` frozen at the edge instead of
before it, a probe that reads the heads' labels, a selection by the smallest mismatch alone, a
switch rule that never sees the top change, prototype measures against the unit interval, and
each gauge and tied-beta readout. The controls that must catch it fail; the others still pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.harness import EXPERIMENTS, load_config, run_controls
from gaugedyn.harness._controls import run_control


def _config(name: str, quick: bool = True, **overrides) -> dict:
    return dict(load_config(f"simulations/{name}.toml", quick=quick, overrides=overrides).params)


def _failed(controls) -> set[str]:
    return {r["id"] for r in map(run_control, controls) if not r["passed"]}


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_declares_controls_that_pass_at_the_quick_configuration(name):
    cfg = load_config(f"simulations/{name}.toml", quick=True)
    records = run_controls(cfg.experiment, cfg.params)
    assert records and all(r["passed"] for r in records), [r for r in records if not r["passed"]]
    kinds: dict[str, set] = {}
    for r in records:
        kinds.setdefault(r["instrument"], set()).add(r["kind"])
    assert all(k == {"positive", "negative"} for k in kinds.values()), kinds


# --- the spike detector ----------------------------------------------------------------------


@pytest.mark.slow
def test_the_detector_and_boundary_controls_pass_at_the_full_configurations_sampling():
    """The published run's own grids and block sizes (the quick one is covered above)."""
    cfg = load_config("simulations/spike_boundary.toml", quick=False)
    records = run_controls(cfg.experiment, cfg.params)
    assert len(records) > 40 and all(r["passed"] for r in records), [
        r["id"] for r in records if not r["passed"]
    ]


def _envelope_reduce(curve, b, floor):
    """The published detector's sampling: the curve held at its largest value over each stride
    of about 0.077 / (1 - beta2) steps (here: 3 blocks), then reduced in blocks."""
    from gaugedyn.adam import series_blocks

    stride = 3 * b
    n = len(curve) // stride * stride
    env = np.repeat(np.max(np.reshape(curve[:n], (-1, stride)), axis=1), stride)
    return series_blocks(np.concatenate([env, curve[n:]]), b, floor)


def _no_divergence_reduce(curve, b, floor):
    from gaugedyn.adam import series_blocks

    return series_blocks(np.where(np.isfinite(curve), curve, -np.inf), b, floor)


def test_the_envelope_stride_of_the_published_detector_fails_the_settled_cycle():
    from gaugedyn.experiments.adam_stability._detector_controls import detector_controls

    config = _config("spike_boundary")
    controls = detector_controls(config)
    cycles = {c.id for c in controls if c.id.startswith("detector.map") and c.id.endswith(".cycle")}
    assert cycles and not cycles & _failed(controls)
    failed = _failed(detector_controls(config, reduce=_envelope_reduce))
    assert cycles <= failed  # every settled cycle reads quiet through the envelope


def test_a_detector_that_drops_divergence_fails_its_divergence_controls():
    from gaugedyn.experiments.adam_stability._detector_controls import detector_controls

    config = _config("spike_boundary")
    failed = _failed(detector_controls(config, reduce=_no_divergence_reduce))
    assert {f.rsplit(".", 1)[1] for f in failed} >= {"inf", "nan", "one_inf"}


def test_a_block_max_in_place_of_the_median_reads_noise_as_spiky():
    """Spread within a block is not a rise: a reduction by the block maximum (the old envelope's
    peak) fails the stationary-noise control of one decade."""
    from gaugedyn.adam import SpikeBlocks, series_blocks
    from gaugedyn.experiments.adam_stability._detector_controls import detector_controls

    def peaks(curve, b, floor):
        blocks = series_blocks(curve, b, floor)
        return SpikeBlocks(blocks.maximum, blocks.maximum, blocks.minimum, blocks.bad)

    failed = _failed(detector_controls(_config("spike_boundary"), reduce=peaks))
    assert any(f.endswith(".noise") for f in failed)


def test_the_task_path_is_controlled_through_the_training_loops_reduction():
    from gaugedyn.experiments.adam_stability._detector_controls import (
        _task_reduce,
        detector_controls,
    )

    def broken(curves, b, floor):  # blocks of the loop, shifted by half a run
        return _task_reduce(np.roll(curves, curves.shape[0] // 2, axis=0), b, floor)

    failed = _failed(detector_controls(_config("spike_boundary"), task_reduce=broken))
    assert any(f.startswith("detector.task.") for f in failed)


@pytest.mark.parametrize("sd", [0.5, 1.0])
def test_the_detector_reads_stationary_noise_up_to_one_decade_quiet_at_the_experiments_sampling(
    sd,
):
    """At every cell of the full and the quick 1-D grids with blocks of the fewest steps (where
    noise has the most chances to fake a rise), and at the longest run of the training grid,
    white log-noise of ``sd`` decades reads quiet in 5 draws of each."""
    from gaugedyn.adam import SPIKE_SAMPLING, spike_block_size, spike_block_statistics
    from gaugedyn.experiments.adam_stability._protocol import judge_run, run_steps, settle_steps

    rng = np.random.default_rng(int(10 * sd))
    cells = set()
    for quick in (False, True):
        c = _config("spike_boundary", quick)
        for rows, cols in (("one_minus_beta1", "one_minus_beta2"), ("rows_above_2", "c_above_2")):
            for a in c[rows]:
                for cc in c[cols]:
                    if int(spike_block_size(1 - a, 1 - cc)) == SPIKE_SAMPLING.block_min:
                        cells.add((a, cc))
        cells.add((max(c["task_one_minus_beta1"]), min(c["task_one_minus_beta2"])))
    worst = sorted(cells, key=lambda x: -int(run_steps(*x)))[:3] + sorted(cells)[:2]
    for a, c in worst:
        b = int(spike_block_size(1 - a, 1 - c))
        T = int(run_steps(a, c))
        for _ in range(5):
            blocks = spike_block_statistics(-8.0 + sd * rng.standard_normal(T), b)
            settled, transient = judge_run(blocks, a, c, -300.0, int(settle_steps(a, c)))
            assert settled["status"] == "quiet", (a, c, float(settled["max_rise"]))


def test_a_boundary_finder_off_by_a_cell_and_a_slope_in_linear_units_fail():
    from gaugedyn.experiments.adam_stability._bisect import row_edges
    from gaugedyn.experiments.adam_stability._detector_controls import boundary_controls
    from gaugedyn.experiments.adam_stability._spike_analysis import slope_judgement

    config = _config("spike_boundary")

    def shifted(c, *cells):
        return row_edges(c, *cells) * (c[1] / c[0])

    def linear(a, cb, band, fid):
        return slope_judgement(np.exp(a), np.exp(cb), band, fid)

    assert _failed(boundary_controls(config, finder=shifted)) == {"boundary.known_edges"}
    assert "boundary.slope" in _failed(boundary_controls(config, fit=linear))


# --- adam_edge ---------------------------------------------------------------------------------


def test_freezing_v_at_the_edge_fails_the_quadratic_control_and_before_it_passes():
    from gaugedyn.experiments.adam_stability import _freeze
    from gaugedyn.experiments.adam_stability._edge_controls import freeze_controls

    config = _config("adam_edge")

    def at_edge(model, lr, b1, b2, steps, fraction, **kw):
        return _freeze.freeze_arms(model, lr, b1, b2, steps, 0.9, **kw)

    assert not _failed(freeze_controls(config))
    failed = _failed(freeze_controls(config, arms=at_edge))
    assert failed == {
        f"freeze.quadratic:b{b:g}:f{f:g}"
        for b in config["beta1s"]
        for f in config["freeze_fractions"]
    }


@pytest.mark.parametrize("beta1", [0.5, 0.9])
def test_the_at_edge_arm_reads_the_mechanism_and_its_absence_alike(beta1):
    """Today's reading (the frozen copy's lr S / thr after the freeze, ``frozen_v_rises``) says
    'no rise' both where v is the only mechanism and where there is none; frozen before the
    edge, the time to the edge tells them apart."""
    from gaugedyn.experiments.adam_stability._freeze import (
        FREEZE_BEFORE,
        delay,
        diagonal_quadratic_model,
        edge_times,
        freeze_arms,
        frozen_rise,
        sharpening_model,
    )

    lr, b2, steps = 1e-2, 0.99, 3000

    def both(fraction):
        quad = freeze_arms(diagonal_quadratic_model(), lr, beta1, b2, steps, fraction)
        fixed = freeze_arms(sharpening_model(lr, beta1), lr, beta1, b2, steps, fraction, fixed=1.0)
        return quad, fixed

    quad, fixed = both(0.9)
    assert frozen_rise(quad) <= 0 and frozen_rise(fixed) <= 0  # both: "no rise"
    assert delay(quad) == delay(fixed) == 0  # both: on the edge at once
    quad, fixed = both(FREEZE_BEFORE)
    assert edge_times(quad)[1] == -1 and delay(quad) > 0 and delay(fixed) == 0


def test_the_edge_finder_and_readouts_fail_when_broken(monkeypatch):
    from gaugedyn.experiments.adam_stability import _edge_analysis, _protocol
    from gaugedyn.experiments.adam_stability._edge_controls import readout_controls

    config = _config("adam_edge")
    monkeypatch.setattr(_protocol, "edge_start", lambda out, task: int(out["lanczos_step"][0]))
    monkeypatch.setattr(_edge_analysis, "period_two", lambda y: 0.0)
    monkeypatch.setattr(
        _edge_analysis, "quadratic_separation", lambda r: float(np.log10(np.max(r["sharpness"])))
    )
    monkeypatch.setattr(_edge_analysis, "censored_delay", lambda ta, tf, end: float(tf - ta))
    failed = _failed(readout_controls(config))
    assert {
        "edge.found",
        "edge.never",
        "period_two.alternation",
        "separation.equal",
        "window.frozen_never",
    } <= failed


# --- shared_representation -------------------------------------------------------------------


def test_a_probe_that_reads_the_heads_labels_fails_the_planted_control():
    from gaugedyn.experiments.adam_state import _model as sm
    from gaugedyn.experiments.adam_state._controls import readout_controls

    config = _config("shared_representation")

    def leaky(net, world, ev, gains, R):
        r = sm.readouts(net, world, ev, gains, R)
        x = world.inputs(ev.z, ev.xi, gains)
        labels = sm._expanded(ev.z, R)  # the targets the heads are trained on
        leak = 1.0 - ((labels - labels) ** 2).mean(dim=1) + 0 * x.sum()
        return {"heads": r["heads"], "probe": leak}

    assert not _failed(readout_controls(config))
    assert _failed(readout_controls(config, readout=leaky)) == {"readouts.planted"}


def test_a_selection_by_the_smallest_mismatch_alone_and_a_blind_switch_rule_fail(monkeypatch):
    from gaugedyn.experiments.adam_state import _pulses
    from gaugedyn.experiments.adam_state._controls import selection_controls, switch_controls

    config = _config("shared_representation")

    def by_mismatch(rows):
        best = min(rows, key=lambda r: r["mismatch"])
        return {"choice": best["name"]}

    assert _failed(selection_controls(config, choose=by_mismatch)) == {
        "selection.known",
        "selection.none",
    }
    monkeypatch.setattr(
        _pulses,
        "spec_of",
        lambda r, c: (np.zeros((1, 1)), np.ones((1, 1), dtype=bool)),  # favoured always on top
    )
    assert _failed(switch_controls(config)) == {"switch.flipped"}


def test_a_dose_rule_taking_the_strongest_and_a_gate_always_open_fail():
    from gaugedyn.experiments.adam_state._controls import dose_controls, match_controls

    config = _config("shared_representation")
    assert not _failed(dose_controls()) and not _failed(match_controls(config))
    strongest = lambda fractions: list(fractions)[-1]  # noqa: E731
    assert _failed(dose_controls(strongest)) == {"dose.known", "dose.tie"}
    nearest_above = lambda f: min(  # noqa: E731
        f, key=lambda k: (abs(f[k] - 0.5), -list(f).index(k))
    )  # ties to the stronger
    assert _failed(dose_controls(nearest_above)) == {"dose.tie"}
    always = lambda b: dict.fromkeys(b.meanings, True)  # noqa: E731
    assert _failed(match_controls(config, matched=always)) == {"control_match.unmatched"}


# --- prototypes ------------------------------------------------------------------------------


def test_prototype_measures_against_the_unit_interval_or_by_count_fail():
    from gaugedyn.experiments.prototypes import _measures as pm
    from gaugedyn.experiments.prototypes._controls import controls

    config = _config("prototypes")

    def unit_interval(x, y, w, b, a, c):
        out = pm.measure_runs(x, y, w, b, a, c)
        p = out["prototypes"]
        out["outside_fraction"] = np.mean((p < -1) | (p > 2), axis=1)  # not the data's hull
        return out

    def counted(x, y, w, b, a, c):
        out = pm.measure_runs(x, y, w, b, a, c)
        out["usage_nearest"] = np.ones_like(out["usage_nearest"])  # every prototype "used"
        return out

    assert not _failed(controls(config))
    assert _failed(controls(config, measure=unit_interval)) == {"expulsion.two_outside"}
    assert _failed(controls(config, measure=counted)) == {"coverage.collapsed"}


# --- the gauge system ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name", "broken", "fails"),
    [
        ("_controls", "specialization", lambda Q, R, T: np.ones(1), "specialization.unaligned"),
        ("_controls", "owners", lambda a, Q, R, T, b: np.zeros(1, int), "owner.tie"),
        ("_controls", "pruning_time", lambda t, rho, tol: np.full(1, 4.0), "pruning.recovers"),
        ("_paths", "hausdorff", lambda P, Q: 0.0, "path.shifted"),
        ("_analysis", "clock_at", lambda t, c, ts: 0.0, "clock.constant"),
        ("_analysis", "classify", lambda o, lv, r, f: 0, "selection.tie"),
        ("_digits", "gap", lambda units, lr, rel: 0.0, "prediction_gap.off"),
    ],
)
def test_each_gauge_instrument_broken_fails_its_control(monkeypatch, module, name, broken, fails):
    import importlib

    from gaugedyn.experiments.gauge._controls import ALL, controls

    mod = importlib.import_module(f"gaugedyn.experiments.gauge.{module}")
    assert not _failed(controls(*ALL))
    monkeypatch.setattr(mod, name, broken)
    assert fails in _failed(controls(*ALL))


def test_a_power_law_fit_and_time_matching_broken_fail(monkeypatch):
    from gaugedyn.experiments.gauge import _controls as gc

    class Fit:
        slope = 1.0

    monkeypatch.setattr(gc, "loglog_fit", lambda x, y: Fit())
    nearest = lambda t, ref: np.abs(ref[None, :] - t[:, None]).argmin(axis=1)  # noqa: E731
    monkeypatch.setattr(gc, "match_times", nearest)  # matches any time, on the grid or not
    failed = _failed(gc.controls("power_law", "time_matching"))
    assert failed == {"power_law.square", "power_law.flat", "times.off_grid"}


def test_the_dissipation_split_broken_fails(monkeypatch):
    from gaugedyn.experiments.gauge import _analysis
    from gaugedyn.experiments.gauge._controls import controls

    real = _analysis.split_from_trajectory
    monkeypatch.setattr(
        _analysis, "split_from_trajectory", lambda *a: tuple(2 * x for x in real(*a))
    )
    assert _failed(controls("dissipation")) == {"dissipation.decay"}


# --- tied-beta Adam --------------------------------------------------------------------------


def test_the_tied_beta_readouts_broken_fail(monkeypatch):
    from gaugedyn.experiments.adam_split import _gauge_analysis, _grid
    from gaugedyn.experiments.adam_split._controls import gauge_controls, grid_controls

    real = _grid.run_measures

    def swapped(r, skip):  # the lag and remainder shares swapped
        m = dict(real(r, skip))
        for c in ("current", "memory"):
            for k in ("squared", "norm"):
                a, b = f"share_lag_{k}_{c}", f"share_residual_{k}_{c}"
                m[a], m[b] = m[b], m[a]
        return m

    monkeypatch.setattr(_grid, "run_measures", swapped)
    monkeypatch.setattr(_grid, "roughness", lambda u, skip=0: 0.0)
    failed = _failed(grid_controls({"skip": 0.1}))
    assert {"split.no_lag", "roughness.alternating"} <= failed
    monkeypatch.setattr(_gauge_analysis, "gap_per_seed", lambda a, i, m: np.zeros(3))
    assert "gauge_gap.e" in _failed(gauge_controls({}))


def test_a_run_without_v_fails_the_time_to_edge_control():
    """With the preconditioner fixed in place of Adam's v, the diagonal quadratic never reaches
    the edge at any beta2, and its time-to-edge control fails; the sharpening model's passes."""
    from gaugedyn.experiments.adam_stability import _freeze
    from gaugedyn.experiments.adam_stability._edge_controls import time_controls

    config = _config("adam_edge")

    def no_v(model, lr, b1, b2, steps, fraction, **kw):
        return _freeze.freeze_arms(model, lr, b1, b2, steps, fraction, fixed=1.0)

    assert not _failed(time_controls(config))
    assert _failed(time_controls(config, arms=no_v)) == {"time_to_edge.quadratic"}


# --- conservation laws -----------------------------------------------------------------------


def _conservation_breaks():
    from dataclasses import replace

    import gaugedyn.gauge as gauge
    from gaugedyn.experiments.conservation import _architectures, _drift

    count, rank, slope, build = (
        gauge.conservation_laws,
        gauge.decide_rank,
        _drift.slope_control,
        _architectures.build,
    )

    def unbent(spec, *a):
        return build({**spec, "family": "relu2"} if spec["family"] == "bent" else spec, *a)

    return {
        "span alone": (
            gauge,
            "conservation_laws",
            lambda *a, **k: count(*a, **k | {"max_depth": 1}),
        ),
        "brackets always": (
            gauge,
            "conservation_laws",
            lambda *a, **k: count(*a, **{n: v for n, v in k.items() if n != "max_depth"}),
        ),
        "bend not applied": (_architectures, "build", unbent),
        "tolerance ignored": (gauge, "decide_rank", lambda a, rtol: rank(a, 1e-9)),
        "gap misread": (
            gauge,
            "decide_rank",
            lambda a, rtol: (lambda d: (replace(d[0], gap=d[0].gap / 1e3), d[1]))(rank(a, rtol)),
        ),
        "all first order": (_drift, "slope_control", lambda *a: slope(*a[:-1], True)),
        "all second order": (_drift, "slope_control", lambda *a: slope(*a[:-1], False)),
    }


@pytest.mark.parametrize(
    "break_,fails",
    [
        ("span alone", {"count.known"}),
        ("brackets always", {"count.brackets"}),
        ("bend not applied", {"count.bent"}),
        ("tolerance ignored", {"rank.coarse"}),
        ("gap misread", {"rank.fine", "rank.coarse"}),
        ("all first order", {"slope.second_order"}),
        ("all second order", {"slope.first_order"}),
    ],
)
def test_the_conservation_instruments_broken_fail(monkeypatch, break_, fails):
    """The count without its Lie brackets (the fields' span alone reads 4 laws where there are
    3) or always with them, a symmetry-breaking bend not applied, a rank decision that ignores
    its tolerance or misreads its gap, and a slope fit that reads every drift as first (or
    second) order each fail their control; the other controls of the instrument pass."""
    from gaugedyn.experiments.conservation._controls import controls

    config = _config("conservation_laws")
    family = next(iter(fails)).split(".")[0]
    mine = [c for c in controls(config) if c.id.startswith(family + ".")]
    assert not _failed(mine)
    monkeypatch.setattr(*_conservation_breaks()[break_])
    assert _failed(mine) == fails


# --- the landscape -----------------------------------------------------------------------------


def _lenient_finder(orig):
    return lambda t, L, flatness, min_span: orig(t, L, flatness=10 * flatness, min_span=min_span)


def _one_iteration(orig):
    return lambda start, **k: orig(start, **{**k, "max_iter": 1})


def _double_slope(orig):
    return lambda *a, **k: (e := orig(*a, **k)) | {"slope": 2 * e["slope"]}


def _loose_identity(orig):
    return lambda x, y, **k: orig(x, y, rtol=10.0)


@pytest.mark.parametrize(
    "name, broken, fails",
    [
        ("flat_stretches", _lenient_finder, {"landscape.finder_present"}),
        (
            "critical_point",
            _one_iteration,
            {"landscape.refiner_saddle", "landscape.escape_present"},
        ),
        ("escape_times", _double_slope, {"landscape.escape_present"}),
        ("same_point", _loose_identity, {"landscape.dedup_absent"}),
    ],
)
def test_each_landscape_instrument_broken_fails_its_control(monkeypatch, name, broken, fails):
    """A plateau finder ten times too lenient, a refiner that stops after one iteration (its
    saddle feeds the escape control too), an escape time read at twice its slope and an identity
    that merges functions ten times too far apart each fail their control."""
    from gaugedyn.experiments.gauge import _controls as gc
    from gaugedyn.experiments.gauge import _landscape as lr

    config = _config("landscape")
    monkeypatch.setattr(lr, name, broken(getattr(lr, name)))
    assert _failed(gc.landscape(config)) == fails


# --- the auxiliary system ------------------------------------------------------------------------


def _unsigned(cells, key, sign_of="theory"):
    """The benefit read without the theory's sign (:func:`_analysis._signed` broken)."""
    from gaugedyn.experiments.auxiliary import _protocol as pc

    chosen = [c for c in cells.values() if abs(c[sign_of]) >= pc.MAP_MIN_EFFECT]
    return np.stack([c[key] for c in chosen], axis=1), [str(i) for i in range(len(chosen))]


def _swapped(orig):
    """The split with its drift and diffusion parts swapped."""

    def cells(*a):
        swap = (("drift", "diffusion"), ("diffusion", "drift"))
        return {
            k: c | {f"{p}_{s}": c[f"{q}_{s}"] for p, q in swap for s in ("total", "window")}
            for k, c in orig(*a).items()
        }

    return cells


@pytest.mark.parametrize(
    "module, name, broken, fails",
    [
        ("_protocol", "BAND", lambda _: (0.5, 0.5), "band.on"),
        ("_analysis", "_tost_cells", lambda _: lambda v, m: m - v, "closed_form.off"),
        ("_analysis", "_signed", lambda _: _unsigned, "benefit.signs"),
        ("_analysis", "_map_cells", _swapped, "forcing.balance"),
        ("_protocol", "FDT_SIM_BAND", lambda _: (0.5, 1.5), "fdt_sim.off"),
        ("_protocol", "FDT_ODE_TOLERANCE", lambda _: 0.1, "fdt_ode.off"),
    ],
)
def test_each_auxiliary_instrument_broken_fails_its_control(
    monkeypatch, module, name, broken, fails
):
    """A band of zero width, a closed-form tolerance tested on one side only, a benefit read
    without the theory's sign, a split with drift and diffusion swapped, and FDT tolerances made
    wide each fail their control, and only it."""
    import importlib

    from gaugedyn.experiments.auxiliary._controls import controls

    config = _config("auxiliary")
    mod = importlib.import_module(f"gaugedyn.experiments.auxiliary.{module}")
    monkeypatch.setattr(mod, name, broken(getattr(mod, name)))
    assert _failed(controls(config)) == {fails}

"""spike_boundary: the compiled 1-D map, the starts, the two windows, the scan and the findings."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.adam import (
    SPIKE_SAMPLING,
    loss_floor,
    oscillating_state,
    simulate_blocks,
    simulate_losses,
    spike_block_size,
    spike_block_statistics,
)
from gaugedyn.adam._stability import adam_step
from gaugedyn.experiments.adam_stability._bisect import (
    bracket,
    cells_of_row,
    row_edge,
    significance,
)
from gaugedyn.experiments.adam_stability._protocol import (
    BANDS,
    CODES,
    NOT_SIMULATED,
    judge_run,
    probability,
    run_steps,
    settle_steps,
    upper_edge,
)
from gaugedyn.experiments.adam_stability._scan import _run_1d, start_state
from gaugedyn.experiments.adam_stability._spike_analysis import (
    _check_claim,
    _findings,
    turn_growth,
)


@pytest.mark.parametrize("n, eps", [(2.0, 0.0), (3.0, 1e-8), (6.0, 0.0)])
def test_compiled_blocks_equal_the_detectors_blocks_of_the_numpy_map(n, eps):
    """Every step enters a block: the compiled map's block statistics (blocks of 24 and 30
    steps) equal :func:`gaugedyn.adam.spike_block_statistics` of the numpy map's per-step
    losses."""
    x0 = np.array([[0.003, -0.002], [0.01, 0.004]])
    a, c = np.array([0.1, 0.05]), np.array([0.01, 0.001])
    size = np.array([24, 30])
    blocks, used = simulate_blocks(x0, 0, 0, a, c, n, 1e-2, eps, 3000, size, True)
    assert used.tolist() == [3000 // 24, 3000 // 30]
    for g in range(2):
        for lane in range(2):
            ell = simulate_losses(x0[g, lane], a[g], c[g], n, 1e-2, eps, 3000)
            want = spike_block_statistics(ell, int(size[g]), loss_floor(n))
            for got, ref in zip(blocks, want):
                got = np.asarray(got)[: used[g], g, lane]
                if n == 2.0:  # the same floating-point operations in the same order
                    np.testing.assert_array_equal(got, ref)
                else:  # x^(n-1): numba's pow and numpy's may differ in the last place
                    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_orbit_start_is_on_the_period_two_orbit_and_generic_start_is_not():
    rng = np.random.default_rng(0)
    a = np.array([[0.05, 0.2]])
    x, m, v, bias = start_state("orbit", a, 2.0, 1e-2, 0.0, rng)
    st = oscillating_state(a, 2.0, 1e-2, 0.0)
    assert not bias
    np.testing.assert_allclose(np.abs(x), st["A"], rtol=1.01e-2)
    np.testing.assert_allclose(m * np.sign(x), st["M"])
    x1, m1, v1 = adam_step(np.sign(x) * st["A"], m, v, a, 0.01, 2.0, 1e-2, 0.0)
    np.testing.assert_allclose(x1, -np.sign(x) * st["A"], rtol=1e-12)  # one period-2 step
    np.testing.assert_allclose(v1, v, rtol=1e-12)
    g = start_state("generic", a, 2.0, 1e-2, 0.0, rng)
    assert g[3] and np.all(g[1] == 0) and np.all(g[2] == 0)


def test_windows_settled_ignores_a_transient_spike_that_the_transient_reading_counts():
    a, c = 0.1, 0.01
    W = int(settle_steps(a, c))
    T = int(run_steps(a, c))
    b = int(spike_block_size(1 - a, 1 - c))
    ell = np.full(T, -6.0)
    ell[W // 2 : W // 2 + 5 * b] = -2.0  # a spike during the start-up, five blocks wide
    blocks = spike_block_statistics(ell, b, loss_floor(2.0))
    settled, transient = judge_run(blocks, a, c, loss_floor(2.0), W)
    assert settled["status"] == "quiet" and transient["status"] == "spiky"
    # the first block more than half inside the spike
    assert W // 2 - b // 2 <= transient["first_spike"] <= W // 2
    assert settled["judged"] and T >= W + 5 * 300


def test_probability_leaves_out_undetermined_and_diverged_seeds():
    q, s, u, d = (CODES[k] for k in ("quiet", "spiky", "undetermined", "diverged"))
    st = np.array([[q, s, u, d], [u, u, d, d], [s, s, q, u]])
    np.testing.assert_allclose(probability(st), [0.5, np.nan, 2 / 3])


def test_scan_stops_below_the_first_spiky_cell_and_finds_the_quadratic_edge():
    task = {
        "n": 2.0,
        "start": "orbit",
        "a": [0.2],
        "c": [3e-3, 1e-2, 0.03, 0.1],
        "seeds": 2,
        "eps": 0.0,
        "lr": 1e-2,
        "spikes": list(SPIKE_SAMPLING[:3]),
    }
    r = _run_1d(task, np.random.SeedSequence(3))
    st = r["status"][0, :, :, 0]  # (cols, seeds), settled window
    top_spiky = np.flatnonzero(probability(st) >= 0.5)
    assert top_spiky.size  # the quadratic at a = 0.2 is spiky below c ~ 0.02 (settled)
    j = top_spiky[-1]
    assert np.all(r["status"][0, :j] == NOT_SIMULATED) or j == 0
    assert np.all(probability(st[j + 1 :]) < 0.5)
    assert np.all(np.isnan(r["bisect_c"]))  # no bisection asked for


def test_the_scan_bisects_each_row_to_its_width_between_its_bracket():
    """The 1-D quadratic at a = 0.2: the coarse bracket is halved in log c until it is
    narrower than bisect_decades, every bisection cell inside the bracket, and the edge lies
    in the final bracket."""
    c = [3e-3, 1e-2, 0.03, 0.1]
    task = {
        "n": 2.0,
        "start": "orbit",
        "a": [0.2],
        "c": c,
        "seeds": 2,
        "eps": 0.0,
        "lr": 1e-2,
        "bisect_decades": 0.1,
        "spikes": list(SPIKE_SAMPLING[:3]),
    }
    r = _run_1d(task, np.random.SeedSequence(3))
    bc = r["bisect_c"][0]
    bc = bc[np.isfinite(bc)]
    assert 1 <= bc.size <= 8 and r["rounds"] >= 1
    br = bracket(*cells_of_row(c, r["status"], r["bisect_c"], r["bisect_status"], 0, 0))
    assert br is not None and np.log10(br[1] / br[0]) <= 0.1
    edge, low, high = row_edge(
        *cells_of_row(c, r["status"], r["bisect_c"], r["bisect_status"], 0, 0)
    )
    assert br[0] * (1 - 1e-12) <= edge <= br[1] * (1 + 1e-12)
    spiky = [x for x in c if x <= br[0]]
    assert bc.min() >= max(spiky) and bc.max() <= min(x for x in c if x > br[0])


def test_row_edge_interval_from_unanimous_cells():
    s, q = CODES["spiky"], CODES["quiet"]
    c = np.array([1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3])
    st = np.array([[s] * 8, [s] * 7 + [q], [s] * 4 + [q] * 4, [q] * 7 + [s], [q] * 8])
    edge, low, high = row_edge(c, st)
    assert low == 1e-4 and high == 1.6e-3  # 7 of 8 is not significant at 95%
    assert 4e-4 <= edge <= 8e-4  # p = 0.5 at 4e-4, 1/8 at 8e-4: just above 4e-4
    assert edge == pytest.approx(4e-4)
    np.testing.assert_array_equal(significance(st), [1, 0, 0, 0, -1])
    assert np.isnan(row_edge(c, np.full((5, 8), q))[0])  # never spiky
    assert np.isnan(row_edge(c, np.full((5, 8), s))[0])  # spiky at the top
    e = row_edge(c[3:], st[3:] * 0 + np.array([[s] * 8, [q] * 2 + [s] * 6]))
    assert np.isnan(e[0])  # spiky at the top: the cell above is missing


def _wobble(x, k=0):
    """``x`` times ``1 +- 1e-7`` alternating over rows (shifted by ``k``): edges on a curve up to
    rounding-sized noise, so that no two rows tie (ties are a degenerate sample for the median
    rules) while every level and slope stays the curve's to 1e-7."""
    x = np.asarray(x, float)
    return x * (1 + 1e-7 * (-1.0) ** (np.arange(x.size) + k))


def _edges(a, cb):
    return {
        (n, w, s): _wobble(cb[n], i)
        for i, n in enumerate(cb)
        for w in ("settled", "transient")
        for s in ("orbit", "generic")
    }


def test_findings_on_built_edges_under_every_reading():
    a = np.logspace(-2, -0.3, 13)  # 8 rows with beta1 >= 0.9: a slope and a median need 6
    cubic, linear = 15 * a**3, 0.3 * a
    names = ["n2", "n4", "n6"]
    a_of = dict.fromkeys(names, a)
    got = {
        f.id: f
        for f in _findings(
            names,
            a_of,
            _edges(a, {"n2": cubic, "n4": linear, "n6": 0.03 * a}),
            np.random.SeedSequence(7),
        )
    }
    assert got["spike_boundary.cubic_quadratic"].verdict == "HELD"
    assert set(got["spike_boundary.cubic_quadratic"].readings.values()) == {"HELD"}
    assert len(got["spike_boundary.cubic_quadratic"].readings) == 8
    assert got["spike_boundary.near_linear:n4"].verdict == "HELD"
    assert got["spike_boundary.C_moves_with_n"].verdict == "HELD"
    assert got["spike_boundary.edge_level"].kind == "measurement"
    # C per n: c_b / a^k with the slope fixed at the law's k, every reading
    C = got["spike_boundary.near_linear:n6"].tolerance["C"]
    assert len(C) == 8 and all(v[0] == pytest.approx(0.03, rel=1e-6) for v in C.values())
    c2 = got["spike_boundary.cubic_quadratic"].tolerance["C"]["settled, beta1>=0.9, orbit start"]
    assert c2[1] <= 15 <= c2[2] and c2[0] == pytest.approx(15, rel=1e-6)
    assert "C = c_b / (1 - beta1)^3" in got["spike_boundary.cubic_quadratic"].statement
    bad = {
        f.id: f.verdict
        for f in _findings(
            names,
            a_of,
            _edges(a, {"n2": linear, "n4": cubic, "n6": cubic}),
            np.random.SeedSequence(7),
        )
    }
    assert bad["spike_boundary.cubic_quadratic"] == "NOT HELD"
    assert bad["spike_boundary.near_linear:n4"] == "NOT HELD"
    assert bad["spike_boundary.C_moves_with_n"] == "NOT HELD"
    # the readings disagree when the transient window moves the edge
    mixed = _edges(a, {"n2": cubic, "n4": linear, "n6": 0.03 * a})
    for s in ("orbit", "generic"):
        mixed[("n2", "transient", s)] = _wobble(linear)
    dep = {f.id: f for f in _findings(names, a_of, mixed, np.random.SeedSequence(7))}
    c = dep["spike_boundary.cubic_quadratic"]
    assert c.verdict == "depends on the reading"
    assert c.readings["settled, beta1>=0.9, orbit start"] == "HELD"
    assert c.readings["transient, all rows, generic start"] == "NOT HELD"


def test_edge_level_is_the_theory_level_on_its_own_level_curve():
    """An edge drawn exactly on the theory's level curve 2 pi delta/omega = L gives level L."""
    from scipy.optimize import brentq

    a = np.logspace(-2, np.log10(0.05), 7)  # a median needs 6 rows
    for L in (1.0, 2.8):  # on the small-c branch, below the ridge of 2 pi delta/omega (~3.4)
        cb = np.array(
            [
                np.exp(
                    brentq(
                        lambda lc, ai=ai, L=L: turn_growth(ai, np.exp(lc)) - L,
                        np.log(1e-12),
                        np.log(ai**2),
                    )
                )
                for ai in a
            ]
        )
        np.testing.assert_allclose(turn_growth(a, cb), L, rtol=1e-6)
        f = {
            x.id: x
            for x in _findings(["n2"], {"n2": a}, _edges(a, {"n2": cb}), np.random.SeedSequence(1))
        }
        lv = f["spike_boundary.edge_level"]
        assert lv.tolerance["level"]["settled, beta1>=0.9, orbit start"][0] == pytest.approx(L)
        assert lv.measured == pytest.approx(L) and lv.verdict is None
        per_row = lv.tolerance["per_row"]
        assert per_row["one_minus_beta1"] == sorted(a) and per_row["level"] == pytest.approx(
            [L] * a.size
        )
    # an edge drifting off the level curve: the per-row levels and the statement show it
    drifting = cb * np.linspace(1.0, 0.5, a.size)
    f = {
        x.id: x
        for x in _findings(
            ["n2"], {"n2": a}, _edges(a, {"n2": drifting}), np.random.SeedSequence(1)
        )
    }
    lv = f["spike_boundary.edge_level"]
    rows = lv.tolerance["per_row"]["level"]
    assert rows == pytest.approx(list(turn_growth(a, drifting)))
    assert rows[0] == pytest.approx(L) and rows[-1] < rows[0]
    assert f"per row from {rows[0]:.3g} at 1 - beta1 = {a[0]:.3g} to {rows[-1]:.3g}" in lv.statement


def test_upper_edge_and_check_claim():
    c = np.logspace(-7, 0, 40)
    a = np.logspace(-2, -0.3, 6)
    prob = (c[None, :] < a[:, None] ** 3).astype(float)
    np.testing.assert_allclose(np.log(upper_edge(prob, c)), 3 * np.log(a), atol=0.25)
    assert np.isnan(upper_edge(np.ones((1, 5)), np.arange(1, 6.0))[0])  # spiky to the top
    gap = np.array([[1.0, np.nan, 0.0]])
    assert np.isnan(upper_edge(gap, np.arange(1, 4.0))[0])  # the cell above has no probability
    assert BANDS["cubic"] == (2.0, 4.0)
    ok = _check_claim({"c_sim": np.array([0.1, 0.2]), "c_theory": np.array([0.101, 0.2])})
    wrong = _check_claim({"c_sim": np.array([0.1, np.nan]), "c_theory": np.array([0.1, 0.2])})
    assert ok.passed and not wrong.passed


def test_task_scan_uses_the_stored_calibration_and_judges_every_copy():
    from gaugedyn.experiments.adam_stability._calibration import GRID, TASKS
    from gaugedyn.experiments.adam_stability._protocol import SCAN_DESIGN, TASK_DESIGN
    from gaugedyn.experiments.adam_stability._scan import _run_task
    from gaugedyn.experiments.adam_stability._spike_analysis import min_edge_seeds
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    full = {k: p.default for k, p in EXPERIMENT.params.items()}
    quick = {
        k: (p.quick if p.quick is not None else p.default) for k, p in EXPERIMENT.params.items()
    }
    for config in (full, quick):
        tasks = [t for t in EXPERIMENT.tasks(config) if t["kind"] == "task"]
        # quick previews the same tasks, each as its row groups (a family task runs its own
        # program, with its own eps)
        programs = {c.get("task", n): n for n, c in TASKS.items()}
        assert list(dict.fromkeys(t["task"] for t in tasks)) == list(programs)
        for task in tasks:
            cal = TASKS[programs[task["task"]]]
            assert task.get("eps") == cal.get("eps")
            assert (task["lr"], task["n_samples"], task["hidden"]) == (
                cal["lr"],
                cal["n_samples"],
                cal["hidden"],
            )
            # the full grid is the third design (SCAN_DESIGN, scanned), the quick one's rows
            # a subset of it and of the calibrated first design's (GRID)
            assert set(task["a"]) <= set(SCAN_DESIGN["one_minus_beta1"])
            assert task["bracket_stride"] == SCAN_DESIGN["bracket_stride"]
        assert set(tasks[0]["a"]) == set(config["task_one_minus_beta1"])
    assert set(quick["task_one_minus_beta1"]) <= set(GRID["one_minus_beta1"])
    assert set(quick["task_one_minus_beta2"]) <= set(GRID["one_minus_beta2"])
    assert full["task_one_minus_beta2"] == SCAN_DESIGN["one_minus_beta2"]
    assert full["task_seeds"] == 8 and quick["task_seeds"] < min_edge_seeds()
    assert TASK_DESIGN["seeds"] >= min_edge_seeds() and min(TASK_DESIGN["one_minus_beta1"]) == 0.01
    r = _run_task(
        {
            "task": "teacher_mse",
            "a": [0.5, 0.3],
            "c": [0.3, 0.5],
            "seeds": 2,
            "lr": 1e-2,
            "n_samples": 32,
            "hidden": 4,
            "spikes": list(SPIKE_SAMPLING[:3]),
        },
        np.random.SeedSequence(4),
    )
    assert r["status"].shape == (2, 2, 2, 2)
    assert set(np.unique(r["status"])) <= set(CODES.values())  # every copy judged
    assert r["rises"].tolist() == [2.0, 1.5, 2.5] and r["status_rises"].shape == (2, 2, 2, 2, 3)
    np.testing.assert_array_equal(r["status_rises"][..., 0], r["status"])
    spiky = r["status_rises"] == CODES["spiky"]
    assert np.all(spiky[..., 2] <= spiky[..., 0]) and np.all(spiky[..., 0] <= spiky[..., 1])
    # each copy runs its own settled run: the steps summed over copies, the longest its cell's
    aa, cc = np.meshgrid([0.5, 0.3], [0.3, 0.5], indexing="ij")
    assert r["steps_run"] == int(run_steps(aa, cc).sum()) * 2
    assert r["steps_longest"] == int(run_steps(np.array([0.3]), np.array([0.3]))[0])
    assert np.all(np.isfinite(r["final_log10_loss"]))


def test_a_copy_on_a_plateau_is_untrained_under_both_windows(monkeypatch):
    from gaugedyn.experiments.adam_stability import _batched, _scan

    T = int(run_steps(np.array([0.5]), np.array([0.3]))[0])
    b = int(spike_block_size(0.5, 0.7))
    curves = np.zeros((T, 2))
    curves[:, 1] = -np.linspace(0, 6, T)  # copy 1 falls six decades; copy 0 stays on a plateau
    blocks = [spike_block_statistics(curves[:, k], b) for k in range(2)]
    monkeypatch.setattr(_batched, "adam_step_sets", lambda *a, **k: ([blocks], curves[0].copy()))
    r = _scan._run_task(
        {
            "task": "teacher_mse",
            "a": [0.5],
            "c": [0.3],
            "seeds": 2,
            "lr": 1e-2,
            "n_samples": 8,
            "hidden": 4,
            "spikes": list(SPIKE_SAMPLING[:3]),
        },
        np.random.SeedSequence(1),
    )
    assert list(r["status"][0, 0, :, 0]) == [CODES["untrained"], CODES["quiet"]]
    assert list(r["status"][0, 0, :, 1]) == [CODES["untrained"], CODES["quiet"]]
    assert np.isnan(probability(r["status"][..., 0][:, :, :1]))[0, 0]


def test_stored_pilots_meet_the_calibration_rule_and_the_rule_can_fail():
    from gaugedyn.experiments.adam_stability._calibration import STORED_PILOTS, TASKS, rule_met

    # the calibrated tasks; the second network family's is chosen on its own pilot
    assert set(STORED_PILOTS) == {"teacher_mse", "teacher4_mse"} <= set(TASKS)
    for name in STORED_PILOTS:
        cal = TASKS[name]
        ok, why = rule_met(cal["pilot"])
        assert ok, (name, why)
        assert cal["pilot"]["lr"] == cal["lr"]
    bad = dict(TASKS["teacher_mse"]["pilot"])
    bad["settled_edge"] = [None] * (len(bad["settled_edge"]) - 2) + [0.1, 0.1]
    assert not rule_met(bad)[0]
    bad = dict(TASKS["teacher_mse"]["pilot"])
    bad["settled"] = [["untrained"] * len(bad["settled"][0])] + bad["settled"][1:]
    assert not rule_met(bad)[0]


def test_linear_on_tasks_and_C_between_tasks_are_judged_under_both_windows():
    from gaugedyn.experiments.adam_stability._spike_analysis import (
        _task_claim,
        _tasks_C_claim,
        task_C,
    )

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    wig = 1 + 0.03 * np.array([1, -1, 1, -1, 1, -1])
    lin = {("t", w, "init"): 0.5 * a * wig for w in ("settled", "transient")}
    c = _task_claim("t", a, lin)
    assert c.verdict == "HELD" and set(c.readings) == {"settled", "transient"}
    np.testing.assert_allclose(c.tolerance["C"]["settled"][0], 0.5, rtol=0.02)
    cub = dict(lin)
    cub[("t", "transient", "init")] = 3 * a**3 * wig
    d = _task_claim("t", a, cub)
    assert d.verdict == "depends on the reading" and d.readings["transient"] == "NOT HELD"
    other = {("u", w, "init"): 0.05 * a * wig[::-1] for w in ("settled", "transient")}
    same = {("u", w, "init"): 0.5 * a * wig[::-1] for w in ("settled", "transient")}
    a_of = {"t": a, "u": a}
    assert _tasks_C_claim(["t", "u"], a_of, lin | other, 41).verdict == "HELD"
    assert _tasks_C_claim(["t", "u"], a_of, lin | same, 41).verdict == "NOT HELD"
    assert np.isnan(task_C(a[:1], a[:1])[1])  # one row: no interval


def test_C_between_tasks_judges_every_pair_of_the_comparison_set():
    """Three tasks: each later task against the first is a reading (the first pair primary);
    the finding depends on the reading when only one pair differs, and a pair left out of
    the set (the comparison set's planted bug) would hide that."""
    from gaugedyn._errors import InputError
    from gaugedyn.experiments.adam_stability._spike_analysis import _tasks_C_claim, task_pairs

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    wig = 1 + 0.03 * np.array([1, -1, 1, -1, 1, -1])
    edges = {}
    for name, c in (("t", 0.5), ("u", 0.5), ("m", 0.05)):
        for w in ("settled", "transient"):
            edges[(name, w, "init")] = c * a * (wig if name == "t" else wig[::-1])
    a_of = {n: a for n in "tum"}
    claim = _tasks_C_claim(["t", "u", "m"], a_of, edges, 41)
    assert set(claim.readings) == {f"{w}, {p}" for w in ("settled", "transient")
                                   for p in ("u vs t", "m vs t")}  # fmt: skip
    assert claim.readings["settled, u vs t"] == "NOT HELD"
    assert claim.readings["settled, m vs t"] == "HELD"
    assert claim.verdict == "depends on the reading"
    assert "log C(u) - log C(t)" in claim.statement
    assert task_pairs(["t", "u", "m"]) == {"u vs t": "u", "m vs t": "m"}
    with pytest.raises(InputError, match="at least two"):
        task_pairs(["t"])


def test_linear_on_tasks_is_judged_over_the_declared_rise_thresholds():
    """Edges under each rise reading (the configured threshold first): the finding holds when
    every threshold gives a linear edge and depends on the reading when one does not."""
    from gaugedyn.experiments.adam_stability._spike_analysis import _task_claim

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    wig = 1 + 0.03 * np.array([1, -1, 1, -1, 1, -1])
    lin = {("t", w, "init"): 0.5 * a * wig for w in ("settled", "transient")}
    by_rise = {
        ("t", w, f"rise {h:g}"): 0.5 * a * wig * (h / 2)
        for h in (2.0, 1.5, 2.5)
        for w in ("settled", "transient")
    }
    c = _task_claim("t", a, lin, by_rise)
    assert c.verdict == "HELD" and len(c.readings) == 6
    assert next(iter(c.readings)) == "settled, rise 2"
    by_rise[("t", "settled", "rise 2.5")] = 3 * a**3 * wig
    d = _task_claim("t", a, lin, by_rise)
    assert d.verdict == "depends on the reading"
    assert d.readings["settled, rise 2.5"] == "NOT HELD" and d.readings["settled, rise 2"] == "HELD"


def test_a_task_copy_is_judged_at_every_rise_reading():
    from gaugedyn.experiments.adam_stability._scan import rise_readings

    assert rise_readings(2.0) == [2.0, 1.5, 2.5]
    assert rise_readings(1.5) == [1.5, 2.5]


def test_the_local_slopes_figure_draws_a_system_without_any_edge(tmp_path):
    from gaugedyn.experiments.adam_stability._figures import local_slopes

    a, nan = np.array([0.1, 0.2, 0.3]), np.full(3, np.nan)
    arrays = {"systems": np.array(["teacher_mse"]), "teacher_mse__a": a}
    for w in ("settled", "transient"):
        k = f"teacher_mse_init_{w}"
        arrays |= {
            f"{k}__boundary": nan,
            f"{k}__boundary_low": nan,
            f"{k}__boundary_high": nan,
            f"{k}__local_slope": np.full((2, 3), np.nan),
        }
    name, _ = local_slopes(arrays, tmp_path)
    assert (tmp_path / f"{name}.png").exists() or any(tmp_path.iterdir())


def test_the_local_slopes_figure_draws_a_task_whose_only_edges_are_another_rise(tmp_path):
    """A task without an edge at the configured rise but with edges at another (stored under
    the rise readings' keys) draws its panel unscaled instead of log-scaling no data."""
    from gaugedyn.experiments.adam_stability._figures import local_slopes

    a, nan = np.array([0.1, 0.2, 0.3]), np.full(3, np.nan)
    arrays = {"systems": np.array(["teacher4_mse"]), "teacher4_mse__a": a}
    for w in ("settled", "transient"):
        k = f"teacher4_mse_init_{w}"
        arrays |= {
            f"{k}__boundary": nan,
            f"{k}__boundary_low": nan,
            f"{k}__boundary_high": nan,
            f"{k}__local_slope": np.full((2, 3), np.nan),
            f"{k}_rise1.5__boundary": np.array([0.017, 0.017, np.nan]),
        }
    name, _ = local_slopes(arrays, tmp_path)
    assert (tmp_path / f"{name}.png").exists()


def _one_map(prob: np.ndarray, edge: np.ndarray) -> dict:
    """Arrays of one 1-D system (``n3``) with a scan grid, one probability map per reading and
    one edge, as the analysis stores them."""
    a, c = np.array([0.01, 0.1]), np.array([1e-4, 1e-3, 1e-2, 1e-1])
    arrays = {"systems": np.array(["n3"]), "n3__a": a, "n3__c": c, "fitted_level": np.float64(3.0)}
    for start in ("orbit", "generic"):
        arrays[f"n3_{start}__bisect_c"] = np.array([[0.02], [np.nan]])
        for window in ("settled", "transient"):
            arrays[f"n3_{start}_{window}__prob"] = prob
            arrays[f"n3_{start}_{window}__bisect_prob"] = np.array([[0.5], [np.nan]])
            arrays[f"n3_{start}_{window}__boundary"] = edge
    return arrays


def test_the_spike_maps_zoom_to_the_edge_only_over_cells_without_spikes():
    """The axis starts at a quarter of the smallest edge or bisection cell when every grid cell
    left of it shows probability 0 or none; a spiky cell there keeps the whole grid."""
    from gaugedyn.experiments.adam_stability._figures import ZOOM, _zoom_left

    quiet = np.array([[np.nan, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    edge = np.array([0.03, np.nan])
    assert _zoom_left(_one_map(quiet, edge), "n3", "orbit", "settled") == ZOOM * 0.02
    spiky = quiet.copy()
    spiky[1, 0] = 0.25
    assert _zoom_left(_one_map(spiky, edge), "n3", "orbit", "settled") == 1e-4 / 1.5
    no_edge = _one_map(quiet, np.full(2, np.nan))
    no_edge["n3_orbit__bisect_c"] = np.full((2, 1), np.nan)
    assert _zoom_left(no_edge, "n3", "orbit", "settled") == 1e-4 / 1.5


def test_the_spike_maps_are_split_with_one_colour_bar_each_and_name_their_colours(tmp_path):
    import sys
    from pathlib import Path

    import matplotlib.figure

    from gaugedyn.experiments.adam_stability._figures import spike_maps
    from gaugedyn.plotting import label_overlaps, style

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    try:
        from check_figures import colour_maps_without_bar
    finally:
        sys.path.pop(0)
    arrays = _one_map(
        np.array([[np.nan, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), np.array([0.03, np.nan])
    )
    problems, real = [], matplotlib.figure.Figure.savefig

    def spy(self, fname, *args, **kwargs):
        real(self, fname, *args, **kwargs)
        problems.extend(label_overlaps(self) + colour_maps_without_bar(self))

    matplotlib.figure.Figure.savefig = spy
    try:
        with style("Agg", ("png",)):
            drawn = dict(spike_maps(arrays, tmp_path))
    finally:
        matplotlib.figure.Figure.savefig = real
    assert sorted(drawn) == ["spike_boundary_maps", "spike_boundary_maps_transient"]
    assert not problems
    assert all((tmp_path / f"{name}.png").is_file() for name in drawn)
    caption = drawn["spike_boundary_maps"]
    assert "black at 0" in caption and "pale yellow at 1" in caption and "grey:" in caption
    assert "Zoomed to the edge" in caption and "Diamonds" in caption


def test_the_task_maps_put_a_task_in_each_column_and_a_window_in_each_row(monkeypatch):
    """With three tasks the task figure is 2 x 3: the settled window's row above the
    transient-inclusive one's, as its title says (seen failing with the two-column layout of
    the 1-D maps, which put a transient panel in the top rows)."""
    from gaugedyn.experiments.adam_stability import _figures

    seen = {}

    def record(arrays, panels, outdir, name, reading, level, ncol=None):
        seen[name] = (panels, ncol)
        return name, ""

    monkeypatch.setattr(_figures, "_map_figure", record)
    tasks = ["teacher_mse", "teacher4_mse", "gauss_memo"]
    _figures.spike_maps({"systems": np.array(tasks), "fitted_level": 1.0}, None)
    panels, ncol = seen["spike_boundary_task_maps"]
    assert ncol == len(tasks)
    rows = [panels[i : i + ncol] for i in range(0, len(panels), ncol)]
    assert [[p[2] for p in row] for row in rows] == [["settled"] * 3, ["transient"] * 3]
    assert [[p[0] for p in row] for row in rows] == [tasks, tasks]


def test_the_page_shows_the_stored_pilots_the_calibration_reads(monkeypatch):
    """``docs/adam-stability.md``'s pilot tables are generated from ``pilots.json``
    (``tools/pilot_tables.py``): the page is current, and a changed stored pilot makes it stale."""
    import importlib.util
    from pathlib import Path

    from gaugedyn.experiments.adam_stability import _calibration

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("pt", root / "tools" / "pilot_tables.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0
    pilot = dict(_calibration.TASKS["teacher_mse"]["pilot"])
    pilot["settled_edge"] = [None, *pilot["settled_edge"][1:]]
    monkeypatch.setitem(_calibration.TASKS["teacher_mse"], "pilot", pilot)
    assert tool.main(["--check"]) == 1
    with pytest.raises(KeyError, match="no stored pilot"):
        _calibration.pilot_markdown("digits_mse")


def test_the_maps_above_the_quadratic_run_their_own_declared_design():
    """The full configuration's maps of n > 2 get their own rows (24 at or below 0.1), a
    thirty-second-decade grid from 10^-2.5 to 10^-0.25 and an eighth-decade one below it from
    1e-4, and 16 seeds (PROTOCOL.md, third design); the quadratic keeps its own, and the quick
    configuration gives every map the quadratic's rows."""
    from gaugedyn.experiments.adam_stability._protocol import BETA1_ROWS
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    def config(quick):
        return {
            k: (p.quick if quick and p.quick is not None else p.default)
            for k, p in EXPERIMENT.params.items()
        }

    full = {(t["n"], t["start"]): t for t in EXPERIMENT.tasks(config(False)) if t["kind"] == "1d"}
    for (n, _), t in full.items():
        a, c = np.array(t["a"]), np.log10(t["c"])
        if n <= 2:
            assert (a <= BETA1_ROWS * (1 + 1e-9)).sum() == 8 and t["seeds"] == 8
            assert np.allclose(np.diff(c), 0.5)
        else:
            assert (a <= BETA1_ROWS * (1 + 1e-9)).sum() == 24 and a.size == 28
            assert t["seeds"] == 16
            fine = c >= -2.5 - 1e-9
            assert np.allclose(np.diff(c[fine]), 1 / 32) and c[fine][0] == pytest.approx(-2.5)
            assert np.allclose(np.diff(c[~fine]), 0.125) and c[0] == pytest.approx(-4)
            assert c[~fine][-1] == pytest.approx(-2.625) and c[-1] == pytest.approx(-0.25)
    quick = {(t["n"], t["start"]): t for t in EXPERIMENT.tasks(config(True)) if t["kind"] == "1d"}
    assert quick[(4.0, "orbit")]["a"] == quick[(2.0, "orbit")]["a"]
    assert quick[(4.0, "orbit")]["seeds"] == quick[(2.0, "orbit")]["seeds"]


def test_the_page_shows_the_stored_level_pilot(monkeypatch):
    """The edge-level pilot's tables on ``docs/adam-stability.md`` are generated from
    ``level_pilot.json`` (``tools/pilot_tables.py``): current, and stale when the pilot changes."""
    import importlib.util
    from pathlib import Path

    from gaugedyn.experiments.adam_stability import _level_pilot

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("pt", root / "tools" / "pilot_tables.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0
    pilot = _level_pilot.stored()
    pilot["by_rise"][0]["level"] = [2 * v for v in pilot["by_rise"][0]["level"]]
    monkeypatch.setattr(_level_pilot, "stored", lambda: pilot)
    assert tool.main(["--check"]) == 1


def test_the_stored_level_pilot_is_its_edges_read_through_the_theory():
    """Every stored level is the linear theory's 2 pi delta/omega on the stored edge of its row,
    the level over the rows their geometric mean with its t interval, at the declared rows
    (the full configuration's quadratic rows from 0.01 to 0.1) and rise thresholds."""
    from gaugedyn.experiments.adam_stability._level_pilot import RISES, pilot_rows, stored
    from gaugedyn.experiments.adam_stability._spike_analysis import level_interval, turn_growth

    p = stored()
    rows = np.array(p["rows"])
    assert p["rows"] == pilot_rows() and len(rows) == 6 and tuple(p["rises"]) == RISES
    for r in p["by_rise"]:
        e = np.array(r["edge"])
        assert np.all(np.isfinite(e))
        np.testing.assert_allclose(r["level"], turn_growth(rows, e), rtol=1e-12)
        np.testing.assert_allclose(r["level_over_rows"], level_interval(rows, e), rtol=1e-12)
        low = np.nan_to_num(np.array(r["low"]), nan=0.0)
        high = np.nan_to_num(np.array(r["high"]), nan=np.inf)
        assert np.all((low <= e) & (e <= high))


def test_a_cell_of_the_level_pilot_reruns_inside_its_stored_interval():
    """The stored pilot is what its code gives: the top row at the 5-decade rise (where the edge
    lies well below the default rise's, so a pilot that dropped its rise would fail), rerun from
    its own seed, lands inside its stored interval; a rise outside the declared ones is refused."""
    from gaugedyn.experiments.adam_stability import _level_pilot as lp

    p = lp.stored()
    k, j = lp.RISES.index(5.0), len(p["rows"]) - 1
    r = p["by_rise"][k]
    edge = lp.edge_at(p["rows"][j], 5.0, np.random.SeedSequence([lp.SEED, k, j]))[0]
    assert r["low"][j] <= edge <= r["high"][j]
    assert edge < p["by_rise"][lp.RISES.index(2.0)]["low"][j]
    with pytest.raises(SystemExit, match="--rise 3.0 is not allowed"):
        lp.main(["--rise", "3"])


def test_a_task_row_without_an_edge_says_why_and_too_few_seeds_say_no_interval():
    """A task grid read without bisection: a row never spiky says its edge lies below the
    grid, a row spiky to the top says so, a row with no judged seed says so, a row with an edge
    says nothing; below the seeds an exact interval needs (6, independently: the smallest k with
    0.025^(1/k) > 1/2), the statement says no edge can have an interval."""
    import math

    from gaugedyn.experiments.adam_stability._bisect import row_edge
    from gaugedyn.experiments.adam_stability._protocol import CODES
    from gaugedyn.experiments.adam_stability._spike_analysis import (
        _task_claim,
        min_edge_seeds,
        missing_edges,
    )

    S, Q, U = CODES["spiky"], CODES["quiet"], CODES["undetermined"]
    c = [0.3, 0.01, 0.03, 0.1]  # unsorted on purpose
    rows = [
        [[Q] * 3, [S] * 3, [S] * 3, [Q] * 3],  # edge between 0.03 and 0.1
        [[Q] * 3, [Q] * 3, [Q] * 3, [Q] * 3],  # never spiky
        [[S] * 3, [S] * 3, [S] * 3, [S] * 3],  # spiky to the top
        [[U] * 3, [U] * 3, [U] * 3, [U] * 3],  # nothing judged
        [[U] * 3, [S] * 3, [S] * 3, [S] * 3],  # the top cell unjudged: spiky to the highest judged
        [[S] * 3, [Q] * 3, [Q] * 3, [Q] * 3],  # spiky at the top only (0.3, the first column)
        [[Q] * 3, [S, Q, U], [Q] * 3, [Q] * 3],  # probability 1/2 at 0.01 counts as spiky
        [[S, Q, U], [Q] * 3, [Q] * 3, [Q] * 3],  # ... and at the top: no edge
    ]
    why = missing_edges(c, np.array(rows))
    assert why[0] is None and why[6] is None and why[7].startswith("spiky up to")
    for row, reason in zip(rows, why):  # an edge exactly where the edge finder reads one
        assert (reason is None) == bool(np.isfinite(row_edge(c, np.array(row))[0]))
    assert why[1].startswith("never spiky on the grid") and "0.01" in why[1]
    assert all(why[k].startswith("spiky up to") for k in (2, 4, 5))
    assert why[3] == "no cell with a judged seed"
    assert min_edge_seeds() == math.ceil(math.log(0.025) / math.log(0.5)) == 6

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    e = {("t", w, "init"): np.r_[0.05 * a[:4], np.nan, np.nan] for w in ("settled", "transient")}
    reasons = {w: [None] * 4 + [why[1], why[1]] for w in ("settled", "transient")}
    claim = _task_claim("t", a, e, None, reasons, 3)
    assert "rows without a settled edge at the configured rise: 0.15 never spiky" in claim.statement
    assert "3 seeds a cell" in claim.statement and "only from 6" in claim.statement
    assert claim.tolerance["rows_without_edge"] == reasons
    assert claim.tolerance["edge_interval_seeds"] == 6
    assert "5 seeds a cell" in _task_claim("t", a, e, None, reasons, 5).statement
    quiet = _task_claim("t", a, e, None, {w: [None] * 6 for w in reasons}, 6)
    assert (
        "rows without" not in quiet.statement and "no edge has an interval" not in quiet.statement
    )


def test_the_tasks_design_cannot_resolve_a_boundary_known_to_be_linear():
    """Read as the tasks read theirs (every cell, no bisection), a boundary exactly linear at
    the published teacher_mse C leaves fewer than six rows inside the published task grid (its
    lowest column 0.01 sits above the small rows' edges), so the slope rule can only say
    UNRESOLVED; the declared design (rows to 0.01, columns a quarter decade apart from 1e-3, 8
    seeds) resolves it, and its design controls pass there and fail at the published design."""

    from gaugedyn.experiments.adam_stability._detector_controls import (
        design_controls,
        task_design_verdicts,
    )
    from gaugedyn.experiments.adam_stability._protocol import DESIGN_C, TASK_DESIGN
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    C = DESIGN_C  # teacher_mse's settled C of the run published before the redesign
    full = {k: p.default for k, p in EXPERIMENT.params.items()}
    published = full | {
        "task_one_minus_beta1": [0.5, 0.4, 0.3, 0.2, 0.15, 0.1],
        "task_one_minus_beta2": [0.01, 0.03, 0.1, 0.3],
        "task_seeds": 3,
        "task_bracket_stride": 0,
    }
    # the default (the third design: 8 seeds, scanned) declares the design controls
    assert {c.id for c in design_controls(full)} == {"task_design.linear", "task_design.flat"}
    full = full | {
        "task_one_minus_beta1": TASK_DESIGN["one_minus_beta1"],
        "task_one_minus_beta2": TASK_DESIGN["one_minus_beta2"],
        "task_seeds": TASK_DESIGN["seeds"],
        "task_bracket_stride": 0,
    }
    now = task_design_verdicts(published, C, draws=20)
    assert now["UNRESOLVED"] == 1.0 and now["rows_with_edge"] < 6
    assert now["closed_intervals"] == 0.0  # 3 seeds: no edge interval can close
    better = task_design_verdicts(full, C, draws=20)
    assert better["HELD"] >= 0.8 and better["rows_with_edge"] >= 6
    assert better["closed_intervals"] > 0.5
    controls = {c.id: c for c in EXPERIMENT.controls(full)}
    assert all(controls[k].run()[1] for k in ("task_design.linear", "task_design.flat"))
    six = {c.id: c.run()[1] for c in design_controls(published | {"task_seeds": 6})}
    assert six == {"task_design.linear": False, "task_design.flat": True}
    assert design_controls(published) == []  # 3 seeds: a preview, no finding can resolve
    broken = {  # a design check that calls every boundary linear fails the negative control
        c.id: c.run()[1]
        for c in design_controls(
            full, lambda *a, **k: {"HELD": 1.0, "NOT HELD": 0.0, "rows_with_edge": 8}
        )
    }
    assert broken == {"task_design.linear": True, "task_design.flat": False}


def test_the_ridge_is_the_largest_growth_per_slow_turn_of_its_row():
    """`_level_pilot.ridge`: the theory's 2 pi delta/omega at the ridge is at least its value
    anywhere else on the row's complex branch (a log grid from a^3/10 up), and the ridge lies
    above the pilot's edges in c (the edges sit on the level surface's slow rise, not on it)."""
    from gaugedyn.experiments.adam_stability._level_pilot import ridge, stored
    from gaugedyn.experiments.adam_stability._spike_analysis import turn_growth

    p = stored()
    edges = next(r for r in p["by_rise"] if r["rise"] == 2.0)["edge"]
    for a, e in zip(p["rows"], edges):
        c, top = ridge(a)
        grid = turn_growth(a, np.logspace(np.log10(a**3 / 10), np.log10(a), 2001))
        assert top >= np.nanmax(np.where(np.isfinite(grid), grid, -np.inf)) - 1e-9
        assert turn_growth(a, c) == pytest.approx(top)
        assert c > 5 * e and top > turn_growth(a, e)


def _band_entry(slope: float, C: float, low_ratio: float) -> dict:
    """A `_map_pilot` entry with every seed spiky exactly on the band ``low_ratio a <= c <=
    C a^slope`` of each pilot row (both windows alike)."""
    from gaugedyn.experiments.adam_stability import _map_pilot as mp

    a = np.array(mp.rows())[:, None]
    c = np.array(mp.GRID)[None, :]
    band = (c >= low_ratio * a) & (c <= C * a**slope)
    spiky = np.where(band, mp.SEEDS, 0)
    judged = np.full(spiky.shape, mp.SEEDS)
    return {"spiky": [spiky.tolist()] * 2, "judged": [judged.tolist()] * 2}


def test_the_map_pilot_reading_recovers_a_planted_band():
    """`_map_pilot.reading` on a planted band ``a <= c <= 2 a^0.7``: every row has an edge at
    its top (within a grid cell), the slope 0.7 and the band's lower end ``c/a`` near 1."""
    from gaugedyn.experiments.adam_stability import _map_pilot as mp

    r = mp.reading(_band_entry(0.7, 2.0, 1.0))
    a = np.array(mp.rows())
    assert r["rows_with_edge"] == 12
    assert np.all(np.abs(np.log10(np.array(r["edge"]) / (2.0 * a**0.7))) <= 1 / 32)
    assert abs(r["slope"] - 0.7) < 0.03 and r["s"] < 0.03
    assert 1.0 <= r["low_ratio"] <= 10 ** (1 / 32)


def test_the_stored_map_pilot_has_an_edge_in_every_row():
    """The stored pilot (``map_pilot.json``) on its fine grid: every row at or below 0.1 of
    n = 3, 4, 6 has a settled edge from both starts, and the residual scatter the design check
    takes from it lies between 0.1 and 0.25 (natural log)."""
    from gaugedyn.experiments.adam_stability import _map_pilot as mp

    p = mp.stored()
    assert p["grid"] == list(mp.GRID) and p["rows"] == mp.rows() and p["seeds"] == mp.SEEDS
    for n in ("3", "4", "6"):
        for start in mp.STARTS:
            r = mp.reading(p["maps"][f"n{n}_{start}"], 0)
            assert r["rows_with_edge"] == 12
            assert 0.1 < r["s"] < 0.25


def test_the_design_check_expects_the_slopes_narrower_than_0_4_at_the_full_design():
    """`_detector_controls.map_design_verdicts` at the full configuration's design on the stored
    pilot's settled orbit-start readings of n = 4 and n = 6: the median 95% width of the slope
    below 0.4 with nearly every row keeping an edge; a design whose grid is coarser than the
    narrowest band (half a decade) loses rows."""
    from gaugedyn.experiments.adam_stability import _map_pilot as mp
    from gaugedyn.experiments.adam_stability._detector_controls import map_design_verdicts
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    full = {k: p.default for k, p in EXPERIMENT.params.items()}
    design = {
        "rows": full["rows_above_2"],
        "c": [v for v in full["c_above_2"] if v >= full["c_min_above_2"]],
        "seeds": full["seeds_above_2"],
        "bisect_decades": full["bisect_decades"],
    }
    rows = sum(v <= 0.1 for v in design["rows"])
    for n in ("4", "6"):
        pilot = mp.reading(mp.stored()["maps"][f"n{n}_orbit"], 0)
        v = map_design_verdicts(design, pilot, draws=3)
        assert v["width"] < 0.4 and v["rows_with_edge"] >= rows - 3
    coarse = design | {"c": list(np.logspace(-4, -0.25, 8)), "bisect_decades": 0.5}
    pilot = mp.reading(mp.stored()["maps"]["n4_orbit"], 0)
    assert map_design_verdicts(coarse, pilot, draws=3)["rows_with_edge"] < rows - 6

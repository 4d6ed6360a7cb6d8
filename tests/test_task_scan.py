"""The network tasks' cost cuts (issue 42, p42t): the scan of a task row by row
(`_scan._scan_task`), its split into row tasks and their merge, its reading in the design
check, and the hand-written gradient of the mean-squared tasks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.adam import SPIKE_SAMPLING
from gaugedyn.experiments.adam_stability import _scan
from gaugedyn.experiments.adam_stability._bisect import row_edges
from gaugedyn.experiments.adam_stability._protocol import CODES, NOT_SIMULATED

COLUMNS = [float(v) for v in np.logspace(-3, -0.5, 11)]
ROWS = [0.5, 0.3, 0.1, 0.05, 0.02]


def _task(**kw):
    return {
        "kind": "task",
        "task": "teacher_mse",
        "start": "init",
        "a": list(ROWS),
        "c": list(COLUMNS),
        "seeds": 8,
        "lr": 1e-2,
        "n_samples": 32,
        "hidden": 4,
        "spikes": list(SPIKE_SAMPLING[:3]),
    } | kw


def _fake_cells(task, seed, cells, watch=None):
    """A stand-in for the batched run: copy ``s`` of cell ``(i, j)`` spiky under the rise
    reading ``q`` when ``c`` lies below its row's edge for that reading, with seed noise drawn
    from ``(i, j, s)`` alone (as a copy is the same whichever cells run beside it); the edges
    fall with the rise threshold, so the readings disagree; the row 0.02 never spiky."""
    a, c, S = np.array(task["a"]), np.array(task["c"]), int(task["seeds"])
    rises = _scan.rise_readings(SPIKE_SAMPLING.rise)
    n = len(cells)
    st = np.empty((n, S, 2, len(rises)), np.int8)
    for k, (i, j) in enumerate(cells):
        for s in range(S):
            noise = np.random.default_rng([i, j, s]).normal(0, 0.15)
            for q, h in enumerate(rises):
                edge = 0.05 * a[i] * 10 ** (-0.4 * (h - 1.5)) if a[i] > 0.03 else 1e-9
                spiky = np.log10(c[j]) + noise < np.log10(edge)
                st[k, s, :, q] = CODES["spiky"] if spiky else CODES["quiet"]
    z = {
        "status": st[..., 0],
        "status_rises": st,
        "rises": np.array(rises),
        "max_rise": np.zeros((n, S, 2)),
        "final_log10_loss": np.zeros((n, S)),
        "settled_median_log10_loss": np.zeros((n, S)),
    }
    return [z], {"steps_run": 100 * n * S, "steps_longest": 100}


def _edges(r, q):
    rows = np.asarray(r["status_rises"]).shape[0]
    bc = np.full((rows, 1), np.nan)
    bs = np.full((rows, 1, 8, 2), NOT_SIMULATED, np.int8)
    return row_edges(r["c"], np.asarray(r["status_rises"])[..., q], bc, bs, 0)


def test_scan_reads_every_readings_edge_of_the_whole_grid(monkeypatch):
    monkeypatch.setattr(_scan, "_run_cells", _fake_cells)
    full = _scan._run_task(_task(), 1)
    scanned = _scan._run_task(_task(bracket_stride=2), 1)
    done = np.asarray(scanned["status"])[..., 0, 0] != NOT_SIMULATED
    # the scan's cells are the grid's, and it leaves out most of the cells below the edges
    np.testing.assert_array_equal(scanned["status_rises"][done], full["status_rises"][done])
    assert scanned["cells_run"] == done.sum() < 0.7 * done.size
    assert not np.isfinite(np.asarray(scanned["settled_median_log10_loss"])[~done]).any()
    for q in range(3):
        got, want = _edges(scanned, q), _edges(full, q)
        np.testing.assert_array_equal(got[:, 0], want[:, 0])  # the edge itself
        # its interval from fewer cells: never narrower (an open side where the grid's closes)
        assert np.all(np.nan_to_num(got[:, 1], nan=0) <= np.nan_to_num(want[:, 1], nan=0))
        assert np.all(np.nan_to_num(got[:, 2], nan=9) >= np.nan_to_num(want[:, 2], nan=9))
    e = _edges(full, 0)[:, 0]
    assert np.isfinite(e[:4]).all() and not np.isfinite(e[4])  # the never-spiky row: no edge


def test_scan_stopping_at_one_reading_loses_the_stricter_readings_edges(monkeypatch):
    """Planted: a scan that stops at the first reading's first spiky cell (as if the rise
    thresholds were not readings of the stop rule) reads other edges at rise 2.5."""
    monkeypatch.setattr(_scan, "_run_cells", _fake_cells)
    full = _scan._run_task(_task(), 1)
    real = _scan.scan_rows

    def first_reading_only(a, c, evaluate, decades, windows=2, **kw):
        return real(a, c, lambda rows, cs: evaluate(rows, cs)[..., :1], decades, 1, **kw)

    monkeypatch.setattr(_scan, "scan_rows", first_reading_only)
    bad = _scan._run_task(_task(bracket_stride=2), 1)
    assert not np.array_equal(_edges(bad, 2)[:, 0], _edges(full, 2)[:, 0], equal_nan=True)


def test_rows_split_and_merged_equal_the_whole_scan(monkeypatch):
    monkeypatch.setattr(_scan, "_run_cells", _fake_cells)
    whole = _scan._run_task(_task(bracket_stride=2), 1)
    tasks = [_task(bracket_stride=2, rows=[i]) for i in (3, 0, 4, 1, 2)]
    parts = [_scan._run_task(t, 1) for t in tasks]
    other = {"kind": "check"}
    merged_t, merged_r = _scan.merge_rows([other, *tasks], [{"x": 1}, *parts])
    assert merged_t == [other, _task(bracket_stride=2)] and merged_r[0] == {"x": 1}
    for f in (*_scan.ROW_FIELDS, "a", "c", "steps_run", "cells_run", "steps_longest"):
        np.testing.assert_array_equal(merged_r[1][f], whole[f])
    with pytest.raises(ValueError, match="do not cover"):
        _scan.merge_rows(tasks[:4], parts[:4])


def test_bracket_grid_reaches_both_ends_or_says_why():
    np.testing.assert_array_equal(_scan.bracket_grid(COLUMNS, 2), [0, 2, 4, 6, 8, 10])
    np.testing.assert_array_equal(_scan.bracket_grid(COLUMNS, 1), np.arange(11))
    with pytest.raises(Exception, match="bracket_stride=3 is not allowed for 11 columns"):
        _scan.bracket_grid(COLUMNS, 3)


def test_copy_seeds_are_the_cells_place_in_the_grid():
    got = _scan.copy_seeds(100, [(1, 2), (0, 0)], 5, 3)
    np.testing.assert_array_equal(got, [121, 122, 123, 100, 101, 102])
    every = [(i, j) for i in range(2) for j in range(5)]
    np.testing.assert_array_equal(_scan.copy_seeds(7, every, 5, 3), 7 + np.arange(30))


def test_a_scanned_task_runs_on_the_real_program():
    """A real small scan: the bracket columns from the top down, the cells not evaluated
    ``NOT_SIMULATED``, fewer steps than the whole grid."""
    task = _task(a=[0.5], c=[0.1, 0.178, 0.316], seeds=2)
    seed = np.random.SeedSequence(3)
    full = _scan._run_task(task, seed)
    scanned = _scan._run_task(task | {"bracket_stride": 2}, seed)
    done = np.asarray(scanned["status"])[0, :, :, 0] != NOT_SIMULATED
    assert done[0].all() and done[2].all() and scanned["cells_run"] in (2, 3)
    assert scanned["steps_run"] <= full["steps_run"]
    assert not np.isfinite(np.asarray(scanned["max_rise"])[0][~done]).any()
    with pytest.raises(Exception, match="watch is not allowed"):
        _scan._run_task(task | {"bracket_stride": 2}, seed, watch=({1}, print))


@pytest.mark.parametrize("task", ["teacher_mse", "teacher4_mse", "digits_mse"])
def test_hand_gradient_equals_autograd(task):
    from gaugedyn.experiments.adam_stability._batched import BatchedMLP

    model = BatchedMLP(task, 3, [1, 2, 3], n_samples=24)
    with torch.no_grad():
        model.params[1][0] -= 5.0  # a copy with most units dead (the relu's zero side)
    ps = [p.detach().clone().requires_grad_(True) for p in model.params]
    L = model.losses(ps)
    want = torch.autograd.grad(L.sum(), ps)
    got_L, got = model.losses_and_grads(model.params)
    torch.testing.assert_close(got_L, L.detach(), rtol=1e-13, atol=0)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-15)


def test_scanned_design_controls_pass_at_the_declared_design():
    from gaugedyn.experiments.adam_stability._detector_controls import design_controls
    from gaugedyn.experiments.adam_stability._protocol import SCAN_DESIGN

    config = {
        "tasks": ["teacher_mse"],
        "task_one_minus_beta1": SCAN_DESIGN["one_minus_beta1"],
        "task_one_minus_beta2": SCAN_DESIGN["one_minus_beta2"],
        "task_seeds": SCAN_DESIGN["seeds"],
        "task_bracket_stride": SCAN_DESIGN["bracket_stride"],
    }
    controls = design_controls(config)
    assert "scanned from the top on one column in 2" in controls[0].case
    assert all(c.run()[1] for c in controls)


def test_spike_boundary_splits_a_scanned_task_by_rows_on_one_seed():
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    config = {k: p.default for k, p in EXPERIMENT.params.items()} | {"task_bracket_stride": 2}
    config |= {"task_one_minus_beta2": COLUMNS}
    tasks = [t for t in EXPERIMENT.tasks(config) if t["kind"] == "task"]
    n = len(config["task_one_minus_beta1"])
    assert len(tasks) == 2 * len(config["tasks"])  # ROW_GROUPS
    assert [t["rows"] for t in tasks[:2]] == [list(range(n))[0::2], list(range(n))[1::2]]
    coords = {repr(EXPERIMENT.seed_coordinates(t)) for t in tasks[:2]}
    assert len(coords) == 1  # every row of a task on the task's one seed (one teacher)
    with pytest.raises(Exception, match="bracket_stride=3 is not allowed"):
        EXPERIMENT.validate(config | {"task_bracket_stride": 3})


def test_task_pilot_reads_each_readings_edge_and_counts_the_rows(monkeypatch):
    from gaugedyn.experiments.adam_stability import _task_pilot

    cols = sorted(_task_pilot.SCAN_DESIGN["one_minus_beta2"])

    def row(a, spiky_below):
        cells = []
        for c in cols[::-1]:
            sp = c < spiky_below
            st = np.full((8, 2, 3), CODES["spiky"] if sp else CODES["quiet"])
            cells.append({"c": c, "status": st.tolist(), "settled_median_log10_loss": [0.0] * 8})
            if sp:
                break
        return {"row": a, "rises": [2.0, 1.5, 2.5], "cells": cells[::-1], "steps": 10,
                "cpu_seconds": 1.0, "load": 0.5}  # fmt: skip

    rows = [row(0.5, 0.05), row(0.05, 0.003), row(0.01, 0.0)]
    e = _task_pilot.row_edges(rows[0])["settled rise 2"]
    assert cols[7] > e[0] > cols[6] and e[1] == cols[6] and e[2] == cols[7]
    assert _task_pilot.rows_with_edge(rows, "transient rise 2.5") == (2, 1)
    fake = {"command": "c", "machine": "m", "tasks": {"teacher_mse": {"rows": rows}}}
    monkeypatch.setattr(_task_pilot, "stored", lambda: fake)
    text = "\n".join(_task_pilot.pilot_markdown())
    assert "2 at rise 2 (1 at or below 0.05)" in text and "| 0.01 |" in text


def test_expected_cost_of_a_scan_is_below_every_cell():
    from gaugedyn.experiments.adam_stability import _task_pilot
    from gaugedyn.experiments.adam_stability._protocol import run_steps

    d = {"one_minus_beta1": [0.5, 0.1, 0.01], "one_minus_beta2": COLUMNS, "seeds": 8}
    aa, cc = np.meshgrid(d["one_minus_beta1"], COLUMNS, indexing="ij")
    every = _task_pilot.expected_copy_steps(d, 0.05, 0)
    assert every == run_steps(aa, cc).sum() * 8
    scanned = _task_pilot.expected_copy_steps(d, 0.05, 2, draws=3)
    # the rows 0.5 and 0.1 stop near their edges; the row 0.01 (edge below the grid) runs the
    # six bracket columns
    assert run_steps(np.full(6, 0.01), np.array(COLUMNS[::2])).sum() * 8 < scanned < every

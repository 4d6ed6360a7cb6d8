"""The second network family of spike_boundary (issue 42, Build 4 and 5): its task
definition, the stored pilot that chose it and the core-wall measurement on it."""

from __future__ import annotations

import copy
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn.experiments.adam_stability import _family, _family_pilot, _family_wall

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("pt", ROOT / "tools" / "pilot_tables.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_family_task_is_a_spike_boundary_network_task_and_refuses_an_undeclared_name():
    t = _family.family_task("digits_ce", [2.0, 24, 200], 2, [0.3], [0.1, 0.03], [[1.5, 24, 200]])
    assert t["kind"] == "task" and t["task"] == "digits_ce" and t["start"] == "init"
    assert t["c"] == [0.03, 0.1] and t["seeds"] == 2 and t["also"] == [[1.5, 24, 200]]
    assert (t["hidden"], t["n_samples"], t["lr"]) == (32, 64, 1e-2)
    assert _family.family_task("digits_ce_w16", [2.0, 24, 200])["hidden"] == 16
    with pytest.raises(InputError, match="'mlp' is not allowed"):
        _family.family_task("mlp", [2.0, 24, 200])
    assert len(_family.ROWS) >= 6 and sum(a <= 0.05 for a in _family.ROWS) >= 2
    assert min(_family.ROWS) == 0.01 and math.isclose(min(_family.COLUMNS), 1e-3)


def test_the_mean_squared_candidates_follow_the_cross_entropy_ones_and_can_fit_every_label():
    """The declared order: the two cross-entropy candidates (piloted first) and then the two
    mean-squared ones, each a realizable digits network: at least as many parameters as one-hot
    targets (`_batched`'s 64-hidden-10 MLP), run by `_batched`'s ``digits_mse``."""
    from gaugedyn.experiments.adam_stability._batched import (
        DIGITS_MEMO_TASKS,
        MEMORISATION_TASKS,
        TASKS,
    )

    assert list(_family.CANDIDATES)[:4] == ["digits_ce", "digits_ce_w16", "digits_mse",
                                            "digits_mse_n128"]  # fmt: skip
    for name in ("digits_mse", "digits_mse_n128"):
        t = _family.family_task(name, [2.0, 24, 200])
        assert t["task"] == "digits_mse" and t["hidden"] == 32 and t["lr"] == 1e-2
        h = t["hidden"]
        assert 64 * h + h + 10 * h + 10 >= 10 * t["n_samples"]
    assert _family.family_task("digits_mse", [2.0, 24, 200])["n_samples"] == 64
    assert _family.family_task("digits_mse_n128", [2.0, 24, 200])["n_samples"] == 128
    programs = set(TASKS) | set(MEMORISATION_TASKS) | set(DIGITS_MEMO_TASKS)
    assert {c["task"] for c in _family.CANDIDATES.values()} <= set(_family.LOSSES) <= programs
    assert set(_family.NETWORKS) == set(_family.LOSSES)


def test_the_memorisation_candidates_follow_and_can_interpolate_their_targets():
    """Declared after the digits candidates (appended): the memorisation task at 64 inputs, then
    128, each a student with more parameters (20-8-1: 177) than targets, so that its targets
    are fitted exactly; the pilot table names its network and loss."""
    from gaugedyn.experiments.adam_stability._batched import MEMORISATION_DIM

    assert list(_family.CANDIDATES)[4:] == ["gauss_memo", "gauss_memo_n128", "digits_pc_memo"]
    for name, n in (("gauss_memo", 64), ("gauss_memo_n128", 128)):
        t = _family.family_task(name, [2.0, 24, 200])
        assert (t["task"], t["hidden"], t["n_samples"], t["lr"], t["eps"]) == (
            "gauss_memo", 8, n, 1e-2, 1e-8)  # fmt: skip
        h = t["hidden"]
        assert (MEMORISATION_DIM + 1) * h + h + 1 > t["n_samples"]
    # the reading on real inputs, appended after the chosen family: the choice cannot move
    t = _family.family_task("digits_pc_memo", [2.0, 24, 200])
    assert (t["task"], t["hidden"], t["n_samples"]) == ("digits_pc_memo", 8, 64)
    assert _family_pilot.choose() == "gauss_memo"
    pilot = {"candidates": {"gauss_memo": _pilot(1)["candidates"]["digits_ce"]},
             "date": "d", "command": "c", "machine": "m"}  # fmt: skip
    for row in pilot["candidates"]["gauss_memo"]["rows"]:
        row["load"] = 1.0
        for z in row["cells"]:
            z |= {"cpu_seconds": 1.0, "settled_median_log10_loss": [-6.0] * 8}
    lines = _family_pilot.pilot_markdown(pilot)
    head = next(x for x in lines if x.startswith("`gauss_memo`"))
    assert "MLP 20-8-1 on 64 Gaussian inputs" in head and "standard normal targets" in head


def test_the_pilot_table_names_each_candidate_s_loss():
    pilot = _pilot(2, b=1)
    pilot["candidates"]["digits_mse"] = {"rows": _pilot(3)["candidates"]["digits_ce"]["rows"]}
    pilot |= {"date": "d", "command": "c", "machine": "m"}
    for cand in pilot["candidates"].values():
        for row in cand["rows"]:
            row["load"] = 2.5
            for z in row["cells"]:
                z |= {"cpu_seconds": 1.0, "settled_median_log10_loss": [-9.0] * 8,
                      "max_rise": [[0.5, 0.7]] * 7 + [[2 * float(row["row"]), 3.0]]}  # fmt: skip
    lines = _family_pilot.pilot_markdown(pilot)
    # per row the largest rise of its runs under the settled window, the CPU seconds, the load
    edged = next(x for x in lines if x.startswith("| 0.01 |"))
    assert edged.endswith("| 0.50 | 8/16 | 2 (2.5) |")
    quiet = next(x for x in lines if x.startswith("| 0.3 |"))
    assert quiet.endswith("| 0.60 | 0/88 | 11 (2.5) |")
    head = {x.split(":")[0].strip("`"): x for x in lines if x.startswith("`digits")}
    assert "cross-entropy" in head["digits_ce"] and "squared error" not in head["digits_ce"]
    assert "half the squared error to the one-hot labels" in head["digits_mse"]
    assert "MLP 64-32-10 on 64 digits" in head["digits_mse"]


def test_a_watched_task_runs_the_same_trajectory_and_sees_each_step_once():
    """The core-wall hook (`_scan._run_task`'s ``watch``) leaves the run unchanged and is
    called at the asked steps with the parameters before the step."""
    from gaugedyn.experiments.adam_stability._scan import _run_task

    task = _family.family_task("digits_ce", [2.0, 24, 200], 2, [0.5], [0.3])
    seen = []

    def call(t, model, before):
        moved = sum(float((p - b).abs().sum()) for p, b in zip(model.params, before))
        seen.append((t, moved))

    plain = _run_task(task, np.random.SeedSequence(5))
    watched = _run_task(task, np.random.SeedSequence(5), watch=({3, 40}, call))
    assert [t for t, _ in seen] == [3, 40] and all(m > 0 for _, m in seen)
    for k in ("status", "settled_median_log10_loss", "max_rise"):
        np.testing.assert_array_equal(plain[k], watched[k])


def _row(a, cells):
    return {"row": a, "cells": [{"c": c, "status": [[s, s] for s in st],
                                 "status_rises": [[[s] * 3, [s] * 3] for s in st]}
                                for c, st in cells]}  # fmt: skip


def _pilot(edges_a: int, complete_a: bool = True, b: int | None = None) -> dict:
    """A synthetic pilot: candidate ``digits_ce`` with an edge in its ``edges_a`` lowest rows
    (the others never spiky), the last row (0.01) left out unless ``complete_a``; the second
    candidate with ``b`` edges, its lowest rows, over every row when given."""
    cols = sorted(_family.COLUMNS)

    def rows(k):
        out = []
        for i, a in enumerate(_family.ROWS):
            if i >= len(_family.ROWS) - k:
                out.append(_row(a, [(cols[5], [1] * 8), (cols[6], [0] * 8)]))
            else:
                out.append(_row(a, [(c, [0] * 8) for c in cols]))
        return out

    ra = rows(edges_a)
    cand = {"digits_ce": {"rows": ra if complete_a else ra[:-1]}}
    if b is not None:
        cand["digits_ce_w16"] = {"rows": rows(b)}
    return {"candidates": cand}


def test_the_choice_is_the_first_candidate_with_six_rows_with_a_settled_edge(monkeypatch):
    monkeypatch.setattr(_family_pilot, "STOPPED", {})  # the rule alone
    assert _family_pilot.choose(_pilot(6)) == "digits_ce"
    assert _family_pilot.choose(_pilot(5)) is None
    assert _family_pilot.choose(_pilot(5, b=7)) == "digits_ce_w16"
    # the row 0.01 not run: 5 edges, 3 rows without, undecided
    assert _family_pilot.choose(_pilot(6, complete_a=False)) is None
    assert _family_pilot.choose(_pilot(7, complete_a=False)) == "digits_ce"
    # four rows run without an edge: the first candidate is out of reach, the second decides
    assert _family_pilot.choose(_pilot(5, complete_a=False, b=6)) == "digits_ce_w16"
    assert _family_pilot.candidate_summary("digits_ce", _pilot(5, complete_a=False))["fails"]
    assert _family_pilot.choose(_pilot(6, complete_a=False, b=6)) is None
    s = _family_pilot.candidate_summary("digits_ce", _pilot(6))
    assert s["with_edge"] == 6 and s["complete"]
    e = s["edges"][-1]
    cols = sorted(_family.COLUMNS)
    assert cols[5] < e[0] < cols[6] and (e[1], e[2]) == (cols[5], cols[6])


def test_the_family_grid_is_the_task_design_s_and_its_rule_needs_a_low_row():
    """The revised grid (declared before any pilot on it): `_protocol.SCAN_DESIGN`'s rows,
    columns and seeds; six rows with an edge meet the rule only with one at or below 0.05."""
    from gaugedyn.experiments.adam_stability._protocol import SCAN_DESIGN

    assert list(_family.ROWS) == SCAN_DESIGN["one_minus_beta1"]
    np.testing.assert_allclose(_family.COLUMNS, SCAN_DESIGN["one_minus_beta2"], rtol=2e-4)
    assert _family.COLUMNS == tuple(10 ** (-3 + 0.25 * k) for k in range(11))
    assert _family.SEEDS == SCAN_DESIGN["seeds"] == 8 and _family.MIN_ROWS == 6
    high = [a for a in _family.ROWS if a > 0.05]
    assert len(high) >= 6 and _family.rule_verdict(_family.ROWS, high) == "fails"
    assert _family.rule_verdict(_family.ROWS, high[:5] + [0.05]) == "meets"
    assert _family.rule_verdict(_family.ROWS, high[:5] + [0.01]) == "meets"
    assert _family.rule_verdict(high, high[:5]) == "undecided"
    # the first grid's columns (stored unrounded) are the revised grid's to four digits
    for k in range(len(_family.COLUMNS)):
        assert _family.column_index(10 ** (-3 + 0.25 * k)) == k
    with pytest.raises(InputError, match="column 0.002 is not allowed"):
        _family.column_index(0.002)
    # a stored cell keeps its seeds: the first grid's rows keep their places
    assert _family.SEED_ROWS[: len(_family.FIRST_ROWS)] == _family.FIRST_ROWS
    assert set(_family.ROWS) <= set(_family.SEED_ROWS)


def _teacher_edges(rows) -> dict[str, list[float]]:
    """Per teacher task, the stored task pilot's rows among ``rows`` with a settled edge at
    the primary rise (``task_pilot.json``)."""
    from gaugedyn.experiments.adam_stability import _task_pilot

    out = {}
    for name, t in _task_pilot.stored()["tasks"].items():
        out[name] = [r["row"] for r in t["rows"] if r["row"] in rows
                     and math.isfinite(_task_pilot.row_edges(r)["settled rise 2"][0])]  # fmt: skip
    return out


def test_the_rule_s_known_answers_the_teachers_meet_it_and_the_digits_pilots_do_not():
    """Known-answer control of the selection rule: the teacher tasks' stored edges on the
    revised grid meet it (the effect present); on the first grid a family with their boundary
    has edges in at most four of its seven rows (why the grid was revised); the stored rows of
    the digits candidates do not meet it (the effect absent)."""
    for name, has in _teacher_edges(_family.ROWS).items():
        assert len(has) >= 6 and min(has) <= 0.05, name
        assert _family.rule_verdict(_family.ROWS, has) == "meets", name
    for name, has in _teacher_edges(_family.FIRST_ROWS).items():
        assert len(has) <= 4 < _family.FIRST_MIN_ROWS, name
    p = _family_pilot.stored()
    for name in _family.STOPPED:
        s = _family_pilot.candidate_summary(name, p)
        assert s["with_edge"] == 0 and s["verdict"] != "meets" and s["stopped"], name
    assert _family_pilot.choose(p) is None or _family_pilot.choose(p) not in _family.STOPPED


def test_a_stopped_candidate_is_passed_over_unless_it_meets_the_rule(monkeypatch):
    monkeypatch.setattr(_family_pilot, "STOPPED", {"digits_ce": "why"})
    assert _family_pilot.choose(_pilot(6, complete_a=False, b=6)) == "digits_ce_w16"
    assert _family_pilot.choose(_pilot(6, b=6)) == "digits_ce"
    monkeypatch.setattr(_family_pilot, "STOPPED", {})
    assert _family_pilot.choose(_pilot(6, complete_a=False, b=6)) is None


def test_the_chosen_family_is_a_spike_boundary_task_on_the_calibrated_grid(monkeypatch):
    """`_calibration.family_entry()`: the candidate `choose()` picks, with its own program, data,
    width, step size and eps, on the scan's grid; none while none is chosen. `spike_boundary`
    runs an entry of that kind with its program and eps."""
    from gaugedyn.experiments.adam_stability import _calibration
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    monkeypatch.setattr(_family_pilot, "STOPPED", {})  # the rule alone
    ce = _pilot(1, b=1)["candidates"]  # both cross-entropy candidates fail
    six = _pilot(6)["candidates"]["digits_ce"]
    pilot = {"candidates": ce | {"digits_mse": six}}
    name, entry = _calibration.family_entry(pilot)
    assert name == "digits_mse" and entry["task"] == "digits_mse"
    assert (entry["n_samples"], entry["hidden"], entry["lr"], entry["eps"]) == (64, 32, 1e-2, 1e-8)
    assert entry["one_minus_beta1"] == _calibration.GRID["one_minus_beta1"]
    assert entry["one_minus_beta2"] == _calibration.GRID["one_minus_beta2"]
    later = {"candidates": ce | {"digits_mse": _pilot(5)["candidates"]["digits_ce"],
                                 "digits_mse_n128": six}}  # fmt: skip
    name, entry = _calibration.family_entry(later)
    assert name == "digits_mse_n128" and (entry["task"], entry["n_samples"]) == ("digits_mse", 128)
    assert _calibration.family_entry({"candidates": ce}) is None
    # a family entry runs its own program at its own eps
    monkeypatch.setitem(_calibration.TASKS, name, entry | {"eps": 1e-9})
    config = {k: p.default for k, p in EXPERIMENT.params.items()} | {"tasks": [name]}
    tasks = [t for t in EXPERIMENT.tasks(config) if t["kind"] == "task"]  # its row groups
    assert tasks and {(t["task"], t["n_samples"], t["hidden"], t["eps"]) for t in tasks} == {
        ("digits_mse", 128, 32, 1e-9)}  # fmt: skip
    plain = {k: p.default for k, p in EXPERIMENT.params.items()} | {"tasks": ["teacher_mse"]}
    assert "eps" not in [t for t in EXPERIMENT.tasks(plain) if t["kind"] == "task"][0]


def test_a_row_reading_uses_the_settled_window_and_the_asked_rise():
    cols = sorted(_family.COLUMNS)
    row = _row(0.1, [(cols[2], [1] * 8), (cols[3], [0] * 8)])
    row["cells"][0]["status"] = [[1, 0]] * 8  # settled spiky, transient quiet
    row["cells"][0]["status_rises"] = [[[1, 1, 0], [0, 0, 0]]] * 8
    assert math.isfinite(_family_pilot.row_reading(row)[0])
    assert not math.isfinite(_family_pilot.row_reading(row, window=1)[0])
    assert not math.isfinite(_family_pilot.row_reading(row, rise=2)[0])


def test_the_pilot_refuses_undeclared_candidates_and_rows():
    with pytest.raises(SystemExit, match="--candidate 'mlp' is not allowed"):
        _family_pilot.main(["--candidate", "mlp"])
    with pytest.raises(SystemExit, match="--row 0.03 is not allowed"):
        _family_pilot.main(["--candidate", "digits_ce", "--row", "0.03"])


def test_the_one_d_C_is_read_from_the_published_summary_and_interpolated_in_n():
    table = _family_wall.one_d_C()
    assert sorted(table) == [3.0, 4.0, 6.0]
    assert all(v[1] <= v[0] <= v[2] for v in table.values())
    assert math.isclose(_family_wall.C_at(4.0, table), table[4.0][0])
    mid = _family_wall.C_at(3.5, table)
    assert math.isclose(mid, math.sqrt(table[3.0][0] * table[4.0][0]))
    assert not math.isfinite(_family_wall.C_at(2.5, table))
    assert not math.isfinite(_family_wall.C_at(7, table))


def test_only_measurements_with_a_core_enter_a_seed_median():
    cell = {"side": "spiky", "exponent": [[3.0, 1.0, 5.0], [1.0, 1.0, 1.0]],
            "s_min": [[0.5, 2.0, -0.4], [1.999, -1.99, 2.0]]}  # fmt: skip
    v = _family_wall.seed_medians([cell], "spiky")
    assert v.size == 2 and v[0] == 4.0 and not np.isfinite(v[1])
    np.testing.assert_array_equal(
        _family_wall.seed_medians([cell], "spiky", core_only=False), [3.0, 1.0]
    )
    assert _family_wall.seed_medians([cell], "quiet").size == 0


def test_the_measure_steps_lie_in_the_settled_window():
    from gaugedyn.experiments.adam_stability._protocol import run_steps, settle_steps

    s = _family_wall.measure_steps(0.1, 0.01, 5)
    assert s[0] == settle_steps(0.1, 0.01) and s[-1] == run_steps(0.1, 0.01) - 1
    assert len(s) == 5 and s == sorted(s)


@pytest.mark.skipif(not _family_pilot.STORED.exists(), reason="no stored family pilot")
def test_the_page_shows_the_stored_family_pilot(monkeypatch):
    tool = _tool()
    assert tool.main(["--check"]) == 0
    pilot = copy.deepcopy(_family_pilot.stored())
    name = next(iter(pilot["candidates"]))
    pilot["candidates"][name]["rows"] = pilot["candidates"][name]["rows"][:-1]
    monkeypatch.setattr(_family_pilot, "stored", lambda: pilot)
    assert tool.main(["--check"]) == 1


@pytest.mark.skipif(not _family_pilot.STORED.exists(), reason="no stored family pilot")
def test_the_stored_family_pilot_reruns_its_cheapest_cell():
    """The stored pilot is what its code gives: the top cell of the first stored row, rerun
    from its own seed, gives the stored statuses."""
    from gaugedyn.experiments.adam_stability._scan import _run_task

    p = _family_pilot.stored()
    # the first stored candidate, and the chosen one (the memorisation task's program)
    for name in dict.fromkeys([next(iter(p["candidates"])), _family_pilot.choose(p)]):
        if name is None:
            continue
        row = p["candidates"][name]["rows"][0]
        top = row["cells"][-1]
        task = _family.family_task(name, [2.0, 24, 200], _family.SEEDS, [row["row"]], [top["c"]])
        r = _run_task(task, _family_pilot.cell_seed(name, row["row"], top["c"]))
        assert r["status"][0, 0].tolist() == top["status"], name
        np.testing.assert_allclose(
            r["settled_median_log10_loss"][0, 0], top["settled_median_log10_loss"], atol=0.011
        )


def test_a_task_runs_at_its_own_adam_eps_and_the_default_without_one():
    """``eps`` of a task reaches Adam (`_scan._run_task`); a task without one runs at
    `_protocol.ADAM_EPS`, the network tasks' eps before the family."""
    from gaugedyn.experiments.adam_stability._protocol import ADAM_EPS
    from gaugedyn.experiments.adam_stability._scan import _run_task

    task = _family.family_task("digits_ce", [2.0, 24, 200], 1, [0.5], [0.3])
    assert task["eps"] == ADAM_EPS == 1e-8
    base = _run_task(task, np.random.SeedSequence(3))["settled_median_log10_loss"]
    bare = {k: v for k, v in task.items() if k != "eps"}
    np.testing.assert_array_equal(
        _run_task(bare, np.random.SeedSequence(3))["settled_median_log10_loss"], base
    )
    big = _run_task(task | {"eps": 1.0}, np.random.SeedSequence(3))["settled_median_log10_loss"]
    assert np.all(big > base + 3)


def _wall(spiky: float, quiet: float) -> dict:
    """A synthetic measurement on the bracket cells of `_pilot(6)`: 8 seeds x 4 measurements,
    the spiky cells' exponents around ``spiky``, the quiet cells' around ``quiet``, every line
    minimum inside the search but one measurement a seed at its end (exponent 1)."""
    rng = np.random.default_rng(0)
    cols = sorted(_family.COLUMNS)
    cells = []
    for a in _family.ROWS[:6]:
        for c, side, n in ((cols[5], "spiky", spiky), (cols[6], "quiet", quiet)):
            e = n + 0.05 * rng.standard_normal((8, 4))
            s_min = np.full((8, 4), 0.5)
            e[:, 0], s_min[:, 0] = 1.0, 2.0
            cells.append({"row": a, "c": c, "side": side, "exponent": e.tolist(),
                          "s_min": s_min.tolist(), "wall": np.full((8, 4), 0.3).tolist(),
                          "status": [1 if side == "spiky" else 0] * 8, "cpu_seconds": 1.0,
                          "log10_loss": np.full((8, 4), -9.0).tolist()})  # fmt: skip
    return {"candidate": "digits_ce", "seed": 1, "cells": cells, "date": "d", "command": "c"}


def test_the_wall_findings_judge_the_spiky_cells_exponent_against_2_and_read_C():
    f = _family_wall.findings(_wall(3.5, 2.0), _pilot(6))
    assert f["spiky"]["verdict"] == "HELD" and f["spiky"]["n"] == 48
    assert 3.4 < f["spiky"]["estimate"] < 3.6 and f["spiky"]["core_share"] == 0.75
    assert f["quiet"]["verdict"] != "HELD" and f["spiky"]["wall_median"] == 0.3
    assert f["spiky"]["all_measurements"][1] < f["spiky"]["estimate"]
    # C: the synthetic edges lie between the 6th and 7th column on every row
    table = _family_wall.one_d_C()
    assert math.isfinite(f["C"][0]) and math.isfinite(f["C_predicted"][0])
    assert f["C_predicted"][0] == _family_wall.C_at(f["spiky"]["estimate"], table)
    assert f["predicts"] == (f["C"][1] <= f["C_predicted"][0] <= f["C"][2])
    assert _family_wall.findings(_wall(1.5, 2.0), _pilot(6))["spiky"]["verdict"] != "HELD"
    lines = _family_wall.wall_markdown(_wall(3.5, 2.0), _pilot(6))
    assert any("exceeds 2 - HELD" in x for x in lines)


@pytest.mark.skipif(not _family_pilot.STORED.exists(), reason="no stored family pilot")
def test_a_wall_cell_repeats_its_pilot_runs_and_measures_every_copy():
    """`_family_wall.wall_cell` reruns a pilot cell with its own seeds (the same verdicts as
    stored) and measures each copy at the asked steps of the settled window."""
    p = _family_pilot.stored()
    name = next(iter(p["candidates"]))
    row = p["candidates"][name]["rows"][0]
    top = row["cells"][-1]
    i, j = _family.ROWS.index(row["row"]), _family.column_index(top["c"])
    z = _family_wall.wall_cell(name, i, j, count=2)
    assert z["status"] == [s[0] for s in top["status"]]
    assert z["steps"] == _family_wall.measure_steps(row["row"], top["c"], 2)
    assert np.shape(z["exponent"]) == np.shape(z["s_min"]) == (_family.SEEDS, 2)
    assert np.all(np.isfinite(z["log10_loss"])) and np.all(np.abs(z["s_min"]) <= 2.0)


def test_the_eps_reading_table_counts_each_cell_s_settled_statuses():
    from gaugedyn.experiments.adam_stability._family_pilot import (
        EPS_COLUMNS,
        EPS_READINGS,
        eps_markdown,
    )

    reading = [
        {"eps": e, "c": c, "status": [[0, 1]] * 6 + [[2, 2]] * 2,
         "settled_median_log10_loss": [-9.0] * 6 + ["nan"] * 2}
        for e in EPS_READINGS for c in EPS_COLUMNS
    ]  # fmt: skip
    lines = eps_markdown(reading)
    assert lines[-1].startswith(f"| {EPS_READINGS[-1]:g} |")
    assert lines[-1].count("6 quiet, 2 undetermined (-9.0)") == len(EPS_COLUMNS)


def test_a_scanned_row_is_stamped_and_merged_in_row_order(monkeypatch):
    """`_family_pilot.add_row` (the family and core-wall pilots' one way to store a row): the
    row's entry carries the load and the date, takes its place in `ROWS` order among the
    candidate's stored rows, replaces an earlier entry of the same row, and leaves the other
    candidates alone."""
    from gaugedyn.experiments.adam_stability import _family_pilot as fp

    calls = []

    def fake(name, i, spikes=None, cols=None):
        calls.append((name, i) if cols is None else (name, i, cols))
        return {"row": fp.ROWS[i], "cells": [], "run": len(calls)}

    monkeypatch.setattr(fp, "scan_row", fake)
    other = {"rows": [{"row": fp.ROWS[0]}]}
    stored = {"other": other}
    a, b = fp.ROWS[2], fp.ROWS[0]
    fp.add_row(stored, "mine", a)
    entry = fp.add_row(stored, "mine", b)
    assert [r["row"] for r in stored["mine"]["rows"]] == [b, a]
    assert entry["run"] == 2 and {"load", "date"} <= set(entry)
    again = fp.add_row(stored, "mine", a)
    assert [r["run"] for r in stored["mine"]["rows"]] == [2, 3] and again["run"] == 3
    assert stored["other"] is other and calls == [("mine", 2), ("mine", 0), ("mine", 2)]

"""The headline configuration of ``prototypes`` (issue 44): its per-size seed counts read from the
protocol, the joint power of the every-cell rule as the product over sizes against a direct
simulation, the cheapest counts against brute force, its seeds disjoint from the published run's
and the pilot's, and one small run end to end."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from gaugedyn import InputError, stats
from gaugedyn._meta import task_seed
from gaugedyn.experiments import load_config, make_config
from gaugedyn.experiments.prototypes import _headline as hl
from gaugedyn.experiments.prototypes import _model as model
from gaugedyn.experiments.prototypes import _power as pw
from gaugedyn.experiments.prototypes import _protocol as pp
from gaugedyn.experiments.prototypes import prototypes as ex

ROOT = Path(__file__).resolve().parents[1]
SIMS = ROOT / "simulations" / "prototypes.toml"


def _headline(**params):
    return make_config(
        {"experiment": "prototypes", "seed": 13, "params": {"design": "headline", **params}}
    )


def test_headline_tasks_take_their_seed_counts_from_the_protocol(monkeypatch):
    cfg = _headline()
    tasks = ex.EXPERIMENT.tasks(cfg.params)
    assert [t["n"] for t in tasks] == cfg.params["sizes"]
    assert [t["seeds"] for t in tasks] == [pp.HEADLINE_SEEDS[n] for n in cfg.params["sizes"]]
    assert {(t["init"], t["coverage"], t["lr"], t["steps"]) for t in tasks} == {
        (pp.HEADLINE_INIT, pp.HEADLINE_COVERAGE, 1e-2, 4000)
    }
    monkeypatch.setitem(pp.HEADLINE_SEEDS, 3, 7)  # one definition: the tasks follow it
    assert ex.EXPERIMENT.tasks(cfg.params)[0]["seeds"] == 7
    with pytest.raises(InputError, match="N = 7"):
        ex.EXPERIMENT.tasks(_headline(sizes=[3, 7]).params)


def test_the_headline_is_a_declared_extension_and_the_full_tasks_are_unchanged():
    assert ex.EXPERIMENT.extensions["headline"] == {"design": "headline"}
    full = ex.EXPERIMENT.tasks(load_config(SIMS).params)
    assert all("design" not in t and "stream" not in t for t in full)  # their seeds as published


def _seqs(tasks, root=13):
    return [task_seed(root, "prototypes", ex.EXPERIMENT.seed_coordinates(t)) for t in tasks]


def test_headline_seeds_are_disjoint_from_the_published_run_and_the_pilot():
    published = json.loads((ROOT / "results-data/prototypes/summary.json").read_text())
    root = int(published["seeds"]["root"])
    full = ex.EXPERIMENT.tasks(load_config(SIMS).params)
    cfg = load_config(SIMS, overrides=["design=headline"])
    head = ex.EXPERIMENT.tasks(cfg.params)
    key = lambda s: (repr(s.entropy), tuple(s.spawn_key))  # noqa: E731
    theirs = {key(s) for s in _seqs(full, root)}
    theirs |= {
        key(np.random.SeedSequence([4444, n, i])) for n in (3, 5, 10, 20, 50, 100) for i in range(2)
    }
    ours = {key(s) for s in _seqs(head, cfg.seed)}
    assert len(ours) == len(head) and not ours & theirs
    # and the inputs drawn: no headline seed's at N = 3 is a published or a pilot seed's
    n3 = [(t, q) for t, q in zip(full, _seqs(full, root)) if t["n"] == 3]
    old = {r.tobytes() for t, q in n3 for r in ex._runs(t, 3, t["init"], q).x}
    for i in range(2):
        pilot = np.random.SeedSequence([4444, 3, i])
        drawn = (
            model.training_data(stats.generator(pilot, "data", s), 3, "sin") for s in range(16)
        )
        old |= {x.tobytes() for x, _ in drawn}
    x = hl.headline_runs(3, head[0]["seeds"], _seqs(head, cfg.seed)[0]).x
    assert len(old) >= 40 and not {r.tobytes() for r in x} & old


def _pilot(rng, n=24):
    """Two sizes x three cells of skewed per-seed values."""
    return rng.lognormal(0.0, 0.8, size=(n, 6)) - 1.0


def test_joint_power_is_the_product_over_sizes_and_matches_a_direct_simulation():
    v = _pilot(np.random.default_rng(3))
    counts, effect = (50, 24), 0.6
    joint, per = pw.joint_power(v, counts, effect, reps=4000, seed=5)
    assert joint == pytest.approx(np.prod(per))
    assert 0.5 < min(per) and max(per) < 0.9  # a product far from either size's power
    # direct: ragged data sets (each size its own count), the rule judging them whole
    rng, reps, held = np.random.default_rng(11), 800, 0
    parts = [pw._smoothed(v[:, pw.size_cells(2, i)]) for i in range(2)]
    for _ in range(reps):
        x = np.full((max(counts), 6), np.nan)
        for i, ((e, h), n) in enumerate(zip(parts, counts)):
            rows = e[rng.integers(0, e.shape[0], n)] + h * rng.standard_normal((n, 3))
            x[:n, pw.size_cells(2, i)] = rows + effect
        j = stats.judge("every_cell_median", x, threshold=0.0, direction=">", rng=rng)
        held += j.verdict == "HELD"
    se = np.sqrt(joint * (1 - joint) / reps)
    assert abs(held / reps - joint) < 4 * se + 0.01
    assert abs(held / reps - min(per)) > 4 * se  # the min (or any one size) is not the power


def test_cheapest_counts_is_the_brute_force_optimum():
    rng = np.random.default_rng(2)
    cand = [10, 20, 40, 80, 160]
    for _ in range(30):
        curves = np.sort(rng.uniform(0.3, 1.0, size=(4, len(cand))), axis=1)
        costs = rng.uniform(0.1, 3.0, size=4)
        got = pw.cheapest_counts(curves, cand, costs, 0.6)
        best = None
        for pick in itertools.product(range(len(cand)), repeat=4):
            p = np.prod([curves[i, j] for i, j in enumerate(pick)])
            c = sum(costs[i] * cand[j] for i, j in enumerate(pick))
            if p >= 0.6 and (best is None or c < best[0] - 1e-12):
                best = (c, [cand[j] for j in pick], p)
        if best is None:
            assert got is None
            continue
        assert got is not None
        assert sum(costs[i] * n for i, n in enumerate(got[0])) == pytest.approx(best[0])
        assert got[1] >= 0.6
    assert pw.cheapest_counts(np.full((2, 2), 0.5), [1, 2], [1.0, 1.0], 0.9) is None


def test_log_ratios_lay_out_each_size_approach_major_with_its_own_count():
    e3 = np.array([[2.0, 1.0, 4.0, 8.0]] * 3)  # plain, cov, sep, ov
    e5 = np.array([[3.0, 1.5, 1.5, 6.0]] * 5)
    v = hl.log_ratios([e3, e5])
    assert v.shape == (5, 6)
    want = np.log([2.0, 2.0, 4.0, 1.0, 8.0, 4.0])  # (plain, sep, ov) x (N = 3, N = 5)
    np.testing.assert_allclose(v[0], want)
    assert np.all(np.isnan(v[3:, [0, 2, 4]])) and np.all(np.isfinite(v[:, [1, 3, 5]]))


def test_a_small_headline_run_judges_each_cell_at_its_own_count(monkeypatch, tmp_path):
    monkeypatch.setitem(pp.HEADLINE_STAGES, "headline", {3: 6, 5: 9})
    cfg = _headline(sizes=[3, 5], steps=1000, budgets=[1000], cap=1000)
    tasks = ex.EXPERIMENT.tasks(cfg.params)
    seeds = _seqs(tasks)
    results = [ex.EXPERIMENT.run_task(t, s) for t, s in zip(tasks, seeds)]
    assert [r["reconstruction_error"].shape for r in results] == [(6, 4), (9, 4)]
    arrays, claims, diag = ex.EXPERIMENT.analyse(cfg.params, tasks, results, seeds[0])
    (c,) = claims
    assert c.id == hl.FINDING and c.rule == "every_cell_median"
    assert [cell["n"] for cell in c.tolerance["cells"]] == [6, 9, 6, 9, 6, 9]
    per = list(c.tolerance["power_by_size"].values())
    assert c.power == pytest.approx(np.prod(per)) and c.underpowered == (c.power < 0.8)
    assert diag["runs_trained"] == 4 * 15
    assert ex.EXPERIMENT.plot(arrays, cfg.params, tmp_path) == []
    summary = {"claims": [c.to_dict()], "diagnostics": diag}
    lines = ex.EXPERIMENT.extension_table({"headline": summary})
    assert len(lines) == 3 and f"**{c.verdict}**" in lines[2]
    assert "3: 6, 5: 9" in lines[2] and f"{c.power:.3f}" in lines[2] and "60 (0.125 x)" in lines[2]
    assert "not published" in ex.EXPERIMENT.extension_table({"headline": None})[2]


# -- stage 2 (issue 44): counts from the pooled pilot and stage 1, its own seed stream ------------

PILOT = ROOT / "results-data/prototypes/pilot.json"
STAGE_1 = ROOT / "results-data/prototypes/extensions/headline/summary.json"


def _stage_1_values():
    claims = json.loads(STAGE_1.read_text())["claims"]
    (claim,) = [c for c in claims if c["id"] == hl.FINDING]
    return np.asarray(claim["per_seed"], dtype=float)


def test_stage_2_tasks_take_their_counts_from_the_protocol(monkeypatch):
    assert ex.EXPERIMENT.extensions["headline-2"] == {"design": "headline-2"}
    cfg = _headline(design="headline-2")
    tasks = ex.EXPERIMENT.tasks(cfg.params)
    want = [pp.HEADLINE_STAGES["headline-2"][n] for n in cfg.params["sizes"]]
    assert [t["seeds"] for t in tasks] == want
    assert pp.HEADLINE_STAGES["headline-2"] is pp.HEADLINE_STAGE_2_SEEDS
    assert {(t["design"], t["stream"]) for t in tasks} == {("headline-2", "headline-2")}
    monkeypatch.setitem(pp.HEADLINE_STAGE_2_SEEDS, 3, 11)  # one definition: the tasks follow it
    assert ex.EXPERIMENT.tasks(cfg.params)[0]["seeds"] == 11
    assert ex.EXPERIMENT.tasks(_headline().params)[0]["seeds"] == pp.HEADLINE_SEEDS[3]
    with pytest.raises(InputError, match="'headline-3'"):
        hl.seed_count(3, "headline-3")


def test_stage_2_counts_are_the_stored_allocation_at_the_declared_target():
    got = json.loads(PILOT.read_text())["stage_2"]
    assert got["target"] == pp.HEADLINE_STAGE_2_TARGET == 0.9
    assert got["effect"] == pp.LOG_RATIO_EFFECT
    assert {int(n): c for n, c in got["counts"].items()} == pp.HEADLINE_STAGE_2_SEEDS
    assert got["joint_power"] - 2 * got["joint_power_se"] >= pp.HEADLINE_STAGE_2_TARGET
    assert got["joint_power"] == pytest.approx(np.prod(list(got["power_by_size"].values())))
    # the pooled rows per size: the pilot's 16 and stage 1's complete rows at that size
    pilot = np.asarray(json.loads(PILOT.read_text())["log_ratios"]["inside|0.01|one-sided"])
    stage1 = _stage_1_values()
    for i, n in enumerate((3, 5, 10, 20, 50, 100)):
        cols = pw.size_cells(6, i)
        direct = len(pilot) + int(np.all(np.isfinite(stage1[:, cols]), axis=1).sum())
        assert got["pooled_rows_by_size"][str(n)] == direct
    assert got["pooled_rows_by_size"]["100"] == 16 + pp.HEADLINE_SEEDS[100]


def test_pooled_power_is_the_power_on_each_sizes_own_rows_of_both_runs():
    rng = np.random.default_rng(8)
    pilot = rng.lognormal(0.0, 0.5, size=(10, 6)) - 0.8
    stage1 = np.full((40, 6), np.nan)  # size 0: 40 seeds, size 1: 12 (nan below)
    stage1[:, pw.size_cells(2, 0)] = rng.lognormal(0.0, 1.5, size=(40, 3)) - 0.8
    stage1[:12, pw.size_cells(2, 1)] = rng.lognormal(0.0, 1.5, size=(12, 3)) - 0.8
    stage1[5, 0] = np.nan  # one incomplete row at size 0 only
    v = pw.pooled(pilot, stage1)
    assert v.shape == (50, 6)
    curves = pw.power_curves(v, 2, (30, 90), 0.3, reps=500, seed=4)
    for i, rows in ((0, 10 + 39), (1, 10 + 12)):
        cols = pw.size_cells(2, i)
        direct = np.vstack([pilot[:, cols], stage1[:, cols]])
        direct = direct[np.all(np.isfinite(direct), axis=1)]
        assert len(direct) == rows
        for j, n in enumerate((30, 90)):
            r = np.random.default_rng(np.random.SeedSequence([4, i, n]))
            assert curves[i, j] == pw.power_at_seeds(direct, n, 0.3, reps=500, rng=r)
    # the wider stage-1 spread lowers the power against the pilot's alone
    assert np.all(curves < pw.power_curves(pilot, 2, (30, 90), 0.3, reps=500, seed=4) + 0.05)
    with pytest.raises(ValueError, match="equal columns"):
        pw.pooled(pilot, stage1[:, :5])


def test_stage_2_seeds_are_disjoint_from_stage_1_the_published_run_and_the_pilot():
    published = json.loads((ROOT / "results-data/prototypes/summary.json").read_text())
    root = int(published["seeds"]["root"])
    assert json.loads(STAGE_1.read_text())["seeds"]["root"] == root
    full = ex.EXPERIMENT.tasks(load_config(SIMS).params)
    one = ex.EXPERIMENT.tasks(load_config(SIMS, overrides=["design=headline"]).params)
    cfg = load_config(SIMS, overrides=['design="headline-2"'])
    two = ex.EXPERIMENT.tasks(cfg.params)
    assert one == json.loads(STAGE_1.read_text())["tasks"]  # stage 1's tasks (seeds) as published
    key = lambda s: (repr(s.entropy), tuple(s.spawn_key))  # noqa: E731
    theirs = {key(s) for s in _seqs(full, root) + _seqs(one, root)}
    theirs |= {
        key(np.random.SeedSequence([4444, n, i])) for n in (3, 5, 10, 20, 50, 100) for i in range(2)
    }
    ours = {key(s) for s in _seqs(two, cfg.seed)}
    assert cfg.seed == root and len(ours) == len(two) and not ours & theirs
    # and the inputs drawn at N = 3: none of stage 2's is one of stage 1's or the pilot's
    x1 = hl.headline_runs(3, one[0]["seeds"], _seqs(one, root)[0]).x
    old = {r.tobytes() for r in x1}
    for i in range(2):
        pilot = np.random.SeedSequence([4444, 3, i])
        drawn = (
            model.training_data(stats.generator(pilot, "data", s), 3, "sin") for s in range(16)
        )
        old |= {x.tobytes() for x, _ in drawn}
    x2 = hl.headline_runs(3, two[0]["seeds"], _seqs(two, cfg.seed)[0]).x
    assert len(old) >= 2560 and not {r.tobytes() for r in x2} & old


def test_the_published_stage_2_is_the_declared_run_judged_on_its_own_values():
    path = ROOT / "results-data/prototypes/extensions/headline-2/summary.json"
    summary = json.loads(path.read_text())
    cfg = load_config(SIMS, overrides=['design="headline-2"'])
    assert summary["tasks"] == ex.EXPERIMENT.tasks(cfg.params)  # the declared counts and stream
    (claim,) = [c for c in summary["claims"] if c["id"] == hl.FINDING]
    per = claim["tolerance"]["power_by_size"]
    assert claim["power"] == pytest.approx(np.prod(list(per.values())))
    assert {int(n): k for n, k in claim["tolerance"]["seeds_per_size"].items()} == (
        pp.HEADLINE_STAGE_2_SEEDS
    )
    sizes = (3, 5, 10, 20, 50, 100)
    cells = [cell["n"] for cell in claim["tolerance"]["cells"]]
    assert cells == [pp.HEADLINE_STAGE_2_SEEDS[n] for n in sizes] * 3  # each cell its own count
    assert claim["underpowered"] == (claim["power"] < 0.8)

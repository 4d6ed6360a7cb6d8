"""spike_boundary's shared pass: each trajectory simulated once and judged by every detector
sampling of a multiverse, each sampling reading what it would read with the primary alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn._meta import task_seed
from gaugedyn.adam import (
    SpikeBlocks,
    SpikeSampling,
    loss_floor,
    simulate_block_sets,
    simulate_blocks,
    spike_block_size,
)
from gaugedyn.experiments.adam_stability import _scan
from gaugedyn.experiments.adam_stability._protocol import (
    CODES,
    NOT_SIMULATED,
    judge_run,
    run_steps,
    settle_steps,
)
from gaugedyn.experiments.adam_stability._scan import select_sampling, task_samplings

ROOT = Path(__file__).resolve().parents[1]
RISE = [2.5, 24, 200]
"""A sampling whose blocks are the primary's (only the threshold moves)."""
COARSE = [2.0, 48, 100]
"""A sampling with other blocks (and so another run length) at every cell."""
FINE = [1.5, 24, 400]


def _task(also=()) -> dict:
    task = {
        "kind": "1d",
        "n": 2.0,
        "start": "generic",
        "a": [0.02, 0.1, 0.5],
        "c": [float(v) for v in np.logspace(np.log10(3e-4), np.log10(0.3), 5)],
        "seeds": 2,
        "bisect_decades": 0.3,
        "eps": 0.0,
        "spikes": [2.0, 24, 200],
        "lr": 1e-2,
    }
    return task | ({"also": [list(z) for z in also]} if also else {})


def _run(task: dict) -> dict:
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    return _scan.run(task, task_seed(0, "spike_boundary", EXPERIMENT.seed_coordinates(task)))


def _evaluated(task: dict, result: dict) -> list[set]:
    """Per sampling, the cells ``(a, c)`` its scan evaluated (coarse and bisection)."""
    a, c = np.asarray(result["a"]), np.asarray(result["c"])
    out = []
    for z in task_samplings(task):
        r = select_sampling(task, result, z)
        st, bc = np.asarray(r["status"]), np.asarray(r["bisect_c"])
        cells = set()
        for i, j in zip(*np.nonzero(np.all(st != NOT_SIMULATED, axis=(2, 3)))):
            cells.add((float(a[i]), float(c[j])))
        for i, j in zip(*np.nonzero(np.isfinite(bc))):
            cells.add((float(a[i]), float(bc[i, j])))
        out.append(cells)
    return out


def check_shared_pass(run=_run) -> None:
    """Each sampling of a shared task reads what it reads beside the primary alone, the
    primary what it reads alone, and the pass simulates every evaluated cell once."""
    alone = run(_task())
    pairs = {tuple(z): run(_task([z])) for z in (RISE, COARSE, FINE)}
    task = _task([RISE, COARSE, FINE])
    shared = run(task)
    for key in ("status", "bisect_status", "rounds"):
        assert np.array_equal(np.asarray(alone[key]), np.asarray(shared[key])), key
    np.testing.assert_allclose(alone["bisect_c"], shared["bisect_c"], rtol=1e-12)
    for z, pair in pairs.items():
        mine = SpikeSampling(*z)
        want = select_sampling(_task([list(z)]), pair, mine)
        got = select_sampling(task, shared, mine)
        for key in ("status", "bisect_status"):
            assert np.array_equal(np.asarray(want[key]), np.asarray(got[key])), (z, key)
        np.testing.assert_allclose(want["bisect_c"], got["bisect_c"], rtol=1e-12)
    scans = _evaluated(task, shared)
    assert shared["cells_run"] == len(set().union(*scans))  # each cell simulated once
    assert shared["cells_run"] < sum(len(x) for x in scans)  # the scans shared cells
    assert alone["cells_run"] == len(_evaluated(_task(), alone)[0])


def test_the_shared_pass_reads_for_each_sampling_what_it_reads_beside_the_primary_alone():
    check_shared_pass()


def test_a_store_keyed_by_the_sampling_is_caught(monkeypatch):
    """A store of runs keyed by the sampling as well (each sampling simulating its own
    cells): every sampling still reads a consistent answer, but the pass no longer runs each
    trajectory once, and the check says so."""
    original = _scan.Trajectories.evaluate

    def keyed_by_sampling(self, q, ar, cs):
        self.cells = self.__dict__.setdefault("per_sampling", {}).setdefault(q, {})
        return original(self, q, ar, cs)

    monkeypatch.setattr(_scan.Trajectories, "evaluate", keyed_by_sampling)
    with pytest.raises(AssertionError):
        check_shared_pass()


def check_against_single_runs() -> None:
    """Each sampling's scan of a shared task reads, at every cell it evaluated, the verdicts of
    that cell's runs simulated here again with `simulate_blocks` at that sampling's own block
    size and run length alone (an independent path: one size, one sampling)."""
    from gaugedyn.experiments.adam_stability.spike_boundary import EXPERIMENT

    task = _task([RISE, COARSE, FINE])
    runs = _scan.Trajectories(
        task, task_seed(0, "spike_boundary", EXPERIMENT.seed_coordinates(task))
    )
    per = _scan.shared_scans(task, runs)
    a, c, floor = np.array(task["a"]), np.array(task["c"]), loss_floor(2.0)
    checked = 0
    for q, (z, r) in enumerate(zip(runs.samplings, per)):
        cells = [(i, c[j], r["status"][i, j]) for i in range(a.size) for j in range(c.size)]
        cells += [
            (i, r["bisect_c"][i, k], r["bisect_status"][i, k])
            for i in range(a.size)
            for k in range(r["bisect_c"].shape[1])
        ]
        for i, cj, got in cells:
            if not np.isfinite(cj) or np.all(got == NOT_SIMULATED):
                continue
            x0, m0, v0 = runs.starts[(float(a[i]), float(cj))]
            steps = int(run_steps(a[i], cj, z))
            size = int(spike_block_size(1 - a[i], 1 - cj, z))
            blocks, used = simulate_blocks(
                x0[None], m0[None], v0[None], [a[i]], [cj], 2.0, 1e-2, 0.0, steps, size, True
            )
            settle = int(settle_steps(a[i], cj))
            for s_ in range(task["seeds"]):
                mine = SpikeBlocks(*(b[: used[0], 0, s_] for b in blocks))
                want = [
                    CODES[str(d["status"])] for d in judge_run(mine, a[i], cj, floor, settle, z)
                ]
                assert got[s_].tolist() == want, (q, a[i], cj)
            checked += 1
    assert checked > len(runs.cells)  # the samplings read common cells


def test_each_sampling_reads_its_own_single_runs_at_every_cell():
    check_against_single_runs()


def test_a_cell_read_by_the_wrong_sampling_is_caught(monkeypatch):
    """A shared pass that hands every sampling the primary's verdicts (a store read without
    its sampling) is caught by the single runs."""
    original = _scan.Trajectories.evaluate

    def primary_for_all(self, q, ar, cs):
        original(self, q, ar, cs)
        return np.stack([self.cells[(float(x), float(y))][0] for x, y in zip(ar, cs)])

    monkeypatch.setattr(_scan.Trajectories, "evaluate", primary_for_all)
    with pytest.raises(AssertionError):
        check_against_single_runs()


@pytest.mark.parametrize("one_row", [False, True])
def test_block_sets_are_the_single_size_blocks_of_one_trajectory(one_row):
    """`simulate_block_sets` at sizes (24, 37, 24) gives at each size the blocks
    `simulate_blocks` gives at that size alone (one trajectory, its steps in one order), with
    the sizes given per trajectory or as one row broadcast over the trajectories."""
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-1, 1, (2, 3)) * 1e-2
    a, c = np.array([0.05, 0.2]), np.array([1e-3, 0.05])
    sizes = np.array([[24, 37, 24], [24, 37, 24]])
    given = sizes[:1] if one_row else sizes
    sets = simulate_block_sets(x0, 0, 0, a, c, 2.0, 1e-2, 0.0, [5000, 3000], given, True)
    for q in range(3):
        blocks, used = simulate_blocks(
            x0, 0, 0, a, c, 2.0, 1e-2, 0.0, [5000, 3000], sizes[:, q], True
        )
        assert sets[q][1].tolist() == used.tolist() == [5000 // sizes[0, q], 3000 // sizes[0, q]]
        for got, want in zip(sets[q][0], blocks):
            for g in range(2):
                np.testing.assert_allclose(
                    np.asarray(got, float)[: used[g], g],
                    np.asarray(want, float)[: used[g], g],
                    rtol=0,
                    atol=0,
                )


def test_a_training_task_shared_reads_each_samplings_own_run():
    """The batched training task run once for three samplings: each reads the verdicts, rises
    and levels of its own run length and blocks (those beside the primary alone)."""
    from gaugedyn.experiments.adam_stability._calibration import TASKS

    cal = TASKS["teacher_mse"]
    base = {
        "kind": "task",
        "task": "teacher_mse",
        "start": "init",
        "a": [0.5, 0.3],
        "c": [0.1, 0.3],
        "seeds": 1,
        "lr": float(cal["lr"]),
        "n_samples": int(cal["n_samples"]),
        "hidden": int(cal["hidden"]),
        "spikes": [2.0, 24, 200],
    }
    shared_task = base | {"also": [RISE, COARSE]}
    shared = _run(shared_task)
    alone = _run(base)
    assert np.array_equal(alone["status_rises"], shared["status_rises"])
    for z in (RISE, COARSE):
        pair_task = base | {"also": [z]}
        want = select_sampling(pair_task, _run(pair_task), SpikeSampling(*z))
        got = select_sampling(shared_task, shared, SpikeSampling(*z))
        assert np.array_equal(want["status_rises"], got["status_rises"]), z
        np.testing.assert_allclose(want["max_rise"], got["max_rise"], rtol=1e-12)
        np.testing.assert_allclose(
            want["settled_median_log10_loss"], got["settled_median_log10_loss"], rtol=1e-12
        )
    # each copy runs the longest any sampling needs at its own cell
    longest = np.max(
        [
            _scan.run_steps(np.array(base["a"])[:, None], np.array(base["c"]), SpikeSampling(*z))
            for z in ([2.0, 24, 200], RISE, COARSE)
        ],
        axis=0,
    )
    assert shared["steps_run"] == int(longest.sum()) and shared["steps_longest"] == longest.max()
    with pytest.raises(ValueError, match="not among"):
        select_sampling(shared_task, shared, SpikeSampling(2.2, 24, 200))


def test_shared_settings_are_checked_against_the_declared_space():
    from gaugedyn.harness import load_config

    path = ROOT / "simulations/spike_boundary.toml"
    ok = load_config(path, quick=True, overrides=["spike_shared=['2.0/24/200', '2.5/48/100']"])
    tasks = [t for t in ok.tasks if t["kind"] == "1d"]
    assert all(t["spikes"] == [2.0, 24, 200] and t["also"] == [[2.5, 48, 100]] for t in tasks)
    for bad, words in [
        ("['2.0/24/200', '3.0/24/200']", "spike_rise=3.0 lies outside"),
        ("['2.0/24/200', '2.0/30/200']", "spike_block_min=30 lies outside"),
        ("['2.0/24']", "write rise/block_min/blocks_per_horizon"),
        ("['2.5/24/200']", "own sampling"),
    ]:
        with pytest.raises(InputError, match=words):
            load_config(path, quick=True, overrides=[f"spike_shared={bad}"])


@pytest.mark.slow
def test_a_spike_boundary_multiverse_computes_each_task_once(tmp_path):
    """A quick multiverse over the blocks per horizon (three specifications): one shared
    record per task in the store, read by every specification, and every specification's
    verdicts those of its own analysis of the shared results."""
    from gaugedyn.harness import load_config
    from gaugedyn.harness._folders import TASKS
    from gaugedyn.harness._multiverse import run_multiverse
    from gaugedyn.harness._store import ResultStore

    cfg = load_config(
        ROOT / "simulations/spike_boundary.toml",
        quick=True,
        overrides=[
            "ns=[2.0]",
            "tasks=[]",
            "check_steps=500",
            f"one_minus_beta2={[float(v) for v in np.logspace(np.log10(3e-5), np.log10(0.3), 9)]}",
        ],
    )
    constant = "spike_blocks_per_horizon"
    cfg = dataclasses.replace(cfg, space={constant: cfg.space[constant]})
    outcome = run_multiverse(cfg, tmp_path / "mv", samples=0, executor="serial", progress=None)
    specs = outcome.summary["multiverse"]["specifications"]
    assert [s["values"] for s in specs] == [{}, {constant: 100}, {constant: 400}]
    assert all(s["status"] in ("passed", "claims failed") for s in specs)
    store = ResultStore(tmp_path / "mv" / TASKS)
    metas = [m for m in map(store.meta, store.keys()) if m and "specification" not in m]
    assert len(metas) == len(cfg.tasks)  # the check and two starts, each once
    assert all(
        t["also"] == [[2.0, 24, 100], [2.0, 24, 400]]
        for t in outcome.summary["tasks"]
        if "also" in t
    )


def test_the_summary_says_what_a_shared_tasks_seed_derives_from():
    """``seeds.derivation`` of a shared multiverse names ``also`` as left out of the seed (the
    seed is `EXPERIMENT.seed_coordinates()`'s, not the whole task's), a run of scanned network
    tasks ``rows``; a plain run with every cell read leaves out nothing."""
    from gaugedyn.harness import load_config
    from gaugedyn.harness._summary import summary_head

    path = ROOT / "simulations/spike_boundary.toml"
    plain = load_config(path, quick=True)
    shared = load_config(path, quick=True, overrides=["spike_shared=['2.0/24/200', '2.5/48/100']"])
    said = [summary_head(cfg, None)["seeds"]["derivation"] for cfg in (plain, shared)]
    assert all("seed_coordinates(task)" in s for s in said)
    # a scanned network task (the default task design) is split by rows on the task's one seed
    assert "the task less 'rows'" in said[0] and "'also'" not in said[0]
    assert "the task less 'also', 'rows'" in said[1]
    plain_tasks = load_config(path, quick=True, overrides=["task_bracket_stride=0"])
    assert summary_head(plain_tasks, None)["seeds"]["derivation"].endswith("the task")


def test_the_shared_pass_does_not_label_a_full_specification_provisional():
    """The multiverse's shared pass sets ``spike_shared`` on every specification; it changes none
    of their results, so the full configuration with it set is still the full one (its findings
    not prefixed "provisional (reduced configuration)", as the first published multiverse's
    were): the harness leaves the settings a shared pass gave out of the label."""
    from gaugedyn.harness import load_config
    from gaugedyn.harness._multiverse import shared_config
    from gaugedyn.harness._protocol import configuration_label
    from gaugedyn.harness._summary import label_keys

    cfg = load_config(ROOT / "simulations/spike_boundary.toml")
    exp = cfg.experiment
    specs = [{"values": {}}, {"values": {"spike_rise": 1.5}}]
    shared = shared_config(cfg, specs)
    assert shared.params["spike_shared"] and shared.shared == ("spike_shared",)
    assert configuration_label(shared.params, exp.params, label_keys(shared)) == ""
    # the same settings given by hand are not a shared pass: labelled
    by_hand = dataclasses.replace(shared, shared=())
    assert configuration_label(by_hand.params, exp.params, label_keys(by_hand)).startswith(
        "provisional"
    )

"""gauge_under_adam trains every (beta1, beta2) of a D as one program: each cell of the batched
task equals the same cell trained alone, bit for bit, with the seed the cell had as its own task."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from gaugedyn import InputError  # noqa: E402
from gaugedyn._meta import task_seed  # noqa: E402
from gaugedyn.experiments import make_config  # noqa: E402
from gaugedyn.experiments.adam_split import _protocol as ap
from gaugedyn.experiments.adam_split import gauge_under_adam as ga  # noqa: E402

PARAMS = {
    "dims": [6],
    "betas": [[0.9, 0.9], [0.9, 0.99], [0.99, 0.9]],
    "seeds": 2,
    "steps": 30,
    "lr": 0.05,
    "batch": 12,
    "bins": 3,
    "pairs_per_task": 3,
}


def test_pairs_per_task_groups_the_cells_and_defaults_to_one_task_per_cell():
    one = make_config(
        {"experiment": "gauge_under_adam", "seed": 4, "params": {**PARAMS, "pairs_per_task": 1}}
    )
    two = make_config(
        {"experiment": "gauge_under_adam", "seed": 4, "params": {**PARAMS, "pairs_per_task": 2}}
    )
    assert [t["betas"] for t in one.tasks] == [[p] for p in PARAMS["betas"]]
    assert [t["betas"] for t in two.tasks] == [PARAMS["betas"][:2], PARAMS["betas"][2:]]
    assert ga.EXPERIMENT.params["pairs_per_task"].default == 1


def test_a_cell_of_the_batched_task_equals_the_cell_alone_bitwise():
    cfg = make_config({"experiment": "gauge_under_adam", "seed": 4, "params": PARAMS})
    (task,) = cfg.tasks  # one task per D, every beta pair in it
    batched = ga.EXPERIMENT.run_task(task, task_seed(cfg.seed, cfg.name, task))
    for j, pair in enumerate(PARAMS["betas"]):
        lone = {**task, "betas": [pair]}
        alone = ga.EXPERIMENT.run_task(lone, task_seed(cfg.seed, cfg.name, lone))
        assert set(alone) == set(batched)
        for key, value in alone.items():
            got = batched[key] if key == "time" else batched[key][j : j + 1]
            np.testing.assert_array_equal(got, value, err_msg=f"{pair} {key}")
        # the probe's checks, per cell
        assert alone["probe_counter_ok"].all() and (alone["probe_calls"] == 30).all()
        assert alone["sum_error"][0] <= ap.SUM_TOL and alone["applied_error"][0] <= ap.APPLIED_TOL
        assert (alone["lag_norm_max"][0] == 0.0) == (pair[0] == pair[1])
    # a cell's seed is the one the harness gave the cell as its own task (before the batching)
    for cell in ap.cell_tasks(task):
        old = task_seed(cfg.seed, cfg.name, cell)
        assert (
            ga.cell_seed(task_seed(cfg.seed, cfg.name, task), cell).generate_state(4).tolist()
            == old.generate_state(4).tolist()
        )


def test_cell_seed_refuses_a_seed_without_one_integer_entropy():
    with pytest.raises(InputError, match="entropy"):
        ga.cell_seed(np.random.SeedSequence([1, 2]), {"dim": 6})

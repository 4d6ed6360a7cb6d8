"""The batched beta grid (``experiments/adam_split/_batched.py``): each copy of a batch equals
the same copy trained alone, bit for bit on the CPU (in a batch of one, and against
``torch.optim.Adam`` in ``tasks.train_task``), the streaming split sums equal the float64
reference's, and the checks fail on a broken step."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.experiments.adam_split import _batched as bt
from gaugedyn.experiments.adam_split import _protocol as ap
from gaugedyn.experiments.adam_split import beta_grid as bg
from gaugedyn.experiments.adam_split.tasks import DEFAULTS, TASKS, train_task

COPIES = [(0.9, 0.99, 11), (0.9, 0.9, 12), (0.99, 0.9, 13)]
STEPS = 5


@pytest.mark.parametrize("task", TASKS)
def test_each_batched_copy_equals_the_copy_alone(task):
    """The loop path: bitwise ``torch.optim.Adam`` (the stacked path: ``test_stacked.py``)."""
    lr = DEFAULTS[task]["lr"]
    batch = bt.train_copies(task, COPIES, STEPS, lr, reference=[0, 1, 2], forward="loop")
    for c, (b1, b2, seed) in enumerate(COPIES):
        alone = bt.train_copies(task, [(b1, b2, seed)], STEPS, lr, reference=[0], forward="loop")
        for key in ("loss", "sums", "final_loss", "initial_loss", "nonfinite_step"):
            np.testing.assert_array_equal(batch[key][c], alone[key][0], err_msg=key)
        np.testing.assert_array_equal(batch["reference"][c], alone["reference"][0])
        # torch.optim.Adam on the task's own model: the same trajectory, bit for bit
        ref = train_task(task, b1, b2, seed=seed, steps=STEPS, lr=lr)
        np.testing.assert_array_equal(batch["loss"][c], ref["loss"])
        assert batch["final_loss"][c] == ref["final_loss"]
        # the same float64 split of the same states, summed over the parameters in another order
        np.testing.assert_allclose(batch["reference"][c], ref["reference"], rtol=1e-9, atol=1e-12)
        assert bt.reference_error(batch["sums"][c], ref["reference"]) < ap.REFERENCE_TOL
    assert np.all(batch["sums"][1, :, 2] == 0.0) and np.all(batch["sums"][[0, 2], :, 2] > 0)
    assert batch["lag_abs_max"][1] == 0.0
    assert max(batch["sum_error"]) <= ap.SUM_TOL and max(batch["applied_ratio"]) <= 1.0
    assert max(batch["reference_error"]) <= ap.REFERENCE_TOL


def test_reference_error_sees_a_one_percent_error_in_one_norm():
    out = bt.train_copies("digits_cnn", COPIES[:1], 8, 2e-3, reference=[0])
    assert out["reference_error"][0] < ap.REFERENCE_TOL
    sums = out["sums"][0].copy()
    sums[5, 2] *= 1.01**2  # a 1% error in one step's lag norm
    assert bt.reference_error(sums, out["reference"][0]) > ap.REFERENCE_TOL


@pytest.mark.parametrize(
    ("task", "steps", "forward"), [("teacher_student", 4, "loop"), ("digits_cnn", 3, "stacked")]
)
def test_a_step_that_is_not_the_split_update_fails_the_applied_check(
    task, steps, forward, monkeypatch
):
    block = bt._block

    def shifted(p, *args):  # a bug: the parameters move by more than the split update says
        block(p, *args)
        p.add_(1e-4)

    monkeypatch.setattr(bt, "_block", shifted)
    out = bt.train_copies(task, COPIES[:1], steps, 2e-3, reference=[0], forward=forward)
    assert out["applied_ratio"][0] > 1.0 and out["sum_error"][0] <= ap.SUM_TOL


@pytest.mark.parametrize("forward", bt.FORWARDS)
def test_a_copy_with_a_nonfinite_loss_stops_there_as_train_task_does(forward):
    out = bt.train_copies("teacher_student", COPIES[:2], 6, 1e30, reference=[0], forward=forward)
    for c, (b1, b2, seed) in enumerate(COPIES[:2]):
        ref = train_task("teacher_student", b1, b2, seed=seed, steps=6, lr=1e30)
        stop = ref["nonfinite_step"]
        assert out["nonfinite_step"][c] == stop >= 0
        rtol = 0 if forward == "loop" else 1e-6  # the stacked pass: float32 round-off
        np.testing.assert_allclose(out["loss"][c, :stop], ref["loss"][:stop], rtol=rtol)
        # which non-finite value (inf or nan) the overflow gives is the platform's: not compared
        assert not np.isfinite(out["loss"][c, stop]) and not np.isfinite(ref["loss"][stop])
        assert not np.isfinite(out["loss"][c, stop:]).any()
        assert not np.isfinite(ref["loss"][stop:]).any()
        assert not np.isfinite(out["final_loss"][c]) and not np.isfinite(ref["final_loss"])
        assert not np.isfinite(out["sums"][c, stop:]).any()


def test_copies_and_their_seeds_and_the_reference_subset():
    task = {
        "task": "digits_mlp",
        "beta1s": [0.9, 0.99, 0.8],
        "beta2s": [0.99, 0.9],
        "seeds": 2,
        "steps": 3,
        "lr": 0.0,
        "reference": "corners",
    }
    cells = bg.copies_of(task)
    assert len(cells) == 12 and cells[:3] == [(0.9, 0.99, 0), (0.9, 0.99, 1), (0.9, 0.9, 0)]
    assert [cells[i] for i in bg.reference_copies(task)] == [
        (0.99, 0.99, 0),
        (0.99, 0.9, 0),
        (0.8, 0.99, 0),
        (0.8, 0.9, 0),
    ]
    assert bg.reference_copies(task | {"reference": "all"}) == list(range(12))
    seq = np.random.SeedSequence(5)
    seeds = bg.copy_seeds(seq, cells)
    again = bg.copy_seeds(np.random.SeedSequence(5), cells[5:6])  # a copy's seed: its own
    assert seeds[5].generate_state(2).tolist() == again[0].generate_state(2).tolist()
    assert len({tuple(s.generate_state(2)) for s in seeds}) == 12


def test_bad_copies_are_one_error_line():
    with pytest.raises(InputError, match="task="):
        bt.train_copies("mnist", COPIES, 2, 1e-3)
    with pytest.raises(InputError, match="betas"):
        bt.train_copies("teacher_student", [(1.0, 0.9, 1)], 2, 1e-3)
    with pytest.raises(InputError, match="reference"):
        bt.train_copies("teacher_student", COPIES, 2, 1e-3, reference=[3])
    with pytest.raises(InputError, match="forward='vmap'"):
        bt.train_copies("teacher_student", COPIES, 2, 1e-3, forward="vmap")
    with pytest.raises(InputError, match="device"):
        from gaugedyn.experiments import make_config

        make_config({"experiment": "beta_grid", "params": {"device": "gpu"}})

"""The batched full-batch Adam of adam_stability._batched against torch.optim.Adam, copy by copy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.experiments.adam_stability import _edge, adam_edge
from gaugedyn.experiments.adam_stability._batched import (
    LABEL_NOISE,
    BatchedMLP,
    adam_steps,
    noisy_labels,
)


@pytest.mark.parametrize("task", ["digits_ce", "digits_mse", "teacher_mse", "teacher4_mse"])
def test_per_copy_betas_reproduce_torch_adam(task):
    betas = [(0.9, 0.999), (0.5, 0.9), (0.0, 0.99)]
    model = BatchedMLP(task, len(betas), [3, 4, 5], n_samples=32)
    start = [p.detach().clone() for p in model.params]
    blocks, first = adam_steps(model, 1e-2, [b[0] for b in betas], [b[1] for b in betas], 6, 1)
    for k, (b1, b2) in enumerate(betas):
        ps = [p[k].clone().requires_grad_(True) for p in start]
        opt = torch.optim.Adam(ps, lr=1e-2, betas=(b1, b2), eps=1e-8)
        want = []
        for _ in range(6):
            opt.zero_grad()
            L = model.losses([p[None] for p in ps])[0]
            want.append(float(torch.log10(L.detach())))
            L.backward()
            opt.step()
        # blocks of one step: the median, the maximum and the minimum are the step's loss
        for stat in blocks[k][:3]:
            np.testing.assert_allclose(stat, want, rtol=1e-12)
        assert first[k] == pytest.approx(want[0], rel=1e-12)
        for p, q in zip(model.params, ps):
            torch.testing.assert_close(p[k].detach(), q.detach(), rtol=1e-10, atol=1e-12)


def test_in_loop_block_statistics_equal_the_detectors_on_the_whole_curve():
    """The training loop's blocks (copies of different block sizes, a nan, an exact zero and a
    loss above the first) equal :func:`gaugedyn.adam.spike_block_statistics` of each curve."""
    from gaugedyn.adam import FLOAT64_FLOOR, spike_block_statistics
    from gaugedyn.experiments.adam_stability._batched import BlockStatistics

    rng = np.random.default_rng(0)
    curves = -5.0 - 0.05 * np.arange(100)[:, None] + 0.01 * rng.standard_normal((100, 3))
    curves[40, 0] = np.nan
    curves[10, 1] = -np.inf
    curves[70, 2] = curves[0, 2] + 1.0  # above the ceiling (the first loss)
    size = [4, 7, 4]
    acc = BlockStatistics(size, "cpu")
    for row in torch.as_tensor(curves):
        acc.push(row)
    for k, got in enumerate(acc.blocks()):
        want = spike_block_statistics(curves[:, k], size[k], FLOAT64_FLOOR, curves[0, k])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert [bool(b.bad.any()) for b in acc.blocks()] == [True, False, True]


def test_digits_mse_is_adam_edges_mse_loss():
    # one definition of the digits MSE: the batched task's loss equals adam_edge's on the same net
    model = BatchedMLP("digits_mse", 1, [7], n_samples=40, hidden=32)
    net, loss_fn = _edge._setup("mse", 40, 0)
    W1, b1, W2, b2 = (p[0].detach() for p in model.params)
    with torch.no_grad():
        net[0].weight.copy_(W1.T)
        net[0].bias.copy_(b1[0])
        net[2].weight.copy_(W2.T)
        net[2].bias.copy_(b2[0])
    torch.testing.assert_close(model.losses()[0].detach(), loss_fn().detach(), rtol=1e-13, atol=0)


def test_noisy_labels_replace_the_stated_share_by_another_class():
    y = torch.arange(1797) % 10
    z = noisy_labels(y)
    changed = (z != y).double().mean().item()
    assert abs(changed - LABEL_NOISE) < 4 * (LABEL_NOISE * (1 - LABEL_NOISE) / 1797) ** 0.5
    assert torch.equal(z, noisy_labels(y))  # one fixed draw
    assert int(z.min()) >= 0 and int(z.max()) <= 9
    assert not torch.equal(z, noisy_labels(y, seed=1))


def test_adam_edge_declares_the_losses_edge_defines():
    assert adam_edge.LOSSES == _edge.LOSSES


def test_copies_of_their_own_length_equal_each_copy_run_alone():
    """`adam_step_sets` with per-copy run lengths (the batch shrinking as copies end): each
    copy's whole blocks, ``steps // size`` of them, and its final parameters equal those of the
    copy run alone for its own steps; the blocks after a copy's end read nan and flagged."""
    from gaugedyn.adam import FLOAT64_FLOOR
    from gaugedyn.experiments.adam_stability._batched import adam_step_sets

    seeds, steps, size = [7, 8, 9, 10], [9, 20, 14, 20], [2, 3, 2, 4]
    b1, b2 = [0.5, 0.7, 0.9, 0.8], [0.9, 0.99, 0.97, 0.95]
    model = BatchedMLP("teacher_mse", 4, seeds, n_samples=16, hidden=4)
    sets, first = adam_step_sets(model, 1e-2, b1, b2, steps, [size])
    for k in range(4):
        alone = BatchedMLP("teacher_mse", 1, [seeds[k]], n_samples=16, hidden=4)
        want, f0 = adam_steps(alone, 1e-2, [b1[k]], [b2[k]], steps[k], [size[k]])
        n = steps[k] // size[k]
        for got, ref in zip(sets[0][k], want[0]):
            np.testing.assert_allclose(
                np.asarray(got[:n], float), np.asarray(ref, float), rtol=1e-12
            )
        assert first[k] == pytest.approx(f0[0], rel=1e-12)
        for p, q in zip(model.params, alone.params):
            torch.testing.assert_close(p[k].detach(), q[0].detach(), rtol=1e-10, atol=1e-12)
        after = slice(n + (steps[k] % size[k] > 0), None)  # the blocks past its end: nan
        assert np.all(sets[0][k].bad[after]) and np.all(sets[0][k].median[after] == FLOAT64_FLOOR)
    with pytest.raises(Exception, match="steps=-1"):
        adam_step_sets(model, 1e-2, b1, b2, [3, -1, 2, 2], [size])

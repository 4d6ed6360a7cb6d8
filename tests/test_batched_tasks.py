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


def _reference_mse(X, y, params):
    """The hand gradient as it was before the fast path (``masked_fill_`` of ``~(Z > 0)``,
    new tensors throughout): the reference the fast path must equal bit for bit."""
    W1, b1, W2, b2 = (p.detach() for p in params)
    B, h, k = W1.shape[0], W1.shape[-1], W2.shape[-1]
    n = X.shape[0]
    Z = torch.matmul(X, W1) + b1
    A = Z.clamp(min=0)
    out = (A * W2.view(B, 1, h)).sum(-1, keepdim=True) if k == 1 else torch.matmul(A, W2)
    r = out + b2 - y
    L = 0.5 * (r * r).sum(-1).mean(-1)
    dout = r / n
    if k == 1:
        dW2 = (A * dout).sum(1).view(B, h, 1)
        dA = dout * W2.view(B, 1, h)
    else:
        dW2 = torch.matmul(A.transpose(1, 2), dout)
        dA = torch.matmul(dout, W2.transpose(1, 2))
    dZ = dA.masked_fill_(~(Z > 0), 0.0)
    return L, [torch.matmul(X.T, dZ), dZ.sum(1, keepdim=True), dW2, dout.sum(1, keepdim=True)]


def _reference_step_sets(model, lr, beta1, beta2, steps, sizes, weight_decay=0.0, watch=None):
    """`adam_step_sets` as it ran before the fast path: `gaugedyn.adam.adam_factors` and
    `gaugedyn.adam.batched_adam_step` (``op_order="running"``) tensor by tensor on each copy's
    own tensors, the batch sliced every step."""
    from gaugedyn.adam import adam_factors, batched_adam_step
    from gaugedyn.experiments.adam_stability._batched import BlockStatistics

    B = model.params[0].shape[0]
    length = np.broadcast_to(np.asarray(steps, dtype=np.int64), (B,))
    order = np.argsort(-length, kind="stable")
    idx = torch.as_tensor(order)
    ends = length[order]
    betas = tuple(np.broadcast_to(np.asarray(b, float), (B,))[order].copy() for b in (beta1, beta2))
    params = [p.detach()[idx].clone() for p in model.params]
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    accs = [BlockStatistics(np.broadcast_to(np.asarray(z), (B,))[order], "cpu") for z in sizes]
    back_t = torch.as_tensor(np.argsort(order, kind="stable"))
    ell = torch.full((B,), np.nan, dtype=torch.float64)
    factors = None
    for t in range(int(ends[0]) if B else 0):
        live = int(np.searchsorted(-ends, -t, side="left"))
        mine = [q[:live] for q in params]
        if type(model) is BatchedMLP and model.task != "digits_ce":
            L, grads = _reference_mse(model.X, model.y, mine)
        else:  # autograd, or a program's own gradient (the family's)
            L, grads = model.losses_and_grads(mine)
        with torch.no_grad():
            factors = (
                adam_factors(1, lr=lr, betas=betas, op_order="running", like=params[0])
                if factors is None
                else factors.next()
            )
            before = [q[back_t].clone() for q in params] if watch and t in watch[0] else None
            if weight_decay:
                for p in params:
                    p[:live].mul_(1.0 - lr * weight_decay)
            batched_adam_step(
                [p[:live] for p in params],
                grads,
                [z[:live] for z in m],
                [z[:live] for z in v],
                factors.rows(slice(0, live)),
                eps=1e-8,
            )
            ell[:live] = torch.log10(L.detach().double())
            ell[live:] = np.nan
            if before is not None:
                watch[1](t, before, [q[back_t].clone() for q in params])
            for acc in accs:
                acc.push(ell)
    back = np.argsort(order, kind="stable")
    final = [q[back_t] for q in params]
    sets = [acc.blocks() for acc in accs]
    return [[z[int(k)] for k in back] for z in sets], accs[0].ceiling.numpy()[back], final


def _flat_views_multiply_as_stacked(task, copies, seeds, hidden) -> bool:
    """Whether this machine's matrix library gives the flat buffer's views (`FlatParams`: rows of
    one buffer, each tensor 64-byte aligned) the same bits as the stacked tensors they were
    copied from, in the batched products the tasks make. The fast update's bit-for-bit claim
    rests on it; the library's kernels are the machine's, so elsewhere the test is skipped (a
    probe, as the fused Adam step's tests do)."""
    from gaugedyn.experiments.adam_stability._batched import FlatParams, task_model

    params = task_model(task, copies, seeds, n_samples=48, hidden=hidden).params
    flat = FlatParams(params, torch.arange(copies))
    gen = torch.Generator().manual_seed(0)
    for view in flat.views(copies):
        if view.dim() != 3:
            continue
        x = torch.randn(copies, 7, view.shape[1], generator=gen, dtype=view.dtype)
        y = torch.randn(copies, view.shape[2], 5, generator=gen, dtype=view.dtype)
        same = view.contiguous()
        if not (
            torch.equal(torch.bmm(x, view), torch.bmm(x, same))
            and torch.equal(torch.bmm(view, y), torch.bmm(same, y))
        ):
            return False
    return True


@pytest.mark.parametrize(
    "task, copies, decay",
    [
        ("teacher_mse", 1, 0.0),
        ("teacher_mse", 5, 0.0),
        ("teacher4_mse", 5, 0.0),
        ("digits_mse", 4, 0.0),
        ("digits_ce", 4, 0.0),
        ("teacher_mse", 5, 0.1),
        ("digits_ce", 1, 0.1),
        ("digits_white_mse", 3, 0.0),
        ("digits_lowrank", 3, 0.0),
    ],
)
def test_the_fast_update_equals_adam_tensor_by_tensor_bit_for_bit(task, copies, decay):
    """`adam_step_sets` (the flat buffer, `FlatParams`; the hand gradient's ReLU backward by
    ``threshold_backward``) equals the update it replaced, `gaugedyn.adam.batched_adam_step`
    tensor by tensor with the ``masked_fill_`` gradient, bit for bit: every block statistic,
    the first losses, the final parameters and what a watch sees, at one copy and several of
    their own run lengths, betas and block sizes, with and without weight decay."""
    from gaugedyn.experiments.adam_stability._batched import adam_step_sets

    rng = np.random.default_rng(copies)
    seeds = list(range(11, 11 + copies))
    b1 = rng.choice([0.5, 0.8, 0.9, 0.95], copies)
    b2 = rng.choice([0.7, 0.9, 0.99, 0.999], copies)
    steps = rng.integers(20, 60, copies)
    sizes = [rng.integers(2, 6, copies), 3]
    hidden = {"teacher_mse": 8, "teacher4_mse": 16, "digits_lowrank": 4}.get(task, 32)
    if not _flat_views_multiply_as_stacked(task, copies, seeds, hidden):
        pytest.skip("this machine's matrix library gives the flat buffer's views other bits")
    seen: dict[str, list] = {"fast": [], "ref": []}

    def model():
        from gaugedyn.experiments.adam_stability._batched import task_model

        return task_model(task, copies, seeds, n_samples=48, hidden=hidden)

    fast = model()
    sets, first = adam_step_sets(
        fast,
        3e-2,
        b1,
        b2,
        steps,
        sizes,
        weight_decay=decay,
        watch=(
            {0, 7, 19},
            lambda t, b: seen["fast"].append((t, b, [p.clone() for p in fast.params])),
        ),
    )
    ref_sets, ref_first, ref_final = _reference_step_sets(
        model(),
        3e-2,
        b1,
        b2,
        steps,
        sizes,
        decay,
        watch=({0, 7, 19}, lambda t, b, after: seen["ref"].append((t, b, after))),
    )
    for got, want in zip(sets, ref_sets):
        for g, w in zip(got, want):
            for x, y in zip(g, w):
                np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(first, ref_first)
    for p, q in zip(fast.params, ref_final):
        assert torch.equal(p.detach(), q)
    assert [t for t, *_ in seen["fast"]] == [t for t, *_ in seen["ref"]] == [0, 7, 19]
    for (_, b, a), (_, rb, ra) in zip(seen["fast"], seen["ref"]):
        assert all(torch.equal(x, y) for x, y in zip(b, rb))
        assert all(torch.equal(x.detach(), y) for x, y in zip(a, ra))


def test_the_relu_backward_differs_from_the_masked_fill_only_where_the_loss_is_nan():
    """``threshold_backward`` keeps the gradient where ``Z`` is ``nan`` (``masked_fill_`` of
    ``~(Z > 0)`` zeroes it): with a ``nan`` planted in one copy's first layer that copy's loss
    is ``nan``, its ``b2`` gradient is ``nan`` (so every later loss is), and every other copy's
    loss and gradients are the same bits; a run from there gives the same blocks."""
    from gaugedyn.experiments.adam_stability._batched import adam_step_sets, mse_losses_and_grads

    model = BatchedMLP("teacher_mse", 3, [1, 2, 3], n_samples=32, hidden=8)
    with torch.no_grad():
        model.params[0][1, 4, 2] = np.nan
    L, grads = mse_losses_and_grads(model.X, model.y, model.params)
    L0, grads0 = _reference_mse(model.X, model.y, model.params)
    assert torch.isnan(L[1]) and torch.isnan(L0[1]) and torch.isnan(grads[3][1]).all()
    keep = [0, 2]
    assert torch.equal(L[keep], L0[keep])
    for g, g0 in zip(grads, grads0):
        assert torch.equal(g[keep], g0[keep])
    sets, _ = adam_step_sets(model, 1e-2, [0.9] * 3, [0.99] * 3, 12, [2])
    model2 = BatchedMLP("teacher_mse", 3, [1, 2, 3], n_samples=32, hidden=8)
    with torch.no_grad():
        model2.params[0][1, 4, 2] = np.nan
    ref, _, _ = _reference_step_sets(model2, 1e-2, [0.9] * 3, [0.99] * 3, 12, [2])
    for g, w in zip(sets[0], ref[0]):
        for x, y in zip(g, w):
            np.testing.assert_array_equal(x, y)
    assert ref[0][1].bad.all()

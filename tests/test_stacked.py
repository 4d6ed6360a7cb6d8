"""The stacked forward passes (``experiments/adam_split/_stacked.py``): each builder against the
task's own per-copy modules (outputs and every parameter's gradient), and ``train_copies``'s
stacked path against its loop path (which is bitwise ``torch.optim.Adam``), in float64 to
round-off and in float32 to a stated tolerance; a copy in a batch equals the copy alone; the
checks still fail on a broken step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.adam import READING_SUMS
from gaugedyn.experiments.adam_split import _batched as bt
from gaugedyn.experiments.adam_split import _protocol as ap
from gaugedyn.experiments.adam_split._stacked import STACKED
from gaugedyn.experiments.adam_split.tasks import DEFAULTS

COPIES = [(0.9, 0.99, 11), (0.9, 0.9, 12), (0.99, 0.9, 13)]
TOL = {torch.float64: 1e-12, torch.float32: 1e-5}
"""Largest ``|stacked - per copy| / max |per copy|`` of outputs and gradients."""


def _stacked_and_alone(task, seeds, dtype, gaussian=False):
    """Outputs and gradients (of the per-copy losses' sum) of the stacked pass and of the
    per-copy modules, on each copy's first minibatch (``gaussian``: its images replaced by
    Gaussian noise)."""
    built = [bt._build(task, s, dtype, "cpu") for s in seeds]
    models = [b[0] for b in built]
    shapes = [p.shape for p in models[0].parameters()]
    sizes = [p.numel() for p in models[0].parameters()]
    B = len(seeds)
    flat = torch.stack(
        [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
    ).requires_grad_()
    draws = [b[2](b[1]) for b in built]
    x, y = torch.stack([d[0] for d in draws]), torch.stack([d[1] for d in draws])
    if gaussian:
        x = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=dtype)
    params = [p.view(B, *s) for p, s in zip(flat.split(sizes, dim=1), shapes)]
    out = STACKED[task](models[0], params)(x)
    (grad,) = torch.autograd.grad(bt.copy_losses(task, out, y).sum(), flat)
    outs, grads = [], []
    for c, (model, _, _, loss_fn, _) in enumerate(built):
        o = model(x[c])
        loss_fn(o, y[c]).backward()
        outs.append(o.detach())
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
    return (out.detach(), grad), (torch.stack(outs), torch.stack(grads))


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("B", [1, 3])
@pytest.mark.parametrize("task", sorted(STACKED))
def test_each_builder_equals_the_per_copy_modules(task, B, dtype):
    # float32 convolutions on the digits' blank regions: a max-pooling window's exact tie in a
    # copy's own convolution can be one ulp apart in the grouped one, and the pooling's gradient
    # then takes the other element; Gaussian images have no ties (float64: exact on the digits)
    noise = dtype == torch.float32 and task in ("digits_cnn", "digits_resnet")
    (out, grad), (outs, grads) = _stacked_and_alone(task, [21, 22, 23][:B], dtype, noise)
    assert out.shape == outs.shape and grad.shape == grads.shape
    assert _rel(out, outs) <= TOL[dtype] and _rel(grad, grads) <= TOL[dtype]
    for c in range(B):  # copy by copy, so one copy's error is not hidden by another's scale
        assert _rel(grad[c], grads[c]) <= TOL[dtype]


def test_the_comparison_sees_a_wrong_copy():
    """The builder test is not vacuous: copy 1 run with copy 0's parameters fails it."""
    (out, grad), (outs, grads) = _stacked_and_alone("digits_cnn", [21, 22], torch.float64)
    assert _rel(out[[0, 0]], outs) > 1e-3 and _rel(grad[[0, 0]], grads) > 1e-3


STEPS = {torch.float64: 15, torch.float32: 10}
TRAIN_TOL = {torch.float64: 1e-12, torch.float32: 1e-4}
"""Stacked against loop over ``STEPS`` steps: largest relative difference of the minibatch
and final losses, and of the streaming sums relative to the update norm
(:func:`~gaugedyn.experiments.adam_split._batched.reference_error`)."""
SUMS_TOL = {torch.float64: 1e-12, torch.float32: 1e-2}
_SIGN_NORMS = tuple(
    READING_SUMS.index(f"{part}_{reading}")
    for part in ("sign", "residual")
    for reading in ("current", "memory")
)


def _zero_gradient_coordinates(task) -> int:
    """The parameters whose gradient is zero in exact arithmetic: the key part of every
    attention ``qkv``'s bias (softmax ignores a score shift shared by every key)."""
    model = bt._build(task, 0, torch.float64, "cpu")[0]
    return sum(m.qkv.out_features // 3 for m in model.modules() if hasattr(m, "qkv"))


def _sums_error(streaming, reference, task) -> float:
    """`~gaugedyn.experiments.adam_split._batched.reference_error` less what round-off of a
    gradient that is zero in exact arithmetic may move, in units of ``SUMS_TOL``'s measure.

    On each of the ``K`` coordinates of `_zero_gradient_coordinates` both paths compute
    round-off (about 1e-19 in float64), whose sign is whichever the last bit gives: each
    reading's sign there is -1, 0 or +1 in either path independently (the memory reading's is 0
    where ``v`` is still exactly 0), so its squared norm ``|sign|^2`` (a count) may differ by up
    to ``K``; ``u`` there is at most ``|m^| / eps`` (about 1e-11), so the residual ``u - sign``
    moves by the same count to ``2 K |u|`` (below the float64 ``SUMS_TOL``). A squared norm
    that moves by ``K`` moves its norm by ``K / (|a| + |r|)``: the four sign and residual
    norms are compared to ``SUMS_TOL`` above that (relative to ``|u|``, as
    ``reference_error``), every other sum to ``SUMS_TOL`` alone (``K = 0`` without
    attention)."""
    a, r = np.array(streaming, dtype=float), np.asarray(reference, dtype=float)
    k = _zero_gradient_coordinates(task)
    u = np.sqrt(r[:, READING_SUMS.index("update")])
    worst = 0.0
    for i in _SIGN_NORMS:
        na, nr = np.sqrt(a[:, i]), np.sqrt(r[:, i])
        with np.errstate(divide="ignore", invalid="ignore"):
            e = (np.abs(na - nr) - k / (na + nr)) / u
        e = e[np.isfinite(e)]
        worst = max(worst, float(e.max()) if e.size else 0.0)
        a[:, i] = r[:, i]  # judged here; reference_error judges the rest
    return max(worst, bt.reference_error(a, r))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("task", sorted(STACKED))
def test_stacked_training_equals_the_loop(task, dtype):
    lr, steps = DEFAULTS[task]["lr"], STEPS[dtype]
    run = {
        f: bt.train_copies(task, COPIES, steps, lr, reference=[0, 1], dtype=dtype, forward=f)
        for f in bt.FORWARDS
    }
    a, b = run["stacked"], run["loop"]
    assert a["forward"] == "stacked" and b["forward"] == "loop"
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=TRAIN_TOL[dtype], atol=0)
    np.testing.assert_allclose(a["final_loss"], b["final_loss"], rtol=TRAIN_TOL[dtype], atol=0)
    np.testing.assert_array_equal(a["nonfinite_step"], b["nonfinite_step"])
    for c in range(len(COPIES)):
        assert _sums_error(a["sums"][c], b["sums"][c], task) <= SUMS_TOL[dtype]
    assert max(a["reference_error"]) <= ap.REFERENCE_TOL and max(a["applied_ratio"]) <= 1.0
    assert max(a["sum_error"]) <= ap.SUM_TOL and a["lag_abs_max"][1] == 0.0


@pytest.mark.parametrize("task", ["digits_resnet", "word_mlp"])
def test_a_stacked_copy_in_a_batch_equals_the_copy_alone(task):
    """To float32 round-off (and max-pooling ties, above): the grouped convolution's kernel
    depends on the number of groups."""
    lr = DEFAULTS[task]["lr"]
    batch = bt.train_copies(task, COPIES, 6, lr, reference=[2])
    b1, b2, seed = COPIES[2]
    alone = bt.train_copies(task, [(b1, b2, seed)], 6, lr, reference=[0])
    assert batch["forward"] == alone["forward"] == "stacked"
    np.testing.assert_allclose(batch["loss"][2], alone["loss"][0], rtol=1e-6, atol=0)
    assert bt.reference_error(batch["sums"][2], alone["sums"][0]) <= 1e-3
    assert bt.reference_error(batch["reference"][0], alone["reference"][0]) <= 1e-3


def test_the_default_path_and_the_one_error_line():
    assert bt.forward_of("digits_cnn") == "stacked"
    assert all(bt.forward_of(t) == ("stacked" if t in STACKED else "loop") for t in DEFAULTS)
    missing = [t for t in DEFAULTS if t not in STACKED]
    if missing:
        with pytest.raises(bt.InputError, match="forward='stacked' is not allowed"):
            bt.forward_of(missing[0], "stacked")


@pytest.mark.parametrize("task", ["char_gru", "digits_mlp"])
def test_a_copys_numbers_do_not_depend_on_its_block(task, monkeypatch):
    """STACK_BLOCK splits the stacked pass into blocks of copies; every copy's trajectory is the
    same whether its block holds one copy or all of them (float64, to round-off)."""
    lr = DEFAULTS[task]["lr"]
    whole = bt.train_copies(task, COPIES, 5, lr, dtype=torch.float64, forward="stacked")
    monkeypatch.setitem(bt.STACK_BLOCK, task, 1)
    split = bt.train_copies(task, COPIES, 5, lr, dtype=torch.float64, forward="stacked")
    np.testing.assert_allclose(split["loss"], whole["loss"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(split["sums"], whole["sums"], rtol=1e-9, atol=1e-12)

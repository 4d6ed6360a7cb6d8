"""The library's batched Adam (``gaugedyn.adam.batched_adam_step``), each operation order bitwise
against what it claims: ``"torch"`` against ``torch.optim.Adam`` copy by copy, ``"textbook"``
and ``"running"`` against the implementations they replaced (kept here as references), and
``"running"`` against the 1-D map of the stability theory (``simulate_losses``, which the
compiled kernel of ``simulate_blocks`` reduces)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.adam import (
    OP_ORDER_FACTORS,
    OP_ORDERS,
    AdamFactors,
    adam_factors,
    batched_adam_step,
    simulate_losses,
)

BETAS = [(0.9, 0.999), (0.5, 0.9), (0.0, 0.99), (0.99, 0.99)]
LRS = [1e-2, 3e-3, 1e-1, 2e-2]
DTYPES = [torch.float64, torch.float32]


def _tensors(dtype, seed=0):
    B = len(BETAS)
    g = torch.Generator().manual_seed(seed)
    shapes = [(B, 7), (B, 3, 5), (B,)]
    params = [torch.randn(s, generator=g, dtype=torch.float64).to(dtype) for s in shapes]
    grads = [
        [torch.randn(s, generator=g, dtype=torch.float64).to(dtype) for s in shapes]
        for _ in range(12)
    ]
    return params, grads


def _run(op_order, dtype, lr, betas, inplace=True, steps=12):
    params, grads = _tensors(dtype)
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    f = None
    for k in range(steps):
        f = (
            adam_factors(1, lr=lr, betas=betas, op_order=op_order, like=params[0])
            if f is None
            else f.next()
        )
        out = batched_adam_step(params, grads[k], m, v, f, eps=1e-8, inplace=inplace)
        params, m, v = out.params, out.exp_avgs, out.exp_avg_sqs
    return params, m, v


def _per_copy(pairs):
    return tuple(np.array([p[i] for p in pairs]) for i in (0, 1))


@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_order_is_torch_optim_adam_copy_by_copy_bitwise(dtype, inplace):
    got, gm, gv = _run("torch", dtype, np.array(LRS), _per_copy(BETAS), inplace)
    params, grads = _tensors(dtype)
    for c, ((b1, b2), lr) in enumerate(zip(BETAS, LRS)):
        ps = [p[c].clone().requires_grad_(True) for p in params]
        opt = torch.optim.Adam(ps, lr=lr, betas=(b1, b2), eps=1e-8, foreach=False)
        for k in range(12):
            for p, g in zip(ps, grads[k]):
                p.grad = g[c].clone()
            opt.step()
        for i, p in enumerate(ps):
            assert torch.equal(got[i][c], p.detach()), (c, i)
            assert torch.equal(gm[i][c], opt.state[p]["exp_avg"])
            assert torch.equal(gv[i][c], opt.state[p]["exp_avg_sq"])


def _textbook_reference(params, grads, b1, b2, lr, eps, steps):
    """The trainer's one-pair update before the library (``training._optim.adam_update``)."""
    m = [p * 0 for p in params]
    v = [p * 0 for p in params]
    for k in range(1, steps + 1):
        c1, c2 = 1.0 - b1**k, 1.0 - b2**k
        out = []
        for i, (p, g) in enumerate(zip(params, grads[k - 1])):
            m[i] = b1 * m[i] + (1.0 - b1) * g
            v[i] = b2 * v[i] + (1.0 - b2) * (g * g)
            out.append(p - lr * (m[i] / c1) / ((v[i] / c2).sqrt() + eps))
        params = out
    return params


@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_textbook_order_is_the_one_pair_update_copy_by_copy_bitwise(dtype, inplace):
    got, _, _ = _run("textbook", dtype, 1e-2, _per_copy(BETAS), inplace)
    params, grads = _tensors(dtype)
    for c, (b1, b2) in enumerate(BETAS):
        want = _textbook_reference(
            [p[c : c + 1] for p in params],
            [[g[c : c + 1] for g in gs] for gs in grads],
            b1,
            b2,
            1e-2,
            1e-8,
            12,
        )
        alone, _, _ = _run("textbook", dtype, 1e-2, (b1, b2), inplace)  # Python scalars
        for i in range(len(want)):
            assert torch.equal(got[i][c : c + 1], want[i]), (c, i)
            assert torch.equal(alone[i][c], want[i][0]), (c, i)


def _running_reference(params, grads, beta1, beta2, lr, eps, steps):
    """``adam_stability._batched.adam_steps``' update before the library."""
    like = params[0]
    b1 = torch.as_tensor(np.asarray(beta1, float), dtype=like.dtype)
    b2 = torch.as_tensor(np.asarray(beta2, float), dtype=like.dtype)
    shape = [(-1,) + (1,) * (p.ndim - 1) for p in params]
    params = [p.clone() for p in params]
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    p1, p2 = torch.ones_like(b1), torch.ones_like(b2)
    for t in range(steps):
        p1, p2 = p1 * b1, p2 * b2
        for p, g, mi, vi, sh in zip(params, grads[t], m, v, shape):
            mi.mul_(b1.view(sh)).add_((1 - b1).view(sh) * g)
            vi.mul_(b2.view(sh)).add_((1 - b2).view(sh) * g * g)
            den = (vi / (1 - p2).view(sh)).sqrt() + eps
            p.sub_(lr * (mi / (1 - p1).view(sh)) / den)
    return params


@pytest.mark.parametrize("dtype", DTYPES)
def test_running_order_is_the_prior_batched_update_bitwise(dtype):
    betas = _per_copy(BETAS)
    got, _, _ = _run("running", dtype, 1e-2, betas)
    params, grads = _tensors(dtype)
    want = _running_reference(params, grads, *betas, 1e-2, 1e-8, 12)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    # a factor made for step t directly equals the one carried there step by step
    f = adam_factors(1, lr=1e-2, betas=betas, op_order="running", like=params[0])
    for _ in range(6):
        f = f.next()
    direct = adam_factors(7, lr=1e-2, betas=betas, op_order="running", like=params[0])
    assert torch.equal(f.bias1, direct.bias1) and torch.equal(f.bias2, direct.bias2)


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_running_order_is_the_1d_map_of_the_stability_theory_to_the_square_roots_ulp(eps):
    """``simulate_losses`` (numpy; its compiled twin ``simulate_blocks`` reduces it, block for block, bit for bit
    at ``n = 2``, ``test_spike_boundary``) is the same Adam on ``x^2 / 2``: with dyadic
    ``a = 1 - beta1`` and ``c = 1 - beta2`` (so ``1 - beta`` is ``a`` exactly) the moments and
    the products have the same bits and the step ``u`` differs by a few ulp (torch's vectorised
    float64 square root and division are within about 0.5 ulp, not IEEE's correctly rounded
    ones, and which bits they give depends on the CPU's vector width), so the iterate
    ``x - u`` differs by at most 4 units of ``ulp(x - u) + ulp(u)``: where the step nearly
    cancels the iterate, ``ulp(u)`` is the scale of the difference, not ``ulp(x - u)`` (64 of
    those on an AVX2 machine, below 2 of the sum).
    The map is chaotic where it spikes, so the two are compared step by step from the numpy
    iterate, over a run that passes through spikes."""
    a = np.array([0.5, 0.25, 0.125, 0.0625])
    c = np.array([0.25, 0.0625, 0.0078125, 0.5])
    x0 = np.array([0.003, -0.002, 0.01, 0.5])
    steps, lr = 400, 1e-2
    x, m, v = x0.copy(), np.zeros(4), np.zeros(4)
    p1, p2 = np.ones(4), np.ones(4)
    xt, mt, vt = (
        torch.tensor(x0),
        torch.zeros(4, dtype=torch.float64),
        torch.zeros(4, dtype=torch.float64),
    )
    f = None
    worst = 0.0
    for _ in range(steps):  # the 1-D map's step, operation for operation as simulate_losses
        g = np.sign(x) * np.abs(x)
        m, v = (1 - a) * m + a * g, (1 - c) * v + c * g * g
        p1, p2 = p1 * (1 - a), p2 * (1 - c)
        xt.copy_(torch.from_numpy(x))
        u = lr * (m / (1 - p1)) / (np.sqrt(v / (1 - p2)) + eps)
        x = x - u
        f = (
            adam_factors(1, lr=lr, betas=(1 - a, 1 - c), op_order="running", like=xt)
            if f is None
            else f.next()
        )
        batched_adam_step([xt], [xt.clone()], [mt], [vt], f, eps=eps)
        assert np.array_equal(mt.numpy(), m) and np.array_equal(vt.numpy(), v)
        assert np.array_equal(f.power1.numpy(), p1) and np.array_equal(f.power2.numpy(), p2)
        scale = np.spacing(np.abs(x)) + np.spacing(np.abs(u))
        worst = max(worst, float(np.max(np.abs(xt.numpy() - x) / scale)))
    assert worst <= 4.0
    ell = simulate_losses(x0, a, c, 2.0, lr, eps, steps)  # the same map, the same last iterate
    assert np.array_equal(ell[-1], 2.0 * np.log10(np.abs(x)) - np.log10(2.0))
    assert np.ptp(ell[:, 0]) > 2.0  # the run spikes (a rise of decades), not a quiet decay


def test_the_orders_differ_where_they_say_they_do():
    """Not one implementation under three names: in float32 the orders give different bits."""
    runs = {o: _run(o, torch.float32, 1e-2, _per_copy(BETAS))[0] for o in OP_ORDERS}
    for a in OP_ORDERS:
        for b in OP_ORDERS:
            if a < b:
                assert not all(torch.equal(x, y) for x, y in zip(runs[a], runs[b])), (a, b)
                for x, y in zip(runs[a], runs[b]):  # the same Adam up to round-off
                    torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_a_broken_step_fails_the_torch_comparison(monkeypatch):
    from gaugedyn.adam import _batched

    step = _batched._STEPS["torch"]

    def early(p, g, m, v, f, eps, inplace):  # a bug: the bias correction of step t - 1
        return step(p, g, m, v, f._replace(bias2_sqrt=f.bias2_sqrt * 1.0001), eps, inplace)

    monkeypatch.setitem(_batched._STEPS, "torch", early)
    with pytest.raises(AssertionError):
        test_torch_order_is_torch_optim_adam_copy_by_copy_bitwise(torch.float64, True)


def test_factors_rows_and_shapes():
    like = torch.zeros(4, 3, dtype=torch.float64)
    f = adam_factors(3, lr=0.1, betas=_per_copy(BETAS), op_order="torch", like=like)
    assert isinstance(f, AdamFactors) and f.step == 3 and f.op_order == "torch"
    assert torch.equal(f.bias1, torch.tensor([1 - b**3 for b, _ in BETAS], dtype=like.dtype))
    sub = f.rows(slice(1, 3), OP_ORDER_FACTORS["torch"])
    assert sub.beta2.shape == (2,) and sub.bias1.shape == (4,)  # only the named ones
    shaped = f.shaped(torch.zeros(4, 2, 5))
    assert shaped.beta1.shape == (4, 1, 1) and f.next().step == 4
    one = adam_factors(2, lr=0.1, betas=(0.9, 0.99), op_order="textbook")
    assert one.bias1 == 1.0 - 0.9**2 and isinstance(one.lr, float)
    assert math.isclose(one.next(0.2).step_size, 0.2 / (1.0 - 0.9**3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"op_order": "adamw"}, "op_order='adamw'"),
        ({"betas": (1.0, 0.9)}, "beta1="),
        ({"betas": ([0.9, 0.8], [0.9, 0.8, 0.7])}, "copies"),
        ({"betas": (0.9,)}, "betas="),
        ({"lr": float("nan")}, "lr=nan"),
        ({"lr": [[0.1]]}, "lr="),
        ({"step": 0}, "step=0"),
        ({"like": None}, "like=None"),
    ],
)
def test_bad_hyper_parameters_are_one_error_line(kwargs, match):
    args = {
        "step": 1,
        "lr": 0.1,
        "betas": (0.9, 0.99),
        "op_order": "torch",
        "like": torch.zeros(2),
    } | kwargs
    step = args.pop("step")
    with pytest.raises(InputError, match=match) as err:
        adam_factors(step, **args)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="2 params"):
        batched_adam_step(
            [torch.zeros(2)] * 2,
            [torch.zeros(2)],
            [torch.zeros(2)],
            [torch.zeros(2)],
            adam_factors(1, lr=0.1, betas=(0.9, 0.9), op_order="textbook"),
        )

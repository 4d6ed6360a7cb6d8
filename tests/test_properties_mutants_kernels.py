"""The compiled training kernels (`gaugedyn.training._online_kernels`) run as their own Python
against plain numpy references, for generated mutants that survived the suite
(``tools/mutate.py --generated``; the record is ``tools/mutation-data/generated.json``).

numba does not check bounds: a loop one index too far reads and writes past the end of its
arrays unchecked, often in the same buffer, and the compiled result can still pass. The same
kernels' Python (``.py_func``, every helper kernel swapped for its own Python) index numpy
arrays, which raise `IndexError` there. Each test states what the kernel computes, on inputs
small enough for plain Python, and fails on the mutants named beside it."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gaugedyn.theory import ACTIVATIONS
from gaugedyn.training import _online_kernels as kern

TANH = ACTIVATIONS["tanh"].code
COSINE = 1  # the kernels' schedule code of "cosine"


@pytest.fixture
def plain(monkeypatch):
    """The kernels module with every compiled helper replaced by its own Python."""
    for name, obj in vars(kern).items():
        if isinstance(obj, numba.core.registry.CPUDispatcher):
            monkeypatch.setattr(kern, name, obj.py_func)
    return kern


def _cosine(lr, lr_min, k, steps):
    """SGDR's cosine annealing from ``lr`` at step 0 to the floor ``lr_min`` at ``steps``."""
    return lr_min + (lr - lr_min) * (1.0 + np.cos(np.pi * k / steps)) / 2.0


def _sgd(a, W, V, b, X, N, eta, wd, lr2, sigma):
    """One step of online SGD in weight space on the batch ``X (B, D)`` with label noises
    ``N (B,)``: the loss ``e^2 / 2`` per sample, ``e = a . tanh(W x) - b . tanh(V x) - sigma
    xi``; weight decay ``wd`` shrinks both layers, ``lr2`` scales the second layer's rate.
    Returns the new ``a``, ``W``, the summed loss and the fields ``[W; V] x`` of each sample."""
    u = X @ np.vstack([W, V]).T
    K = W.shape[0]
    h = np.tanh(u[:, :K])
    e = h @ a - np.tanh(u[:, K:]) @ b - sigma * N
    B = X.shape[0]
    grad_W = ((e[:, None] * a * (1.0 - h**2)).T @ X) / B
    grad_a = (e @ h) / B
    return (
        a - eta * lr2 * (grad_a + wd * a),
        (1.0 - eta * wd) * W - eta * grad_W,
        0.5 * float(e @ e),
        u,
    )


def _reference(a, W, V, b, X, N, lr, lr_min, wd, lr2, sigma, grid):
    """The records of ``len(X)`` steps of `_sgd()` at the cosine rate, ``eta_k = eta(k) / D``:
    ``a``, ``Q = W W^T``, ``R = W V^T``, the mean batch loss since the last record and the flow
    time; and every step's fields and samples' Gram matrix."""
    steps, D = X.shape[0], X.shape[2]
    rec = {"a": [a], "Q": [W @ W.T], "R": [W @ V.T], "emp": [], "flow": [0.0]}
    F, S, losses, flow = [], [], [], 0.0
    for k in range(steps):
        eta = _cosine(lr, lr_min, k, steps) / D
        a, W, loss, u = _sgd(a, W, V, b, X[k], N[k], eta, wd, lr2, sigma)
        F.append(u)
        S.append(X[k] @ X[k].T)
        losses.append(loss / X.shape[1])
        flow += eta
        if k + 1 in grid:
            rec["a"].append(a)
            rec["Q"].append(W @ W.T)
            rec["R"].append(W @ V.T)
            rec["emp"].append(np.mean(losses))
            rec["flow"].append(flow)
            losses = []
    return {key: np.array(v) for key, v in rec.items()}, np.array(F), np.array(S)


def _problem(batch, seed=0, K=2, M=2, D=6, steps=4):
    rng = np.random.default_rng(seed)
    W, V = rng.normal(size=(K, D)), rng.normal(size=(M, D))
    a, b = rng.normal(size=K), rng.normal(size=M)
    X = rng.normal(size=(steps, batch, D))
    N = rng.normal(size=(steps, batch))
    return a, W, V, b, X, N


def _outputs(n_records, K, M, fill=0.0):
    return tuple(
        np.full(shape, fill)
        for shape in ((n_records, K), (n_records, K, K), (n_records, K, M), n_records, n_records)
    )


CASES = [
    # (batch, weight decay, second-layer rate, label noise)
    (1, 0.0, 1.0, 0.0),
    (1, 0.3, 0.5, 0.2),
    (3, 0.0, 1.0, 0.0),
    (3, 0.3, 0.5, 0.2),
    (3, 0.3, 1.0, 0.0),
]


@pytest.mark.parametrize(("batch", "wd", "lr2", "sigma"), CASES)
def test_the_weight_space_kernel_is_plain_sgd_with_its_options(plain, batch, wd, lr2, sigma):
    # training:_online_kernels:255:34:swap and 274:34 / 274:53:factor (the weight-decay step
    # of one sample and of a batch), 237:4:off-by-one (the first record's online loss left
    # unset; with one record, written past the buffer), 111:25:sign (the cosine schedule's
    # floor added instead of subtracted)
    a, W, V, b, X, N = _problem(batch)
    steps, K, M = X.shape[0], W.shape[0], V.shape[0]
    lr, lr_min, grid = 1.5, 0.4, np.array([0, 2, 4])
    want, _, _ = _reference(a, W, V, b, X, N, lr, lr_min, wd, lr2, sigma, grid)
    out = _outputs(grid.size, K, M)
    a_run, W_run = a.copy(), W.copy()
    stop = plain.run(
        a_run, W_run, V, b, TANH, TANH, COSINE, lr, lr_min, 1000.0, steps, grid, batch,
        np.random.default_rng(0), X, wd, lr2, sigma, N, *out,
    )  # fmt: skip
    assert stop == -1
    out_a, out_Q, out_R, out_emp, out_flow = out
    np.testing.assert_allclose(out_a, want["a"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out_Q, want["Q"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out_R, want["R"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(W_run @ W_run.T, want["Q"][-1], rtol=1e-12, atol=1e-14)
    assert not np.isfinite(out_emp[0])  # no step before the first record: no online loss
    np.testing.assert_allclose(out_emp[1:], want["emp"], rtol=1e-12)
    np.testing.assert_allclose(out_flow, want["flow"], rtol=1e-12)
    # a run recorded at its start only: one record, the initial state, no online loss
    out = _outputs(1, K, M)
    stop = plain.run(
        a.copy(), W.copy(), V, b, TANH, TANH, COSINE, lr, lr_min, 1000.0, steps, grid[:1],
        batch, np.random.default_rng(0), X, wd, lr2, sigma, N, *out,
    )  # fmt: skip
    assert stop == -1
    np.testing.assert_allclose(out[1][0], W @ W.T, rtol=1e-12)
    assert not np.isfinite(out[3][0]) and out[4][0] == 0.0


@pytest.mark.parametrize(("batch", "wd", "lr2", "sigma"), CASES)
def test_the_chain_on_given_fields_is_the_gram_matrix_of_plain_sgd(plain, batch, wd, lr2, sigma):
    # training:_online_kernels:423:22:off-by-one (one sample too many read from the given
    # fields), 462:25:off-by-one (one overlap too many in the weight-decay update), 469:40:
    # factor (the samples' Gram matrix dropped from the quadratic term), 471:44:sign (the
    # linear term subtracted) and the cosine floor (111:25:sign): the chain fed the fields and
    # Gram matrices of a weight-space run gives that run's overlaps
    a, W, V, b, X, N = _problem(batch, seed=1)
    steps, K, M, D = X.shape[0], W.shape[0], V.shape[0], W.shape[1]
    lr, lr_min, grid = 1.5, 0.4, np.array([0, 1, 2, 4])
    want, F, S = _reference(a, W, V, b, X, N, lr, lr_min, wd, lr2, sigma, grid)
    U = np.vstack([W, V])
    C = U @ U.T
    out = _outputs(grid.size, K, M)
    stop = plain.chain_run(
        a.copy(), C, b, K, D, TANH, TANH, COSINE, lr, lr_min, 1000.0, steps, grid, batch,
        np.random.default_rng(0), F, S, 1e-10, wd, lr2, sigma, N, *out,
    )  # fmt: skip
    assert stop == -1
    out_a, out_Q, out_R, out_emp, out_flow = out
    np.testing.assert_allclose(out_a, want["a"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out_Q, want["Q"], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(out_R, want["R"], rtol=1e-11, atol=1e-13)
    assert not np.isfinite(out_emp[0])
    np.testing.assert_allclose(out_emp[1:], want["emp"], rtol=1e-12)
    np.testing.assert_allclose(out_flow, want["flow"], rtol=1e-12)


def test_the_cosine_rate_falls_from_its_start_to_its_floor():
    # training:_online_kernels:111:25:sign, the compiled schedule itself: eta_0 = lr,
    # eta_steps = lr_min, SGDR's cosine in between, never below the floor
    steps = 8
    for lr, lr_min in ((1.0, 0.0), (1.5, 0.4), (0.2, 0.2)):
        got = np.array([kern.step_size(COSINE, lr, k, steps, lr_min, 1.0) for k in range(9)])
        np.testing.assert_allclose(got, _cosine(lr, lr_min, np.arange(9), steps), rtol=1e-14)
        assert got[0] == pytest.approx(lr) and got[-1] == pytest.approx(lr_min)
        assert np.all(np.diff(got) <= 0) and np.all(got >= lr_min - 1e-15)


@pytest.mark.parametrize(
    ("noise", "wd", "lr2", "sigma"), [(True, 0.0, 1.0, 0.0), (True, 0.2, 0.5, 0.3)]
)
def test_the_online_ode_rhs_in_its_own_python_is_the_numpy_rhs(
    plain, monkeypatch, noise, wd, lr2, sigma
):
    # training:_online_kernels:535:17:off-by-one (the noise sum over one field too many) and
    # 564:17:off-by-one (one student too many), as numbered before the right-hand side became
    # module-level kernels: the right-hand side and its helpers run as their own Python (the
    # symbolic module's erf integrals as generated) against `gaugedyn.training.OnlineODE`
    from gaugedyn.theory import generated_kernels as gk
    from gaugedyn.training import OnlineODE

    for name, fn in (("erf_i2", gk.pair_erf), ("erf_i3", gk.erf_i3), ("erf_i4", gk.erf_i4)):
        monkeypatch.setattr(plain, name, fn)
    rhs = plain.online_rhs
    rng = np.random.default_rng(4)
    K, M, eta, batch = 3, 2, 0.8, 2
    Vt = rng.normal(size=(M, 8)) / np.sqrt(8)
    Ws = rng.normal(size=(K, 8)) / np.sqrt(8)
    b, T = rng.normal(size=M), Vt @ Vt.T
    a, Q, R = rng.normal(size=K), Ws @ Ws.T, Ws @ Vt.T
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    want = OnlineODE(K, M, b, T, "erf", eta, batch, noise, wd, lr2, sigma)(0.0, y)
    scale = eta**2 / batch if noise else 0.0
    out = np.full(y.size, np.nan)
    got = rhs(y, K, M, b, T, eta, scale, wd, lr2, sigma**2, out)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)

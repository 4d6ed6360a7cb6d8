"""The compiled order-parameter flow against torch.autograd in weight space; the gauge laws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gaugedyn.symbolic import compile_order_parameter_flow
from gaugedyn.symbolic._reaction_transport import mobilities


@pytest.fixture(autouse=True)
def _float64():
    """Every test here computes in float64; the default is restored after each, so the tests
    that run next in the same process see torch as it was."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _pair_torch(act, q1, q2, c):
    if act == "relu":
        return (
            torch.sqrt(q1 * q2 - c**2) + (math.pi - torch.acos(c / torch.sqrt(q1 * q2))) * c
        ) / (2 * math.pi)
    if act == "erf":
        return 2 / math.pi * torch.asin(c / torch.sqrt((1 + q1) * (1 + q2)))
    return c


def _self_torch(act, q):
    if act == "relu":
        return q / 2
    if act == "erf":
        return 2 / math.pi * torch.asin(q / (1 + q))
    return q


def _gram_kernel(act, A, B):
    """Matrix E[g(A_i . x) g(B_n . x)] written directly from the closed forms."""
    qa = (A * A).sum(1)
    qb = (B * B).sum(1)
    return _pair_torch(act, qa[:, None], qb[None, :], A @ B.T)


def population_loss(act, a, W, b, V):
    """L = 1/2 E[(f - f*)^2] in weight space, closed forms, diagonals from the self kernel."""
    K, M = W.shape[0], V.shape[0]
    iK, iM = torch.eye(K, dtype=torch.bool), torch.eye(M, dtype=torch.bool)
    qw = (W * W).sum(1)
    qv = (V * V).sum(1)
    FQ = torch.where(iK, _self_torch(act, qw)[:, None].expand(K, K), _safe_pair(act, W, W, iK))
    FT = torch.where(iM, _self_torch(act, qv)[:, None].expand(M, M), _safe_pair(act, V, V, iM))
    FR = _gram_kernel(act, W, V)
    return 0.5 * (a @ FQ @ a - 2 * a @ FR @ b + b @ FT @ b)


def _safe_pair(act, A, B, diag):
    qa = (A * A).sum(1)
    qb = (B * B).sum(1)
    c = A @ B.T
    c = torch.where(diag, 0.5 * torch.sqrt(qa[:, None] * qb[None, :]), c)  # diagonal masked out
    return _pair_torch(act, qa[:, None], qb[None, :], c)


def _state(rng, K, M, D=6):
    W = rng.normal(size=(K, D))
    V = rng.normal(size=(M, D))
    return rng.normal(size=K), W, rng.normal(size=M), V


def _weight_space_rhs(act, a, W, b, V):
    a_t, W_t = torch.tensor(a, requires_grad=True), torch.tensor(W, requires_grad=True)
    loss = population_loss(act, a_t, W_t, torch.tensor(b), torch.tensor(V))
    ga, gW = torch.autograd.grad(loss, (a_t, W_t))
    ga, gW, loss = ga.numpy(), gW.numpy(), loss.detach()
    dQ = -(gW @ W.T + W @ gW.T)
    dR = -gW @ V.T
    return -ga, dQ, dR, loss.item()


def _rel(x, y):
    return np.max(np.abs(x - y)) / np.max(np.abs(y))


SIZES = [(1, 1), (2, 3), (3, 2), (4, 4)]


@pytest.mark.parametrize("act", ["relu", "erf", "linear"])
def test_compiled_flow_matches_weight_space_autograd(act):
    rng = np.random.default_rng(7)
    for K, M in SIZES:
        flow = compile_order_parameter_flow(act, K, M)
        for _ in range(2):
            a, W, b, V = _state(rng, K, M)
            da, dQ, dR, loss = _weight_space_rhs(act, a, W, b, V)
            y, p = flow.pack_state(a, W @ W.T, W @ V.T), flow.pack_params(b, V @ V.T)
            expected = flow.pack_state(da, dQ, dR)
            got = flow.rhs(0.0, y, p)
            assert _rel(got, expected) < 1e-10, (act, K, M)
            got_t = flow.rhs_torch(0.0, torch.tensor(y), torch.tensor(p)).numpy()
            assert _rel(got_t, expected) < 1e-10, (act, K, M, "torch")
            assert abs(flow.loss(y, p) - loss) <= 1e-10 * abs(loss)


def _reduced_rhs_torch(act, K, M, y, p):
    """An independent reduced flow: autograd of the (a, Q, R) loss written in torch."""
    a = y[:K]
    iu = torch.triu_indices(K, K)
    nq = iu.shape[1]
    Qu = y[K : K + nq]
    R = y[K + nq :].reshape(K, M)
    b = p[:M]
    iuM = torch.triu_indices(M, M)
    T = torch.zeros(M, M)
    T = T.index_put((iuM[0], iuM[1]), p[M:])
    T = T + torch.triu(T, 1).T
    Q = torch.zeros(K, K).index_put((iu[0], iu[1]), Qu)
    Q = Q + torch.triu(Q, 1).T
    dq = torch.diagonal(Q)
    dt = torch.diagonal(T)
    eK, eM = torch.eye(K, dtype=torch.bool), torch.eye(M, dtype=torch.bool)
    cQ = torch.where(eK, 0.5 * torch.sqrt(dq[:, None] * dq[None, :]), Q)
    cT = torch.where(eM, 0.5 * torch.sqrt(dt[:, None] * dt[None, :]), T)
    FQ = torch.where(
        eK,
        _self_torch(act, dq)[:, None].expand(K, K),
        _pair_torch(act, dq[:, None], dq[None, :], cQ),
    )
    FT = torch.where(
        eM,
        _self_torch(act, dt)[:, None].expand(M, M),
        _pair_torch(act, dt[:, None], dt[None, :], cT),
    )
    FR = _pair_torch(act, dq[:, None], dt[None, :], R)
    loss = 0.5 * (a @ FQ @ a - 2 * a @ FR @ b + b @ FT @ b)
    ga, gQu, gR = torch.autograd.grad(loss, (a, Qu, R), create_graph=True)
    G = torch.zeros(K, K).index_put((iu[0], iu[1]), gQu)
    G = 0.5 * (G + G.T)  # G_ii = dL/dQ_ii, G_ij = dL/dQ_ij / 2
    A = 2 * G @ Q + gR @ R.T
    dQ = -(A + A.T)
    dR = -(2 * G @ R + gR @ T)
    return torch.cat([-ga, dQ[iu[0], iu[1]], dR.reshape(-1)])


@pytest.mark.parametrize("act", ["relu", "erf", "linear"])
@pytest.mark.parametrize("K,M", [(1, 1), (2, 2)])
def test_compiled_jacobian_matches_autograd(act, K, M):
    rng = np.random.default_rng(11)
    flow = compile_order_parameter_flow(act, K, M)
    a, W, b, V = _state(rng, K, M)
    y, p = flow.pack_state(a, W @ W.T, W @ V.T), flow.pack_params(b, V @ V.T)
    yt, pt = torch.tensor(y, requires_grad=True), torch.tensor(p)
    rhs_ref = _reduced_rhs_torch(act, K, M, yt, pt).detach().numpy()
    assert _rel(flow.rhs(0.0, y, p), rhs_ref) < 1e-10
    J_ref = torch.autograd.functional.jacobian(
        lambda z: _reduced_rhs_torch(act, K, M, z, pt), yt
    ).numpy()
    assert _rel(flow.jacobian(0.0, y, p), J_ref) < 1e-10
    J_t = flow.jacobian_torch(0.0, torch.tensor(y), pt).numpy()
    assert _rel(J_t, J_ref) < 1e-10


def test_compile_is_cached_and_rejects_bad_input():
    from gaugedyn import InputError

    assert compile_order_parameter_flow("linear", 2, 1) is compile_order_parameter_flow(
        "linear", 2, 1
    )
    with pytest.raises(InputError, match="activation"):
        compile_order_parameter_flow("tanh", 1, 1)
    with pytest.raises(InputError, match="K"):
        compile_order_parameter_flow("relu", 0, 1)


def _grads(act, a, W, b, V):
    a_t, W_t = torch.tensor(a, requires_grad=True), torch.tensor(W, requires_grad=True)
    loss = population_loss(act, a_t, W_t, torch.tensor(b), torch.tensor(V))
    ga, gW = torch.autograd.grad(loss, (a_t, W_t))
    return ga.numpy(), gW.numpy()


@pytest.mark.parametrize("act", ["relu", "linear"])
def test_conservation_and_gd_drift_on_random_states(act):
    rng = np.random.default_rng(3)
    for _ in range(10):
        K, M = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        a, W, b, V = _state(rng, K, M, D=5)
        a = a * rng.uniform(0.1, 5.0, size=K)  # wide spread of gauges
        ga, gW = _grads(act, a, W, b, V)
        rate = 2 * a * (-ga) - 2 * np.sum(W * (-gW), axis=1)
        scale = np.abs(a * ga) + np.abs(np.sum(W * gW, axis=1))
        assert np.all(np.abs(rate) <= 1e-10 * scale), rate
        eta = 0.03
        a1, W1 = a - eta * ga, W - eta * gW
        drift = (a1**2 - np.sum(W1**2, 1)) - (a**2 - np.sum(W**2, 1))
        predicted = eta**2 * (ga**2 - np.sum(gW**2, 1))
        assert np.allclose(drift, predicted, rtol=1e-9, atol=1e-13)


def test_conservation_test_can_fail_for_a_non_homogeneous_activation():
    rng = np.random.default_rng(3)
    a, W, b, V = _state(rng, 2, 2, D=5)
    ga, gW = _grads("erf", a, W, b, V)
    rate = 2 * a * (-ga) - 2 * np.sum(W * (-gW), axis=1)
    assert np.max(np.abs(rate)) > 1e-3


def test_reaction_transport_flow_and_dissipation_split():
    mu_R_f, mu_T_f = mobilities()
    rng = np.random.default_rng(5)
    for _ in range(10):
        K, M, D = int(rng.integers(1, 5)), int(rng.integers(1, 4)), 5
        a, W, b, V = _state(rng, K, M, D)
        a = a * rng.uniform(0.1, 5.0, size=K)
        ga, gW = _grads("relu", a, W, b, V)
        adot, Wdot = -ga, -gW
        norms = np.linalg.norm(W, axis=1)
        U = W / norms[:, None]
        rho = a * norms
        delta = a**2 - norms**2
        # Lt(rho, U) = L(a = rho, W = U) by homogeneity; G = its gradient (homogeneous extension)
        G_rho, G_U = _grads("relu", rho, U, b, V)
        P = np.eye(D)[None] - U[:, :, None] * U[:, None, :]
        PG = np.einsum("kij,kj->ki", P, G_U)
        mu_R, mu_T = mu_R_f(delta, rho), mu_T_f(delta, rho)
        rho_dot = adot * norms + a * np.sum(U * Wdot, axis=1)
        U_dot = np.einsum("kij,kj->ki", P, Wdot) / norms[:, None]
        assert _rel(rho_dot, -mu_R * G_rho) < 1e-10
        assert _rel(U_dot, -mu_T[:, None] * PG) < 1e-10
        dissipation = np.sum(ga**2) + np.sum(gW**2)
        split = np.sum(mu_R * G_rho**2) + np.sum(mu_T * np.sum(PG**2, axis=1))
        assert abs(dissipation - split) <= 1e-10 * dissipation
        assert np.allclose(mu_R, a**2 + norms**2, rtol=1e-12)
        assert np.allclose(mu_T, 1 / norms**2, rtol=1e-10)

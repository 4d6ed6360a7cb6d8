"""Invariances every engine must respect, for any weights (hypothesis).

The population theory: the loss and every formulation's right-hand side are equivariant under a
permutation of the student's units; an odd activation's teacher is unchanged by flipping the
sign of a unit together with its output weight; a homogeneous activation's loss is unchanged by a
unit's gauge ``(a, w) -> (a / c, c w)``; the loss scales as the square of a common factor of the
output weights; the three formulations (order parameters, weight space, the span of the
weights) give one flow at one free direction and at full rank, whatever the scale of the
weights (a rank decided with an absolute tolerance would not be); a teacher with a negative
output weight has the loss a plain Monte Carlo average gives; and an integration split in two
at any time ends where the whole one does.

The gauge toolkit: rescaling units by ``c`` and then by ``1 / c`` restores the weights and the
Adam state, and the network's function never changes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _properties import properties
from hypothesis import given
from hypothesis import strategies as st

from gaugedyn import theory
from gaugedyn.gauge import find_units, rescale_units
from gaugedyn.theory import _flows

PROPS = properties(15)
FEW = properties(6)
ACTIVATIONS = sorted(theory.ACTIVATIONS)
ODD = ("erf", "linear", "tanh", "he3")
FORMULATIONS = ("order-parameters", "weight-space", "span")

seeds = st.integers(0, 2**32 - 1)


def _problem(seed: int, K: int, M: int, D: int, activation: str, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    W = rng.normal(0, 1 / math.sqrt(D), (K, D)) * scale
    V = rng.normal(0, 1 / math.sqrt(D), (M, D))
    a = rng.normal(0, 1, K)
    b = rng.normal(0, 1, M)
    return theory.Problem(a, W, b, V, activation)


def _loss(p: theory.Problem) -> float:
    a, Q, R, b, T = p.order_parameters()
    return float(theory.population_loss(a, Q, R, b, T, p.activation))


def _weight_rhs(p: theory.Problem):
    """``(da/dt, dW/dt)`` of the weight-space flow."""
    y, params = theory.initial_state(p, "weight-space")
    f = theory.rhs(0.0, y, params)
    return f[: p.K], f[p.K :].reshape(p.K, p.dim)


# -- symmetries of the population loss and its flow ------------------------------------------


@pytest.mark.parametrize("activation", ACTIVATIONS)
@FEW
@given(seed=seeds, K=st.integers(2, 4), data=st.data())
def test_permuting_student_units_permutes_the_flow(activation, seed, K, data):
    p = _problem(seed, K, 2, 5, activation)
    order = np.array(data.draw(st.permutations(range(K))))
    q = p.replace(a=p.a[order], W=p.W[order])
    assert _loss(q) == pytest.approx(_loss(p), rel=1e-10, abs=1e-12)
    da, dW = _weight_rhs(p)
    db, dV = _weight_rhs(q)
    assert np.allclose(db, da[order], rtol=1e-9, atol=1e-12)
    assert np.allclose(dV, dW[order], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("activation", [a for a in ACTIVATIONS if a in ODD])
@FEW
@given(seed=seeds, m=st.integers(0, 1))
def test_flipping_a_teacher_unit_with_its_output_weight_leaves_an_odd_flow(activation, seed, m):
    """For an odd ``g``, ``b g(v.x) = (-b) g(-v.x)``: the teacher's function, hence the loss and
    the student's flow, do not change (a negative output weight is one such teacher)."""
    p = _problem(seed, 2, 2, 4, activation)
    b, V = p.b.copy(), p.V.copy()
    b[m], V[m] = -b[m], -V[m]
    q = p.replace(b=b, V=V)
    assert _loss(q) == pytest.approx(_loss(p), rel=1e-10, abs=1e-12)
    for x, y in zip(_weight_rhs(p), _weight_rhs(q)):
        assert np.allclose(x, y, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "activation", [a for a in ACTIVATIONS if theory.ACTIVATIONS[a].homogeneous]
)
@PROPS
@given(seed=seeds, c=st.floats(0.05, 20), unit=st.integers(0, 2))
def test_a_units_gauge_leaves_a_homogeneous_loss(activation, seed, c, unit):
    """``(a_k, w_k) -> (a_k / c, c w_k)`` changes no function of a positively homogeneous
    ``g``, so the loss is the same, and ``rho_k = a_k |w_k|`` too."""
    p = _problem(seed, 3, 2, 4, activation)
    a, W = p.a.copy(), p.W.copy()
    a[unit] /= c
    W[unit] *= c
    q = p.replace(a=a, W=W)
    assert _loss(q) == pytest.approx(_loss(p), rel=1e-9, abs=1e-12)
    assert np.allclose(q.rho, p.rho, rtol=1e-12)
    # the velocity of rho is the same too: d rho / dt depends on the gauge only through delta,
    # but the loss gradient with respect to the function is gauge-free (Euler's theorem)
    da, dW = _weight_rhs(p)
    db, dV = _weight_rhs(q)
    assert db[unit] == pytest.approx(da[unit] * c, rel=1e-8, abs=1e-12)
    assert np.allclose(dV[unit], dW[unit] / c, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@FEW
@given(seed=seeds, s=st.sampled_from([-3.0, -1.0, 0.5, 2.0]))
def test_a_common_factor_of_the_output_weights_scales_the_loss_by_its_square(activation, seed, s):
    p = _problem(seed, 2, 2, 4, activation)
    q = p.replace(a=s * p.a, b=s * p.b)
    assert _loss(q) == pytest.approx(s * s * _loss(p), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh", "abs"])
def test_a_teacher_with_a_negative_output_weight_has_the_monte_carlo_loss(activation):
    """The closed form against a plain average over Gaussian inputs (four standard errors)."""
    rng = np.random.default_rng(53)
    p = _problem(7, 2, 2, 3, activation).replace(b=np.array([-1.3, 0.6]))
    g = theory.on_numpy(theory.activation_of(activation).function)
    x = rng.standard_normal((400_000, 3))
    diff = g(x @ p.W.T) @ p.a - g(x @ p.V.T) @ p.b
    half = 0.5 * diff**2
    se = half.std() / math.sqrt(half.size)
    assert abs(_loss(p) - half.mean()) < 4 * se + 1e-12


# -- the three formulations: one flow at one free direction and at full rank -----------------


def _weight_velocity(p: theory.Problem, formulation: str):
    """``(da/dt, dQ/dt, dR/dt)`` of ``formulation``'s flow at the problem's weights."""
    y, params = theory.initial_state(p, formulation)
    f = theory.rhs(0.0, y, params)
    K, M = p.K, p.M
    if formulation == "order-parameters":
        da, dQ, dR = _flows.unpack_order_parameters(f, K, M)
        return da, dQ, dR
    if formulation == "weight-space":
        dW = f[K:].reshape(K, p.dim)
        W, V = p.W, p.V
    else:
        E = params.basis
        dW = f[K:].reshape(K, -1) @ E.T
        W, V = p.W, p.V
    return f[:K], dW @ W.T + W @ dW.T, dW @ V.T


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("rank", ["one direction", "full rank"])
@FEW
@given(seed=seeds, scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_every_formulation_gives_one_flow_at_one_free_direction_and_at_full_rank(
    activation, rank, seed, scale
):
    """Students and teachers along one direction ``u`` (the span is one-dimensional) or in
    general position, with weights scaled by ``scale``: a rank decided relative to the size of
    the Gram matrix is the same at every scale."""
    rng = np.random.default_rng(seed)
    K, M, D = 3, 2, 5
    if rank == "one direction":
        u = rng.normal(size=D)
        u /= np.linalg.norm(u)
        W = np.outer(rng.choice([-1.0, 1.0], K) * rng.uniform(0.5, 1.5, K), u)
        V = np.outer(rng.uniform(0.5, 1.5, M), u)
    else:
        W, V = rng.normal(0, 1 / math.sqrt(D), (K, D)), rng.normal(0, 1 / math.sqrt(D), (M, D))
    p = theory.Problem(rng.normal(size=K), W * scale, rng.normal(size=M), V, activation)
    if activation in ("relu", "leaky_relu", "abs") and rank == "one direction":
        pass  # the kernels are continuous at parallel vectors (arccos at 0 and pi)
    _, params = theory.initial_state(p, "span")
    assert params.basis.shape[1] == (1 if rank == "one direction" else min(K + M, D))
    ref = _weight_velocity(p, "weight-space")
    for formulation in ("order-parameters", "span"):
        got = _weight_velocity(p, formulation)
        for x, y in zip(got, ref):
            size = 1e-7 * (1 + np.abs(y).max())
            assert np.allclose(x, y, rtol=1e-6, atol=size), (formulation, x, y)


# -- an integration split in two ----------------------------------------------------------------


@pytest.mark.parametrize("activation", ["relu", "erf"])
@FEW
@given(seed=seeds, split=st.floats(0.1, 0.9))
def test_an_integration_split_in_two_ends_where_the_whole_one_does(activation, seed, split):
    # output weights kept away from zero: a unit pruned toward w = 0 makes the ReLU flow stiff
    # (seed 0 of _problem, a < 0 and b = 0.04, takes LSODA minutes)
    p = _problem(seed, 2, 1, 3, activation)
    p = p.replace(a=np.random.default_rng(seed).uniform(0.5, 1.5, 2), b=np.array([1.0]))
    t_max = 2.0
    whole = theory.solve(p, formulation="weight-space", t_max=t_max, keep_weights=True)
    first = theory.solve(p, formulation="weight-space", t_max=split * t_max, keep_weights=True)
    middle = p.replace(a=np.asarray(first.a)[-1], W=np.asarray(first.W)[-1])
    second = theory.solve(
        middle, formulation="weight-space", t_max=(1 - split) * t_max, keep_weights=True
    )
    assert np.allclose(np.asarray(second.a)[-1], np.asarray(whole.a)[-1], rtol=1e-5, atol=1e-7)
    assert np.allclose(np.asarray(second.W)[-1], np.asarray(whole.W)[-1], rtol=1e-5, atol=1e-7)


# -- the gauge toolkit ----------------------------------------------------------------------------


def _mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)
    ).double()


@PROPS
@given(
    seed=st.integers(0, 1000),
    units=st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True),
    c=st.floats(0.05, 20),
    steps=st.integers(0, 3),
)
def test_rescaling_units_keeps_the_function_and_its_inverse_restores_weights_and_state(
    seed, units, c, steps
):
    model = _mlp(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(16, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    groups, _ = find_units(model)
    layer = next(g.name for g in groups if g.kind == "rescale")
    before = model(x).detach().clone()
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    state = {
        id(p): {k: v.clone() for k, v in s.items() if torch.is_tensor(v)}
        for p, s in opt.state.items()
    }
    rescale_units(model, opt, layer, units, c)
    assert torch.allclose(model(x), before, rtol=1e-10, atol=1e-12)
    rescale_units(model, opt, layer, units, 1 / c)
    for k, v in model.state_dict().items():
        assert torch.allclose(v, weights[k], rtol=1e-12, atol=1e-14), k
    for p, s in opt.state.items():
        for k, v in s.items():
            if torch.is_tensor(v) and v.dim() > 0:
                assert torch.allclose(v, state[id(p)][k], rtol=1e-10, atol=1e-300), k


# -- the Adam decomposition -----------------------------------------------------------------------


@PROPS
@given(
    seed=st.integers(0, 2**32 - 1),
    T=st.integers(1, 6),
    betas=st.sampled_from([(0.9, 0.999), (0.5, 0.5), (0.0, 0.9), (0.95, 0.8)]),
    c=st.sampled_from([1e-3, 0.5, 4.0, 1e3]),
)
def test_adam_updates_are_torchs_and_ignore_the_scale_and_sign_of_the_loss(seed, T, betas, c):
    """The update of a gradient history is ``torch.optim.Adam``'s step over its rate; with
    ``eps = 0`` it does not change when the loss is multiplied by ``c > 0`` and changes sign
    with the loss; the parts sum to it; a permutation of the coordinates permutes it."""
    from gaugedyn.adam import decompose_history

    rng = np.random.default_rng(seed)
    grads = rng.normal(size=(T, 5))
    parts = decompose_history(grads, *betas, eps=1e-8)
    assert np.allclose(parts.total(), parts.update, rtol=1e-12, atol=1e-12)
    p = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([p], lr=1.0, betas=betas, eps=1e-8)
    for t in range(T):
        before = p.detach().clone()
        p.grad = torch.from_numpy(grads[t].copy())
        opt.step()
        step = (before - p.detach()).numpy()
        assert np.allclose(step, parts.update[t], rtol=1e-10, atol=1e-14)
    exact = decompose_history(grads, *betas, eps=0.0).update
    assert np.allclose(decompose_history(c * grads, *betas, eps=0.0).update, exact, rtol=1e-10)
    assert np.allclose(decompose_history(-grads, *betas, eps=0.0).update, -exact, rtol=1e-12)
    order = rng.permutation(5)
    moved = decompose_history(grads[:, order], *betas, eps=1e-8)
    assert np.allclose(moved.update, parts.update[:, order], rtol=1e-12)


# -- the order-parameter chain's factorisation ----------------------------------------------------


@PROPS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    data=st.data(),
    scale=st.sampled_from([4.0**-13, 4.0**-5, 4.0**5, 4.0**13]),
)
def test_the_chains_factor_finds_the_rank_at_every_scale_of_the_gram_matrix(seed, n, data, scale):
    """``cholesky_psd`` of the Gram matrix of ``n`` vectors spanning ``r`` directions decides the
    same rank whatever the scale of ``C`` (a pivot tolerance relative to the diagonal, not
    absolute; scales are powers of 4, so the scaled factorisation is exact and any difference
    is the tolerance's), ``L L^T = C``, and the rank is ``r`` at one free direction and at full
    rank. In between, the unpivoted factor's rounding can leave a dependent row's pivot just
    above ``PIVOT_TOL`` (about 2% of such random matrices), so there only ``>= r`` is stated."""
    from gaugedyn.training._online_chain import PIVOT_TOL
    from gaugedyn.training._online_kernels import cholesky_psd

    r = data.draw(st.integers(1, n))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, r)) @ rng.normal(size=(r, 8))
    C1 = X @ X.T
    C = scale * C1
    L1, L = np.zeros_like(C1), np.zeros_like(C)
    k = cholesky_psd(C, L, PIVOT_TOL)
    assert k == cholesky_psd(C1, L1, PIVOT_TOL)
    assert k == r if r in (1, n) else k >= r
    assert np.allclose(L @ L.T, C, rtol=1e-7, atol=1e-7 * scale * np.abs(C1).max())


# -- several stop events --------------------------------------------------------------------------


@pytest.mark.parametrize("dynamics", ["flow", "gd"])
@pytest.mark.parametrize("seed", [0, 2])
def test_two_specialization_events_are_the_same_whether_or_not_the_run_stops_at_them(
    dynamics, seed
):
    """Two teachers specialized at different times (for gradient descent, in different steps):
    stopping at specialization ends the run at the later event (the step that contains it) and
    leaves both event times as the run that goes on records them."""
    rng = np.random.default_rng(seed)
    D = 4
    p = theory.Problem(
        rng.uniform(0.5, 1.5, 3) * 0.3,
        rng.normal(0, 0.3 / math.sqrt(D), (3, D)),
        np.array([1.0, 0.8]),
        np.eye(D)[:2],
        "erf",
    )
    kw = {"t_max": 200.0} | ({"dynamics": "gd", "eta": 0.5} if dynamics == "gd" else {})
    full = theory.solve(p, **kw)
    stopped = theory.solve(p, stop_at_specialization=True, **kw)
    times = np.asarray(full.specialization_time)
    assert np.all(np.isfinite(times)) and abs(times[0] - times[1]) > 1.0
    assert np.allclose(stopped.specialization_time, times, rtol=1e-9)
    last = times.max()
    if dynamics == "flow":
        assert stopped.t[-1] == pytest.approx(last, rel=1e-9)
    else:
        assert last <= stopped.t[-1] < last + 0.5 + 1e-9
        assert math.floor(times[0] / 0.5) != math.floor(times[1] / 0.5)
    assert full.t[-1] == pytest.approx(200.0)

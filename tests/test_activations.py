"""The Activation object: quadrature kernels against Monte Carlo, closed forms and finite
differences; the flows of new and user activations; the compiled codes against torch."""

import math
import os

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.theory import (
    ACTIVATIONS,
    Activation,
    activation_of,
    check_activation,
    random_problem,
    solve,
)
from gaugedyn.theory._quadrature import PairQuadrature

SAMPLES = int(os.environ.get("GAUGEDYN_MC_SAMPLES", "1000000"))
"""Monte Carlo samples per configuration (1e6 keeps each activation's check near a second in the
suite; ``GAUGEDYN_MC_SAMPLES=10000000`` runs the same test at 1e7, where the standard errors the
4-sigma rule is measured in are sqrt(10) smaller)."""


def _softplus_user():
    return Activation.from_torch(torch.nn.functional.softplus, name="softplus_user")


def _configs(n=20, seed=7):
    rng = np.random.default_rng(seed)
    q1, q2 = rng.uniform(0.25, 2.0, n), rng.uniform(0.25, 2.0, n)
    c = rng.uniform(-0.9, 0.9, n) * np.sqrt(q1 * q2)
    return q1, q2, c


def _numpy(fn):
    return lambda x: fn(torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("name", ["tanh", "leaky_relu", "quadratic", "he3", "user_softplus"])
def test_kernels_within_four_standard_errors_of_monte_carlo(name):
    """F, dF/dq1, dF/dq2, dF/dc, S and dS/dq of the quadrature against Monte Carlo estimates that
    use only g itself (the likelihood-ratio form of every derivative: d/dC E[h(x)] =
    E[h(x) d log p(x) / dC]), on 20 random covariances."""
    act = _softplus_user() if name == "user_softplus" else ACTIVATIONS[name]
    F, dF, _, S, dS, _ = act.kernels
    g = _numpy(act.function)
    rng = np.random.default_rng(11)
    worst = 0.0
    for q1, q2, c in zip(*_configs()):
        z = rng.standard_normal((2, SAMPLES))
        rho = c / math.sqrt(q1 * q2)
        x1 = math.sqrt(q1) * z[0]
        x2 = math.sqrt(q2) * (rho * z[0] + math.sqrt(1 - rho**2) * z[1])
        A = np.linalg.inv([[q1, c], [c, q2]])
        y1, y2 = A[0, 0] * x1 + A[0, 1] * x2, A[1, 0] * x1 + A[1, 1] * x2
        gg, g11 = g(x1) * g(x2), g(x1) ** 2
        grad = dF(q1, q2, c)
        cases = [
            (gg, F(q1, q2, c)),
            (gg * 0.5 * (y1 * y1 - A[0, 0]), grad[0]),
            (gg * 0.5 * (y2 * y2 - A[1, 1]), grad[1]),
            (gg * (y1 * y2 - A[0, 1]), grad[2]),
            (g11, S(q1)),
            (g11 * (z[0] ** 2 - 1) / (2 * q1), dS(q1)),
        ]
        for sample, value in cases:
            se = sample.std(ddof=1) / math.sqrt(SAMPLES)
            worst = max(worst, abs(float(value) - sample.mean()) / se)
    assert worst < 4.0, (name, worst)


@pytest.mark.parametrize(
    "name", ["tanh", "softplus", "gelu", "leaky_relu", "abs", "he2", "he3", "user_softplus"]
)
def test_hessian_is_the_derivative_of_the_gradient(name):
    """The numerical Hessian against a five-point difference of its gradient (both from a
    160-term (or 160-node) rule, so that its error is below the difference's resolution), and
    the default rule's Hessian against that fine one."""
    act = _softplus_user() if name == "user_softplus" else ACTIVATIONS[name]
    base = act.quadrature
    fine = PairQuadrature(base.g, base.g1, base.g2, base.homogeneous, 160)
    q1, q2, c = _configs(6, seed=3)
    H = fine.pair_hess(q1, q2, c)
    h = 1e-3
    order = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    for (i, j), hij in zip(order, H):
        e = np.eye(3)[j] * h

        def grad(s, e=e, i=i):
            return fine.pair_grad(q1 + s * e[0], q2 + s * e[1], c + s * e[2])[i]

        fd = (8 * (grad(1) - grad(-1)) - (grad(2) - grad(-2))) / (12 * h)
        assert np.allclose(hij, fd, rtol=1e-7, atol=1e-9), (name, i, j, hij - fd)
        # the default rule's Hessian (it enters only the Jacobian): within 1e-5
        assert np.allclose(
            base.pair_hess(q1, q2, c)[order.index((i, j))], hij, rtol=1e-3, atol=1e-5
        ), (name, i, j)

    def dS(s):
        return fine.self_grad(q1 + s * h)

    fd = (8 * (dS(1) - dS(-1)) - (dS(2) - dS(-2))) / (12 * h)
    assert np.allclose(fine.self_hess(q1), fd, rtol=1e-7, atol=1e-9), name


@pytest.mark.parametrize("name", ["relu", "erf", "linear"])
def test_numerical_path_equals_closed_forms(name):
    """Through the numerical rule (polar for relu and linear, Hermite expansion for erf), every
    kernel value, gradient and Hessian equals the sympy closed form to 1e-10, and the stated
    error bound covers the value and gradient errors."""
    act = ACTIVATIONS[name]
    q1, q2, c = _configs()
    num, closed = act.quadrature.kernels(), act.closed_form
    for k in range(6):
        args = (q1, q2, c) if k < 3 else (q1,)
        got, want = np.asarray(num[k](*args)), np.asarray(closed[k](*args))
        assert np.abs(got - want).max() <= 1e-10, (name, k, np.abs(got - want).max())
    bound = act.quadrature.error(q1, q2, c)
    true = np.max(
        np.abs(
            np.stack(
                [
                    num[0](q1, q2, c) - closed[0](q1, q2, c),
                    *(a - b for a, b in zip(num[1](q1, q2, c), closed[1](q1, q2, c))),
                ]
            )
        ),
        axis=0,
    )
    assert np.all(true <= np.maximum(bound, 1e-14) * 10), (true, bound)


def test_error_bound_flags_a_hard_case():
    """tanh at q = 9 (poles of g(sqrt(q) z) near the real axis) is where the Hermite expansion
    is slowest: the bound says so, and it bounds the true error of the N-term rule."""
    act = ACTIVATIONS["tanh"]
    q1, q2, c = np.array([9.0]), np.array([9.0]), np.array([3.0])
    bound = act.quadrature.error(q1, q2, c)
    ref = PairQuadrature(act.quadrature.g, act.quadrature.g1, act.quadrature.g2, False, 300)
    true = abs(act.quadrature.pair(q1, q2, c) - ref.pair(q1, q2, c))
    assert bound[0] > 1e-6 and true[0] <= bound[0]


@pytest.mark.parametrize("name", ["tanh", "leaky_relu", "quadratic", "he3", "user_softplus"])
def test_order_parameter_flow_equals_weight_space_flow(name):
    act = _softplus_user() if name == "user_softplus" else ACTIVATIONS[name]
    pr = random_problem(8, 2, 2, np.random.default_rng(5), activation=act)
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, 5.0, 12)])
    sols = [
        solve(pr, formulation=f, method="DOP853", rtol=1e-12, atol=1e-13, t_max=5.0, t_eval=t_eval)
        for f in ("order-parameters", "weight-space")
    ]
    assert sols[0].observables["loss"][-1] < sols[0].observables["loss"][0]
    for key in ("a", "Q", "R"):
        err = np.abs(getattr(sols[0], key) - getattr(sols[1], key)).max()
        assert err <= 1e-8, (name, key, err)


def test_compiled_codes_match_torch():
    from gaugedyn.training import _online_kernels as k

    z = np.linspace(-7.0, 7.0, 1401)
    for act in ACTIVATIONS.values():
        if act.code is None:
            continue
        zt = torch.from_numpy(z)
        g = np.array([k.g(act.code, v) for v in z])
        gp = np.array([k.g_prime(act.code, v) for v in z])
        assert np.allclose(g, act.function(zt).numpy(), rtol=1e-14, atol=1e-14), act.name
        assert np.allclose(gp, act.derivative(zt).numpy(), rtol=1e-14, atol=1e-14), act.name
        if not act.homogeneous and act.name != "linear":
            g2 = np.array([k.g_second(act.code, v) for v in z])
            assert np.allclose(g2, act.second(zt).numpy(), rtol=1e-13, atol=1e-14), act.name
    with pytest.raises(ValueError, match="unknown activation code"):
        k.g(99, 0.5)
    with pytest.raises(ValueError, match="unknown activation code"):
        k.g_prime(-1, 0.5)
    with pytest.raises(ValueError, match="unknown activation code"):
        k.g_second(11, 0.5)


def test_derivatives_agree_with_autograd_and_sympy():
    for name in ACTIVATIONS:
        rep = check_activation(name, samples=20_000, configurations=2)
        assert rep["derivative_vs_autograd"] <= 1e-12, (name, rep)
        assert rep["function_vs_sympy"] <= 1e-12, (name, rep)
        assert rep["derivative_vs_sympy"] <= 1e-12, (name, rep)


def test_check_activation_reports_and_fails_a_wrong_kernel():
    user = _softplus_user()
    rep = check_activation(user, samples=200_000, configurations=4)
    assert rep["passed"] and rep["quadrature_error"] < 1e-9
    assert set(rep["max_z"]) == {"pair", "pair_dc", "pair_dq1", "self"}
    wrong = Activation(
        name="wrong",
        function=torch.tanh,
        derivative=ACTIVATIONS["tanh"].derivative,
        closed_form=ACTIVATIONS["erf"].closed_form,
    )
    assert not check_activation(wrong, samples=200_000, configurations=4)["passed"]


def test_bad_activation_is_one_clear_error():
    with pytest.raises(InputError, match="activation='swish' is not allowed.*tanh"):
        activation_of("swish")
    with pytest.raises(InputError, match="not callable"):
        Activation.from_torch("tanh")
    user = _softplus_user()
    pr = random_problem(6, 2, 1, np.random.default_rng(0), activation=user)
    from gaugedyn.training import TrainConfig, train

    cfg = TrainConfig(optimizer="sgd", lr=0.1, steps=5, samples=None, batch=1)
    with pytest.raises(InputError, match="no compiled kernel.*backend='torch'"):
        train(pr, cfg, seeds=1, backend="compiled")


def test_check_activation_command(tmp_path, capsys):
    import json

    from gaugedyn.cli import main

    assert main(["check-activation", "he2", "--samples", "20000", "--configurations", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["activation"] == "he2" and out["passed"] and out["quadrature_error"] < 1e-12
    user = tmp_path / "mine.py"
    user.write_text("import torch\n\ndef cube(z):\n    return z ** 3\n")
    assert (
        main(["check-activation", f"{user}:cube", "--samples", "20000", "--configurations", "2"])
        == 0
    )
    # named by its spec, which every process can load again
    assert json.loads(capsys.readouterr().out)["activation"] == f"{user}:cube"
    assert main(["check-activation", "swish"]) == 2
    assert "activation='swish' is not allowed" in capsys.readouterr().err
    assert main(["check-activation", "tanh", "--samples", "10"]) == 2


def test_hessian_of_aligned_pairs_is_finite_and_continuous():
    """The Hermite expansion's derivatives are the series' own (no score, no clipping): finite
    at exact alignment and continuous into it; the aligned value is the self kernel within the
    stated error bound."""
    quad = ACTIVATIONS["tanh"].quadrature
    q = np.array([0.7, 1.3])
    aligned = quad.pair_hess(q[0], q[1], np.sqrt(q[0] * q[1]))
    near = quad.pair_hess(q[0], q[1], (1 - 1e-9) * np.sqrt(q[0] * q[1]))
    assert np.all(np.isfinite(aligned)) and np.allclose(aligned, near, rtol=1e-6, atol=1e-8)
    bound = quad.error(np.array([1.1]), np.array([1.1]), np.array([1.1]))[0]
    assert abs(quad.pair(1.1, 1.1, 1.1) - quad.self_(1.1)) <= bound


@pytest.mark.parametrize("name", ["leaky_relu", "abs", "user_homogeneous"])
def test_homogeneous_reduction_equals_polar_quadrature(name):
    """A positively homogeneous g is g(1) relu + g(-1) relu(-.): the flow's kernels (ReLU closed
    forms) equal the polar quadrature to 1e-12, values, gradients and Hessians."""
    if name == "user_homogeneous":
        act = Activation.from_torch(
            lambda z: torch.where(z > 0, 2.0 * z, -0.5 * z), name="kinked", homogeneous=True
        )
    else:
        act = ACTIVATIONS[name]
    assert act.rule.startswith("ReLU closed forms")
    q1, q2, c = _configs()
    flow, polar = act.kernels, act.quadrature.kernels()
    for k in range(6):
        args = (q1, q2, c) if k < 3 else (q1,)
        got = np.atleast_2d(np.asarray(flow[k](*args), dtype=float))
        want = np.atleast_2d(np.asarray(polar[k](*args), dtype=float))
        assert np.abs(got - want).max() <= 1e-12 * max(1.0, np.abs(want).max()), (name, k)

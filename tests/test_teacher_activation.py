"""A teacher with its own activation: the cross kernel against a one-dimensional integral, the
population loss against Monte Carlo, the order-parameter flow against the weight-space flow, the
compiled chain and the torch trainer against the loss they report, and the online ODE inside
the chain's seed band (erf teacher, ReLU student: the classical mismatched case)."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import erf

from gaugedyn import InputError
from gaugedyn.theory import (
    ACTIVATIONS,
    cross_kernels,
    population_loss,
    random_problem,
    solve,
)
from gaugedyn.theory._activation import cross_error
from gaugedyn.training import TrainConfig, train
from gaugedyn.training._online_fast import train_online
from gaugedyn.training._online_ode import online_ode


def _relu_erf(q1, q2, c):
    """``E[relu(x1) erf(x2 / sqrt 2)]`` by one adaptive integral: given ``x1``, ``x2`` is normal
    with mean ``c x1 / q1`` and variance ``v = q2 - c^2 / q1``, and ``E[erf(x / sqrt 2)] =
    erf(m / sqrt(2 (1 + v)))`` for ``x ~ N(m, v)``."""
    v = q2 - c * c / q1

    def f(x):
        return (
            x
            * math.erf(c / q1 * x / math.sqrt(2 * (1 + v)))
            * math.exp(-x * x / (2 * q1))
            / math.sqrt(2 * math.pi * q1)
        )

    return integrate.quad(f, 0, np.inf, epsabs=1e-15, epsrel=1e-13)[0]


def test_cross_kernel_equals_a_one_dimensional_integral():
    F, dF, d2F = cross_kernels("relu", "erf")
    rng = np.random.default_rng(4)
    h = 1e-4
    for _ in range(6):
        q1, q2 = rng.uniform(0.3, 3.0, 2)
        c = rng.uniform(-0.999, 0.999) * math.sqrt(q1 * q2)
        assert abs(F(q1, q2, c) - _relu_erf(q1, q2, c)) <= 1e-12
        grad = dF(q1, q2, c)
        for j, e in enumerate(np.eye(3) * h):
            fd = (
                _relu_erf(*(np.array([q1, q2, c]) + e)) - _relu_erf(*(np.array([q1, q2, c]) - e))
            ) / (2 * h)
            assert abs(grad[j] - fd) <= 1e-7, (j, grad[j], fd)
        H = d2F(q1, q2, c)  # q1q1, q1q2, q1c, q2q2, q2c, cc against differences of the gradient
        for (i, j), hij in zip([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], H):
            e = np.eye(3)[j] * h
            x = np.array([q1, q2, c])
            fd = (dF(*(x + e))[i] - dF(*(x - e))[i]) / (2 * h)
            assert abs(hij - fd) <= 1e-6 * max(1.0, abs(fd)), (i, j, hij, fd)
    assert (
        cross_error(
            "relu", "erf", np.array([1.0, 2.5]), np.array([1.5, 0.5]), np.array([0.9, -1.1])
        ).max()
        < 1e-12
    )


def test_same_activation_and_homogeneous_pairs_reduce_to_closed_forms():
    q1, q2, c = np.array([0.7, 1.4]), np.array([1.2, 0.5]), np.array([0.5, -0.6])
    assert cross_kernels("erf", None)[0] is ACTIVATIONS["erf"].kernels[0]
    F = cross_kernels("leaky_relu", "relu")[0]
    # leaky = relu - 0.01 relu(-.): E[leaky(x1) relu(x2)] = F_relu(c) - 0.01 F_relu(-c)
    Fr = ACTIVATIONS["relu"].kernels[0]
    assert np.allclose(F(q1, q2, c), Fr(q1, q2, c) - 0.01 * Fr(q1, q2, -c), rtol=0, atol=1e-15)


def test_population_loss_of_a_mismatched_teacher_equals_monte_carlo():
    pr = random_problem(
        6, 3, 2, np.random.default_rng(2), activation="relu", teacher_activation="erf"
    )
    a, Q, R, b, T = pr.order_parameters()
    loss = population_loss(a, Q, R, b, T, "relu", "erf")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1_000_000, 6))
    f = np.maximum(X @ pr.W.T, 0) @ pr.a
    fstar = erf(X @ pr.V.T / math.sqrt(2)) @ pr.b
    sample = 0.5 * (f - fstar) ** 2
    se = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(loss - sample.mean()) < 4 * se
    # and it is not the matched problem's loss
    assert abs(population_loss(a, Q, R, b, T, "relu") - sample.mean()) > 10 * se


def test_mismatched_flow_equals_the_weight_space_flow():
    pr = random_problem(
        8, 2, 2, np.random.default_rng(5), activation="relu", teacher_activation="erf"
    )
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, 5.0, 12)])
    sols = [
        solve(pr, formulation=f, method="DOP853", rtol=1e-12, atol=1e-13, t_max=5.0, t_eval=t_eval)
        for f in ("order-parameters", "weight-space")
    ]
    assert sols[0].observables["loss"][-1] < sols[0].observables["loss"][0]
    for key in ("a", "Q", "R"):
        assert np.abs(getattr(sols[0], key) - getattr(sols[1], key)).max() <= 1e-8, key
    assert pr.describe()["teacher_activation"] == "erf"


def test_torch_trainer_uses_the_teachers_activation():
    """Online SGD in torch from the problem's teacher: the empirical loss of the first records
    matches the population loss of the mismatched pair (not the matched one)."""
    pr = random_problem(
        200, 2, 2, np.random.default_rng(1), activation="relu", teacher_activation="erf"
    )
    cfg = TrainConfig(
        optimizer="sgd", lr=1e-6, steps=2000, samples=None, batch=50, points_per_decade=2
    )
    res = train(pr, cfg, seeds=2, backend="torch")
    a, Q, R, b, T = pr.order_parameters()
    assert res.teacher_activation == "erf"
    assert np.allclose(res.loss[:, 0], population_loss(a, Q, R, b, T, "relu", "erf"))
    emp = np.nanmean(res.loss_empirical[:, 1:])
    assert abs(emp - res.loss[0, 0]) < 0.05 * res.loss[0, 0]


def test_online_ode_inside_the_chain_seed_band_erf_teacher_relu_student():
    """At D = 10^4, erf teacher and ReLU student: the online ODE lies inside the 10-90% band of
    10 chain seeds (the compiled chain with the teacher's code) at >= 90% of the records of a,
    Q and R from t = 0.5 on."""
    D = 10_000
    pr = random_problem(
        D, 2, 2, np.random.default_rng(3), activation="relu", teacher_activation="erf"
    )
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=3 * D, samples=None, points_per_decade=4)
    chain = train_online(pr, cfg, 10, 5, None, None, 2, "chain")
    ode = online_ode(pr, 1.0, chain.time, rtol=1e-5, atol=1e-7)
    late = chain.time >= 0.5
    inside = []
    for key in ("a", "Q", "R"):
        x = getattr(chain, key)[:, late]
        lo, hi = np.quantile(x, [0.1, 0.9], axis=0)
        inside.append(((ode[key][late] >= lo) & (ode[key][late] <= hi)).ravel())
    assert np.concatenate(inside).mean() >= 0.9


def test_bad_teacher_activation_is_one_clear_error():
    with pytest.raises(InputError, match="activation='swish' is not allowed"):
        random_problem(5, 1, 1, np.random.default_rng(0), teacher_activation="swish")
    pr = random_problem(
        20, 1, 1, np.random.default_rng(0), activation="relu", teacher_activation="erf"
    )
    with pytest.raises(InputError, match="method='compiled'"):
        online_ode(pr, 1.0, [0.0, 1.0], method="compiled")


def test_command_lines_take_a_teacher_activation(capsys):
    import json

    from gaugedyn.cli import main

    assert (
        main(
            [
                "solve",
                "--setup",
                "single",
                "--dim",
                "20",
                "--gauge",
                "balanced",
                "--activation",
                "relu",
                "--teacher-activation",
                "erf",
                "--t-max",
                "5",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["problem"]["teacher_activation"] == "erf"
    assert (
        main(
            [
                "train",
                "--setup",
                "single",
                "--dim",
                "20",
                "--gauge",
                "balanced",
                "--online",
                "--steps",
                "50",
                "--activation",
                "relu",
                "--teacher-activation",
                "erf",
                "--optimizer",
                "sgd",
                "--backend",
                "chain",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["teacher_activation"] == "erf"
    assert (
        main(
            [
                "solve",
                "--setup",
                "single",
                "--dim",
                "20",
                "--gauge",
                "balanced",
                "--teacher-activation",
                "swish",
            ]
        )
        == 2
    )
    assert "--teacher-activation='swish' is not allowed" in capsys.readouterr().err


@pytest.mark.parametrize(
    "student, teacher",
    [("tanh", "user_softplus"), ("leaky_relu", "tanh"), ("he3", "erf"), ("erf", "relu")],
)
def test_cross_kernels_within_four_standard_errors_of_monte_carlo(student, teacher):
    """E[g(x1) g*(x2)] and its three first derivatives (likelihood-ratio Monte Carlo, 10^6
    samples per configuration) on 10 random covariances, for smooth, homogeneous and user pairs."""
    import torch

    from gaugedyn.theory import Activation

    def act(name):
        if name == "user_softplus":
            return Activation.from_torch(torch.nn.functional.softplus, name="softplus_user")
        return ACTIVATIONS[name]

    s, t = act(student), act(teacher)
    F, dF, _ = cross_kernels(s, t)

    def numpy(fn):
        return lambda x: fn(torch.from_numpy(x)).numpy()

    g, gt = numpy(s.function), numpy(t.function)
    rng = np.random.default_rng(12)
    worst = 0.0
    for _ in range(10):
        q1, q2 = rng.uniform(0.25, 2.0, 2)
        c = rng.uniform(-0.9, 0.9) * math.sqrt(q1 * q2)
        z = rng.standard_normal((2, 1_000_000))
        rho = c / math.sqrt(q1 * q2)
        x1 = math.sqrt(q1) * z[0]
        x2 = math.sqrt(q2) * (rho * z[0] + math.sqrt(1 - rho**2) * z[1])
        A = np.linalg.inv([[q1, c], [c, q2]])
        y1, y2 = A[0, 0] * x1 + A[0, 1] * x2, A[1, 0] * x1 + A[1, 1] * x2
        gg = g(x1) * gt(x2)
        grad = dF(q1, q2, c)
        for sample, value in [
            (gg, F(q1, q2, c)),
            (gg * 0.5 * (y1 * y1 - A[0, 0]), grad[0]),
            (gg * 0.5 * (y2 * y2 - A[1, 1]), grad[1]),
            (gg * (y1 * y2 - A[0, 1]), grad[2]),
        ]:
            se = sample.std(ddof=1) / math.sqrt(sample.size)
            worst = max(worst, abs(float(value) - sample.mean()) / se)
    assert worst < 4.0, (student, teacher, worst)


def test_batched_flow_carries_the_teacher_activation():
    from gaugedyn.theory import solve_batch

    problems = [
        random_problem(
            10, 2, 2, np.random.default_rng(i), activation="relu", teacher_activation="erf"
        )
        for i in range(2)
    ]
    t = np.concatenate([[0.0], np.geomspace(1e-2, 5.0, 10)])
    batch = solve_batch(problems, t_max=5.0, t_eval=t, rtol=1e-10, atol=1e-12)
    for i, pr in enumerate(problems):
        one = solve(pr, t_max=5.0, t_eval=t, rtol=1e-10, atol=1e-12)
        assert np.abs(batch.observables["loss"][i] - one.observables["loss"]).max() < 1e-8
    mixed = [problems[0], problems[1].replace(teacher_activation=None)]
    with pytest.raises(InputError, match="teacher_activation"):
        solve_batch(mixed, t_max=1.0)

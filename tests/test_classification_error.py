"""The classification error beside the mean-squared error: exact values where they exist
(linear activation, odd activation with one unit each), Monte Carlo in weight space for a
mismatched teacher, and its place in the flow's and the trainer's outputs."""

import math

import numpy as np
import pytest
from scipy.special import erf

from gaugedyn import InputError
from gaugedyn.theory import classification_error, random_problem, solve
from gaugedyn.training import TrainConfig, train


def test_linear_activation_equals_the_angle_formula():
    """For linear g, f and f* are jointly Gaussian: P(sign f != sign f*) = arccos(corr) / pi."""
    pr = random_problem(10, 3, 2, np.random.default_rng(1), activation="linear")
    a, Q, R, b, T = pr.order_parameters()
    err, se = classification_error(a, Q, R, b, T, "linear", samples=200_000)
    corr = (a @ R @ b) / math.sqrt((a @ Q @ a) * (b @ T @ b))
    exact = math.acos(corr) / math.pi
    assert 0.01 < exact < 0.99 and abs(err - exact) < 4 * se


def test_odd_activation_one_unit_equals_the_angle_formula():
    """erf, K = M = 1: sign(a erf(lambda)) = sign(a) sign(lambda), so the error is
    arccos(sign(a b) corr(lambda, nu)) / pi."""
    pr = random_problem(10, 1, 1, np.random.default_rng(4), activation="erf")
    a, Q, R, b, T = pr.order_parameters()
    err, se = classification_error(a, Q, R, b, T, "erf", samples=200_000)
    corr = np.sign(a[0] * b[0]) * R[0, 0] / math.sqrt(Q[0, 0] * T[0, 0])
    assert abs(err - math.acos(corr) / math.pi) < 4 * se


def test_mismatched_teacher_equals_monte_carlo_in_weight_space():
    """ReLU student, erf teacher: the fields' estimate against sign disagreements counted on
    inputs x ~ N(0, I_D) through the weights (independent draws)."""
    pr = random_problem(
        12, 3, 3, np.random.default_rng(2), activation="relu", teacher_activation="erf"
    )
    a, Q, R, b, T = pr.order_parameters()
    err, se = classification_error(a, Q, R, b, T, "relu", "erf", samples=200_000)
    X = np.random.default_rng(9).standard_normal((200_000, 12))
    f = np.maximum(X @ pr.W.T, 0.0) @ pr.a
    fs = erf(X @ pr.V.T / math.sqrt(2)) @ pr.b
    mc = np.mean(np.where(f >= 0, 1, -1) != np.where(fs >= 0, 1, -1))
    se_mc = math.sqrt(mc * (1 - mc) / X.shape[0])
    assert abs(err - mc) < 4 * math.hypot(se, se_mc), (err, mc)


def test_flow_and_trainer_report_it_beside_the_loss():
    pr = random_problem(30, 2, 2, np.random.default_rng(0), activation="erf")
    sol = solve(pr, t_max=5.0, classification_samples=4096)
    err, se = sol.observables["classification_error"], sol.observables["classification_error_se"]
    assert err.shape == sol.observables["loss"].shape == se.shape
    a, Q, R, b, T = pr.order_parameters()
    assert err[0] == classification_error(a, Q, R, b, T, "erf", samples=4096)[0]
    assert "classification_error" not in solve(pr, t_max=1.0).observables
    cfg = TrainConfig(
        optimizer="sgd", lr=0.5, steps=300, samples=None, batch=1, points_per_decade=2
    )
    res = train(pr, cfg, seeds=2, backend="torch")
    e, s = res.classification_error(samples=4096)
    assert e.shape == s.shape == res.loss.shape
    assert np.allclose(e[:, 0], err[0])  # the same start, the same common random numbers


def test_bad_classification_samples_is_one_clear_error():
    pr = random_problem(5, 1, 1, np.random.default_rng(0))
    with pytest.raises(InputError, match="classification_samples=-1 is not allowed"):
        solve(pr, t_max=1.0, classification_samples=-1)

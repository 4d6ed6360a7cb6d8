"""Functional pruning as an observable: the closed-form remaining function against Monte Carlo,
owner ties, "pruned from then on", and the ``solve`` report of the issue's patterns."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from gaugedyn.theory import duplicates, owners, pruned_since, remaining_relative
from gaugedyn.theory._functional import (
    function_norm,
    functional_report,
    owner_sets,
    pruning_time,
    remaining_function,
)


def _relu_net(a, W, x):
    return np.maximum(x @ W.T, 0.0) @ a


def test_remaining_function_matches_monte_carlo():
    rng = np.random.default_rng(11)
    D, K = 6, 4
    W = rng.normal(size=(K, D)) / np.sqrt(D)
    a = rng.normal(size=K)
    V = rng.normal(size=(1, D)) / np.sqrt(D)
    b = np.array([1.3])
    Q, R, T = W @ W.T, W @ V.T, V @ V.T
    own = owners(a, Q, R, T, b)[0]
    assert own >= 0
    rest = np.arange(K) != own
    x = rng.normal(size=(400_000, D))
    mc = np.sqrt(np.mean(_relu_net(a[rest], W[rest], x) ** 2))
    se = np.std(_relu_net(a[rest], W[rest], x) ** 2) / np.sqrt(x.shape[0]) / (2 * mc)
    closed = float(remaining_function(a, Q, R, T, b))
    assert abs(closed - mc) < 4 * se + 1e-12, (closed, mc, se)
    teacher = np.sqrt(np.mean(_relu_net(b, V, x) ** 2))
    assert float(remaining_relative(a, Q, R, T, b)) == pytest.approx(closed / teacher, rel=1e-2)


def test_cancelling_non_owners_carry_no_function():
    u = np.array([0.6, 0.8])
    W = np.stack([u, u, 2 * u])  # the non-owners 1 and 2 share a direction
    a = np.array([1.0, 0.5, -0.25])  # 0.5 relu(u.x) - 0.25 relu(2 u.x) = 0
    V = np.array([[0.6, 0.8]])
    Q, R, T, b = W @ W.T, W @ V.T, V @ V.T, np.ones(1)
    assert owners(a, Q, R, T, b)[0] == 0
    assert float(remaining_function(a, Q, R, T, b)) < 1e-7
    assert float(function_norm(a[1:2], Q[1:2, 1:2])) == pytest.approx(0.5 * np.sqrt(0.5))


def test_identical_favourable_copies_are_a_tie_never_an_index():
    u = np.array([1.0, 0.0])
    W, a = np.stack([u, u, u]), np.array([0.5, 0.5, 1e-3])
    V, b = u[None], np.ones(1)
    Q, R, T = W @ W.T, W @ V.T, V @ V.T
    assert owners(a, Q, R, T, b)[0] == -1
    assert owner_sets(a, Q, R, T, b)[:, 0].tolist() == [True, True, False]
    report = functional_report(a, Q, R, T, b)
    assert report["owner"] == ["tie"] and report["owner_set"] == [[0, 1]]
    assert owners(np.array([0.5, 0.4999, 0.0]), Q, R, T, b)[0] == 0  # 2e-4 apart: an owner


def test_pruning_time_means_pruned_from_then_on():
    t = np.arange(6.0)
    rho = np.array([[1.0, 1.0], [0.5, 1e-4], [1e-4, 0.2], [1e-4, 0.1], [1e-5, 1e-4], [1e-6, 1e-4]])
    since = pruned_since(t, rho, 1e-3)
    assert since.tolist() == [2.0, 4.0]  # copy 1 crossed at t = 1 but came back
    assert np.isnan(pruned_since(t, np.ones((6, 1)), 1e-3)[0])
    events = np.array([1.7, 0.9])  # an event inside the final stretch refines it; else kept
    assert pruning_time(t, rho, 1e-3, events).tolist() == [1.7, 4.0]


def test_anti_aligned_balanced_start_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        problem = duplicates(10, ["balanced", "a-heavy"], overlap=-0.999)
        a, Q, R, b, T = problem.order_parameters()
        owners(a, Q, R, T, b)
        remaining_relative(a, Q, R, T, b)


def _solve(capsys, *args) -> dict:
    from gaugedyn.cli import main

    assert main(["solve", "--setup", "duplicates", "--dim", "10", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_solve_reports_functional_pruning_and_ties(capsys):
    out = _solve(
        capsys,
        "--scale",
        "0.2",
        "--gauges",
        "w-heavy,a-heavy,w-heavy,balanced,w-heavy",
        "--t-max",
        "25000",
    )
    assert out["owner"] == [1] and out["remaining_relative"] < 1e-4
    assert all(
        p is None for i, p in enumerate(out["pruning_time"]) if i != 1
    )  # none pruned (NaN, written null)
    assert "time not reached" in out["null"]
    for formulation in ("order-parameters", "weight-space"):
        tie = _solve(
            capsys, "--gauges", "a-heavy,a-heavy,w-heavy,w-heavy", "--formulation", formulation
        )
        assert tie["owner"] == ["tie"] and tie["owner_set"] == [[0, 1]], formulation

"""The classical options of the population flow: weight decay and a separate (or frozen)
second-layer rate, in all three formulations, their Jacobians and gradient-descent maps."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.theory import (
    FORMULATIONS,
    gd_step,
    initial_state,
    jacobian,
    population_loss,
    random_problem,
    rhs,
    solve,
    state_to_order_parameters,
)

OPTIONS = dict(weight_decay=0.3, lr2=0.5)


def test_weight_space_rhs_is_minus_the_penalised_gradient():
    """``da/dt = -lr2 d(L + lambda |theta|^2 / 2)/da``, ``dW/dt = -d(...)/dW`` by central
    differences of the population loss itself."""
    pr = random_problem(5, 2, 2, np.random.default_rng(1), activation="erf")
    y, p = initial_state(pr, "weight-space", **OPTIONS)
    V, b, T = pr.V, pr.b, pr.V @ pr.V.T
    lam = OPTIONS["weight_decay"]

    def penalised(y):
        a, W = y[:2], y[2:].reshape(2, 5)
        return population_loss(a, W @ W.T, W @ V.T, b, T, "erf") + 0.5 * lam * (y @ y)

    h = 1e-6
    grad = np.array(
        [(penalised(y + h * e) - penalised(y - h * e)) / (2 * h) for e in np.eye(y.size)]
    )
    scale = np.r_[np.full(2, OPTIONS["lr2"]), np.ones(10)]
    assert np.allclose(rhs(0.0, y, p), -scale * grad, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_jacobian_with_options_matches_finite_differences(formulation):
    y, p = initial_state(random_problem(6, 3, 2, np.random.default_rng(0)), formulation, **OPTIONS)
    J = jacobian(0.0, y, p)
    h = 1e-6 * np.maximum(1.0, np.abs(y))
    Jfd = np.stack(
        [
            (rhs(0, y + hk * e, p) - rhs(0, y - hk * e, p)) / (2 * hk)
            for hk, e in zip(h, np.eye(y.size))
        ],
        axis=-1,
    )
    assert np.abs(J - Jfd).max() <= 1e-7 * np.abs(Jfd).max()


def test_formulations_agree_with_options_along_trajectories_and_gd():
    pr = random_problem(8, 2, 2, np.random.default_rng(2), activation="erf")
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, 5.0, 10)])
    sols = [
        solve(
            pr,
            formulation=f,
            method="DOP853",
            rtol=1e-12,
            atol=1e-13,
            t_max=5.0,
            t_eval=t_eval,
            **OPTIONS,
        )
        for f in FORMULATIONS
    ]
    for s in sols[1:]:
        for key in ("a", "Q", "R"):
            assert np.abs(getattr(s, key) - getattr(sols[0], key)).max() <= 1e-8
    assert sols[0].settings["weight_decay"] == 0.3 and sols[0].settings["lr2"] == 0.5
    out = {}
    for f in FORMULATIONS:
        y, p = initial_state(pr, f, **OPTIONS)
        for _ in range(10):
            y = gd_step(y, 0.05, p)
        out[f] = state_to_order_parameters(y, p)
    for f in FORMULATIONS[1:]:
        for x, ref in zip(out[f], out["order-parameters"]):
            assert np.abs(x - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


def test_frozen_second_layer_and_decay_to_zero():
    pr = random_problem(20, 2, 2, np.random.default_rng(3))
    frozen = solve(pr, t_max=5.0, lr2=0.0)
    assert np.array_equal(frozen.a, np.broadcast_to(pr.a, frozen.a.shape))
    plain = solve(pr, t_max=5.0)
    assert "weight_decay" not in plain.settings
    decayed = solve(pr, t_max=5.0, weight_decay=0.5)  # the penalty shrinks the weights

    def size(s):
        return (s.a[-1] ** 2).sum() + np.trace(s.Q[-1])

    assert size(decayed) < 0.9 * size(plain)


@pytest.mark.parametrize(
    "kw", [dict(weight_decay=-1.0), dict(lr2=float("nan")), dict(weight_decay="x")]
)
def test_bad_options_are_one_clear_error(kw):
    with pytest.raises(InputError, match=r"is not allowed( \(.+\))?; allowed: a number in \[0, "):
        solve(random_problem(5, 1, 1, np.random.default_rng(0)), t_max=1.0, **kw)


def test_solve_and_train_commands_take_the_options(capsys):
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
                "--weight-decay",
                "0.01",
                "--lr2",
                "0.5",
                "--t-max",
                "5",
                "-q",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["weight_decay"] == 0.01 and out["settings"]["lr2"] == 0.5
    assert main(["solve", "--setup", "single", "--dim", "20", "--lr2", "-1"]) == 2
    assert "--lr2='-1' is not allowed" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "--setup",
                "single",
                "--dim",
                "50",
                "--online",
                "--optimizer",
                "sgd",
                "--steps",
                "50",
                "--backend",
                "chain",
                "--label-noise",
                "0.3",
                "-q",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["config"]["label_noise"] == 0.3

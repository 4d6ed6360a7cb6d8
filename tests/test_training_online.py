"""Online training: the compiled backend against the torch trainer, the compiled online ODE
against the numpy one, and the time conventions of online SGD and online Adam."""

import math

import numpy as np
import pytest
import torch

from gaugedyn import InputError
from gaugedyn.theory import random_problem
from gaugedyn.training import TrainConfig, _data, train
from gaugedyn.training._online_fast import (
    compiled_online_rhs,
    compiled_step_size,
    run_kernel,
    train_online_compiled,
)
from gaugedyn.training._online_ode import OnlineODE, online_ode
from gaugedyn.training._optim import SCHEDULES, step_size


def _torch_samples(root_seed, batch, dim, steps):
    """The samples the torch trainer's online stream gives seed 0, as one array."""
    gen = _data.generators(root_seed, [0], "cpu")[0]
    block = _data.stream_block_steps(batch, dim)
    blocks = -(-steps // block)
    X = torch.cat(
        [
            torch.randn((block, batch, dim), generator=gen, dtype=torch.float64)
            for _ in range(blocks)
        ]
    )
    return X[:steps].numpy()


@pytest.mark.parametrize(
    ("activation", "batch", "schedule"),
    [("erf", 1, "cosine"), ("relu", 3, "inverse"), ("linear", 1, "constant")],
)
def test_compiled_kernel_is_the_torch_trainer_on_the_same_samples(activation, batch, schedule):
    problem = random_problem(40, 3, 2, np.random.default_rng(4), activation=activation)
    lr = 0.3 if activation == "linear" else 1.0
    cfg = TrainConfig(
        optimizer="sgd", lr=lr, steps=400, samples=None, batch=batch, schedule=schedule, decay=50.0
    )
    ref = train(problem, cfg, seeds=1, root_seed=11, backend="torch")
    out = run_kernel(
        problem.a,
        problem.W,
        problem.V,
        problem.b,
        activation,
        cfg,
        cfg.grid(),
        X=_torch_samples(11, batch, 40, 400),
    )
    assert out["failed_at"] is None
    np.testing.assert_allclose(out["Q"], ref.Q[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["R"], ref.R[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["a"], ref.a[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["flow"], ref.flow_time, rtol=1e-14, atol=0)
    np.testing.assert_allclose(out["emp"][1:], ref.loss_empirical[0, 1:], rtol=1e-10, atol=1e-14)


def test_compiled_schedules_equal_the_reference_schedules():
    for schedule in SCHEDULES:
        for k in (0, 1, 7, 499, 999):
            assert compiled_step_size(schedule, 0.7, k, 1000, 0.01, 30.0) == pytest.approx(
                step_size(schedule, 0.7, k, 1000, 0.01, 30.0), rel=1e-15
            )


def test_compiled_seeds_do_not_depend_on_threads_or_company():
    problem = random_problem(30, 2, 2, np.random.default_rng(1), activation="erf")
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=3000, samples=None)
    many = train_online_compiled(problem, cfg, seeds=4, root_seed=3, threads=2)
    alone = train_online_compiled(problem, cfg, seed_indices=[2], root_seed=3, threads=1)
    np.testing.assert_array_equal(many.Q[2], alone.Q[0])
    assert not np.array_equal(many.Q[0], many.Q[1])
    assert many.settings["backend"] == "compiled" and "SFC64" in many.settings["seed_derivation"]


def test_compiled_backend_learns_like_the_torch_backend_in_distribution():
    problem = random_problem(100, 2, 2, np.random.default_rng(2), activation="erf")
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=100 * 40, samples=None, points_per_decade=4)
    fast = train(problem, cfg, seeds=16, root_seed=0, backend="compiled")
    slow = train(problem, cfg, seeds=16, root_seed=0, backend="torch")
    f, s = fast.loss[:, -1], slow.loss[:, -1]
    assert f.mean() < 0.5 * fast.loss[:, 0].mean()
    assert abs(f.mean() - s.mean()) < 4 * math.hypot(f.std() / 4, s.std() / 4) + 1e-4


def test_compiled_backend_refuses_what_it_does_not_run():
    problem = random_problem(10, 2, 1, np.random.default_rng(0), activation="erf")
    with pytest.raises(InputError, match="online SGD only"):
        train(problem, TrainConfig(optimizer="adam", samples=None), backend="compiled")
    with pytest.raises(InputError, match="backend="):
        train(problem, TrainConfig(optimizer="sgd", samples=None), backend="fortran")
    with pytest.raises(InputError, match="on_step"):
        train(
            problem,
            TrainConfig(optimizer="sgd", samples=None),
            backend="compiled",
            on_step=lambda r: None,
        )


def test_compiled_online_rhs_is_the_numpy_rhs():
    problem = random_problem(50, 3, 2, np.random.default_rng(5), activation="erf")
    a0, Q0, R0, b, T = problem.order_parameters()
    rng = np.random.default_rng(6)
    for noise, batch in ((True, 1), (True, 4), (False, 1)):
        f = compiled_online_rhs(3, 2, b, T, 0.8, batch, noise)
        ref = OnlineODE(3, 2, b, T, "erf", 0.8, batch, noise)
        for _ in range(5):
            Q = Q0 + 0.1 * rng.standard_normal((3, 3))
            y = np.concatenate(
                [
                    a0 + 0.1 * rng.standard_normal(3),
                    (Q + Q.T).ravel() / 2,
                    (R0 + 0.1 * rng.standard_normal((3, 2))).ravel(),
                ]
            )
            np.testing.assert_allclose(f(0.0, y), ref(0.0, y), rtol=1e-12, atol=1e-14)


def test_compiled_online_ode_agrees_with_the_reference_integration():
    problem = random_problem(500, 4, 4, np.random.default_rng(0), activation="erf")
    t = np.linspace(0.0, 200.0, 41)
    fast = online_ode(problem, 1.0, t)
    ref = online_ode(problem, 1.0, t, method="reference", rtol=1e-12, atol=1e-14)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-6)
    with pytest.raises(InputError, match="method="):
        online_ode(problem, 1.0, t, method="rk4")


# --- the time conventions (module docstring of gaugedyn.training._trainer) ----------------------


def _steps_seen(problem, cfg):
    seen = []
    res = train(
        problem,
        cfg,
        seeds=2,
        root_seed=1,
        on_step=lambda r: seen.append(
            (
                r.step,
                r.time,
                r.lr,
                [x.clone() for x in r.previous],
                [g.clone() for g in r.grads],
                [x.clone() for x in r.params],
            )
        ),
    )
    return res, seen


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_online_sgd_time_is_steps_over_d_and_flow_time_is_eta_t(schedule):
    D = 25
    problem = random_problem(D, 2, 1, np.random.default_rng(0), activation="erf")
    cfg = TrainConfig(optimizer="sgd", lr=0.8, steps=120, samples=None, schedule=schedule)
    res, seen = _steps_seen(problem, cfg)
    np.testing.assert_array_equal(res.time, res.steps / D)
    etas = np.array([step_size(schedule, 0.8, k, 120) for k in range(120)])
    flow = np.concatenate([[0.0], np.cumsum(etas / D)])[res.steps]
    np.testing.assert_allclose(res.flow_time, flow, rtol=1e-13)
    if schedule == "constant":
        np.testing.assert_allclose(res.flow_time, 0.8 * res.time, rtol=1e-13)
    for step, time, lr, prev, grads, after in seen[:5]:
        assert time == step / D
        for p, g, q in zip(prev, grads, after):
            torch.testing.assert_close(q, p - (lr / D) * g, rtol=0, atol=1e-15)


def test_online_adam_steps_as_torch_optim_adam_and_its_time_is_the_sum_of_steps():
    D = 25
    problem = random_problem(D, 2, 1, np.random.default_rng(0), activation="erf")
    cfg = TrainConfig(
        optimizer="adam", lr=0.01, steps=60, samples=None, betas=(0.9, 0.99), schedule="cosine"
    )
    res, seen = _steps_seen(problem, cfg)
    etas = np.array([step_size("cosine", 0.01, k, 60) for k in range(60)])
    flow = np.concatenate([[0.0], np.cumsum(etas)])[res.steps]
    np.testing.assert_allclose(res.time, flow, rtol=1e-13)
    np.testing.assert_allclose(res.flow_time, flow, rtol=1e-13)
    params = [torch.nn.Parameter(x.clone()) for x in seen[0][3]]
    opt = torch.optim.Adam(params, lr=0.01, betas=(0.9, 0.99), eps=cfg.eps, foreach=False)
    for _step, _time, lr, _prev, grads, after in seen:
        for group in opt.param_groups:
            group["lr"] = lr
        for p, g in zip(params, grads):
            p.grad = g.clone()
        opt.step()
        for p, q in zip(params, after):
            torch.testing.assert_close(p.detach(), q, rtol=0, atol=1e-15)


def test_train_picks_the_cheaper_exact_backend_by_default():
    from gaugedyn.training import choose_backend

    sgd = TrainConfig(optimizer="sgd", lr=1.0, steps=200, samples=None)
    narrow = random_problem(500, 4, 4, np.random.default_rng(0), activation="erf")
    wide = random_problem(1000, 64, 64, np.random.default_rng(0), activation="erf")
    assert choose_backend(narrow, sgd) == "chain"  # 0.6 us a step against 4.3 us
    assert choose_backend(wide, sgd) == "compiled"  # (K + M)^3 per step against D (K + M)
    res = train(narrow, sgd, seeds=1)
    assert res.settings["backend"] == "chain"
    # anything the compiled backends do not run goes to torch
    gd = TrainConfig(optimizer="gd", lr=0.1, steps=10, samples=100)
    assert choose_backend(narrow, gd) == "torch"
    assert choose_backend(narrow, sgd, dtype="float32") == "torch"
    assert choose_backend(narrow, sgd, on_step=lambda record: None) == "torch"
    assert choose_backend(narrow, sgd, root_seed=[0]) == "torch"
    assert train(narrow, sgd, seeds=1, backend="torch").settings["backend"] == "torch"

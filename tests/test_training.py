"""The finite-sample trainer: exact seed reproducibility, observables, optimizers, errors, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gaugedyn import DivergenceError, InputError  # noqa: E402
from gaugedyn.theory import (  # noqa: E402
    alignment,
    duplicates,
    owner,
    population_loss,
    random_problem,
    rho,
    single,
    with_gauge,
)
from gaugedyn.training import TrainConfig, crossing_time, train  # noqa: E402
from gaugedyn.training._network import Network, prepare  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


CONFIGS = [
    TrainConfig(optimizer="gd", lr=0.02, steps=120, samples=301),
    TrainConfig(optimizer="sgd", lr=0.02, steps=120, samples=200, batch=5),
    TrainConfig(optimizer="sgd", lr=0.02, steps=120, samples=200, batch=37),
    TrainConfig(optimizer="sgd", lr=0.5, steps=300, samples=None),
    TrainConfig(optimizer="sgd", lr=0.5, steps=200, samples=None, batch=11),
    TrainConfig(optimizer="adam", lr=0.01, steps=120, samples=150, batch=50, schedule="cosine"),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.optimizer}-{c.samples}-{c.batch}")
@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_one_seed_alone_reproduces_its_batched_run_bitwise(cfg, activation):
    gauges = ["a-heavy", "w-heavy", "w-heavy"]
    problem = with_gauge(duplicates(24, gauges, activation=activation), names=gauges, strength=2.0)
    batched = train(problem, cfg, seeds=5, root_seed=11, device="cpu")
    alone = train(problem, cfg, seed_indices=[3], root_seed=11, device="cpu")
    for key in ("a", "Q", "R", "loss", "loss_empirical"):
        np.testing.assert_array_equal(getattr(alone, key)[0], getattr(batched, key)[3], err_msg=key)
    assert not np.array_equal(batched.a[0], batched.a[3])  # seeds differ: their data differ


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize(
    ("samples", "dim", "width"), [(40003, 40, 1), (1000, 100, 4), (3001, 64, 6), (40003, 40, 4)]
)
def test_reproducible_with_threads_and_large_sample(threads, samples, dim, width):
    # the (1000, 100, 4) and (3001, 64, 6) cases differed in the last bit with torch.bmm and MKL
    # on 2 or 4 threads (a batch of 3 products is threaded per product, a lone one per reduction)
    torch.set_num_threads(threads)
    problem = random_problem(dim, width, 2, np.random.default_rng(0))
    cfg = TrainConfig(lr=0.01, steps=6, samples=samples)
    batched = train(problem, cfg, seeds=3, root_seed=2, device="cpu")
    alone = train(problem, cfg, seed_indices=[1], root_seed=2, device="cpu")
    np.testing.assert_array_equal(alone.Q[0], batched.Q[1])
    np.testing.assert_array_equal(alone.R[0], batched.R[1])
    np.testing.assert_array_equal(alone.loss_empirical[0], batched.loss_empirical[1])


@pytest.mark.parametrize("threads", [2, 4])
def test_seedwise_products_do_not_depend_on_the_batch(threads):
    from gaugedyn.training._network import SEEDWISE_MIN, seedwise_mm

    g = torch.Generator().manual_seed(0)
    torch.set_num_threads(threads)
    for m, k, p in [(4, 64, 40), (6, 3008, 64), (4, 40008, 40)]:  # the last is a large product
        A = torch.randn(3, m, k, generator=g, dtype=torch.float64)
        B = torch.randn(3, k, p, generator=g, dtype=torch.float64)
        batched = seedwise_mm(A, B)[1]
        assert torch.equal(seedwise_mm(A[1:2].clone(), B[1:2].clone())[0], batched)
        if m * k * p < SEEDWISE_MIN:  # small products: single-threaded, so any thread count
            torch.set_num_threads(1)
            assert torch.equal(seedwise_mm(A, B)[1], batched)
            torch.set_num_threads(threads)
    assert torch.get_num_threads() == threads


def test_thread_count_changes_a_seed_only_at_round_off():
    # the bitwise promise is per thread count; across thread counts the BLAS reduction order
    # may change, which moves a short run by round-off only
    problem = random_problem(100, 4, 2, np.random.default_rng(0))
    cfg = TrainConfig(lr=0.01, steps=6, samples=1000)
    runs = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        runs.append(train(problem, cfg, seeds=2, root_seed=2, device="cpu"))
    np.testing.assert_allclose(runs[1].Q, runs[0].Q, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(runs[1].loss_empirical, runs[0].loss_empirical, rtol=1e-13)


def test_gradients_match_autograd_and_padding_is_exact():
    rng = np.random.default_rng(0)
    problem = random_problem(7, 3, 2, rng, activation="erf")
    net = Network.from_problem(problem, seeds=2, device="cpu")
    X = torch.as_tensor(rng.normal(size=(2, 13, 7)))
    y = torch.as_tensor(rng.normal(size=(2, 13)))
    loss, g_a, g_W = net.loss_and_gradients(prepare(X, y))
    a, W = net.a.clone().requires_grad_(), net.W.clone().requires_grad_()
    Z = torch.einsum("skd,snd->skn", W, X)
    f = (torch.erf(Z / np.sqrt(2)) * a[:, :, None]).sum(1)
    ref = 0.5 * ((f - y) ** 2).mean(-1)
    ref.sum().backward()
    out = net.forward(prepare(X))
    assert out.shape == (2, 16) and np.all(out[:, 13:].numpy() == 0.0)  # padded to 8k samples
    np.testing.assert_allclose(out[:, :13].numpy(), f.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loss.numpy(), ref.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(g_a.numpy(), a.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_W.numpy(), W.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_observables_are_the_theory_definitions():
    problem = duplicates(12, ["a-heavy", "w-heavy"])
    res = train(problem, TrainConfig(lr=0.01, steps=50, samples=500), seeds=3, device="cpu")
    a0, Q0, R0, b, T = problem.order_parameters()
    np.testing.assert_allclose(res.Q[:, 0], np.broadcast_to(Q0, res.Q[:, 0].shape), rtol=1e-15)
    np.testing.assert_allclose(res.loss[:, 0], population_loss(a0, Q0, R0, b, T), rtol=1e-14)
    a, Q, R = res.a, res.Q, res.R
    np.testing.assert_array_equal(res.alignment(), alignment(Q, R, T))
    np.testing.assert_array_equal(res.rho(), rho(a, Q))
    np.testing.assert_array_equal(res.owner(), owner(a, Q, R, T, b))
    assert res.delta_drift()[:, 0].max() == 0.0
    assert res.delta_drift()[:, -1].max() < 1e-2
    # closed-form population loss against the network's empirical loss on a large fresh sample
    net = Network.from_problem(problem, seeds=1, device="cpu")
    g = torch.Generator().manual_seed(3)
    X = torch.randn(1, 400_000, 12, generator=g, dtype=torch.float64)
    batch = prepare(X, None)
    y = net.teacher(batch)
    emp = net.loss_and_gradients(batch._replace(y=y))[0].item()
    assert abs(emp - res.loss[0, 0]) < 5e-3 * res.loss[0, 0] + 1e-3


def test_crossing_time_interpolates_linearly_between_records():
    t = np.array([0.0, 1.0, 2.0, 4.0])
    m = np.array([[0.1, 0.5, 0.9, 1.0], [0.1, 0.2, 0.3, 0.4]])
    out = crossing_time(t, m, 0.8)
    assert out[0] == pytest.approx(1.75)
    assert np.isnan(out[1])


def test_float32_and_schedules_recorded():
    problem = single(10, "a-heavy")
    res = train(
        problem,
        TrainConfig(lr=0.05, steps=100, samples=200, schedule="inverse", decay=10.0),
        seeds=2,
        dtype="float32",
        device="cpu",
    )
    assert res.settings["dtype"] == "float32"
    assert res.lr[0] == pytest.approx(0.05) and res.lr[-1] == pytest.approx(0.05 / 11)
    assert res.time[-1] == pytest.approx(sum(0.05 / (1 + k / 10.0) for k in range(100)))
    assert res.specialization_time()[0, 0] < res.time[-1]


def test_adam_matches_torch_optim_adam():
    problem = duplicates(6, ["a-heavy", "w-heavy"])
    cfg = TrainConfig(optimizer="adam", lr=0.01, steps=30, samples=64, record_steps=(30,))
    res = train(problem, cfg, seeds=1, root_seed=4, device="cpu")
    from gaugedyn.training._data import gaussian, generators

    net = Network.from_problem(problem, seeds=1, device="cpu")
    X = gaussian(generators(4, [0], "cpu"), (64, 6), torch.float64, "cpu")
    y = net.teacher(prepare(X))[:, :64]
    a, W = net.a.clone().requires_grad_(), net.W.clone().requires_grad_()
    opt = torch.optim.Adam([a, W], lr=0.01)
    for _ in range(30):
        opt.zero_grad()
        f = (torch.relu(torch.einsum("skd,snd->skn", W, X)) * a[:, :, None]).sum(1)
        (0.5 * ((f - y) ** 2).mean()).backward()
        opt.step()
    np.testing.assert_allclose(res.a[0, -1], a.detach().numpy()[0], rtol=1e-10)
    np.testing.assert_allclose(
        res.Q[0, -1], (W @ W.transpose(1, 2)).detach().numpy()[0], rtol=1e-10
    )


def test_too_large_step_raises_divergence_error():
    problem = single(16, "w-heavy")
    with pytest.raises(DivergenceError) as err:
        train(problem, TrainConfig(lr=5.0, steps=2000, samples=100), seeds=2, device="cpu")
    assert err.value.step > 0 and err.value.quantity in ("a", "W", "loss_empirical")
    assert err.value.time == pytest.approx(5.0 * err.value.step)
    assert err.value.last_state is not None


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(optimizer="newton"),
        dict(lr=-1.0),
        dict(steps=0),
        dict(samples=None, optimizer="gd"),
        dict(schedule="step"),
        dict(samples=10, batch=20),
    ],
)
def test_bad_config_raises_input_error(kwargs):
    with pytest.raises(InputError):
        TrainConfig(**kwargs)


def test_cli_prints_json_and_rejects_bad_input(capsys):
    from gaugedyn.cli import main

    rc = main(
        [
            "train",
            "--setup",
            "duplicates",
            "--dim",
            "8",
            "--gauges",
            "a-heavy,w-heavy",
            "--samples",
            "160",
            "--steps",
            "400",
            "--seeds",
            "3",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["owner"] == [0, 0, 0] and len(out["specialization_time"]) == 3
    assert out["definitions"]["threshold"] == 0.95
    for argv in (
        ["train", "--dim", "1", "--samples", "10"],
        ["train", "--dim", "8", "--samples", "10", "--optimizer", "lbfgs"],
        ["train", "--dim", "8", "--online", "--optimizer", "gd"],
        ["train", "--dim", "8", "--samples", "10", "--gauges", "a-heavy"],
        ["train", "--dim", "8", "--samples", "10", "--dtype", "float16"],
    ):
        assert main(argv) == 2
    assert main(["train", "--dim", "8", "--samples", "ten"]) == 2  # checked by the command


def test_owner_is_the_favourable_copy_in_every_seed():
    from gaugedyn._meta import task_seed
    from gaugedyn.experiments.gauge.gauge_in_training_ownership import EXPERIMENT

    task = {
        "dim": 8,
        "K": 3,
        "seeds": 16,
        "epsilon": 0.02,
        "scale": 1.0,
        "n_factor": 20,
        "threshold": 0.95,
    }
    res = EXPERIMENT.run_task(task, task_seed(0, "test"))
    assert np.all(res["owner"] == 0)
    assert np.median(res["remaining"]) < 0.05


@pytest.mark.parametrize(
    "cfg",
    [
        CONFIGS[0],
        CONFIGS[2],
        CONFIGS[4],
        CONFIGS[5],
        TrainConfig(optimizer="adam", lr=0.01, steps=40, samples=None, batch=3, betas=(0.8, 0.95)),
    ],
    ids=lambda c: f"{c.optimizer}-{c.samples}-{c.batch}",
)
def test_on_step_sees_every_step_and_leaves_the_run_bitwise_unchanged(cfg):
    from gaugedyn.training import StepRecord

    problem = duplicates(10, ["a-heavy", "w-heavy"])
    plain = train(problem, cfg, seeds=3, root_seed=7, device="cpu", backend="torch")
    seen = []
    observed = train(problem, cfg, seeds=3, root_seed=7, device="cpu", on_step=seen.append)
    for key in ("time", "flow_time", "lr", "a", "Q", "R", "loss", "loss_empirical"):
        np.testing.assert_array_equal(getattr(observed, key), getattr(plain, key), err_msg=key)
    assert all(isinstance(r, StepRecord) for r in seen)
    assert [r.step for r in seen] == list(range(1, cfg.steps + 1))
    by_step = {r.step: r for r in seen}
    for j, s in enumerate(plain.steps[1:], start=1):
        r = by_step[int(s)]
        assert r.time == plain.time[j]
        np.testing.assert_array_equal(r.params[0].numpy(), plain.a[:, j])
        np.testing.assert_array_equal(
            r.params[1].numpy() @ r.params[1].numpy().transpose(0, 2, 1), plain.Q[:, j]
        )
    for before, after in zip(seen, seen[1:]):
        assert after.previous[0] is before.params[0] and after.previous[1] is before.params[1]
    first = seen[0]
    np.testing.assert_array_equal(first.previous[1].numpy()[0], problem.W)
    assert first.loss.shape == (3,) and first.grads[1].shape == first.params[1].shape
    if cfg.optimizer == "adam":
        b1, b2 = cfg.betas
        assert [r.adam.k for r in seen] == [r.step for r in seen]
        for g, m, v in zip(first.grads, first.adam.m, first.adam.v):
            np.testing.assert_array_equal(m.numpy(), ((1 - b1) * g).numpy())
            np.testing.assert_array_equal(v.numpy(), ((1 - b2) * (g * g)).numpy())
    else:
        scale = 1 / 10 if cfg.online else 1.0
        assert all(r.adam is None for r in seen)
        for r in seen[:5]:
            for p0, p1, g in zip(r.previous, r.params, r.grads):
                np.testing.assert_array_equal(p1.numpy(), (p0 - r.lr * scale * g).numpy())


def test_on_step_must_be_callable():
    with pytest.raises(InputError, match="on_step"):
        train(single(6, "w-heavy"), TrainConfig(lr=0.01, steps=3, samples=20), on_step=3)


PAIRS = [(0.9, 0.9), (0.9, 0.99), (0.99, 0.9)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_per_copy_betas_and_roots_equal_each_run_alone_bitwise(dtype):
    """One Adam pair and one root per copy: three runs (tied and untied, each its own root)
    trained as one program, each copy bit for bit its run alone, including the on_step view."""
    problem, S, roots = duplicates(6, ["a-heavy", "w-heavy"]), 2, [11, 12, 13]
    base = dict(optimizer="adam", lr=0.05, steps=30, samples=None, batch=12)
    seen = []
    batched = train(
        problem,
        TrainConfig(**base, betas=[p for p in PAIRS for _ in range(S)]),
        root_seed=[r for r in roots for _ in range(S)],
        seed_indices=list(range(S)) * len(PAIRS),
        dtype=dtype,
        device="cpu",
        on_step=lambda rec: seen.append(rec.select(slice(S, 2 * S)).params[1]),
    )
    assert batched.root_seed == [r for r in roots for _ in range(S)]
    for j, (pair, root) in enumerate(zip(PAIRS, roots)):
        steps: list = []
        alone = train(
            problem,
            TrainConfig(**base, betas=pair),
            seeds=S,
            root_seed=root,
            dtype=dtype,
            device="cpu",
            on_step=lambda rec, out=steps: out.append(rec.params[1]),
        )
        rows = slice(j * S, (j + 1) * S)
        for key in ("a", "Q", "R", "loss", "loss_empirical"):
            np.testing.assert_array_equal(
                getattr(batched, key)[rows], getattr(alone, key), err_msg=f"{pair} {key}"
            )
        if j == 1:
            assert all(torch.equal(x, y) for x, y in zip(seen, steps, strict=True))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: TrainConfig(optimizer="adam", betas=[[0.9, 1.0], [0.9, 0.9]]), "betas=1.0"),
        (lambda: TrainConfig(optimizer="adam", betas=[[0.9, 0.9], 0.9]), "betas="),
        (lambda: TrainConfig(optimizer="adam", betas=[[0.9, 0.9, 0.9]]), "betas="),
        (lambda: TrainConfig(optimizer="sgd", samples=None, betas=[[0.9, 0.9]]), "betas="),
        (
            lambda: train(
                single(4, "w-heavy"),
                TrainConfig(optimizer="adam", samples=None, steps=2, betas=[[0.9, 0.9]] * 3),
                seeds=2,
            ),
            "betas=",
        ),
        (
            lambda: train(
                single(4, "w-heavy"),
                TrainConfig(optimizer="adam", samples=None, steps=2),
                seeds=2,
                root_seed=[1, 2, 3],
            ),
            "root_seed=",
        ),
        (
            lambda: train(
                single(4, "w-heavy"),
                TrainConfig(optimizer="adam", samples=None, steps=2),
                root_seed=[1, 1],
                seed_indices=[0, 0],
            ),
            "seed_indices=",
        ),
        (
            lambda: train(
                single(4, "w-heavy"),
                TrainConfig(optimizer="sgd", samples=None, steps=2),
                seeds=2,
                root_seed=[1, 2],
                backend="compiled",
            ),
            "root_seed=",
        ),
    ],
)
def test_per_copy_betas_and_roots_refuse_bad_values(make, match):
    with pytest.raises(InputError, match=match) as err:
        make()
    assert "\n" not in str(err.value) and "allowed" in str(err.value)

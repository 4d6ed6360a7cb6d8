"""The exact order-parameter chain of online SGD (``training/_online_chain``): its update against
weight-space SGD on the same samples, its draws against the moments of Gaussian samples, and
whole trajectories against the weight-space kernel in distribution."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import erf

from gaugedyn import InputError
from gaugedyn.theory import random_problem
from gaugedyn.training import TrainConfig, train
from gaugedyn.training._online_chain import draws, gram, run_chain
from gaugedyn.training._online_fast import run_kernel, seed_generator, train_online
from gaugedyn.training._optim import step_size

ACTIVATIONS = {
    "erf": (lambda z: erf(z / np.sqrt(2.0)), lambda z: np.sqrt(2.0 / np.pi) * np.exp(-z * z / 2)),
    "relu": (lambda z: np.maximum(z, 0.0), lambda z: (z > 0) * 1.0),
    "linear": (lambda z: z, np.ones_like),
}


def _replay(problem, cfg, X):
    """Weight-space online SGD in numpy on the samples ``X (steps, B, D)``: the fields
    ``U x`` and the samples' Gram matrix at every step (the chain's randomness, made of X)."""
    g, gp = ACTIVATIONS[problem.activation]
    a, W = np.array(problem.a, float), np.array(problem.W, float)
    V, b = np.asarray(problem.V, float), np.asarray(problem.b, float)
    D = W.shape[1]
    fields, grams = [], []
    for k, x in enumerate(X):
        lam, nu = x @ W.T, x @ V.T
        fields.append(np.concatenate([lam, nu], 1))
        grams.append(x @ x.T)
        eta = step_size(cfg.schedule, cfg.lr, k, cfg.steps, cfg.lr_min, cfg.decay) / D
        e = g(lam) @ a - g(nu) @ b
        coef = e[:, None] * a[None] * gp(lam)
        W = W - (eta / len(x)) * coef.T @ x
        a = a - eta * (e[:, None] * g(lam)).sum(0) / len(x)
    return np.array(fields), np.array(grams)


@pytest.mark.parametrize(
    ("activation", "batch", "schedule"),
    [("erf", 1, "cosine"), ("relu", 3, "inverse"), ("linear", 2, "constant")],
)
def test_chain_update_is_weight_space_sgd_on_the_same_samples(activation, batch, schedule):
    problem = random_problem(40, 3, 2, np.random.default_rng(4), activation=activation)
    cfg = TrainConfig(
        optimizer="sgd",
        lr=0.3 if activation == "linear" else 1.0,
        steps=400,
        samples=None,
        batch=batch,
        schedule=schedule,
        decay=50.0,
    )
    X = np.random.default_rng(5).standard_normal((cfg.steps, batch, 40))
    ref = run_kernel(problem.a, problem.W, problem.V, problem.b, activation, cfg, cfg.grid(), X=X)
    fields, grams = _replay(problem, cfg, X)
    out = run_chain(
        problem.a,
        gram(problem),
        problem.b,
        3,
        40,
        activation,
        cfg,
        cfg.grid(),
        fields=fields,
        sample_gram=grams,
    )
    assert out["failed_at"] is None and ref["failed_at"] is None
    for key in ("Q", "R", "a"):
        np.testing.assert_allclose(out[key], ref[key], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["flow"], ref["flow"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(out["emp"][1:], ref["emp"][1:], rtol=1e-10, atol=1e-14)


def _within(sample, expected, z=5.0):
    """The mean of ``sample (n, ...)`` is within ``z`` standard errors of ``expected``."""
    n = sample.shape[0]
    se = sample.std(axis=0, ddof=1) / np.sqrt(n)
    gap = np.abs(sample.mean(axis=0) - expected)
    assert np.all(gap <= z * se + 1e-12), (gap / np.maximum(se, 1e-300)).max()


@pytest.mark.parametrize(("D", "batch"), [(12, 1), (12, 3), (9, 3), (3, 2)])
def test_chain_draws_have_the_moments_of_gaussian_samples(D, batch):
    """For ``x ~ N(0, I_D)`` and rows ``U`` with Gram ``C``: ``E[u u^T] = C``, ``E|x|^2 = D``,
    ``Var |x|^2 = 2D``, ``E[u_p u_q |x|^2] = (D + 2) C_pq`` and, for two samples,
    ``E[x.y] = 0``, ``E[(x.y)^2] = D``, ``E[u_p(x) u_q(y) x.y] = C_pq``. (9, 3) leaves fewer
    free directions than the batch (explicit normals), (3, 2) has ``D < P`` (rank 3 of 5)."""
    problem = random_problem(D, 3, 2, np.random.default_rng(D + batch), activation="erf")
    C = gram(problem)
    U, G, rank = draws(C, D, batch, 40_000, seed_generator(7, D * 10 + batch))
    assert rank == min(D, 5)
    outer = U[:, 0, :, None] * U[:, 0, None, :]
    _within(outer, C)
    for mu in range(batch):
        norm = G[:, mu, mu]
        _within(norm, D)
        _within((norm - D) ** 2, 2 * D)
    norm = G[:, 0, 0]
    _within(outer * norm[:, None, None], (D + 2) * C)
    if batch > 1:
        cross = G[:, 0, 1]
        _within(cross, 0.0)
        _within(cross**2, D)
        _within(U[:, 0, :, None] * U[:, 1, None, :] * cross[:, None, None], C)
        np.testing.assert_array_equal(G, np.swapaxes(G, 1, 2))


@pytest.mark.parametrize(("D", "activation", "lr"), [(30, "erf", 1.0), (3, "relu", 0.2)])
def test_chain_is_online_sgd_in_distribution(D, activation, lr):
    """400 seeds of the chain against 400 of weight-space SGD: two-sample Kolmogorov-Smirnov
    tests on the loss, ``Q_00`` and ``R_00`` at four records, each at level 1e-3 (protocol fixed
    before the run; ``D = 3 < P = 4`` runs the rank-deficient path)."""
    problem = random_problem(D, 2, 2, np.random.default_rng(3), activation=activation)
    cfg = TrainConfig(optimizer="sgd", lr=lr, steps=20 * D, samples=None, points_per_decade=3)
    chain = train_online(problem, cfg, 400, 1, None, None, 2, "chain")
    weights = train_online(problem, cfg, 400, 2, None, None, 2, "compiled")
    assert chain.settings["backend"] == "chain" and "order-parameter" in chain.settings["data"]
    assert np.median(weights.loss[:, -1]) < 0.7 * weights.loss[0, 0]  # it learns
    records = np.unique(np.linspace(1, len(cfg.grid()) - 1, 4).astype(int))
    for r in records:
        for name, x, y in (
            ("loss", chain.loss[:, r], weights.loss[:, r]),
            ("Q00", chain.Q[:, r, 0, 0], weights.Q[:, r, 0, 0]),
            ("R00", chain.R[:, r, 0, 0], weights.R[:, r, 0, 0]),
        ):
            p = stats.ks_2samp(x, y).pvalue
            assert p > 1e-3, (name, r, p)


def test_chain_seeds_do_not_depend_on_threads_or_company():
    problem = random_problem(30, 2, 2, np.random.default_rng(1), activation="erf")
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=3000, samples=None)
    many = train(problem, cfg, seeds=4, root_seed=3, backend="chain")
    alone = train_online(problem, cfg, 1, 3, [2], None, 1, "chain")
    np.testing.assert_array_equal(many.Q[2], alone.Q[0])
    assert not np.array_equal(many.Q[0], many.Q[1])


def test_chain_reports_divergence_and_refuses_what_it_does_not_run():
    problem = random_problem(20, 2, 2, np.random.default_rng(0), activation="linear")
    with pytest.raises(Exception, match="seed 0"):
        train(
            problem,
            TrainConfig(optimizer="sgd", lr=50.0, steps=2000, samples=None),
            backend="chain",
        )
    with pytest.raises(InputError, match="backend='chain' runs online SGD only"):
        train(problem, TrainConfig(optimizer="sgd", samples=64), backend="chain")
    with pytest.raises(InputError, match="one problem"):
        train(
            [problem, problem], TrainConfig(optimizer="sgd", samples=None), seeds=2, backend="chain"
        )


def test_chain_at_large_d_follows_the_online_ode():
    """At D = 20,000 the seed mean of the chain follows the erf online ODE (Saad-Solla form,
    with its eta^2 noise term): within 5 standard errors of the 16-seed mean, plus 1e-4 for
    the O(1/D) bias, at every record from t = 1 to t = 10."""
    from gaugedyn.training._online_ode import online_ode

    D = 20_000
    problem = random_problem(D, 2, 2, np.random.default_rng(3), activation="erf")
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=10 * D, samples=None, points_per_decade=3)
    chain = train_online(problem, cfg, 16, 5, None, None, 2, "chain")
    ode = online_ode(problem, 1.0, chain.time)
    late = chain.time >= 1.0
    assert late.sum() >= 4
    assert chain.loss[:, -1].mean() < 0.5 * chain.loss[0, 0]
    for key in ("Q", "R", "a"):
        x = getattr(chain, key)[:, late]
        se = x.std(axis=0, ddof=1) / np.sqrt(x.shape[0])
        gap = np.abs(x.mean(axis=0) - ode[key][late])
        assert np.all(gap <= 5 * se + 1e-4), (key, (gap / (se + 1e-300)).max())

"""adam_edge: the observables against independent references, the window rule, the claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.adam import dense_sharpness, preconditioned_sharpness
from gaugedyn.adam import hessian_vector_product as _hvp
from gaugedyn.experiments.adam_stability._edge import (
    _flat,
    _setup,
    diagonal_quadratic,
    lanczos_check,
    run_edge,
    threshold,
)
from gaugedyn.experiments.adam_stability._edge_analysis import analyse as _analyse
from gaugedyn.experiments.adam_stability._edge_analysis import (
    period_two,
    quadratic_separation,
    window_stats,
)
from gaugedyn.experiments.adam_stability._protocol import edge_start

SEED = np.random.SeedSequence(2026)  # the analysis seed of runs analysed directly


def test_threshold():
    assert threshold(0.0) == 2.0 and threshold(0.9) == pytest.approx(38.0)


@pytest.mark.parametrize("method", ["arpack", "lanczos"])
@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_hvp_and_lanczos_against_finite_differences(loss, method):
    model, fn = _setup(loss, 64, 0)
    params = list(model.parameters())
    rng = np.random.default_rng(0)
    d = torch.as_tensor(rng.standard_normal(sum(p.numel() for p in params)))
    h = 1e-5

    def grad_at(vec):
        torch.nn.utils.vector_to_parameters(vec, params)
        return _flat(torch.autograd.grad(fn(), params)).detach()

    theta = _flat(params).detach().clone()
    fd = (grad_at(theta + h * d) - grad_at(theta - h * d)) / (2 * h)
    torch.nn.utils.vector_to_parameters(theta, params)
    np.testing.assert_allclose(_hvp(fn, params, d).numpy(), fd.numpy(), rtol=1e-4, atol=1e-7)
    P = torch.as_tensor(10 ** rng.uniform(-3, -1, d.numel()))
    out = preconditioned_sharpness(fn, params, P, method=method)
    S, v = out["sharpness"], out["eigenvector"].numpy()
    s = P.rsqrt()
    Av = (s * _hvp(fn, params, s * torch.as_tensor(v))).numpy()
    assert np.linalg.norm(Av - S * v) <= 1e-4 * abs(S)
    for _ in range(5):  # no Rayleigh quotient exceeds the top eigenvalue
        x = torch.as_tensor(rng.standard_normal(d.numel()))
        q = float(x @ (s * _hvp(fn, params, s * x)) / (x @ x))
        assert q <= S * (1 + 1e-6)


def test_run_edge_records_and_the_adam_step_is_torchs():
    out = run_edge("mse", 1e-2, 0.5, 0.999, 40, seed=1, n_samples=64, lanczos_every=20)
    assert np.all(np.isfinite(out["kappa_g"])) and np.isnan(out["cosine"][0])
    assert out["lanczos_step"].tolist() == [0, 20, 39]
    assert np.all(out["kappa_at_lanczos"] <= out["sharpness"] * (1 + 1e-4))
    assert out["loss"][-1] < out["loss"][0]


def test_frozen_copy_is_adam_with_v_held_fixed():
    """Freezing at step 0 (P = |g_0| + eps): the copy's losses equal a hand-written loop of
    m <- beta1 m + (1 - beta1) g, theta <- theta - lr m^ / P with that P."""
    lr, b1, b2, T = 1e-2, 0.5, 0.999, 12
    out = run_edge(
        "mse",
        lr,
        b1,
        b2,
        T,
        seed=2,
        n_samples=32,
        lanczos_every=5,
        freeze_fractions=(0.0, 1e9),
        freeze_after=0,
    )
    assert out["freeze_step"].tolist() == [0, -1]
    assert out["frozen_sharpness"].shape == (2,) + out["sharpness"].shape
    assert np.all(np.isnan(out["frozen_sharpness"][1])) and np.all(np.isnan(out["frozen_loss"][1]))
    model, fn = _setup("mse", 32, 2)
    params = list(model.parameters())
    g = _flat(torch.autograd.grad(fn(), params)).detach()
    P = g.abs() + 1e-8  # sqrt(v^_1) = |g_0|
    theta, m = _flat(params).detach().clone(), torch.zeros_like(g)
    want = []
    for t in range(T):
        torch.nn.utils.vector_to_parameters(theta, params)
        L = fn()
        want.append(float(L.detach()))
        g = _flat(torch.autograd.grad(L, params)).detach()
        m = b1 * m + (1 - b1) * g
        theta = theta - lr * (m / (1 - b1 ** (t + 1))) / P
    np.testing.assert_allclose(out["frozen_loss"][0], want, rtol=1e-10)
    assert out["frozen_sharpness"][0, 0] == pytest.approx(out["sharpness"][0], rel=1e-6)


def test_the_fine_lanczos_schedule_runs_until_the_edge_and_every_freeze():
    out = run_edge(
        "mse",
        1e-2,
        0.5,
        0.999,
        30,
        seed=1,
        n_samples=32,
        lanczos_every=20,
        lanczos_fine=5,
        freeze_fractions=(1e9,),
    )
    assert out["lanczos_step"].tolist() == [0, 5, 10, 15, 20, 25, 29]  # a copy never frozen


def test_lanczos_check_can_fail_and_passes_on_a_small_network():
    model, fn = _setup("mse", 32, 0, hidden=4)
    params = list(model.parameters())
    P = torch.as_tensor(10 ** np.random.default_rng(1).uniform(-3, -1, 310))
    dense = dense_sharpness(fn, params, P)
    for method in ("arpack", "lanczos"):
        S = preconditioned_sharpness(fn, params, P, method=method)["sharpness"]
        assert S == pytest.approx(dense, rel=1e-8), method
    # the dense reference is an independent eigensolver: a wrong P gives a different value
    assert dense_sharpness(fn, params, 2 * P) == pytest.approx(dense / 2, rel=1e-10)
    r = lanczos_check(1e-2, 0.9, 0.999, seed=0, warm_steps=5, n_samples=32, hidden=4)
    assert r["n_params"] == 310 and r["lanczos"] == pytest.approx(r["dense"], rel=1e-6)


def test_diagonal_quadratic_observables_against_the_dense_definitions():
    r = diagonal_quadratic(0.5, 0.999, 1e-2, 3000, seed=0, dim=6)
    assert np.all(r["kappa_g"] <= r["sharpness"] * (1 + 1e-12))
    assert r["loss"][-1] < r["loss"][0]
    # the quadratic separates the two observables at beta1 = 0.5 (S far above kappa_g)
    assert quadratic_separation(r) > np.log10(2.0)
    assert r["threshold"] == pytest.approx(6.0)


def test_period_two_measures_the_alternation_not_the_trend():
    t = np.arange(200.0)
    assert period_two(-0.01 * t) == pytest.approx(0.0, abs=1e-12)
    assert period_two(-0.01 * t + 0.3 * (-1) ** t) == pytest.approx(0.6)


def _fake(kappa_ratio, cos, lower, frozen_at, T=1000, b1=0.5, lr=1e-2, edge=True, seed=3, b2=0.99):
    """A run on the edge from step 200 (half the threshold before), a copy frozen at step 100 at
    0.6 of the threshold that reaches the edge at ``frozen_at`` (``None``: never)."""
    thr = threshold(b1)
    rng = np.random.default_rng(seed)
    L = np.exp(-np.arange(T) / 500) * (1 + 0.3 * (-1) ** np.arange(T))
    E = np.exp(-np.arange(T) / 500) * np.exp(lower + 0.01 * rng.standard_normal())
    lz = np.arange(0, T, 50)
    ratio = np.where(lz >= 200, 1.05, 0.5) if edge else np.full(lz.size, 0.5)
    S = ratio * thr / lr * (1 + 0.01 * rng.standard_normal())
    fz = np.where(lz >= 100, 0.6, np.nan)
    if frozen_at is not None:
        fz[lz >= frozen_at] = 0.95
    r = {
        "kappa_g": np.full(T, kappa_ratio * thr / lr) * (1 + 0.01 * rng.standard_normal(T)),
        "secant": np.full(T, thr / lr),
        "cosine": np.full(T, cos) + 0.5 * rng.standard_normal(T),  # shares that differ by seed
        "loss": L,
        "ema_loss": E,
        "lanczos_step": lz,
        "sharpness": S,
        "threshold": thr,
        "frozen_loss": np.full((1, T), np.nan),
        "freeze_step": np.array([100 if edge else -1]),
        "freeze_ratio": np.array([0.6 if edge else np.nan]),
        "frozen_sharpness": fz[None, :] * thr / lr,
    }
    task = {
        "kind": "run",
        "loss": "mse",
        "lr": lr,
        "beta1": b1,
        "beta2": b2,
        "steps": T,
        "skip": 0.1,
        "seed_index": seed,
        "freeze_fractions": [0.5],
    }
    r["edge_start"] = edge_start(r, task)
    r["kappa_at_lanczos"] = r["kappa_g"][lz]
    return task, r


def _verdicts(pairs):
    _, claims, _ = _analyse(*zip(*pairs), np.random.SeedSequence(12345))
    return {c.id.split(":")[0]: (c.verdict, c.passed) for c in claims}


def test_findings_hold_on_an_edge_and_fail_on_inputs_built_to_fail():
    good = _verdicts([_fake(1.0, -0.9, -0.2, 800 + 50 * s, seed=s) for s in range(6)])
    for k in (
        "active_curvature_at_threshold",
        "averaging_lowers",
        "averaging_smooths",
        "adaptive_stays_on_edge",
        "frozen_before_edge_later",
        "gradient_reversal",
    ):
        assert good[f"adam_edge.{k}"][0] == "HELD", k
    bad = _verdicts([_fake(0.5, 0.2, 0.3, 200 - 50 * (s % 2), seed=s) for s in range(6)])
    for k in ("active_curvature_at_threshold", "gradient_reversal", "averaging_lowers"):
        assert bad[f"adam_edge.{k}"][0] == "NOT HELD", k
    assert bad["adam_edge.frozen_before_edge_later"][0] != "HELD"


def test_a_copy_that_never_arrives_counts_as_the_runs_end():
    pairs = [_fake(1.0, -0.9, -0.2, None, seed=s) for s in range(6)]
    for s, (t, r) in enumerate(pairs):  # the adaptive run on the edge from step 200 + 50 s
        r["sharpness"] = np.where(r["lanczos_step"] >= 200 + 50 * s, 1.05, 0.5)
        r["sharpness"] = r["sharpness"] * r["threshold"] / t["lr"]
    _, claims, diag = _analyse(*zip(*pairs), np.random.SeedSequence(1))
    got = {c.id.split(":")[0]: c for c in claims}
    c = got["adam_edge.frozen_before_edge_later"]
    # delays 950 - (200 + 50 s), the last Lanczos step the bound: median 950 - 325
    assert c.verdict == "HELD" and c.measured == pytest.approx(950 - 325)
    assert "6 copies never" in c.statement


def test_time_to_edge_against_memory_holds_when_the_edge_comes_later_at_longer_memory():
    def run(b2, s, scale):
        t, r = _fake(1.0, -0.9, -0.2, None, seed=s, b2=b2)
        t_e = int(round(scale / (1 - b2) / 50)) * 50 + 50 * (s % 2)
        lz = r["lanczos_step"]
        r["sharpness"] = np.where(lz >= t_e, 1.05, 0.5) * r["threshold"] / t["lr"]
        return t, r

    b2s = (0.98, 0.99, 0.995)
    grows = [run(b2, s, 2.0) for b2 in b2s for s in range(4)]
    flat = [run(b2, s, 0.0) for b2 in b2s for s in range(4)]
    for pairs, want in ((grows, "HELD"), (flat, "NOT HELD")):
        for t, r in pairs:
            if want == "NOT HELD":
                lz = r["lanczos_step"]
                t_e = 300 - 50 * int(t["beta2"] == 0.995) + 50 * (t["seed_index"] % 2)
                r["sharpness"] = np.where(lz >= t_e, 1.05, 0.5) * r["threshold"] / t["lr"]
        _, claims, _ = _analyse(*zip(*pairs), np.random.SeedSequence(1))
        got = {c.id.split(":")[0]: c for c in claims}
        assert got["adam_edge.time_to_edge_grows_with_memory"].verdict == want


def test_no_edge_is_reported_not_averaged():
    task, r = _fake(0.3, -0.9, -0.2, None, edge=False)
    assert r["edge_start"] == -1 and window_stats(r, task) == {}
    v = _verdicts([(task, r)])
    assert "adam_edge.no_edge" in v and "adam_edge.gradient_reversal" not in v


@pytest.mark.parametrize("name", ["adam_edge", "spike_boundary"])
def test_quick_findings_are_labelled_provisional_and_full_ones_are_not(name):
    from gaugedyn.experiments import resolve_experiment
    from gaugedyn.harness._protocol import configuration_label, labelled

    ex = resolve_experiment(name)
    full = {k: p.default for k, p in ex.params.items()}
    quick = {k: (p.quick if p.quick is not None else p.default) for k, p in ex.params.items()}
    assert configuration_label(full, ex.params) == ""
    assert configuration_label(quick, ex.params) == "provisional (quick)"
    assert configuration_label(full | {"seed_extra": 1}, ex.params) == ""
    if name != "adam_edge":
        return
    pairs = [_fake(1.0, -0.9, -0.2, 800, seed=s) for s in range(2)]
    for config, prefix in ((full, False), (quick, True)):
        # as the harness does for every run (gaugedyn.harness._summary.analyse)
        analysed = ex.analyse(config, *zip(*pairs), SEED)
        _, claims, diag = labelled(ex.params, config, analysed, ex.label_keys)
        findings = [c for c in claims if c.kind == "finding"]
        assert findings and all(
            c.statement.startswith("provisional (quick): ") == prefix for c in findings
        )
        assert all(not c.statement.startswith("provisional") for c in claims if c.kind != "finding")
        assert diag["provisional"] == ("provisional (quick)" if prefix else None)

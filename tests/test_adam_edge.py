"""adam_edge: the observables against independent references, the window rule, the claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.experiments.adam_stability._edge import (
    _flat,
    _hvp,
    _setup,
    preconditioned_sharpness,
    run_edge,
    threshold,
)
from gaugedyn.experiments.adam_stability.adam_edge import _analyse, edge_start, window_stats

SEED = np.random.SeedSequence(2026)  # the analysis seed of runs analysed directly


def test_threshold():
    assert threshold(0.0) == 2.0 and threshold(0.9) == pytest.approx(38.0)


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_hvp_and_lanczos_against_finite_differences(loss):
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
    S, v = preconditioned_sharpness(fn, params, P)
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


def _fake(kappa_ratio, cos, lower, T=1000, b1=0.5, lr=1e-2, edge=True):
    thr = threshold(b1)
    rng = np.random.default_rng(3)
    L = np.exp(-np.arange(T) / 500) * (1 + 0.3 * (-1) ** np.arange(T))
    E = np.exp(-np.arange(T) / 500) * np.exp(lower)
    r = {"kappa_g": np.full(T, kappa_ratio * thr / lr) * (1 + 0.01 * rng.standard_normal(T)),
         "secant": np.full(T, thr / lr), "cosine": np.full(T, cos), "loss": L, "ema_loss": E,
         "lanczos_step": np.arange(0, T, 100),
         "sharpness": np.full(10, (1.05 if edge else 0.5) * thr / lr), "threshold": thr}
    r["kappa_at_lanczos"] = r["kappa_g"][r["lanczos_step"]]
    task = {"loss": "mse", "lr": lr, "beta1": b1, "steps": T, "skip": 0.1}
    r["edge_start"] = edge_start(r, task)
    return task, r


def _verdicts(pairs):
    _, claims, _ = _analyse(*zip(*pairs), np.random.SeedSequence(12345))
    return {c.id.split(":")[0]: (c.verdict, c.passed) for c in claims}


def test_findings_hold_on_an_edge_and_fail_on_inputs_built_to_fail():
    good = _verdicts([_fake(1.0, -0.9, -0.2)])
    assert good["adam_edge.active_curvature_at_threshold"][0] == "HELD"
    assert good["adam_edge.gradient_reversal"][0] == "HELD"
    assert good["adam_edge.averaging_lowers"][0] == "HELD"
    assert good["adam_edge.averaging_smooths"][0] == "HELD"
    bad = _verdicts([_fake(0.5, 0.2, 0.3)])
    assert bad["adam_edge.active_curvature_at_threshold"][0] == "NOT HELD"
    assert bad["adam_edge.gradient_reversal"][0] == "NOT HELD"
    assert bad["adam_edge.averaging_lowers"][0] == "NOT HELD"


def test_no_edge_is_reported_not_averaged_and_check_fails_when_kappa_exceeds_S():
    task, r = _fake(0.3, -0.9, -0.2, edge=False)
    assert r["edge_start"] == -1 and window_stats(r, task) == {}
    v = _verdicts([(task, r)])
    assert "adam_edge.no_edge" in v and "adam_edge.gradient_reversal" not in v
    task, r = _fake(1.0, -0.9, -0.2)
    r["kappa_at_lanczos"] = r["sharpness"] * 1.01
    assert v["adam_edge.sharpness_bounds_active_curvature"][1]
    assert not _verdicts([(task, r)])["adam_edge.sharpness_bounds_active_curvature"][1]


@pytest.mark.parametrize("name", ["adam_edge", "spike_boundary"])
def test_quick_findings_are_labelled_provisional_and_full_ones_are_not(name):
    from gaugedyn.experiments import resolve_experiment
    from gaugedyn.harness._protocol import configuration_label

    ex = resolve_experiment(name)
    full = {k: p.default for k, p in ex.params.items()}
    quick = {k: (p.quick if p.quick is not None else p.default) for k, p in ex.params.items()}
    assert configuration_label(full, ex.params) == ""
    assert configuration_label(quick, ex.params) == "provisional (quick)"
    assert configuration_label(full | {"seed_extra": 1}, ex.params) == ""
    if name != "adam_edge":
        return
    task, r = _fake(1.0, -0.9, -0.2)
    for config, prefix in ((full, False), (quick, True)):
        _, claims, diag = ex.analyse(config, [task], [r], SEED)
        findings = [c for c in claims if c.kind == "finding"]
        assert findings and all(c.statement.startswith("provisional (quick): ") == prefix
                                for c in findings)
        assert all(not c.statement.startswith("provisional") for c in claims
                   if c.kind != "finding")
        assert diag["provisional"] == ("provisional (quick)" if prefix else None)

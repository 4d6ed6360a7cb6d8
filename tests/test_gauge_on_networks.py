"""``gauge_on_networks``: a reduced run passes its checks; analyse on built results gives HELD
when the a-heavy copy owns in every seed and NOT HELD when it never does, HELD for slopes of 1
and NOT HELD for slopes of 2; each check can fail."""

from __future__ import annotations

import numpy as np
import pytest
from _gauge_helpers import SEED, config_of, run_inline

from gaugedyn.experiments.gauge import _digits as dg
from gaugedyn.experiments.gauge.gauge_on_networks import EXPERIMENT

STEPS = 4  # stored samples per built run
ETAS = 0.05 * 2.0 ** -np.arange(3)


def _built(
    task: dict, owner: int, *, gap: float = 0.1, function_change: float = 1e-16, slope: float = 1.0
) -> dict:
    """One task's results, every seed's final owner ``owner`` (0: a-heavy) or slope ``slope``
    (per-seed slopes spread by +-0.01)."""
    n = task["n_seeds"]
    if task["kind"] == "slope":
        slopes = slope + 0.01 * np.linspace(-1, 1, n)
        return {
            "eta": ETAS,
            "drift": ETAS[None, :] ** slopes[:, None],
            "slope": slopes,
            "gap": np.full(n, gap),
            "wall_time_s": np.array(1.0),
        }
    change = np.tile(np.linspace(0.0, 1e-3, STEPS)[None, :, None], (n, 1, 2))
    return {
        "owner": np.full(n, owner),
        "gap": np.full(n, gap),
        "function_change": np.full(n, function_change),
        "loss": np.full(n, 0.1),
        "delta0": np.tile([0.5, -2.0], (n, 1)),
        "change": change,
        "predicted": change.copy(),
        "mu_R": np.ones((n, STEPS, 2)),
        "mu_T": np.tile([9.0, 1 / 9], (n, STEPS, 1)),
        "mu_T0": np.tile([9.0, 1 / 9], (n, 1)),
        "step": np.arange(1, STEPS + 1),
        "wall_time_s": np.array(1.0),
    }


def _analyse(**kw):
    cfg = config_of(EXPERIMENT, seeds=12, chunk=12, slope_seeds=6, models=["mlp", "cnn"])
    tasks = EXPERIMENT.tasks(cfg)
    results = [_built(t, **kw) for t in tasks]
    arrays, claims, _ = EXPERIMENT.analyse(cfg, tasks, results, SEED)
    return arrays, {c.id: c for c in claims}


def test_a_reduced_run_passes_its_checks_and_keeps_the_function(tmp_path):
    cfg = config_of(
        EXPERIMENT,
        seeds=2,
        chunk=2,
        steps=30,
        samples=100,
        hidden=12,
        stride=5,
        models=["mlp", "cnn"],
        optimizers=["gd", "adam"],
        slope_seeds=3,
        slope_sizes=2,
        slope_steps=3,
    )
    tasks, results, arrays, claims = run_inline(EXPERIMENT, cfg)
    assert len(tasks) == 4 + 3 * 2
    checks = [c for c in claims if c.kind == "check"]
    assert {c.id for c in checks} == {
        "gauge_on_networks.function_unchanged",
        "gauge_on_networks.delta_prediction:mlp:gd",
        "gauge_on_networks.delta_prediction:cnn:gd",
        *(f"gauge_on_networks.delta_prediction:{m}:slope_runs" for m in dg.MODELS),
    }
    assert all(c.passed for c in checks), [(c.id, c.measured) for c in checks if not c.passed]
    findings = {c.id: c for c in claims if c.kind == "finding"}
    assert len(findings) == 4 + 3
    assert {c.rule for c in findings.values()} == {"proportion", "median_band"}
    assert all(
        c.statement.startswith("provisional (reduced configuration)") for c in findings.values()
    )
    by = {(t["model"], t.get("optimizer")): r for t, r in zip(tasks, results)}
    assert np.all(np.isnan(by["cnn", "adam"]["gap"]))  # Adam: measured only
    assert by["mlp", "gd"]["change"].shape == (2, 6, 2)
    assert np.all(np.abs(by["transformer", None]["slope"] - 1.0) < 0.2)
    names = EXPERIMENT.plot(arrays, cfg, tmp_path)
    assert len(names) == 3 and all((tmp_path / f"{n}.png").exists() for n, _ in names)


def test_built_to_pass_gives_held_and_built_to_fail_gives_not_held():
    _, held = _analyse(owner=dg.A_HEAVY)
    _, not_held = _analyse(owner=dg.W_HEAVY, slope=2.0)
    for model in ("mlp", "cnn"):
        for opt in dg.OPTIMIZERS:
            cid = f"gauge_on_networks.a_heavy_owns:{model}:{opt}"
            assert held[cid].verdict == "HELD" and held[cid].per_seed == [1.0] * 12
            assert not_held[cid].verdict == "NOT HELD"
    for model in dg.MODELS:
        cid = f"gauge_on_networks.drift_slope:{model}"
        assert held[cid].verdict == "HELD" and held[cid].rule == "median_band"
        assert not_held[cid].verdict == "NOT HELD"
    _, ties = _analyse(owner=-1)  # a tie is not owned
    assert ties["gauge_on_networks.a_heavy_owns:mlp:gd"].verdict == "NOT HELD"
    assert all(c.passed for c in held.values() if c.kind == "check")


@pytest.mark.parametrize(
    ("kw", "failed"),
    [
        (
            {"gap": 1.5},
            {
                f"gauge_on_networks.delta_prediction:{m}:{o}"
                for m in ("mlp", "cnn")
                for o in ("gd", "momentum")
            }
            | {f"gauge_on_networks.delta_prediction:{m}:slope_runs" for m in dg.MODELS},
        ),
        ({"function_change": 1e-9}, {"gauge_on_networks.function_unchanged"}),
    ],
)
def test_each_check_fails_on_its_own_quantity(kw, failed):
    _, claims = _analyse(owner=dg.A_HEAVY, **kw)
    assert {cid for cid, c in claims.items() if c.kind == "check" and not c.passed} == failed


def test_the_error_allowance_counts_the_float_resolution_and_gives_nan_without_prediction():
    units = {
        "change": np.array([[1e-17]]),
        "predicted": np.array([[0.0]]),
        "g_in_sq": np.array([[0.0]]),
        "g_out_sq": np.array([[0.0]]),
        "in_sq": np.array([[0.5]]),
        "out_sq": np.array([[0.5]]),
    }
    eps = np.finfo(np.float64).eps
    assert dg.gap(units, 0.1, 1e-10) == pytest.approx(1e-17 / (4 * eps))
    assert np.isnan(dg.gap(units | {"predicted": np.array([[np.nan]])}, 0.1, 1e-10))
    # attention pairs (S, heads, d, d): the allowance reads Frobenius norms
    heads = {k: np.zeros((1, 1, 2, 2)) for k in units}
    heads["in_sq"] = np.eye(2)[None, None]
    heads["change"] = np.full((1, 1, 2, 2), 1e-17)
    assert dg.gap(heads, 0.1, 1e-10) == pytest.approx(1e-17 / (4 * eps * np.sqrt(2)))


def test_the_cnn_duplication_keeps_the_function_and_makes_opposite_gauges():
    x = dg.inputs("cnn", dg.digits(64)[0])
    net, (s, t), change = dg.build("cnn", 8, 4, 3.0, 5, x)
    assert change < 1e-14
    w = net[0].weight.detach().reshape(4, -1)
    b = net[0].bias.detach()
    a = net[3].weight.detach().transpose(0, 1).reshape(4, -1)
    delta = (a**2).sum(1) - (w**2).sum(1) - b**2
    assert delta[s] > 0 > delta[t]  # source a-heavy, target w-heavy
    cos = (w[s] @ w[t]) / (w[s].norm() * w[t].norm())
    assert float(cos) == pytest.approx(1.0, abs=1e-12)

"""``gauge_on_networks``: a reduced run passes its checks; analyse on built results gives HELD
when the a-heavy copy owns in every seed and NOT HELD when it never does; each check can fail."""

from __future__ import annotations

import numpy as np
import pytest
from _gauge_helpers import SEED, config_of, run_inline

from gaugedyn.experiments.gauge import _digits as dg
from gaugedyn.experiments.gauge.gauge_on_networks import EXPERIMENT

STEPS = 4  # stored samples per built run


def _built(owner: int, *, n: int = 12, gap: float = 0.1, function_change: float = 1e-16) -> dict:
    """One task's results for ``n`` seeds, every seed's final owner ``owner`` (0: a-heavy)."""
    change = np.tile(np.linspace(0.0, 1e-3, STEPS)[None, :, None], (n, 1, 2))
    return {"owner": np.full(n, owner), "gap": np.full(n, gap),
            "function_change": np.full(n, function_change), "loss": np.full(n, 0.1),
            "delta0": np.tile([0.5, -2.0], (n, 1)), "change": change, "predicted": change.copy(),
            "mu_R": np.ones((n, STEPS, 2)), "mu_T": np.tile([9.0, 1 / 9], (n, STEPS, 1)),
            "mu_T0": np.tile([9.0, 1 / 9], (n, 1)), "step": np.arange(1, STEPS + 1),
            "wall_time_s": np.array(1.0)}


def _analyse(**kw):
    cfg = config_of(EXPERIMENT, seeds=12, chunk=12)
    tasks = EXPERIMENT.tasks(cfg)
    results = [_built(**kw) for _ in tasks]
    arrays, claims, _ = EXPERIMENT.analyse(cfg, tasks, results, SEED)
    return arrays, {c.id: c for c in claims}


def test_a_reduced_run_passes_its_checks_and_keeps_the_function(tmp_path):
    cfg = config_of(EXPERIMENT, seeds=2, chunk=2, steps=40, samples=200, hidden=12, stride=5)
    tasks, results, arrays, claims = run_inline(EXPERIMENT, cfg)
    assert len(tasks) == 3
    checks = [c for c in claims if c.kind == "check"]
    assert {c.id.split(":")[0] for c in checks} == {"gauge_on_networks.function_unchanged",
                                                    "gauge_on_networks.delta_prediction"}
    assert all(c.passed for c in checks), [(c.id, c.measured) for c in checks if not c.passed]
    findings = [c for c in claims if c.kind == "finding"]
    assert len(findings) == 3 and all(c.rule == "proportion" for c in findings)
    assert all(c.statement.startswith("provisional (reduced configuration)") for c in findings)
    by = {t["optimizer"]: r for t, r in zip(tasks, results)}
    assert np.all(np.isnan(by["adam"]["gap"]))  # Adam: measured only
    assert by["gd"]["change"].shape == (2, 8, 2)
    names = EXPERIMENT.plot(arrays, cfg, tmp_path)
    assert len(names) == 2 and all((tmp_path / f"{n}.png").exists() for n, _ in names)


def test_built_to_pass_gives_held_and_built_to_fail_gives_not_held():
    _, held = _analyse(owner=dg.A_HEAVY)
    _, not_held = _analyse(owner=dg.W_HEAVY)
    for opt in dg.OPTIMIZERS:
        cid = f"gauge_on_networks.a_heavy_owns:{opt}"
        assert held[cid].verdict == "HELD" and held[cid].per_seed == [1.0] * 12
        assert not_held[cid].verdict == "NOT HELD"
    _, ties = _analyse(owner=-1)  # a tie is not owned
    assert ties["gauge_on_networks.a_heavy_owns:gd"].verdict == "NOT HELD"
    assert all(c.passed for c in held.values() if c.kind == "check")


@pytest.mark.parametrize(("kw", "failed"), [
    ({"gap": 1.5}, {"gauge_on_networks.delta_prediction:gd",
                    "gauge_on_networks.delta_prediction:momentum"}),
    ({"function_change": 1e-9}, {"gauge_on_networks.function_unchanged"}),
])
def test_each_check_fails_on_its_own_quantity(kw, failed):
    _, claims = _analyse(owner=dg.A_HEAVY, **kw)
    assert {cid for cid, c in claims.items() if c.kind == "check" and not c.passed} == failed


def test_the_error_allowance_counts_the_float_resolution_and_gives_nan_without_prediction():
    units = {"change": np.array([[1e-17]]), "predicted": np.array([[0.0]]),
             "g_in_sq": np.array([[0.0]]), "g_out_sq": np.array([[0.0]]),
             "in_sq": np.array([[0.5]]), "out_sq": np.array([[0.5]])}
    eps = np.finfo(np.float64).eps
    assert dg.gap(units, 0.1, 1e-10) == pytest.approx(1e-17 / (4 * eps))
    assert np.isnan(dg.gap(units | {"predicted": np.array([[np.nan]])}, 0.1, 1e-10))

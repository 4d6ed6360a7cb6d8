"""shared_representation: small runs end to end, the extensions as configuration, the selection
rule, and every finding fed inputs built to hold and to fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _gauge_helpers import config_of

from gaugedyn import InputError
from gaugedyn._meta import task_seed
from gaugedyn.experiments import load_config
from gaugedyn.experiments.adam_state import _findings as sf
from gaugedyn.experiments.adam_state import _model as sm
from gaugedyn.experiments.adam_state import _protocol as sp
from gaugedyn.experiments.adam_state import _stages as ss
from gaugedyn.experiments.adam_state.shared_representation import EXPERIMENT as E

SEED = np.random.SeedSequence(2026)  # the analysis seed of runs analysed directly

SMALL = dict(setup="b2-own-mild", seeds=3, calibration_seeds=2, w_grid=[0.9, 0.99], eval_n=64,
             horizon=10, batch=16, ancestor_steps=10, formation_steps=30, record_every=10,
             control_period=5)


def run(**over):
    config = config_of(E, quick=True, **(SMALL | over))
    tasks = E.tasks(config)
    results = [E.run_task(t, task_seed(0, E.name, t)) for t in tasks]
    return config, results, *E.analyse(config, tasks, results, SEED)


@pytest.fixture(scope="module")
def small():
    return run()


def test_small_run_reports_every_finding_with_interval_and_paper(small, tmp_path):
    config, results, arrays, claims, diag = small
    ids = {c.id for c in claims}
    for key in ("switch.rate_difference", "table2.inherited.combined", "table2.reset.update",
                "table4.exchange_m", "table4.exchange_v", "table4.control_own",
                "pattern.common_scale", "table5.first_layer_carries_most",
                "table5.heads_change_little", "table5.equal_movement", "table6.projected_v",
                "endpoints.favoured", "horizon.sgd", "formation.cancellation"):
        assert f"shared_representation.{key}" in ids
    for c in claims:
        if c.id == "shared_representation.setup":
            assert "calibrated in this run" in c.statement and "b2-own-mild" in c.statement
            continue
        assert c.interval is not None and len(c.interval) == 2
        if c.kind == "finding":
            assert "paper:" in c.expected and c.statement.startswith("provisional")
            d = c.to_dict()
            assert d["rule"] in ("paired_difference", "equivalence")
            assert len(d["per_seed"]) == (2 if d["rule"] == "paired_difference" else 3)
            per = [np.atleast_1d(np.asarray(p, dtype=float)) for p in d["per_seed"]]
            diff = per[0] - per[1] if len(per) == 2 else per[0]
            spread = float(np.ptp(diff)) if diff.size > 1 else 0.0
            assert ("power" in d and "underpowered" in d) or spread == 0  # none at no spread
            assert d["readings"] == {"as judged": d["verdict"]}
    assert diag["calibration"]["choice"] == "b2-own-mild"
    assert diag["calibration"]["source"] == "calibrate"
    assert diag["calibration"]["candidates"][0]["w_star"] in (0.9, 0.99)
    assert diag["interventions"]["iv_xv"][0]["operation"] == "exchange"
    names = [n if isinstance(n, str) else n[0] for n in E.plot(arrays, config, tmp_path)]
    assert all((tmp_path / f"{n}.png").exists() for n in names)


@pytest.mark.parametrize("over", [{"beta2": 0.9}, {"formation_steps": 1500}, {"targets": 3},
                                  {"activation": "relu", "width": 64, "rho": 0.0}],
                         ids=["beta2", "formation", "targets3", "relu-width-rho"])
def test_extensions_run_as_configuration(over):
    config, results, arrays, claims, diag = run(seeds=2, **over)
    assert any(c.kind == "finding" for c in claims)
    assert np.all(np.isfinite(np.asarray(results[0]["t2_combined_own_a"])))
    if "targets" in over:
        assert np.asarray(results[0]["t2_combined_own_a"]).shape == (2, 3)


def test_routes_split_keeps_each_rows_state():
    hp = E.tasks(config_of(E, quick=True, **SMALL))[0] | {"bottleneck": 2}
    gen = torch.Generator().manual_seed(3)
    world, routes, anc = ss.grow(hp | {"formation_steps": 3, "ancestor_steps": 2}, 2, gen,
                                 [("acquisition", 0.5), ("update", 0.9)])
    a, u = routes["acquisition"], routes["update@0.9"]
    assert a.seeds == 2 and a.R == 2 and a.net.encoder[0].weight.shape[0] == 4
    pa, pu = a.net.encoder[0].weight, u.net.encoder[0].weight
    assert not torch.equal(pa, pu)
    assert torch.equal(a.opt.state[pa]["step"], u.opt.state[pu]["step"])
    c = sp.clone(a)
    assert torch.equal(c.opt.state[c.net.encoder[0].weight]["exp_avg_sq"],
                       a.opt.state[pa]["exp_avg_sq"])


def test_cohort_rows_are_independent_networks():
    """A network trained in a batch of three equals the same network trained alone."""
    hp = E.tasks(config_of(E, quick=True, **SMALL))[0] | {"bottleneck": 2}
    v = sp.route_variants("acquisition", hp)[:1]
    gen = torch.Generator().manual_seed(5)
    c = sm.init_cohort(gen, 3, hp, v[0])
    world = sm.World.draw(gen, 3, hp["dim"], 2, 0.3, 0.5)
    alone = sm.replicate(c, v, torch.tensor([[1]]))
    w1 = sm.World(world.mixing[1:2], world.chol, world.sigma)
    z, xi = world.sample(torch.Generator().manual_seed(9), 16)
    for cohort, wld, zz, xx in ((c, world, z, xi), (alone, w1, z[1:2], xi[1:2])):
        loss = sm.task_losses(cohort.net, wld.inputs(zz, xx, cohort.gains()), zz, 1).sum()
        cohort.opt.zero_grad()
        loss.backward()
        cohort.opt.step()
    torch.testing.assert_close(c.net.encoder[0].weight[1], alone.net.encoder[0].weight[0])


def test_selection_rule_prefers_eligible_then_sign_then_mismatch():
    rows = [{"name": "a", "mismatch": 0.01, "eligible": False, "sign_positive": False, "w_star": 1},
            {"name": "b", "mismatch": 0.05, "eligible": True, "sign_positive": True, "w_star": 2},
            {"name": "c", "mismatch": 0.02, "eligible": False, "sign_positive": True, "w_star": 3}]
    assert ss.choose(rows)["choice"] == "b"
    rows[1]["eligible"] = False
    assert ss.choose(rows)["choice"] == "c"
    rows[1]["sign_positive"] = rows[2]["sign_positive"] = False
    out = ss.choose(rows)
    assert out["choice"] == "a" and "none eligible" in out["rule"]


def _shifted(results: dict, shift: dict[str, float]) -> dict:
    """Results whose ``*_a`` arrays are the ``*_b`` arrays plus a chosen shift per key prefix."""
    out = dict(results)
    rng = np.random.default_rng(0)
    for key in results:
        for prefix, delta in shift.items():
            if key.startswith(prefix) and key.endswith("_a") and "switch" not in key:
                b = np.asarray(results[key[:-2] + "_b"], dtype=float)
                out[key] = b + delta + 1e-3 * rng.standard_normal(b.shape)
    return out


def _verdicts(config, results):
    _, claims, _ = sf.analyse(config, results, 40, SEED)
    return {c.id.split(".", 1)[1]: c.verdict for c in claims if c.kind == "finding"}


def test_findings_hold_and_fail_on_built_inputs(small):
    config, results = small[0], small[1][0]
    good = _shifted(results, {"t2_acquisition_own": 0.2, "t2_update_own": 0.2,
                              "t2_combined_own": 0.2, "t2_acquisition_reset": 0.0,
                              "t2_update_reset": 0.0, "t2_combined_reset": 0.0, "iv_xm": 0.2,
                              "iv_xv": -0.1, "ctl_own": 0.03, "ctl_xv": -0.03, "iv_eq_": 0.1,
                              "iv_eq+xv": -0.1, "iv_xv:enc0": 0.0, "iv_xv:enc1": 0.1,
                              "iv_xv:heads": 0.2, "iv_move": 0.03})
    v = _verdicts(config, good)
    for key in ("table2.inherited.combined", "table2.reset.combined", "table4.exchange_m",
                "table4.exchange_v", "table4.control_own", "table4.control_exchange_v",
                "pattern.common_scale", "table5.first_layer_carries_most",
                "table5.heads_change_little", "table5.equal_movement"):
        assert v[key] == "HELD", key
    bad = _shifted(results, {"t2_combined_own": 0.01, "t2_combined_reset": 0.1, "iv_xm": 0.1,
                             "iv_xv": 0.1, "ctl_own": -0.05, "ctl_xv": 0.05, "iv_eq_": -0.1,
                             "iv_eq+xv": 0.1, "iv_xv:enc0": 0.1, "iv_xv:enc1": 0.0,
                             "iv_xv:heads": 0.5, "iv_move": -0.05})
    v = _verdicts(config, bad)
    for key in ("table2.inherited.combined", "table2.reset.combined", "table4.exchange_m",
                "table4.exchange_v", "table4.control_own", "table4.control_exchange_v",
                "pattern.common_scale", "table5.first_layer_carries_most",
                "table5.heads_change_little", "table5.equal_movement"):
        assert v[key] == "NOT HELD", key


def test_switch_table6_and_endpoint_findings_can_fail(small):
    config, results = small[0], dict(small[1][0])
    S, K = np.asarray(results["t2_combined_own_a"]).shape
    results["t2_combined_own_switch_a"] = np.ones((S, K))
    results["t2_combined_own_switch_b"] = np.zeros((S, K))
    results["t2_combined_own_specialized_a"] = np.ones((S, K))
    results["t2_combined_own_specialized_b"] = np.ones((S, K))
    results["t6_acq_projected"] = np.asarray(results["t6_acq_native"]) - 0.1
    results["end_own_a_f"] = np.asarray(results["end_own_u_f"]) + 0.01
    v = _verdicts(config, results)
    assert v["switch.rate_difference"] == v["table6.projected_v"] == "HELD"
    assert v["endpoints.favoured"] == "HELD"
    results["t2_combined_own_switch_a"] = np.zeros((S, K))
    results["t6_acq_projected"] = np.asarray(results["t6_acq_native"]) + 0.1
    results["end_own_a_f"] = np.asarray(results["end_own_u_f"]) + 0.2 + np.arange(S) * 1e-3
    v = _verdicts(config, results)
    assert v["switch.rate_difference"] == v["table6.projected_v"] == "NOT HELD"
    assert v["endpoints.favoured"] == "NOT HELD"


def test_a_finding_is_recomputable_from_its_record(small):
    config, results = small[0], small[1][0]
    _, claims, _ = sf.analyse(config, results, 40, SEED)
    for c in (c.to_dict() for c in claims if c.kind == "finding"):
        t = c["tolerance"]
        thr = tuple(t["threshold"]) if c["rule"] == "equivalence" else t["threshold"]
        per = c["per_seed"]
        samples = per if c["rule"] == "paired_difference" else [per]
        again = sf.stats.judge(c["rule"], *samples, threshold=thr,
                               direction=None if c["rule"] == "equivalence" else t["direction"])
        assert again.verdict == c["verdict"], c["id"]


def test_quick_and_extended_runs_reuse_the_stored_full_calibration(small, tmp_path):
    from gaugedyn.experiments.adam_state import _calibration as sc

    quick = load_config("simulations/shared_representation.toml", quick=True)
    how = quick.tasks[0]["calibration"]
    assert how["source"] == "stored" and how["choice"] == sc.stored()["choice"]
    assert how["calibration_seeds"] == E.params["calibration_seeds"].default
    again = load_config("simulations/shared_representation.toml", quick=True,
                        overrides=["recalibrate=true"])
    assert again.tasks[0]["calibration"] == {"source": "calibrate",
                                             "reason": "recalibrate = true"}
    other = load_config("simulations/shared_representation.toml", quick=True,
                        overrides=["beta2=0.9"]).tasks[0]["calibration"]
    assert other["source"] == "calibrate" and "beta2" in other["reason"]
    # a run given a stored choice trains that set-up, calibrates nothing, and says so
    config = small[0] | {"setup": "search"}
    record = {"choice": "b1-own-strong", "w_star": 0.99, "rule": "eligible",
              "candidates": [], "calibration_seeds": 16, "settings": {}, "command": "cmd",
              "date": "today"}
    path = tmp_path / "calibration.json"
    path.write_text(__import__("json").dumps(record))
    plan = sc.plan(config, [], path)
    assert plan["source"] == "stored"
    task = E.tasks(config)[0] | {"calibration": plan}
    out = E.run_task(task, task_seed(0, E.name, task))
    cal = __import__("json").loads(out["calibration"])
    assert cal["choice"] == "b1-own-strong" and cal["w_star"] == 0.99
    assert "stored full calibration" in sc.describe(cal)


def test_bad_input_is_refused_before_work(tmp_path):
    with pytest.raises(InputError, match="control_delta"):
        E.tasks(config_of(E, quick=True, targets=4, control_delta=0.3))
    with pytest.raises(InputError, match="control_delta"):
        load_config("simulations/shared_representation.toml",
                    overrides=["targets=4", "control_delta=0.3"])
    with pytest.raises(InputError, match="setup"):
        load_config("simulations/shared_representation.toml", overrides=["setup=b3-own-mild"])
    with pytest.raises(InputError, match="beta2"):
        load_config("simulations/shared_representation.toml", overrides=["beta2=1.0"])


def test_a_checkpoint_already_reversed_before_the_pulse_is_not_counted_as_switched():
    """Direction 0's favoured head is zeroed, so its other target is on top before the pulse:
    that checkpoint is outside the denominator and never counts as switched; direction 1 (the
    favoured target on top before) stays countable."""
    hp = E.tasks(config_of(E, quick=True, **SMALL))[0] | {"bottleneck": 2, "pulse_gain": 0.5,
                                                         "pulse_weight": 0.75, "lr": 1e-6}
    gen = torch.Generator().manual_seed(11)
    world, routes, _ = ss.grow(hp | {"formation_steps": 40, "ancestor_steps": 40}, 2, gen,
                               [("acquisition", 0.5)])
    a = routes["acquisition"]
    with torch.no_grad():
        heads = a.net.heads.weight  # [S K, K, d]: row b = s K + f
        heads[:, 0] = 0.0  # every network reads target 0 as the constant 3: r_0 = 1 - 10 = -9
        a.net.heads.bias[:, 0] = 3.0  # direction f = 0: its other target on top already
    evals = world.sample(torch.Generator().manual_seed(12), 256)
    pulse = sp.Pulse(world, evals, hp, "own", 13)
    _, top = pulse.measure(a)
    assert not top[:, 0].any() and top[:, 1].all()  # direction 0 reversed before the pulse
    res = pulse.run([a])["routes"][0]
    assert not res["switched"][:, 0].any()  # the old count said switched: not on top after
    assert not res["specialized"][:, 0].any() and res["specialized"][:, 1].all()
    assert (res["switched"] <= res["specialized"]).all()

"""The beta-grid protocol (``experiments/adam_split/PROTOCOL.md``) on synthetic grids built
to pass and built to fail: cells per claim, the divergence rule, both readings and conventions, verdicts."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.adam import READING_SUMS, reading_sums, split_update
from gaugedyn.experiments.adam_split import _grid_analysis as bga
from gaugedyn.experiments.adam_split import beta_grid as bg
from gaugedyn.experiments.adam_split._grid import (
    cell_table,
    protocol_statistics,
    roughness,
    run_measures,
)

B = [0.9, 0.99, 0.999]
T = 60
SEEDS = 6  # the median rules (the shares, the log ratios) need 6 values
COL = {k: i for i, k in enumerate(READING_SUMS)}

SEED = np.random.SeedSequence(41)
"""The analysis seed the median rules draw from."""


def _reference(sign2, lag2, res2, cos, rough, rng, n=100):
    """Per-step sums of a run with the given squared part norms, sign cosine and noise level of
    ``log |u|`` (the roughness); both readings equal."""
    ref = np.zeros((T, len(READING_SUMS)))
    u = np.exp(0.01 * np.arange(T) + rough * rng.standard_normal(T))
    ref[:, COL["update"]] = u**2
    for r in ("current", "memory"):
        ref[:, COL[f"sign_{r}"]] = sign2
        ref[:, COL[f"residual_{r}"]] = res2
        ref[:, COL[f"dot_update_sign_{r}"]] = cos * u * np.sqrt(sign2)
    ref[:, COL["lag"]] = lag2
    ref[:, COL["count"]] = n
    return ref


def _grid(hold=True, diverge=(), lag_off=None, tied_rough=None):
    """A 3 x 3 grid on ``digits_mlp`` whose findings all hold (``hold``) or all fail; cells in
    ``diverge`` end above their initial loss; ``lag_off`` maps cells to their lag share."""
    tasks, results = [], []
    for b1 in B:
        for b2 in B:
            for s in range(SEEDS):
                rng = np.random.default_rng([int(b1 * 1e3), int(b2 * 1e3), s])
                tied = b1 == b2
                # each part jittered on its own: the shares and cosines vary over seeds (equal
                # values in every seed are a degenerate sample for the median rules)
                jit = 1 + 0.01 * rng.standard_normal(4)
                if hold:
                    sign2, lag2, res2, cos = (80, 0, 20, 0.9) if tied else (60, 30, 10, 0.8)
                    rough = 0.01 if tied else 0.05
                else:
                    sign2, lag2, res2, cos = (30, 0, 70, 0.5) if tied else (60, 3, 37, 0.5)
                    rough = 0.05 if tied else 0.01
                if lag_off is not None and not tied:
                    lag2 = lag_off.get((b1, b2), lag2)
                if tied_rough is not None and tied:
                    rough = tied_rough
                ref = _reference(
                    sign2 * jit[0], lag2 * jit[1], res2 * jit[2], cos * jit[3], rough, rng
                )
                final = 3.0 if (b1, b2) in diverge else 0.5
                tasks.append({"task": "digits_mlp", "beta1": b1, "beta2": b2, "seed": s})
                results.append(
                    {"sums": ref, "final_loss": final, "initial_loss": 2.3, "nonfinite_step": -1}
                )
    return tasks, results


def _findings(tasks, results):
    table = cell_table(results, tasks, 0.1)
    found = bga.findings_of("digits_mlp", protocol_statistics(table, "digits_mlp"), "", [], SEED)
    return {c.id: c for c in found}, table


def _assert_recomputable(c) -> None:
    """Every reading's verdict is recomputed from the finding's record alone (its rule, the
    declared measure's choice, with its stored uniform draw where the rule is randomised)."""
    from gaugedyn.experiments.adam_split._protocol import FINDING_MEASURES
    from gaugedyn.stats import RULES, judge, measure_of

    d = c.to_dict()
    assert d["rule"] == measure_of(FINDING_MEASURES, d["id"]).rule("threshold")
    assert "power" in d  # nan where the spread is 0
    detail = d["tolerance"]["reading_detail"]
    assert set(detail) == set(d["readings"])
    for name, r in detail.items():
        assert r["verdict"] == d["readings"].get(name, d["verdict"])
        draw = r.get("uniform_draw")
        assert (draw is not None) == RULES[r["rule"]].randomised
        again = judge(
            r["rule"], r["per_seed"], threshold=r["threshold"], direction=r["direction"], draw=draw
        )
        assert again.verdict == r["verdict"]
        assert [again.low, again.high] == r["interval"]
    primary = detail[d["tolerance"]["primary_reading"]]
    assert primary["per_seed"] == d["per_seed"] and primary["interval"] == d["interval"]


def test_pure_sign_update_has_sign_dominance_one():
    rng = np.random.default_rng(3)
    ref = []
    for _ in range(40):  # m^ = w^ = g, sqrt(v^) = |g|, eps = 0: u = g/|g| = sign(g) exactly
        g = rng.standard_normal(50) * np.exp(rng.standard_normal(50))
        parts = split_update(g, g, np.abs(g), g, 0.0)
        np.testing.assert_array_equal(parts.update, np.sign(g))
        ref.append(reading_sums(parts))
    ref = np.stack(ref)
    m = run_measures({"sums": ref, "final_loss": 0.1, "initial_loss": 1.0}, 0.1)
    for r in ("current", "memory"):
        assert m[f"dominance_squared_{r}"] == pytest.approx(1.0, abs=1e-15)
        assert m[f"dominance_norm_{r}"] == pytest.approx(1.0, abs=1e-15)
        assert m[f"share_sign_squared_{r}"] == pytest.approx(1.0, abs=1e-15)
    assert m["magnitude"] == pytest.approx(1.0) and m["diverged"] == 0.0


def test_update_orthogonal_to_its_sign_part_has_sign_dominance_zero():
    rng = np.random.default_rng(1)
    ref = _reference(50.0, 0.0, 50.0, 0.0, 0.01, rng)
    m = run_measures({"sums": ref, "final_loss": 0.1, "initial_loss": 1.0}, 0.0)
    assert m["dominance_squared_current"] == 0.0 and m["dominance_squared_memory"] == 0.0


def test_every_finding_holds_on_a_grid_built_to_pass():
    found, _ = _findings(*_grid(hold=True))
    assert len(found) == 1 + 2 * 2 + 4
    bad = {k: (c.verdict, c.interval) for k, c in found.items() if c.verdict != "HELD"}
    assert not bad
    for k, c in found.items():
        _assert_recomputable(c)
        if ":tied_smoother:" in k:
            assert c.readings == {"as judged": "HELD"}
        else:  # both sign readings times both share conventions, every one judged
            assert c.readings == {r: "HELD" for r in bga.READING_ORDER}


def test_every_finding_fails_on_a_grid_built_to_fail():
    found, _ = _findings(*_grid(hold=False))
    bad = {k: (c.verdict, c.interval) for k, c in found.items() if c.verdict != "NOT HELD"}
    assert not bad
    for c in found.values():
        _assert_recomputable(c)
        assert set(c.readings.values()) == {"NOT HELD"}


def test_a_finding_whose_conventions_disagree_depends_on_the_reading():
    # lag 10.5 against sign 60 and residual 10: squared share 0.13 > 0.1, norm share 0.23 < 0.25
    lag = {(b1, b2): 10.5 for b1 in B for b2 in B if b1 != b2}
    found, _ = _findings(*_grid(lag_off=lag))
    c = found["finding:digits_mlp:lag_substantial:beta2>beta1"]
    assert c.verdict == "depends on the reading" and not c.passed
    assert c.readings == {
        "current/squared": "HELD",
        "current/norm": "NOT HELD",
        "memory/squared": "HELD",
        "memory/norm": "NOT HELD",
    }
    _assert_recomputable(c)
    from gaugedyn.harness._report import claim_row

    row = claim_row("beta_grid", c.to_dict())
    assert "current/norm: NOT HELD" in row["verdict"]


def test_a_diverged_off_diagonal_cell_does_not_make_the_lag_substantial():
    big = {(0.9, 0.99): 300.0}  # the only cell with a large lag, in the region beta2 > beta1
    low = {c: 1.0 for c in [(0.9, 0.999), (0.99, 0.999)]} | big
    key = "finding:digits_mlp:lag_substantial:beta2>beta1"
    found, _ = _findings(*_grid(lag_off=low))
    assert found[key].verdict == "HELD"  # control: with the cell trained, its lag decides
    tasks, results = _grid(lag_off=low, diverge={(0.9, 0.99)})
    found, table = _findings(tasks, results)
    assert found[key].verdict == "NOT HELD"
    assert "(0.9, 0.99)" not in found[key].tolerance["cells"]
    assert all("(0.9, 0.99)" not in " ".join(c.tolerance["cells"]) for c in found.values())
    arrays, claims, diag = bga.analyse_grid(
        bg_config(), tasks, results, [], [], label=bg.configuration_label(bg_config()), seed=SEED
    )
    assert diag["per_task"]["digits_mlp"]["diverged_cells"] == ["(0.9, 0.99)"]
    assert arrays["digits_mlp__cell_diverged"][0, 1] == 1
    held = {c.id: c.verdict for c in claims if c.kind == "finding"}
    assert held[key] == "NOT HELD"


def test_divergence_rule_flags_nonfinite_and_rising_losses():
    rng = np.random.default_rng(0)
    ref = _reference(1.0, 0.0, 0.1, 0.9, 0.01, rng)
    for final, initial, bad, flagged in [
        (0.5, 1.0, -1, 0.0),
        (1.5, 1.0, -1, 1.0),
        (np.nan, 1.0, -1, 1.0),
        (0.5, 1.0, 7, 1.0),
    ]:
        m = run_measures(
            {"sums": ref, "final_loss": final, "initial_loss": initial, "nonfinite_step": bad}, 0.1
        )
        assert m["diverged"] == flagged


def test_regions_are_judged_separately():
    lag = {(0.9, 0.99): 1.0, (0.9, 0.999): 1.0, (0.99, 0.999): 1.0}  # beta2 > beta1: tiny lag
    found, _ = _findings(*_grid(lag_off=lag))
    assert found["finding:digits_mlp:lag_substantial:beta2>beta1"].verdict == "NOT HELD"
    assert found["finding:digits_mlp:lag_substantial:beta2<beta1"].verdict == "HELD"
    cells = found["finding:digits_mlp:lag_substantial:beta2<beta1"].tolerance["cells"]
    assert sorted(cells) == ["(0.99, 0.9)", "(0.999, 0.9)", "(0.999, 0.99)"]


def test_smoothness_is_paired_at_matched_beta():
    found, table = _findings(*_grid(tied_rough=0.05))  # tied as rough as untied
    for k, c in found.items():
        if ":tied_smoother:" in k:
            assert c.verdict in ("UNRESOLVED", "NOT HELD")
    stat = [s for s in protocol_statistics(table, "digits_mlp") if s["claim"] == "tied_smoother"]
    row = next(s for s in stat if s["match"] == "beta1" and s["region"] == "beta2>beta1")
    assert sorted(row["cells"]) == [
        "(0.9, 0.9) vs (0.9, 0.99)",
        "(0.9, 0.9) vs (0.9, 0.999)",
        "(0.99, 0.99) vs (0.99, 0.999)",
    ]


def test_roughness_is_detrended():
    t = np.arange(100.0)
    assert roughness(np.exp(0.05 * t)) == pytest.approx(0.0, abs=1e-12)
    assert roughness(np.exp(0.05 * t + 0.1 * (-1) ** t)) == pytest.approx(0.4)
    assert np.isnan(roughness([1.0, 2.0]))


def test_too_few_seeds_or_cells_give_unresolved():
    tasks, results = _grid()
    keep = [i for i, t in enumerate(tasks) if t["seed"] == 0]
    found, _ = _findings([tasks[i] for i in keep], [results[i] for i in keep])
    assert {c.verdict for c in found.values()} == {"UNRESOLVED"}
    with pytest.raises(InputError, match="one task per result"):
        cell_table(results[:-1], tasks, 0.1)


def bg_config(**kw):
    return {k: p.default for k, p in bg.EXPERIMENT.params.items()} | kw


def test_provisional_label_unless_full_configuration():
    full = bg_config()
    quick = {
        k: (p.quick if p.quick is not None else p.default) for k, p in bg.EXPERIMENT.params.items()
    }
    assert bg.configuration_label(full) == ""
    assert bg.configuration_label(quick) == "provisional (quick)"
    assert bg.configuration_label(full | {"seeds": 3}) == "provisional (reduced configuration)"
    tasks, results = _grid()
    _, claims, diag = bga.analyse_grid(
        quick, tasks, results, [], [], label=bg.configuration_label(quick), seed=SEED
    )
    found = [c for c in claims if c.kind == "finding"]
    assert found and all(c.statement.startswith("provisional (quick): ") for c in found)
    assert diag["provisional"] == "provisional (quick)"

"""The core-wall candidates of the cross-entropy family (issue 42, Build 5): the cross-entropy
accurate below the float's resolution, the decoupled weight decay that gives a confident fit a
finite minimiser, the declared candidates and their defining property."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

from gaugedyn._errors import InputError
from gaugedyn.experiments.adam_stability import _family, _family_wall
from gaugedyn.experiments.adam_stability._batched import (
    BatchedMLP,
    adam_step_sets,
    confident_ce,
)


def _mp_ce(z: np.ndarray, y: np.ndarray) -> tuple[mpmath.mpf, np.ndarray]:
    """The mean cross-entropy of logits ``z`` ``(n, k)`` and its gradient, by the textbook
    definition ``log(sum_j exp(z_j)) - z_y`` in 400 digits (enough for ``1 + e^-700``)."""
    with mpmath.workdps(400):
        n = z.shape[0]
        total = mpmath.mpf(0)
        grad = np.zeros(z.shape)
        for i in range(n):
            zi = [mpmath.mpf(float(v)) for v in z[i]]
            lse = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in zi))
            total += lse - zi[int(y[i])]
            for j, v in enumerate(zi):
                grad[i, j] = float((mpmath.exp(v - lse) - (1 if j == y[i] else 0)) / n)
        return total / n, grad


@pytest.mark.parametrize("margin", [0.0, 5.0, 20.0, 40.0, 100.0, 300.0, 700.0])
def test_the_cross_entropy_and_its_gradient_are_accurate_however_confident(margin):
    """Against a 400-digit reference: the loss and every logit's gradient to 1e-10 relative,
    where ``-log_softmax`` reads 0 and a zero gradient on the label's logit once the margin
    passes about 37 (a float64 ``1 + tiny`` rounds to 1)."""
    g = torch.Generator().manual_seed(int(margin))
    y = torch.tensor([3, 0, 9, 3, 5])
    z = torch.randn(2, 5, 10, generator=g, dtype=torch.float64)
    z[:, torch.arange(5), y] += margin
    z.requires_grad_(True)
    loss = confident_ce(z, y)
    (grad,) = torch.autograd.grad(loss.sum(), z)
    for b in range(2):
        want, want_grad = _mp_ce(z[b].detach().numpy(), y.numpy())
        assert float(want) > 0
        assert abs(float(loss[b].detach()) - float(want)) <= 1e-10 * float(want)
        np.testing.assert_allclose(grad[b].numpy(), want_grad, rtol=1e-10, atol=0)


def test_the_digits_task_uses_the_accurate_cross_entropy():
    """A one-image digits copy made confident through its output bias: the task's loss is the
    reference's ``9 e^-60``-sized value, not 0."""
    model = BatchedMLP("digits_ce", 1, [0], n_samples=1)
    with torch.no_grad():
        model.params[2].zero_()
        model.params[3].zero_()
        model.params[3][0, 0, int(model.y[0])] = 60.0
    got = float(model.losses()[0].detach())
    want, _ = _mp_ce(np.eye(10)[int(model.y[0])][None] * 60.0, model.y.numpy())
    assert got > 0 and abs(got - float(want)) <= 1e-12 * float(want)


def test_decoupled_weight_decay_reproduces_torch_adamw():
    betas = [(0.9, 0.999), (0.5, 0.9)]
    model = BatchedMLP("digits_ce", len(betas), [3, 4], n_samples=32)
    start = [p.detach().clone() for p in model.params]
    adam_step_sets(model, 1e-2, [b[0] for b in betas], [b[1] for b in betas], 6, [1],
                   eps=1e-8, weight_decay=0.5)  # fmt: skip
    for k, (b1, b2) in enumerate(betas):
        ps = [p[k].clone().requires_grad_(True) for p in start]
        opt = torch.optim.AdamW(ps, lr=1e-2, betas=(b1, b2), eps=1e-8, weight_decay=0.5)
        for _ in range(6):
            opt.zero_grad()
            model.losses([p[None] for p in ps])[0].backward()
            opt.step()
        for p, q in zip(model.params, ps):
            torch.testing.assert_close(p[k].detach(), q.detach(), rtol=1e-10, atol=1e-12)
    with pytest.raises(InputError, match=r"weight_decay=-1\.0 is not allowed"):
        adam_step_sets(model, 1e-2, 0.9, 0.99, 2, [1], weight_decay=-1.0)


def test_the_core_wall_candidates_are_declared_apart_from_the_family_pilot_s():
    t = _family.family_task("digits_ce_wd", [2.0, 24, 200], 2, [0.3], [0.1])
    assert (t["weight_decay"], t["eps"], t["hidden"], t["n_samples"]) == (1.0, 1e-30, 32, 64)
    assert "weight_decay" not in _family.family_task("digits_ce", [2.0, 24, 200])
    assert _family.candidate("digits_ce_wd") is _family.WALL_CANDIDATES["digits_ce_wd"]
    assert _family.seed_index("digits_ce") == 0
    assert _family.seed_index("digits_ce_wd") == _family.WALL_SEED_OFFSET
    assert not set(_family.WALL_CANDIDATES) & set(_family.CANDIDATES)
    assert set(_family.WALL_ROWS) <= set(_family.ROWS)
    assert math.isclose(10 ** _family.confident_level("digits_ce_wd") * 64, math.log(2))
    with pytest.raises(InputError, match="'nope' is not allowed.*digits_ce_wd"):
        _family.candidate("nope")
    with pytest.raises(SystemExit, match="--candidate 'digits_ce' is not allowed"):
        _family_wall.pilot_main(["--candidate", "digits_ce"])
    with pytest.raises(SystemExit, match="--row 0.05 is not allowed"):
        _family_wall.pilot_main(["--candidate", "digits_ce_wd", "--row", "0.05"])


def _wall_pilot(edges: int, rows: int = 3, level: float = -9.0) -> dict:
    """A synthetic pilot of ``digits_ce_wd``: the first ``rows`` declared rows, ``edges`` of
    them with an edge between the 6th and 7th column, every run at ``level``."""
    cols = sorted(_family.COLUMNS)
    out = []
    for i, a in enumerate(_family.WALL_ROWS[:rows]):
        cells = (
            [(cols[5], [1] * 8), (cols[6], [0] * 8)] if i < edges else [(c, [0] * 8) for c in cols]
        )
        out.append({"row": a, "cells": [
            {"c": c, "status": [[s, s] for s in st], "status_rises": [[[s] * 3, [s] * 3] for s in st],
             "settled_median_log10_loss": [level] * 8, "cpu_seconds": 1.0} for c, st in cells]})  # fmt: skip
    return {"candidates": {"digits_ce_wd": {"rows": out}}, "date": "d", "command": "c",
            "machine": "m", "seeds": 8}  # fmt: skip


def test_a_core_wall_candidate_needs_every_run_confident_and_its_edges():
    assert _family_wall.wall_choose(_wall_pilot(2)) == "digits_ce_wd"
    assert _family_wall.wall_summary("digits_ce_wd", _wall_pilot(3))["with_edge"] == 3
    # not all rows run yet: undecided
    assert _family_wall.wall_choose(_wall_pilot(2, rows=2)) is None
    assert not _family_wall.wall_summary("digits_ce_wd", _wall_pilot(2, rows=2))["fails"]
    # two rows without an edge: the property is out of reach
    s = _family_wall.wall_summary("digits_ce_wd", _wall_pilot(0, rows=2))
    assert s["fails"] and not s["meets"]
    assert _family_wall.wall_choose(_wall_pilot(1)) is None
    # a run above log(2) / n_samples has not fit its labels
    hot = _wall_pilot(3, level=-1.5)
    s = _family_wall.wall_summary("digits_ce_wd", hot)
    assert not s["confident"] and s["fails"] and s["highest_log10_loss"] == -1.5
    assert _family_wall.wall_choose(hot) is None


def test_the_wall_pilot_page_shows_each_row_and_the_property_s_verdict():
    p = _wall_pilot(2) | {"date": "d", "command": "c", "machine": "m", "seeds": 8}
    p["diagnostics"] = [
        {"label": "plain, eps 1e-30", "a": 0.3, "c": 0.316, "eps": 1e-30, "weight_decay": 0.0,
         "steps": 991, "status": [0] * 6 + [2] * 2, "settled_median_log10_loss": [-32.0] * 8,
         "max_rise": [-0.1] * 8, "trace": [[-3.0 - k for k in range(10)]] * 8, "cpu_seconds": 5}
    ]  # fmt: skip
    lines = _family_wall.wall_pilot_markdown(p)
    text = "\n".join(lines)
    assert "| plain, eps 1e-30 | 0.3 | 0.316 | 991 | 6 quiet, 2 undetermined | -32 |" in text
    assert "-3 -4 -5 -6 -7 -8 -9 -10 -11 -12 |" in text
    rows = [x for x in lines if x.startswith("| 0.")]
    assert len(rows) == 3 and rows[0].count("8/8") == 1 and rows[0].count("0/8") == 1
    assert rows[2].count("0/8") == len(_family.COLUMNS) and "- [-, -]" in rows[2]
    # beta1 / sqrt(beta2) of the mostly spiky cells; none on a row never spiky
    c5 = sorted(_family.COLUMNS)[5]
    assert rows[0].endswith(f"| {0.7 / math.sqrt(1 - c5):.2f} |") and rows[2].endswith("| - |")
    assert "`digits_ce_wd` meets it: 2 edges in 3 of 3 rows run, every run confident" in text
    undecided = "\n".join(_family_wall.wall_pilot_markdown(_wall_pilot(1, rows=1) | p | {
        "candidates": _wall_pilot(1, rows=1)["candidates"]}))  # fmt: skip
    assert "`digits_ce_wd` is undecided: 1 edges in 1 of 3 rows run" in undecided
    assert (
        _family_wall.wall_markdown(None, {"candidates": {}})[-1].startswith(
            "No core-wall measurement is stored (no core-wall candidate is chosen"
        )
        or _family_wall.STORED.exists()
    )


def test_the_measurement_needs_a_chosen_or_named_core_wall_candidate(monkeypatch):
    monkeypatch.setattr(_family_wall, "stored_wall_pilot", lambda: {"candidates": {}})
    with pytest.raises(SystemExit, match="no core-wall candidate is chosen yet"):
        _family_wall.main([])
    with pytest.raises(SystemExit, match="--candidate 'digits_ce' is not allowed"):
        _family_wall.main(["--candidate", "digits_ce"])
    with pytest.raises(SystemExit, match="--row 0.03 is not allowed"):
        _family_wall.main(["--candidate", "digits_ce_wd", "--row", "0.03"])


def test_named_cells_take_their_side_from_the_pilot_s_settled_verdict():
    cols = sorted(_family.COLUMNS)
    p = _wall_pilot(1)
    got = _family_wall.named_cells("digits_ce_wd", p, [(0.3, cols[5]), (0.3, cols[6])])
    i = _family.ROWS.index(0.3)
    assert got == [(i, 5, "spiky"), (i, 6, "quiet")]
    with pytest.raises(InputError, match=r"cell \(0.3, 0.001\) is not allowed"):
        _family_wall.named_cells("digits_ce_wd", p, [(0.3, 0.001)])
    with pytest.raises(InputError, match="is not allowed"):
        _family_wall.named_cells("digits_ce_wd", p, [(0.05, cols[5])])
    with pytest.raises(SystemExit, match="--cell is a diagnostic of a named candidate"):
        _family_wall.main(["--cell", "0.3", "0.1"])


def _measured(spiky: float, quiet: float) -> dict:
    rng = np.random.default_rng(1)
    cols = sorted(_family.COLUMNS)
    cells = []
    for a in _family.WALL_ROWS[:2]:
        for c, side, n in ((cols[5], "spiky", spiky), (cols[6], "quiet", quiet)):
            cells.append({"row": a, "c": c, "side": side,
                          "exponent": (n + 0.005 * rng.standard_normal((8, 4))).tolist(),
                          "s_min": np.full((8, 4), 0.5).tolist(),
                          "wall": np.full((8, 4), np.nan).tolist(), "status": [1] * 8,
                          "log10_loss": np.full((8, 4), -9.0).tolist(), "cpu_seconds": 1.0})  # fmt: skip
    return {"candidate": "digits_ce_wd", "seed": 3, "cells": cells, "date": "d", "command": "c"}


def test_the_exponent_is_judged_at_both_thresholds_and_says_where_it_depends_on_them():
    """ "Exceeds 2" above 2 (declared) and above 2 + EXPONENT_MARGIN; beside it the
    mean-squared side's "does not exceed 2" below 2 + EXPONENT_MARGIN (declared) and below 2:
    2.02 exceeds 2 but not 2.25 and lies below 2.25 but not below 2 (both depend on the
    threshold); 3.5 exceeds both and lies below neither."""
    f = _family_wall.findings(_measured(2.02, 3.5), _wall_pilot(2))
    sp, qu = f["spiky"], f["quiet"]
    assert sp["readings"] == {"2": "HELD", "2.25": "NOT HELD"}
    assert sp["verdict"] == "depends on the reading"
    assert list(sp["within_readings"]) == ["2.25", "2"] and sp["within_readings"]["2.25"] == "HELD"
    assert sp["within_readings"]["2"] != "HELD" and sp["within"] == "depends on the reading"
    assert qu["readings"] == {"2": "HELD", "2.25": "HELD"} and qu["verdict"] == "HELD"
    assert qu["within"] == "NOT HELD"
    text = "\n".join(_family_wall.wall_markdown(_measured(2.02, 3.5), _wall_pilot(2)))
    assert "exceeds 2 - depends on the reading (> 2: HELD; > 2.25: NOT HELD)" in text
    assert "seeds, HELD: > 2: HELD; > 2.25: HELD)" in text
    assert "the quiet ones NOT HELD (< 2.25: NOT HELD; < 2: NOT HELD)" in text
    assert "(the chosen candidate;" in text


@pytest.mark.skipif(not _family_wall.STORED.exists(), reason="no stored measurement")
def test_the_stored_core_wall_cells_rerun_to_their_pilot_verdicts_and_exponents():
    """The stored wall pilot and measurement are what their code gives: the cheapest stored
    measured cell, rerun from its seeds, gives the pilot's settled statuses and the stored
    exponents."""
    w = _family_wall.stored()
    z = min(w["cells"], key=lambda v: v["cpu_seconds"])
    i, j = _family.ROWS.index(z["row"]), _family.column_index(z["c"])
    pilot = _family_wall.stored_wall_pilot()
    row = next(r for r in pilot["candidates"][w["candidate"]]["rows"] if r["row"] == z["row"])
    cell = next(x for x in row["cells"] if x["c"] == z["c"])
    again = _family_wall.wall_cell(w["candidate"], i, j, count=2)
    assert again["status"] == [s[0] for s in cell["status"]] == z["status"]
    # the first and last measured steps are the stored measurement's
    got = np.asarray(again["exponent"], float)
    want = np.asarray(z["exponent"], float)[:, [0, -1]]
    assert again["steps"] == [z["steps"][0], z["steps"][-1]]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_stored_diagnostic_cells_are_kept_and_only_new_ones_run(monkeypatch):
    from gaugedyn.experiments.adam_stability import _scan

    stored = _family_wall.stored_wall_pilot().get("diagnostics")
    if not stored:
        pytest.skip("no stored diagnostics")
    assert len(stored) == len(_family_wall.DIAGNOSTICS)
    ran = []

    def fake(task, seed, watch=None):
        ran.append((task["a"], task["c"], task["eps"], task["weight_decay"]))
        raise RuntimeError("ran")

    monkeypatch.setattr(_scan, "_run_task", fake)
    assert _family_wall.diagnostics(stored) == stored and not ran
    with pytest.raises(RuntimeError, match="ran"):
        _family_wall.diagnostics(stored[1:])
    label, a, c, eps, wd = _family_wall.DIAGNOSTICS[0]
    assert ran == [([a], [c], eps, wd)]


def test_the_later_core_wall_candidates_scan_only_clear_of_the_divergence_line(
    monkeypatch, tmp_path
):
    """`_family.WALL_TOP`: the candidates declared after ``digits_ce_wd``'s pilot scan a row
    ``a`` only over ``1 - beta2 <= a`` (every such cell with ``beta1 / sqrt(beta2)`` below 1),
    ``digits_ce_wd`` over every column (its stored rows); the pilot passes them to the scan."""
    from gaugedyn.experiments.adam_stability import _family_pilot

    cols = sorted(_family.COLUMNS)
    assert _family.wall_columns("digits_ce_wd", 0.1) == cols
    later = [n for n in _family.WALL_CANDIDATES if n != "digits_ce_wd"]
    assert later == [
        "digits_ce_wd01",
        "digits_ce_wd001",
        "digits_ce_wd01_lr3",
        "digits_ls3",
        "digits_ls2",
        "digits_ce_wd03",
        "digits_ce_wd05",
        "digits_ls3_w8",
        "digits_ls3_lr3",
        "digits_ce_wd07",
        "teacher_kl",
        "gauss_ls3",
    ]
    for name in later:
        for a in _family.WALL_ROWS:
            got = _family.wall_columns(name, a)
            assert got == [c for c in cols if c <= a * (1 + 1e-9)] and got
            assert all((1 - a) / math.sqrt(1 - c) < 0.96 for c in got)
    assert max(_family.wall_columns("digits_ce_wd01", 0.1)) == pytest.approx(0.1)
    assert max(_family.wall_columns("digits_ce_wd01", 0.2)) == pytest.approx(10**-0.75)
    with pytest.raises(InputError, match="core-wall candidate 'digits_ce' is not allowed"):
        _family.wall_columns("digits_ce", 0.1)
    # the page says which cells were left out above the cap, for the later candidates only
    p = _wall_pilot(2)
    p["candidates"]["digits_ce_wd01"] = p["candidates"]["digits_ce_wd"]
    text = "\n".join(_family_wall.wall_pilot_markdown(p))
    cap = "or above $1 - \\beta_2 = 1 (1 - \\beta_1)$ (`WALL_TOP`)"
    assert text.count(cap) == 1 and text.index(cap) > text.index("candidate `digits_ce_wd01`")
    seen = []

    def fake(candidates, name, a, cols=None):
        seen.append((name, a, cols))
        entry = {"row": a, "cells": [{"c": cols[-1], "cpu_seconds": 1.0}], "date": "d"}
        candidates[name] = {"rows": [entry]}
        return entry

    monkeypatch.setattr(_family_pilot, "add_row", fake)
    monkeypatch.setattr(_family_wall, "WALL_PILOT", tmp_path / "wall.json")
    _family_wall.pilot_main(["--candidate", "digits_ce_wd001", "--row", "0.2"])
    assert seen == [("digits_ce_wd001", 0.2, _family.wall_columns("digits_ce_wd001", 0.2))]


def test_a_row_scanned_over_some_columns_keeps_each_cell_s_own_seeds(monkeypatch):
    """`_family_pilot.scan_row` over a subset of the columns evaluates only those, from the
    top down, each cell drawing the seeds of its place in the full `_family.COLUMNS`."""
    from gaugedyn.experiments.adam_stability import _family_pilot, _scan

    ran = []

    def fake(task, seed, watch=None):
        ran.append((task["c"][0], list(seed.entropy)))
        s = np.zeros((1, 1, _family.SEEDS, 2), np.int8)
        return {"status": s, "status_rises": s[..., None].repeat(3, -1),
                "rises": np.array([1.5, 2.0, 2.5]), "max_rise": np.zeros((1, 1, 8, 2)),
                "settled_median_log10_loss": np.full((1, 1, 8), -9.0),
                "steps_run": 8}  # fmt: skip

    monkeypatch.setattr(_scan, "_run_task", fake)
    i = _family.ROWS.index(0.2)
    every = sorted(_family.COLUMNS)
    cols = every[4:7]  # not from the first column: a cell's place in the subset is not its own
    row = _family_pilot.scan_row("digits_ce_wd01", i, cols=cols)
    k = _family.seed_index("digits_ce_wd01")
    assert [c for c, _ in ran] == cols[::-1]
    i_seed = _family.SEED_ROWS.index(0.2)
    assert [e for _, e in ran] == [[_family_pilot.SEED, k, i_seed, every.index(c)]
                                   for c in cols[::-1]]  # fmt: skip
    assert [z["c"] for z in row["cells"]] == cols


def _mp_kl(z: np.ndarray, y: np.ndarray, delta: float) -> tuple[mpmath.mpf, np.ndarray]:
    """The mean ``KL(q || softmax(z))`` of logits ``z`` ``(n, k)``, ``q`` the labels smoothed by
    ``delta``, and its gradient ``(p - q) / n``, by the textbook definitions in 100 digits."""
    with mpmath.workdps(100):
        n, k = z.shape
        total = mpmath.mpf(0)
        grad = np.zeros(z.shape)
        d = mpmath.mpf(delta)
        for i in range(n):
            zi = [mpmath.mpf(float(v)) for v in z[i]]
            lse = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in zi))
            for j, v in enumerate(zi):
                q = 1 - d if j == y[i] else d / (k - 1)
                p = mpmath.exp(v - lse)
                total += q * mpmath.log(q / p)
                grad[i, j] = float((p - q) / n)
        return total / n, grad


@pytest.mark.parametrize("delta", [1e-3, 1e-2])
@pytest.mark.parametrize("offset", [0.0, 1e-3, 1e-6, 1e-9])
def test_the_smoothed_kl_and_its_gradient_are_accurate_near_its_exact_minimum(delta, offset):
    """Logits at the smoothed labels' exact fit plus ``offset`` noise: the loss against a
    100-digit reference to 1e-8 relative (1e-5 at about 1e-21, offset 1e-9, where the
    smoothed cross-entropy less its entropy would read rounding noise of 1e-18), its gradient ``p - q`` to 1e-8
    relative of its largest entry (the same tolerance), and the exact fit 0, never negative."""
    from gaugedyn.experiments.adam_stability._batched import smoothed_kl

    g = torch.Generator().manual_seed(int(offset * 1e9) + int(delta * 1e4))
    y = torch.tensor([3, 0, 9, 3, 5])
    margin = math.log((1 - delta) * 9 / delta)
    z = torch.randn(5, 1, generator=g, dtype=torch.float64) * 3 + torch.zeros(5, 10)
    z[torch.arange(5), y] += margin
    z = z + offset * torch.randn(5, 10, generator=g, dtype=torch.float64)
    z.requires_grad_(True)
    loss = smoothed_kl(z, y, delta)
    (grad,) = torch.autograd.grad(loss, z)
    want, want_grad = _mp_kl(z.detach().numpy(), y.numpy(), delta)
    assert float(loss.detach()) >= 0
    if offset:
        # the error of u = log p - log q is about 1e-16 |z|: relative 2e-15 / offset in the KL
        rtol = max(1e-8, 1e-14 / offset)
        assert abs(float(loss.detach()) - float(want)) <= rtol * float(want)
        scale = np.abs(want_grad).max()
        np.testing.assert_allclose(grad.numpy(), want_grad, rtol=0, atol=rtol * scale)
    else:
        assert float(loss.detach()) <= 1e-28
    with pytest.raises(InputError, match=r"delta=0\.95 is not allowed"):
        smoothed_kl(z, y, 0.95)


def test_the_smoothed_task_is_the_digits_network_under_the_smoothed_kl():
    """`SmoothedDigitsMLP`'s loss and gradients are those of `smoothed_kl` on `BatchedMLP`'s
    logits (autograd on a separate graph), and its training steps run through the batched
    runner; an unknown task is refused."""
    from gaugedyn.experiments.adam_stability._batched import (
        SMOOTHED_TASKS,
        SmoothedDigitsMLP,
        smoothed_kl,
        task_model,
    )

    m = task_model("digits_ls3", 2, [5, 6], 32, hidden=8)
    assert isinstance(m, SmoothedDigitsMLP) and m.delta == SMOOTHED_TASKS["digits_ls3"]
    ref = BatchedMLP("digits_ce", 2, [5, 6], 32, hidden=8)
    for p, q in zip(m.params, ref.params):
        assert torch.equal(p, q)
    ps = [p.detach().clone().requires_grad_(True) for p in ref.params]
    W1, b1, W2, b2 = ps
    want = smoothed_kl(torch.relu(ref.X @ W1 + b1) @ W2 + b2, ref.y, 1e-3)
    wg = torch.autograd.grad(want.sum(), ps)
    L, grads = m.losses_and_grads(m.params)
    torch.testing.assert_close(L, want.detach(), rtol=1e-12, atol=0)
    for a, b in zip(grads, wg):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    adam_step_sets(m, 1e-2, 0.9, 0.99, 50, [5])
    assert float(m.losses().detach().max()) < float(want.detach().min())
    with pytest.raises(InputError, match="task='digits_ce' is not allowed"):
        SmoothedDigitsMLP("digits_ce", 1, [0])


def test_a_candidate_stopped_on_its_diagnostics_is_passed_over_and_its_reading_drawn(
    monkeypatch,
):
    """The four weight-decay candidates failing (two rows, no edge), ``digits_ls3`` not piloted
    and ``digits_ls2`` meeting the property: the choice is ``digits_ls2`` while ``digits_ls3``
    is stopped, none (``digits_ls3`` undecided) when it is not; the page draws a stopped
    candidate's diagnostic cells, counted."""
    fail = _wall_pilot(0, rows=2)["candidates"]["digits_ce_wd"]
    meet = _wall_pilot(2)["candidates"]["digits_ce_wd"]
    names = [n for n in _family.WALL_CANDIDATES if n.startswith("digits_ce_wd")]
    p = _wall_pilot(0) | {"candidates": {n: fail for n in names} | {"digits_ls2": meet}}
    monkeypatch.setattr(_family, "WALL_STOPPED", {"digits_ls3": "stopped"})
    assert _family_wall.wall_choose(p) == "digits_ls2"
    monkeypatch.setattr(_family, "WALL_STOPPED", {})
    assert _family_wall.wall_choose(p) is None
    monkeypatch.setattr(_family, "WALL_STOPPED", {"digits_ls3": "stopped"})
    p["diagnostics"] = [
        {"label": "smoothing", "a": a, "c": 0.1, "eps": 1e-8, "weight_decay": 0.0,
         "task": "digits_ls3", "steps": 9, "status": [0] * 7 + [1],
         "settled_median_log10_loss": [lv] * 8, "max_rise": [r] * 8,
         "trace": [[-3.0] * 10] * 8, "cpu_seconds": 1}
        for a, lv, r in ((0.3, -5.0, 0.2), (0.1, -6.5, 2.5))
    ]  # fmt: skip
    text = "\n".join(_family_wall.wall_pilot_markdown(p))
    assert (
        "`digits_ls3` (MLP 64-32-10 on 64 digits, cross-entropy to the labels smoothed by "
        "0.001, read as its excess over its minimum, KL(q || p), $\\mathrm{lr} = 0.01$, Adam's "
        "eps 1e-08): stopped (2 diagnostic cells, rows 0.3, 0.1: 2 of 16 runs spiky, settled "
        "log10 KL -6.5 to -5, largest settled rise 2.5 decades)."
    ) in text


def test_a_stopped_weight_decay_candidate_is_drawn_with_its_own_diagnostic_cells(monkeypatch):
    """A diagnostic cell names its candidate (stored as ``task``): a stopped weight-decay
    candidate is drawn with its decay, its loss read as a loss (not a KL) and only the cells
    that name it, not those of another candidate on the same task program."""
    monkeypatch.setattr(_family, "WALL_STOPPED", {"digits_ce_wd03": "stopped"})

    def cell(task, a, lv, status):
        z = {"label": "x", "a": a, "c": 0.01, "eps": 1e-30, "weight_decay": 0.3, "steps": 9,
             "status": status, "settled_median_log10_loss": [lv] * 8, "max_rise": [0.5] * 8,
             "trace": [[-3.0] * 10] * 8, "cpu_seconds": 1}  # fmt: skip
        return z | ({"task": task} if task else {})

    p = _wall_pilot(0) | {
        "diagnostics": [
            cell(None, 0.3, -12.0, [1] * 8),
            cell("digits_ce_wd05", 0.2, -20.0, [1] * 8),
            cell("digits_ce_wd03", 0.3, -25.0, [0] * 7 + [1]),
            cell("digits_ce_wd03", 0.1, -27.0, [0] * 8),
        ]
    }
    text = "\n".join(_family_wall.stopped_markdown(p))
    assert text == (
        "The core-wall candidate `digits_ce_wd03` (MLP 64-32-10 on 64 digits, cross-entropy, "
        "$\\mathrm{lr} = 0.01$, Adam's eps 1e-30, decoupled weight decay 0.3): stopped (2 "
        "diagnostic cells, rows 0.3, 0.1: 1 of 16 runs spiky, settled log10 loss -27 to -25, "
        "largest settled rise 0.5 decades).\n"
    )


def test_the_teacher_kl_task_is_realizable_and_its_loss_the_soft_kl():
    """`TeacherKLMLP`: the teacher's median margin is the declared one; a student set to the
    teacher (its four units, the rest zero) has KL 0 to float64 precision and zero gradient,
    its random initialisation a positive KL equal to `soft_kl` written out against the
    targets' own ``-sum q log p - H(q)``; the data and teacher follow ``data_seed``; Adam
    lowers the loss; the task is `task_model`'s; bad input is refused."""
    from gaugedyn.experiments.adam_stability._batched import (
        TEACHER_KL_MARGIN,
        TEACHER_KL_WIDTH,
        TeacherKLMLP,
        soft_kl,
        task_model,
        teacher_soft_targets,
    )

    X, logq, teacher = teacher_soft_targets(256, 7)
    top = logq.topk(2, dim=-1).values
    assert float((top[:, 0] - top[:, 1]).median()) == pytest.approx(TEACHER_KL_MARGIN)
    m = task_model("teacher_kl", 3, [1, 2, 3], 256, data_seed=7, hidden=6)
    assert isinstance(m, TeacherKLMLP) and torch.equal(m.X, X) and torch.equal(m.logq, logq)
    assert [tuple(p.shape) for p in m.params] == [(3, 20, 6), (3, 1, 6), (3, 6, 10), (3, 1, 10)]
    pad = 6 - TEACHER_KL_WIDTH
    exact = [
        torch.nn.functional.pad(teacher[0], (0, pad)),
        torch.nn.functional.pad(teacher[1], (0, pad)),
        torch.nn.functional.pad(teacher[2], (0, 0, 0, pad)),
        teacher[3],
    ]
    at = [torch.stack([p] * 3).requires_grad_(True) for p in exact]
    L = m.losses(at)
    assert float(L.detach().abs().max()) < 1e-28
    grads = torch.autograd.grad(L.sum(), at)
    assert max(float(g.abs().max()) for g in grads) < 1e-13
    L0 = m.losses().detach()
    W1, b1, W2, b2 = (p.detach() for p in m.params)
    logp = torch.log_softmax(torch.relu(X @ W1 + b1) @ W2 + b2, dim=-1)
    q = logq.exp()
    want = (-(q * logp).sum(-1) + (q * logq).sum(-1)).mean(-1)
    torch.testing.assert_close(L0, want, rtol=1e-10, atol=0)
    assert float(L0.min()) > 0
    torch.testing.assert_close(L0, soft_kl(torch.relu(X @ W1 + b1) @ W2 + b2, logq))
    other = TeacherKLMLP("teacher_kl", 1, [1], 256, data_seed=8, hidden=6)
    assert not torch.equal(other.X, X)
    adam_step_sets(m, 1e-2, 0.9, 0.99, 100, [5])
    assert float(m.losses().detach().max()) < 0.5 * float(L0.min())
    with pytest.raises(InputError, match="task='teacher_mse' is not allowed"):
        TeacherKLMLP("teacher_mse", 1, [0])
    with pytest.raises(InputError, match="n_samples=1 is not allowed"):
        teacher_soft_targets(1, 0)


def test_the_binary_smoothed_task_is_gauss_memo_s_students_under_a_smoothed_binary_kl():
    """`GaussianSmoothedMLP`: ``gauss_memo``'s inputs and initialisation, labels the signs of
    its targets; the loss is the two-class `smoothed_kl` of the logits ``(0, z)``, equal to the
    binary KL written out; 0 with zero gradient exactly where every margin is ``log((1 -
    delta) / delta)`` (the student's output bias set so on one input); bad input refused."""
    from gaugedyn.experiments.adam_stability._batched import (
        GAUSS_SMOOTHED_TASKS,
        GaussianMemorisationMLP,
        GaussianSmoothedMLP,
        task_model,
    )

    m = task_model("gauss_ls3", 2, [5, 6], 64, data_seed=3, hidden=8)
    ref = GaussianMemorisationMLP("gauss_memo", 2, [5, 6], 64, data_seed=3, hidden=8)
    assert isinstance(m, GaussianSmoothedMLP) and torch.equal(m.X, ref.X)
    assert torch.equal(m.y, (ref.y[:, 0] > 0).long()) and 0 < int(m.y.sum()) < 64
    for p, q in zip(m.params, ref.params):
        assert torch.equal(p, q)
    d = GAUSS_SMOOTHED_TASKS["gauss_ls3"]
    W1, b1, W2, b2 = (p.detach() for p in m.params)
    z = (torch.relu(m.X @ W1 + b1) @ W2 + b2)[..., 0]
    q1 = (1 - d) * (m.y == 1).double() + d * (m.y == 0).double()
    p1 = torch.sigmoid(z)
    want = (q1 * torch.log(q1 / p1) + (1 - q1) * torch.log((1 - q1) / (1 - p1))).mean(-1)
    torch.testing.assert_close(m.losses().detach(), want, rtol=1e-9, atol=1e-15)
    one = GaussianSmoothedMLP("gauss_ls3", 1, [0], 1, data_seed=3, hidden=4)
    sign = 1.0 if int(one.y[0]) == 1 else -1.0
    at = [torch.zeros_like(p) for p in one.params]
    at[3] = torch.full_like(at[3], sign * math.log((1 - d) / d)).requires_grad_(True)
    L = one.losses(at)
    assert float(L.detach()[0]) < 1e-28
    (g,) = torch.autograd.grad(L.sum(), [at[3]])
    assert float(g.abs().max()) < 1e-15
    assert float(one.losses([*at[:3], at[3].detach() + 0.1]).detach()[0]) > 1e-6
    with pytest.raises(InputError, match="task='gauss_memo' is not allowed"):
        GaussianSmoothedMLP("gauss_memo", 1, [0], hidden=8)
    with pytest.raises(InputError, match="hidden=None is not allowed"):
        GaussianSmoothedMLP("gauss_ls3", 1, [0])

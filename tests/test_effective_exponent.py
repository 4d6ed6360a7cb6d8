"""The effective exponent of a loss along an update (gaugedyn.adam.effective_exponent), its
known-answer controls, and adam_edge's core-wall finding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gaugedyn._errors import InputError
from gaugedyn.adam import core_wall, effective_exponent


@pytest.mark.parametrize("n", [2.0, 3.0, 4.0, 6.0])
def test_a_power_reads_its_exponent_around_an_offset_minimum(n):
    e = effective_exponent(lambda s: abs(s + 0.7) ** n / n)
    assert e["exponent"] == pytest.approx(n, abs=1e-6)
    assert e["exponent_sides"] == pytest.approx([n, n], abs=1e-5)
    assert e["s_min"] == pytest.approx(-0.7, abs=1e-5)


def test_the_core_wall_reads_two_inside_the_core_and_more_at_the_wall():
    inside = effective_exponent(core_wall(5.0, 1e3))
    assert inside["exponent"] == pytest.approx(2.0, abs=1e-9) and math.isnan(inside["wall"])
    for w in (0.05, 0.2, 0.5):
        e = effective_exponent(core_wall(w, 1e3))
        assert e["exponent"] > 2.5
        assert w / 2 <= e["wall"] <= 2 * w  # the local exponent turns up at the wall
        assert np.all(e["local"][e["s"][1:] < w / 1.5] == pytest.approx(2.0, abs=0.02))


def test_bad_arguments_are_refused_before_any_evaluation():
    calls = []
    with pytest.raises(InputError, match="lo="):
        effective_exponent(lambda s: calls.append(s) or s * s, lo=2.0)
    assert calls == []


def test_the_controls_pass_and_a_fit_that_skips_the_line_minimum_fails():
    from gaugedyn.experiments.adam_stability._edge_controls import exponent_controls

    def at_zero(f, **kw):  # the rise measured from s = 0 instead of the line minimum
        s = np.geomspace(1 / 32, 1, 12)
        rise = np.array([[f(-x) - f(0.0) for x in s], [f(x) - f(0.0) for x in s]])
        both = np.abs(rise).sum(axis=0)
        slope = float(np.polyfit(np.log(s), np.log(both), 1)[0])
        return {"exponent": slope, "wall": math.nan}

    def failed(controls):
        out = set()
        for c in controls:
            r = c.run()
            if not (r[1] if isinstance(r, tuple) else r.passed):
                out.add(c.id)
        return out

    assert failed(exponent_controls()) == set()
    assert {"exponent.power", "exponent.core_wall"} <= failed(exponent_controls(at_zero))


def test_core_wall_finding_holds_and_fails_on_built_exponents():
    from gaugedyn.experiments.adam_stability._edge_analysis import _exponent_finding

    rng = np.random.default_rng(0)
    high = 3.0 + 0.2 * rng.standard_normal(10)
    two = 2.0 + 0.05 * rng.standard_normal(10)
    assert _exponent_finding("ce_noisy:lr0.01:b0.9:b20.99", high, None, 7).verdict == "HELD"
    assert (
        _exponent_finding("ce_noisy:lr0.01:b0.9:b20.99", two - 0.3, None, 7).verdict == "NOT HELD"
    )
    assert _exponent_finding("mse:lr0.01:b0.9:b20.99", high, None, 7).verdict == "NOT HELD"
    assert _exponent_finding("mse:lr0.01:b0.9:b20.99", two - 0.3, None, 7).verdict == "HELD"


def test_core_wall_finding_reads_both_thresholds_the_declared_one_first():
    """Each side judged at 2 and at 2 + EXPONENT_MARGIN (a set-up constant the paper does not
    fix): an exponent of 2.1 exceeds 2 but not 2.25 on the cross-entropy side, and an
    exponent of 2.0 lies below 2.25 but not below 2 on the mean-squared side: the verdict
    depends on the reading, each reading stored, the declared one primary."""
    from gaugedyn.experiments.adam_stability._edge_analysis import _exponent_finding
    from gaugedyn.experiments.adam_stability._protocol import EXPONENT_MARGIN

    rng = np.random.default_rng(0)
    hi = f"threshold {2 + EXPONENT_MARGIN:g}"
    ce = _exponent_finding("ce_noisy:lr0.01:b0.9:b20.99", 2.1 + 0.01 * rng.standard_normal(10),
                           None, 7)  # fmt: skip
    assert ce.readings == {"threshold 2": "HELD", hi: "NOT HELD"}
    assert (
        ce.verdict == "depends on the reading" and ce.tolerance["primary_reading"] == "threshold 2"
    )
    assert ce.tolerance["threshold"] == 2.0 and "threshold 2: HELD" in ce.statement
    two = 2.0 + 0.05 * rng.standard_normal(10)
    mse = _exponent_finding("mse:lr0.01:b0.9:b20.99", two, None, 7)
    assert mse.readings[hi] == "HELD" and mse.readings["threshold 2"] != "HELD"
    assert mse.verdict == "depends on the reading" and mse.tolerance["primary_reading"] == hi
    assert list(mse.readings) == [hi, "threshold 2"]


def test_the_line_is_along_adams_own_update():
    """s = 1 on the measured line is the iterate torch.optim.Adam steps to."""
    import torch

    from gaugedyn.adam import adam_preconditioner
    from gaugedyn.experiments.adam_stability._edge import (
        _adam_update,
        _flat,
        _line,
        _setup,
    )

    model, fn = _setup("mse", 32, 3)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=1e-2, betas=(0.9, 0.99), eps=1e-8)
    for _ in range(4):
        opt.zero_grad()
        fn().backward()
        opt.step()
    theta = _flat(params).detach().clone()
    g_list = torch.autograd.grad(fn(), params)
    g = _flat(g_list).detach()
    P = adam_preconditioner(opt, list(g_list))
    u = _adam_update(opt, params, g, P, 1e-2, 0.9)
    line = _line(model, fn, params, theta, u)
    for p, gi in zip(params, g_list):
        p.grad = gi.detach()
    opt.step()
    after = _flat(params).detach()
    torch.testing.assert_close(theta + u, after, rtol=1e-10, atol=1e-12)
    assert line(1.0) == pytest.approx(float(fn().detach()), rel=1e-10)
    assert torch.equal(_flat(params).detach(), after)  # the line leaves the parameters alone

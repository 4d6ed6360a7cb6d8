"""Properties of the findings' analysis glue written for generated mutants that survived the
suite (``tools/mutate.py --generated --select coverage``; the record is
``tools/mutation-data/generated.json``): each fails on the mutant named beside it."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn import stats
from gaugedyn.experiments.auxiliary import _analysis as aux
from gaugedyn.experiments.auxiliary import _protocol as aux_pc


@pytest.mark.parametrize(
    ("fid", "form", "threshold", "side"),
    [
        # every cell claimed above 0; an error claimed below its tolerance; a band
        ("fdt.sim.erf", "every_cell", 0.0, ">"),
        ("forcing_noise.balance", "every_cell", 0.0, ">"),
        ("fdt.ode.erf", "threshold", aux_pc.FDT_ODE_TOLERANCE, "<"),
        ("fdt.single_task.erf", "inside", (0.9, 1.1), "inside"),
    ],
)
def test_a_reading_without_values_is_judged_on_its_claims_side(fid, form, threshold, side):
    # findings:_analysis:62:54:comparison (auxiliary: the side of an every-cell claim reversed)
    kept = stats.judge("deterministic", np.array([0.5]), threshold=1.0, direction="<")
    out = aux._filled(
        {"kept": kept, "gone": "no values: the runs diverged"}, fid, form, threshold, 0
    )
    assert out["kept"] is kept
    j = out["gone"]
    assert j.verdict == "UNRESOLVED" and j.n == 0
    assert j.direction == side
    # the stored judgement recomputes from what it stores
    again = stats.judge(
        j.rule,
        np.empty((0, 1)) if stats.RULES[j.rule].cells else np.empty(0),
        threshold=j.threshold,
        direction=None if side == "inside" else side,
        rng=np.random.default_rng(0) if stats.RULES[j.rule].randomised else None,
    )
    assert (again.verdict, again.direction) == (j.verdict, j.direction)


def test_a_boundary_statement_lists_the_readings_beside_the_primary_one():
    # findings:_spike_analysis:199:87:comparison (the primary reading listed as the other)
    from gaugedyn.experiments.adam_stability._spike_analysis import _task_claim

    a = np.array([0.5, 0.4, 0.3, 0.2, 0.15, 0.1])
    edges = {
        ("t", "settled", "init"): 0.5 * a,
        ("t", "transient", "init"): 3 * a**3,  # a different slope: a different estimate
    }
    c = _task_claim("t", a, edges)
    slopes = c.tolerance["slopes"]
    primary = next(k for k in slopes if f"slope ({k})" in c.statement)
    others = c.statement.split("other readings: ")[1].split("; C = ")[0]
    listed = [part.split(": ")[0] for part in others.split("; ")]
    assert listed == [k for k in slopes if k != primary]
    for k in listed:
        assert f"{k}: {slopes[k][0]:.3g} [" in others

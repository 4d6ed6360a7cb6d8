"""Known-answer controls of ``conservation_laws``'s instruments, run before any task.

These are the experiment's only judgement of its instruments (the run holds no second, in-run
copy of them); a control that misreads its known case stops the run before any work:

- the **count** (`gaugedyn.gauge.conservation_laws()`, at the run's ``points``, ``rtol``
  and ``vector_std``), every count a stable decision (the generic count reached, a
  singular-value gap of at least ``MIN_GAP``): the square two-layer linear network of width 2
  has ``K(K+1)/2 = 3`` laws (positive), and the same count from the fields' span alone
  (brackets skipped) reads ``K^2 = 4`` (negative: without the Lie closure the known answer is
  missed); the bias-free two-layer ReLU network has 3 laws (positive) and none once its ReLU is
  bent (``relu(z) + eps z^2``, ``eps`` the run's ``perturbation``; negative);
- the **rank decision** (`gaugedyn.gauge.decide_rank()`) on the planted spectrum
  ``(1, 0.5, 0.1, 1e-3, 1e-7)``: rank 5 at ``rtol = 1e-9`` with a gap of at least ``MIN_GAP``
  (the ``1e-7`` direction counted, positive) and rank 4 at ``rtol = 1e-6`` with the gap
  ``1e-3 / 1e-7 = 1e4`` (below the tolerance, not counted: negative);
- the **drift-slope fit** (``_drift.slope_control``, reading ``steps``, at the run's
  ``drift_seeds`` seeds, judged by the drift findings' own rule on the steps band): a law that
  drifts only at second order in the step (the scalar chain ``a w x``) is HELD inside the band
  (positive); a quantity that is no law (``|W|^2`` before a LayerNorm with ``eps = 1``) drifts
  at first order, slope 1, NOT HELD (negative).
"""

from __future__ import annotations

import numpy as np

from ...harness import Control
from ...stats import generator, judge
from . import _protocol as pr
from ._analysis import slope_rule


def _laws(spec: dict, config: dict, max_depth: int | None = None) -> tuple[int, bool]:
    """``(laws, stable)`` of one count at the run's settings: stable when the generic count is
    reached and the rank decisions' gap is at least ``MIN_GAP``."""
    from ...gauge import conservation_laws
    from ._architectures import build

    net = build(spec, config["data_factor"])
    found = conservation_laws(
        net.model,
        net.inputs,
        params=net.params,
        points=config["points"],
        rtol=config["rtol"],
        vector_std=config["vector_std"],
        min_gap=pr.MIN_GAP,
        seed=0,
        **({} if max_depth is None else {"max_depth": max_depth}),
    )
    return int(found.laws), bool(found.stable) and float(found.gap) >= pr.MIN_GAP


def planted_ranks() -> dict:
    """The rank decision on planted spectra: rank 5 with a genuine ``1e-7`` direction above the
    float64 floor (gap near ``1e-7 / (eps s_1 max(shape))``), and rank 4 at ``rtol = 1e-6``
    (gap ``1e-3 / 1e-7 = 1e4``)."""
    import torch

    from ... import gauge

    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    v, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    s = np.zeros((12, 8))
    s[range(5), range(5)] = pr.PLANTED
    a = torch.from_numpy(u @ s @ v.T)
    fine, _ = gauge.decide_rank(a, 1e-9)
    coarse, _ = gauge.decide_rank(a, 1e-6)
    return {
        "planted_rank": np.array([fine.rank, coarse.rank], dtype=float),
        "planted_gap": np.array([fine.gap, coarse.gap]),
    }


def _rank(rtol: float) -> tuple[int, float]:
    out = planted_ranks()
    i = [1e-9, 1e-6].index(rtol)
    return int(out["planted_rank"][i]), float(out["planted_gap"][i])


def _slope(config: dict, broken: bool, id: str):
    """The slope fit at ``drift_seeds`` seeds, judged by the drift findings' rule on the steps
    band: ``[verdict, estimate, low, high]``."""
    from . import _drift as dr

    slopes = [
        dr.slope_control(config["eta0"], config["drift_sizes"], config["drift_steps"], s, broken)[
            "slope"
        ]
        for s in range(config["drift_seeds"])
    ]
    v = judge(
        slope_rule(),
        slopes,
        threshold=pr.SLOPE_BANDS["steps"],
        rng=generator(0, "conservation_laws", id),
    )
    return [v.verdict, v.estimate, v.low, v.high]


def controls(config: dict) -> list[Control]:
    """The count's, the rank decision's and the slope fit's controls (module doc)."""
    lo, hi = pr.SLOPE_BANDS["steps"]
    bent = pr.CONTROL_BENT | {"eps": config["perturbation"]}
    intact = {**pr.CONTROL_BENT, "family": "relu2"}
    rule = slope_rule()
    count = "law count (conservation_laws)"
    rank = "rank decision (decide_rank)"
    slope = "drift-slope fit (drift_rates, steps)"
    stable = f"; the count a stable decision (gap >= {pr.MIN_GAP:g})"
    return [
        Control(
            "count.known",
            count,
            "positive",
            "square two-layer linear network of width 2: K(K+1)/2 = 3 laws" + stable,
            "the count finds the laws a known symmetry gives",
            lambda: (r := _laws(pr.CONTROL_KNOWN, config), r == (3, True)),
        ),
        Control(
            "count.brackets",
            count,
            "negative",
            "the same network counted from the fields' span alone (brackets skipped): "
            "K^2 = 4, not 3" + stable,
            "the Lie closure is what makes the count",
            lambda: (r := _laws(pr.CONTROL_KNOWN, config, 1), r == (4, True)),
        ),
        Control(
            "count.intact",
            count,
            "positive",
            "bias-free two-layer ReLU network: its rescalings give 3 laws" + stable,
            "the laws the bent network loses are there before the bending",
            lambda: (r := _laws(intact, config), r == (3, True)),
        ),
        Control(
            "count.bent",
            count,
            "negative",
            "the same network with its ReLU bent (relu(z) + eps z^2): no law" + stable,
            "the count finds none where the symmetry is broken",
            lambda: (r := _laws(bent, config), r == (0, True)),
        ),
        Control(
            "rank.fine",
            rank,
            "positive",
            "planted spectrum (1, 0.5, 0.1, 1e-3, 1e-7) at rtol 1e-9: rank 5, gap >= "
            f"{pr.MIN_GAP:g}",
            "a small but genuine direction is counted",
            lambda: (r := _rank(1e-9), r[0] == 5 and r[1] >= pr.MIN_GAP),
        ),
        Control(
            "rank.coarse",
            rank,
            "negative",
            "the same spectrum at rtol 1e-6: rank 4 (the 1e-7 direction below tolerance), "
            "gap 1e-3 / 1e-7 = 1e4 (within 1e3 to 1e5)",
            "a direction below the tolerance is not counted",
            lambda: (r := _rank(1e-6), r[0] == 4 and 1e3 <= r[1] <= 1e5),
        ),
        Control(
            "slope.second_order",
            slope,
            "positive",
            f"scalar chain a w x, whose a^2 - w^2 drifts at second order, at drift_seeds seeds: "
            f"HELD inside [{lo}, {hi}] by the drift findings' rule ({rule})",
            "the fit and the findings' rule read a second-order drift as one",
            lambda: (r := _slope(config, False, "slope.second_order"), r[0] == "HELD"),
        ),
        Control(
            "slope.first_order",
            slope,
            "negative",
            f"|W|^2 before a LayerNorm with eps = 1 (no law), at drift_seeds seeds: slope near "
            f"1, NOT HELD inside [{lo}, {hi}] by the drift findings' rule ({rule})",
            "a first-order drift is not read as a law's",
            lambda: (r := _slope(config, True, "slope.first_order"), r[0] == "NOT HELD"),
        ),
    ]

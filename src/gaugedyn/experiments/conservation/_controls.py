"""Known-answer controls of ``conservation_laws``'s instruments, run before any task.

The run also judges these cases as checks (``control.*``) from its own tasks; declared here,
they stop a run before any work when an instrument misreads a known case:

- the **count** (`gaugedyn.gauge.conservation_laws()`, at the run's ``points``, ``rtol``
  and ``vector_std``): the square two-layer linear network of width 2 has ``K(K+1)/2 = 3``
  laws (positive); the bias-free two-layer network with its ReLU bent (``relu(z) + eps z^2``,
  ``eps`` the run's ``perturbation``) has none (negative);
- the **rank decision** (`gaugedyn.gauge.decide_rank()`) on the planted spectrum
  ``(1, 0.5, 0.1, 1e-3, 1e-7)``: rank 5 at ``rtol = 1e-9`` (the ``1e-7`` direction counted,
  positive) and rank 4 at ``rtol = 1e-6`` (below the tolerance, not counted: negative);
- the **drift-slope fit** (``_drift.slope_control``, reading ``steps``, one seed): a law that
  drifts only at second order in the step (the scalar chain ``a w x``) has slope 2, inside
  the band (positive); a quantity that is no law (``|W|^2`` before a LayerNorm with ``eps =
  1``) drifts at first order, slope 1, outside it (negative).
"""

from __future__ import annotations

import numpy as np

from ...harness import Control
from . import _protocol as pr


def _laws(spec: dict, config: dict) -> int:
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
    )
    return int(found.laws)


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


def _rank(rtol: float) -> int:
    return int(planted_ranks()["planted_rank"][[1e-9, 1e-6].index(rtol)])


def _slope(config: dict, broken: bool) -> float:
    from . import _drift as dr

    res = dr.slope_control(config["eta0"], config["drift_sizes"], config["drift_steps"], 0, broken)
    return float(res["slope"])


def controls(config: dict) -> list[Control]:
    """The count's, the rank decision's and the slope fit's controls (module doc)."""
    lo, hi = pr.SLOPE_BANDS["steps"]
    bent = pr.CONTROL_BENT | {"eps": config["perturbation"]}
    return [
        Control(
            "count.known",
            "law count (conservation_laws)",
            "positive",
            "square two-layer linear network of width 2: K(K+1)/2 = 3 laws",
            "the count finds the laws a known symmetry gives",
            lambda: (n := _laws(pr.CONTROL_KNOWN, config), n == 3),
        ),
        Control(
            "count.bent",
            "law count (conservation_laws)",
            "negative",
            "two-layer network with its ReLU bent (relu(z) + eps z^2): no law",
            "the count finds none where the symmetry is broken",
            lambda: (n := _laws(bent, config), n == 0),
        ),
        Control(
            "rank.fine",
            "rank decision (decide_rank)",
            "positive",
            "planted spectrum (1, 0.5, 0.1, 1e-3, 1e-7) at rtol 1e-9: rank 5",
            "a small but genuine direction is counted",
            lambda: (r := _rank(1e-9), r == 5),
        ),
        Control(
            "rank.coarse",
            "rank decision (decide_rank)",
            "negative",
            "the same spectrum at rtol 1e-6: rank 4 (the 1e-7 direction below tolerance)",
            "a direction below the tolerance is not counted",
            lambda: (r := _rank(1e-6), r == 4),
        ),
        Control(
            "slope.second_order",
            "drift-slope fit (drift_rates, steps)",
            "positive",
            f"scalar chain a w x, whose a^2 - w^2 drifts at second order: slope in [{lo}, {hi}]",
            "the fit reads a second-order drift as one",
            lambda: (s := _slope(config, False), lo <= s <= hi),
        ),
        Control(
            "slope.first_order",
            "drift-slope fit (drift_rates, steps)",
            "negative",
            f"|W|^2 before a LayerNorm with eps = 1 (no law): slope near 1, outside [{lo}, {hi}]",
            "a first-order drift is not read as a law's",
            lambda: (s := _slope(config, True), not lo <= s <= hi),
        ),
    ]

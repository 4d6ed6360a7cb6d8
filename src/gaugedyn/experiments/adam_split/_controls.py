"""Known-answer controls of the tied-beta Adam experiments' instruments (``PROTOCOL.md``).

``beta_grid`` reads each run through `._grid.run_measures()` (the shares of Adam's update
split, sign dominance, roughness, the divergence flag) from the recorder's per-step sums;
``gauge_under_adam`` reads the gauge gap (`._gauge_analysis.gap_per_seed()`,
``log(t_w / t_a)``) and the owner outcomes (`._gauge_analysis.owner_outcomes()`). Cases:

- **update-split readout**: per-step sums with the sign part 90% of the squared split, the lag
  5% and the remainder 5% read shares 0.9 / 0.05 / 0.05; sums with no lag read a lag share 0;
- **roughness**: update norms alternating by a factor ``e^0.25`` read a roughness of 1 (second
  differences ``4 x 0.25``); a geometric decay reads 0;
- **divergence flag**: a run with a non-finite step, or a final loss above its initial one, is
  diverged; a clean run that lowered its loss is not;
- **gauge gap**: specialization times ``t_w = e t_a`` read a gap of 1 per seed; equal times read
  0; a seed where neither specialised reads ``nan``;
- **owner outcomes**: owner counts (2, 0) of two configurations at two seeds read the outcomes
  (1, 1, 0, 0); no owner reads all zeros.
"""

from __future__ import annotations

import math

import numpy as np

from ...adam import READING_SUMS
from ...harness import Control


def _sums(sign: float, lag: float, residual: float, steps: int = 40) -> dict:
    col = dict.fromkeys(READING_SUMS, 0.0)
    for r in ("current", "memory"):
        col[f"sign_{r}"] = sign
        col[f"residual_{r}"] = residual
        col[f"dot_update_sign_{r}"] = sign
    col |= {"lag": lag, "update": sign + lag + residual, "count": 10.0}
    row = np.array([col[k] for k in READING_SUMS])
    return {
        "sums": np.tile(row, (steps, 1)),
        "final_loss": 0.5,
        "initial_loss": 1.0,
        "nonfinite_step": -1,
    }


def grid_controls(config: dict) -> list[Control]:
    """``beta_grid``'s controls (module doc)."""
    from ._grid import roughness, run_measures

    skip = float(config["skip"])

    def shares(s, lag, res, expect):
        m = run_measures(_sums(s, lag, res), skip)
        got = [
            m["share_sign_squared_current"],
            m["share_lag_squared_current"],
            m["share_residual_squared_current"],
        ]
        return got, all(abs(g - e) < 1e-12 for g, e in zip(got, expect))

    def diverged(**change):
        r = _sums(0.9, 0.05, 0.05) | change
        return run_measures(r, skip)["diverged"]

    alternating = np.exp(0.25 * (-1.0) ** np.arange(60))
    decay = np.exp(-0.1 * np.arange(60))
    return [
        Control(
            "split.sign_dominated",
            "update-split readout (run_measures)",
            "positive",
            "sign 90%, lag 5%, remainder 5% of the squared split: shares 0.9, 0.05, 0.05",
            "the readout measures each part's share of the update",
            lambda: shares(0.9, 0.05, 0.05, [0.9, 0.05, 0.05]),
        ),
        Control(
            "split.no_lag",
            "update-split readout (run_measures)",
            "negative",
            "no lag (sign 80%, remainder 20%): lag share 0",
            "an absent part reads no share",
            lambda: shares(0.8, 0.0, 0.2, [0.8, 0.0, 0.2]),
        ),
        Control(
            "roughness.alternating",
            "roughness (roughness)",
            "positive",
            "update norms alternating by e^0.25: roughness 1 (within 1e-12)",
            "the readout measures step-to-step jitter",
            lambda: (r := roughness(alternating), abs(r - 1.0) < 1e-12),
        ),
        Control(
            "roughness.decay",
            "roughness (roughness)",
            "negative",
            "a geometric decay of the update norm: roughness 0",
            "a smooth trend reads no roughness",
            lambda: (r := roughness(decay), abs(r) < 1e-12),
        ),
        Control(
            "diverged.flagged",
            "divergence flag (run_measures)",
            "positive",
            "a non-finite step; a final loss above the initial: both diverged",
            "a run that failed is set apart",
            lambda: (d := [diverged(nonfinite_step=7), diverged(final_loss=2.0)], d == [1.0, 1.0]),
        ),
        Control(
            "diverged.clean",
            "divergence flag (run_measures)",
            "negative",
            "a finite run that lowered its loss: not diverged",
            "a clean run is kept",
            lambda: (d := diverged(), d == 0.0),
        ),
    ]


def gauge_controls(config: dict) -> list[Control]:
    """``gauge_under_adam``'s controls (module doc)."""
    from ._gauge_analysis import gap_per_seed, owner_outcomes

    t_a = np.array([[1.0, 2.0, np.nan], [3.0, 4.0, np.nan]])
    mask = np.array([True, True])

    def gap(t_w):
        g = gap_per_seed({"t_spec_w": t_w[None], "t_spec_a": t_a[None]}, 0, mask)
        return [None if math.isnan(v) else float(v) for v in g]

    def outcomes(counts):
        return owner_outcomes({"owner_count": np.array([counts], float)}, 0, mask, 2).tolist()

    return [
        Control(
            "gauge_gap.e",
            "gauge gap (gap_per_seed)",
            "positive",
            "t_w = e t_a at two seeds, no specialization at a third: gaps 1, 1, nan",
            "the readout measures how much later the w-heavy copy specializes",
            lambda: (
                g := gap(math.e * t_a),
                g[2] is None and all(abs(x - 1) < 1e-12 for x in g[:2]),
            ),
        ),
        Control(
            "gauge_gap.equal",
            "gauge gap (gap_per_seed)",
            "negative",
            "equal specialization times: gaps 0",
            "equal clocks read no gap",
            lambda: (g := gap(t_a.copy()), all(abs(x) < 1e-12 for x in g[:2])),
        ),
        Control(
            "owner.counts",
            "owner outcomes (owner_outcomes)",
            "positive",
            "owner counts 2 and 0 of two configurations at two seeds: outcomes 1, 1, 0, 0",
            "each seed's ownership is read from the counts",
            lambda: (o := outcomes([2, 0]), o == [1, 1, 0, 0]),
        ),
        Control(
            "owner.none",
            "owner outcomes (owner_outcomes)",
            "negative",
            "no owner in either configuration: outcomes all 0",
            "no ownership reads none",
            lambda: (o := outcomes([0, 0]), o == [0, 0, 0, 0]),
        ),
    ]

"""The constants and rules of the adam_stability protocols (``PROTOCOL.md`` in this folder).

Fixed before any run: ``spike_boundary``'s windows, starts, status codes, bands and the scan's
rules (the settled window, the run length, a cell's spike probability, a row's upper edge);
``adam_edge``'s edge, bands and the frozen-v control's length.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...adam import (
    SPIKE_SAMPLING,
    SpikeBlocks,
    SpikeSampling,
    detect_spike_blocks,
    spike_block_rises,
    spike_block_size,
    spike_steps_needed,
)
from ...stats import Measure

# spike_boundary
CHECK_TOL = 0.05
CHECK_CELLS = ((0.1, 0.99), (0.15, 0.97), (0.15, 0.99), (0.2, 0.9), (0.2, 0.97))
"""``(1 - beta1, eps share r)`` cells of the check, each with a boundary inside ``[1e-2, 1]``
(bisection bracket; below 1e-2 a simulated rate over a few thousand steps cannot resolve
its sign)."""
SETTLE = 100
"""The settled window starts ``SETTLE (1/(1 - beta1) + 1/(1 - beta2))`` steps into a run."""
RISE_RANGE = (1.5, 2.5)
"""The declared range of the detector's rise threshold, in decades (the default 2 in its
middle): a rise of 30 to 300 times the settled level."""
BLOCK_MIN_CHOICES = (24, 48)
"""The declared fewest steps per block: 24 (the default: white log-noise of one decade reads
quiet) and twice that."""
BLOCKS_PER_HORIZON_CHOICES = (100, 400)
"""The declared alternatives of blocks per horizon beside the default 200: a settled cycle of a
few hundredths of 1/(1 - beta2) steps spans 3 to 12 blocks."""
BETA1_ROWS = 0.1
"""The primary row set: ``1 - beta1 <= BETA1_ROWS`` (beta1 >= 0.9)."""
BANDS = {"linear": (0.5, 1.5), "cubic": (2.0, 4.0)}
C_SHIFT = 0.2
STARTS = ("orbit", "generic")
WINDOWS = ("settled", "transient")
ROWSETS = ("beta1>=0.9", "all rows")
CODES = {"quiet": 0, "spiky": 1, "undetermined": 2, "diverged": 3, "not judged": 4, "untrained": 6}
NOT_SIMULATED = 5
"""Status code of a cell below its row's boundary (the scan stopped above it)."""
TRAINED_DECADES = 3.0
"""A task's copy is ``untrained`` (left out, counted apart, under both windows) when the median
``log10`` loss of its settled window is not at least this many decades below its initial loss:
it sits on a plateau and has not reached the regime the claim is about."""


ADAM_EPS = 1e-8
"""Adam's ``eps`` where a task or call gives none (``torch.optim.Adam``'s default): the network
tasks, the batched Adam programs, the edge-of-stability runs and their frozen copies."""


TASK_DESIGN: dict[str, Any] = {
    "one_minus_beta1": [0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01],
    "one_minus_beta2": [float(f"{v:.4g}") for v in np.logspace(-3, -0.5, 11)],
    "seeds": 8,
}
"""The network tasks' scan (issue 42, declared before its run; ``PROTOCOL.md``): rows ``1 -
beta1`` down to 0.01, columns ``1 - beta2`` a quarter decade apart from ``1e-3`` (the lowest a
settled run of about ``1.2e5`` steps allows) to ``10^-0.5``, 8 seeds a cell. Chosen by the
design check (`._detector_controls.task_design_verdicts()`): on boundaries known to be linear
at ``DESIGN_C``, read as the tasks read theirs, at least ``DESIGN_ROWS`` rows hold an edge and
the slope rule says HELD in at least ``DESIGN_POWER`` of the draws (a property of the design,
not of any task's outcome)."""
SCAN_DESIGN: dict[str, Any] = {
    "one_minus_beta1": [0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.01],
    "one_minus_beta2": TASK_DESIGN["one_minus_beta2"],
    "seeds": 8,
    "bracket_stride": 2,
}
"""The network tasks' third design (issue 42, declared 2026-12-07 before its pilot;
``PROTOCOL.md``): `TASK_DESIGN`'s columns and seeds, read by the scan of the 1-D maps instead
of every cell (`_scan._scan_task`: per row the half-decade columns ``bracket_stride`` apart
from the top down, stopping after the first cell spiky under every reading, then bisection on
the quarter-decade columns between; the cells below a row's first spiky one do not enter its
upper edge, and were 60-75% of the second design's steps). Rows: `TASK_DESIGN`'s, less 0.02
and 0.03 (rows that the second design's pilot found never spiky above ``1e-3`` cost the most,
about 1.6e6 copy-steps each, and 0.01 keeps the issue's floor), plus 0.4 and 0.15 (the
calibrated first design's rows) and 0.07 (the gap between 0.1 and 0.05): rows whose edge can
lie inside the columns the run length allows (``c_b`` above ``1e-3``), so that at least
`DESIGN_ROWS` rows hold an edge -- the defining property, chosen from the pilots' rows with and
without an edge and from cost, not from any slope. Row 0.03 was dropped after this design's
pilot (``task_pilot.json``, which ran it: never spiky above ``1e-3`` in either task): with it the
full run's estimate was about 15.4 minutes on two cores, over the bar; without it, about 14."""
DESIGN_C = 0.0647
"""The design check's reference ``C = c_b / (1 - beta1)``: ``teacher_mse``'s settled ``C`` of
the run published before the redesign (2026-12-07, 0.0647 [0.050, 0.084]; four rows)."""
DESIGN_POWER = 0.8
"""The share of draws of a known linear boundary the task design must judge HELD."""
DESIGN_ROWS = 6
"""The fewest rows with an edge (median over draws) the design must give: the slope rule's
minimum (four residual degrees of freedom)."""


def settle_steps(a, c) -> np.ndarray:
    """``ceil(SETTLE (1/a + 1/c))``: where the settled window starts."""
    return np.ceil(SETTLE * (1.0 / np.asarray(a, float) + 1.0 / np.asarray(c, float))).astype(
        np.int64
    )


def sampling(config: dict) -> SpikeSampling:
    """The detector's set-up constants of a configuration (``spike_rise``,
    ``spike_block_min``, ``spike_blocks_per_horizon``)."""
    return SpikeSampling(
        rise=float(config["spike_rise"]),
        block_min=int(config["spike_block_min"]),
        blocks_per_horizon=int(config["spike_blocks_per_horizon"]),
    )


def run_steps(a, c, spikes: SpikeSampling = SPIKE_SAMPLING) -> np.ndarray:
    """Steps of a settled run: the settle time, what the detector needs to judge the settled
    window (`gaugedyn.adam.spike_steps_needed()`: the warm-up horizon, the level's window and
    ``MIN_HORIZONS`` horizons of blocks), a block for the window's rounding and 3% margin."""
    a, c = np.broadcast_arrays(np.asarray(a, float), np.asarray(c, float))
    need = np.array(
        [spike_steps_needed(1 - x, 1 - y, spikes) for x, y in zip(a.ravel(), c.ravel())]
    ).reshape(a.shape)
    b = spike_block_size(1 - a, 1 - c, spikes)
    return np.ceil(1.03 * (settle_steps(a, c) + need + b)).astype(np.int64)


def judge_run(
    blocks: SpikeBlocks,
    a: float,
    c: float,
    floor: float,
    settle: int = 0,
    spikes: SpikeSampling = SPIKE_SAMPLING,
    shared: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[dict, dict]:
    """The detector's verdicts on one run's blocks (of `gaugedyn.adam.spike_block_size()`
    steps from step 0) under the ``settled`` window (the blocks from step ``settle`` on) and
    the ``transient`` window (the whole run). The rises are computed once
    (`gaugedyn.adam.spike_block_rises()`: the settled window's are the whole run's from its
    first block on), or passed as ``shared``: those of ``blocks`` at a sampling of the same
    block size and window (one that differs from ``spikes`` at most in its rise threshold)."""
    b = int(spike_block_size(1 - a, 1 - c, spikes))
    k0 = -(-int(settle) // b)
    if shared is None:
        shared = spike_block_rises(blocks.median, 1 - a, 1 - c, spikes, floor)
    kw: dict[str, Any] = {"sampling": spikes, "floor": floor}
    return (
        detect_spike_blocks(
            blocks.since(k0),
            1 - a,
            1 - c,
            start=k0 * b,
            shared=(shared[0][k0:], shared[1][k0:]),
            **kw,
        ),
        detect_spike_blocks(blocks, 1 - a, 1 - c, shared=shared, **kw),
    )


def probability(status: np.ndarray) -> np.ndarray:
    """Spike probability over the last (seed) axis of status codes: spiky among spiky or quiet."""
    spiky = (status == CODES["spiky"]).sum(axis=-1)
    known = spiky + (status == CODES["quiet"]).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known > 0, spiky / np.maximum(known, 1), np.nan)


def upper_edge(prob: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per row of ``prob`` (rows: ``1 - beta1``; columns: ascending ``c``), the ``c`` at which
    the spike probability falls through 0.5 going up in ``c`` from the highest spiky cell;
    ``nan`` when the row is spiky at the top, never spiky, or the cell above has no
    probability (all its seeds undetermined or diverged)."""
    out = np.full(prob.shape[0], np.nan)
    lc = np.log(np.asarray(c, dtype=float))
    for i, row in enumerate(np.asarray(prob, dtype=float)):
        hits = np.flatnonzero(row >= 0.5)
        if hits.size == 0 or hits[-1] == row.size - 1 or not np.isfinite(row[hits[-1] + 1]):
            continue
        j = hits[-1]
        frac = (row[j] - 0.5) / (row[j] - row[j + 1])
        out[i] = np.exp(lc[j] + frac * (lc[j + 1] - lc[j]))
    return out


# adam_edge
EDGE_FRACTION = 0.9
CURVATURE_BAND = (0.85, 1.15)
STAY_BAND = (-math.log10(1.25), math.log10(1.25))
SEPARATION = 2.0
REVERSAL_COS, REVERSAL_MIN = -0.5, 0.5
LANCZOS_TOL = 1e-6
LOSSES = ("mse", "ce", "ce_noisy")
"""The losses of ``_edge.LOSSES`` (kept here so the registry does not import torch; a test
checks the two agree)."""
FREEZE_FRACTIONS = (0.5, 0.7)
"""The declared shares of the threshold at which ``v`` is frozen, before the edge
(``EDGE_FRACTION``): the frozen copy must then reach the edge by itself."""
STARTUP = 20
"""Steps of Adam's start-up left out before a freeze or an edge may be declared (bias
correction's first steps)."""
EXPONENT_MARGIN = 0.25
"""The fit's resolution on a loss that is not a power: a set-up constant of the core-wall
findings that the paper does not fix (`exponent_thresholds()`)."""


def exponent_thresholds(cross_entropy: bool) -> tuple[float, float]:
    """The thresholds of a core-wall finding, each a documented reading, the declared one
    first: a cross-entropy loss "exceeds 2" judged above 2 (declared) and above ``2 +
    EXPONENT_MARGIN``; a mean-squared loss "does not exceed 2" judged below ``2 +
    EXPONENT_MARGIN`` (declared) and below 2. Declared with both thresholds in session 15
    (issue 42), after the first declaration judged the two sides at different thresholds;
    where the readings disagree the verdict is "depends on the reading"."""
    hi = 2.0 + EXPONENT_MARGIN
    return (2.0, hi) if cross_entropy else (hi, 2.0)


SEPARATION_RANGE = (1.1, 2.0)
"""The declared range of the factor by which the sharpness must exceed the active curvature on
the diagonal quadratic for them to "separate" (the abstract gives none)."""


def edge_start(out: dict, task: dict) -> int:
    """First Lanczos step ``>= skip * steps`` with ``lr S >= 0.9 thr``; ``-1`` if none."""
    t = np.asarray(out["lanczos_step"])
    ok = (t >= task["skip"] * task["steps"]) & (
        task["lr"] * np.asarray(out["sharpness"]) >= EDGE_FRACTION * out["threshold"]
    )
    return int(t[ok][0]) if ok.any() else -1


_SLOPE = "log-log slope of the spike boundary c_b against 1 - beta1 over the rows with an edge"
_LOG_C = "per row, the difference of log C = log(c_b / (1 - beta1)) between two systems"
FINDING_MEASURES: dict[str, Measure] = {
    "spike_boundary.cubic_quadratic": Measure(
        "exponent", _SLOPE, 1.0, paper=3.0, why="the paper's cubic law; the band's half-width"
    ),
    "spike_boundary.near_linear:*": Measure(
        "exponent", _SLOPE, 0.5, paper=1.0, why="the paper's linear law; the band's half-width"
    ),
    "spike_boundary.linear_on_tasks:*": Measure(
        "exponent", _SLOPE, 0.5, paper=1.0, why="the paper's linear law; the band's half-width"
    ),
    "spike_boundary.C_*": Measure(
        "any shape",
        _LOG_C,
        0.1,
        why="the paper gives no value: 0.1 beyond the band's end; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "adam_edge.quadratic_separates:*": Measure(
        "any shape",
        "per seed, the median over the second half of log10(S / kappa_g)",
        0.3,
        why="the paper gives no value: a further factor 2 beyond the threshold's factor 2; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "adam_edge.active_curvature_at_threshold:*": Measure(
        "long-tailed",
        "per seed, the median over the edge window of lr kappa_g / threshold (a ratio)",
        0.15,
        paper=1.0,
        why="the paper's value 1; the band's half-width",
    ),
    "adam_edge.adaptive_stays_on_edge:*": Measure(
        "any shape",
        "per seed, log10 of the adaptive run's lr S / threshold (a log ratio)",
        0.097,
        paper=0.0,
        why="on the edge (log10 1 = 0); the band's half-width; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "adam_edge.frozen_before_edge_later:*": Measure(
        "long-tailed",
        "per seed, the steps by which the copy with v frozen before the edge reaches it after "
        "the adaptive run (censored at the run's end: a time, long right tail)",
        100.0,
        why="the paper gives no value: 100 steps, a memory time 1/(1 - beta2) at beta2 = 0.99 "
        "(the middle of the declared beta2s), the delay the feedback through v must at least "
        "make to be the mechanism",
    ),
    "adam_edge.time_to_edge_grows_with_memory:*": Measure(
        "exponent",
        "log-log slope of the adaptive run's time to the edge against 1 - beta2 over the runs "
        "with an edge",
        0.5,
        why="the paper gives no value: half the proportional law's -1 (a time on v's memory "
        "1/(1 - beta2))",
    ),
    "adam_edge.core_wall_exponent:*": Measure(
        "any shape",
        "per seed, the median over the edge window of the effective exponent of the loss along "
        "the Adam update (a fitted exponent of no assured shape: a median of medians)",
        0.25,
        why="the paper gives no value: EXPONENT_MARGIN, the fit's resolution on a loss that is "
        "not a power",
    ),
    "adam_edge.gradient_reversal:*": Measure(
        "any shape",
        "per seed, the share of window steps with cos(g_t, g_t-1) below the reversal cosine",
        0.1,
        why="the paper gives no value: ten points of share above one half; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "adam_edge.averaging_lowers:*": Measure(
        "any shape",
        "per seed, the mean over the window of log(L_ema / L) (a log ratio)",
        0.1,
        why="the paper gives no value: the averaged loss 10% lower; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "adam_edge.averaging_smooths:*": Measure(
        "long-tailed",
        "per seed, the period-2 component of log L_ema over that of log L (a ratio)",
        0.2,
        why="the paper gives no value: 20% less period-2 oscillation",
    ),
}
"""What each finding of ``spike_boundary`` and ``adam_edge`` measures (finding-id pattern ->
measure, the first match; ``PROTOCOL.md``, "Rules and power"): the kind that chooses its rule and
the smallest effect of interest, in the measure's units, at which its power is computed."""

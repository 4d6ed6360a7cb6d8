"""The protocol of ``prototypes``, fixed before any run (:file:`PROTOCOL.md` beside this module):
the loss masks and readings every task trains, the specification settings that select what a
finding judges, the budget readings, the thresholds of the findings and the effects at which
their power is computed, and the layout of a task's runs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...stats import Measure

COMBINATIONS: tuple[tuple[int, int, int], ...] = tuple(
    (c, s, o) for o in (0, 1) for s in (0, 1) for c in (0, 1)
)
"""The eight masks ``(coverage, separation, overlap)``; ``(0, 0, 0)`` is the plain fit."""

INITS = ("inside", "broad")
"""Initialisation readings: prototypes uniform in the data range, or the broad Gaussian draw."""

COVERAGES = ("one-sided", "chamfer")
"""Coverage readings: samples pulled to their nearest prototype, or that plus the reverse term."""


def _sin(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.sin(2 * np.pi * x)


def _random(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=x.shape)


TARGETS: dict[str, Callable[[np.ndarray, np.random.Generator], np.ndarray]] = {
    "sin": _sin,
    "random": _random,
}
"""Targets of the 1-D data: ``sin(2 pi x)``, or independent ``U[-1, 1]`` labels."""

TARGET_VARIANCE = {"sin": 0.5, "random": 1.0 / 3.0}
"""The variance of each target over ``x ~ U[0, 1]`` (the unit of the relative fit error)."""


COV, SEP, OV, PLAIN = (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)
NAMED = (PLAIN, COV, SEP, OV)
"""The four approaches the abstract names: plain fitting, coverage, separation, overlap."""

REFERENCE_WEIGHT, REFERENCE_TAU = 0.1, 0.05
"""The ``lambda`` and ``tau`` at which the combinations of several losses train (the first run's
guess, the primary specification's too): the eight-mask and four-pair readings exist there only.
The single-loss masks train at every ``lambda`` of ``weights`` and separation at every ``tau``
of the sweep, so every specification of the declared space judges the named approaches."""

MEASURES = (
    "reconstruction_error",
    "usage_nearest",
    "usage_argmax",
    "outside_fraction",
    "fit_error",
)
BUDGETS = ("fixed", "settled")
"""Budget readings (the setting ``budget``): the fixed step budget (``steps``, one of
``budgets``), or trained until the prototypes stop moving (largest displacement per ``window``
steps below ``settle_tolerance``, at most ``cap``)."""

SPECIFICATION = ("lr", "steps", "budget", "weight", "tau")
"""The settings that select what a run judges, not what it trains: every task trains every step
size of ``lrs``, every budget of ``budgets`` (and the settled one), every ``lambda`` of
``weights`` and every ``tau`` of ``nominal_taus``, so a specification of the declared set-up
space that moves only these reuses the primary run's tasks."""

FIT_TOLERANCE = 0.01
"""``overlap_fits_as_well``: adding overlap may cost at most this much explained variance."""
EXPULSION_MARGIN = 0.05
"""The outside-fraction excess over the plain fit that counts as expulsion (fixed beforehand)."""
DRIFT_MARGIN = 0.005
"""The excess drift of the outside fraction over the plain fit, per 1,000 Adam steps, that
counts as ongoing expulsion: the expulsion margin reached within 10,000 steps (fixed before the
first run that measured the drift)."""
CONVERGED = 1e-3
"""Check (initialisation ``inside``): the plain fit's mean fit error over the target variance
must be below this at the largest step size of ``lrs`` (at a smaller one it is reported)."""

LOG_RATIO_EFFECT = math.log(1.25)
"""The smallest difference of interest of the headline (``coverage_lowest_error``), declared
before the pilot: in every cell, the other approach's reconstruction error a quarter above
coverage's (a median paired log ratio ``log 1.25``), the smallest gap a reader of "the lowest
error" would call one. The errors span decades over N, so an absolute difference cannot serve
every cell: 0.01 of the input range is twice the error at N = 100 and a twentieth of its
seed-to-seed spread at N = 3."""

POWER_TARGET = 0.8
"""The headline's seed count is the smallest whose power at `LOG_RATIO_EFFECT`, on
resamples of the pilot's paired log ratios, reaches this (`._power`)."""

HEADLINE_INIT, HEADLINE_COVERAGE = "inside", "one-sided"
"""The primary reading the headline configuration (`._headline`) trains and judges: the
initialisation ``inside`` and the one-sided coverage, against the approaches the abstract
names, at the primary specification (``lr`` 1e-2, fixed 4,000 steps, the reference ``lambda``
and ``tau``)."""

HEADLINE_SEEDS: dict[int, int] = {3: 2560, 5: 640, 10: 480, 20: 320, 50: 200, 100: 80}
"""The headline configuration's seed count per size, declared before its run (issue 44): the
counts of least CPU cost whose joint power at `LOG_RATIO_EFFECT` under the primary reading
reaches `POWER_TARGET` on resamples of the pilot's log ratios (``tools/prototypes_pilot.py
allocate``, ``per_size`` of ``results-data/prototypes/pilot.json``; `._power.cheapest_counts`):
the every-cell rule says HELD exactly when it does at every size and the sizes are independent
tasks, so its power is the product over sizes, and the sizes whose log ratios spread over
decades (N = 3, 5) are the cheapest to seed."""

HEADLINE_STAGE_2_TARGET = 0.9
"""Stage 2 of the headline (issue 44, declared before its run): its per-size counts are the
cheapest whose joint power at `LOG_RATIO_EFFECT` reaches this on resamples of the pooled per-seed
log ratios of the pilot and stage 1 (``tools/prototypes_pilot.py stage-2``). Higher than
`POWER_TARGET` because stage 1, designed for 0.82 on the pilot's 16 seeds, had 0.654 on its own
values (at N = 100 the log ratios spread about 1.5 times as widely over its 80 seeds as over the
pilot's 16): the pilot underestimated the spread, and 0.8 is required of the run's own values,
not only of the design's; the margin is for the spread's estimate still being an estimate."""

HEADLINE_STAGE_2_SEEDS: dict[int, int] = {3: 1600, 5: 960, 10: 400, 20: 240, 50: 240, 100: 160}
"""Stage 2's seed count per size, declared before its run: the counts of least CPU cost (the
costs per seed measured for stage 1) whose joint power reaches `HEADLINE_STAGE_2_TARGET` on the
pooled log ratios (``stage_2`` of ``results-data/prototypes/pilot.json``)."""

HEADLINE_STAGES: dict[str, dict[int, int]] = {
    "headline": HEADLINE_SEEDS,
    "headline-2": HEADLINE_STAGE_2_SEEDS,
}
"""The headline configuration's stages: the ``design`` value (also its seed stream, the task
coordinate ``stream``) and its seed count per size. Each stage is judged on its own values alone
and published as its own extension; no verdict pools stages."""


_ERR = "per seed and N, a reconstruction error difference (two approaches' errors)"
_SHAPE = (
    "the mean rule missed the size bar on resamples of the published values (gaugedyn "
    "audit-rules), so it is judged distribution-free by its median"
)
FINDING_MEASURES: dict[str, Measure] = {
    "coverage_lowest_error*": Measure(
        "long-tailed",
        "per seed and cell (approach k x N), the paired log ratio log(err_k / err_cov) of two "
        "reconstruction errors",
        LOG_RATIO_EFFECT,
        why="the smallest difference of interest: the other approach's error a quarter above "
        "coverage's in every cell (LOG_RATIO_EFFECT); errors are positive and long-tailed and "
        "span decades over N",
    ),
    "overlap_harmful*": Measure("long-tailed", _ERR + ": err_ov - err_plain", 0.01, why="1%"),
    "separation_mixed*": Measure("long-tailed", _ERR + ": err_sep - err_plain", 0.01, why="1%"),
    "overlap_fits_as_well*": Measure(
        "long-tailed",
        "per seed and N, (fit error with overlap - without) / var(y): an error difference",
        FIT_TOLERANCE,
        why="no fit cost at all: the tolerance below its threshold",
    ),
    "coverage_usage_above_plain*": Measure(
        "long-tailed",
        "per seed, the mean over N of a usage specialization ratio, coverage minus plain",
        0.05,
        why="the abstract gives no number: 0.05 of the ratio (a ratio: long-tailed)",
    ),
    "*expulsion_rate*": Measure(
        "any shape",
        "per seed (and N), a difference of drift rates of the outside fraction per 1,000 steps "
        "(with the loss minus plain): slopes of shares, many of them exactly zero",
        DRIFT_MARGIN,
        why="the drift margin 0.005 per 1,000 steps beyond the claim's threshold; the outside "
        "fraction's levels failed the mean rule's audit (" + _SHAPE + "), and its slopes are "
        "made of the same shares",
    ),
    "*expul*": Measure(
        "any shape",
        "per seed and N, an outside-fraction difference (a share of prototypes outside the "
        "data's hull), separation minus plain",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05 beyond the claim's threshold; " + _SHAPE,
    ),
    "*expel*": Measure(
        "any shape",
        "per seed (and N), an outside-fraction difference: a share of prototypes outside the "
        "data's hull, with the loss minus without",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05 beyond the claim's threshold; " + _SHAPE,
    ),
    "coverage_keeps_inside*": Measure(
        "any shape",
        "per seed, the mean over N of an outside-fraction difference, coverage minus plain",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05; declared symmetric for the published run, whose mean rule "
        "then missed the audit's bars on resamples of its own values (held and not held at the "
        "boundary): an outside-fraction difference like the expulsion measures, "
        + _SHAPE
        + " (re-judged from the stored values, issue 41's protocol)",
    ),
}
"""What each finding measures (finding-id pattern -> measure, the first match; ``PROTOCOL.md``),
declared before the run: the kind that chooses its rule (errors, fit errors and usage ratios are
positive and long-tailed, the published per-seed error differences have skew up to 6 and excess
kurtosis 35: median rules; outside fractions and their drift failed the mean rule's audit:
median rules too) and the smallest effect of interest, in the measure's units, at which its
power is computed (the abstract gives no numbers)."""

FINDING_NAMES = (
    "coverage_lowest_error",
    "coverage_usage_above_plain",
    "overlap_harmful",
    "overlap_fits_as_well",
    "overlap_expels",
    "overlap_expulsion_rate",
    "coverage_keeps_inside",
    "separation_mixed",
    "separation_no_expulsion_at_nominal_tau",
    "separation_expulsion_rate_at_nominal_tau",
    "separation_expels_at_large_tau",
)
"""Every finding of the experiment, by name (an id adds its readings in ``[...]``)."""


def measure_of(finding_id: str) -> Measure:
    """The declared measure of the finding ``finding_id`` (`FINDING_MEASURES`)."""
    from ...stats import measure_of as lookup

    return lookup(FINDING_MEASURES, finding_id)


def rule_of(finding_id: str, form: str) -> str:
    """The rule of the finding ``finding_id`` for a claim of ``form``: its declared measure's
    choice (`gaugedyn.stats.Measure`); `KeyError` for an undeclared finding."""
    if finding_id.split("[")[0] not in FINDING_NAMES:
        raise KeyError(finding_id)
    return measure_of(finding_id).rule(form)


def variants(config: dict) -> list[dict]:
    """The runs of one seed in one task (one step size): the eight combinations (coverage ones
    once per coverage reading) at `REFERENCE_WEIGHT` and `REFERENCE_TAU`
    (``kind="core"``); separation-only at the reference ``lambda`` and every other ``tau`` of
    the sweep (``"sweep"``); and at every other ``lambda`` of ``weights`` the single-loss masks,
    separation at every ``tau`` of ``nominal_taus`` and at the largest of the sweep
    (``"lambda"``)."""
    lam, tau = REFERENCE_WEIGHT, REFERENCE_TAU
    covs = list(config["coverages"])
    out = []
    for mask in COMBINATIONS:
        for coverage in covs if mask[0] else (None,):
            out.append(
                {"mask": mask, "coverage": coverage, "tau": tau, "weight": lam, "kind": "core"}
            )
    for t in map(float, config["taus"]):
        if t != tau:
            out.append({"mask": SEP, "coverage": None, "tau": t, "weight": lam, "kind": "sweep"})
    sep_taus = sorted({*map(float, config["nominal_taus"]), max(map(float, config["taus"]))})
    for other in map(float, config["weights"]):
        if other == lam:
            continue
        for coverage in covs:
            out.append(
                {"mask": COV, "coverage": coverage, "tau": tau, "weight": other, "kind": "lambda"}
            )
        out.append({"mask": OV, "coverage": None, "tau": tau, "weight": other, "kind": "lambda"})
        for t in sep_taus:
            out.append({"mask": SEP, "coverage": None, "tau": t, "weight": other, "kind": "lambda"})
    return out


def _key(mask, coverage, weight, tau) -> tuple:
    """A run's identity: what its loss depends on (``lambda`` only with a loss on, ``tau`` only
    with separation, the coverage reading only with coverage)."""
    mask = tuple(int(m) for m in mask)
    return (
        mask,
        coverage if mask[0] else None,
        float(weight) if any(mask) else None,
        float(tau) if mask[1] else None,
    )


def variant_index(
    config: dict,
    mask,
    coverage: str | None = None,
    *,
    tau: float | None = None,
    weight: float | None = None,
) -> int:
    """Column of a run in a task's ``(S, V)`` arrays: the run of ``mask`` (coverage reading
    ``coverage`` where it has coverage) at ``weight`` and ``tau`` (``None``: the reference).
    `KeyError` when the task trains no such run."""
    want = _key(
        mask,
        coverage,
        REFERENCE_WEIGHT if weight is None else weight,
        REFERENCE_TAU if tau is None else tau,
    )
    for j, v in enumerate(variants(config)):
        if _key(v["mask"], v["coverage"], v["weight"], v["tau"]) == want:
            return j
    raise KeyError(want)


SENTENCES: dict[str, tuple[str, ...]] = {
    "Coverage regularization gives the lowest mean reconstruction error at every tested size": (
        "coverage_lowest_error",
    ),
    "and raises the prototype-usage specialization ratio relative to the standard baseline": (
        "coverage_usage_above_plain",
    ),
    "while separation has mixed effects": ("separation_mixed",),
    "and overlap penalties are systematically harmful.": ("overlap_harmful",),
    "overlap-active approaches fit the data as well as overlap-free ones": (
        "overlap_fits_as_well",
    ),
    "but route the optimizer to a degenerate equilibrium in which prototype centers are pushed "
    "outside the convex hull of the training inputs.": (
        "overlap_expels",
        "overlap_expulsion_rate",
    ),
    "Coverage cannot reward this expulsion and acts as an attractor:": ("coverage_keeps_inside",),
    "separation admits it only at large temperature": (
        "separation_no_expulsion_at_nominal_tau",
        "separation_expulsion_rate_at_nominal_tau",
        "separation_expels_at_large_tau",
    ),
    "and overlap admits it at the nominal hyperparameter choice.": ("overlap_expels",),
}
"""The abstract's sentences (in its order, its words) and the findings that test each; the
system page's table of sentences against verdicts is generated from them
(``publish:sentences prototypes``)."""

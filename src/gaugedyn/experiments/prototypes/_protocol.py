"""The protocol of ``prototypes``, fixed before any run (:file:`PROTOCOL.md` beside this module):
the loss masks and readings every task trains, the specification settings that select what a
finding judges, the budget readings, the thresholds of the findings and the effects at which
their power is computed, and the layout of a task's runs."""

from __future__ import annotations

import math

COMBINATIONS: tuple[tuple[int, int, int], ...] = tuple(
    (c, s, o) for o in (0, 1) for s in (0, 1) for c in (0, 1)
)
"""The eight masks ``(coverage, separation, overlap)``; ``(0, 0, 0)`` is the plain fit."""

INITS = ("inside", "broad")
"""Initialisation readings: prototypes uniform in the data range, or the broad Gaussian draw."""

COVERAGES = ("one-sided", "chamfer")
"""Coverage readings: samples pulled to their nearest prototype, or that plus the reverse term."""

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
"""The headline's seed count is the smallest whose power at :data:`LOG_RATIO_EFFECT`, on
resamples of the pilot's paired log ratios, reaches this (:mod:`._power`)."""

EFFECT = {
    "error": 0.01,
    "log_ratio": LOG_RATIO_EFFECT,
    "usage": 0.05,
    "outside": EXPULSION_MARGIN,
    "fit": FIT_TOLERANCE,
    "drift": DRIFT_MARGIN,
}
"""How far inside its claim each judged parameter is taken to lie when a finding's ``power`` is
computed, fixed before running (the abstract gives no numbers): a reconstruction-error
difference of 0.01 (1% of the input range), a usage difference of 0.05, an outside-fraction
excess 0.05 beyond the claim's threshold, no fit cost at all for ``overlap_fits_as_well`` (the
tolerance 0.01 below its threshold), a drift 0.005 per 1,000 steps beyond its threshold, and for
the headline a log ratio :data:`LOG_RATIO_EFFECT`."""


RULE_FOR = {
    "long-tailed": {
        "threshold": "median_threshold",
        "every_cell": "every_cell_median",
        "some_cell": "some_cell_median",
    },
    "symmetric": {
        "threshold": "mean_threshold",
        "every_cell": "every_cell",
        "some_cell": "some_cell",
    },
}
"""The rule for each form of claim on a measure of each kind: median (sign-test) rules for a
positive, long-tailed quantity or a difference of such (an error, a fit error, a usage ratio),
mean rules for a signed quantity close to symmetric (a difference of outside fractions, a
difference of drift rates)."""

FINDING_KINDS = {
    "coverage_lowest_error": "long-tailed",
    "overlap_harmful": "long-tailed",
    "separation_mixed": "long-tailed",
    "overlap_fits_as_well": "long-tailed",
    "coverage_usage_above_plain": "long-tailed",
    "overlap_expels": "symmetric",
    "coverage_keeps_inside": "symmetric",
    "separation_no_expulsion_at_nominal_tau": "symmetric",
    "separation_expels_at_large_tau": "symmetric",
    "overlap_expulsion_rate": "symmetric",
    "separation_expulsion_rate_at_nominal_tau": "symmetric",
}
"""The kind of each finding's per-seed values (by finding name, before its ``[...]``), declared
before the run; the kind and the claim's form choose the rule (:data:`RULE_FOR`). Errors, fit
errors and usage ratios are positive and long-tailed (the published per-seed error differences
have skew up to 6 and excess kurtosis 35), so no error, ratio or usage finding has a t-based
rule."""


def rule_of(finding_id: str, form: str) -> str:
    """The rule of the finding ``finding_id`` for a claim of ``form`` (:data:`FINDING_KINDS`,
    :data:`RULE_FOR`); :class:`KeyError` for a finding with no declared kind."""
    return RULE_FOR[FINDING_KINDS[finding_id.split("[")[0]]][form]


def variants(config: dict) -> list[dict]:
    """The runs of one seed in one task (one step size): the eight combinations (coverage ones
    once per coverage reading) at :data:`REFERENCE_WEIGHT` and :data:`REFERENCE_TAU`
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
    :class:`KeyError` when the task trains no such run."""
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

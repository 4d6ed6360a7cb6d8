"""The protocol of ``prototypes``, fixed before any run (:file:`PROTOCOL.md` beside this module):
the loss masks and readings every task trains, the budget readings, the thresholds of the
findings and the effects at which their power is computed, and the layout of a task's runs."""

from __future__ import annotations

from ...stats import Measure

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

MEASURES = (
    "reconstruction_error",
    "usage_nearest",
    "usage_argmax",
    "outside_fraction",
    "fit_error",
)
BUDGETS = ("fixed", "settled")
"""Budget readings: the fixed step budget (``steps``), or trained until the prototypes stop
moving (largest displacement per ``window`` steps below ``settle_tolerance``, at most ``cap``)."""
FIT_TOLERANCE = 0.01
"""``overlap_fits_as_well``: adding overlap may cost at most this much explained variance."""
EXPULSION_MARGIN = 0.05
"""The outside-fraction excess over the plain fit that counts as expulsion (fixed beforehand)."""
CONVERGED = 1e-3
"""Check (initialisation ``inside``): the plain fit's mean fit error over the target variance must be below this."""

_ERR = "per seed and N, a reconstruction error difference (two approaches' errors)"
FINDING_MEASURES: dict[str, Measure] = {
    "coverage_lowest_error*": Measure(
        "long-tailed",
        _ERR + ": err_k - err_cov",
        0.01,
        why="the abstract gives no number: 1% of the input range; errors are positive and "
        "long-tailed (the published per-seed differences have skew up to 6)",
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
    "*expul*": Measure(
        "any shape",
        "per seed and N, an outside-fraction difference (a share of prototypes outside the "
        "data's hull), separation minus plain",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05 beyond the claim's threshold; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "*expel*": Measure(
        "any shape",
        "per seed (and N), an outside-fraction difference: a share of prototypes outside the "
        "data's hull, with the loss minus without",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05 beyond the claim's threshold; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "coverage_keeps_inside*": Measure(
        "symmetric",
        "per seed, the mean over N of an outside-fraction difference, coverage minus plain",
        EXPULSION_MARGIN,
        why="the expulsion margin 0.05",
    ),
}
"""What each finding measures (finding-id pattern -> measure, the first match; ``PROTOCOL.md``,
"Rules and power"): the kind that chooses its rule (error and ratio findings: the median rules)
and the smallest effect of interest, in the measure's units, at which its power is computed (the
abstract gives no numbers)."""


def variants(config: dict) -> list[dict]:
    """The runs of one seed in one task: each combination (coverage ones once per coverage
    reading) at the nominal ``tau`` and ``lambda`` (``kind="core"``), the ``tau`` sweep on the
    separation-only mask (``"sweep"``), and the single-loss masks at every other ``lambda`` of
    ``weights`` (``"lambda"``; separation at the nominal ``tau``)."""
    tau, lam = float(config["tau"]), float(config["weight"])
    out = []
    for mask in COMBINATIONS:
        for coverage in config["coverages"] if mask[0] else (None,):
            out.append(
                {"mask": mask, "coverage": coverage, "tau": tau, "weight": lam, "kind": "core"}
            )
    for t in config["taus"]:
        out.append(
            {"mask": (0, 1, 0), "coverage": None, "tau": float(t), "weight": lam, "kind": "sweep"}
        )
    for other in config["weights"]:
        if float(other) == lam:
            continue
        for mask in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
            for coverage in config["coverages"] if mask[0] else (None,):
                out.append(
                    {
                        "mask": mask,
                        "coverage": coverage,
                        "tau": tau,
                        "weight": float(other),
                        "kind": "lambda",
                    }
                )
    return out


def variant_index(
    config: dict,
    mask,
    coverage: str | None,
    *,
    tau: float | None = None,
    weight: float | None = None,
) -> int:
    """Column of a run in a task's ``(S, V)`` arrays (coverage ``None`` for a mask without it):
    the core run, the sweep run at ``tau`` (separation-only), or the run at another ``weight``
    (single-loss masks). `KeyError` when no such run exists."""
    lam = float(config["weight"])
    kind = (
        "sweep"
        if tau is not None
        else "lambda"
        if weight is not None and float(weight) != lam
        else "core"
    )
    for j, v in enumerate(variants(config)):
        if tuple(v["mask"]) != tuple(mask) or v["kind"] != kind:
            continue
        if mask[0] and v["coverage"] != coverage:
            continue
        if (tau is None or v["tau"] == float(tau)) and (
            kind != "lambda" or weight is not None and v["weight"] == float(weight)
        ):
            return j
    raise KeyError((mask, coverage, tau, weight))

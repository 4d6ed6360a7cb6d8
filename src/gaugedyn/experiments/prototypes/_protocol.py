"""The protocol of ``prototypes``, fixed before any run (:file:`PROTOCOL.md` beside this module):
the loss masks and readings every task trains, the budget readings, the thresholds of the
findings and the effects at which their power is computed, and the layout of a task's runs."""

from __future__ import annotations

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

EFFECT = {"error": 0.01, "usage": 0.05, "outside": EXPULSION_MARGIN, "fit": FIT_TOLERANCE}
"""How far inside its claim each judged parameter is taken to lie when a finding's ``power`` is
computed, fixed before running (the abstract gives no numbers): a reconstruction-error
difference of 0.01 (1% of the input range), a usage difference of 0.05, an outside-fraction
excess 0.05 beyond the claim's threshold, and no fit cost at all for ``overlap_fits_as_well``
(the tolerance 0.01 below its threshold)."""


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
    (single-loss masks). :class:`KeyError` when no such run exists."""
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

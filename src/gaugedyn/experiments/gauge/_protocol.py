"""The protocol of the gauge experiments, fixed before any run (``PROTOCOL.md`` beside this
module): the settings several experiments share, each declared once with its bounds, the fixed
numbers of the claims (tolerances, bands, minimum counts), and the set-ups the runs and the
analyses both rebuild."""

from __future__ import annotations

import numpy as np

from ...harness import Param
from ...stats import Measure
from ...theory import Problem, duplicates, with_gauge

MAX_DIM = 10**6
DIM_WHY = (
    "the mobility ratio D^2 must stay below 1e12 so that float64 keeps the slower clock's digits"
)
SCALE_WHY = "rho0 = 100 ||f*||; far larger s overflow the gauge delta = s (1/D - D) to -inf"
T_MAX_WHY = "steps grow with log t_max; 1e8 is past every specialization time for D <= 1e4"

THRESHOLD = Param(
    float,
    0.95,
    lo=0.0,
    hi=1.0,
    lo_open=True,
    hi_open=True,
    why="an alignment is a cosine",
    help="alignment that defines specialization",
)

T_MAX_BOTH = Param(
    (int, float),
    1e5,
    quick=2e4,
    lo=0.0,
    lo_open=True,
    hi=1e8,
    why=T_MAX_WHY,
    help="end of both trajectories",
)


def dim_param(
    default: int = 100,
    help: str = "input dimension D (also the gauge strength)",
    hi: int = MAX_DIM,
    why: str = DIM_WHY,
) -> Param:
    """The input dimension ``D`` of the population experiments, in ``[4, hi]``."""
    return Param(int, default, lo=4, hi=hi, why=why, help=help)


def scale_param(help: str = "initial coefficient rho0 = s", default: float = 1.0) -> Param:
    """The initial coefficient ``rho0 = s`` in ``(0, 100]``."""
    return Param((int, float), default, lo=0.0, lo_open=True, hi=100.0, why=SCALE_WHY, help=help)


def rtol_param(default: float, help: str = "relative tolerance of the batched integrator") -> Param:
    """The integrator's relative tolerance, in ``(1e-14, 1e-3)``."""
    return Param(
        float,
        default,
        lo=1e-14,
        hi=1e-3,
        hi_open=True,
        why="a looser tolerance no longer resolves the pruned copies' |rho| ~ 1e-3",
        help=help,
    )


def n_times_param(
    default: int, quick: int | None, lo: int, help: str = "number of log-spaced output times"
) -> Param:
    """A number of output times in ``[lo, 20000]``."""
    return Param(
        int,
        default,
        quick=quick,
        lo=lo,
        hi=20000,
        why="memory: 8 bytes x K^2 per output time per trajectory",
        help=help,
    )


N_FACTOR = Param(
    int,
    20,
    lo=2,
    hi=1000,
    why="memory: n_factor x D samples per seed",
    help="samples per seed n = n_factor * D",
)
"""Trained networks (``gauge_in_training_*``): samples per seed ``n = n_factor D``."""
TRAINED_SCALE = Param(
    (int, float),
    1.0,
    lo=0.0,
    lo_open=True,
    hi=10.0,
    why="GD steps grow like s D at the stable step 1 / (s D)",
    help="initial coefficient rho0 = s",
)
"""Trained networks (``gauge_in_training_*``): the initial coefficient ``rho0 = s``."""

MIN_FIT_DIMS = 3
"""``dimension_scaling``: the fewest dimensions at or above ``large_dim`` the exponent is fitted on."""

MIN_STEPS = 10
"""``online_sgd``: records after fewer steps are not compared (a few samples do not average to
the ODE)."""

FUNCTION_TOL = 1e-12
"""``gauge_on_networks``: largest relative change of the network's function under the gauge
transform (float64 round-off)."""

SLOPE_BAND = (0.9, 1.1)
"""``gauge_on_networks``: the drift's slope in eta counts as 1 inside this band (the issue's
"within 0.1")."""

BAND_TIMES = (0.25, 0.5, 0.75, 1.0)
"""``online_sgd``: the declared times of the band checks, as fractions of the run's length
(``t_max`` for the erf and chain tasks, ``relu_flow_time`` in flow time for ReLU); at each the
record nearest it, at each ``D``, is a cell of ``every_cell_proportion``."""

BAND_SHARE = 0.1
"""``online_sgd``: the band is the seeds' 10-90% band; a curve is inside it when the share of
seeds below the curve lies in ``(BAND_SHARE, 1 - BAND_SHARE)``, outside below it when that
share is below ``BAND_SHARE``."""

OFF_CATALOGUE: dict[str, str] = {}
"""Checks on random values that no catalogue rule judges yet (check id -> why), listed on
``docs/verdict-rules.md`` ("Checks on random values", generated)."""

FINDING_MEASURES: dict[str, Measure] = {
    "clock.clocks": Measure(
        "exact",
        "C_T/C_R of the a-heavy gauge over the w-heavy gauge's, one integration",
        1.0,
        why="deterministic: any excess over the threshold; the paper's D^2 is where the power "
        "is computed",
    ),
    "finite_sample.exponent_*": Measure(
        "exponent",
        "log-log slope of the median deviation against n",
        0.15,
        paper=-0.5,
        why="the paper's n^-1/2; the band's half-width (the tolerance)",
    ),
    "ownership_patterns.selection_region": Measure(
        "outcome",
        "a pattern in the claimed region selected (1) or not (0)",
        0.1,
        paper=1.0,
        why="the paper's every pattern (rate 1)",
    ),
    "gauge_on_networks.a_heavy_owns:*:adam": Measure(
        "outcome",
        "the a-heavy copy owns the feature in a seed (1) or not (0)",
        0.25,
        why="no value under Adam: a rate of 3/4, the favourable copy winning three seeds in four",
    ),
    "gauge_on_networks.a_heavy_owns:*": Measure(
        "outcome",
        "the a-heavy copy owns the feature in a seed (1) or not (0)",
        0.25,
        paper=1.0,
        why="gradient flow selects the a-heavy copy every time (rate 1)",
    ),
    "gauge_on_networks.drift_slope:*": Measure(
        "any shape",
        "per-seed least-squares slope of log drift against log eta",
        0.1,
        paper=1.0,
        why="the exact discrete drift's slope 1; the band's half-width; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "landscape.escape_slope": Measure(
        "exponent",
        "least-squares slope of lambda_+ T on ln(1/eps) over the eps grid, one saddle and sign",
        0.05,
        paper=1.0,
        why="linear escape: slope 1; the band's half-width (the tolerance)",
    ),
    "landscape.zero_modes": Measure(
        "exact",
        "number of converged ReLU points whose zero modes differ from the prediction",
        0.5,
        paper=0.0,
        why="deterministic count (Newton-refined points): the paper's value is no mismatch",
    ),
    "landscape.gauge_rate": Measure(
        "exact",
        "|ln(lambda_a / lambda_w)| of one saddle's a-heavy and w-heavy copies",
        0.05,
        why="deterministic (no noise); no paper value of the factor: half the margin ln 1.1 beyond it",
    ),
    "landscape.gauge_clock": Measure(
        "exact",
        "|ln(lambda_a T_a / (lambda_w T_w))| from one initial function",
        0.025,
        paper=0.0,
        why="deterministic; the clock is the same in every gauge (0)",
    ),
}
"""What each finding of the gauge experiments measures (finding-id pattern -> measure, the
first match; ``PROTOCOL.md``, "Rules and power"): the kind that chooses its rule and the
smallest effect of interest, in the measure's units, at which its power is computed."""

OUTCOMES = ("selected", "shared", "tie", "other")
"""``ownership_patterns``: outcome codes 0..3 of a pattern (``PROTOCOL.md``)."""

LEVEL = {"w-heavy": -1.0, "balanced": 0.0, "a-heavy": 1.0}
"""``ownership_patterns``: the gauge level ``g`` of a named gauge."""

COUNTEREXAMPLES = (
    (("w-heavy", "a-heavy", "w-heavy", "balanced", "w-heavy"), 0.2, "selected, unpruned"),
    (("a-heavy", "w-heavy", "balanced"), 0.05, "shared"),
    (("a-heavy", "a-heavy", "w-heavy", "w-heavy"), 1.0, "tie"),
)
"""``ownership_patterns``: the issue's patterns, the scale and the outcome an independent
implementation measured."""

CHECKED = ("loss", "alignment", "rho")
"""``finite_sample``: the observables whose deviation from the population dynamics is fitted."""
DISSIPATION = ("reaction", "transport")
"""``finite_sample``: the dissipation parts compared the same way."""
OBSERVABLES = CHECKED + DISSIPATION

ERF_STATE = {
    "a": [0.2, 0.2],
    "Q": [[0.5, 0.1], [0.1, 0.3]],
    "R": [[0.1], [0.0]],
    "b": [1.0],
    "T": [[1.0]],
}
"""``online_sgd``: the order parameters of the erf teacher-student problem, the same at every ``D``."""


def embedded_problem(dim: int, a, Q, R, b, T, activation: str) -> Problem:
    """A problem with prescribed order parameters, weights in the first ``K + M`` coordinates."""
    a, Q, R, b, T = (np.asarray(x, dtype=float) for x in (a, Q, R, b, T))
    K, M = a.size, b.size
    L = np.linalg.cholesky(np.block([[T, R.T], [R, Q]]))
    basis = np.zeros((K + M, dim))
    basis[:, : K + M] = L
    return Problem(
        a=a,
        W=basis[M:],
        b=b,
        V=basis[:M],
        activation=activation,
        setup={"name": "embedded", "dim": dim},
    )


def online_problem(task: dict) -> Problem:
    """``online_sgd``: the erf problem of `ERF_STATE` embedded in ``D`` dimensions (tasks
    ``erf`` and ``chain``), or the ReLU duplicates, a-heavy and w-heavy at strength 2."""
    if task["kind"] in ("erf", "chain"):
        return embedded_problem(task["dim"], activation="erf", **ERF_STATE)
    base = duplicates(task["dim"], ["a-heavy", "w-heavy"], overlap=0.3)
    return with_gauge(base, names=["a-heavy", "w-heavy"], strength=2.0)


def finite_sample_problem(task: dict) -> Problem:
    """``finite_sample``: the a-heavy and w-heavy duplicates at the task's gauge strength."""
    base = duplicates(task["dim"], ["a-heavy", "w-heavy"])
    return with_gauge(base, names=["a-heavy", "w-heavy"], strength=task["strength"])


# --- landscape -------------------------------------------------------------------------------

LANDSCAPE_CONVERGED = 1e-10
"""Gradient norm at or below which a refined critical point counts as converged."""
LANDSCAPE_CATALOGUE_DIM = 10
"""Input dimension of the catalogue's teachers (``D`` only sets the students' initial
overlaps, about ``D^-1/2``)."""
LANDSCAPE_SLOPE_BAND = (0.95, 1.05)
"""The escape finding's band on the slope of ``lambda_+ T`` against ``ln(1/eps)``."""
LANDSCAPE_RATE_RATIO = 1.1
"""The gauge finding's smallest factor between the a-heavy and w-heavy unstable rates."""
LANDSCAPE_CLOCK_RATIO = 1.05
"""The largest factor between the a-heavy and w-heavy ``lambda_+ T`` from one function."""

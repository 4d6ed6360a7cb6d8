"""The protocol of ``conservation_laws``, fixed before any run (``PROTOCOL.md`` beside this
module): the architectures counted and their quick subset, the recorder's models, the controls'
known answers, the bands and thresholds the findings are judged by."""

from __future__ import annotations

from ...stats import Measure

MIN_GAP = 1e6
"""Every published rank decision's singular-value gap is at least this (float64)."""

COUNT_MARGIN = 0.5
"""A count finding's value is an integer (the largest ``|measured - derived|``): HELD below
this, NOT HELD at 1 or more."""

FAMILIES = ("relu2", "linear2", "deep_linear", "polynomial", "mha", "gqa")
"""The families of the abstract whose counts are judged."""

READINGS = ("function", "loss")
"""The flow's vector fields: the gradients of the outputs on the data (the functional fields of
Marcotte, Gribonval and Peyré), or of the per-sample losses on the same data (squared error to
generic targets). Both are documented readings of "the gradient flow's vector fields"."""

SLOPE_BANDS = {"steps": (1.9, 2.1), "time": (0.9, 1.1)}
"""The drift's slope in ``eta`` counts as second order inside these bands: 2 over a fixed number
of steps, 1 per unit time over a fixed time (the band of ``gauge_on_networks``, ``+-0.1``)."""

CATALOGUE: tuple[dict, ...] = (
    {"family": "relu2", "d": 4, "K": 1, "n": 2},
    {"family": "relu2", "d": 4, "K": 3, "n": 2},
    {"family": "relu2", "d": 4, "K": 5, "n": 2},
    {"family": "relu2", "d": 6, "K": 4, "n": 1},
    {"family": "linear2", "d": 2, "K": 2, "n": 2},
    {"family": "linear2", "d": 3, "K": 3, "n": 3},
    {"family": "linear2", "d": 4, "K": 4, "n": 4},
    {"family": "linear2", "d": 5, "K": 3, "n": 4},
    {"family": "deep_linear", "L": 2, "K": 3},
    {"family": "deep_linear", "L": 3, "K": 2},
    {"family": "deep_linear", "L": 3, "K": 3},
    {"family": "deep_linear", "L": 4, "K": 2},
    {"family": "polynomial", "p": 2, "widths": [4, 3], "n": 2},
    {"family": "polynomial", "p": 3, "widths": [3, 2], "n": 2},
    {"family": "polynomial", "p": 2, "widths": [4, 3, 2], "n": 2},
    {"family": "polynomial", "p": 3, "widths": [3, 2, 2], "n": 1},
    {"family": "mha", "E": 3, "H": 1},
    {"family": "mha", "E": 4, "H": 2},
    {"family": "mha", "E": 6, "H": 2},
    {"family": "mha", "E": 6, "H": 3},
    {"family": "gqa", "E": 4, "H": 2, "G": 1, "d": 2},
    {"family": "gqa", "E": 6, "H": 4, "G": 2, "d": 2},
    {"family": "gqa", "E": 6, "H": 4, "G": 1, "d": 3},
    {"family": "gqa", "E": 6, "H": 6, "G": 3, "d": 1},
)
"""Every architecture the count findings judge: per family, widths, depths, degrees, heads,
head dimensions and groups varied."""

QUICK: tuple[int, ...] = (1, 4, 10, 12, 17, 20)
"""The catalogue entries of a quick run: one per family (bias-free ReLU ``K = 3``, square linear
``K = 2``, deep linear of depth 3, degree-2 polynomial, two heads, two query heads sharing one
key/value head)."""

FILLING = {"family": "filling", "p": 2, "widths": [3, 6], "n": 1}
"""The polynomial network wider than the quadrics it can express (beyond identifiability)."""

CONTROL_KNOWN = {"family": "linear2", "d": 2, "K": 2, "n": 2}
"""The count instrument's known answer: 3 laws (``K (K + 1) / 2``, Marcotte et al. 2023), and
4 (``K^2``) when the brackets are skipped."""

CONTROL_BENT = {"family": "bent", "d": 4, "K": 3, "n": 2}
"""The two-layer network whose ``relu`` the perturbation bends (``relu(z) + eps z^2``): its
3 laws must go (derived: none)."""

RECORDER_MODELS = (
    "docs_mlp",
    "docs_bn_eps0",
    "linear_chain",
    "mha_bias",
    "gqa_bias",
    "digits_mlp",
    "digits_cnn",
    "digits_transformer",
)
"""The models whose recorded invariants are compared with the count (``_networks``:
``recorder_model``): the documented examples and the digits networks of
``gauge_on_networks`` (hidden width 8, the CNN as it is, the transformer at embedding 8). The
``find_units`` example is counted at ``eps = 0``: at torch's ``eps = 1e-5`` the scale
symmetries are broken at order ``eps``, whose singular values (near ``1e-7``) leave no stable
rank decision (gap near ``4e5``, under the ``1e6`` this experiment publishes)."""

QUICK_RECORDER = ("docs_mlp", "linear_chain", "mha_bias", "gqa_bias")
"""The recorder models of a quick run."""

DRIFT_MODELS = ("mlp", "cnn", "transformer")
"""The networks of ``gauge_on_networks`` whose recorded invariants' drift is fitted."""

PLANTED = (1.0, 0.5, 0.1, 1e-3, 1e-7)
"""The planted singular values of the rank control (a ``12 x 8`` matrix of rank 5)."""

FROZEN_TOL = 1e-10
"""A frozen entry's gradient is rounding: at most this fraction of the largest gradient of the
model's other recorded groups."""


FINDING_MEASURES: dict[str, Measure] = {
    "conservation_laws.count:*": Measure(
        "exact",
        "largest |measured - derived| number of laws over the family's sizes (a rank)",
        0.5,
        paper=0.0,
        why="a deterministic rank at generic points: the paper's count exactly (0 mismatch)",
    ),
    "conservation_laws.noether:*": Measure(
        "exact",
        "number of mismatches between generators, laws and silent symmetries",
        0.5,
        paper=0.0,
        why="deterministic ranks: Noether's correspondence exactly (0 mismatch)",
    ),
    "conservation_laws.beyond_identifiability": Measure(
        "exact",
        "|laws - scalings| plus 1 if no extra null direction",
        0.5,
        paper=0.0,
        why="deterministic ranks: the group's laws only (0)",
    ),
    "conservation_laws.drift_slope:*": Measure(
        "any shape",
        "per-seed least-squares slope of log drift against log eta (a log-log exponent)",
        0.1,
        paper=2.0,
        why="second order in eta: 2 (1 per unit time); the band's half-width; the mean rule "
        "(equivalence) missed the bars on resamples of the published values (gaugedyn "
        "audit-rules: 6 of 7 groups, 8 seeds with outlying slopes), so it is judged "
        "distribution-free by its median, as gauge_on_networks' drift slope",
    ),
}
"""What each finding of ``conservation_laws`` measures (finding-id pattern -> measure, the first
match; ``PROTOCOL.md``): the kind that chooses its rule and the smallest effect of interest, in
the measure's units, at which its power is computed."""

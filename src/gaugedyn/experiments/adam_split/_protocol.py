"""The constants of the adam_split protocols, fixed before any run: the beta grid's tasks,
readings, regions, claims and thresholds (``PROTOCOL.md`` in this folder, sections 3-6 and 10)
and its correctness tolerances; ``gauge_under_adam``'s gauges, parts and comparison sets (its
module docstring)."""

from __future__ import annotations

import math

from ...stats import Measure

# beta_grid (PROTOCOL.md)
TASKS: tuple[str, ...] = (
    "digits_mlp",
    "digits_cnn",
    "digits_resnet",
    "char_transformer",
    "char_gru",
    "word_mlp",
    "teacher_student",
)
"""The training tasks of `gaugedyn.experiments.adam_split.tasks` (named here so the analysis needs no torch)."""
TASK_KINDS: dict[str, str] = {
    "digits_mlp": "vision",
    "digits_cnn": "vision",
    "digits_resnet": "vision",
    "char_transformer": "language",
    "char_gru": "language",
    "word_mlp": "language",
    "teacher_student": "neither",
}
CONVENTIONS: tuple[str, ...] = ("squared", "norm")
SHARE_PARTS: tuple[str, ...] = ("sign", "lag", "residual")
REGIONS: tuple[str, ...] = ("beta2>beta1", "beta2<beta1")
MATCHES: tuple[str, ...] = ("beta1", "beta2")
CLAIMS: tuple[str, ...] = (
    "sign_dominated_tied",
    "lag_substantial",
    "residual_small",
    "tied_smoother",
)
THRESHOLDS: dict[str, dict[str, float]] = {
    "sign_dominated_tied": {"squared": 0.5, "norm": math.sqrt(0.5)},
    "lag_substantial": {"squared": 0.1, "norm": 0.25},
    "residual_small": {"squared": 0.0, "norm": 0.0},
    "tied_smoother": {"squared": 0.0, "norm": 0.0},
}
"""Fixed before any grid ran; the reasons are in ``PROTOCOL.md``."""
DIRECTIONS: dict[str, str] = {
    "sign_dominated_tied": ">",
    "lag_substantial": ">",
    "residual_small": "<",
    "tied_smoother": "<",
}
REFERENCE_TOL = 1e-4
PROTOCOL = "src/gaugedyn/experiments/adam_split/PROTOCOL.md"
PRIMARY_READING = "current/squared"
"""The reading whose estimate and interval a finding shows (its verdict is every reading's)."""
REFERENCE_SETS = ("corners", "all")
SUM_TOL = 1e-12
"""The five parts of a split sum to its update to this relative error (float64 reference; both
experiments)."""
MATMUL: dict[str, str] = {
    "float32": "every product of the stacked pass in float32 (the protocol's findings)",
    "bfloat16": "the stacked forward pass under torch's autocast to bfloat16 (its matrix "
    "products and convolutions on bfloat16 operands, accumulated in float32 by the CPU's "
    "bfloat16 dot-product instructions, their outputs and the elementwise work that follows "
    "them in bfloat16; the attention and the loss in float32); Adam's update, the split sums "
    "and the reference in float32 and float64 as before (PROTOCOL.md section 12: a declared "
    "reading, compared with float32)",
}
"""The precisions of the beta grid's stacked forward pass (``beta_grid``'s ``matmul``):
``"float32"`` is the protocol's; ``"bfloat16"`` the reading of ``PROTOCOL.md`` section 12,
declared before any run of it."""
MATMUL_SHIFT_TOL = 0.1
"""The bfloat16 reading agrees with float32 when every finding and reading has float32's verdict
and every estimate lies within this fraction of float32's 95% interval's width of float32's
estimate (``PROTOCOL.md`` section 12; section 11's bar for the stacked pass)."""

FINDING_MEASURES: dict[str, Measure] = {
    "finding:*:sign_dominated_tied:*": Measure(
        "any shape",
        "per seed, the mean over the tied cells of the sign part's share of the update",
        0.05,
        why="the paper gives no value: five points of share (a share away from its bounds, "
        "averaged over cells and steps); the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "finding:*:lag_substantial:*": Measure(
        "any shape",
        "per seed, the mean over the region's cells of the lag's share of the update",
        0.05,
        why="the paper gives no value: five points of share; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "finding:*:residual_small:*": Measure(
        "any shape",
        "per seed, the mean over the region's cells of the residual's share minus the lag's",
        0.05,
        why="the paper gives no value: five points of share; the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "finding:*:tied_smoother:*": Measure(
        "any shape",
        "per seed, the mean over matched cell pairs of log(roughness tied / roughness untied)",
        0.18,
        why="the paper gives no value: log 1.2, tied updates 20% smoother (a log ratio: a "
        "log-scale rule); the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
    "finding:owner_rate:*": Measure(
        "outcome",
        "the a-heavy copy ends as the owner in a seed-configuration (1) or not (0)",
        0.25,
        why="no value under Adam (gradient flow: 1): a rate of 3/4",
    ),
    "finding:gauge_gap:*": Measure(
        "any shape",
        "per seed, the mean over configurations of log(t_w / t_a)",
        0.69,
        why="no value under Adam (gradient flow: about log D^2): log 2, a factor-two gap (a log "
        "ratio: a log-scale rule); the mean rule missed the size bar on resamples of the published values (gaugedyn audit-rules), so it is judged distribution-free by its median",
    ),
}
"""What each finding of ``beta_grid`` and ``gauge_under_adam`` measures (finding-id pattern ->
measure; ``PROTOCOL.md``, "Rules and power"): the kind that chooses its rule and the smallest
effect of interest, in the measure's units, at which its power is computed."""

# gauge_under_adam
GAUGES = ("w-heavy", "a-heavy")
APPLIED_TOL = 1e-12
PART_NAMES = ("sign", "lag", "residual")
GROUPS = ("all configurations", "tied", "untied")
"""The comparison sets a finding is judged over (its readings): every ``(beta1, beta2)``, the
tied ones, the untied ones."""


def copies_of(task: dict) -> list[tuple[float, float, int]]:
    """The copies ``(beta1, beta2, seed index)`` of one batched task, in the order of its
    arrays: ``beta1`` major, then ``beta2``, then the seed index."""
    return [
        (float(b1), float(b2), k)
        for b1 in task["beta1s"]
        for b2 in task["beta2s"]
        for k in range(int(task["seeds"]))
    ]


def cell_tasks(task: dict) -> list[dict]:
    """The cells ``(D, beta1, beta2)`` of a task, each the task a cell was before the cells of a
    ``D`` were batched: ``{"dim", "beta1", "beta2", and the shared settings}``."""
    rest = {k: v for k, v in task.items() if k != "betas"}
    return [{**rest, "beta1": float(b1), "beta2": float(b2)} for b1, b2 in task["betas"]]

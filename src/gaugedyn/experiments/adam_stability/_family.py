"""The second network family of ``spike_boundary``: digits MLPs that are not teacher-student
(issue 42, Build 4), under cross-entropy into the confident regime or under a mean-squared loss
to one-hot labels.

The network tasks of ``_calibration`` are one teacher-student family with a mean-squared loss.
The abstract's linear boundary is about confident cross-entropy: a network that fits its
training labels drives the cross-entropy towards zero by growing its logits, and the loss along
an update develops a narrow core and a steep wall. The candidates, declared before any pilot
of each (`CANDIDATES`, in the order the pilot tries them), are full-batch float64 MLPs
64-``hidden``-10 (ReLU) on the first ``n_samples`` of scikit-learn's digits (``_batched``'s
``digits_ce`` and ``digits_mse``, the package's own programs: `_scan._run_task`):

- ``digits_ce``: width 32 on 64 images (2,410 parameters for 64 labels): it fits every label
  within a few hundred steps at ``lr = 1e-2`` and then sits in the confident regime for the
  rest of a run; the narrowest data set that holds every class several times, chosen for the
  CPU cost of runs of up to 1.3e5 steps (a copy-step costs about 0.2-0.4 ms on the session's
  EPYC at 8 copies);
- ``digits_ce_w16``: width 16 on 128 images (1,210 parameters for 128 labels): a narrower
  network on twice the data, still able to fit every label but with less room, the fallback
  when the first has fewer than `MIN_ROWS` rows with a settled edge.

Both were piloted and fail the rule (their loss falls to where the gradient meets Adam's
``eps``; ``docs/adam-stability.md``). Declared after that pilot and before any run of theirs,
the mean-squared side on the same real data (half the squared error to the one-hot labels,
summed over the ten outputs and averaged over the images: ``adam_edge``'s ``mse``), a family
that is still not teacher-student (real inputs, no teacher) but realizable: the loss can fall
towards 0 while the curvature at the fitted labels stays finite (the Gauss-Newton part does
not vanish with the loss, as cross-entropy's does), as in the teacher tasks whose settled runs
collapse and spike:

- ``digits_mse``: ``digits_ce``'s network and data (width 32 on 64 images, 2,410 parameters
  for 640 targets: enough to fit every one-hot label exactly), so that it differs from the
  first candidate in its loss alone and costs what its piloted rows cost (about five
  CPU-minutes a row without a spiky cell);
- ``digits_mse_n128``: width 32 on 128 images (2,410 parameters for 1,280 targets, still
  able to fit every label), the fallback on twice the data at a little more cost a step.

The pilot (`_family_pilot`) runs each candidate on `ROWS` x `COLUMNS` with `SEEDS` seeds a
cell and picks the first with at least `MIN_ROWS` rows with a settled edge: the defining
property, never a slope. `family_task()` is the candidate as a ``spike_boundary`` task.
"""

from __future__ import annotations

import math
from typing import Any

from ..._errors import InputError

CANDIDATES: dict[str, dict[str, Any]] = {
    "digits_ce": {"task": "digits_ce", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_ce_w16": {
        "task": "digits_ce",
        "hidden": 16,
        "n_samples": 128,
        "lr": 1e-2,
        "eps": 1e-8,
    },
    "digits_mse": {"task": "digits_mse", "hidden": 32, "n_samples": 64, "lr": 1e-2, "eps": 1e-8},
    "digits_mse_n128": {
        "task": "digits_mse",
        "hidden": 32,
        "n_samples": 128,
        "lr": 1e-2,
        "eps": 1e-8,
    },
}
"""The declared candidates, in the order the pilot tries them (module doc): ``_batched`` task,
hidden width, images, Adam's step size and ``eps`` (the network tasks' own,
`_protocol.ADAM_EPS`)."""
WALL_CANDIDATES: dict[str, dict[str, Any]] = {
    "digits_ce_wd": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 1.0,
    },
    "digits_ce_wd01": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.1,
    },
    "digits_ce_wd001": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-2,
        "eps": 1e-30,
        "weight_decay": 0.01,
    },
    "digits_ce_wd01_lr3": {
        "task": "digits_ce",
        "hidden": 32,
        "n_samples": 64,
        "lr": 1e-3,
        "eps": 1e-30,
        "weight_decay": 0.1,
    },
}
"""The core-wall candidates (issue 42, Build 5), declared before their pilot on the cheap
diagnostics of ``docs/adam-stability.md`` ("What a confident cross-entropy task needs"): a
confident cross-entropy task has no finite minimiser, so under Adam its loss falls
exponentially (about 8 decades per 100 steps at ``1 - beta2 = 0.316``) until the gradient
meets ``eps`` and stays there quiet, whatever ``eps``; decoupled weight decay
(``torch.optim.AdamW``'s, `_batched.adam_step_sets`) gives it a finite minimiser that holds
the loss about 10-12 decades down, far above the float's resolution, with every label fit.
``digits_ce_wd``: ``digits_ce``'s network, data and step size with weight decay 1 and
``eps = 1e-30`` (below every gradient of the settled regime, so the level is the weight
decay's, not ``eps``'s). In their own tuple so that `CANDIDATES`' order (the family pilot's)
is not touched.

``digits_ce_wd`` failed its property (stored pilot, ``wall_pilot.json``). Declared after that
pilot and its diagnostics, before any run of theirs (session 15), three more, tried in this
order. The reason, from the stored diagnostics: at weight decay 1 the settled runs are quiet
with largest rises of 0.0-0.2 decades at ``1 - beta2 >= 0.03`` and hold the loss at 1e-10 ...
1e-12. A decoupled weight decay's stationary point has ``m / sqrt(v) = -wd theta`` per
coordinate; a gradient of steady sign gives ``|m / sqrt(v)| = 1``, so at ``wd = 1`` the
weights sit where ``|theta|`` is of order ``1 / wd`` and Adam moves like sign descent, pulled
back by the decay at a rate ``lr wd`` a step: no core to overshoot. A smaller decay lets the
weights and the margins grow (the level falls) and asks for ``|E g| / rms(g) = wd |theta|``
well below 1 at the stationary point: the gradient must change sign along the run, the iterate
crossing the valley's floor, the regime of the core-wall picture and of the teachers'
collapse-and-spike cycle:

- ``digits_ce_wd01``: weight decay 0.1, otherwise ``digits_ce_wd``;
- ``digits_ce_wd001``: weight decay 0.01 (a lower level still; ``eps = 1e-30`` may set it
  where the gradient meets ``eps``: the diagnostics show which);
- ``digits_ce_wd01_lr3``: weight decay 0.1 at ``lr = 1e-3``: the same stationary weights (the
  decay per step is ``lr wd``, the balance ``wd theta`` does not involve ``lr``) with a ten
  times smaller step against the valley's width, the fallback if the first two sit too near
  the divergence line.

Their rows are scanned only below `WALL_TOP` (declared with them)."""
WALL_ROWS = (0.3, 0.2, 0.1)
"""The core-wall candidates' declared rows: those of `ROWS` whose edges the diagnostics place
inside `COLUMNS` at a cost the session's two cores can pay (the row 0.3's edge lies between
``1 - beta2`` = 0.0316, quiet, and 0.01, half its seeds spiky)."""
WALL_TOP = 1.0
"""The core-wall pilot scans a row ``1 - beta1 = a`` only over the columns ``1 - beta2 <=
WALL_TOP * a`` (declared after ``digits_ce_wd``'s pilot, before any run of the later
candidates; `wall_columns()`). Adam's moments grow without bound beyond ``beta1 = sqrt(beta2)``,
``1 - beta2 = 2a - a^2``; the stored pilot's rows 0.2 and 0.1 were spiky or diverged at their
top cells, ``beta1 / sqrt(beta2)`` 0.97 and 0.99, and the downward scan stopped there, while
the stored diagnostics read the cells below them (row 0.2 at 0.1, row 0.1 at 0.1 and 0.01)
quiet: spikes of the divergence line, not of a settled edge. Half the line's ``1 - beta2``
(about ``a``) keeps the scan clear of it and keeps a teacher-like edge ``1 - beta2 = C a``
(``C`` about 0.04-0.06) inside by a factor above 15. ``digits_ce_wd``'s stored rows were scanned
over every column, before this was declared (`WALL_UNCAPPED`)."""
WALL_UNCAPPED = ("digits_ce_wd",)
"""The core-wall candidates piloted before `WALL_TOP` was declared: scanned over every column."""
WALL_MIN_ROWS = 2
"""The defining property of a core-wall candidate (declared before its pilot): confident (every
run's settled median loss below `confident_level()`: every image's loss below ``log 2``, so
every training label has probability above 1/2) and a spiky regime with a settled edge in at
least this many of `WALL_ROWS`."""
WALL_SEED_OFFSET = 100
"""Seed index of the first core-wall candidate (`seed_index()`), apart from `CANDIDATES`'."""
LOSSES = {
    "digits_ce": "cross-entropy",
    "digits_mse": "half the squared error to the one-hot labels",
}
"""The loss of each ``_batched`` task a candidate may name, in words (the pilot's tables)."""
ROWS = (0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01)
"""Rows ``1 - beta1``: four at or below 0.05, down to 0.01 (issue 42, Build 4)."""
COLUMNS = tuple(10 ** (-3 + 0.25 * k) for k in range(11))
"""Columns ``1 - beta2``: quarter decades from 1e-3 to 10^-0.5."""
SEEDS = 8
"""Seeds per evaluated cell: with 8, a cell whose seeds agree is significant at 95% (the edge's
interval, `_bisect.row_edge`)."""
MIN_ROWS = 6
"""Rows with a settled edge a candidate must show to be chosen."""


def candidate(name: str) -> dict[str, Any]:
    """The declared candidate ``name``, of `CANDIDATES` or `WALL_CANDIDATES`.

    Raises
    ------
    InputError
        When ``name`` is not a declared candidate.
    """
    if name in CANDIDATES:
        return CANDIDATES[name]
    if name in WALL_CANDIDATES:
        return WALL_CANDIDATES[name]
    raise InputError(
        f"family task {name!r} is not allowed; choose one of "
        f"{list(CANDIDATES) + list(WALL_CANDIDATES)}"
    )


def wall_columns(name: str, a: float) -> list[float]:
    """The ascending columns the core-wall pilot scans on row ``a`` of candidate ``name``:
    every column of `COLUMNS` for those of `WALL_UNCAPPED`, those with ``1 - beta2 <=
    WALL_TOP * a`` for the later candidates.

    Raises
    ------
    InputError
        When ``name`` is not a core-wall candidate.
    """
    if name not in WALL_CANDIDATES:
        raise InputError(
            f"core-wall candidate {name!r} is not allowed; choose one of {list(WALL_CANDIDATES)}"
        )
    cols = sorted(COLUMNS)
    if name in WALL_UNCAPPED:
        return cols
    return [c for c in cols if c <= WALL_TOP * a * (1 + 1e-9)]


def seed_index(name: str) -> int:
    """The candidate's index in the seeds of its cells (``SeedSequence([SEED, index, i,
    j])``): its place in `CANDIDATES`, or `WALL_SEED_OFFSET` plus its place in
    `WALL_CANDIDATES`."""
    candidate(name)
    if name in CANDIDATES:
        return list(CANDIDATES).index(name)
    return WALL_SEED_OFFSET + list(WALL_CANDIDATES).index(name)


def confident_level(name: str) -> float:
    """``log10`` of the mean loss below which every image's loss is below ``log 2`` (the mean
    times the images bounds each image's loss): ``log10(log(2) / n_samples)``."""
    return math.log10(math.log(2.0) / candidate(name)["n_samples"])


def family_task(
    name: str,
    spikes,
    seeds: int = SEEDS,
    a=ROWS,
    c=COLUMNS,
    also=(),
) -> dict[str, Any]:
    """Candidate ``name`` (`candidate()`) as a ``spike_boundary`` network task (``kind``
    ``"task"``, ``weight_decay`` where it has one, the
    initialisation start) on rows ``a`` and columns ``c`` with ``seeds`` copies a cell, judged
    by the detector sampling ``spikes`` (rise, block_min, blocks per horizon) and, when given,
    the shared pass's further samplings ``also``.

    Raises
    ------
    InputError
        When ``name`` is not a declared candidate.
    """
    cand = candidate(name)
    out = {
        "kind": "task",
        "task": cand["task"],
        "start": "init",
        "a": [float(x) for x in a],
        "c": sorted(float(x) for x in c),
        "seeds": int(seeds),
        "lr": float(cand["lr"]),
        "n_samples": int(cand["n_samples"]),
        "hidden": int(cand["hidden"]),
        "eps": float(cand["eps"]),
        "spikes": list(spikes),
    }
    if cand.get("weight_decay"):
        out["weight_decay"] = float(cand["weight_decay"])
    if also:
        out["also"] = [list(z) for z in also]
    return out

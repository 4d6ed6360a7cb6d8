"""The core-wall measurement on the cross-entropy family near its edge: a stored pilot (issue 42,
Build 5).

The abstract explains the linear boundary of confident cross-entropy by a narrow quadratic core
and a steep wall, effectively superquadratic at the scale of an update. A confident
cross-entropy fit under plain Adam has no settled level (its loss falls until the gradient
meets ``eps``, quiet; `diagnostics()`), so the core-wall candidates are declared apart
(`_family.WALL_CANDIDATES`, with decoupled weight decay) and piloted here (`pilot_main()`,
``wall_pilot.json``, judged by their defining property: `wall_summary()`, `wall_choose()`).
The measurement runs on the chosen candidate (or, as a diagnostic, on a named one), on the
very runs of its pilot: for every row
with a settled edge, the two cells of its bracket (the highest cell with spike probability at
least 1/2, just below the edge, and the evaluated cell above it, a quarter decade higher) are
run again with the pilot's seeds through the same program (`_scan._run_task`, so each copy
repeats its pilot trajectory and verdict), and at `MEASURES` steps evenly spread over the
settled window each copy's Adam update ``u`` (the step just taken) gives the effective exponent
of ``s -> L(theta + s u)`` (`gaugedyn.adam.effective_exponent`, as ``adam_edge`` measured the
mean-squared side: a fit over ``|s|`` from 1/32 to 1 update around the line minimum) and the
distance to the wall (the smallest ``|s|`` where the local exponent reaches
`gaugedyn.adam.WALL_EXPONENT`).

The findings (`findings()`): per seed the median exponent over its measurements; over the spiky
cells' seeds, judged by the rule of ``adam_edge``'s core-wall measure (`FINDING_MEASURES`,
threshold 2, ``>``): "the confident cross-entropy task's effective exponent exceeds 2"; and the
1-D ``|x|^n / n`` law at that exponent: its ``C(n) = c_b / (1 - beta1)`` read from the
published ``spike_boundary`` summary (``n`` = 3, 4, 6, the primary reading, log-linear in ``n``
between them) against the family's measured ``C`` (`_spike_analysis.task_C` over the pilot's
rows with an edge and ``1 - beta1 <= 0.1``): "predicts" when the interpolated value lies inside
the measured ``C``'s interval. Stored in ``family_wall.json`` (`main()`), drawn by
``tools/pilot_tables.py`` (`wall_markdown()`).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

MEASURES = 16
"""Effective-exponent measurements per copy, evenly spread over the settled window."""
STORED = Path(__file__).with_name("family_wall.json")
SUMMARY = Path(__file__).resolve().parents[4] / "results-data" / "spike_boundary" / "summary.json"
"""The published ``spike_boundary`` summary (the 1-D ``C(n)``)."""
PRIMARY = "settled, beta1>=0.9, orbit start"
"""The 1-D maps' primary reading, whose ``C`` the family's is compared with."""
RULE_SEED = 20261209
"""Seed of the judging rule's draw (a randomised rule's)."""
MEASURE_ID = "adam_edge.core_wall_exponent:*"
SEARCH = 2.0
"""The line minimum's search range in updates (`gaugedyn.adam.effective_exponent`'s
default, used here)."""
INTERIOR = 0.99
"""A line minimum counts as inside the search below this share of `SEARCH` (declared before
the bracket cells were measured, after a quiet cell of row 0.3 read exponent 1.0 with every
minimum at the search's end)."""
"""The declared measure whose rule judges the exponent (the mean-squared side's)."""


WALL_PILOT = Path(__file__).with_name("wall_pilot.json")
"""The stored pilot of `_family.WALL_CANDIDATES` (`pilot_main()`)."""


DIAGNOSTICS = (
    ("plain, eps 1e-8", 0.3, 10**-0.5, 1e-8, 0.0),
    ("plain, eps 1e-30", 0.3, 10**-0.5, 1e-30, 0.0),
    ("plain, eps 1e-300", 0.3, 10**-0.5, 1e-300, 0.0),
    ("weight decay 1, eps 1e-8", 0.3, 10**-0.5, 1e-8, 1.0),
    ("weight decay 1, eps 1e-30", 0.3, 10**-0.5, 1e-30, 1.0),
    ("weight decay 1, eps 1e-30", 0.3, 10**-1.5, 1e-30, 1.0),
    ("weight decay 1, eps 1e-30", 0.3, 0.01, 1e-30, 1.0),
    ("weight decay 1, eps 1e-30", 0.2, 0.1, 1e-30, 1.0),
    ("weight decay 1, eps 1e-30", 0.1, 0.1, 1e-30, 1.0),
    ("weight decay 1, eps 1e-30", 0.1, 0.01, 1e-30, 1.0),
    ("weight decay 0.1, eps 1e-30", 0.3, 10**-0.5, 1e-30, 0.1),
    ("weight decay 0.1, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.1),
    ("weight decay 0.1, eps 1e-30", 0.3, 0.01, 1e-30, 0.1),
    ("weight decay 0.1, eps 1e-30", 0.2, 0.1, 1e-30, 0.1),
    ("weight decay 0.1, eps 1e-30", 0.1, 0.1, 1e-30, 0.1),
    ("weight decay 0.1, eps 1e-30", 0.1, 0.01, 1e-30, 0.1),
    ("weight decay 0.01, eps 1e-30", 0.3, 10**-0.5, 1e-30, 0.01),
    ("weight decay 0.01, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.01),
    ("weight decay 0.01, eps 1e-30", 0.3, 0.01, 1e-30, 0.01),
    ("weight decay 0.01, eps 1e-30", 0.1, 0.1, 1e-30, 0.01),
    ("weight decay 0.01, eps 1e-30", 0.1, 0.01, 1e-30, 0.01),
    ("weight decay 0.1, eps 1e-30, lr 1e-3", 0.3, 10**-1.5, 1e-30, 0.1, 1e-3),
    ("weight decay 0.1, eps 1e-30, lr 1e-3", 0.1, 0.01, 1e-30, 0.1, 1e-3),
    ("smoothing 1e-3, eps 1e-8", 0.3, 10**-0.5, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-8", 0.3, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-8", 0.3, 0.01, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-8", 0.2, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-8", 0.1, 0.1, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-8", 0.1, 0.01, 1e-8, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-3, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.0, 1e-2, "digits_ls3"),
    ("smoothing 1e-2, eps 1e-8", 0.3, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls2"),
    ("smoothing 1e-2, eps 1e-8", 0.1, 0.01, 1e-8, 0.0, 1e-2, "digits_ls2"),
    ("weight decay 0.3, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.3, 1e-2, "digits_ce_wd03"),
    ("weight decay 0.3, eps 1e-30", 0.3, 0.01, 1e-30, 0.3, 1e-2, "digits_ce_wd03"),
    ("weight decay 0.3, eps 1e-30", 0.2, 10**-1.5, 1e-30, 0.3, 1e-2, "digits_ce_wd03"),
    ("weight decay 0.3, eps 1e-30", 0.1, 10**-1.5, 1e-30, 0.3, 1e-2, "digits_ce_wd03"),
    ("weight decay 0.3, eps 1e-30", 0.1, 0.01, 1e-30, 0.3, 1e-2, "digits_ce_wd03"),
    ("weight decay 0.5, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.5, 1e-2, "digits_ce_wd05"),
    ("weight decay 0.5, eps 1e-30", 0.3, 0.01, 1e-30, 0.5, 1e-2, "digits_ce_wd05"),
    ("weight decay 0.5, eps 1e-30", 0.2, 10**-1.5, 1e-30, 0.5, 1e-2, "digits_ce_wd05"),
    ("weight decay 0.5, eps 1e-30", 0.1, 10**-1.5, 1e-30, 0.5, 1e-2, "digits_ce_wd05"),
    ("weight decay 0.5, eps 1e-30", 0.1, 0.01, 1e-30, 0.5, 1e-2, "digits_ce_wd05"),
    ("smoothing 1e-3, width 8, 32 images", 0.3, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls3_w8"),
    ("smoothing 1e-3, width 8, 32 images", 0.3, 0.01, 1e-8, 0.0, 1e-2, "digits_ls3_w8"),
    ("smoothing 1e-3, width 8, 32 images", 0.2, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls3_w8"),
    ("smoothing 1e-3, width 8, 32 images", 0.1, 10**-1.5, 1e-8, 0.0, 1e-2, "digits_ls3_w8"),
    ("smoothing 1e-3, width 8, 32 images", 0.1, 0.01, 1e-8, 0.0, 1e-2, "digits_ls3_w8"),
    ("smoothing 1e-3, eps 1e-8, lr 1e-3", 0.3, 10**-1.5, 1e-8, 0.0, 1e-3, "digits_ls3_lr3"),
    ("smoothing 1e-3, eps 1e-8, lr 1e-3", 0.3, 0.01, 1e-8, 0.0, 1e-3, "digits_ls3_lr3"),
    ("smoothing 1e-3, eps 1e-8, lr 1e-3", 0.2, 10**-1.5, 1e-8, 0.0, 1e-3, "digits_ls3_lr3"),
    ("smoothing 1e-3, eps 1e-8, lr 1e-3", 0.1, 10**-1.5, 1e-8, 0.0, 1e-3, "digits_ls3_lr3"),
    ("smoothing 1e-3, eps 1e-8, lr 1e-3", 0.1, 0.01, 1e-8, 0.0, 1e-3, "digits_ls3_lr3"),
    ("weight decay 0.7, eps 1e-30", 0.3, 10**-1.5, 1e-30, 0.7, 1e-2, "digits_ce_wd07"),
    ("weight decay 0.7, eps 1e-30", 0.3, 0.01, 1e-30, 0.7, 1e-2, "digits_ce_wd07"),
    ("weight decay 0.7, eps 1e-30", 0.2, 10**-1.5, 1e-30, 0.7, 1e-2, "digits_ce_wd07"),
    ("weight decay 0.7, eps 1e-30", 0.1, 10**-1.5, 1e-30, 0.7, 1e-2, "digits_ce_wd07"),
    ("weight decay 0.7, eps 1e-30", 0.1, 0.01, 1e-30, 0.7, 1e-2, "digits_ce_wd07"),
    ("teacher KL, eps 1e-8", 0.3, 10**-1.5, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.3, 0.01, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.2, 10**-1.5, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.2, 0.01, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.1, 10**-1.5, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.1, 0.01, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("teacher KL, eps 1e-8", 0.1, 10**-2.5, 1e-8, 0.0, 1e-2, "teacher_kl"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.3, 10**-1.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.3, 0.01, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.2, 10**-1.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.2, 0.01, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.1, 10**-1.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.1, 0.01, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.1, 10**-2.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.3, 10**-2.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.3, 1e-3, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.2, 10**-2.5, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.2, 1e-3, 1e-8, 0.0, 1e-2, "gauss_ls3"),
    ("binary smoothing 1e-3, Gaussian, eps 1e-8", 0.1, 1e-3, 1e-8, 0.0, 1e-2, "gauss_ls3"),
)
"""The diagnostic cells (`diagnostics()`): ``(label, 1 - beta1, 1 - beta2, eps, weight
decay[, lr[, candidate]])``: the named candidate's network, data and loss
(`_family.candidate()`; ``digits_ce``'s where none is named: width 32, 64 images, the
accurate cross-entropy `_batched.confident_ce`; a candidate whose task is one of
`_batched.SMOOTHED_TASKS`: its label-smoothed ``KL``) at the cell's ``eps``, weight decay and
``lr`` (``1e-2`` where none is given; stored as the cell's ``task``): what holds a confident
fit's loss, and where a spiky regime appears. Diagnostics, not a pilot: no candidate is judged
on them. Rows 8-10 were added after `digits_ce_wd`'s pilot, whose downward scans stopped at
the rows 0.2 and 0.1's top cells: the cells below them. The rest were declared with the
candidates ``digits_ce_wd01``, ``digits_ce_wd001`` and ``digits_ce_wd01_lr3``, before any
run of theirs (`_family.WALL_CANDIDATES`): their cells at the row 0.3 where ``digits_ce_wd``
read spikes only in the transient window, and at the rows 0.2 and 0.1 below the divergence
line (`_family.WALL_TOP`). The next nine were declared with the label-smoothed candidates
``digits_ls3`` and ``digits_ls2`` before any run of theirs: the same rows and columns (the
row 0.2 a quarter decade lower, clear of `_family.WALL_TOP`), one cell at ``eps = 1e-30``
(whether ``eps`` sets what the first reads). The next ten were declared with ``digits_ce_wd03``
and ``digits_ce_wd05`` before any run of theirs (`_family.WALL_CANDIDATES`): rows 0.3, 0.2 and
0.1 below `_family.WALL_TOP`, two columns on the rows 0.3 and 0.1 (whether a spiky cell lies
below a quiet one); the next ten, the same five cells each, with ``digits_ls3_w8`` and
``digits_ls3_lr3`` before any run of theirs, the next five, the same cells, with
``digits_ce_wd07`` before any run of its own, the next seven with ``teacher_kl`` before any
run of its own (the same five and the rows 0.2 and 0.1 at ``1 - beta2`` 0.01 and 10^-2.5,
where the teacher tasks' edges, ``C (1 - beta1)`` with ``C`` about 0.035-0.06, put spiky
cells below quiet ones), the next seven, the same cells, with ``gauss_ls3`` before any run
of its own, and the last five with ``gauss_ls3`` after those seven, before running: the
rows 0.3 and 0.2 at ``1 - beta2`` 10^-2.5 and 10^-3 and the row 0.1 at 10^-3."""
DIAGNOSTIC_TRACE = 10
"""Each diagnostic run's ``log10`` loss is kept as the median over each tenth of the run."""


def diagnostics(
    done: list[dict[str, Any]] | None = None, only: set[int] | None = None
) -> list[dict[str, Any]]:
    """The `DIAGNOSTICS` cells, 8 seeds each (``SeedSequence([SEED, 98, cell index])``): the
    settled window's statuses, settled median ``log10`` loss and largest rise per seed, and the
    median ``log10`` loss over each tenth of the run per seed (`DIAGNOSTIC_TRACE`). Cells in
    ``done`` (stored ones, matched by set-up) are kept, not run again; with ``only`` (places in
    `DIAGNOSTICS`), of the cells not stored only those run (each cell's seeds are its place's,
    so a cell run alone is the cell of a full run), the rest left out."""
    import torch

    from ...adam import SPIKE_SAMPLING
    from ._family import SEEDS, family_task
    from ._family_pilot import SEED
    from ._protocol import run_steps
    from ._scan import _run_task

    out = []
    kept = {(z["label"], z["a"], z["c"], z["eps"], z["weight_decay"], z.get("lr", 1e-2)): z
            for z in done or []}  # fmt: skip
    for q, (label, a, c, eps, wd, *more) in enumerate(DIAGNOSTICS):
        lr = more[0] if more else 1e-2
        name = str(more[1]) if len(more) > 1 else "digits_ce"
        if (label, a, c, eps, wd, lr) in kept:
            out.append(kept[(label, a, c, eps, wd, lr)])
            continue
        if only is not None and q not in only:
            continue
        T = int(run_steps(a, c))
        trace = np.full((SEEDS, T), np.nan)

        def call(t: int, model, before: list[torch.Tensor], trace=trace) -> None:
            with torch.no_grad():
                trace[:, t] = torch.log10(model.losses(before)).cpu().numpy()

        task = family_task(name, list(SPIKE_SAMPLING[:3]), SEEDS, [a], [c])
        task = task | {"eps": eps, "weight_decay": wd, "lr": lr}
        t0 = time.process_time()
        r = _run_task(task, np.random.SeedSequence([SEED, 98, q]), watch=(set(range(T)), call))
        parts = np.array_split(trace, DIAGNOSTIC_TRACE, axis=1)
        out.append({
            "label": label, "a": a, "c": c, "eps": eps, "weight_decay": wd, "lr": lr, "steps": T,
            **({"task": name} if name != "digits_ce" else {}),
            "status": np.asarray(r["status"])[0, 0, :, 0].tolist(),
            "settled_median_log10_loss": np.round(r["settled_median_log10_loss"][0, 0], 2).tolist(),
            "max_rise": np.round(np.asarray(r["max_rise"])[0, 0, :, 0], 2).tolist(),
            "trace": np.round(np.stack([np.median(z, axis=1) for z in parts], 1), 1).tolist(),
            "cpu_seconds": round(time.process_time() - t0, 1),
        })  # fmt: skip
    return out


def diagnostics_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines of stored `diagnostics()`: per cell its settled statuses, the median over
    seeds of the settled median ``log10`` loss and of the largest rise, and the median over
    seeds of the ``log10`` loss over each tenth of the run."""
    from ._protocol import CODES

    names = {v: k for k, v in CODES.items()}
    lines = [
        "Diagnostics, not a pilot (`_family_wall.diagnostics()`, stored in `wall_pilot.json`): "
        "`digits_ce`'s network and data (64-32-10, 64 images, lr 0.01 unless the set-up names "
        "others) with the accurate "
        "cross-entropy (set-ups named smoothing: the label-smoothed cross-entropy less its "
        "minimum, KL(q || p), `_batched.smoothed_kl`; teacher KL: `teacher_kl`'s 20-8-10 "
        "students on a ReLU teacher's softmax, KL(q || p), `_batched.TeacherKLMLP`; binary "
        "smoothing: `gauss_ls3`'s 20-8-1 students on 64 Gaussian inputs, random labels, KL, "
        "`_batched.GaussianSmoothedMLP`), 8 seeds a cell; the settled window's statuses, the medians over seeds "
        "of the settled median log10 loss and of the largest rise (decades), and the median "
        "log10 loss over each tenth of the run (first to last, median over seeds):",
        "",
        "| set-up | $1 - \\beta_1$ | $1 - \\beta_2$ | steps | settled | settled log10 loss | "
        "largest rise | log10 loss by tenths of the run | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for z in rows:
        st = [names[int(v)] for v in z["status"]]
        counts = ", ".join(f"{st.count(k)} {k}" for k in dict.fromkeys(st))
        lv = np.asarray(z["settled_median_log10_loss"], float)
        tr = np.median(np.asarray(z["trace"], float), axis=0)
        lines.append(
            f"| {z['label']} | {z['a']:g} | {z['c']:.3g} | {z['steps']} | {counts} | "
            f"{_fmt(float(np.nanmedian(lv)) if np.isfinite(lv).any() else math.nan)} | "
            f"{_fmt(float(np.nanmedian(z['max_rise'])))} | "
            + " ".join(f"{v:.0f}" for v in tr)
            + f" | {z['cpu_seconds']:.0f} |"
        )
    return lines


def _network_words(cand: dict[str, Any]) -> str:
    """A core-wall candidate's network and data, in words (`_family.NETWORKS`,
    `_family.WALL_NETWORKS`)."""
    from ._family import NETWORKS, WALL_NETWORKS

    return (NETWORKS | WALL_NETWORKS)[cand["task"]].format(**cand)


def _loss_words(cand: dict[str, Any]) -> str:
    """The loss a core-wall candidate's detector reads, in words."""
    from ._batched import (
        GAUSS_SMOOTHED_TASKS,
        SMOOTHED_TASKS,
        TEACHER_KL_MARGIN,
        TEACHER_KL_TASKS,
        TEACHER_KL_WIDTH,
    )

    if cand["task"] in GAUSS_SMOOTHED_TASKS:
        return (
            f"binary cross-entropy to random labels smoothed by "
            f"{GAUSS_SMOOTHED_TASKS[cand['task']]:g}, read as its excess over its minimum, "
            "KL(q || p)"
        )
    if cand["task"] in TEACHER_KL_TASKS:
        return (
            f"cross-entropy to the softmax of a 20-{TEACHER_KL_WIDTH}-10 ReLU teacher (median "
            f"margin {TEACHER_KL_MARGIN:g}), read as its excess over its minimum, KL(q || p)"
        )
    if cand["task"] in SMOOTHED_TASKS:
        return (
            f"cross-entropy to the labels smoothed by {SMOOTHED_TASKS[cand['task']]:g}, read as "
            "its excess over its minimum, KL(q || p)"
        )
    return "cross-entropy"


def _loss_symbol(cand: dict[str, Any]) -> str:
    """``KL`` for a label-smoothed candidate (its loss reading), else ``loss``."""
    from ._batched import GAUSS_SMOOTHED_TASKS, SMOOTHED_TASKS, TEACHER_KL_TASKS

    kl = (*SMOOTHED_TASKS, *TEACHER_KL_TASKS, *GAUSS_SMOOTHED_TASKS)
    return "KL" if cand["task"] in kl else "loss"


def wall_summary(name: str, pilot: dict[str, Any]) -> dict[str, Any]:
    """Candidate ``name`` of `_family.WALL_CANDIDATES` in its stored pilot against its defining
    property (`_family.WALL_MIN_ROWS`): the rows run, each row's settled edge
    (`_family_pilot.row_reading`), the rows with an edge, the highest settled median
    ``log10`` loss of any run against `_family.confident_level()`, and whether the candidate
    ``meets`` the property (every declared row run, every run confident, enough edges) or
    ``fails`` it (a run not confident, or too many rows run without an edge for the rest to
    reach `_family.WALL_MIN_ROWS`)."""
    from ._family import WALL_MIN_ROWS, WALL_ROWS, confident_level
    from ._family_pilot import row_reading

    rows = pilot.get("candidates", {}).get(name, {}).get("rows", [])
    edges = [row_reading(r) for r in rows]
    n = sum(math.isfinite(e[0]) for e in edges)
    lv = np.array([v for r in rows for z in r["cells"] for v in z["settled_median_log10_loss"]],
                  float)  # fmt: skip
    top = float(np.nanmax(lv)) if np.isfinite(lv).any() else math.nan
    confident = bool(not rows or (np.isfinite(lv).all() and top < confident_level(name)))
    complete = sorted(r["row"] for r in rows) == sorted(WALL_ROWS)
    short = len(rows) - n > len(WALL_ROWS) - WALL_MIN_ROWS
    return {"rows": [r["row"] for r in rows], "edges": edges, "with_edge": n,
            "highest_log10_loss": top, "confident": confident, "complete": complete,
            "meets": complete and confident and n >= WALL_MIN_ROWS,
            "fails": (not confident) or short or (complete and n < WALL_MIN_ROWS)}  # fmt: skip


def wall_choose(pilot: dict[str, Any]) -> str | None:
    """The first candidate of `_family.WALL_CANDIDATES`, in its order, that meets its defining
    property (`wall_summary()`), passing over those stopped before a pilot
    (`_family.WALL_STOPPED`); ``None`` while the first not failing it is undecided, or when
    all fail it."""
    from ._family import WALL_CANDIDATES, WALL_STOPPED

    for name in WALL_CANDIDATES:
        if name in WALL_STOPPED:
            continue
        s = wall_summary(name, pilot)
        if s["meets"]:
            return name
        if not s["fails"]:
            return None
    return None


def pilot_main(argv: list[str] | None = None) -> None:
    """Run declared rows of a core-wall candidate (``--candidate NAME``, ``--row A``
    repeatable; every row of `_family.WALL_ROWS` when none) by the family pilot's own scan
    (`_family_pilot.scan_row`, over the row's `_family.wall_columns`) and merge them into ``wall_pilot.json``, with the date,
    command, machine and load at each row's start."""
    import argparse

    from ..._meta import cpu_model
    from ...harness import write_strict_json
    from ._family import SEEDS, WALL_CANDIDATES, WALL_ROWS, wall_columns
    from ._family_pilot import add_row

    parser = argparse.ArgumentParser(description="The core-wall candidates' pilot.")
    parser.add_argument("--candidate", help="a candidate of _family.WALL_CANDIDATES")
    parser.add_argument("--row", type=float, action="append", help="a row of _family.WALL_ROWS")
    args = parser.parse_args(argv)
    if args.candidate not in WALL_CANDIDATES:
        raise SystemExit(f"--candidate {args.candidate!r} is not allowed; the declared "
                         f"core-wall candidates are {list(WALL_CANDIDATES)}")  # fmt: skip
    rows = WALL_ROWS if not args.row else tuple(args.row)
    bad = [a for a in rows if a not in WALL_ROWS]
    if bad:
        raise SystemExit(f"--row {bad[0]!r} is not allowed; the declared rows are {WALL_ROWS}")
    old = json.loads(WALL_PILOT.read_text()) if WALL_PILOT.exists() else {"candidates": {}}
    for a in rows:
        entry = add_row(old["candidates"], args.candidate, a, wall_columns(args.candidate, a))
        dates = [r["date"] for c in old["candidates"].values() for r in c["rows"]]
        old = {
            "date": max(dates)[:10],
            "command": "python -m gaugedyn.experiments.adam_stability._family_wall --pilot "
            "--candidate NAME [--row A]",
            "machine": cpu_model(),
            "seeds": SEEDS,
            "candidates": old["candidates"],
        } | {k: v for k, v in old.items() if k == "diagnostics"}
        write_strict_json(WALL_PILOT, old)
        cpu = sum(z["cpu_seconds"] for z in entry["cells"])
        print(f"wrote {WALL_PILOT}: {args.candidate} row {a} ({cpu:.0f} CPU s)", flush=True)


def measure_steps(a: float, c: float, count: int = MEASURES) -> list[int]:
    """``count`` steps evenly spread over the settled window of the cell ``(a, c)`` (from
    `_protocol.settle_steps` to the end of the run, `_protocol.run_steps`)."""
    from ._protocol import run_steps, settle_steps

    t0, t1 = int(settle_steps(a, c)), int(run_steps(a, c))
    return [int(v) for v in np.linspace(t0, t1 - 1, count).round()]


def wall_cell(name: str, i: int, j: int, count: int = MEASURES) -> dict[str, Any]:
    """The cell ``(ROWS[i], sorted(COLUMNS)[j])`` of candidate ``name`` run again with its
    pilot seeds, the effective exponent measured at `measure_steps()`: per seed its settled
    status code, the exponents and distances to the wall ``(seeds, count)`` and ``log10`` of
    the loss before each measured step."""
    import torch

    from ...adam import SPIKE_SAMPLING, effective_exponent
    from ._family import COLUMNS, ROWS, SEEDS, family_task
    from ._family_pilot import cell_seed
    from ._scan import _run_task

    a, c = ROWS[i], sorted(COLUMNS)[j]
    steps = measure_steps(a, c, count)
    ex = np.full((SEEDS, count), np.nan)
    s_min = np.full((SEEDS, count), np.nan)
    wall = np.full((SEEDS, count), np.nan)
    level = np.full((SEEDS, count), np.nan)

    def call(t: int, model, before: list[torch.Tensor]) -> None:
        q = steps.index(t)
        u = [p.detach() - b for p, b in zip(model.params, before)]
        with torch.no_grad():
            level[:, q] = torch.log10(model.losses(before)).cpu().numpy()
            for b in range(SEEDS):

                def f(s: float, b: int = b) -> float:
                    return float(model.losses([o + s * d for o, d in zip(before, u)])[b])

                e = effective_exponent(f)
                ex[b, q], wall[b, q], s_min[b, q] = e["exponent"], e["wall"], e["s_min"]

    task = family_task(name, list(SPIKE_SAMPLING[:3]), SEEDS, [a], [c])
    t0 = time.process_time()
    r = _run_task(task, cell_seed(name, a, c), watch=(set(steps), call))
    return {
        "row": a,
        "c": c,
        "steps": steps,
        "status": np.asarray(r["status"])[0, 0, :, 0].tolist(),
        "exponent": ex.tolist(),
        "wall": wall.tolist(),
        "s_min": s_min.tolist(),
        "log10_loss": level.tolist(),
        "cpu_seconds": round(time.process_time() - t0, 1),
    }


def bracket_cells(name: str, pilot: dict[str, Any]) -> list[tuple[int, int, str]]:
    """``(row index, column index, side)`` of every row of ``name`` with a settled edge in the
    pilot: its bracket's spiky cell (``"spiky"``) and the evaluated cell above (``"quiet"``)."""
    from ._bisect import bracket
    from ._family import ROWS, column_index
    from ._family_pilot import WINDOW

    out = []
    for row in pilot["candidates"][name]["rows"]:
        c = np.array([z["c"] for z in row["cells"]], float)
        st = np.array([np.asarray(z["status"])[:, WINDOW] for z in row["cells"]])
        br = bracket(c, st)
        if br is None:
            continue
        i = ROWS.index(row["row"])
        out += [(i, column_index(br[0]), "spiky"), (i, column_index(br[1]), "quiet")]
    return out


def named_cells(name: str, pilot: dict[str, Any], cells) -> list[tuple[int, int, str]]:
    """``(row index, column index, side)`` of the named pilot cells ``cells`` (pairs ``(1 -
    beta1, 1 - beta2)``, each an evaluated cell of ``name``'s stored pilot): the side
    ``"spiky"`` where at least half its seeds judged spiky or quiet are spiky under the
    settled window, else ``"quiet"``. For a diagnostic measurement where no row has a bracket.

    Raises
    ------
    InputError
        When a cell is not an evaluated cell of the stored pilot.
    """
    from ..._errors import InputError
    from ._family import COLUMNS, ROWS, column_index
    from ._family_pilot import WINDOW

    cols = sorted(COLUMNS)
    out = []
    rows = {r["row"]: r for r in pilot.get("candidates", {}).get(name, {}).get("rows", [])}
    for a, c in cells:
        j = int(np.argmin(np.abs(np.log(cols) - math.log(c))))
        z = next(
            (x for x in rows.get(a, {"cells": []})["cells"] if column_index(x["c"]) == j), None
        )
        if z is None or not math.isclose(cols[j], c, rel_tol=1e-2):
            raise InputError(f"cell ({a}, {c}) is not allowed; name an evaluated cell of "
                             f"{name!r}'s stored pilot")  # fmt: skip
        st = np.asarray(z["status"])[:, WINDOW]
        judged = int(((st == 0) | (st == 1)).sum())
        side = "spiky" if judged and (st == 1).sum() >= judged / 2 else "quiet"
        out.append((ROWS.index(a), j, side))
    return out


def one_d_C(summary: Path = SUMMARY) -> dict[float, list[float]]:
    """``{n: [C, low, high]}`` of the published 1-D maps (``near_linear:n*``, the primary
    reading `PRIMARY`)."""
    claims = json.loads(summary.read_text())["claims"]
    out = {}
    for cl in claims:
        if cl["id"].startswith("spike_boundary.near_linear:n"):
            n = float(cl["id"].rsplit(":n", 1)[1])
            tol = cl["tolerance"]
            tol = json.loads(tol) if isinstance(tol, str) else tol
            out[n] = [float(v) for v in tol["C"][PRIMARY]]
    return dict(sorted(out.items()))


def C_at(n: float, table: dict[float, list[float]]) -> float:
    """The 1-D ``C`` at exponent ``n``: log-linear interpolation between the published ``n``;
    ``nan`` outside their range."""
    ns = np.array(list(table), float)
    if not ns.min() <= n <= ns.max():
        return math.nan
    return float(10 ** np.interp(n, ns, np.log10([v[0] for v in table.values()])))


def interior(cell: dict[str, Any]) -> np.ndarray:
    """``(seeds, measures)``: whether a measurement's line minimum lies inside the search
    (``|s*| < INTERIOR * SEARCH``): a core within `SEARCH` updates. At the search's end the
    loss falls monotonically along the update (the confident regime between spikes: the
    logits grow) and the fit reads the slope of that fall, not a core or a wall."""
    return np.abs(np.asarray(cell["s_min"], float)) < INTERIOR * SEARCH


def seed_medians(cells: list[dict[str, Any]], side: str, core_only: bool = True) -> np.ndarray:
    """Per seed of the ``side`` cells, the median of its finite exponents (of the measurements
    with a core, `interior()`, unless ``core_only`` is false; seeds pooled over the rows, in
    their order; ``nan`` for a seed with none)."""
    vals = []
    for z in cells:
        if z["side"] != side:
            continue
        keep = interior(z) if core_only else np.ones(np.shape(z["exponent"]), bool)
        for e, k in zip(np.asarray(z["exponent"], float), keep):
            ok = e[np.isfinite(e) & k]
            vals.append(float(np.median(ok)) if ok.size else math.nan)
    return np.array(vals)


def findings(wall: dict[str, Any], pilot: dict[str, Any]) -> dict[str, Any]:
    """The exponent finding per side (the measure's rule, ``>``, at both thresholds of
    `_protocol.exponent_thresholds`, 2 declared; and beside it the mean-squared side's
    ``<`` at both, ``2 + EXPONENT_MARGIN`` declared), the median
    distance to the wall, the family's ``C`` (rows ``<= 0.1`` with an edge) and the 1-D
    ``C`` at the spiky side's exponent, with whether it lies in the family's interval."""
    from ... import stats
    from ...harness import combined_verdict  # the readings' verdict, as every finding's
    from ._family_pilot import candidate_summary
    from ._protocol import BETA1_ROWS, FINDING_MEASURES, exponent_thresholds
    from ._spike_analysis import task_C

    rule = stats.measure_of(FINDING_MEASURES, MEASURE_ID).rule("threshold")
    out: dict[str, Any] = {"rule": rule}
    for side in ("spiky", "quiet"):
        v = seed_medians(wall["cells"], side)
        v = v[np.isfinite(v)]
        # "exceeds 2" (the cross-entropy claim) at each threshold, the declared one first
        js = {f"{t:g}": stats.judge(rule, v, threshold=t, direction=">",
                                    rng=stats.generator(wall["seed"], MEASURE_ID, side, f"{t:g}"))
              for t in exponent_thresholds(True)}  # fmt: skip
        j = next(iter(js.values()))
        va = seed_medians(wall["cells"], side, core_only=False)
        va = va[np.isfinite(va)]
        ja = stats.judge(rule, va, threshold=2.0, direction=">",
                         rng=stats.generator(wall["seed"], MEASURE_ID, side, "all"))  # fmt: skip
        # beside it, the mean-squared side's claim ("does not exceed 2") on the same seeds, at
        # each of its thresholds, the declared one first
        jm = {f"{t:g}": stats.judge(rule, v, threshold=t, direction="<",
                                    rng=stats.generator(wall["seed"], MEASURE_ID, side, "m", f"{t:g}"))
              for t in exponent_thresholds(False)}  # fmt: skip
        core = np.concatenate([interior(z).ravel() for z in wall["cells"] if z["side"] == side])
        w = np.concatenate([np.asarray(z["wall"], float)[interior(z)] for z in wall["cells"]
                            if z["side"] == side])  # fmt: skip
        out[side] = {
            "verdict": combined_verdict({k: x.verdict for k, x in js.items()}),
            "readings": {k: x.verdict for k, x in js.items()},
            "estimate": j.estimate,
            "low": j.low,
            "high": j.high,
            "n": j.n,
            "wall_median": float(np.nanmedian(w)) if np.isfinite(w).any() else math.nan,
            "wall_share": float(np.isfinite(w).mean()) if w.size else math.nan,
            "core_share": float(core.mean()) if core.size else math.nan,
            "all_measurements": [ja.verdict, ja.estimate, ja.low, ja.high, ja.n],
            "within": combined_verdict({k: x.verdict for k, x in jm.items()}),
            "within_readings": {k: x.verdict for k, x in jm.items()},
        }
    s = candidate_summary(wall["candidate"], pilot)
    a = np.array(s["rows"], float)
    cb = np.array([e[0] for e in s["edges"]], float)
    keep = a <= BETA1_ROWS
    out["C"] = task_C(a[keep], cb[keep])
    out["C_all_rows"] = task_C(a, cb)
    table = one_d_C()
    out["C_1d"] = {f"{n:g}": v for n, v in table.items()}
    n = out["spiky"]["estimate"]
    pred = [C_at(x, table) for x in (n, out["spiky"]["low"], out["spiky"]["high"])]
    out["C_predicted"] = pred
    lo, hi = out["C"][1], out["C"][2]
    out["predicts"] = bool(math.isfinite(pred[0]) and lo <= pred[0] <= hi)
    return out


def stored() -> dict[str, Any]:
    """The stored measurement (``family_wall.json``)."""
    return json.loads(STORED.read_text())


def _fmt(v: float) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v + 0.0:.3g}"  # -0.0 reads 0


def stored_wall_pilot() -> dict[str, Any]:
    """The stored pilot of the core-wall candidates (``wall_pilot.json``; empty when none)."""
    return json.loads(WALL_PILOT.read_text()) if WALL_PILOT.exists() else {"candidates": {}}


def wall_pilot_markdown(p: dict[str, Any]) -> list[str]:
    """Markdown lines of a core-wall pilot: its diagnostics (`diagnostics_markdown()`), per
    candidate of `_family.WALL_CANDIDATES` run and row the evaluated cells (spiky seeds of
    those spiky or quiet, settled window), the settled edge and interval, the settled median
    ``log10`` loss range, CPU seconds and ``beta1 / sqrt(beta2)`` of its cells that are mostly
    spiky or diverged; then the defining property's verdict."""
    from ._family import (
        COLUMNS,
        WALL_CANDIDATES,
        WALL_MIN_ROWS,
        WALL_ROWS,
        WALL_TOP,
        WALL_UNCAPPED,
        confident_level,
    )
    from ._family_pilot import WINDOW, loss_span, row_cells

    lines: list[str] = []
    if p.get("diagnostics"):
        lines += diagnostics_markdown(p["diagnostics"]) + [""]
    cols = sorted(COLUMNS)
    for name in WALL_CANDIDATES:
        if name not in p.get("candidates", {}):
            continue
        cand = WALL_CANDIDATES[name]
        s = wall_summary(name, p)
        lines += [
            f"The stored pilot of the core-wall candidate `{name}` ({p['date']}, "
            f"`{p['command']}`; {_network_words(cand)}, "
            + _loss_words(cand)
            + f", $\\mathrm{{lr}} = {cand['lr']:g}$, Adam's eps {cand['eps']:g}, "
            f"decoupled weight decay {cand.get('weight_decay', 0.0):g}; {p['seeds']} seeds a "
            f"cell, {p['machine']}; a cell: spiky seeds / seeds spiky or quiet under the "
            "settled window, rise 2 decades; `.`: not evaluated, below the row's first spiky "
            "cell"
            + (
                ""
                if name in WALL_UNCAPPED
                else f" or above $1 - \\beta_2 = {WALL_TOP:g} (1 - \\beta_1)$ (`WALL_TOP`)"
            )
            + "; the edge where the spike probability falls through 1/2, with its interval, "
            "`-` open):",
            "",
            "| $1 - \\beta_1$ \\ $1 - \\beta_2$ | "
            + " | ".join(f"{c:.3g}" for c in cols)
            + " | settled edge [interval] | settled log10 loss | CPU s | "
            "$\\beta_1 / \\sqrt{\\beta_2}$ at the spiky or diverged cells |",
            "|---" * (len(cols) + 5) + "|",
        ]
        for row, e in zip(p["candidates"][name]["rows"], s["edges"]):
            cells, span = row_cells(row, cols), loss_span(row)
            cpu = sum(z["cpu_seconds"] for z in row["cells"])
            # Adam's moments grow without bound beyond beta1 = sqrt(beta2): how near each
            # spiky or diverged cell lies to that line
            near = [f"{(1 - row['row']) / math.sqrt(1 - z['c']):.2f}" for z in row["cells"]
                    if (np.asarray(z["status"])[:, WINDOW] == 1).mean() >= 0.5
                    or (np.asarray(z["status"])[:, WINDOW] == 3).mean() >= 0.5]  # fmt: skip
            lines.append(
                f"| {row['row']:g} | " + " | ".join(cells)
                + f" | {_fmt(e[0])} [{_fmt(e[1])}, {_fmt(e[2])}] | {span} | {cpu:.0f} | "
                + (", ".join(near) or "-") + " |"
            )  # fmt: skip
        word = "meets it" if s["meets"] else ("fails it" if s["fails"] else "is undecided")
        lines += [
            "",
            "The defining property, declared before the pilot: every run confident (settled "
            f"median log10 loss below {confident_level(name):.2f}, log10(log 2 / "
            f"{cand['n_samples']})) and a settled edge in at least {WALL_MIN_ROWS} of the rows "
            f"{', '.join(f'{a:g}' for a in WALL_ROWS)}. `{name}` {word}: {s['with_edge']} "
            f"edges in {len(s['rows'])} of {len(WALL_ROWS)} rows run, "
            + ("every run confident" if s["confident"] else "not every run confident")
            + f" (highest settled log10 loss {_fmt(s['highest_log10_loss'])}).",
            "",
        ]
    lines += stopped_markdown(p)
    return lines


def stopped_markdown(p: dict[str, Any]) -> list[str]:
    """Markdown lines of the core-wall candidates stopped before a pilot
    (`_family.WALL_STOPPED`): per candidate its set-up, why it was stopped and what its stored
    diagnostic cells show (runs spiky, the settled log10 loss range, the largest settled rise)."""
    from ._family import WALL_CANDIDATES, WALL_STOPPED

    lines: list[str] = []
    for name, why in WALL_STOPPED.items():
        cand = WALL_CANDIDATES[name]
        mine = [z for z in p.get("diagnostics", []) if z.get("task") == name]
        st = [int(v) for z in mine for v in z["status"]]
        lv = np.array([v for z in mine for v in z["settled_median_log10_loss"]], float)
        rise = np.array([v for z in mine for v in z["max_rise"]], float)
        seen = (
            f" ({len(mine)} diagnostic cells, rows "
            + ", ".join(f"{a:g}" for a in sorted({z["a"] for z in mine}, reverse=True))
            + f": {st.count(1)} of {len(st)} runs spiky, settled log10 {_loss_symbol(cand)} "
            f"{_fmt(float(np.nanmin(lv)))} to {_fmt(float(np.nanmax(lv)))}, largest settled "
            f"rise {_fmt(float(np.nanmax(rise)))} decades)"
            if mine
            else " (no diagnostic cell stored)"
        )
        lines += [
            f"The core-wall candidate `{name}` ({_network_words(cand)}, "
            f"{_loss_words(cand)}, $\\mathrm{{lr}} = "
            f"{cand['lr']:g}$, Adam's eps {cand['eps']:g}"
            + (
                f", decoupled weight decay {cand['weight_decay']:g}"
                if cand.get("weight_decay")
                else ""
            )
            + f"): {why}{seen}.",
            "",
        ]
    return lines


def wall_markdown(wall: dict[str, Any] | None = None, pilot: dict[str, Any] | None = None):
    """Markdown lines of the core-wall pilot (`wall_pilot_markdown()`, the stored one unless
    ``pilot`` is given) and of the stored measurement: per cell the median exponent, distance
    to the wall and settled status; then the findings."""
    p = stored_wall_pilot() if pilot is None else pilot
    head = wall_pilot_markdown(p)
    if wall is None and not STORED.exists():
        chosen = wall_choose(p)
        why = (
            "no core-wall candidate is chosen"
            if chosen is None
            else f"`{chosen}` is chosen but not yet measured"
        )
        return head + [f"No core-wall measurement is stored ({why}; `family_wall.json`)."]
    from ._protocol import EXPONENT_MARGIN

    w = stored() if wall is None else wall
    f = findings(w, p)
    chosen = wall_choose(p) == w["candidate"]
    lines = head + [
        f"The stored core-wall measurement on `{w['candidate']}` ("
        + ("the chosen candidate" if chosen else "a diagnostic: not a chosen candidate")
        + f"; {w['date']}, "
        f"`{w['command']}`; {MEASURES} measurements a copy over the settled window, the "
        "pilot's seeds and runs; a measurement has a core when its line minimum lies inside "
        f"the search, |s*| < {INTERIOR:g} x {SEARCH:g} updates; per cell, over those: the "
        "median over copies of each copy's median effective exponent, the median distance to "
        "the wall in updates over the measurements that reached it and the share that did; "
        "then the share of measurements with a core):",
        "",
        "| $1 - \\beta_1$ | $1 - \\beta_2$ | side | spiky seeds | exponent | wall (updates) | "
        "reached | with a core | median log10 loss | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for z in w["cells"]:
        core = interior(z)
        e = np.where(core, np.asarray(z["exponent"], float), np.nan)
        med = [np.median(r[np.isfinite(r)]) for r in e if np.isfinite(r).any()]
        wl = np.where(core, np.asarray(z["wall"], float), np.nan)
        st = np.asarray(z["status"])
        lines.append(
            f"| {z['row']:g} | {z['c']:.3g} | {z['side']} | {int((st == 1).sum())}/"
            f"{int(((st == 0) | (st == 1)).sum())} | {_fmt(float(np.median(med)) if med else math.nan)} | "
            f"{_fmt(float(np.nanmedian(wl)) if np.isfinite(wl).any() else math.nan)} | "
            f"{np.isfinite(wl).sum() / max(int(core.sum()), 1):.2f} | {core.mean():.2f} | "
            f"{np.nanmedian(z['log10_loss']):.1f} | "
            f"{z['cpu_seconds']:.0f} |"
        )
    c1 = "; ".join(f"n = {n}: {v[0]:.3g} [{v[1]:.3g}, {v[2]:.3g}]" for n, v in f["C_1d"].items())
    sp, qu = f["spiky"], f["quiet"]
    pred = f["C_predicted"]
    lines += [
        "",
        f"Finding (rule `{f['rule']}`, the mean-squared side's measure, judged above 2 "
        f"(declared) and above {2 + EXPONENT_MARGIN:g} (2 + `EXPONENT_MARGIN`, a set-up "
        "constant the paper does not fix): the "
        f"confident cross-entropy task's effective exponent exceeds 2 - {sp['verdict']} "
        f"({_readings_words(sp['readings'])}): "
        f"median over the spiky cells' seeds {sp['estimate']:.3g} (95% [{sp['low']:.3g}, "
        f"{sp['high']:.3g}], {sp['n']} seeds; median distance to the wall "
        f"{_fmt(sp['wall_median'])} updates, reached in {sp['wall_share']:.0%} of the "
        f"measurements); on the quiet cells {qu['estimate']:.3g} "
        f"(95% [{qu['low']:.3g}, {qu['high']:.3g}], {qu['n']} seeds, {qu['verdict']}: "
        f"{_readings_words(qu['readings'])}). "
        f"Measurements with a core: {sp['core_share']:.0%} on the spiky cells, "
        f"{qu['core_share']:.0%} on the quiet ones; over every measurement (a monotone fall "
        f"included) the spiky cells read {sp['all_measurements'][1]:.3g} "
        f"[{sp['all_measurements'][2]:.3g}, {sp['all_measurements'][3]:.3g}] "
        f"({sp['all_measurements'][0]}). Beside the verdict (not a declared finding): judged "
        f'as `adam_edge` judges the mean-squared side, "does not exceed 2" (below '
        f"{2 + EXPONENT_MARGIN:g}, declared, and below 2), the spiky cells read "
        f"{sp['within']} ({_readings_words(sp['within_readings'], '<')}) and the quiet ones "
        f"{qu['within']} ({_readings_words(qu['within_readings'], '<')}).",
        "",
        f"The family's $C = c_b / (1 - \\beta_1)$ (rows at or below 0.1 with a settled edge, "
        f"geometric mean, 95%): {_fmt(f['C'][0])} [{_fmt(f['C'][1])}, {_fmt(f['C'][2])}] "
        f"(all rows: {_fmt(f['C_all_rows'][0])} [{_fmt(f['C_all_rows'][1])}, "
        f"{_fmt(f['C_all_rows'][2])}]). The published 1-D $C(n)$ ({PRIMARY}): {c1}. At the "
        f"measured exponent the 1-D law gives $C$ = {_fmt(pred[0])} (over the exponent's "
        f"interval {_fmt(pred[1])} to {_fmt(pred[2])}; `-`: outside the published n): "
        + ("inside" if f["predicts"] else "not inside")
        + " the family's interval.",
    ]
    return lines


def _readings_words(readings: dict[str, str], sign: str = ">") -> str:
    """``"> 2: HELD; > 2.25: NOT HELD"``: each threshold's verdict, in the readings' order."""
    return "; ".join(f"{sign} {k}: {v}" for k, v in readings.items())


def main(argv: list[str] | None = None) -> None:
    """Measure the bracket cells of a core-wall candidate in its stored pilot
    (``wall_pilot.json``): the chosen one (`wall_choose()`), or ``--candidate NAME`` (a
    diagnostic measurement while none is chosen); ``--row A`` repeatable: only those rows;
    all its rows with a settled edge when none. Merged into ``family_wall.json``."""
    import argparse
    import os

    from ...harness import write_strict_json
    from ._family import ROWS, WALL_CANDIDATES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidate", help="a candidate of _family.WALL_CANDIDATES")
    parser.add_argument("--row", type=float, action="append", help="a row of _family.ROWS")
    parser.add_argument("--cell", type=float, nargs=2, action="append", metavar=("A", "C"),
                        help="a diagnostic: measure this evaluated pilot cell instead of the "
                        "brackets (repeatable; needs --candidate)")  # fmt: skip
    args = parser.parse_args(argv)
    pilot = stored_wall_pilot()
    if args.cell and not args.candidate:
        raise SystemExit("--cell is a diagnostic of a named candidate: give --candidate NAME")
    name = args.candidate or wall_choose(pilot)
    if name is None:
        raise SystemExit(
            "no core-wall candidate is chosen yet (wall_pilot.json); name one with --candidate"
        )
    if name not in WALL_CANDIDATES:
        raise SystemExit(f"--candidate {name!r} is not allowed; the declared core-wall "
                         f"candidates are {list(WALL_CANDIDATES)}")  # fmt: skip
    want = set(ROWS if not args.row else args.row)
    bad = sorted(want - set(ROWS))
    if bad:
        raise SystemExit(f"--row {bad[0]!r} is not allowed; the declared rows are {ROWS}")
    old = stored() if STORED.exists() else {"cells": []}
    if old.get("candidate", name) != name:
        old = {"cells": []}
    cells = {(z["row"], z["c"]): z for z in old["cells"]}
    todo = named_cells(name, pilot, args.cell) if args.cell else bracket_cells(name, pilot)
    for i, j, side in todo:
        if ROWS[i] not in want:
            continue
        load = os.getloadavg()[0]
        z = wall_cell(name, i, j) | {"side": side, "load": round(load, 2)}
        cells[(z["row"], z["c"])] = z
        out = {
            "candidate": name,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "command": "python -m gaugedyn.experiments.adam_stability._family_wall "
            "[--candidate NAME] [--row A] [--cell A C]",
            "seed": RULE_SEED,
            "cells": sorted(cells.values(), key=lambda v: (-v["row"], v["c"])),
        }
        write_strict_json(STORED, out)
        print(f"wrote {STORED}: row {z['row']} c {z['c']:.3g} ({z['cpu_seconds']:.0f} CPU s)",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    import sys

    if "--pilot" in sys.argv[1:]:
        pilot_main([v for v in sys.argv[1:] if v != "--pilot"])
    elif sys.argv[1:2] == ["--diagnostics"]:
        from ...harness import write_strict_json

        # optional places in DIAGNOSTICS: run only those of the cells not stored
        only = {int(v) for v in sys.argv[2:]} if sys.argv[2:] else None
        old = json.loads(WALL_PILOT.read_text()) if WALL_PILOT.exists() else {"candidates": {}}
        old["diagnostics"] = diagnostics(old.get("diagnostics"), only)
        write_strict_json(WALL_PILOT, old)
        print(f"wrote {WALL_PILOT}: diagnostics", flush=True)
    else:
        main()

"""Which second network family has a settled spike edge? A stored pilot (issue 42, Build 4).

The candidates of `_family` (declared before this pilot ran, in their order) are each scanned
on `_family.ROWS` x `_family.COLUMNS` with `_family.SEEDS` seeds a cell by the package's own
programs: every cell one `_scan._run_task` run (the batched full-batch program of the network
tasks, its run length `_protocol.run_steps`, its verdicts `_scan._judge_task`: the detector's
default sampling, the rise threshold 2 decades and the declared range's ends), each row from the
largest ``1 - beta2`` downwards, stopping after its first cell with spike probability at least
1/2 under both windows (`_bisect.scan_rows` without bisection: the cells below do not enter
the upper edge). A cell of candidate ``k`` draws its seeds from `cell_seed()`, so a row run
alone gives what it gives in a full pass.

A row's edge and interval are `_bisect.row_edge` of its evaluated cells under the settled
window. The pilot chooses (`choose()`) the first candidate, in the declared order, that meets
the rule (`_family.rule_verdict`: at least `_family.MIN_ROWS` rows with a settled edge, one of
them at ``1 - beta1 <= _family.LOW_ROW``); a candidate that fails it, or is `_family.STOPPED`,
passes the choice to the next. The result is stored in ``family_pilot.json`` (`main()`
writes it, one row at a time if asked, with the CPU seconds of every cell) and drawn into
``docs/adam-stability.md`` by ``tools/pilot_tables.py`` (`pilot_markdown()`).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ._family import (
    CANDIDATES,
    COLUMNS,
    LOSSES,
    LOW_ROW,
    MIN_ROWS,
    NETWORKS,
    ROWS,
    SEED_ROWS,
    SEEDS,
    STOPPED,
    column_index,
    rule_verdict,
)

SEED = 20261208
"""Root of the pilot's seeds."""
STORED = Path(__file__).with_name("family_pilot.json")
WINDOW = 0
"""The settled window (``_protocol.WINDOWS``)."""


def cell_seed(name: str, a: float, c: float) -> np.random.SeedSequence:
    """The seeds of candidate ``name``'s cell ``(1 - beta1, 1 - beta2) = (a, c)``:
    ``SeedSequence([SEED, k, i, j])`` with ``k`` the candidate's `_family.seed_index`, ``i``
    the row's place in `_family.SEED_ROWS` (the first grid's rows, then the revised grid's new
    ones: a stored cell keeps its seeds) and ``j`` the column's in ``sorted(COLUMNS)``."""
    from ._family import seed_index

    return np.random.SeedSequence([SEED, seed_index(name), SEED_ROWS.index(a), column_index(c)])


def add_row(candidates: dict, name: str, a: float, cols=None) -> dict[str, Any]:
    """Scan row ``a`` of candidate ``name`` (`scan_row()`, over ``cols`` when given), stamp
    it with the 1-minute load at its start and the date, and put it into ``candidates`` (a
    stored pilot's ``{name: {"rows": [...]}}``, rows in `ROWS` order, an earlier entry of the
    row replaced); returns the row's entry. The family pilot and the core-wall pilot store
    their rows so."""
    load = os.getloadavg()[0]
    entry = scan_row(name, ROWS.index(a), cols=cols)
    entry["load"] = round(load, 2)
    entry["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    mine = {r["row"]: r for r in candidates.get(name, {}).get("rows", [])}
    mine[a] = entry
    candidates[name] = {"rows": [mine[x] for x in ROWS if x in mine]}
    return entry


def scan_row(name: str, i: int, spikes=None, cols=None) -> dict[str, Any]:
    """Row ``ROWS[i]`` of candidate ``name`` (over ``cols``, a subset of `COLUMNS`, when
    given: the core-wall pilot's `_family.wall_columns`): the downward scan's evaluated cells,
    their status codes ``(cells, seeds, windows)`` at the primary rise and ``(cells, seeds,
    windows, rises)`` at the rises of `_scan.rise_readings`, the settled median ``log10`` loss
    per seed, and the CPU seconds and steps of each cell."""
    from ...adam import SPIKE_SAMPLING
    from ._bisect import scan_rows
    from ._family import family_task
    from ._scan import _run_task

    spikes = list(SPIKE_SAMPLING[:3]) if spikes is None else list(spikes)
    cols = sorted(COLUMNS) if cols is None else sorted(cols)
    cells: list[dict[str, Any]] = []

    def evaluate(rows: np.ndarray, cs: np.ndarray) -> np.ndarray:
        out = []
        for c in np.asarray(cs, float):
            j = int(np.argmin(np.abs(np.log(cols) - math.log(c))))
            task = family_task(name, spikes, SEEDS, [ROWS[i]], [cols[j]])
            t0 = time.process_time()
            r = _run_task(task, cell_seed(name, ROWS[i], cols[j]))
            cells.append(
                {
                    "c": cols[j],
                    "status": r["status"][0, 0].tolist(),
                    "status_rises": r["status_rises"][0, 0].tolist(),
                    "rises": r["rises"].tolist(),
                    "max_rise": np.round(r["max_rise"][0, 0], 2).tolist(),
                    "settled_median_log10_loss": np.round(
                        r["settled_median_log10_loss"][0, 0], 2
                    ).tolist(),
                    "steps": int(r["steps_run"]) // SEEDS,
                    "cpu_seconds": round(time.process_time() - t0, 1),
                }
            )
            out.append(r["status"][0, 0])
        return np.stack(out)

    scan_rows(np.array([ROWS[i]]), np.array(cols), evaluate, math.inf)
    cells.sort(key=lambda z: z["c"])
    return {"row": ROWS[i], "cells": cells}


EPS_READINGS = (1e-8, 1e-12, 1e-30)
"""Adam's ``eps`` of the diagnostic reading (`eps_reading()`): the candidates' own, and two
far below it."""
EPS_ROW = 0.3
EPS_COLUMNS = (10**-0.5, 0.1, 10**-1.5)
"""The reading's cells: the three largest columns of the row 0.3 (the cheapest runs)."""


def eps_reading(name: str = "digits_ce") -> list[dict[str, Any]]:
    """A diagnostic beside the pilot, not a candidate: the cells ``(EPS_ROW, EPS_COLUMNS)``
    of ``name`` run at each Adam ``eps`` of `EPS_READINGS` (seeds ``SeedSequence([SEED, 99,
    eps index, column index])``), each cell's status codes ``(seeds, windows)``, settled
    median ``log10`` loss and largest rise per seed."""
    from ...adam import SPIKE_SAMPLING
    from ._family import family_task
    from ._scan import _run_task

    out = []
    for q, eps in enumerate(EPS_READINGS):
        for j, c in enumerate(EPS_COLUMNS):
            task = family_task(name, list(SPIKE_SAMPLING[:3]), SEEDS, [EPS_ROW], [c])
            r = _run_task(task | {"eps": eps}, np.random.SeedSequence([SEED, 99, q, j]))
            out.append(
                {
                    "eps": eps,
                    "c": c,
                    "status": r["status"][0, 0].tolist(),
                    "max_rise": np.round(r["max_rise"][0, 0], 2).tolist(),
                    "settled_median_log10_loss": np.round(
                        r["settled_median_log10_loss"][0, 0], 2
                    ).tolist(),
                }
            )
    return out


def eps_markdown(reading: list[dict[str, Any]], name: str = "digits_ce") -> list[str]:
    """Markdown lines of the stored `eps_reading()`: per ``eps`` and column, the settled
    window's statuses and the median over seeds of the settled median ``log10`` loss."""
    from ._protocol import CODES

    names = {v: k for k, v in CODES.items()}
    lines = [
        f"A diagnostic beside the pilot (`eps_reading()`, stored with it): `{name}`'s row "
        f"{EPS_ROW:g} at Adam's eps {', '.join(f'{e:g}' for e in EPS_READINGS)}; per cell the "
        "settled window's statuses over the seeds and the median settled log10 loss "
        "(the float64 floor reads -307.7):",
        "",
        "| eps \\ $1 - \\beta_2$ | " + " | ".join(f"{c:.3g}" for c in EPS_COLUMNS) + " |",
        "|---" * (len(EPS_COLUMNS) + 1) + "|",
    ]
    for eps in EPS_READINGS:
        cells = []
        for c in EPS_COLUMNS:
            z = next(x for x in reading if x["eps"] == eps and x["c"] == c)
            st = [names[int(v)] for v in np.asarray(z["status"])[:, WINDOW]]
            counts = ", ".join(f"{st.count(k)} {k}" for k in dict.fromkeys(st))
            lv = np.asarray(z["settled_median_log10_loss"], float)
            cells.append(f"{counts} ({np.nanmedian(lv):.1f})" if np.isfinite(lv).any() else counts)
        lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    return lines


DIAGNOSTIC_CELLS: tuple[dict[str, Any], ...] = (
    {"hidden": 32, "lr": 1e-2, "a": 0.2, "c": 0.1},
    {"hidden": 32, "lr": 3e-3, "a": 0.2, "c": 0.1},
    {"hidden": 32, "lr": 1e-3, "a": 0.2, "c": 0.1},
    {"hidden": 32, "lr": 1e-3, "a": 0.2, "c": 0.01},
    {"hidden": 256, "lr": 1e-2, "a": 0.2, "c": 0.1},
    {"hidden": 256, "lr": 1e-3, "a": 0.2, "c": 0.1},
    {"hidden": 256, "lr": 1e-4, "a": 0.2, "c": 0.1},
    # added after the seven above ran (family_pilot.json's diagnostics): the loss sits at a
    # level nearly independent of the width and falling only slowly with the step size (about
    # 10^-4.3 at lr 1e-2 for widths 32 and 256, 10^-4.6 at 1e-3, 10^-5.7 at 1e-4 with width
    # 256), never towards 0 within 20,000 steps: not the step size alone, not capacity, far
    # above the float's floor. The teacher tasks' inputs are isotropic Gaussians; the digits'
    # are strongly correlated (an ill-conditioned input Gram matrix, slow directions the loss
    # sits in while Adam's v follows the gradient without lag). Declared before they run: the
    # same network on the whitened digits (`_batched.whitened_digits`)
    {"task": "digits_white_mse", "hidden": 32, "lr": 1e-2, "a": 0.2, "c": 0.1},
    {"task": "digits_white_mse", "hidden": 32, "lr": 1e-3, "a": 0.2, "c": 0.1},
    {"task": "digits_white_mse", "hidden": 32, "lr": 1e-2, "a": 0.05, "c": 0.01},
    {"task": "digits_white_mse", "hidden": 32, "lr": 1e-2, "a": 0.02, "c": 10**-2.5},
    # added after the four above ran: whitening changes nothing (10^-4.3 at lr 1e-2 again,
    # 10^-5.4 at 1e-3): the level is Adam's own at that step size whatever the data's
    # conditioning; the over-parameterised MLP never enters the regime where the gradient
    # falls faster than v follows. Declared before they run: a factorisation task on digits
    # that reaches loss 0 exactly with an isolated (up to its gauge) minimum, as the teacher
    # tasks do (`_batched.DigitsFactorisation`, rank 4 on 64 images: 512 parameters for
    # 4,096 targets)
    {"task": "digits_lowrank", "hidden": 4, "lr": 1e-2, "a": 0.2, "c": 0.1},
    {"task": "digits_lowrank", "hidden": 4, "lr": 1e-3, "a": 0.2, "c": 0.1},
    {"task": "digits_lowrank", "hidden": 4, "lr": 1e-2, "a": 0.05, "c": 0.01},
    {"task": "digits_lowrank", "hidden": 4, "lr": 1e-2, "a": 0.02, "c": 10**-2.5},
)
"""Why does ``digits_mse`` settle near 1e-4 (declared before any of these runs)? A cell's
``task`` is ``digits_mse`` unless named. Its network
(64-``hidden``-10, ReLU) on its 64 images under half the squared error, Adam at ``1 - beta1 =
a``, ``1 - beta2 = c``, eps 1e-8, step size ``lr``, `DIAGNOSTIC_STEPS` steps, `DIAGNOSTIC_SEEDS`
seeds: the step size (``lr`` 1e-2, the pilot's, then 3e-3 and 1e-3 at the pilot's row 0.2 and
column 0.1, and 1e-3 at the column 0.01), and the capacity (width 256, 19,210 parameters for
640 targets, at 1e-2, 1e-3 and 1e-4: does the loss fall towards 0 when the network has room
and the step is small?). The float64 floor is read off the same runs (a loss near 1e-4 is far
above it)."""
DIAGNOSTIC_STEPS = 20_000
DIAGNOSTIC_SEEDS = 4
DIAGNOSTIC_BLOCK = 1000
"""Steps per reported block of a diagnostic run (its median, maximum and minimum ``log10``
loss)."""


def diagnose(
    cells=DIAGNOSTIC_CELLS, steps: int = DIAGNOSTIC_STEPS, done=()
) -> list[dict[str, Any]]:
    """Run `DIAGNOSTIC_CELLS` (their ``task``, ``digits_mse`` unless named, on 64 images; seeds
    ``SeedSequence([SEED, 98, cell index])``): per cell and seed the median, maximum and
    minimum ``log10`` loss of each block of `DIAGNOSTIC_BLOCK` steps, and the cell's CPU
    seconds. Cells of ``done`` (stored results) whose declaration matches are kept, not
    rerun."""
    import torch

    from ..._meta import integer_seed
    from ._batched import adam_step_sets, task_model

    out = []
    for q, cell in enumerate(cells):
        kept = [z for z in done if {k: z.get(k) for k in cell} == cell and z["steps"] == steps]
        if kept:
            out.append(kept[0])
            continue
        t0 = time.process_time()
        base = integer_seed(np.random.SeedSequence([SEED, 98, q]))
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            model = task_model(
                cell.get("task", "digits_mse"),
                DIAGNOSTIC_SEEDS,
                base + np.arange(DIAGNOSTIC_SEEDS),
                64,
                hidden=cell["hidden"],
            )
            (blocks,), _ = adam_step_sets(
                model,
                cell["lr"],
                1 - cell["a"],
                1 - cell["c"],
                steps,
                [DIAGNOSTIC_BLOCK],
                eps=1e-8,
            )
        finally:
            torch.set_num_threads(before)
        out.append(
            dict(cell)
            | {
                "steps": int(steps),
                "median": [np.round(b.median, 2).tolist() for b in blocks],
                "max": [np.round(b.maximum, 2).tolist() for b in blocks],
                "min": [np.round(b.minimum, 2).tolist() for b in blocks],
                "cpu_seconds": round(time.process_time() - t0, 1),
            }
        )
        print(f"diagnostic cell {q}: {out[-1]['cpu_seconds']} CPU s", flush=True)
    return out


DETECTOR_CELLS: tuple[dict[str, Any], ...] = (
    tuple(
        {"task": task, "hidden": h, "a": a, "c": c}
        for task, h in (
            ("digits_lowrank", 1),
            ("digits_lowrank", 2),
            ("digits_lowrank", 4),
            ("digits_mse", 32),
        )
        for a, c in ((0.2, 0.01), (0.05, 10**-2.5), (0.02, 10**-2.5))
    )
    + tuple(
        # added after the twelve above ran (all quiet): narrow ReLU networks on few images, nearer
        # the teacher tasks' few units (a unit's kink crossing an image is a candidate for their
        # sawtooth); declared before they run
        {"task": "digits_mse", "hidden": h, "a": a, "c": c, "n_samples": 16}
        for h in (4, 8)
        for a, c in ((0.2, 0.01), (0.05, 10**-2.5), (0.02, 10**-2.5))
    )
    + tuple(
        # added after the grid's revision (session 15), declared before they run: the tied linear
        # autoencoder on digits (`_batched.DigitsTiedAutoencoder`: realizable, its zero-loss minimum
        # isolated up to a compact gauge, unlike `digits_lowrank`'s unbounded one, which the
        # diagnostics above saw fall towards 0 and then rise to the step size's level) at ranks 2
        # and 4 on 64 images, at three cells inside the teacher tasks' spiky region (their stored
        # edges: about 0.02 on the row 0.5, 0.012 on 0.3, 0.0045 on 0.1)
        {"task": "digits_tied_ae", "hidden": h, "a": a, "c": c}
        for h in (2, 4)
        for a, c in ((0.5, 10**-1.5), (0.3, 0.01), (0.1, 10**-2.5))
    )
    + tuple(
        # added after the six above ran (all quiet, settled 10^-3.2 to 10^-5.4, falling with
        # 1 - beta2, the largest rise growing towards the small rows: 0.4 on the row 0.5, up to
        # 1.0 on 0.1), declared before they run: rank 1 (64 parameters, its minimum isolated up
        # to the sign of W) at the same cells and one in the row 0.05; rank 2 further down the
        # row 0.5 (the teacher tasks spiky below about 0.02 there) and in the rows 0.05 and 0.02
        {"task": "digits_tied_ae", "hidden": h, "a": a, "c": c}
        for h, a, c in (
            (1, 0.5, 10**-1.5),
            (1, 0.3, 0.01),
            (1, 0.1, 10**-2.5),
            (1, 0.05, 10**-2.75),
            (2, 0.5, 0.01),
            (2, 0.5, 10**-2.5),
            (2, 0.05, 10**-2.75),
            (2, 0.02, 1e-3),
        )
    )
    + tuple(
        # added after the eight above ran (all quiet: a smooth minimum, the settled level held
        # by Adam's step, the rises at most 1.7 decades), declared before they run: the same
        # autoencoder under the fourth power of its residual (`digits_tied_ae4`), a minimum
        # without curvature, |x|^4 along every direction out of it: the superquadratic core
        # that the core-wall explanation gives the spiky regime its near-linear edge, the 1-D
        # |x|^4 map's own spiky regime; Adam's eps 1e-30 (the gradient, a cube of the
        # residual, falls below 1e-8 at residuals of 1e-3), ranks 1 and 2
        {"task": "digits_tied_ae4", "hidden": h, "a": a, "c": c, "eps": 1e-30}
        for h in (1, 2)
        for a, c in ((0.5, 10**-1.5), (0.3, 0.01), (0.1, 10**-2.5), (0.05, 10**-2.75))
    )
    + tuple(
        # added after the eight above ran (quiet: the loss falls smoothly by about 55 decades),
        # declared before they run: neither smooth realizable task spikes, the teacher tasks
        # have ReLU kinks inside their data; so digits ReLU networks under the squared error
        # with fewer parameters than targets that can still fit every one-hot label exactly
        # (a unit per class, active on that class's images at one level: `digits_mse` width
        # 12 or 16 on 128 images, 910 or 1,210 parameters for 1,280 targets; width 16 on 256)
        {"task": "digits_mse", "hidden": h, "a": a, "c": c, "n_samples": n}
        for h, n in ((12, 128), (16, 128), (16, 256))
        for a, c in ((0.5, 10**-1.5), (0.3, 0.01), (0.1, 10**-2.5))
    )
    + tuple(
        # added after the nine above ran (most copies untrained: stuck a decade or two down,
        # unable to fit; the one width-16 copy that fit, to 10^-5.3, spiky with a rise of 2.5
        # decades), declared before they run: wider networks on 256 images, still fewer
        # parameters than targets (widths 20, 24, 32: 1,510, 1,810, 2,410 for 2,560), so that
        # more copies fit
        {"task": "digits_mse", "hidden": h, "a": a, "c": c, "n_samples": 256}
        for h in (20, 24, 32)
        for a, c in ((0.3, 0.01), (0.1, 10**-2.5))
    )
    + tuple(
        # added after the six above ran (19 of 24 copies fit, to 10^-3.3-10^-5.4; one spiky,
        # the one that fit deepest), declared before they run: width 24 on 256 images at
        # smaller step sizes, whether a deeper fit brings the spikes
        {"task": "digits_mse", "hidden": 24, "a": a, "c": c, "n_samples": 256, "lr": lr}
        for lr in (3e-3, 1e-3)
        for a, c in ((0.3, 0.01), (0.1, 10**-2.5))
    )
    + tuple(
        # added after the four above ran (12 of 16 copies untrained, the rest quiet: a smaller
        # step does not fit deeper within a settled run), declared before they run (session 15,
        # p42n): the lead of the widths 16 and 20 on 256 images at lr 1e-2, whose two copies
        # that fit deepest (10^-5.3, 10^-5.4) were spiky, tested with twice the copies (8 seeds,
        # so that more copies fit) and with longer settled runs, further inside the teacher
        # tasks' spiky region (their stored edge about 0.0045 on the row 0.1; C about
        # 0.035-0.06 puts the row 0.05's at 0.0018-0.003): the cell (0.1, 10^-2.5) again with
        # new copies (38,793 steps), and (0.1, 10^-2.75) (68,148 steps, the settle time and the
        # detector's horizons grow with 1 / (1 - beta2)). If most copies that fit are spiky
        # there, the row 0.05 follows (declared after these run)
        {"task": "digits_mse", "hidden": h, "a": a, "c": c, "n_samples": 256, "seeds": 8}
        for h, a, c in ((20, 0.1, 10**-2.5), (16, 0.1, 10**-2.75), (20, 0.1, 10**-2.75))
    )
    + tuple(
        # added after the three above ran (quiet in every fitted copy), declared before they run
        # (session 16, p42g): what separates the teacher tasks from every digits task may not
        # be the teacher but one output, isotropic Gaussian inputs and an exact zero-loss
        # minimum the whole loss collapses into. `gauss_memo` keeps those and drops the
        # teacher: the teacher tasks' student (width 8, 177 parameters) on D = 20 Gaussian
        # inputs with i.i.d. standard normal targets no network generated (random labels).
        # n = 64 and 128 inputs, fewer than the parameters, so that the student interpolates
        # them exactly (with its activation pattern fixed the output is linear in 169 numbers,
        # so n <= 169 is fitted exactly; 64 leaves ample room, 128 brings the zero-loss set,
        # of dimension 177 - n, nearer the teacher tasks' isolated minimum); lr 1e-2, eps 1e-8,
        # 8 seeds a cell, at four cells inside the teacher tasks' spiky region (their stored
        # edges about 0.02 on the row 0.5, 0.012 on 0.3, 0.0045 on 0.1, 0.0022 on 0.05; each
        # cell 1.2-1.6 quarter decades below: the teachers spiky in 7/8-8/8 seeds where run).
        # `teacher_mse` (width 8, 256 inputs) at the two lowest cells is the reading's positive
        # control by the same program. The rule, declared now: if more than half of the
        # trained `gauss_memo` copies of one n are spiky (settled window, rise 2 decades), a
        # candidate with that n follows (declared after these run); else it stops here
        {"task": task, "hidden": 8, "a": a, "c": c, "n_samples": n, "seeds": 8}
        for task, n, cells in (
            ("gauss_memo", 64, ((0.5, 0.01), (0.3, 10**-2.25), (0.1, 10**-2.75), (0.05, 1e-3))),
            ("gauss_memo", 128, ((0.5, 0.01), (0.3, 10**-2.25), (0.1, 10**-2.75), (0.05, 1e-3))),
            ("teacher_mse", 256, ((0.1, 10**-2.75), (0.05, 1e-3))),
        )
        for a, c in cells
    )
    + tuple(
        # added after the ten above ran (both sizes spiky in most trained copies; `gauss_memo`
        # then piloted and chosen, `_family`), declared before they run: a reading, not a
        # candidate (the family is chosen). Are the Gaussian inputs needed, or do real inputs
        # as well conditioned spike too? `digits_pc_memo`: `gauss_memo`'s student,
        # initialisation and targets on the digits' top 20 principal components, whitened (a
        # Gram matrix n times the identity), 64 images, at `gauss_memo`'s four cells, 8 seeds
        {"task": "digits_pc_memo", "hidden": 8, "a": a, "c": c, "n_samples": 64, "seeds": 8}
        for a, c in ((0.5, 0.01), (0.3, 10**-2.25), (0.1, 10**-2.75), (0.05, 1e-3))
    )
)
"""A short reading by the pilot's own detector (declared before it runs, after the block
diagnostics of `DIAGNOSTIC_CELLS`; 64 images unless a cell names ``n_samples``): the factorisation at ranks 1, 2 and 4 and ``digits_mse``
(64 images, lr 1e-2, eps 1e-8) at three cells, one in the pilot's row 0.2 and two in its rows
0.05 and 0.02, where the family's rule needs edges; `DIAGNOSTIC_SEEDS` seeds a cell unless it
names ``seeds``. The
diagnostics showed a settled level set by the step size, with the loss wandering about a
decade in a block: whether its rises reach the threshold is the detector's to say."""


def detector_reading(cells=DETECTOR_CELLS, done=()) -> list[dict[str, Any]]:
    """`DETECTOR_CELLS` through `_scan._run_task` (the pilot's program and detector; seeds
    ``SeedSequence([SEED, 97, cell index])``): per cell the settled window's status codes and
    largest rise per seed, the settled median ``log10`` loss, steps and CPU seconds. Cells of
    ``done`` whose declaration matches are kept."""
    from ...adam import SPIKE_SAMPLING
    from ._scan import _run_task

    out = []
    for q, cell in enumerate(cells):
        kept = [z for z in done if {k: z.get(k) for k in cell} == cell]
        if kept:
            out.append(kept[0])
            continue
        t0 = time.process_time()
        task = {
            "kind": "task",
            "task": cell["task"],
            "start": "init",
            "a": [cell["a"]],
            "c": [cell["c"]],
            "seeds": cell.get("seeds", DIAGNOSTIC_SEEDS),
            "lr": cell.get("lr", 1e-2),
            "n_samples": cell.get("n_samples", 64),
            "hidden": cell["hidden"],
            "eps": cell.get("eps", 1e-8),
            "spikes": list(SPIKE_SAMPLING[:3]),
        }
        r = _run_task(task, np.random.SeedSequence([SEED, 97, q]))
        out.append(
            dict(cell)
            | {
                "status": r["status"][0, 0][:, WINDOW].tolist(),
                "max_rise": np.round(r["max_rise"][0, 0][:, WINDOW], 2).tolist(),
                "settled_median_log10_loss": np.round(
                    r["settled_median_log10_loss"][0, 0], 2
                ).tolist(),
                "steps": int(r["steps_run"]) // task["seeds"],
                "cpu_seconds": round(time.process_time() - t0, 1),
            }
        )
        print(f"detector cell {q}: {out[-1]}", flush=True)
    return out


def _task_words(cell: dict[str, Any], lr: bool = False) -> str:
    task = cell.get("task", "digits_mse")
    inputs = "Gaussian inputs" if not task.startswith("digits") else "images"
    inputs = "images (top 20 components, whitened)" if task == "digits_pc_memo" else inputs
    n = f" on {cell['n_samples']} {inputs}" if "n_samples" in cell else ""
    n += f", eps {cell['eps']:g}" if "eps" in cell else ""
    n += f", lr {cell['lr']:g}" if lr and "lr" in cell else ""
    n += f", {cell['seeds']} seeds" if "seeds" in cell else ""
    if task in ("digits_lowrank", "digits_tied_ae", "digits_tied_ae4"):
        return f"`{task}` rank {cell['hidden']}{n}"
    return f"`{task}` width {cell['hidden']}{n}"


def diagnostics_markdown(cells: list[dict[str, Any]]) -> list[str]:
    """Markdown lines of the stored `diagnose()`: per declared cell the median over seeds of
    the block median ``log10`` loss after the first block, at the middle and at the end of
    the run, the last block's lowest and highest ``log10`` loss (medians over seeds), the
    lowest loss any block reached (over seeds), and the CPU seconds."""
    lines = [
        f"Diagnostics beside the pilot (`diagnose()`, declared in `DIAGNOSTIC_CELLS` before "
        f"each group ran, stored with it): 64 images, Adam eps 1e-8, {DIAGNOSTIC_SEEDS} seeds, "
        f"{DIAGNOSTIC_STEPS:,} steps in blocks of {DIAGNOSTIC_BLOCK:,}; the block median log10 "
        "loss (median over seeds) after the first block, at the middle and at the end, the "
        "last block's lowest and highest log10 loss, and the lowest of the whole run:",
        "",
        "| task | lr | $1 - \\beta_1$ | $1 - \\beta_2$ | first | middle | end | last block "
        "low to high | lowest | CPU s |",
        "|---" * 10 + "|",
    ]
    for z in cells:
        med = np.asarray(z["median"], float)  # (seeds, blocks)
        mid = med.shape[1] // 2 - 1
        lo, hi = np.asarray(z["min"], float), np.asarray(z["max"], float)
        lines.append(
            f"| {_task_words(z)} | {z['lr']:g} | {z['a']:g} | {z['c']:.3g} | "
            f"{np.median(med[:, 0]):.1f} | {np.median(med[:, mid]):.1f} | "
            f"{np.median(med[:, -1]):.1f} | {np.median(lo[:, -1]):.1f} to "
            f"{np.median(hi[:, -1]):.1f} | {lo.min():.1f} | {z['cpu_seconds']:.0f} |"
        )
    return lines


def detector_markdown(cells: list[dict[str, Any]]) -> list[str]:
    """Markdown lines of the stored `detector_reading()`: per declared cell the settled
    window's statuses over the seeds, the largest rise, the settled median ``log10`` loss
    (lowest to highest over seeds), the steps of a run and the CPU seconds."""
    from ._protocol import CODES

    names = {v: k for k, v in CODES.items()}
    lines = [
        "A reading by the pilot's own program and detector (`detector_reading()`, declared in "
        f"`DETECTOR_CELLS` before it ran, stored with it): 64 images, lr 0.01 and "
        "Adam eps 1e-8 unless named, "
        f"{DIAGNOSTIC_SEEDS} seeds a cell unless named, rise 2 decades, settled window:",
        "",
        "| task | $1 - \\beta_1$ | $1 - \\beta_2$ | statuses | largest settled rise | "
        "settled log10 loss | steps | CPU s |",
        "|---" * 8 + "|",
    ]
    for z in cells:
        st = [names[int(v)] for v in z["status"]]
        counts = ", ".join(f"{st.count(k)} {k}" for k in dict.fromkeys(st))
        lv = np.asarray(z["settled_median_log10_loss"], float)
        rise = np.asarray(z["max_rise"], float)
        top = f"{np.nanmax(rise):.2f}" if np.isfinite(rise).any() else "-"
        lines.append(
            f"| {_task_words(z, lr=True)} | {z['a']:g} | {z['c']:.3g} | {counts} | {top} | "
            f"{np.nanmin(lv):.1f} to {np.nanmax(lv):.1f} | {z['steps']:,} | "
            f"{z['cpu_seconds']:.0f} |"
        )
    return lines


def row_reading(row: dict[str, Any], window: int = WINDOW, rise: int = 0) -> list[float]:
    """``[edge, low, high]`` of a stored row (`_bisect.row_edge` of its evaluated cells under
    ``window``, at the ``rise``-th rise of the cells' readings; ``nan`` where open or none)."""
    from ._bisect import row_edge

    c = np.array([z["c"] for z in row["cells"]], float)
    st = np.array([np.asarray(z["status_rises"])[..., rise] for z in row["cells"]])
    return [float(v) for v in row_edge(c, st[..., window])]


def candidate_summary(name: str, pilot: dict[str, Any]) -> dict[str, Any]:
    """Per candidate of a pilot: its rows run, each row's settled edge, the rows with an edge,
    whether all rows are run, the rule's verdict (`_family.rule_verdict`), whether it meets
    or fails the rule, and whether it is `_family.STOPPED`."""
    rows = pilot["candidates"].get(name, {}).get("rows", [])
    edges = [row_reading(r) for r in rows]
    run = [r["row"] for r in rows]
    has = [a for a, e in zip(run, edges) if math.isfinite(e[0])]
    verdict = rule_verdict(run, has)
    return {"rows": run, "edges": edges, "with_edge": len(has),
            "complete": sorted(run) == sorted(ROWS), "verdict": verdict,
            "meets": verdict == "meets", "fails": verdict == "fails",
            "stopped": name in STOPPED}  # fmt: skip


def choose(pilot: dict[str, Any] | None = None) -> str | None:
    """The chosen candidate: the first in the declared order that meets the rule
    (`_family.rule_verdict`); a candidate that fails it or is `_family.STOPPED` (and does not
    meet it) passes the choice on; ``None`` while the first other candidate is undecided, or
    when every one is passed over."""
    p = stored() if pilot is None else pilot
    for name in CANDIDATES:
        s = candidate_summary(name, p)
        if s["meets"]:
            return name
        if not (s["fails"] or s["stopped"]):
            return None
    return None


def stored() -> dict[str, Any]:
    """The stored pilot (``family_pilot.json``)."""
    return json.loads(STORED.read_text())


def _fmt(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{v:.3g}"


def _rows(n: int) -> str:
    return f"{n} row{'s' * (n != 1)}"


def row_cells(row: dict[str, Any], cols) -> list[str]:
    """A stored row's cells at columns ``cols`` as the pilots' tables show them: spiky seeds /
    seeds spiky or quiet under the settled window, ``.`` where the cell was not evaluated."""
    by_c = {column_index(z["c"]): z for z in row["cells"]}
    cells = []
    for c in cols:
        z = by_c.get(column_index(c))
        if z is None:
            cells.append(".")
            continue
        st = np.asarray(z["status"])[:, WINDOW]
        spiky, quiet = int((st == 1).sum()), int((st == 0).sum())
        cells.append(f"{spiky}/{spiky + quiet}")
    return cells


def loss_span(row: dict[str, Any]) -> str:
    """The settled median log10 loss over a stored row's seeds and cells, lowest to highest
    (``-`` when none is finite)."""
    lv = np.array([v for z in row["cells"] for v in z["settled_median_log10_loss"]], float)
    lv = lv[np.isfinite(lv)]
    return f"{lv.min():.1f} to {lv.max():.1f}" if lv.size else "-"


def pilot_markdown(pilot: dict[str, Any] | None = None) -> list[str]:
    """Markdown lines of the pilot (the stored one unless given): per candidate and row, the
    evaluated cells (spiky seeds of those spiky or quiet, settled window), the settled edge and
    its interval, the CPU seconds; then the rows with an edge and the choice."""
    p = stored() if pilot is None else pilot
    cols = sorted(COLUMNS)
    lines = [
        f"The stored pilot of the second network family ({p['date']}, `{p['command']}`; "
        f"{SEEDS} seeds a cell, {p['machine']}; a cell: spiky seeds / seeds spiky or quiet "
        "under the settled window, rise 2 decades (transient spiky: the row's runs spiky under "
        "the transient window, of all its runs); `.`: not evaluated, below the row's first "
        "spiky cell; the edge: where the spike probability falls through 1/2, with the interval "
        "from the significantly spiky to the significantly quiet cell, `-` open):",
    ]
    for name in CANDIDATES:
        if name not in p["candidates"]:
            continue
        cand = CANDIDATES[name]
        s = candidate_summary(name, p)
        lines += [
            "",
            f"`{name}`: {NETWORKS[cand['task']].format(**cand)}, "
            f"{LOSSES[cand['task']]}, $\\mathrm{{lr}} = {cand['lr']:g}$, Adam's eps {cand['eps']:g} - "
            f"{s['with_edge']} of {_rows(len(s['rows']))} run with a settled edge (of "
            f"{len(ROWS)} declared; the settled median log10 loss over the row's seeds and "
            "cells, lowest to highest; the largest rise, in decades, of any of the row's runs "
            "under the settled window; the row's CPU seconds and the load at its start):",
            "",
            "| $1 - \\beta_1$ \\ $1 - \\beta_2$ | "
            + " | ".join(f"{c:.3g}" for c in cols)
            + " | settled edge [interval] | settled log10 loss | largest settled rise | "
            "transient spiky | CPU s (load) |",
            "|---" * (len(cols) + 6) + "|",
        ]
        for row, e in zip(p["candidates"][name]["rows"], s["edges"]):
            cells, span = row_cells(row, cols), loss_span(row)
            cpu = sum(z["cpu_seconds"] for z in row["cells"])
            tr = np.concatenate([np.asarray(z["status"])[:, 1] for z in row["cells"]])
            # rows stored before the pilot kept each run's largest rise read "-"
            rise = np.array([np.asarray(z["max_rise"], float)[:, WINDOW]
                             for z in row["cells"] if "max_rise" in z])  # fmt: skip
            top = f"{np.nanmax(rise):.2f}" if np.isfinite(rise).any() else "-"
            lines.append(
                f"| {row['row']:g} | " + " | ".join(cells)
                + f" | {_fmt(e[0])} [{_fmt(e[1])}, {_fmt(e[2])}] | {span} | {top} | "
                f"{int((tr == 1).sum())}/{tr.size} | {cpu:.0f} ({row['load']:g}) |"
            )  # fmt: skip
    if "eps_reading" in p:
        lines += [""] + eps_markdown(p["eps_reading"])
    if "diagnostics" in p:
        lines += [""] + diagnostics_markdown(p["diagnostics"])
    if "detector_reading" in p:
        lines += [""] + detector_markdown(p["detector_reading"])
    chosen = choose(p)
    verdicts = []
    for name in CANDIDATES:
        s = candidate_summary(name, p)
        word = {"meets": "meets the rule", "fails": "fails it"}.get(s["verdict"], "undecided")
        if s["stopped"] and not s["meets"]:
            word += ", stopped on the first grid"
        verdicts.append(
            f"`{name}` {word} ({s['with_edge']} edge{'s' * (s['with_edge'] != 1)} in "
            f"{_rows(len(s['rows']))} run)"
        )
    settled = chosen is not None or all(
        candidate_summary(n, p)["fails"] or n in STOPPED for n in CANDIDATES
    )
    lines += [
        "",
        f"The rule: at least {MIN_ROWS} of the {len(ROWS)} rows with a settled edge, one of "
        f"them at $1 - \\beta_1 \\le {LOW_ROW:g}$; a candidate fails once more than "
        f"{len(ROWS) - MIN_ROWS} rows are run without one, or every row at or below "
        f"{LOW_ROW:g} is. "
        + "; ".join(verdicts)
        + ". Chosen: "
        + (f"`{chosen}`." if chosen else ("none." if settled else "none yet.")),
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run rows of a candidate (``--candidate NAME``, ``--row A`` repeatable; every row when
    none) and merge them into ``family_pilot.json`` (a row run again replaces its stored
    entry), with the date, command, machine and the load at each row's start."""
    import argparse

    from ..._meta import cpu_model
    from ...harness import write_strict_json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidate", help="a candidate of _family.CANDIDATES")
    parser.add_argument(
        "--eps-reading", action="store_true", help="store eps_reading() instead of rows"
    )
    parser.add_argument("--row", type=float, action="append", help="a row of _family.ROWS")
    parser.add_argument("--diagnose", action="store_true", help="store diagnose() instead of rows")
    parser.add_argument(
        "--detector-reading", action="store_true", help="store detector_reading() instead"
    )
    args = parser.parse_args(argv)
    if args.detector_reading:
        old = stored()
        old["detector_reading"] = detector_reading(done=old.get("detector_reading", ()))
        write_strict_json(STORED, old)
        print(f"wrote {STORED}: detector reading", flush=True)
        return
    if args.diagnose:
        old = stored()
        old["diagnostics"] = diagnose(done=old.get("diagnostics", ()))
        write_strict_json(STORED, old)
        print(f"wrote {STORED}: diagnostics", flush=True)
        return
    if args.eps_reading:
        old = stored()
        old["eps_reading"] = eps_reading()
        write_strict_json(STORED, old)
        print(f"wrote {STORED}: eps reading", flush=True)
        return
    if args.candidate not in CANDIDATES:
        raise SystemExit(
            f"--candidate {args.candidate!r} is not allowed; the declared candidates are "
            f"{list(CANDIDATES)}"
        )
    rows = ROWS if not args.row else tuple(args.row)
    bad = [a for a in rows if a not in ROWS]
    if bad:
        raise SystemExit(f"--row {bad[0]!r} is not allowed; the declared rows are {ROWS}")
    old = stored() if STORED.exists() else {"candidates": {}}
    for a in rows:
        entry = add_row(old["candidates"], args.candidate, a)
        dates = [r["date"] for c in old["candidates"].values() for r in c["rows"]]
        out = {
            "date": max(dates)[:10],
            "command": "python -m gaugedyn.experiments.adam_stability._family_pilot "
            "--candidate NAME [--row A]",
            "machine": cpu_model(),
            "seeds": SEEDS,
            "candidates": {n: old["candidates"][n] for n in CANDIDATES if n in old["candidates"]},
        }
        for key in ("eps_reading", "diagnostics", "detector_reading"):
            if key in old:
                out[key] = old[key]
        write_strict_json(STORED, out)
        cpu = sum(z["cpu_seconds"] for z in entry["cells"])
        print(f"wrote {STORED}: {args.candidate} row {a} ({cpu:.0f} CPU s)", flush=True)
        old = out


if __name__ == "__main__":
    main()

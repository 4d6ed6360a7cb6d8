"""The stored choice of the network tasks' step size and scan range (issue 25, item 3).

Chosen before the scan of ``spike_boundary`` on a calibration pilot (`calibration_pilot()`:
the task program of the scan, ``_scan._run_task``, one seed per cell, seed
``PILOT_SEED``), whose result is kept here beside the choice so that quick runs and ``--set``
extensions reuse it. The rule (`rule_met()`), the property that defines the experiment and
never the slope it reports: every ``beta1`` row of the pilot holds a cell whose copy reached low
loss (``trained``: the settled window's median ``log10`` loss at least
``_protocol.TRAINED_DECADES`` below the initial loss), and at least ``MIN_ROWS`` rows have a
*settled* edge (the settled window's upper edge of the spiky region) inside the scan's
``1 - beta2`` range. The scan range is the pilot's grid.

The grid: rows ``1 - beta1`` in {0.5, 0.4, 0.3, 0.2, 0.15, 0.1}, where the 1-D quadratic's
settled edge of the published ``spike_boundary`` run (about ``3e-3`` at ``1 - beta1 = 0.09``,
``6.5e-2`` at 0.5) lies inside the scan; ``1 - beta2`` in {1e-2, 3e-2, 0.1, 0.3}. A settled run
at ``1 - beta2 = c`` lasts about ``115 / c`` steps. History of the choice (docs/adam-stability.md):
the rows 0.5, 0.3, 0.2, 0.1 and ``1 - beta2`` from 3e-3 were chosen first (40,000 steps); after a
first teacher-student pilot at them (statuses seen, no slope fitted) the rows 0.4 and 0.15 were
added for power alone (a slope from four rows has two degrees of freedom, Student t 4.3; from
six, four, 2.8); the lowest column 3e-3 was dropped when the 40,000-step scan would not finish
in the session's budget on the shared machine (13,000 steps from 1e-2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

MIN_ROWS = 3
"""Rows with a settled edge the pilot must show."""
PILOT_SEED = 20261202
"""Seed of the pilot's ``SeedSequence`` (initialisations and teacher data)."""
GRID = {
    "one_minus_beta1": [0.5, 0.4, 0.3, 0.2, 0.15, 0.1],
    "one_minus_beta2": [1e-2, 3e-2, 0.1, 0.3],
}
"""The pilot's grid and the full scan's (chosen before any pilot, module doc)."""

TASKS: dict[str, dict[str, Any]] = {
    "teacher_mse": {"lr": 1e-2, "n_samples": 256, "hidden": 8, **GRID},
    "teacher4_mse": {"lr": 1e-2, "n_samples": 256, "hidden": 16, **GRID},
}
"""Per task: the chosen ``lr``, ``n_samples``, hidden width and scan grid; ``pilot``: the pilot
they were chosen on (`calibration_pilot()`'s output, stored in ``pilots.json``). The second
network family's task, when its pilot chooses one, follows them (`family_entry()`)."""
STORED = Path(__file__).with_name("pilots.json")
STORED_PILOTS: dict[str, Any] = json.loads(STORED.read_text())
for _name, _pilot in STORED_PILOTS.items():
    TASKS[_name]["pilot"] = _pilot


def family_entry(pilot: dict | None = None) -> tuple[str, dict[str, Any]] | None:
    """The second network family as an entry of `TASKS` (issue 42, Build 4): the candidate
    that `_family_pilot.choose()` picks on the family pilot (the stored one unless given), with
    its own ``_batched`` program (``task``), step size, data, width and Adam ``eps``
    (`_family.CANDIDATES`) on the scan's `GRID`; ``None`` while the pilot chooses none. Its
    ``pilot`` is the family pilot, not this module's calibration pilot."""
    from ._family import CANDIDATES
    from ._family_pilot import choose

    name = choose(pilot)
    if name is None:
        return None
    cand = CANDIDATES[name]
    keys = ("task", "lr", "n_samples", "hidden", "eps")
    return name, {k: cand[k] for k in keys} | GRID


_family_entry = family_entry()
if _family_entry is not None:
    TASKS[_family_entry[0]] = _family_entry[1]


def calibration_pilot(task: str, lr: float | None = None, hidden: int | None = None) -> dict:
    """Rerun the pilot of ``task`` (at its stored ``lr`` and width unless given): one seed per cell of the
    grid, the scan's own program; returns per window the status names ``(rows, cols)``, the
    settled median ``log10`` loss, the rows with a settled edge and the steps run."""
    from ...adam import SPIKE_SAMPLING
    from ._protocol import CODES, WINDOWS, probability, upper_edge
    from ._scan import _run_task

    cal = TASKS[task]
    r = _run_task(
        {
            "task": task,
            "a": GRID["one_minus_beta1"],
            "c": GRID["one_minus_beta2"],
            "seeds": 1,
            "lr": float(cal["lr"] if lr is None else lr),
            "n_samples": cal["n_samples"],
            "hidden": int(cal["hidden"] if hidden is None else hidden),
            "spikes": list(SPIKE_SAMPLING[:3]),
        },
        np.random.SeedSequence(PILOT_SEED),
    )
    names = {v: k for k, v in CODES.items()}
    out: dict[str, Any] = {
        "lr": float(cal["lr"] if lr is None else lr),
        "hidden": int(cal["hidden"] if hidden is None else hidden),
        "steps": int(r["steps_longest"]),
    }
    for w, window in enumerate(WINDOWS):
        st = r["status"][..., 0, w]
        out[window] = [[names[int(v)] for v in row] for row in st]
        edge = upper_edge(probability(r["status"][..., w]), np.asarray(GRID["one_minus_beta2"]))
        out[f"{window}_edge"] = [None if not np.isfinite(e) else float(f"{e:.3g}") for e in edge]
    out["settled_median_log10_loss"] = np.round(r["settled_median_log10_loss"][..., 0], 2).tolist()
    return out


def rule_met(pilot: dict) -> tuple[bool, str]:
    """Whether a pilot meets the module's rule, and why (or why not)."""
    settled = np.asarray(pilot["settled"])
    trained_rows = [bool(np.any(row != "untrained")) for row in settled]
    edges = sum(e is not None for e in pilot["settled_edge"])
    ok = all(trained_rows) and edges >= MIN_ROWS
    return ok, (
        f"{sum(trained_rows)} of {len(trained_rows)} rows hold a trained copy; {edges} "
        f"rows have a settled edge (need every row trained and >= {MIN_ROWS} edges)"
    )


def pilot_markdown(task: str) -> list[str]:
    """Markdown lines of ``task``'s stored pilot (``pilots.json``): per ``1 - beta1`` row and
    ``1 - beta2`` column the settled / transient status and the settled window's median
    ``log10`` loss, then each row's settled and transient edge (``-``: none inside the grid)."""
    if task not in TASKS or "pilot" not in TASKS[task]:
        raise KeyError(f"no stored pilot for task {task!r}; stored: {sorted(STORED_PILOTS)}")
    p = TASKS[task]["pilot"]
    cols = GRID["one_minus_beta2"]
    lines = [
        f"The stored pilot of `{task}` ($\\mathrm{{lr}} = {p['lr']:g}$, width {p['hidden']}, "
        f"{p['steps']} steps, {p['date']}; each cell: settled / transient status, settled "
        "median log10 loss):",
        "",
        "| 1 - beta1 \\ 1 - beta2 | "
        + " | ".join(f"{c:g}" for c in cols)
        + " | settled edge | transient edge |",
        "|---" * (len(cols) + 3) + "|",
    ]
    for i, a in enumerate(GRID["one_minus_beta1"]):
        cells = [
            f"{p['settled'][i][j]} / {p['transient'][i][j]} "
            f"({p['settled_median_log10_loss'][i][j]:.1f})"
            for j in range(len(cols))
        ]
        edges = [
            "-" if e is None else f"{e:g}" for e in (p["settled_edge"][i], p["transient_edge"][i])
        ]
        lines.append(f"| {a:g} | " + " | ".join(cells + edges) + " |")
    return lines

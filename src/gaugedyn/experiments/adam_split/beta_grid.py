"""The ``(beta1, beta2)`` grid of Adam on offline vision and language tasks
(derivations/theory.md section 3), judged under the protocol written in
``src/gaugedyn/experiments/adam_split/PROTOCOL.md`` (fixed before any grid ran).

Every copy (task, cell ``(beta1, beta2)``, seed) trains one task with Adam's update at
``betas=(beta1, beta2)``; all cells and seeds of a task are one harness task, trained as one
program by :func:`gaugedyn.experiments.adam_split._batched.train_copies` (each copy's own
model and minibatches, ``torch.optim.Adam``'s arithmetic with per-copy betas: bit for bit the
trajectory ``torch.optim.Adam`` gives the copy alone on the CPU). Every step of every copy is
split by streaming sums in the working precision, which give both sign readings:

    u = sign + lag + residual,   lag = (m^ - w^)/(sqrt(v^) + eps),
    current reading: sign = sign(g_t),  residual = transition + ratio + eps;
    memory reading:  sign = sign(w^),   residual = ratio + eps,

with ``w`` the first moment taken with the second moment's memory (``w is m`` when ``b1 == b2``).
The declared reference copies (``reference``: seed 0 of the grid's four corner cells by
default, or every copy) are also split every step by the reference
:func:`gaugedyn.adam.split_update` in float64.

- *checks* (they decide the exit status): the streaming lag is exactly zero at every step of
  every tied copy (and the reference's on the tied reference copies); on the reference copies,
  at every coordinate and step, the five parts sum to the update to ``1e-12``, the split update
  is the step applied to float32 round-off, and the streaming sums equal the reference's to
  ``REFERENCE_TOL`` of the update norm;
- *findings* (:func:`gaugedyn.harness.judged`, rule ``mean_threshold``: the 95% Student t
  interval over seeds of the per-seed mean over the judged cells), per task, on the cells the
  protocol names, diverged cells excluded: ``sign_dominated_tied``, ``lag_substantial`` and
  ``residual_small`` (each off-diagonal region ``beta2 > beta1`` and ``beta2 < beta1``
  separately) and ``tied_smoother`` (at matched ``beta1`` and matched ``beta2``, each region).
  Readings are judged, not chosen: a share or sign-dominance finding is judged under each sign
  reading (current, memory) and each share convention (squared, norm), four readings stored in
  ``readings`` with their estimates and intervals in ``tolerance.reading_detail``; the verdict
  is their common one, or "depends on the reading". The estimate and interval shown are the
  ``current/squared`` reading's. The paper gives no value of these measures, so the power is
  computed at the threshold moved half a standard deviation of the per-seed values onto the
  claimed side (:func:`gaugedyn.harness._verdicts.margin_value`). A configuration other than
  the full one prints every finding as "provisional (quick)" (or "provisional (reduced
  configuration)").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..._errors import InputError
from ...adam import READING_SUMS
from ...harness import Claim, Experiment, Param, judged, no_paper_value
from ...harness import configuration_label as _protocol_label
from ...stats import judge
from ._grid import (
    CONVENTIONS,
    TASK_KINDS,
    TASKS,
    cell_table,
    diverged_cells,
    protocol_statistics,
)

SUM_TOL = 1e-12
REFERENCE_TOL = 1e-4
PROTOCOL = "src/gaugedyn/experiments/adam_split/PROTOCOL.md"
FULL_KEYS = ("tasks", "beta1s", "beta2s", "seeds", "steps", "lr", "skip")
VERDICT_CODES = {"NOT HELD": 0, "HELD": 1, "UNRESOLVED": 2, "depends on the reading": 3}
PRIMARY_READING = "current/squared"
"""The reading whose estimate and interval a finding shows (its verdict is every reading's)."""
REFERENCE_SETS = ("corners", "all")


def _device_ok(x) -> bool:
    import re

    return isinstance(x, str) and re.fullmatch(r"cpu|cuda(:[0-9]+)?", x) is not None


_BETAS = dict(type=list, item=float, lo=0.0, hi=0.999, min_len=2, max_len=8, distinct=True,
              why="a memory of at most 1000 steps, within a run's length")


class BetaGrid(Experiment):
    name = "beta_grid"
    description = ("Adam's update split into sign, lag and residual over a (beta1, beta2) grid on "
                   "six offline tasks (digits MLP/CNN/ResNet; character transformer/GRU and word "
                   "MLP on pydoc_data.topics) and the ReLU teacher-student: both sign readings, "
                   "both share conventions, findings with seed intervals under a fixed protocol.")
    params = {
        "tasks": Param(list, list(TASKS), choices=TASKS, min_len=1, max_len=len(TASKS),
                       distinct=True, help="training tasks (gaugedyn.experiments.adam_split.tasks)"),
        "beta1s": Param(default=[0.8, 0.9, 0.99, 0.999], quick=[0.9, 0.99, 0.999], **_BETAS,
                        help="first-moment factors (rows of the grid)"),
        "beta2s": Param(default=[0.8, 0.9, 0.99, 0.999], quick=[0.9, 0.99, 0.999], **_BETAS,
                        help="second-moment factors (columns of the grid)"),
        "seeds": Param(int, 10, quick=4, lo=2, hi=50, why="time: one training per seed and cell",
                       help="independent runs per cell (the unit of every interval)"),
        "steps": Param(int, 200, quick=50, lo=0, hi=100_000, why="time: steps of every training",
                       help="Adam steps per run (0: each task's default, 400; teacher-student 600)"),
        "lr": Param(float, 0.0, lo=0.0, hi=1.0, why="Adam's step is lr per coordinate",
                    help="Adam step size (0: each task's default)"),
        "reference": Param(str, "corners", choices=REFERENCE_SETS,
                           help="copies also split every step by the float64 reference: "
                                "'corners' (seed 0 of the four corner cells of the grid) or "
                                "'all'"),
        "skip": Param(float, 0.1, lo=0.0, hi=0.5, why="at least half of the steps are measured",
                      help="start-up fraction of steps left out of every step mean"),
        "device": Param(str, "cpu", check=_device_ok, allowed="'cpu', 'cuda' or 'cuda:N'",
                        help="torch device of the batched training"),
    }
    definitions = {
        "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
        "parts": "lag = (m^ - w^)/(sqrt(v^)+eps), w_t = b2 w_{t-1} + (1-b2) g_t, w^ = w/(1-b2^t); "
                 "current reading: sign = sign(g_t), residual = transition + ratio + eps; "
                 "memory reading: sign = sign(w^), residual = ratio + eps",
        "share": "squared: |p_k|^2 / sum_j |p_j|^2; norm: |p_k| / sum_j |p_j|, over "
                 "(sign, lag, residual) of the reading, all parameters, per step; run value: mean "
                 "over steps after the start-up fraction skip",
        "sign_dominance": "squared: cos^2(u, sign part), norm: cos(u, sign part), step mean "
                          "(1 for a pure sign update)",
        "magnitude": "|u|^2 / n, step mean (1 for a pure sign update)",
        "roughness": "mean_t |Delta^2 log |u_t|| after skip (detrended; smaller = smoother)",
        "diverged": "a run diverged if a minibatch loss was not finite, or its final evaluation "
                    "loss is not finite or above its initial one; a cell diverged if any seed "
                    "did; diverged cells are hatched and left out of every finding",
        "intervals": "rule mean_threshold (gaugedyn.stats.RULES): 95% Student-t interval over "
                     "seeds of the per-seed mean over the judged cells, in every reading (sign "
                     "reading x share convention); verdict: the readings' common one, or "
                     "'depends on the reading'",
        "protocol": PROTOCOL,
    }

    def tasks(self, config):
        b1s = [float(b) for b in config["beta1s"]]
        b2s = [float(b) for b in config["beta2s"]]
        if not set(b1s) & set(b2s):
            raise InputError(f"beta1s = {b1s} and beta2s = {b2s} share no value; the grid needs "
                             "tied cells (beta1 == beta2): allowed: lists with a common value")
        device = str(config.get("device", "cpu"))
        if device != "cpu":
            import torch

            if not torch.cuda.is_available():
                raise InputError(f"device={device!r} is not allowed on this machine: torch sees "
                                 "no CUDA device; allowed: 'cpu'")
        common = {"beta1s": b1s, "beta2s": b2s, "seeds": int(config["seeds"]),
                  "steps": int(config["steps"]), "lr": float(config["lr"]),
                  "reference": str(config.get("reference", "corners"))}
        if device != "cpu":
            common["device"] = device
        return [{"task": t, **common} for t in config["tasks"]]

    def run_task(self, task, seed):
        from ._batched import train_copies
        from .tasks import DEFAULTS

        cells = copies_of(task)
        seeds = copy_seeds(seed, cells)
        steps = task["steps"] or DEFAULTS[task["task"]]["steps"]
        lr = task["lr"] or DEFAULTS[task["task"]]["lr"]
        out = train_copies(task["task"], [(b1, b2, s) for (b1, b2, _), s in zip(cells, seeds)],
                           steps, lr, reference=reference_copies(task),
                           device=task.get("device", "cpu"))
        return {**out, "lr": float(lr)}

    def analyse(self, config, tasks, results, seed):
        runs, per_run = expand(tasks, results)
        return analyse_grid(config, runs, per_run, tasks, [dict(r) for r in results])

    def plot(self, arrays, config, outdir):
        names = []
        for name in [str(t) for t in arrays["task_names"]]:
            names.append(plot_heatmaps(arrays, outdir, name))
            names.append(plot_update_norms(arrays, outdir, name))
        names.append(plot_verdicts(arrays, outdir))
        return names


def configuration_label(config: dict, params: dict | None = None, keys=FULL_KEYS) -> str:
    """:func:`gaugedyn.harness._protocol.configuration_label` over ``keys`` of ``params``
    (by default this experiment's)."""
    return _protocol_label(config, BetaGrid.params if params is None else params, keys)


def copies_of(task: dict) -> list[tuple[float, float, int]]:
    """The copies ``(beta1, beta2, seed index)`` of one batched task, in the order of its
    arrays: ``beta1`` major, then ``beta2``, then the seed index."""
    return [(float(b1), float(b2), k) for b1 in task["beta1s"] for b2 in task["beta2s"]
            for k in range(int(task["seeds"]))]


def copy_seeds(seed, cells: list[tuple[float, float, int]]) -> list:
    """Each copy's ``SeedSequence``: the task-seed rule (:func:`gaugedyn._meta.task_seed`) on
    the copy's coordinates ``(beta1, beta2, seed index)`` under the task's own seed, so a copy's
    seed does not depend on the other copies of its batch."""
    from ..._meta import integer_seed, task_seed

    root = integer_seed(seed)
    return [task_seed(root, b1, b2, k) for b1, b2, k in cells]


def reference_copies(task: dict) -> list[int]:
    """Indices (in :func:`copies_of`'s order) of the copies split by the float64 reference:
    ``"corners"``: seed 0 of the cells ``(min or max beta1, min or max beta2)``; ``"all"``: every
    copy."""
    cells = copies_of(task)
    if task.get("reference", "corners") == "all":
        return list(range(len(cells)))
    b1s, b2s = task["beta1s"], task["beta2s"]
    corners = {(float(a), float(b)) for a in (min(b1s), max(b1s)) for b in (min(b2s), max(b2s))}
    return [i for i, (b1, b2, k) in enumerate(cells) if k == 0 and (b1, b2) in corners]


def expand(tasks: list[dict], results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The runs of the batched tasks, one task and result per copy
    (``{task, beta1, beta2, seed}`` with ``seed`` the seed index, and ``{sums, final_loss,
    initial_loss, nonfinite_step}``), as :func:`gaugedyn.experiments.adam_split._grid.cell_table`
    reads them."""
    runs, per_run = [], []
    for task, r in zip(tasks, results):
        for c, (b1, b2, k) in enumerate(copies_of(task)):
            runs.append({"task": task["task"], "beta1": b1, "beta2": b2, "seed": k})
            per_run.append({"sums": np.asarray(r["sums"])[c],
                            "final_loss": float(np.asarray(r["final_loss"])[c]),
                            "initial_loss": float(np.asarray(r["initial_loss"])[c]),
                            "nonfinite_step": int(np.asarray(r["nonfinite_step"])[c])})
    return runs, per_run


_STATEMENTS = {
    "sign_dominated_tied": "tied updates are sign-dominated: the fraction of |u|^2 along the sign "
                           "part, cos^2(u, sign), over the tied cells, exceeds {t:g}",
    "lag_substantial": "off the diagonal ({region}) the lag is substantial: its squared-norm share "
                       "exceeds {t:g}",
    "residual_small": "off the diagonal ({region}) the residual is comparatively small: its "
                      "squared-norm share minus the lag's is below {t:g}",
    "tied_smoother": "tied updates are smoother: at matched {match}, mean log(roughness tied / "
                     "roughness untied) over the cell pairs ({region}) is below {t:g}",
}


def finding_id(task: str, stat: dict) -> str:
    """``finding:<task>:<claim>:<region>[:matched_<beta>]`` (one finding for every reading)."""
    tail = f":matched_{stat['match']}" if "match" in stat else ""
    return f"finding:{task}:{stat['claim']}:{stat['region']}{tail}"


READING_ORDER = tuple(f"{r}/{c}" for r in ("current", "memory") for c in CONVENTIONS)
"""The readings a share or sign-dominance finding is judged under: sign reading x share
convention (``PROTOCOL.md`` sections 2, 3); ``current/squared`` is listed first."""


def _judgements(group: list[dict]) -> dict:
    """``{reading: Judgement}`` of one finding: ``mean_threshold`` on the per-seed values of
    every sign reading and share convention (one reading where the measure depends on neither)."""
    out = {}
    for stat in group:
        for c in CONVENTIONS:
            x = stat["conventions"][c]
            name = "as judged" if stat["reading"] == "both" else f"{stat['reading']}/{c}"
            if name in out:
                continue
            out[name] = judge("mean_threshold", x["per_seed"], threshold=x["threshold"],
                              direction=x["direction"])
    return out


def findings_of(task: str, statistics: list[dict], label: str, diverged: list[str]) -> list:
    """The protocol's statistics of ``task`` as findings: one per claim, region (and match),
    judged under every documented reading (:data:`READING_ORDER`); the verdict is the readings'
    common one, or "depends on the reading"."""
    groups: dict = {}
    for stat in statistics:
        groups.setdefault(finding_id(task, stat), []).append(stat)
    out = []
    for fid, group in groups.items():
        stat = group[0]
        readings = _judgements(group)
        primary = readings.get(PRIMARY_READING, next(iter(readings.values())))
        words = _STATEMENTS[stat["claim"]].format(t=primary.threshold, region=stat["region"],
                                                  match=stat.get("match", ""))
        n = len(stat["cells"])
        several = len(readings) > 1
        how = ("each sign reading (current, memory) and share convention (squared, norm): "
               + ", ".join(f"{k} {j.verdict}" for k, j in readings.items())
               if several else "the update does not depend on the reading")
        power_at, why = no_paper_value(primary)
        statement = (f"{label + ': ' if label else ''}{task} ({TASK_KINDS[task]}): {words} "
                     f"[{n} cell{'s' if n != 1 else ''}; mean_threshold over seeds; judged under "
                     f"{how}; the paper gives no value]")
        detail = {k: {"estimate": j.estimate, "interval": [j.low, j.high],
                      "threshold": j.threshold, "direction": j.direction, "verdict": j.verdict,
                      "rule": j.rule, "per_seed": j.values}
                  for k, j in readings.items()}
        extra = {"region": stat["region"], "cells": stat["cells"], "reading_detail": detail,
                 "diverged_cells": diverged, "provisional": label or None,
                 "protocol": PROTOCOL, **why}
        if "match" in stat:
            extra["match"] = stat["match"]
        out.append(judged(fid, statement, primary, readings=readings if several else None,
                          paper_value=power_at, extra=extra))
    return out


def analyse_grid(config: dict, runs: list[dict], per_run: list[dict], tasks: list[dict],
                 results: list[dict]):
    """Arrays, claims (checks, then the findings per task) and diagnostics of a grid run:
    ``runs``/``per_run`` one per copy (:func:`expand`), ``tasks``/``results`` the batched tasks
    and their results (for the checks)."""
    table = cell_table(per_run, runs, float(config["skip"]))
    label = configuration_label(config)
    arrays = grid_arrays(table, runs, per_run)
    claims = correctness_claims(tasks, results)
    diagnostics: dict = {"protocol": PROTOCOL, "provisional": label or None, "per_task": {}}
    for name in table["tasks"]:
        diverged = diverged_cells(table, name)
        found = findings_of(name, protocol_statistics(table, name), label, diverged)
        claims += found
        arrays[f"{name}__verdicts"] = np.array([VERDICT_CODES[c.verdict] for c in found],
                                               dtype=np.int8)
        arrays["finding_names"] = np.array([c.id.split(":", 2)[2] for c in found])
        arrays[f"caption_heatmaps_{name}"] = np.array(heatmap_caption(name, diverged, label))
        diagnostics["per_task"][name] = {
            "kind": TASK_KINDS[name], "diverged_cells": diverged,
            "findings": {c.id.split(":", 2)[2]: _diagnostic(c) for c in found}}
    return arrays, claims, diagnostics


def _diagnostic(c: Claim) -> dict:
    tol = c.tolerance
    return {"verdict": c.verdict, "estimate": c.measured, "interval": c.interval,
            "region": tol["region"], "readings": tol["reading_detail"],
            "cells": tol["cells"], "diverged_cells": tol["diverged_cells"]}


HEATMAP_FIELDS = ("share_sign_squared_current", "share_lag_squared_current",
                  "share_residual_squared_current", "dominance_squared_current",
                  "dominance_squared_memory", "roughness", "loss_ratio")


def grid_arrays(table: dict, tasks: list[dict], results: list[dict]) -> dict:
    """Seed means ``(n1, n2)`` of the heatmap fields per task (``<task>__<field>``), the cell
    flags ``<task>__cell_diverged``, the seed-mean update norms ``<task>__update_norm
    (n1, n2, T)``, ``beta1s``, ``beta2s`` and ``task_names``."""
    from ._grid import cell_means

    b1s, b2s = table["beta1s"], table["beta2s"]
    arrays = {"beta1s": np.array(b1s), "beta2s": np.array(b2s),
              "task_names": np.array(list(table["tasks"]))}
    for name in table["tasks"]:
        means = cell_means(table, name)
        means["loss_ratio"] = means["final_loss"] / means["initial_loss"]
        for f in (*HEATMAP_FIELDS, "share_lag_norm_current", "magnitude", "cell_diverged"):
            arrays[f"{name}__{f}"] = np.asarray(means[f])
        runs: dict = {}
        for t, r in zip(tasks, results):
            if t["task"] == name:
                key = (b1s.index(float(t["beta1"])), b2s.index(float(t["beta2"])))
                runs.setdefault(key, []).append(np.sqrt(np.asarray(r["sums"])[:, 5]))
        T = max(len(x) for v in runs.values() for x in v)
        un = np.full((len(b1s), len(b2s), T), np.nan)
        for (i, j), v in runs.items():
            L = min(len(x) for x in v)
            un[i, j, :L] = np.mean([x[:L] for x in v], axis=0)
        arrays[f"{name}__update_norm"] = un
    return arrays


def readme_table(summary: str | Path) -> str:
    """The README's findings table from a run's ``summary.json``: one row per task, one column
    per finding (claim, region, match), the verdict with the ``current/squared`` reading's
    estimate and interval, and each reading's verdict where they disagree."""
    data = json.loads(Path(summary).read_text())
    found = [c for c in data["claims"] if c.get("kind") == "finding"]
    cols = list(dict.fromkeys(":".join(c["id"].split(":")[2:]) for c in found))
    rows: dict = {}
    for c in found:
        _, task, *rest = c["id"].split(":")
        cell = f"{c['verdict']} {c['measured']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]"
        if c["verdict"] == "depends on the reading":
            cell += " (" + ", ".join(f"{k}: {v}" for k, v in c["readings"].items()) + ")"
        rows.setdefault(task, {})[":".join(rest)] = cell
    head = "| task | " + " | ".join(cols) + " |"
    lines = [head, "|" + " --- |" * (len(cols) + 1)]
    for task, cells in rows.items():
        lines.append(f"| {task} ({TASK_KINDS.get(task, '?')}) | "
                     + " | ".join(cells.get(k, "") for k in cols) + " |")
    return "\n".join(lines)


def correctness_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks of a grid (they decide the exit status), from the batched
    tasks and their results (:func:`gaugedyn.experiments.adam_split._batched.train_copies`)."""
    lag = READING_SUMS.index("lag")
    tied_lag, n_tied, n_ref, n_copies = [], 0, 0, 0
    ref_err, sum_err, applied, ref_tied_lag = [], [], [], []
    for task, r in zip(tasks, results):
        cells = copies_of(task)
        sums = np.asarray(r["sums"], dtype=float)
        n_copies += len(cells)
        for c, (b1, b2, _) in enumerate(cells):
            if b1 == b2:
                n_tied += 1
                tied_lag.append(float(np.nanmax(np.abs(sums[c, :, lag]), initial=0.0)))
        index = [int(i) for i in np.asarray(r["reference_index"])]
        n_ref += len(index)
        ref_err += [float(x) for x in np.asarray(r["reference_error"])]
        sum_err += [float(x) for x in np.asarray(r["sum_error"])]
        applied += [float(x) for x in np.asarray(r["applied_ratio"])]
        ref_tied_lag += [float(x) for x, i in zip(np.asarray(r["lag_abs_max"]), index)
                         if cells[i][0] == cells[i][1]]
    worst = lambda xs: max(xs) if xs else float("nan")  # noqa: E731
    lag_tied = worst(tied_lag + ref_tied_lag)
    subset = tasks[0].get("reference", "corners") if tasks else "?"
    where = (f"on the {n_ref} copies split by the float64 reference (the declared '{subset}' "
             f"subset of {n_copies} copies)")
    return [
        Claim(id="beta_grid.recorder_matches_reference",
              statement=("the streaming split sums (working precision, every copy) equal those "
                         "of the reference split (gaugedyn.adam.split_update, float64) "
                         f"{where}: every part's norm and each reading's (u, sign) inner "
                         f"product to {REFERENCE_TOL:g} of |u| (and of |u| |sign|; largest over "
                         "steps and copies)"),
              measured=worst(ref_err), expected=0.0, tolerance=REFERENCE_TOL,
              passed=n_ref >= 1 and worst(ref_err) <= REFERENCE_TOL),
        Claim(id="beta_grid.lag_zero_on_diagonal",
              statement=(f"on every tied copy (beta1 == beta2; {n_tied} runs) the lag part is "
                         "exactly zero at every step: largest streaming lag norm over those "
                         "runs and largest reference |lag| on the tied reference copies"),
              measured=lag_tied, expected=0.0, tolerance=0.0,
              passed=n_tied >= 1 and lag_tied == 0.0),
        Claim(id="beta_grid.parts_sum_to_update",
              statement=(f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
                         "relative to max(1, sum of the parts' magnitudes) at every coordinate "
                         f"and step {where} (float64 from the optimizer's float32 state)"),
              measured=worst(sum_err), expected=0.0, tolerance=SUM_TOL,
              passed=n_ref >= 1 and worst(sum_err) <= SUM_TOL),
        Claim(id="beta_grid.update_is_applied_step",
              statement=("the split update is the step applied: |p_t - p_{t-1} + lr u_t| "
                         "within the float32 round-off bound ulp(p) + 16 2^-24 lr |u| at every "
                         f"coordinate and step {where} (largest ratio to the bound)"),
              measured=worst(applied), expected="<= 1", tolerance=1.0,
              passed=n_ref >= 1 and worst(applied) <= 1.0),
    ]


def heatmap_caption(task: str, diverged: list[str], label: str) -> str:
    lead = f"{label}: " if label else ""
    cells = ", ".join(diverged) if diverged else "none"
    return (f"{lead}{task} ({TASK_KINDS[task]}): squared-norm shares of sign, lag and residual "
            "(current reading), sign dominance cos^2(u, sign) in the current and memory readings, "
            "detrended roughness mean|Delta^2 log|u|| and final/initial loss over (beta1 rows, "
            "beta2 columns); seed means; tied diagonal outlined; hatched: diverged cells, left out "
            f"of every finding ({cells}).")


def _label(b: float) -> str:
    return f"{b:g}"


def _heatmap_panel(ax, data: np.ndarray, b1s, b2s, diverged: np.ndarray, f: str):
    from matplotlib.patches import Rectangle

    unit = f.startswith(("share", "dominance"))
    im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis",
                   vmin=0 if unit else None, vmax=1 if unit else None)
    for i, a in enumerate(b1s):
        for j, b in enumerate(b2s):
            if np.isfinite(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}" if unit else f"{data[i, j]:.3g}", ha="center",
                        va="center", fontsize=6, color="w" if (unit and data[i, j] < 0.5) else "k")
            if diverged[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="xxx",
                                       ec="0.85", lw=0))
            if a == b:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="r", lw=1.2))
    ax.set_xticks(range(len(b2s)), [_label(b) for b in b2s], rotation=45)
    ax.set_yticks(range(len(b1s)), [_label(b) for b in b1s])
    ax.set(xlabel="beta2", ylabel="beta1", title=f.replace("_", " "))
    ax.grid(False)
    return im


def plot_heatmaps(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    b1s, b2s = arrays["beta1s"], arrays["beta2s"]
    diverged = np.asarray(arrays[f"{task}__cell_diverged"]).astype(bool)
    n = len(HEATMAP_FIELDS)
    fig, axes = plt.subplots(1, n, figsize=(2.9 * n, 3.1), squeeze=False)
    for ax, f in zip(axes[0], HEATMAP_FIELDS):
        data = np.asarray(arrays[f"{task}__{f}"], dtype=float)
        fig.colorbar(_heatmap_panel(ax, data, b1s, b2s, diverged, f), ax=ax, shrink=0.8)
    fig.suptitle(f"{task} ({TASK_KINDS[task]})")
    caption = str(arrays.get(f"caption_heatmaps_{task}", task))
    return save_figure(fig, outdir, f"beta_grid_heatmaps_{task}", caption)


def plot_update_norms(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    b1s, b2s = [float(b) for b in arrays["beta1s"]], [float(b) for b in arrays["beta2s"]]
    un = np.asarray(arrays[f"{task}__update_norm"], dtype=float)
    rough = np.asarray(arrays[f"{task}__roughness"], dtype=float)
    diverged = np.asarray(arrays[f"{task}__cell_diverged"]).astype(bool)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True, squeeze=False)
    cmap = plt.get_cmap("viridis")
    for i, a in enumerate(b1s):
        color = cmap(i / max(len(b1s) - 1, 1))
        for j, b in enumerate(b2s):
            y = un[i, j]
            if not np.isfinite(y).any():
                continue
            ax = axes[0, 0] if a == b else axes[0, 1]
            ls = "-" if a == b else (":" if b < a else "--")
            tag = " diverged" if diverged[i, j] else ""
            ax.plot(np.arange(1, y.size + 1), y, color=color, ls=ls, lw=1.0,
                    alpha=0.35 if diverged[i, j] else 1.0,
                    label=f"({a:g}, {b:g}) r={rough[i, j]:.3f}{tag}")
    titles = ("tied: beta1 = beta2", "untied (dashed: beta2 > beta1, dotted: beta2 < beta1)")
    for ax, title in zip(axes[0], titles):
        ax.set(yscale="log", xlabel="step", title=title)
        if ax.lines:
            ax.legend(fontsize=5, ncol=2)
    axes[0, 0].set_ylabel("update norm |u|")
    fig.suptitle(task)
    caption = (f"{task}: update-norm trajectories |u_t| (seed mean), tied cells left, untied right, "
               "colour by beta1; r = detrended roughness mean|Delta^2 log|u|| of each cell; "
               "faint: diverged cells.")
    return save_figure(fig, outdir, f"beta_grid_update_norms_{task}", caption)


def plot_verdicts(arrays: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    names = [str(t) for t in arrays["task_names"]]
    cols = [str(v) for v in arrays["finding_names"]]
    table = np.array([arrays[f"{n}__verdicts"] for n in names], dtype=float)
    words = {v: k for k, v in VERDICT_CODES.items()}
    fig, ax = plt.subplots(figsize=(0.55 * len(cols) + 2.5, 0.45 * len(names) + 3.2))
    colours = np.choose(table.astype(int), [0.0, 1.0, 0.5, 0.3])
    ax.imshow(colours, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i in range(len(names)):
        for j in range(len(cols)):
            ax.text(j, i, words[int(table[i, j])].replace(" ", "\n"), ha="center", va="center",
                    fontsize=4.5)
    ax.set_xticks(range(len(cols)), [c.replace(":", "\n") for c in cols], fontsize=4.5,
                  rotation=90)
    ax.set_yticks(range(len(names)), names)
    ax.grid(False)
    caption = ("Every finding judged task by task under the written protocol (green: HELD, red: NOT "
               "HELD, yellow: UNRESOLVED, orange: depends on the reading; each from the 95% t "
               "intervals over seeds in every sign reading and share convention); the numbers "
               "of each reading are in the claims table.")
    return save_figure(fig, outdir, "beta_grid_verdicts", caption)


EXPERIMENT = BetaGrid()

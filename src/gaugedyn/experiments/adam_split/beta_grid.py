"""The ``(beta1, beta2)`` grid of Adam on offline vision and language tasks
(derivations/theory.md section 3), judged under the protocol written in
``src/gaugedyn/experiments/adam_split/PROTOCOL.md`` (fixed before any grid ran).

Every cell trains one task with ``torch.optim.Adam(betas=(beta1, beta2))``
(:func:`gaugedyn.experiments.adam_split.tasks.train_task`), with the :class:`gaugedyn.adam.AdamRecorder` attached
and every step also split by the reference :func:`gaugedyn.adam.split_update` (float64), which
gives both sign readings:

    u = sign + lag + residual,   lag = (m^ - w^)/(sqrt(v^) + eps),
    current reading: sign = sign(g_t),  residual = transition + ratio + eps;
    memory reading:  sign = sign(w^),   residual = ratio + eps,

with ``w`` the first moment taken with the second moment's memory (``w is m`` when ``b1 == b2``).

- *checks* (they decide the exit status): the lag part is exactly zero at every step of every
  tied cell; at a sample of coordinates the five parts sum to the update to ``1e-12``; the
  recorded update is the step ``torch.optim.Adam`` applied, to float32 round-off; the recorder's
  norms equal the reference split's to ``REFERENCE_TOL`` of the update norm;
- *findings* (:func:`gaugedyn.experiments.finding`, HELD / NOT HELD / UNRESOLVED from a 95%
  interval over seeds), per task and per reading, on the cells the protocol names, diverged
  cells excluded: ``sign_dominated_tied``, ``lag_substantial`` and ``residual_small`` (each
  off-diagonal region ``beta2 > beta1`` and ``beta2 < beta1`` separately) and
  ``tied_smoother`` (at matched ``beta1`` and matched ``beta2``, each region). The verdict is
  the primary (squared-norm) convention's; the norm convention's estimate, interval and verdict
  are recorded beside it. A configuration other than the full one prints every finding as
  "provisional (quick)" (or "provisional (reduced configuration)").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..._errors import InputError
from ...harness import Claim, Experiment, Param, finding
from ...harness import configuration_label as _protocol_label
from ...stats import verdict
from ._grid import (
    CONVENTIONS,
    PRIMARY,
    TASK_KINDS,
    TASKS,
    cell_table,
    diverged_cells,
    protocol_statistics,
)

SUM_TOL = 1e-12
REFERENCE_TOL = 1e-4
_F32 = 2.0**-24
PROTOCOL = "src/gaugedyn/experiments/adam_split/PROTOCOL.md"
FULL_KEYS = ("tasks", "beta1s", "beta2s", "seeds", "steps", "lr", "skip")
VERDICT_CODES = {"NOT HELD": 0, "HELD": 1, "UNRESOLVED": 2}
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
        "seeds": Param(int, 4, quick=2, lo=2, hi=50, why="time: one training per seed and cell",
                       help="independent runs per cell (the unit of every interval)"),
        "steps": Param(int, 200, quick=50, lo=0, hi=100_000, why="time: steps of every training",
                       help="Adam steps per run (0: each task's default, 400; teacher-student 600)"),
        "lr": Param(float, 0.0, lo=0.0, hi=1.0, why="Adam's step is lr per coordinate",
                    help="Adam step size (0: each task's default)"),
        "sample": Param(int, 16, lo=1, hi=4096, why="memory: 12 floats per sampled coordinate "
                        "and step", help="coordinates per run at which the full split is recorded"),
        "skip": Param(float, 0.1, lo=0.0, hi=0.5, why="at least half of the steps are measured",
                      help="start-up fraction of steps left out of every step mean"),
    }
    definitions = {
        "update": "u = m^/(sqrt(v^)+eps), m^ = m/(1-b1^t), v^ = v/(1-b2^t) (torch.optim.Adam)",
        "parts": "lag = (m^ - w^)/(sqrt(v^)+eps), w_t = b2 w_{t-1} + (1-b2) g_t, w^ = w/(1-b2^t); "
                 "current reading: sign = sign(g_t), residual = transition + ratio + eps; "
                 "memory reading: sign = sign(w^), residual = ratio + eps",
        "share": "squared (primary): |p_k|^2 / sum_j |p_j|^2; norm: |p_k| / sum_j |p_j|, over "
                 "(sign, lag, residual) of the reading, all parameters, per step; run value: mean "
                 "over steps after the start-up fraction skip",
        "sign_dominance": "squared: cos^2(u, sign part), norm: cos(u, sign part), step mean "
                          "(1 for a pure sign update)",
        "magnitude": "|u|^2 / n, step mean (1 for a pure sign update)",
        "roughness": "mean_t |Delta^2 log |u_t|| after skip (detrended; smaller = smoother)",
        "diverged": "a run diverged if a minibatch loss was not finite, or its final evaluation "
                    "loss is not finite or above its initial one; a cell diverged if any seed "
                    "did; diverged cells are hatched and left out of every finding",
        "intervals": "95% Student-t interval over seeds of the per-seed mean over the judged "
                     "cells (gaugedyn.stats.mean_ci); verdict gaugedyn.stats.verdict",
        "protocol": PROTOCOL,
    }

    def tasks(self, config):
        b1s = [float(b) for b in config["beta1s"]]
        b2s = [float(b) for b in config["beta2s"]]
        if not set(b1s) & set(b2s):
            raise InputError(f"beta1s = {b1s} and beta2s = {b2s} share no value; the grid needs "
                             "tied cells (beta1 == beta2): allowed: lists with a common value")
        common = {"steps": int(config["steps"]), "lr": float(config["lr"]),
                  "sample": int(config["sample"])}
        return [{"task": t, "beta1": b1, "beta2": b2, "seed": s, **common}
                for t in config["tasks"] for b1 in b1s for b2 in b2s
                for s in range(int(config["seeds"]))]

    def run_task(self, task, seed):
        from .tasks import DEFAULTS, train_task

        steps = task["steps"] or None
        lr = task["lr"] or DEFAULTS[task["task"]]["lr"]
        out = train_task(task["task"], task["beta1"], task["beta2"], seed=seed, steps=steps,
                         lr=lr, sample=task["sample"], threads=1)
        keep = ("loss", "share_lag", "update_norm", "reference", "final_loss", "initial_loss",
                "nonfinite_step", "n_params")
        result = {k: out[k] for k in keep}
        result.update(sample_checks(out, lr), reference_error=reference_error(out),
                      lag_norm_max=float(np.nanmax(np.asarray(out["norms"])[:, 1], initial=0.0)),
                      lr=float(lr))
        return result

    def analyse(self, config, tasks, results, seed):
        return analyse_grid(config, tasks, [dict(r) for r in results])

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
    """``finding:<task>:<claim>:<reading>:<region>[:matched_<beta>]``."""
    tail = f":matched_{stat['match']}" if "match" in stat else ""
    return f"finding:{task}:{stat['claim']}:{stat['reading']}:{stat['region']}{tail}"


def finding_of(task: str, stat: dict, label: str, diverged: list[str]) -> Claim:
    """One protocol statistic as a finding: the verdict from the primary convention, both
    conventions (estimate, interval, threshold, verdict) recorded in ``tolerance``."""
    conv = {}
    for c in CONVENTIONS:
        x = stat["conventions"][c]
        conv[c] = {**x, "verdict": verdict(x["interval"], x["threshold"], x["direction"])}
    p = stat["conventions"][PRIMARY]
    words = _STATEMENTS[stat["claim"]].format(t=p["threshold"], region=stat["region"],
                                              match=stat.get("match", ""))
    n = len(stat["cells"])
    reading = ("both readings (the update does not depend on the reading)"
               if stat["reading"] == "both" else f"{stat['reading']} reading")
    statement = (f"{label + ': ' if label else ''}{task} ({TASK_KINDS[task]}), {reading}: {words}"
                 f" [{n} cell{'s' if n != 1 else ''}; 95% interval over seeds; norm convention: "
                 f"{conv['norm']['verdict']}]")
    extra = {"reading": stat["reading"], "region": stat["region"], "primary": PRIMARY,
             "conventions": conv, "diverged_cells": diverged, "provisional": label or None,
             "protocol": PROTOCOL}
    if "match" in stat:
        extra["match"] = stat["match"]
    iv = (p["estimate"], *p["interval"])
    return finding(finding_id(task, stat), statement, iv, p["threshold"], p["direction"],
                   cells=stat["cells"], extra=extra)


def analyse_grid(config: dict, tasks: list[dict], results: list[dict]):
    """Arrays, claims (checks, then the findings per task) and diagnostics of a grid run."""
    table = cell_table(results, tasks, float(config["skip"]))
    label = configuration_label(config)
    arrays = grid_arrays(table, tasks, results)
    claims = correctness_claims(tasks, results)
    diagnostics: dict = {"protocol": PROTOCOL, "provisional": label or None, "per_task": {}}
    for name in table["tasks"]:
        diverged = diverged_cells(table, name)
        found = [finding_of(name, s, label, diverged) for s in protocol_statistics(table, name)]
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
            "reading": tol["reading"], "region": tol["region"], "primary": tol["primary"],
            "conventions": {k: {"estimate": v["estimate"], "interval": v["interval"],
                                "threshold": v["threshold"], "verdict": v["verdict"]}
                            for k, v in tol["conventions"].items()},
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
                runs.setdefault(key, []).append(np.sqrt(np.asarray(r["reference"])[:, 5]))
        T = max(len(x) for v in runs.values() for x in v)
        un = np.full((len(b1s), len(b2s), T), np.nan)
        for (i, j), v in runs.items():
            L = min(len(x) for x in v)
            un[i, j, :L] = np.mean([x[:L] for x in v], axis=0)
        arrays[f"{name}__update_norm"] = un
    return arrays


def reference_error(out: dict) -> float:
    """Largest ``|recorder norm - reference norm| / reference |u|`` over the steps of a run, for
    the sign (current reading), lag, residual and update norms."""
    ref = np.asarray(out["reference"], dtype=float)
    rec = np.asarray(out["norms"], dtype=float)
    pairs = ((0, 0), (1, 2), (5, 3), (6, 5))  # (recorder NORM_NAMES index, READING_SUMS index)
    u = np.sqrt(ref[:, 5])
    with np.errstate(divide="ignore", invalid="ignore"):
        errs = [np.abs(rec[:, i] - np.sqrt(ref[:, j])) / u for i, j in pairs]
    e = np.concatenate(errs)
    e = e[np.isfinite(e)]
    return float(e.max()) if e.size else 0.0


def readme_table(summary: str | Path) -> str:
    """The README's findings table from a run's ``summary.json`` (verdicts and primary
    intervals exactly as the claims state them), one row per task and reading."""
    data = json.loads(Path(summary).read_text())
    found = [c for c in data["claims"] if c.get("kind") == "finding"]
    cols = list(dict.fromkeys(":".join(c["id"].split(":")[2:3] + c["id"].split(":")[4:])
                              for c in found))
    rows: dict = {}
    for c in found:
        _, task, claim, reading, *rest = c["id"].split(":")
        key = (task, reading)
        cell = f"{c['verdict']} {c['measured']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]"
        rows.setdefault(key, {})[":".join([claim, *rest])] = cell
    head = "| task | reading | " + " | ".join(cols) + " |"
    lines = [head, "|" + " --- |" * (len(cols) + 2)]
    for (task, reading), cells in rows.items():
        lines.append(f"| {task} ({TASK_KINDS.get(task, '?')}) | {reading} | "
                     + " | ".join(cells.get(k, "") for k in cols) + " |")
    return "\n".join(lines)


def sample_checks(out: dict, lr: float) -> dict:
    """Checks at the recorder's sampled coordinates of one run (rows of steps not taken, after a
    non-finite loss, are nan and left out).

    ``sum_error``: ``max |sign + lag + transition + ratio + eps - update| / max(1, sum_k |p_k|)``
    (round-off relative to the parts' magnitudes: far off the diagonal, e.g. ``b1 = 0.999``,
    ``b2 = 0.8``, the lag and ratio parts grow large and cancel); ``lag_abs_max``:
    ``max |lag|``; ``applied_ratio``: ``max |p_t - p_{t-1} + lr u_t| / bound`` with the float32
    round-off bound ``ulp(max(|p_t|, |p_{t-1}|)) + 16 * 2^-24 lr |u_t|`` of PyTorch's step
    (<= 1 when the recorded update is the applied one).
    """
    groups = sorted({k.rsplit("_g", 1)[1] for k in out if k.startswith("sample_update_g")})
    sum_err, lag_max, applied = 0.0, 0.0, 0.0
    for g in groups:
        parts = [np.asarray(out[f"sample_{p}_g{g}"], dtype=float)
                 for p in ("sign", "lag", "transition", "ratio", "eps")]
        u = np.asarray(out[f"sample_update_g{g}"], dtype=float)
        if u.size == 0:
            continue
        scale = np.maximum(sum(np.abs(x) for x in parts), 1.0)
        sum_err = max(sum_err, float(np.nanmax(np.abs(sum(parts) - u) / scale, initial=0.0)))
        lag_max = max(lag_max, float(np.nanmax(np.abs(parts[1]), initial=0.0)))
        p = np.asarray(out[f"sample_param_g{g}"], dtype=float)
        if p.shape[0] > 1:
            dp = p[1:] - p[:-1]
            big = np.maximum(np.abs(p[1:]), np.abs(p[:-1])).astype(np.float32)
            bound = np.spacing(big).astype(float) + 16 * _F32 * lr * np.abs(u[1:])
            applied = max(applied, float(np.nanmax(np.abs(dp + lr * u[1:]) / bound, initial=0.0)))
    return {"sum_error": sum_err, "lag_abs_max": lag_max, "applied_ratio": applied,
            "sampled_groups": len(groups)}


def correctness_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks of a grid (they decide the exit status)."""
    tied = [i for i, t in enumerate(tasks) if float(t["beta1"]) == float(t["beta2"])]
    lag_tied = max((max(float(np.nanmax(np.abs(results[i]["share_lag"]), initial=0.0)),
                        float(results[i]["lag_norm_max"]), float(results[i]["lag_abs_max"]))
                    for i in tied), default=float("nan"))
    sum_err = max(float(r["sum_error"]) for r in results)
    applied = max(float(r["applied_ratio"]) for r in results)
    sampled = min(int(r["sampled_groups"]) for r in results)
    ref_err = max(float(r["reference_error"]) for r in results)
    return [
        Claim(id="beta_grid.recorder_matches_reference",
              statement=("the recorder's per-step norms of the sign, lag, residual and update equal "
                         "those of the reference split (gaugedyn.adam.split_update, float64) to "
                         f"{REFERENCE_TOL:g} of the update norm (largest over steps and runs)"),
              measured=ref_err, expected=0.0, tolerance=REFERENCE_TOL,
              passed=ref_err <= REFERENCE_TOL),
        Claim(id="beta_grid.lag_zero_on_diagonal",
              statement=(f"on every tied cell (beta1 == beta2; {len(tied)} runs) the lag part is "
                         "exactly zero at every step: largest lag share, lag norm and sampled "
                         "|lag| over those runs"),
              measured=lag_tied, expected=0.0, tolerance=0.0,
              passed=bool(tied) and lag_tied == 0.0),
        Claim(id="beta_grid.parts_sum_to_update",
              statement=(f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
                         "relative to max(1, sum of the parts' magnitudes) (largest error over the "
                         "sampled coordinates of every step of every run, float64 from the "
                         f"optimizer's float32 state; {len(results)} runs)"),
              measured=sum_err, expected=0.0, tolerance=SUM_TOL,
              passed=sampled >= 1 and sum_err <= SUM_TOL),
        Claim(id="beta_grid.update_is_applied_step",
              statement=("the recorded update is the step torch.optim.Adam applied: "
                         "|p_t - p_{t-1} + lr u_t| within the float32 round-off bound "
                         "ulp(p) + 16 2^-24 lr |u| at every sampled coordinate and step "
                         "(largest ratio to the bound)"),
              measured=applied, expected="<= 1", tolerance=1.0,
              passed=sampled >= 1 and applied <= 1.0),
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
    colours = np.choose(table.astype(int), [0.0, 1.0, 0.5])
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
               "HELD, yellow: UNRESOLVED, from the primary squared-norm convention's 95% interval "
               "over seeds); the numbers and the norm convention are in the claims table.")
    return save_figure(fig, outdir, "beta_grid_verdicts", caption)


EXPERIMENT = BetaGrid()

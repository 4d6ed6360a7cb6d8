"""The findings, arrays and checks of ``beta_grid`` from its runs (``PROTOCOL.md``): every copy's
measures (``_grid``), the protocol's statistics judged under every reading, the heat-map arrays
and the correctness checks against the float64 reference split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...adam import READING_SUMS
from ...harness import Claim, judged
from ...stats import RULES, generator, judge, measure_of
from ._grid import cell_table, diverged_cells, protocol_statistics
from ._protocol import (
    CONVENTIONS,
    FINDING_MEASURES,
    PRIMARY_READING,
    PROTOCOL,
    REFERENCE_TOL,
    SUM_TOL,
    TASK_KINDS,
    copies_of,
)

VERDICT_CODES = {"NOT HELD": 0, "HELD": 1, "UNRESOLVED": 2, "depends on the reading": 3}


def expand(tasks: list[dict], results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The runs of the batched tasks, one task and result per copy
    (``{task, beta1, beta2, seed}`` with ``seed`` the seed index, and ``{sums, final_loss,
    initial_loss, nonfinite_step}``), as `gaugedyn.experiments.adam_split._grid.cell_table()`
    reads them."""
    runs, per_run = [], []
    for task, r in zip(tasks, results):
        for c, (b1, b2, k) in enumerate(copies_of(task)):
            runs.append({"task": task["task"], "beta1": b1, "beta2": b2, "seed": k})
            per_run.append(
                {
                    "sums": np.asarray(r["sums"])[c],
                    "final_loss": float(np.asarray(r["final_loss"])[c]),
                    "initial_loss": float(np.asarray(r["initial_loss"])[c]),
                    "nonfinite_step": int(np.asarray(r["nonfinite_step"])[c]),
                }
            )
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


def _judgements(group: list[dict], rule: str, seed, fid: str) -> dict:
    """``{reading: Judgement}`` of one finding: ``rule`` (its measure's, ``mean_threshold``) on
    the per-seed values of every sign reading and share convention (one reading where the
    measure depends on neither). A randomised rule (a median rule) draws from the run's
    analysis ``seed``, the finding's id and the reading."""
    out = {}
    for stat in group:
        for c in CONVENTIONS:
            x = stat["conventions"][c]
            name = "as judged" if stat["reading"] == "both" else f"{stat['reading']}/{c}"
            if name in out:
                continue
            rng = generator(seed, "beta_grid", fid, name) if RULES[rule].randomised else None
            out[name] = judge(
                rule, x["per_seed"], threshold=x["threshold"], direction=x["direction"], rng=rng
            )
    return out


def findings_of(task: str, statistics: list[dict], label: str, diverged: list[str], seed) -> list:
    """The protocol's statistics of ``task`` as findings: one per claim, region (and match),
    judged under every documented reading (`READING_ORDER`); the verdict is the readings'
    common one, or "depends on the reading"."""
    groups: dict = {}
    for stat in statistics:
        groups.setdefault(finding_id(task, stat), []).append(stat)
    out = []
    for fid, group in groups.items():
        stat = group[0]
        measure = measure_of(FINDING_MEASURES, fid)
        rule = measure.rule("threshold")
        readings = _judgements(group, rule, seed, fid)
        primary = readings.get(PRIMARY_READING, next(iter(readings.values())))
        words = _STATEMENTS[stat["claim"]].format(
            t=primary.threshold, region=stat["region"], match=stat.get("match", "")
        )
        n = len(stat["cells"])
        several = len(readings) > 1
        how = (
            "each sign reading (current, memory) and share convention (squared, norm): "
            + ", ".join(f"{k} {j.verdict}" for k, j in readings.items())
            if several
            else "the update does not depend on the reading"
        )
        statement = (
            f"{label + ': ' if label else ''}{task} ({TASK_KINDS[task]}): {words} "
            f"[{n} cell{'s' if n != 1 else ''}; {rule} over seeds; judged under "
            f"{how}; the paper gives no value]"
        )
        extra = {
            "region": stat["region"],
            "cells": stat["cells"],
            "diverged_cells": diverged,
            "provisional": label or None,
            "protocol": PROTOCOL,
        }
        if "match" in stat:
            extra["match"] = stat["match"]
        out.append(
            judged(
                fid,
                statement,
                primary,
                measure=measure,
                readings=readings if several else None,
                extra=extra,
            )
        )
    return out


def analyse_grid(
    config: dict,
    runs: list[dict],
    per_run: list[dict],
    tasks: list[dict],
    results: list[dict],
    *,
    label: str,
    seed,
):
    """Arrays, claims (checks, then the findings per task) and diagnostics of a grid run:
    ``runs``/``per_run`` one per copy (`expand()`), ``tasks``/``results`` the batched tasks
    and their results (for the checks); ``label``: the configuration's provisional label
    (``""`` for the declared full one)."""
    table = cell_table(per_run, runs, float(config["skip"]))
    arrays = grid_arrays(table, runs, per_run)
    claims = correctness_claims(tasks, results)
    diagnostics: dict = {"protocol": PROTOCOL, "provisional": label or None, "per_task": {}}
    for name in table["tasks"]:
        diverged = diverged_cells(table, name)
        found = findings_of(name, protocol_statistics(table, name), label, diverged, seed)
        claims += found
        arrays[f"{name}__verdicts"] = np.array(
            [VERDICT_CODES[c.verdict] for c in found], dtype=np.int8
        )
        arrays["finding_names"] = np.array([c.id.split(":", 2)[2] for c in found])
        arrays[f"caption_heatmaps_{name}"] = np.array(heatmap_caption(name, diverged, label))
        diagnostics["per_task"][name] = {
            "kind": TASK_KINDS[name],
            "diverged_cells": diverged,
            "findings": {c.id.split(":", 2)[2]: _diagnostic(c) for c in found},
        }
    return arrays, claims, diagnostics


def _diagnostic(c: Claim) -> dict:
    tol = c.tolerance
    return {
        "verdict": c.verdict,
        "estimate": c.measured,
        "interval": c.interval,
        "region": tol["region"],
        "readings": tol["reading_detail"],
        "cells": tol["cells"],
        "diverged_cells": tol["diverged_cells"],
    }


HEATMAP_FIELDS = (
    "share_sign_squared_current",
    "share_lag_squared_current",
    "share_residual_squared_current",
    "dominance_squared_current",
    "dominance_squared_memory",
    "roughness",
    "loss_ratio",
)


def grid_arrays(table: dict, tasks: list[dict], results: list[dict]) -> dict:
    """Seed means ``(n1, n2)`` of the heatmap fields per task (``<task>__<field>``), the cell
    flags ``<task>__cell_diverged``, the seed-mean update norms ``<task>__update_norm
    (n1, n2, T)``, ``beta1s``, ``beta2s`` and ``task_names``."""
    from ._grid import cell_means

    b1s, b2s = table["beta1s"], table["beta2s"]
    arrays = {
        "beta1s": np.array(b1s),
        "beta2s": np.array(b2s),
        "task_names": np.array(list(table["tasks"])),
    }
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
        cell = (
            f"{c['verdict']} {c['measured']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]"
        )
        if c["verdict"] == "depends on the reading":
            cell += " (" + ", ".join(f"{k}: {v}" for k, v in c["readings"].items()) + ")"
        rows.setdefault(task, {})[":".join(rest)] = cell
    head = "| task | " + " | ".join(cols) + " |"
    lines = [head, "|" + " --- |" * (len(cols) + 1)]
    for task, cells in rows.items():
        lines.append(
            f"| {task} ({TASK_KINDS.get(task, '?')}) | "
            + " | ".join(cells.get(k, "") for k in cols)
            + " |"
        )
    return "\n".join(lines)


def correctness_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks of a grid (they decide the exit status), from the batched
    tasks and their results (`gaugedyn.experiments.adam_split._batched.train_copies()`)."""
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
        ref_tied_lag += [
            float(x)
            for x, i in zip(np.asarray(r["lag_abs_max"]), index)
            if cells[i][0] == cells[i][1]
        ]
    worst = lambda xs: max(xs) if xs else float("nan")  # noqa: E731
    lag_tied = worst(tied_lag + ref_tied_lag)
    subset = tasks[0].get("reference", "corners") if tasks else "?"
    where = (
        f"on the {n_ref} copies split by the float64 reference (the declared '{subset}' "
        f"subset of {n_copies} copies)"
    )
    return [
        Claim(
            id="beta_grid.recorder_matches_reference",
            statement=(
                "the streaming split sums (working precision, every copy) equal those "
                "of the reference split (gaugedyn.adam.split_update, float64) "
                f"{where}: every part's norm and each reading's (u, sign) inner "
                f"product to {REFERENCE_TOL:g} of |u| (and of |u| |sign|; largest over "
                "steps and copies)"
            ),
            measured=worst(ref_err),
            expected=0.0,
            tolerance=REFERENCE_TOL,
            passed=n_ref >= 1 and worst(ref_err) <= REFERENCE_TOL,
        ),
        Claim(
            id="beta_grid.lag_zero_on_diagonal",
            statement=(
                f"on every tied copy (beta1 == beta2; {n_tied} runs) the lag part is "
                "exactly zero at every step: largest streaming lag norm over those "
                "runs and largest reference |lag| on the tied reference copies"
            ),
            measured=lag_tied,
            expected=0.0,
            tolerance=0.0,
            passed=n_tied >= 1 and lag_tied == 0.0,
        ),
        Claim(
            id="beta_grid.parts_sum_to_update",
            statement=(
                f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
                "relative to max(1, sum of the parts' magnitudes) at every coordinate "
                f"and step {where} (float64 from the optimizer's float32 state)"
            ),
            measured=worst(sum_err),
            expected=0.0,
            tolerance=SUM_TOL,
            passed=n_ref >= 1 and worst(sum_err) <= SUM_TOL,
        ),
        Claim(
            id="beta_grid.update_is_applied_step",
            statement=(
                "the split update is the step applied: |p_t - p_{t-1} + lr u_t| "
                "within the float32 round-off bound ulp(p) + 16 2^-24 lr |u| at every "
                f"coordinate and step {where} (largest ratio to the bound)"
            ),
            measured=worst(applied),
            expected="<= 1",
            tolerance=1.0,
            passed=n_ref >= 1 and worst(applied) <= 1.0,
        ),
    ]


def heatmap_caption(task: str, diverged: list[str], label: str) -> str:
    lead = f"{label}: " if label else ""
    cells = ", ".join(diverged) if diverged else "none"
    return (
        f"{lead}{task} ({TASK_KINDS[task]}): squared-norm shares of sign, lag and residual "
        "(current reading), sign dominance cos^2(u, sign) in the current and memory readings, "
        "detrended roughness mean|Delta^2 log|u|| and final/initial loss over (beta1 rows, "
        "beta2 columns); seed means; tied diagonal outlined; hatched: diverged cells, left out "
        f"of every finding ({cells})."
    )

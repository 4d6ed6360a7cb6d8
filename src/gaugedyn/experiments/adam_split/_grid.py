"""The ``(beta1, beta2)`` grid analysis under the written protocol (``PROTOCOL.md`` here).

The grid itself is declared and run by `gaugedyn.experiments.adam_split.beta_grid`, which turns the
statistics of `protocol_statistics()` into findings. This module needs no torch.

Per run (after the start-up fraction ``skip`` of steps), from the split's per-step sums
(`gaugedyn.adam.READING_SUMS`; the streaming sums of the batched training, checked
against the float64 reference split on the declared reference copies), for each sign reading ``r`` (``current``: sign
``sign(g_t)``, residual ``transition + ratio + eps``; ``memory``: sign ``sign(w^)``, residual
``ratio + eps``; the lag is the same) and each share convention (``squared``:
``|p_k|^2 / sum_j |p_j|^2``; ``norm``: ``|p_k| / sum_j |p_j|``):

- ``share_<part>_<convention>_<r>``: the step mean of the share of ``sign``, ``lag``,
  ``residual``;
- ``dominance_<convention>_<r>``: the step mean of ``cos(u, sign_r)`` (norm convention) or
  ``cos^2`` (squared), the fraction of ``|u|^2`` along the reading's sign part (1 exactly for a
  pure sign update ``u = sign``; 0 for an update orthogonal to it);
- ``magnitude``: the step mean of ``|u|^2 / n`` (1 for a pure sign update);
- ``roughness``: ``mean_t |Delta^2 log |u_t||``, second differences remove any linear trend in
  ``log |u|`` (smaller = smoother); ``drift``: ``|log(|u_T|/|u_k|)| / (T - k)`` for comparison;
- ``diverged``: the final evaluation loss is not finite or above the initial one, or a
  minibatch loss was not finite. A cell is diverged if any of its seeds diverged; diverged
  cells are left out of every statistic.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._errors import InputError
from ...adam import READING_SUMS, READINGS
from ._protocol import (
    CONVENTIONS,
    DIRECTIONS,
    MATCHES,
    REGIONS,
    SHARE_PARTS,
    TASKS,
    THRESHOLDS,
)


def _fields() -> tuple[str, ...]:
    out = []
    for r in READINGS:
        for c in CONVENTIONS:
            out += [f"share_{p}_{c}_{r}" for p in SHARE_PARTS] + [f"dominance_{c}_{r}"]
    return (*out, "magnitude", "roughness", "drift", "final_loss", "initial_loss", "diverged")


FIELDS: tuple[str, ...] = _fields()


def _steps_mean(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def _reading_measures(ref: np.ndarray, reading: str) -> dict[str, float]:
    col = {k: ref[:, i] for i, k in enumerate(READING_SUMS)}
    sq = {"sign": col[f"sign_{reading}"], "lag": col["lag"], "residual": col[f"residual_{reading}"]}
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        tot2 = sum(sq.values())
        tot1 = sum(np.sqrt(v) for v in sq.values())
        for p in SHARE_PARTS:
            out[f"share_{p}_squared_{reading}"] = _steps_mean(sq[p] / tot2)
            out[f"share_{p}_norm_{reading}"] = _steps_mean(np.sqrt(sq[p]) / tot1)
        cos = col[f"dot_update_sign_{reading}"] / np.sqrt(col["update"] * sq["sign"])
    out[f"dominance_norm_{reading}"] = _steps_mean(cos)
    out[f"dominance_squared_{reading}"] = _steps_mean(cos * cos)
    return out


def roughness(update_norms, skip: int = 0) -> float:
    r"""Detrended roughness ``mean_t |log|u_{t+1}| - 2 log|u_t| + log|u_{t-1}||`` of an update-norm
    trajectory after its first ``skip`` steps (second differences: a linear trend in ``log|u|``
    contributes nothing). Smaller is smoother; fewer than three positive norms give nan."""
    u = np.asarray(update_norms, dtype=float)[skip:]
    u = u[np.isfinite(u) & (u > 0)]
    if u.size < 3:
        return math.nan
    return float(np.mean(np.abs(np.diff(np.log(u), n=2))))


def run_measures(r: dict, skip: float) -> dict[str, float]:
    """The per-run measures of the module docstring from one run's result ``r`` (its
    split ``sums`` ``(T, len(READING_SUMS))``, ``final_loss``, ``initial_loss`` and
    ``nonfinite_step``)."""
    ref = np.asarray(r["sums"], dtype=float)
    if ref.ndim != 2 or ref.shape[1] != len(READING_SUMS):
        raise InputError(
            f"sums of shape {ref.shape} is not allowed; need (steps, {len(READING_SUMS)})"
        )
    k = min(int(skip * ref.shape[0]), max(ref.shape[0] - 3, 0))
    tail = ref[k:]
    out: dict[str, float] = {}
    for reading in READINGS:
        out.update(_reading_measures(tail, reading))
    u = np.sqrt(tail[:, READING_SUMS.index("update")])
    with np.errstate(divide="ignore", invalid="ignore"):
        out["magnitude"] = _steps_mean(u**2 / tail[:, READING_SUMS.index("count")])
        fin = u[np.isfinite(u) & (u > 0)]
        out["drift"] = (
            float(abs(np.log(fin[-1] / fin[0])) / (fin.size - 1)) if fin.size > 1 else math.nan
        )
    out["roughness"] = roughness(u)
    final, initial = float(r["final_loss"]), float(r["initial_loss"])
    out["final_loss"], out["initial_loss"] = final, initial
    bad = int(r.get("nonfinite_step", -1)) >= 0
    out["diverged"] = float(bad or not math.isfinite(final) or final > initial)
    return out


def cell_table(results: list[dict], tasks: list[dict], skip: float) -> dict:
    """Per task, each field of `FIELDS` as an array ``(n1, n2, seeds)`` (nan where a run
    is missing) and the cell flag ``diverged (n1, n2)``; plus ``beta1s``, ``beta2s``.

    ``tasks[i] = {task, beta1, beta2, seed, ...}`` is the task of ``results[i]``.
    """
    if len(tasks) != len(results):
        raise InputError(
            f"tasks has {len(tasks)} entries and results {len(results)}; "
            "allowed: one task per result"
        )
    b1s = sorted({float(t["beta1"]) for t in tasks})
    b2s = sorted({float(t["beta2"]) for t in tasks})
    seeds = sorted({int(t["seed"]) for t in tasks})
    names = [n for n in TASKS if any(t["task"] == n for t in tasks)]
    table: dict = {"beta1s": b1s, "beta2s": b2s, "seeds": seeds, "tasks": {}}
    for name in names:
        per = {f: np.full((len(b1s), len(b2s), len(seeds)), np.nan) for f in FIELDS}
        for t, r in zip(tasks, results):
            if t["task"] != name:
                continue
            i, j = b1s.index(float(t["beta1"])), b2s.index(float(t["beta2"]))
            s = seeds.index(int(t["seed"]))
            for f, v in run_measures(r, skip).items():
                per[f][i, j, s] = v
        ran = np.isfinite(per["diverged"]).any(axis=-1)
        per["cell_diverged"] = ran & (np.nan_to_num(per["diverged"], nan=0.0) > 0).any(axis=-1)
        per["cell_ran"] = ran
        table["tasks"][name] = per
    return table


def cell_masks(b1s, b2s, valid: np.ndarray) -> dict[str, np.ndarray]:
    """Boolean masks ``(n1, n2)`` of the valid (ran, not diverged) tied cells and of each
    off-diagonal region of `REGIONS`."""
    B1 = np.asarray(b1s, dtype=float)[:, None]
    B2 = np.asarray(b2s, dtype=float)[None, :]
    return {
        "tied": valid & (B1 == B2),
        "beta2>beta1": valid & (B2 > B1),
        "beta2<beta1": valid & (B2 < B1),
    }


def _label(b1: float, b2: float) -> str:
    return f"({b1:g}, {b2:g})"


def _cells(b1s, b2s, mask: np.ndarray) -> list[str]:
    return [_label(b1s[i], b2s[j]) for i, j in zip(*np.nonzero(mask))]


def _per_seed(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the masked cells, per seed (``x`` is ``(n1, n2, seeds)``)."""
    if not mask.any():
        return np.full(x.shape[-1], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x[mask], axis=0)


def smooth_pairs(b1s, b2s, masks: dict, match: str, region: str) -> list[tuple]:
    """Pairs ``((i_tied, j_tied), (i, j))``: each valid off-diagonal cell of ``region`` with the
    valid tied cell of the same ``beta1`` (``match="beta1"``, same row) or the same ``beta2``
    (same column)."""
    pairs = []
    for i, j in zip(*np.nonzero(masks[region])):
        b = b1s[i] if match == "beta1" else b2s[j]
        if b not in b1s or b not in b2s:
            continue
        ti, tj = b1s.index(b), b2s.index(b)
        if masks["tied"][ti, tj]:
            pairs.append(((ti, tj), (int(i), int(j))))
    return pairs


def _stat(claim: str, reading: str, per_seed: dict, cells: list[str], **where) -> dict:
    conv = {}
    for c in CONVENTIONS:
        conv[c] = {
            "threshold": THRESHOLDS[claim][c],
            "direction": DIRECTIONS[claim],
            "per_seed": [float(v) for v in per_seed[c]],
        }
    return {"claim": claim, "reading": reading, **where, "conventions": conv, "cells": cells}


def _share_stats(per: dict, b1s, b2s, masks: dict) -> list[dict]:
    out = []
    for r in READINGS:
        dom = {c: _per_seed(per[f"dominance_{c}_{r}"], masks["tied"]) for c in CONVENTIONS}
        out.append(
            _stat("sign_dominated_tied", r, dom, _cells(b1s, b2s, masks["tied"]), region="tied")
        )
        for region in REGIONS:
            m = masks[region]
            lag = {c: _per_seed(per[f"share_lag_{c}_{r}"], m) for c in CONVENTIONS}
            res = {
                c: _per_seed(per[f"share_residual_{c}_{r}"] - per[f"share_lag_{c}_{r}"], m)
                for c in CONVENTIONS
            }
            cells = _cells(b1s, b2s, m)
            out.append(_stat("lag_substantial", r, lag, cells, region=region))
            out.append(_stat("residual_small", r, res, cells, region=region))
    return out


def _smooth_stats(per: dict, b1s, b2s, masks: dict) -> list[dict]:
    out = []
    rough = per["roughness"]
    for match in MATCHES:
        for region in REGIONS:
            pairs = smooth_pairs(b1s, b2s, masks, match, region)
            if pairs:
                with np.errstate(divide="ignore", invalid="ignore"):
                    logs = np.stack([np.log(rough[t] / rough[o]) for t, o in pairs])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    per_seed = np.nanmean(logs, axis=0)
            else:
                per_seed = np.full(rough.shape[-1], np.nan)
            cells = [
                f"{_label(b1s[t[0]], b2s[t[1]])} vs {_label(b1s[o[0]], b2s[o[1]])}"
                for t, o in pairs
            ]
            out.append(
                _stat(
                    "tied_smoother",
                    "both",
                    {c: per_seed for c in CONVENTIONS},
                    cells,
                    region=region,
                    match=match,
                )
            )
    return out


def protocol_statistics(table: dict, name: str) -> list[dict]:
    """Every statistic the protocol judges for task ``name`` of `cell_table()`'s ``table``.

    Each is a dict: ``claim`` (`CLAIMS`), ``reading`` (``current``, ``memory``, or
    ``both`` where the measure does not depend on it), ``region`` (``tied`` or one of
    `REGIONS`), ``match`` (smoothness only), ``conventions`` (per convention: the
    per-seed cell means, the threshold and the direction; the verdict rule is applied to them by
    `gaugedyn.experiments.adam_split.beta_grid.findings_of()`) and the ``cells`` judged on
    (diverged cells never among them).
    """
    b1s, b2s = table["beta1s"], table["beta2s"]
    per = table["tasks"][name]
    valid = per["cell_ran"] & ~per["cell_diverged"]
    masks = cell_masks(b1s, b2s, valid)
    return _share_stats(per, b1s, b2s, masks) + _smooth_stats(per, b1s, b2s, masks)


def diverged_cells(table: dict, name: str) -> list[str]:
    """The cells of task ``name`` flagged by the divergence rule (any seed diverged)."""
    return _cells(table["beta1s"], table["beta2s"], table["tasks"][name]["cell_diverged"])


def cell_means(table: dict, name: str) -> dict[str, np.ndarray]:
    """Seed means ``(n1, n2)`` of every field of task ``name`` (nan for cells that did not run)."""
    per = table["tasks"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan cells stay nan
        out = {f: np.nanmean(per[f], axis=-1) for f in FIELDS}
    out["cell_diverged"] = per["cell_diverged"].astype(np.int8)
    return out

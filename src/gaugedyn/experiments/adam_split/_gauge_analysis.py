"""The analysis of ``gauge_under_adam``: per-cell arrays, the checks of the probe's split and the
findings (owner rate and gauge gap per ``D``) over every comparison set."""

from __future__ import annotations

import numpy as np

from ...harness import Claim, judged
from ...stats import bootstrap_ci, generator, judge, mean_ci, measure_of, proportion_ci
from ._protocol import APPLIED_TOL, FINDING_MEASURES, SUM_TOL, cell_tasks


def split_cells(tasks: list[dict], results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The per-``D`` tasks and results as one task and one result per cell (the form the
    analysis reads), in the order ``D``, then ``(beta1, beta2)``."""
    cells, per_cell = [], []
    for t, r in zip(tasks, results):
        for j, cell in enumerate(cell_tasks(t)):
            cells.append(cell)
            per_cell.append({k: (v if k == "time" else np.asarray(v)[j]) for k, v in r.items()})
    return cells, per_cell


def gap_interval(num, den, rng: np.random.Generator) -> tuple[float, float, float, int]:
    """Geometric mean of ``num / den`` over the pairs where both are finite and positive, with the
    percentile-bootstrap interval of `gaugedyn.stats.bootstrap_ci()` on the log ratios:
    ``(estimate, low, high, pairs used)``."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    ok = np.isfinite(num) & np.isfinite(den) & (num > 0) & (den > 0)
    logs = np.log(num[ok] / den[ok])
    iv = bootstrap_ci(logs, rng=rng)
    return float(np.exp(iv.estimate)), float(np.exp(iv.low)), float(np.exp(iv.high)), int(ok.sum())


def seed_mean_ci(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) with the Student-t 95% interval of `gaugedyn.stats.mean_ci()`
    at every other index."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(x.shape[0], -1)
    ivs = [mean_ci(flat[:, k]) for k in range(flat.shape[1])]
    mean, low, high = (np.array([iv[i] for iv in ivs]).reshape(x.shape[1:]) for i in range(3))
    return mean, low, high


def analyse_cells(
    config: dict,
    tasks: list[dict],
    results: list[dict],
    seed: np.random.SeedSequence,
    *,
    label: str,
):
    """Arrays, claims (the checks, then the findings) and diagnostics of the cells of a run
    (`split_cells()`); ``label``: the configuration's provisional label (``""`` for the
    declared full one)."""
    dims = sorted({int(t["dim"]) for t in tasks})
    pairs = []
    for t in tasks:
        p = (float(t["beta1"]), float(t["beta2"]))
        if p not in pairs:
            pairs.append(p)
    nD, nP = len(dims), len(pairs)
    S = int(tasks[0]["seeds"])
    K = int(tasks[0]["copies"])
    T = len(results[0]["time"])
    bins = int(tasks[0]["bins"])
    a = {
        "dims": np.array(dims),
        "beta1": np.array([p[0] for p in pairs]),
        "beta2": np.array([p[1] for p in pairs]),
        "tied": np.array([p[0] == p[1] for p in pairs]),
        "time": np.asarray(results[0]["time"], dtype=float),
        "threshold": np.array(float(tasks[0]["threshold"])),
    }
    shapes = {
        "owner_rate": (nD, nP),
        "owner_lo": (nD, nP),
        "owner_hi": (nD, nP),
        "owner_count": (nD, nP),
        "gap": (nD, nP),
        "gap_lo": (nD, nP),
        "gap_hi": (nD, nP),
        "gap_pairs": (nD, nP),
        "t_spec_w": (nD, nP, S),
        "t_spec_a": (nD, nP, S),
        "t_spec_dup": (nD, nP, S),
        "rho_dup": (nD, nP, S, K),
        "pruned_rate": (nD, nP),
        "share_dup": (nD, nP, K, 3),
        "share_dup_lo": (nD, nP, K, 3),
        "share_dup_hi": (nD, nP, K, 3),
        "share_single": (nD, nP, 2, 3),
        "share_single_lo": (nD, nP, 2, 3),
        "share_single_hi": (nD, nP, 2, 3),
        "share_bins_dup": (nD, nP, bins, K, 3),
        "share_bins_single": (nD, nP, bins, 2, 3),
        "alignment": (nD, nP, 2, T),
        "delta_drift": (nD, nP, 2, S),
        "loss": (nD, nP, 3, S),
    }
    for key, shape in shapes.items():
        a[key] = np.full(shape, np.nan)
    for t, r in zip(tasks, results):
        i, j = dims.index(int(t["dim"])), pairs.index((float(t["beta1"]), float(t["beta2"])))
        _store_cell(a, i, j, t, r, seed)
    claims = check_claims(tasks, results) + finding_claims(a, S, K, label, seed)
    diagnostics = {
        "seeds_per_cell": S,
        "cells": nD * nP,
        "provisional": label or None,
        "probe": "every Adam step is observed through train(on_step=...); "
        "see gaugedyn.adam.AdamProbe",
        "cell_seeds": "a task trains pairs_per_task (beta1, beta2) cells of one D; cell c draws "
        "from task_seed(root, 'gauge_under_adam', c) (cell_seed: the "
        "seed the cell had as its own task)",
    }
    return a, claims, diagnostics


def _store_cell(a: dict, i: int, j: int, t: dict, r: dict, seed: np.random.SeedSequence) -> None:
    """Fill row ``(i, j)`` (``D``, configuration) of the arrays ``a`` from one cell's result."""
    owner = np.asarray(r["owner"])
    k = int(np.sum(owner == 0))
    a["owner_count"][i, j] = k
    a["owner_rate"][i, j] = k / owner.size
    a["owner_lo"][i, j], a["owner_hi"][i, j] = proportion_ci(k, owner.size)[1:]
    rng = generator(seed, "gauge_gap", i, j)
    a["gap"][i, j], a["gap_lo"][i, j], a["gap_hi"][i, j], a["gap_pairs"][i, j] = gap_interval(
        r["t_spec_w"], r["t_spec_a"], rng
    )
    a["t_spec_w"][i, j], a["t_spec_a"][i, j] = r["t_spec_w"], r["t_spec_a"]
    a["t_spec_dup"][i, j] = r["t_spec_dup"]
    rho = np.abs(np.asarray(r["rho_dup"], dtype=float))
    a["rho_dup"][i, j] = rho
    a["pruned_rate"][i, j] = float(np.mean(rho[:, 1:] < float(t["prune_tol"])))
    m, lo, hi = seed_mean_ci(r["share_dup"])
    a["share_dup"][i, j], a["share_dup_lo"][i, j], a["share_dup_hi"][i, j] = m, lo, hi
    for g, tag in enumerate(("w", "a")):
        m, lo, hi = seed_mean_ci(r[f"share_{tag}"])
        a["share_single"][i, j, g] = m
        a["share_single_lo"][i, j, g], a["share_single_hi"][i, j, g] = lo, hi
        a["share_bins_single"][i, j, :, g] = r[f"share_bins_{tag}"]
        a["alignment"][i, j, g] = r[f"alignment_{tag}"]
        a["delta_drift"][i, j, g] = r[f"delta_drift_{tag}"]
    a["share_bins_dup"][i, j] = r["share_bins_dup"]
    a["loss"][i, j] = [r["loss_w"], r["loss_a"], r["loss_dup"]]


def check_claims(tasks: list[dict], results: list[dict]) -> list[Claim]:
    """The package-correctness checks (they decide the exit status)."""
    calls_ok = all(
        bool(r["probe_counter_ok"]) and np.all(np.asarray(r["probe_calls"]) == t["steps"])
        for t, r in zip(tasks, results)
    )
    sum_err = max(float(r["sum_error"]) for r in results)
    applied = max(float(r["applied_error"]) for r in results)
    tied = [r for t, r in zip(tasks, results) if float(t["beta1"]) == float(t["beta2"])]
    lag_tied = max(
        (
            max(
                float(r["lag_norm_max"]),
                float(np.max(np.asarray(r["share_dup"])[..., 1])),
                float(np.max(np.asarray(r["share_w"])[..., 1])),
                float(np.max(np.asarray(r["share_a"])[..., 1])),
            )
            for r in tied
        ),
        default=float("nan"),
    )
    return [
        Claim(
            id="gauge_under_adam.probe_saw_every_step",
            statement="the probe observed every Adam step of every run, with the optimizer's "
            "step counter advancing by one each time",
            measured=bool(calls_ok),
            expected=True,
            tolerance=0,
            passed=bool(calls_ok),
        ),
        Claim(
            id="gauge_under_adam.parts_sum_to_update",
            statement=f"sign + lag + transition + ratio + eps equals the update to {SUM_TOL:g} "
            "in float64 at every coordinate and step (largest error relative to "
            "max(1, sum of the parts' magnitudes))",
            measured=sum_err,
            expected=0.0,
            tolerance=SUM_TOL,
            passed=sum_err <= SUM_TOL,
        ),
        Claim(
            id="gauge_under_adam.update_is_applied_step",
            statement="the split update is the trainer's step: |theta_t - theta_{t-1} + lr u_t| "
            "/ (|theta_{t-1}| + lr |u_t|) (largest over coordinates and steps)",
            measured=applied,
            expected=0.0,
            tolerance=APPLIED_TOL,
            passed=applied <= APPLIED_TOL,
        ),
        Claim(
            id="gauge_under_adam.lag_zero_when_tied",
            statement=f"with beta1 == beta2 ({len(tied)} configurations) the lag part is exactly "
            "zero at every step for every neuron (largest lag norm or share)",
            measured=lag_tied,
            expected=0.0,
            tolerance=0.0,
            passed=(lag_tied == 0.0) if tied else True,
        ),
    ]


def _cell(b1: float, b2: float) -> str:
    return f"({b1:g}, {b2:g})"


def _pooled(values: np.ndarray, mask: np.ndarray) -> float:
    v = np.asarray(values, dtype=float)[..., mask]
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def _groups(tied: np.ndarray) -> dict[str, np.ndarray]:
    masks = {"all configurations": np.ones_like(tied, dtype=bool), "tied": tied, "untied": ~tied}
    return {g: m for g, m in masks.items() if m.any()}


def owner_outcomes(a: dict, i: int, mask: np.ndarray, S: int) -> np.ndarray:
    """One 0/1 outcome per seed and configuration of ``mask`` at ``D = dims[i]`` (1: the a-heavy
    copy ends as the owner), from the counts per configuration."""
    counts = np.nan_to_num(a["owner_count"][i, mask]).astype(int)
    return np.concatenate([np.r_[np.ones(k), np.zeros(S - k)] for k in counts])


def gap_per_seed(a: dict, i: int, mask: np.ndarray) -> np.ndarray:
    """Per seed, the mean over the configurations of ``mask`` of ``log(t_w / t_a)`` where both
    specialized (``nan`` for a seed where none did): one value per seed index, so an interval
    counts seeds, not configurations x seeds (every configuration has its own root seed, so a
    seed index's configurations do not share data, and the per-index means are independent)."""
    num, den = a["t_spec_w"][i, mask], a["t_spec_a"][i, mask]  # (configurations, seeds)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where((num > 0) & (den > 0), np.log(num / den), np.nan)
    ok = np.isfinite(logs)
    with np.errstate(invalid="ignore"):
        return np.where(
            ok.any(axis=0),
            np.nansum(np.where(ok, logs, 0.0), axis=0) / np.maximum(ok.sum(axis=0), 1),
            np.nan,
        )


def _group_findings(a: dict, i: int, S: int, K: int, label: str, seed) -> list[Claim]:
    """Per ``D``, judged over each comparison set of `GROUPS` (the finding's readings; its
    estimate and interval are over all configurations):

    - ``finding:owner_rate:D<D>``: the owner-selection rate, rule ``proportion`` (randomised
      exact interval, its uniform draw from the run's analysis ``seed``) over
      the seed-configurations, claimed ``> 1/2`` (the favourable gauge chooses the owner in most
      seeds);
    - ``finding:gauge_gap:D<D>``: the gauge gap, rule ``mean_threshold`` on the per-seed mean
      log ratio ``log(t_w / t_a)``, claimed ``> 0`` (the favourable gauge still specializes
      first; the statement reports the geometric mean ``exp`` of the estimate).

    The papers give no value under Adam (gradient flow: rate 1, gap about ``D^2``), so the
    power is computed at the declared smallest effect (`._protocol.FINDING_MEASURES`)."""
    D = int(a["dims"][i])
    cells = [_cell(x, y) for x, y in zip(a["beta1"], a["beta2"])]
    lead = f"{label}: " if label else ""
    groups = _groups(np.asarray(a["tied"], dtype=bool))
    rate_measure = measure_of(FINDING_MEASURES, f"finding:owner_rate:D{D}")
    gap_measure = measure_of(FINDING_MEASURES, f"finding:gauge_gap:D{D}")
    rates = {
        g: judge(
            rate_measure.rule("threshold"),
            owner_outcomes(a, i, m, S),
            threshold=0.5,
            direction=">",
            rng=generator(seed, "owner_rate", D, g),
        )
        for g, m in groups.items()
    }
    gaps = {
        g: judge(
            gap_measure.rule("threshold"),
            gap_per_seed(a, i, m),
            threshold=0.0,
            direction=">",
            rng=generator(seed, "gauge_gap", D, g),
        )
        for g, m in groups.items()
    }
    every = {g: [c for c, x in zip(cells, m) if x] for g, m in groups.items()}
    out = []
    for kind, readings, measure in (
        ("owner_rate", rates, rate_measure),
        ("gauge_gap", gaps, gap_measure),
    ):
        primary = readings["all configurations"]
        words = "; ".join(f"{g}: {j.verdict}" for g, j in readings.items())
        if kind == "owner_rate":
            k = int(np.sum(primary.values))
            statement = (
                f"{lead}duplicates at D = {D} (copy 0 a-heavy, {K - 1} w-heavy) under "
                f"Adam: the a-heavy copy ends as the owner in most seeds ({k}/"
                f"{primary.n} seed-configurations; rule proportion, judged over all "
                f"configurations, the tied and the untied ones: {words}; the paper "
                "gives no value under Adam)"
            )
            expected = "> 0.5 (gradient flow: 1)"
        else:
            g = [np.exp(x) for x in (primary.estimate, primary.low, primary.high)]
            statement = (
                f"{lead}single at D = {D} under Adam: the gauge gap t_w / t_a in "
                f"specialization time exceeds 1: per-seed mean log ratio > 0 over "
                f"{primary.n} seeds (geometric mean {g[0]:.3g} [{g[1]:.3g}, "
                f"{g[2]:.3g}]; rule mean_threshold, judged over all configurations, "
                f"the tied and the untied ones: {words}; the paper gives no value "
                "under Adam)"
            )
            expected = "log gap > 0 (gradient flow: about log D^2)"
        out.append(
            judged(
                f"finding:{kind}:D{D}",
                statement,
                primary,
                measure=measure,
                readings=readings,
                expected=expected,
                extra={
                    "provisional": label or None,
                    "cells": cells,
                    "reading_cells": every,
                },
            )
        )
    return out


def _lag_and_drift(a: dict, i: int, D, cells: list[str], note: str) -> list[Claim]:
    """The lag-share and gauge-drift measurements at ``D = dims[i]``."""
    tied = a["tied"]
    out: list[Claim] = []
    lag_txt = "; ".join(
        f"{c}: a-heavy copy {a['share_dup'][i, j, 0, 1]:.3f}, w-heavy copies "
        f"{np.mean(a['share_dup'][i, j, 1:, 1]):.3f}; single w-heavy "
        f"{a['share_single'][i, j, 0, 1]:.3f}, a-heavy {a['share_single'][i, j, 1, 1]:.3f}"
        for j, c in enumerate(cells)
    )
    out.append(
        Claim(
            id=f"measurement:lag_share:D{int(D)}",
            statement=(
                f"{note}. D = {int(D)}: mean lag share of each neuron's Adam update "
                f"(seed means) per (beta1, beta2): {lag_txt}"
            ),
            measured={
                "untied_max": float(
                    np.nanmax(np.where(tied[None, :, None], np.nan, a["share_dup"][i, :, :, 1]))
                )
                if (~tied).any()
                else None,
                "tied_max": float(np.nanmax(a["share_dup"][i, tied][..., 1]))
                if tied.any()
                else None,
            },
            expected="measured (0 when tied)",
            tolerance=None,
            passed=True,
            kind="measurement",
        )
    )
    drift = np.nanmedian(a["delta_drift"][i], axis=-1)
    out.append(
        Claim(
            id=f"measurement:delta_drift:D{int(D)}",
            statement=(
                f"{note}. D = {int(D)}: median over seeds of the final drift of the gauge "
                "delta = a^2 - |w|^2 (conserved by gradient flow), per (beta1, beta2), "
                "w-heavy / a-heavy: "
                + "; ".join(
                    f"{c}: {drift[j, 0]:.3g} / {drift[j, 1]:.3g}" for j, c in enumerate(cells)
                )
            ),
            measured={
                "w_heavy_max": float(np.nanmax(drift[:, 0])),
                "a_heavy_max": float(np.nanmax(drift[:, 1])),
            },
            expected="measured (gradient flow: 0)",
            tolerance=None,
            passed=True,
            kind="measurement",
        )
    )
    return out


def finding_claims(a: dict, S: int, K: int, label: str, seed) -> list[Claim]:
    """The findings per ``D`` (judged over every comparison set) and the measurements per
    ``D`` (see module doc)."""
    dims, b1, b2, tied = a["dims"], a["beta1"], a["beta2"], a["tied"]
    out = []
    note = f"{label}: measured under Adam" if label else "Measured under Adam"
    for i, D in enumerate(dims):
        cells = [_cell(x, y) for x, y in zip(b1, b2)]
        out += _group_findings(a, i, S, K, label, seed)
        gap_txt = "; ".join(
            f"{c}: {a['gap'][i, j]:.3g} [{a['gap_lo'][i, j]:.3g}, {a['gap_hi'][i, j]:.3g}] "
            f"(n = {int(a['gap_pairs'][i, j])})"
            for j, c in enumerate(cells)
        )
        out.append(
            Claim(
                id=f"measurement:gauge_gap:D{int(D)}",
                statement=(
                    f"{note}. single at D = {int(D)}: gauge gap t_w / t_a in specialization "
                    f"time (geometric mean over seeds, bootstrap 95% interval, n seeds where "
                    f"both specialized), per (beta1, beta2): {gap_txt}"
                ),
                measured={
                    "tied_geomean": float(np.exp(_pooled(np.log(a["gap"][i]), tied))),
                    "untied_geomean": float(np.exp(_pooled(np.log(a["gap"][i]), ~tied))),
                },
                expected="measured",
                tolerance=None,
                passed=True,
                kind="measurement",
            )
        )
        out += _lag_and_drift(a, i, D, cells, note)
    return out

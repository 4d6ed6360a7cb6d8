"""The analysis of ``adam_edge`` (``PROTOCOL.md`` section 2): the edge window's statistics per
run and the findings per cell."""

from __future__ import annotations

import numpy as np

from ... import stats
from ...harness import Claim, judged
from ._protocol import (
    CONTROL_MEMORIES,
    CURVATURE_BAND,
    FINDING_MEASURES,
    LANCZOS_TOL,
    REVERSAL_COS,
    REVERSAL_MIN,
    SEPARATION,
    STAY_BAND,
)


def period_two(y: np.ndarray) -> float:
    """``mean |y_t - (y_(t-1) + y_(t+1)) / 2|``: the size of the period-2 component of ``y``
    (a linear trend and any slow part cancel; an alternation ``+-e`` gives ``2e``)."""
    y = np.asarray(y, float)
    return float(np.nanmean(np.abs(y[1:-1] - 0.5 * (y[:-2] + y[2:])))) if y.size > 2 else np.nan


def window_stats(r: dict, task: dict) -> dict:
    """Per-run statistics of the edge window (empty dict without an edge)."""
    t0 = int(r["edge_start"])
    if t0 < 0:
        return {}
    thr = float(r["threshold"])
    lr = task["lr"]
    k = lr * np.asarray(r["kappa_g"])[t0:] / thr
    cos = np.asarray(r["cosine"])
    L, E = np.asarray(r["loss"])[t0:], np.asarray(r["ema_loss"])[t0:]
    out = {
        "ratio": float(np.nanmedian(k)),
        "reversal": float(np.nanmean(cos[t0:] < REVERSAL_COS)),
        "reversal_before": float(np.mean(cos[1:t0] < REVERSAL_COS)) if t0 > 1 else np.nan,
        "lower": float(np.nanmean(np.log(E / L))),
        "smooth": period_two(np.log(E)) / period_two(np.log(L)),
        "ratio_q": np.nanquantile(k, [0.1, 0.5, 0.9]),
        "secant_q": np.nanquantile(lr * np.asarray(r["secant"])[t0:] / thr, [0.1, 0.5, 0.9]),
    }
    te = int(r.get("freeze_step", -1))
    memory = 1.0 / (1.0 - task["beta2"])
    lz = np.asarray(r["lanczos_step"])
    if "frozen_sharpness" in r and te >= 0 and lz[-1] - te >= CONTROL_MEMORIES * memory:
        after = lz >= te + memory
        f = lr * np.asarray(r["frozen_sharpness"])[after] / thr
        a = lr * np.asarray(r["sharpness"])[after] / thr
        with np.errstate(divide="ignore", invalid="ignore"):
            out["frozen"] = float(np.log10(np.nanmedian(f))) if np.isfinite(f).any() else np.inf
            out["adaptive"] = float(np.log10(np.nanmedian(a))) if a.size else np.nan
    return out


def _j(seed, fid, form, *values, threshold, direction=None):
    """The finding ``fid`` judged by the rule its declared measure chooses for ``form`` (a
    randomised rule's draw from the run's analysis ``seed`` and the finding's id)."""
    rule = stats.measure_of(FINDING_MEASURES, fid).rule(form)
    rng = stats.generator(seed, fid)
    return stats.judge(rule, *values, threshold=threshold, direction=direction, rng=rng)


def _finding(fid: str, statement: str, j, **extra) -> Claim:
    return judged(
        fid, statement, j, measure=stats.measure_of(FINDING_MEASURES, fid), extra=extra or None
    )


def _cell_findings(loss, lr, b1, ws, seed) -> list[Claim]:
    cell = f"{loss}:lr{lr:g}:b{b1:g}"
    col = {
        k: np.array([w.get(k, np.nan) for w in ws], float)
        for k in ("ratio", "reversal", "reversal_before", "lower", "smooth", "frozen", "adaptive")
    }
    n = len(ws)
    out = []
    fid = f"adam_edge.active_curvature_at_threshold:{cell}"
    jr = _j(seed, fid, "inside", col["ratio"], threshold=CURVATURE_BAND)
    out.append(
        _finding(
            fid,
            f"{cell}: per-seed median of lr kappa_g / thr in the edge window, centre "
            f"{jr.estimate:.3g} (95% [{jr.low:.3g}, {jr.high:.3g}], {n} edge runs, "
            f"{jr.rule}); claim inside {CURVATURE_BAND}",
            jr,
        )
    )
    out += _control_findings(cell, col, seed)
    fid = f"adam_edge.gradient_reversal:{cell}"
    rv = _j(seed, fid, "threshold", col["reversal"], threshold=REVERSAL_MIN, direction=">")
    before = float(np.nanmean(col["reversal_before"]))
    out.append(
        _finding(
            fid,
            f"{cell}: share of window steps with cos(g_t, g_t-1) < {REVERSAL_COS:g}: "
            f"{rv.estimate:.3g} (95% [{rv.low:.3g}, {rv.high:.3g}]; before the edge "
            f"{before:.3g}); claim > {REVERSAL_MIN:g}",
            rv,
            before_edge=before,
        )
    )
    fid = f"adam_edge.averaging_lowers:{cell}"
    lo = _j(seed, fid, "threshold", col["lower"], threshold=0.0, direction="<")
    out.append(
        _finding(
            fid,
            f"{cell}: mean log(L_ema / L) in the window {lo.estimate:.3g} (95% "
            f"[{lo.low:.3g}, {lo.high:.3g}]); claim < 0",
            lo,
        )
    )
    fid = f"adam_edge.averaging_smooths:{cell}"
    sm = _j(seed, fid, "threshold", col["smooth"], threshold=1.0, direction="<")
    out.append(
        _finding(
            fid,
            f"{cell}: period-2 component of log L, averaged over raw iterate ({sm.rule}), "
            f"{sm.estimate:.3g} (95% [{sm.low:.3g}, {sm.high:.3g}]); claim < 1",
            sm,
        )
    )
    return out


def _control_findings(cell: str, col: dict, seed) -> list[Claim]:
    """The frozen-v control's three findings of one cell (``PROTOCOL.md`` section 2)."""
    frozen = col["frozen"]
    short = int(np.sum(~np.isfinite(col["adaptive"])))
    ids = {
        k: f"adam_edge.{k}:{cell}" for k in ("frozen_v_rises", "adaptive_stays_on_edge", "feedback")
    }
    capped = np.minimum(frozen, 6.0)
    fz = _j(seed, ids["frozen_v_rises"], "threshold", capped, threshold=0.0, direction=">")
    ad = _j(seed, ids["adaptive_stays_on_edge"], "inside", col["adaptive"], threshold=STAY_BAND)
    fb = _j(seed, ids["feedback"], "paired", capped, col["adaptive"], threshold=0.0, direction=">")
    fr = 10 ** np.array([fz.estimate, fz.low, fz.high])
    ar = 10 ** np.array([ad.estimate, ad.low, ad.high])
    return [
        _finding(
            ids["frozen_v_rises"],
            f"{cell}: with v frozen at the edge, lr S / thr after it (geometric mean over "
            f"seeds of the per-seed median) {fr[0]:.3g} (95% [{fr[1]:.3g}, {fr[2]:.3g}], "
            f"{fz.n} seeds; {short} left out: control shorter than {CONTROL_MEMORIES:g} "
            "memory times; a diverged copy counts as 1e6); claim > 1",
            fz,
        ),
        _finding(
            ids["adaptive_stays_on_edge"],
            f"{cell}: the adaptive run's lr S / thr over the same steps {ar[0]:.3g} (95% "
            f"[{ar[1]:.3g}, {ar[2]:.3g}]); claim within a factor 1.25 of 1",
            ad,
        ),
        _finding(
            ids["feedback"],
            f"{cell}: log10 of lr S / thr, frozen copy minus adaptive run, {fb.estimate:.3g} "
            f"(95% [{fb.low:.3g}, {fb.high:.3g}]); claim > 0 (the feedback through v holds "
            "the sharpness down)",
            fb,
        ),
    ]


def quadratic_separation(r: dict) -> float:
    """Median over the second half of ``log10(S / kappa_g)`` of one diagonal-quadratic run."""
    S, K = np.asarray(r["sharpness"]), np.asarray(r["kappa_g"])
    h = slice(S.size // 2, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nanmedian(np.log10(S[h] / K[h])))


def _lanczos_claim(r: dict) -> Claim:
    """The check ``lanczos_matches_dense`` from the ``lanczos_check`` task's result."""
    rel = abs(float(r["lanczos"]) / float(r["dense"]) - 1)
    return Claim(
        id="adam_edge.lanczos_matches_dense",
        statement=f"on a small digits MLP ({int(r['n_params'])} parameters, after 50 "
        "Adam steps) the Lanczos estimate of lambda_max(P^-1/2 H P^-1/2) "
        f"({float(r['lanczos']):.10g}) equals the dense eigensolver's "
        f"({float(r['dense']):.10g}): relative difference",
        measured=rel,
        expected=0.0,
        tolerance=LANCZOS_TOL,
        passed=rel <= LANCZOS_TOL,
    )


def _run_record(t: dict, r: dict, arrays: dict, diag: dict) -> dict:
    """Store one edge run's arrays and diagnostics; returns its window statistics."""
    key = f"{t['loss']}__lr{t['lr']:g}__b{t['beta1']:g}__s{t['seed_index']}"
    for f in (
        "loss",
        "ema_loss",
        "kappa_g",
        "lanczos_step",
        "sharpness",
        "frozen_sharpness",
        "frozen_loss",
    ):
        arrays[f"{key}__{f}"] = np.asarray(r[f])
    arrays[f"{key}__threshold"] = np.asarray(r["threshold"])
    w = window_stats(r, t)
    diag["runs"][key] = (
        {
            "edge_start": int(r["edge_start"]),
            "lr_kappa_over_thr_p10_50_90": w["ratio_q"].tolist(),
            "lr_secant_over_thr_p10_50_90": w["secant_q"].tolist(),
            "log10_frozen": w.get("frozen"),
            "log10_adaptive": w.get("adaptive"),
        }
        if w
        else {"edge_start": -1}
    )
    return w


def analyse(tasks, results, seed):
    """``(arrays, claims, diagnostics)`` of an ``adam_edge`` run."""
    arrays, claims, diag = {}, [], {"runs": {}}
    cells: dict = {}
    quad: dict = {}
    for t, r in zip(tasks, results):
        if t["kind"] == "lanczos_check":
            claims.append(_lanczos_claim(r))
            continue
        if t["kind"] == "quadratic":
            quad.setdefault(t["beta1"], []).append(quadratic_separation(r))
            if t["seed_index"] == 0:
                key = f"quadratic__b{t['beta1']:g}"
                thr = float(r["threshold"])
                arrays[f"{key}__S"] = t["lr"] * np.asarray(r["sharpness"]) / thr
                arrays[f"{key}__kappa"] = t["lr"] * np.asarray(r["kappa_g"]) / thr
            continue
        w = _run_record(t, r, arrays, diag)
        cells.setdefault((t["loss"], t["lr"], t["beta1"]), []).append((t, w))
    arrays["run_keys"] = np.array(list(diag["runs"]))
    arrays["quadratic_beta1s"] = np.array(sorted(quad))
    for b1, vals in sorted(quad.items()):
        fid = f"adam_edge.quadratic_separates:b{b1:g}"
        j = _j(seed, fid, "threshold", vals, threshold=SEPARATION, direction=">")
        claims.append(
            _finding(
                fid,
                f"diagonal quadratic, beta1 = {b1:g}: median over the second half of log10(S / "
                f"kappa_g) {j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} seeds): the "
                f"preconditioned sharpness is {10**j.estimate:.3g} times the active curvature; "
                f"claim > log10 2",
                j,
            )
        )
    for (loss, lr, b1), runs in cells.items():
        ws = [w for _, w in runs if w]
        none = [t["seed_index"] for t, w in runs if not w]
        if none:
            claims.append(
                Claim(
                    id=f"adam_edge.no_edge:{loss}:lr{lr:g}:b{b1:g}",
                    statement=f"{loss}, lr {lr:g}, beta1 {b1:g}: no edge formed in "
                    f"seeds {none} (left out of the findings)",
                    measured=len(none),
                    expected=None,
                    tolerance=None,
                    passed=True,
                    kind="measurement",
                )
            )
        if ws:
            claims += _cell_findings(loss, lr, b1, ws, seed)
    return arrays, claims, diag

"""The analysis of ``adam_edge`` (``PROTOCOL.md`` section 2): the edge window's statistics per
run and the findings per cell."""

from __future__ import annotations

import math

import numpy as np

from ... import stats
from ...harness import Claim, judged
from ._freeze import censored_delay, first_at_edge
from ._protocol import (
    CURVATURE_BAND,
    EDGE_FRACTION,
    FINDING_MEASURES,
    LANCZOS_TOL,
    REVERSAL_COS,
    REVERSAL_MIN,
    SEPARATION,
    STARTUP,
    STAY_BAND,
    exponent_thresholds,
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
    ex = np.asarray(r.get("exponent", []), float)
    es = np.asarray(r.get("exponent_step", []), int)
    mine = ex[(es >= t0) & np.isfinite(ex)] if ex.size else ex
    if mine.size:
        out["exponent"] = float(np.median(mine))
        wall = np.asarray(r["exponent_wall"], float)[es >= t0]
        out["wall"] = float(np.nanmedian(wall)) if np.isfinite(wall).any() else np.inf
    memory = 1.0 / (1.0 - task["beta2"])
    lz = np.asarray(r["lanczos_step"])
    after = lz >= t0 + memory
    if after.any():
        a = lr * np.asarray(r["sharpness"])[after] / thr
        out["adaptive"] = float(np.log10(np.nanmedian(a)))
    return out


def freeze_readout(r: dict, task: dict) -> dict:
    """One run's frozen-before-the-edge readout: ``time_to_edge`` (the adaptive run's first
    Lanczos step at or after :data:`._protocol.STARTUP` on the edge, ``-1`` if none) and per
    freeze fraction the censored ``delay`` (:func:`._freeze.censored_delay`, from the freeze
    step on, the last Lanczos step the bound; ``nan`` when the copy was frozen at or above the
    edge, or never) and whether the frozen copy ever reached the edge (``reached``)."""
    lz = np.asarray(r["lanczos_step"])
    thr, lr = float(r["threshold"]), float(task["lr"])
    ratio = lr * np.asarray(r["sharpness"], float) / thr
    frozen = lr * np.atleast_2d(np.asarray(r["frozen_sharpness"], float)) / thr
    end = int(lz[-1]) if lz.size else -1
    out: dict = {"time_to_edge": first_at_edge(lz, ratio, STARTUP), "delay": [], "reached": []}
    for k, tf in enumerate(np.atleast_1d(r["freeze_step"])):
        ok = tf >= 0 and float(np.atleast_1d(r["freeze_ratio"])[k]) < EDGE_FRACTION
        ta = first_at_edge(lz, ratio, int(tf)) if ok else -1
        tz = first_at_edge(lz, frozen[k], int(tf)) if ok else -1
        out["delay"].append(censored_delay(ta, tz, end) if ok else np.nan)
        out["reached"].append(bool(tz >= 0))
    return out


def _j(seed, fid, form, *values, threshold, direction=None):
    """The finding ``fid`` judged by the rule its declared measure chooses for ``form`` (a
    randomised rule's draw from the run's analysis ``seed`` and the finding's id)."""
    rule = stats.measure_of(FINDING_MEASURES, fid).rule(form)
    rng = stats.generator(seed, fid)
    return stats.judge(rule, *values, threshold=threshold, direction=direction, rng=rng)


def _finding(fid: str, statement: str, j, readings=None, **extra) -> Claim:
    return judged(
        fid,
        statement,
        j,
        measure=stats.measure_of(FINDING_MEASURES, fid),
        readings=readings,
        extra=extra or None,
    )


def _cell_findings(cell: str, ws, seed) -> list[Claim]:
    col = {
        k: np.array([w.get(k, np.nan) for w in ws], float)
        for k in (
            "ratio",
            "reversal",
            "reversal_before",
            "lower",
            "smooth",
            "adaptive",
            "exponent",
            "wall",
        )
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
    fid = f"adam_edge.adaptive_stays_on_edge:{cell}"
    ad = _j(seed, fid, "inside", col["adaptive"], threshold=STAY_BAND)
    ar = 10 ** np.array([ad.estimate, ad.low, ad.high])
    out.append(
        _finding(
            fid,
            f"{cell}: per seed, the median of lr S / thr over the Lanczos steps at least one "
            f"memory time 1/(1 - beta2) after the edge; geometric mean {ar[0]:.3g} (95% "
            f"[{ar[1]:.3g}, {ar[2]:.3g}], {ad.n} seeds); claim within a factor 1.25 of 1",
            ad,
        )
    )
    if np.isfinite(col["exponent"]).any():
        out.append(_exponent_finding(cell, col["exponent"], col["wall"], seed))
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


def _exponent_finding(cell: str, values: np.ndarray, wall, seed) -> Claim:
    """``core_wall_exponent:cell``: per seed, the median effective exponent of the loss along
    the Adam update in the edge window; a cross-entropy loss: median > 2; a mean-squared one:
    median does not exceed 2 (``median_threshold``), each judged at both thresholds of
    `_protocol.exponent_thresholds` (the declared one the primary reading; the verdict
    "depends on the reading" where they disagree). Beside it, the median over seeds of the
    distance to the wall (in updates; ``inf`` where the local exponent never reached
    ``gaugedyn.adam.WALL_EXPONENT`` within one update)."""
    w = np.asarray(wall if wall is not None else [], float)
    w = w[~np.isnan(w)]
    wall_med = float(np.median(w)) if w.size else math.nan
    ce = cell.startswith("ce")
    direction = ">" if ce else "<"
    fid = f"adam_edge.core_wall_exponent:{cell}"
    js = {
        f"threshold {thr:g}": _j(seed, fid, "threshold", values, threshold=thr,
                                  direction=direction)
        for thr in exponent_thresholds(ce)
    }  # fmt: skip
    primary = next(iter(js))
    j = js[primary]
    claim = "exceeds 2 (superquadratic at the scale of an update)" if ce else "does not exceed 2"
    beside = "; ".join(f"{k}: {v.verdict}" for k, v in js.items())
    return _finding(
        fid,
        f"{cell}: effective exponent of the loss along the Adam update, fitted over 1/32 to 1 "
        f"update around the line minimum (per seed the median over the edge window): median "
        f"{j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} seeds; median distance "
        f"to the wall {wall_med:.3g} updates); claim: it {claim}, judged {direction} each "
        f"threshold ({beside}; the first declared)",
        j,
        readings=js,
        wall=wall_med,
    )


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


def _run_record(t: dict, r: dict, arrays: dict, diag: dict) -> tuple[dict, dict]:
    """Store one edge run's arrays and diagnostics; returns its window statistics and its
    frozen-before-the-edge readout."""
    key = f"{t['loss']}__lr{t['lr']:g}__b{t['beta1']:g}__b2{t['beta2']:g}__s{t['seed_index']}"
    for f in (
        "loss",
        "ema_loss",
        "kappa_g",
        "lanczos_step",
        "sharpness",
        "frozen_sharpness",
        "freeze_step",
        "exponent_step",
        "exponent",
        "exponent_wall",
    ):
        if f in r:
            arrays[f"{key}__{f}"] = np.asarray(r[f])
    arrays[f"{key}__threshold"] = np.asarray(r["threshold"])
    w = window_stats(r, t)
    fr = freeze_readout(r, t)
    diag["runs"][key] = {
        "edge_start": int(r["edge_start"]),
        "time_to_edge": fr["time_to_edge"],
        "freeze_step": [int(x) for x in np.atleast_1d(r["freeze_step"])],
        "freeze_ratio": [float(x) for x in np.atleast_1d(r["freeze_ratio"])],
        "delay": fr["delay"],
        "frozen_reached_edge": fr["reached"],
    } | (
        {
            "lr_kappa_over_thr_p10_50_90": w["ratio_q"].tolist(),
            "lr_secant_over_thr_p10_50_90": w["secant_q"].tolist(),
            "log10_adaptive": w.get("adaptive"),
            "exponent": w.get("exponent"),
        }
        if w
        else {}
    )
    return w, fr


def _freeze_findings(cell: str, fractions, frs: list[dict], memory: float, seed) -> list[Claim]:
    """``frozen_before_edge_later:cell:f``: per freeze fraction, the per-seed censored delay
    (steps) by which the copy with ``v`` frozen there reaches the edge after the adaptive run
    has median > 0 (``median_threshold``, sign test); one memory time beside it."""
    out = []
    for k, f in enumerate(fractions):
        d = np.array([x["delay"][k] for x in frs], float)
        never = int(sum(not x["reached"][k] for x in frs if np.isfinite(x["delay"][k])))
        left = int(np.sum(~np.isfinite(d)))
        fid = f"adam_edge.frozen_before_edge_later:{cell}:f{f:g}"
        j = _j(seed, fid, "threshold", d, threshold=0.0, direction=">")
        out.append(
            _finding(
                fid,
                f"{cell}: with v frozen at {f:g} of the threshold (before the edge), the copy "
                f"reaches the edge (lr S >= {EDGE_FRACTION:g} thr) a median {j.estimate:.4g} "
                f"steps after the adaptive run (95% [{j.low:.4g}, {j.high:.4g}], {j.n} seeds; "
                f"{never} copies never within the run, their delay the run's end, a lower "
                f"bound; {left} left out: frozen at or past the edge, or the adaptive run "
                f"never on it; one memory time is {memory:.4g} steps); claim: later (> 0): "
                "the feedback through v drives the sharpness to the edge",
                j,
                never=never,
                left_out=left,
                memory=memory,
            )
        )
    return out


def time_slope(b2s, times, fid: str = "adam_edge.time_to_edge_grows_with_memory:*"):
    """The judgement (claim < 0; the rule ``fid``'s declared measure chooses, a slope rule) of
    the least-squares slope of ``log t_e`` on ``log(1 - beta2)`` over the runs with an edge
    (``t_e > 0``)."""
    c = 1.0 - np.asarray(b2s, float)
    t = np.asarray(times, float)
    ok = t > 0
    rule = stats.measure_of(FINDING_MEASURES, fid).rule("threshold")
    return stats.judge(rule, np.log(c[ok]), np.log(t[ok]), threshold=0.0, direction="<")


def _time_to_edge_finding(cell: str, b2s: np.ndarray, times: np.ndarray) -> Claim:
    """``time_to_edge_grows_with_memory:cell``: the least-squares slope of ``log t_e`` on
    ``log(1 - beta2)`` over the runs with an edge is below 0 (``slope_threshold``)."""
    c = 1.0 - np.asarray(b2s, float)
    t = np.asarray(times, float)
    ok = t > 0
    fid = f"adam_edge.time_to_edge_grows_with_memory:{cell}"
    j = time_slope(b2s, times, fid)
    per = {
        f"{1 - x:g}": float(np.median(t[ok & (c == 1 - x)])) if np.any(ok & (c == 1 - x)) else None
        for x in sorted(set(np.asarray(b2s, float)))
    }
    return _finding(
        fid,
        f"{cell}: the adaptive run's time to the edge (first Lanczos step after {STARTUP} on "
        f"lr S >= {EDGE_FRACTION:g} thr) against 1 - beta2 in {sorted(per)}: slope of "
        f"log t_e on log(1 - beta2) {j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} "
        f"runs with an edge of {t.size}; median t_e per 1 - beta2: {per}); claim < 0: the "
        "edge is reached on v's memory time (-1: in proportion to it)",
        j,
        median_time=per,
    )


def analyse(tasks, results, seed, separation: float = SEPARATION):
    """``(arrays, claims, diagnostics)`` of an ``adam_edge`` run; ``separation``: the declared
    factor of ``quadratic_separates``."""
    arrays: dict = {}
    claims: list[Claim] = []
    diag: dict = {"runs": {}}
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
        w, fr = _run_record(t, r, arrays, diag)
        cells.setdefault((t["loss"], t["lr"], t["beta1"], t["beta2"]), []).append((t, w, fr))
    arrays["run_keys"] = np.array(list(diag["runs"]))
    arrays["quadratic_beta1s"] = np.array(sorted(quad))
    for b1, vals in sorted(quad.items()):
        claims.append(_separation_claim(b1, vals, separation, seed))
    series: dict = {}
    for (loss, lr, b1, b2), runs in cells.items():
        cell = f"{loss}:lr{lr:g}:b{b1:g}:b2{b2:g}"
        ws = [w for _, w, _ in runs if w]
        none = [t["seed_index"] for t, w, _ in runs if not w]
        if none:
            claims.append(
                Claim(
                    id=f"adam_edge.no_edge:{cell}",
                    statement=f"{loss}, lr {lr:g}, beta1 {b1:g}, beta2 {b2:g}: no edge formed "
                    f"in seeds {none} (left out of the edge-window findings)",
                    measured=len(none),
                    expected=None,
                    tolerance=None,
                    passed=True,
                    kind="measurement",
                )
            )
        if ws:
            claims += _cell_findings(cell, ws, seed)
        fractions = runs[0][0].get("freeze_fractions", [])
        claims += _freeze_findings(cell, fractions, [fr for *_, fr in runs], 1 / (1 - b2), seed)
        s = series.setdefault((loss, lr, b1), ([], []))
        s[0].extend([b2] * len(runs))
        s[1].extend(fr["time_to_edge"] for *_, fr in runs)
    for (loss, lr, b1), (b2s, times) in series.items():
        if len(set(b2s)) >= 3:
            claims.append(_time_to_edge_finding(f"{loss}:lr{lr:g}:b{b1:g}", b2s, times))
    return arrays, claims, diag


def _separation_claim(b1: float, vals, factor: float, seed) -> Claim:
    """``quadratic_separates:b``: the per-seed median ``log10(S / kappa_g)`` exceeds
    ``log10 factor`` (the rule of its declared measure)."""
    fid = f"adam_edge.quadratic_separates:b{b1:g}"
    j = _j(seed, fid, "threshold", vals, threshold=math.log10(factor), direction=">")
    return _finding(
        fid,
        f"diagonal quadratic, beta1 = {b1:g}: median over the second half of log10(S / "
        f"kappa_g) {j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} seeds): the "
        f"preconditioned sharpness is {10**j.estimate:.3g} times the active curvature; claim: "
        f"significantly more than {factor:g} times (log10 > {math.log10(factor):.3g}; the "
        "factor a declared set-up constant)",
        j,
        factor=factor,
    )

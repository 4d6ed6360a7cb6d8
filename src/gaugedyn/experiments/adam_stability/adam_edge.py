"""Full-batch Adam at the edge of stability: active curvature, gradient reversal, averaging.

Digits MLP 64-32-10 (ReLU, float64, the first ``n_samples`` images, full batch) trained with
``torch.optim.Adam`` under a mean-squared (one-hot targets) and a cross-entropy loss, at each
step size ``lr`` and each ``beta1`` (``beta2`` fixed); observables of
:mod:`gaugedyn.experiments.adam_stability._edge` at every step, Lanczos every ``lanczos_every`` steps.

Protocol, fixed before any run:

- threshold ``thr = 2 (1 + beta1) / (1 - beta1)``; edge window of a run: from the first Lanczos
  step ``t_e >= skip * steps`` at which ``lr * S >= 0.9 thr`` to the end; a run with no such
  step has no edge, is reported as such and is left out of the findings;
- statistics in the window are taken over ``BLOCKS`` equal blocks (block medians or block
  means), pooled over the edge runs of one ``(loss, lr)`` cell, with a bootstrap interval of
  their median or mean (``gaugedyn.stats.bootstrap_ci``, generator from the run seed);
- ``active_curvature_at_threshold``: median of ``lr kappa_g / thr``; claim ``|ratio - 1| < 0.15``;
- ``gradient_reversal``: fraction of window steps with consecutive-gradient cosine ``< -0.5``;
  claim ``> 0.5`` (the fraction before the edge is reported beside it);
- ``averaging_lowers``: mean of ``log(L_ema / L)`` over the window; claim ``< 0``;
- ``averaging_smooths``: ``mean|Delta log L_ema| / mean|Delta log L|`` per block; claim ``< 1``.
- check ``sharpness_bounds_active_curvature``: at every Lanczos step ``kappa_g <= S (1 + 1e-4)``
  (``kappa_g`` is a Rayleigh quotient of the matrix whose top eigenvalue ``S`` is).
"""

from __future__ import annotations

import numpy as np

from ... import stats
from ..._meta import integer_seed
from ...harness import Claim, Experiment, Param, finding, labelled

BLOCKS = 10
EDGE_FRACTION = 0.9
CURVATURE_BAND = 0.15
REVERSAL_COS, REVERSAL_MIN = -0.5, 0.5


class AdamEdge(Experiment):
    name = "adam_edge"
    description = ("full-batch Adam on digits (MSE and cross-entropy): active curvature against "
                   "2(1+beta1)/(1-beta1), gradient reversal and iterate averaging at the edge")
    params = {
        "losses": Param(list, ["mse", "ce"], item=str, choices=("mse", "ce"), min_len=1, max_len=2,
                        distinct=True, help="losses"),
        "lrs": Param(list, [1e-2, 3e-2], item=float, quick=[1e-2], lo=1e-5, hi=0.3, min_len=1,
                     max_len=6, distinct=True, why="beyond, Adam diverges at start-up",
                     help="step sizes"),
        "beta1s": Param(list, [0.0, 0.5, 0.9], item=float, lo=0.0, hi=0.99, min_len=1, max_len=6,
                        distinct=True, why="threshold 398 at 0.99", help="first-moment factors"),
        "beta2": Param(float, 0.999, lo=0.5, hi=0.9999, why="memory 1e4 steps",
                       help="second-moment factor"),
        "steps": Param(int, 1500, quick=200, lo=100, hi=20000, why="CPU time: ~3 HVPs a step",
                       help="Adam steps per run"),
        "n_samples": Param(int, 256, quick=128, lo=32, hi=1797, why="the digits set has 1797 images",
                           help="full-batch size"),
        "lanczos_every": Param(int, 250, quick=50, lo=10, hi=1000, why="Lanczos cost",
                               help="steps between preconditioned-sharpness estimates"),
        "skip": Param(float, 0.1, lo=0.0, hi=0.5, why="half the run at most",
                      help="start-up fraction before an edge may be declared"),
    }
    definitions = {
        "active_curvature": "kappa_g = d^T H d / d^T P d, d = P^-1 g, P = diag(sqrt(v^_t) + eps) "
                            "of the step (one HVP)",
        "sharpness": "S = lambda_max(P^-1/2 H P^-1/2), scipy eigsh (Lanczos) over HVPs, warm start",
        "secant": "dtheta^T (g_t - g_{t-1}) / dtheta^T P dtheta",
        "cosine": "g_t . g_{t-1} / (|g_t| |g_{t-1}|)",
        "ema_loss": "loss at bar theta <- 0.9 bar theta + 0.1 theta",
        "threshold": "2 (1 + beta1) / (1 - beta1) on lr times the curvature",
        "edge_window": f"from the first Lanczos step after skip*steps with lr S >= {EDGE_FRACTION} "
                       "threshold to the end; no such step: no edge",
    }

    def tasks(self, config):
        return [{"loss": loss, "lr": float(lr), "beta1": float(b1), "beta2": float(config["beta2"]),
                 "steps": int(config["steps"]), "n_samples": int(config["n_samples"]),
                 "lanczos_every": int(config["lanczos_every"]), "skip": float(config["skip"])}
                for loss in config["losses"] for lr in config["lrs"] for b1 in config["beta1s"]]

    def run_task(self, task, seed):
        import torch

        from ._edge import run_edge

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            s = integer_seed(seed)
            out = run_edge(task["loss"], task["lr"], task["beta1"], task["beta2"], task["steps"],
                           s, task["n_samples"], task["lanczos_every"])
        finally:
            torch.set_num_threads(before)
        out["edge_start"] = edge_start(out, task)
        return out

    def analyse(self, config, tasks, results, seed):
        return labelled(self.params, config, _analyse(tasks, results, seed))

    def plot(self, arrays, config, outdir):
        return [_plot(arrays, outdir)]


def edge_start(out: dict, task: dict) -> int:
    """First Lanczos step ``>= skip * steps`` with ``lr S >= 0.9 thr``; ``-1`` if none."""
    t = np.asarray(out["lanczos_step"])
    ok = (t >= task["skip"] * task["steps"]) & (
        task["lr"] * np.asarray(out["sharpness"]) >= EDGE_FRACTION * out["threshold"])
    return int(t[ok][0]) if ok.any() else -1


def _blocks(x: np.ndarray, fn) -> np.ndarray:
    parts = np.array_split(np.asarray(x, float), BLOCKS)
    return np.array([fn(p) if p.size else np.nan for p in parts])


def window_stats(r: dict, task: dict) -> dict:
    """Block statistics of one run's edge window (empty dict without an edge)."""
    t0 = int(r["edge_start"])
    if t0 < 0:
        return {}
    thr = float(r["threshold"])
    k = task["lr"] * np.asarray(r["kappa_g"])[t0:] / thr
    cos = np.asarray(r["cosine"])
    L, E = np.asarray(r["loss"])[t0:], np.asarray(r["ema_loss"])[t0:]
    rough = lambda y: np.nanmean(np.abs(np.diff(np.log(y))))  # noqa: E731
    pairs = np.array_split(np.arange(L.size), BLOCKS)
    return {"ratio": _blocks(k, np.nanmedian),
            "reversal": _blocks(cos[t0:] < REVERSAL_COS, np.mean),
            "reversal_before": float(np.mean(cos[1:t0] < REVERSAL_COS)) if t0 > 1 else np.nan,
            "lower": _blocks(np.log(E / L), np.nanmean),
            "smooth": np.array([rough(E[i]) / rough(L[i]) if i.size > 2 else np.nan
                                for i in pairs]),
            "ratio_q": np.nanquantile(k, [0.1, 0.5, 0.9]),
            "secant_q": np.nanquantile(task["lr"] * np.asarray(r["secant"])[t0:] / thr,
                                       [0.1, 0.5, 0.9]),
            "sharp_ratio": task["lr"] * np.asarray(r["sharpness"]) / thr}


def distance_interval(iv, center: float) -> stats.Interval:
    """The interval of ``|value - center|`` implied by an interval of ``value``."""
    lo, hi = float(iv[1]), float(iv[2])
    est = abs(float(iv[0]) - center)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return stats.Interval(est, np.nan, np.nan)
    d = (abs(lo - center), abs(hi - center))
    return stats.Interval(est, 0.0 if lo <= center <= hi else min(d), max(d))


def _cell_findings(loss, lr, ws, rng) -> list[Claim]:
    cell = f"{loss}:lr{lr:g}"
    pool = {k: np.concatenate([w[k] for w in ws]) for k in ("ratio", "reversal", "lower", "smooth")}
    q = np.nanquantile(np.concatenate([w["ratio_q"][None] for w in ws]), 0.5, axis=0)
    iv = stats.bootstrap_ci(pool["ratio"], np.median, rng=rng)
    before = np.nanmean([w["reversal_before"] for w in ws])
    rev = stats.bootstrap_ci(pool["reversal"], np.mean, rng=rng)
    low = stats.bootstrap_ci(pool["lower"], np.mean, rng=rng)
    smo = stats.bootstrap_ci(pool["smooth"], np.mean, rng=rng)
    n = len(ws)
    return [
        finding(f"adam_edge.active_curvature_at_threshold:{cell}",
                f"{cell}: lr kappa_g / thr in the edge window, median {iv[0]:.3g} (95% [{iv[1]:.3g},"
                f" {iv[2]:.3g}]; run medians of p10/p50/p90 {q[0]:.3g}/{q[1]:.3g}/{q[2]:.3g}; "
                f"{n} edge runs); claim |ratio - 1| < {CURVATURE_BAND:g}",
                distance_interval(iv, 1.0), CURVATURE_BAND, "<", cells=n,
                extra={"ratio": [float(v) for v in iv]}),
        finding(f"adam_edge.gradient_reversal:{cell}",
                f"{cell}: fraction of window steps with cos(g_t, g_t-1) < {REVERSAL_COS:g}: "
                f"{rev[0]:.3g} (before the edge {before:.3g}; {n} edge runs)", rev, REVERSAL_MIN,
                ">", cells=n, extra={"before_edge": float(before)}),
        finding(f"adam_edge.averaging_lowers:{cell}",
                f"{cell}: mean log(L_ema / L) in the window {low[0]:.3g} (ratio "
                f"{np.exp(low[0]):.3g}); claim < 0", low, 0.0, "<", cells=n),
        finding(f"adam_edge.averaging_smooths:{cell}",
                f"{cell}: roughness mean|dlog L| of the averaged over the raw loss "
                f"{smo[0]:.3g} (smoothing {1 / smo[0]:.3g}x); claim < 1", smo, 1.0, "<", cells=n),
    ]


def _analyse(tasks, results, seed):
    arrays, claims, diag = {}, [], {"runs": {}}
    rng = stats.generator(seed, "adam_edge", len(tasks))
    worst = 0.0
    cells: dict = {}
    for t, r in zip(tasks, results):
        key = f"{t['loss']}__lr{t['lr']:g}__b{t['beta1']:g}"
        for f in ("loss", "ema_loss", "kappa_g", "secant", "cosine", "lanczos_step", "sharpness"):
            arrays[f"{key}__{f}"] = np.asarray(r[f])
        arrays[f"{key}__threshold"] = np.asarray(r["threshold"])
        S, K = np.asarray(r["sharpness"]), np.asarray(r["kappa_at_lanczos"])
        worst = max(worst, float(np.nanmax(K / S - 1)))
        w = window_stats(r, t)
        diag["runs"][key] = ({"edge_start": int(r["edge_start"]),
                              "lr_kappa_over_thr_p10_50_90": w["ratio_q"].tolist(),
                              "lr_secant_over_thr_p10_50_90": w["secant_q"].tolist()}
                             if w else {"edge_start": -1, "max_lr_S_over_thr_after_skip": float(
                                 np.nanmax(np.append(t["lr"] * S[np.asarray(r["lanczos_step"])
                                           >= t["skip"] * t["steps"]] / r["threshold"], np.nan)))})
        cells.setdefault((t["loss"], t["lr"]), []).append((t, w))
    arrays["run_keys"] = np.array(list(diag["runs"]))
    claims.append(Claim(id="adam_edge.sharpness_bounds_active_curvature",
                        statement="at every Lanczos step kappa_g <= S (1 + 1e-4): largest "
                                  "kappa_g / S - 1 over all runs", measured=worst,
                        expected="<= 1e-4", tolerance=1e-4, passed=worst <= 1e-4))
    for (loss, lr), runs in cells.items():
        ws = [w for _, w in runs if w]
        none = [t["beta1"] for t, w in runs if not w]
        if none:
            claims.append(Claim(id=f"adam_edge.no_edge:{loss}:lr{lr:g}",
                                statement=f"{loss}, lr {lr:g}: no edge formed at beta1 = "
                                          f"{none} (left out of the findings)",
                                measured=len(none), expected=None, tolerance=None, passed=True,
                                kind="measurement"))
        if ws:
            claims += _cell_findings(loss, lr, ws, rng)
    return arrays, claims, diag


def _plot(arrays, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    keys = [str(k) for k in arrays["run_keys"]]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for k in keys:
        lr = float(k.split("__lr")[1].split("__")[0])
        thr = float(arrays[f"{k}__threshold"])
        kap = arrays[f"{k}__kappa_g"]
        axes[0].semilogy(lr * kap / thr, lw=0.5, label=k.replace("__", " "))
        axes[0].plot(arrays[f"{k}__lanczos_step"], lr * arrays[f"{k}__sharpness"] / thr, "k.",
                     ms=2)
        axes[1].semilogy(arrays[f"{k}__loss"], lw=0.4)
        axes[1].semilogy(arrays[f"{k}__ema_loss"], lw=0.8, ls="--")
    axes[0].axhline(1.0, color="r", lw=1)
    axes[0].set(ylabel="lr kappa_g / thr (dots: lr S / thr)", ylim=(1e-3, 10))
    axes[0].legend(fontsize=4, ncol=3)
    axes[1].set(xlabel="step", ylabel="loss (dashed: averaged iterate)")
    caption = ("Active curvature lr kappa_g over the threshold 2(1+beta1)/(1-beta1) per run "
               "(dots: preconditioned sharpness by Lanczos); losses of the iterate and of its "
               "exponential average (decay 0.9).")
    return save_figure(fig, outdir, "adam_edge_curvature", caption)


EXPERIMENT = AdamEdge()

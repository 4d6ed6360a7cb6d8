"""Full-batch Adam at the edge of stability: the negative feedback through ``v`` and its tests.

Digits MLP 64-32-10 (ReLU, float64, the first ``n_samples`` images, full batch) trained with
``torch.optim.Adam`` under a mean-squared (one-hot targets) and a cross-entropy loss, and a
narrow 64-4-10 MLP under cross-entropy on labels with a share replaced (``ce_noisy``), at each
step size ``lr`` and each ``beta1`` (``beta2`` fixed), ``seeds`` initialisations per cell;
observables of :mod:`gaugedyn.experiments.adam_stability._edge` at every step, Lanczos every
``lanczos_every`` steps. Beside them: the frozen-``v`` control, the diagonal quadratic, and the
Lanczos estimate against a dense eigensolver.

Protocol, fixed before any run:

- threshold ``thr = 2 (1 + beta1) / (1 - beta1)``; the edge ``t_e`` of a run: the first Lanczos
  step ``>= skip * steps`` at which ``lr * S >= 0.9 thr``; a run with no such step has no edge,
  is reported as such and is left out of the findings; the edge window: ``t_e`` to the end;
- *frozen-v control*: at ``t_e`` a copy of the run continues with Adam's preconditioner held at
  ``P(t_e)`` (``_edge.run_edge(freeze=True)``); per seed, the median of ``lr S / thr`` over the
  Lanczos steps at least one memory time ``1/(1 - beta2)`` after ``t_e`` (the adaptive ``v`` has
  had time to respond), for the copy and for the adaptive run (same steps); a seed whose run
  continues fewer than ``CONTROL_MEMORIES = 3`` memory times after ``t_e`` is left out of these
  three findings (the control cannot tell the runs apart before ``v`` moves; ``beta2 = 0.99``
  by default, memory 100 steps: at 0.999 a 1500-step run leaves about one memory time);
  ``frozen_v_rises``: the copy's ``log10`` ratio has mean > 0 (``mean_threshold``);
  ``adaptive_stays_on_edge``: the adaptive run's ``log10`` ratio lies inside
  (-log10 1.25, log10 1.25) (``equivalence``); ``feedback``: copy minus adaptive ``log10``
  ratio > 0 (``paired_difference``): holding ``v`` fixed lets the sharpness rise;
- per seed in the window: median of ``lr kappa_g / thr`` (``active_curvature_at_threshold``:
  inside (0.85, 1.15), ``equivalence``); share of steps with consecutive-gradient cosine
  ``< -0.5`` (``gradient_reversal``: > 0.5, ``mean_threshold``; the share before the edge is
  reported beside it); mean of ``log(L_ema / L)`` (``averaging_lowers``: < 0); the period-2
  component of the log loss, ``mean |y_t - (y_(t-1) + y_(t+1)) / 2|`` of ``y = log L``, of the
  averaged over the raw iterate (``averaging_smooths``: < 1);
- *diagonal quadratic* (``L = sum h_i theta_i^2 / 2``, 50 coordinates, ``h`` from 1 to 100,
  ``steps`` steps, each ``beta1`` of the grid at ``beta2``, ``lr`` the first of the grid; exact
  ``S = max h_i / P_i`` and ``kappa_g``): per seed, the median over the second half of the run of
  ``log10(S / kappa_g)``; ``quadratic_separates:b``: > log10 2 (``mean_threshold``): the
  preconditioned sharpness and the active curvature are different observables;
- check ``lanczos_matches_dense``: on a small digits MLP (64-8-10, 610 parameters, 64 images,
  after 50 Adam steps), the Lanczos estimate of ``lambda_max(P^-1/2 H P^-1/2)`` equals the dense
  eigensolver's (LAPACK ``eigvalsh`` of the Hessian built from batched HVPs) to 1e-6 relative.
- cross-entropy: on this task (``ce``, width 32) the network fits the training set, so the loss
  keeps falling and a run may reach no edge; such runs are reported (``no_edge``), not judged;
  ``ce_noisy`` is a cross-entropy task that cannot be fitted: 20% of the labels replaced by
  another class (one fixed draw, ``_batched.noisy_labels``) and a hidden width of 4
  (``_edge.HIDDEN``), its loss held near 1.5; it gets the same findings as ``mse``.
"""

from __future__ import annotations

import math

import numpy as np

from ... import stats
from ..._meta import integer_seed
from ...harness import Claim, Experiment, Param, judged, labelled

EDGE_FRACTION = 0.9
CURVATURE_BAND = (0.85, 1.15)
STAY_BAND = (-math.log10(1.25), math.log10(1.25))
SEPARATION = math.log10(2.0)
REVERSAL_COS, REVERSAL_MIN = -0.5, 0.5
LANCZOS_TOL = 1e-6
LOSSES = ("mse", "ce", "ce_noisy")
"""The losses of ``_edge.LOSSES`` (kept here so the registry does not import torch; a test
checks the two agree)."""
CONTROL_MEMORIES = 3.0
"""A frozen-v control is judged when it lasts at least this many memory times 1/(1 - beta2)."""


class AdamEdge(Experiment):
    name = "adam_edge"
    description = ("full-batch Adam on digits (MSE and cross-entropy) at the edge of stability: "
                   "the frozen-v control, active curvature against 2(1+beta1)/(1-beta1), the "
                   "diagonal quadratic, gradient reversal and iterate averaging")
    params = {
        "losses": Param(list, ["mse", "ce", "ce_noisy"], item=str, choices=LOSSES,
                        quick=["mse", "ce_noisy"], min_len=1, max_len=3, distinct=True,
                        help="losses (ce_noisy: cross-entropy on 20% replaced labels, width 4)"),
        "lrs": Param(list, [1e-2], item=float, lo=1e-5, hi=0.3, min_len=1, max_len=6,
                     distinct=True, why="beyond, Adam diverges at start-up", help="step sizes"),
        "beta1s": Param(list, [0.5, 0.9], item=float, quick=[0.9], lo=0.0, hi=0.99, min_len=1,
                        max_len=6, distinct=True, why="threshold 398 at 0.99",
                        help="first-moment factors"),
        "beta2": Param(float, 0.99, lo=0.5, hi=0.9999, why="memory 1e4 steps",
                       help="second-moment factor (its memory 1/(1 - beta2) must fit "
                            f"{CONTROL_MEMORIES:g} times into the run after the edge)"),
        "seeds": Param(int, 3, quick=2, lo=2, hi=16, why="an interval needs two seeds; CPU time",
                       help="initialisations per cell"),
        "steps": Param(int, 1500, quick=600, lo=100, hi=20000, why="CPU time: ~4 HVPs a step",
                       help="Adam steps per run"),
        "n_samples": Param(int, 256, quick=128, lo=32, hi=1797,
                           why="the digits set has 1797 images", help="full-batch size"),
        "lanczos_every": Param(int, 100, quick=50, lo=10, hi=1000, why="Lanczos cost",
                               help="steps between preconditioned-sharpness estimates"),
        "skip": Param(float, 0.1, lo=0.0, hi=0.5, why="half the run at most",
                      help="start-up fraction before an edge may be declared"),
        "quadratic_steps": Param(int, 20000, quick=5000, lo=1000, hi=200000,
                                 why="CPU time", help="Adam steps on the diagonal quadratic"),
    }
    definitions = {
        "active_curvature": "kappa_g = d^T H d / d^T P d, d = P^-1 g, P = diag(sqrt(v^_t) + eps) "
                            "of the step (one HVP)",
        "sharpness": "S = lambda_max(P^-1/2 H P^-1/2), scipy eigsh (Lanczos) over HVPs, warm start",
        "frozen_v": "a copy of the run from the edge on with P held at P(t_e); its S uses P(t_e)",
        "secant": "dtheta^T (g_t - g_{t-1}) / dtheta^T P dtheta",
        "cosine": "g_t . g_{t-1} / (|g_t| |g_{t-1}|)",
        "ema_loss": "loss at bar theta <- 0.9 bar theta + 0.1 theta",
        "period_2": "mean |y_t - (y_{t-1} + y_{t+1}) / 2| of y = log loss",
        "threshold": "2 (1 + beta1) / (1 - beta1) on lr times the curvature",
        "edge_window": f"from the first Lanczos step after skip*steps with lr S >= {EDGE_FRACTION} "
                       "threshold to the end; no such step: no edge",
    }

    def tasks(self, config):
        common = {"beta2": float(config["beta2"])}
        out = [{"kind": "lanczos_check", "lr": 1e-2, "beta1": 0.9, **common}]
        for b1 in config["beta1s"]:
            for s in range(int(config["seeds"])):
                out.append({"kind": "quadratic", "lr": float(config["lrs"][0]),
                            "beta1": float(b1), "steps": int(config["quadratic_steps"]),
                            "seed_index": s, **common})
        for loss in config["losses"]:
            for lr in config["lrs"]:
                for b1 in config["beta1s"]:
                    for s in range(int(config["seeds"])):
                        out.append({"kind": "run", "loss": loss, "lr": float(lr),
                                    "beta1": float(b1), "steps": int(config["steps"]),
                                    "n_samples": int(config["n_samples"]),
                                    "lanczos_every": int(config["lanczos_every"]),
                                    "skip": float(config["skip"]), "seed_index": s, **common})
        return out

    def run_task(self, task, seed):
        import torch

        from . import _edge

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            s = integer_seed(seed)
            if task["kind"] == "lanczos_check":
                return _edge.lanczos_check(task["lr"], task["beta1"], task["beta2"], s)
            if task["kind"] == "quadratic":
                return _edge.diagonal_quadratic(task["beta1"], task["beta2"], task["lr"],
                                                task["steps"], s)
            out = _edge.run_edge(task["loss"], task["lr"], task["beta1"], task["beta2"],
                                 task["steps"], s, task["n_samples"], task["lanczos_every"],
                                 freeze=True, freeze_after=int(task["skip"] * task["steps"]),
                                 freeze_fraction=EDGE_FRACTION)
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
    out = {"ratio": float(np.nanmedian(k)),
           "reversal": float(np.nanmean(cos[t0:] < REVERSAL_COS)),
           "reversal_before": float(np.mean(cos[1:t0] < REVERSAL_COS)) if t0 > 1 else np.nan,
           "lower": float(np.nanmean(np.log(E / L))),
           "smooth": period_two(np.log(E)) / period_two(np.log(L)),
           "ratio_q": np.nanquantile(k, [0.1, 0.5, 0.9]),
           "secant_q": np.nanquantile(lr * np.asarray(r["secant"])[t0:] / thr, [0.1, 0.5, 0.9])}
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


def _j(rule, *values, threshold, direction=None):
    return stats.judge(rule, *values, threshold=threshold, direction=direction)


def _cell_findings(loss, lr, b1, ws) -> list[Claim]:
    cell = f"{loss}:lr{lr:g}:b{b1:g}"
    col = {k: np.array([w.get(k, np.nan) for w in ws], float)
           for k in ("ratio", "reversal", "reversal_before", "lower", "smooth", "frozen",
                     "adaptive")}
    n = len(ws)
    out = []
    jr = _j("equivalence", col["ratio"], threshold=CURVATURE_BAND)
    out.append(judged(f"adam_edge.active_curvature_at_threshold:{cell}",
                      f"{cell}: per-seed median of lr kappa_g / thr in the edge window, mean "
                      f"{jr.estimate:.3g} (95% [{jr.low:.3g}, {jr.high:.3g}], {n} edge runs); "
                      f"claim inside {CURVATURE_BAND}", jr, paper_value=1.0))
    frozen = col["frozen"]
    short = int(np.sum(~np.isfinite(col["adaptive"])))
    fz = _j("mean_threshold", np.minimum(frozen, 6.0), threshold=0.0, direction=">")
    ad = _j("equivalence", col["adaptive"], threshold=STAY_BAND)
    fb = _j("paired_difference", np.minimum(frozen, 6.0), col["adaptive"], threshold=0.0,
            direction=">")
    fr = 10 ** np.array([fz.estimate, fz.low, fz.high])
    ar = 10 ** np.array([ad.estimate, ad.low, ad.high])
    out += [
        judged(f"adam_edge.frozen_v_rises:{cell}",
               f"{cell}: with v frozen at the edge, lr S / thr after it (geometric mean over "
               f"seeds of the per-seed median) {fr[0]:.3g} (95% [{fr[1]:.3g}, {fr[2]:.3g}], "
               f"{fz.n} seeds; {short} left out: control shorter than {CONTROL_MEMORIES:g} "
               "memory times; a diverged copy counts as 1e6); claim > 1", fz),
        judged(f"adam_edge.adaptive_stays_on_edge:{cell}",
               f"{cell}: the adaptive run's lr S / thr over the same steps {ar[0]:.3g} (95% "
               f"[{ar[1]:.3g}, {ar[2]:.3g}]); claim within a factor 1.25 of 1", ad,
               paper_value=0.0),
        judged(f"adam_edge.feedback:{cell}",
               f"{cell}: log10 of lr S / thr, frozen copy minus adaptive run, {fb.estimate:.3g} "
               f"(95% [{fb.low:.3g}, {fb.high:.3g}]); claim > 0 (the feedback through v holds "
               "the sharpness down)", fb),
    ]
    rv = _j("mean_threshold", col["reversal"], threshold=REVERSAL_MIN, direction=">")
    before = float(np.nanmean(col["reversal_before"]))
    out.append(judged(f"adam_edge.gradient_reversal:{cell}",
                      f"{cell}: share of window steps with cos(g_t, g_t-1) < {REVERSAL_COS:g}: "
                      f"{rv.estimate:.3g} (95% [{rv.low:.3g}, {rv.high:.3g}]; before the edge "
                      f"{before:.3g}); claim > {REVERSAL_MIN:g}", rv,
                      extra={"before_edge": before}))
    lo = _j("mean_threshold", col["lower"], threshold=0.0, direction="<")
    out.append(judged(f"adam_edge.averaging_lowers:{cell}",
                      f"{cell}: mean log(L_ema / L) in the window {lo.estimate:.3g} (95% "
                      f"[{lo.low:.3g}, {lo.high:.3g}]); claim < 0", lo))
    sm = _j("mean_threshold", col["smooth"], threshold=1.0, direction="<")
    out.append(judged(f"adam_edge.averaging_smooths:{cell}",
                      f"{cell}: period-2 component of log L, averaged over raw iterate, "
                      f"{sm.estimate:.3g} (95% [{sm.low:.3g}, {sm.high:.3g}]); claim < 1", sm))
    return out


def quadratic_separation(r: dict) -> float:
    """Median over the second half of ``log10(S / kappa_g)`` of one diagonal-quadratic run."""
    S, K = np.asarray(r["sharpness"]), np.asarray(r["kappa_g"])
    h = slice(S.size // 2, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nanmedian(np.log10(S[h] / K[h])))


def _analyse(tasks, results, seed):
    arrays, claims, diag = {}, [], {"runs": {}}
    cells: dict = {}
    quad: dict = {}
    for t, r in zip(tasks, results):
        if t["kind"] == "lanczos_check":
            rel = abs(float(r["lanczos"]) / float(r["dense"]) - 1)
            claims.append(Claim(
                id="adam_edge.lanczos_matches_dense",
                statement=f"on a small digits MLP ({int(r['n_params'])} parameters, after 50 "
                          "Adam steps) the Lanczos estimate of lambda_max(P^-1/2 H P^-1/2) "
                          f"({float(r['lanczos']):.10g}) equals the dense eigensolver's "
                          f"({float(r['dense']):.10g}): relative difference",
                measured=rel, expected=0.0, tolerance=LANCZOS_TOL, passed=rel <= LANCZOS_TOL))
            continue
        if t["kind"] == "quadratic":
            quad.setdefault(t["beta1"], []).append(quadratic_separation(r))
            if t["seed_index"] == 0:
                key = f"quadratic__b{t['beta1']:g}"
                thr = float(r["threshold"])
                arrays[f"{key}__S"] = t["lr"] * np.asarray(r["sharpness"]) / thr
                arrays[f"{key}__kappa"] = t["lr"] * np.asarray(r["kappa_g"]) / thr
            continue
        key = f"{t['loss']}__lr{t['lr']:g}__b{t['beta1']:g}__s{t['seed_index']}"
        for f in ("loss", "ema_loss", "kappa_g", "lanczos_step", "sharpness", "frozen_sharpness",
                  "frozen_loss"):
            arrays[f"{key}__{f}"] = np.asarray(r[f])
        arrays[f"{key}__threshold"] = np.asarray(r["threshold"])
        w = window_stats(r, t)
        diag["runs"][key] = ({"edge_start": int(r["edge_start"]),
                              "lr_kappa_over_thr_p10_50_90": w["ratio_q"].tolist(),
                              "lr_secant_over_thr_p10_50_90": w["secant_q"].tolist(),
                              "log10_frozen": w.get("frozen"), "log10_adaptive": w.get("adaptive")}
                             if w else {"edge_start": -1})
        cells.setdefault((t["loss"], t["lr"], t["beta1"]), []).append((t, w))
    arrays["run_keys"] = np.array(list(diag["runs"]))
    arrays["quadratic_beta1s"] = np.array(sorted(quad))
    for b1, vals in sorted(quad.items()):
        j = _j("mean_threshold", vals, threshold=SEPARATION, direction=">")
        claims.append(judged(
            f"adam_edge.quadratic_separates:b{b1:g}",
            f"diagonal quadratic, beta1 = {b1:g}: median over the second half of log10(S / "
            f"kappa_g) {j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} seeds): the "
            f"preconditioned sharpness is {10 ** j.estimate:.3g} times the active curvature; "
            f"claim > log10 2", j))
    for (loss, lr, b1), runs in cells.items():
        ws = [w for _, w in runs if w]
        none = [t["seed_index"] for t, w in runs if not w]
        if none:
            claims.append(Claim(id=f"adam_edge.no_edge:{loss}:lr{lr:g}:b{b1:g}",
                                statement=f"{loss}, lr {lr:g}, beta1 {b1:g}: no edge formed in "
                                          f"seeds {none} (left out of the findings)",
                                measured=len(none), expected=None, tolerance=None, passed=True,
                                kind="measurement"))
        if ws:
            claims += _cell_findings(loss, lr, b1, ws)
    return arrays, claims, diag


def _plot(arrays, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    keys = [str(k) for k in arrays["run_keys"] if str(k).endswith("__s0")]
    fig, axes = plt.subplots(3, 1, figsize=(8, 9))
    for k in keys:
        lr = float(k.split("__lr")[1].split("__")[0])
        thr = float(arrays[f"{k}__threshold"])
        lz = arrays[f"{k}__lanczos_step"]
        line, = axes[0].plot(lz, lr * arrays[f"{k}__sharpness"] / thr, ".-", ms=3, lw=0.8,
                             label=k.replace("__", " "))
        axes[0].plot(lz, lr * arrays[f"{k}__frozen_sharpness"] / thr, "x--", ms=3, lw=0.8,
                     color=line.get_color())
        axes[1].semilogy(arrays[f"{k}__loss"], lw=0.4, color=line.get_color())
        axes[1].semilogy(arrays[f"{k}__ema_loss"], lw=0.8, ls="--", color=line.get_color())
    axes[0].axhline(1.0, color="r", lw=1)
    axes[0].set(xlabel="step", ylabel="lr S / thr (x: v frozen at the edge)", yscale="log")
    axes[0].legend(fontsize=5, ncol=2)
    axes[1].set(xlabel="step", ylabel="loss (dashed: averaged iterate)")
    for b1 in arrays["quadratic_beta1s"]:
        key = f"quadratic__b{float(b1):g}"
        line, = axes[2].semilogy(arrays[f"{key}__S"], lw=0.6, label=f"S, beta1 {float(b1):g}")
        axes[2].semilogy(arrays[f"{key}__kappa"], lw=0.6, ls=":", color=line.get_color(),
                         label=f"kappa_g, beta1 {float(b1):g}")
    axes[2].axhline(1.0, color="r", lw=1)
    axes[2].set(xlabel="step", ylabel="lr x curvature / thr (diagonal quadratic)")
    axes[2].legend(fontsize=6)
    caption = ("Top: preconditioned sharpness lr S over the threshold 2(1+beta1)/(1-beta1) of the "
               "adaptive runs (dots, seed 0 of each cell) and of their copies with v frozen at "
               "the edge (crosses). Middle: losses of the iterate and of its exponential average "
               "(decay 0.9, dashed). Bottom: the diagonal quadratic, exact lr S / thr (solid) and "
               "active curvature lr kappa_g / thr (dotted).")
    return save_figure(fig, outdir, "adam_edge_curvature", caption)


EXPERIMENT = AdamEdge()

r"""The gauge on networks the theory did not build: a ReLU MLP, a small CNN and a tiny
transformer on the digits data.

Claim 3 of derivations/theory.md section 2 (the favourable gauge picks the owner among
duplicates) and the exact discrete drift of the gauge, measured with
:class:`gaugedyn.gauge.GaugeRecorder` on torch models trained full-batch on scikit-learn's shipped
``load_digits`` (the models and the duplication: :mod:`._digits`).

*Owner runs* (``models``: the MLP and the CNN): unit (channel) 0 of the first hidden layer is
duplicated into unit 1 with the same function and opposite gauges (unit 0 a-heavy,
``(|w|, |a|) -> (|w| / s, |a| s)``; unit 1 w-heavy), then trained with full-batch GD, GD with
heavy-ball momentum and weight decay (``torch.optim.SGD``) and Adam, ``seeds`` seeds each (tasks:
model x optimizer x chunk of seeds). Per run: the functional owner of the pair at the last step
(a tie counts as not owned), the per-step change of every unit's ``delta = |a|^2 - |w|^2``
against its prediction (GD: ``eta^2 (|g_a|^2 - |g_w|^2)``; momentum: the recorder's exact
recursion; Adam: measured only), the cumulative drift of the pair's ``delta`` and their
mobilities ``mu_R = |a|^2 + |w|^2``, ``mu_T = 1 / |w|^2``.

*Slope runs* (``slope_models``: the MLP, the CNN and the transformer, ``slope_seeds`` seeds
each): full-batch GD from one initial model at ``slope_sizes`` step sizes
``eta = lr_gd 2^-k``, each over the same time ``T`` (:func:`._digits.drift_rates`): the drift per
unit time of the invariants (every ReLU unit of the MLP and the CNN; the heads'
``W_Q W_Q^T - W_K W_K^T`` and ``W_V W_V^T - W_O^T W_O`` of the transformer, the ``W_Q^T W_Q -
W_K^T W_K`` of the ``x W`` convention), and per seed the least-squares slope of its log against
log eta. GD drifts by ``eta^2 k`` per step, ``eta T <k>`` over the time ``T``: slope 1.

Checks (they decide the exit status): the duplication and the gauges leave the outputs unchanged
to ``1e-12`` relative; every invariant's change per GD step (owner runs and slope runs, which
include the attention pairs) equals its prediction to :data:`._digits.GD_TOL` relative (plus the
float's resolution of the invariant, :func:`._digits.gap`), and per momentum step to
:data:`._digits.MOMENTUM_TOL`. Findings: per model and optimizer, rule ``proportion``
(randomised exact interval, its uniform draw from the run's analysis seed) claimed ``> 1/2``: the a-heavy copy owns the feature in most seeds (the seed's flow claim gives
rate 1, the paper value for GD and momentum, whose small steps follow the flow; the paper gives
no value under Adam); per slope model, rule ``equivalence`` (two one-sided t tests on the
per-seed slopes) inside ``[0.9, 1.1]`` (paper value 1). Measurements: the median relative drift
of each copy's ``delta`` and the median ratio ``mu_T(a-heavy) / mu_T(w-heavy)`` of the copies'
transport mobilities at the end (``s^4`` at the start). Seeds are not paired across optimizers
(each task draws its own).
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param, judged, no_paper_value
from ...stats import generator, judge
from . import _digits as dg
from . import _figures as gf

FUNCTION_TOL = 1e-12


class GaugeOnNetworks(Experiment):
    name = "gauge_on_networks"
    description = ("a duplicated unit with opposite gauges in a ReLU MLP and a CNN on the digits "
                   "data, trained by GD, momentum and Adam: the owner rate and the drift of "
                   "delta; the drift's slope in the step size, attention heads included")
    params = {
        "models": Param(list, list(dg.MODELS[:2]), quick=["mlp"], choices=dg.MODELS[:2],
                        min_len=1, max_len=2, distinct=True,
                        help="models of the owner runs"),
        "slope_models": Param(list, list(dg.MODELS), choices=dg.MODELS, min_len=1, max_len=3,
                              distinct=True, help="models of the slope runs"),
        "slope_seeds": Param(int, 8, quick=3, lo=3, hi=100,
                             why="the equivalence rule needs three seeds or more",
                             help="seeds per slope model"),
        "slope_sizes": Param(int, 4, quick=3, lo=2, hi=8,
                             why="each halving doubles the steps of the smallest size",
                             help="step sizes lr_gd 2^-k, k < slope_sizes"),
        "slope_steps": Param(int, 40, quick=16, lo=2, hi=2000,
                             why="the smallest size runs slope_steps 2^(slope_sizes-1) steps",
                             help="steps at the largest size (the time T = slope_steps lr_gd)"),
        "optimizers": Param(list, list(dg.OPTIMIZERS), choices=dg.OPTIMIZERS, min_len=1,
                            max_len=3, distinct=True, help="optimizers to train with"),
        "seeds": Param(int, 12, quick=6, lo=2, hi=400, why="one seed is one CPU training run",
                       help="seeds per optimizer"),
        "chunk": Param(int, 4, quick=3, lo=1, hi=64, why="a task is one worker's share",
                       help="seeds per task"),
        "steps": Param(int, 1500, quick=600, lo=10, hi=20000,
                       why="every step is recorded in float64", help="training steps"),
        "samples": Param(int, 256, quick=256, lo=64, hi=1797,
                         why="load_digits holds 1797 images",
                         help="training images (the first ones; 256 keeps the CNN and the "
                              "transformer at a few ms per float64 step)"),
        "hidden": Param(int, 32, lo=4, hi=256, why="the recorder reads every unit per step",
                        help="units per hidden layer of the MLP"),
        "channels": Param(int, 4, lo=2, hi=64, why="a float64 convolution per step",
                          help="channels per convolution of the CNN"),
        "gauge": Param(float, 3.0, lo=1.0, hi=10.0, lo_open=True,
                       why="the a-heavy copy's |w| shrinks as 1/s and a step kills its ReLU",
                       help="s: the copies' gauges are 1/s (a-heavy) and s (w-heavy)"),
        "lr_gd": Param(float, 0.05, lo=0.0, hi=1.0, lo_open=True,
                       why="GD on this loss diverges beyond about 1", help="GD step size"),
        "lr_momentum": Param(float, 0.005, lo=0.0, hi=0.1, lo_open=True,
                             why="the effective step lr / (1 - momentum) stays stable",
                             help="momentum step size"),
        "momentum": Param(float, 0.9, lo=0.0, hi=0.99, why="heavy-ball beyond 0.99 rings",
                          help="heavy-ball momentum"),
        "weight_decay": Param(float, 1e-4, lo=0.0, hi=0.01,
                              why="decay beyond 1e-2 erases the gauge within the run",
                              help="weight decay of the momentum runs"),
        "lr_adam": Param(float, 1e-3, lo=0.0, hi=0.1, lo_open=True,
                         why="Adam's per-coordinate step beyond 0.1 jumps past the features",
                         help="Adam step size"),
        "stride": Param(int, 10, lo=1, hi=1000, why="stored trajectories only",
                        help="store every stride-th step's readings"),
    }

    def tasks(self, config):
        keys = ("steps", "samples", "hidden", "channels", "gauge", "lr_gd", "lr_momentum",
                "momentum", "weight_decay", "lr_adam", "stride", "slope_sizes", "slope_steps")
        shared = {k: config[k] for k in keys}
        out = []
        for model in config["models"]:
            for opt in config["optimizers"]:
                for first in range(0, config["seeds"], config["chunk"]):
                    n = min(config["chunk"], config["seeds"] - first)
                    out.append({"kind": "owner", "model": model, "optimizer": opt,
                                "first_seed": first, "n_seeds": n, **shared})
        for model in config["slope_models"]:
            for first in range(0, config["slope_seeds"], config["chunk"]):
                n = min(config["chunk"], config["slope_seeds"] - first)
                out.append({"kind": "slope", "model": model, "first_seed": first, "n_seeds": n,
                            **shared})
        return out

    def run_task(self, task, seed):
        import time

        from ..._meta import integer_seed
        from ...training import single_thread

        t0 = time.perf_counter()
        runs = []
        with single_thread():
            for child in seed.spawn(task["n_seeds"]):
                if task["kind"] == "slope":
                    runs.append(dg.drift_rates(task, integer_seed(child)))
                else:
                    runs.append(dg.train_one(task["optimizer"], task, integer_seed(child),
                                             task["stride"]))
        shared = ("step", "eta")
        out = {k: np.array([r[k] for r in runs]) for k in runs[0] if k not in shared}
        out |= {k: runs[0][k] for k in shared if k in runs[0]}
        out["wall_time_s"] = np.array(time.perf_counter() - t0)
        return out

    def analyse(self, config, tasks, results, seed):
        return _analyse(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        out = []
        if arrays["runs"].size:
            out += [_plot_owner(arrays, outdir), _plot_drift(arrays, outdir)]
        if arrays["slope_models"].size:
            out.append(_plot_slope(arrays, outdir))
        return out


SLOPE_BAND = (0.9, 1.1)
"""The drift's slope in eta counts as 1 inside this band (the issue's "within 0.1")."""


def _gather(tasks, results) -> tuple[dict, dict]:
    """The task results stacked over seeds (tasks in order): owner runs per ``(model,
    optimizer)``, slope runs per model."""
    by: dict = {}
    for task, res in zip(tasks, results):
        key = ((task["model"], task["optimizer"]) if task["kind"] == "owner"
               else task["model"])
        by.setdefault(key, []).append(res)
    owner, slope = {}, {}
    for key, parts in by.items():
        d = {k: np.concatenate([np.atleast_1d(np.asarray(p[k])) for p in parts])
             for k in parts[0] if k not in ("step", "eta", "wall_time_s")}
        for k in ("step", "eta"):
            if k in parts[0]:
                d[k] = np.asarray(parts[0][k])
        (owner if isinstance(key, tuple) else slope)[key] = d
    return owner, slope


def _checks(owner: dict, slope: dict) -> list[Claim]:
    claims = []
    if owner:
        func = max(float(np.max(d["function_change"])) for d in owner.values())
        claims.append(Claim(
            id="gauge_on_networks.function_unchanged",
            statement="duplicating unit 0 into unit 1 (whose output was zeroed) and giving "
                      "the copies the gauges 1/s and s leaves the outputs unchanged: "
                      "largest |f' - f| / max |f| over models and seeds",
            measured=func, expected=0.0, tolerance=FUNCTION_TOL,
            passed=bool(func <= FUNCTION_TOL)))
    words = {"gd": ("GD", "eta^2 (|g_a|^2 - |g_w|^2)", dg.GD_TOL),
             "momentum": ("momentum with weight decay", "the exact recursion", dg.MOMENTUM_TOL)}
    for (model, opt), d in owner.items():
        if opt in words:
            name, what, tol = words[opt]
            g = float(np.max(d["gap"]))
            claims.append(Claim(
                id=f"gauge_on_networks.delta_prediction:{model}:{opt}",
                statement=(f"{model}, {name}: every unit's change of delta per step equals "
                           f"{what} to {tol:g} relative plus 4 eps (|a|^2 + |w|^2); largest "
                           "error in units of that allowance, over units, steps and seeds "
                           "(at most 1 passes)"),
                measured=g, expected="<= 1", tolerance=tol, passed=bool(g <= 1.0)))
    for model, d in slope.items():
        g = float(np.max(d["gap"]))
        heads = " and every attention head's invariant (d x d)" if model == "transformer" else ""
        claims.append(Claim(
            id=f"gauge_on_networks.delta_prediction:{model}:slope_runs",
            statement=(f"{model}, GD at every step size of the slope runs: every unit's{heads} "
                       f"change per step equals eta^2 (|g_in|^2 - |g_out|^2) to {dg.GD_TOL:g} "
                       "relative plus 4 eps times its size; largest error in units of that "
                       "allowance (at most 1 passes)"),
            measured=g, expected="<= 1", tolerance=dg.GD_TOL, passed=bool(g <= 1.0)))
    return claims


def _findings(config, owner: dict, slope: dict, arrays: dict, seed) -> list[Claim]:
    out = []
    for (model, opt), d in owner.items():
        owned = (d["owner"] == dg.A_HEAVY).astype(float)
        j = judge("proportion", owned, threshold=0.5, direction=">",
                  rng=generator(seed, "a_heavy_owns", model, opt))
        k, n = int(owned.sum()), owned.size
        arrays[f"owner_rate_{model}_{opt}"] = np.array([k / n, j.low, j.high])
        arrays[f"owner_{model}_{opt}"] = d["owner"]
        if opt == "adam":
            paper, extra = no_paper_value(j)
        else:
            paper, extra = 1.0, {"paper_value": 1.0}
        what = "a unit of a ReLU MLP" if model == "mlp" else "a channel of a ReLU CNN"
        out.append(judged(
            f"gauge_on_networks.a_heavy_owns:{model}:{opt}",
            (f"{model}, {opt}: {what} on the digits data duplicated with gauges 1/s and s "
             f"(s = {config['gauge']:g}): the a-heavy copy owns the feature after "
             f"{config['steps']} steps in most seeds ({k}/{n}; rule proportion)"),
            j, paper_value=paper, expected="> 0.5 (gradient flow: 1)", extra=extra))
    for model, d in slope.items():
        arrays[f"slope_eta_{model}"] = d["eta"]
        arrays[f"slope_drift_{model}"] = d["drift"]
        arrays[f"slope_{model}"] = d["slope"]
        j = judge("equivalence", d["slope"], threshold=SLOPE_BAND)
        what = ("the attention heads' invariants W_Q W_Q^T - W_K W_K^T and W_V W_V^T - W_O^T W_O"
                if model == "transformer" else "delta of every ReLU unit")
        out.append(judged(
            f"gauge_on_networks.drift_slope:{model}",
            (f"{model}, full-batch GD at {d['eta'].size} step sizes over the same time: the "
             f"drift per unit time of {what} grows as eta^slope with slope inside "
             f"[{SLOPE_BAND[0]:g}, {SLOPE_BAND[1]:g}] (per-seed least-squares slopes; rule "
             "equivalence)"),
            j, paper_value=1.0, expected=f"inside [{SLOPE_BAND[0]:g}, {SLOPE_BAND[1]:g}] "
                                         "(exact discrete drift: 1)",
            extra={"paper_value": 1.0}))
    return out


def _measurements(owner: dict, arrays: dict) -> list[Claim]:
    out = []
    for (model, opt), d in owner.items():
        drift = np.abs(d["change"][:, -1, :]) / np.abs(d["delta0"])
        ratio = d["mu_T"][:, -1, dg.A_HEAVY] / d["mu_T"][:, -1, dg.W_HEAVY]
        arrays[f"drift_{model}_{opt}"] = drift
        for i, copy in ((dg.A_HEAVY, "a-heavy"), (dg.W_HEAVY, "w-heavy")):
            out.append(Claim(id=f"gauge_on_networks.delta_drift:{model}:{opt}:{copy}",
                             statement=f"{model}, {opt}: median over seeds of "
                                       f"|delta(T) - delta(0)| / |delta(0)| of the {copy} copy",
                             measured=float(np.median(drift[:, i])), expected=None,
                             tolerance=None, passed=True, kind="measurement"))
        out.append(Claim(id=f"gauge_on_networks.transport_ratio:{model}:{opt}",
                         statement=f"{model}, {opt}: median over seeds of mu_T(a-heavy) / "
                                   "mu_T(w-heavy) = |w_w-heavy|^2 / |w_a-heavy|^2 at the end "
                                   "(s^4 at the start)",
                         measured=float(np.median(ratio)), expected=None, tolerance=None,
                         passed=True, kind="measurement"))
    return out


def _analyse(config, tasks, results, seed) -> tuple:
    owner, slope = _gather(tasks, results)
    arrays: dict = {"runs": np.array([f"{m}_{o}" for m, o in owner]),
                    "slope_models": np.array(list(slope))}
    for (model, opt), d in owner.items():
        key = f"{model}_{opt}"
        arrays |= {f"step_{key}": d["step"], f"change_{key}": d["change"],
                   f"predicted_{key}": d["predicted"], f"delta0_{key}": d["delta0"],
                   f"mu_T_{key}": d["mu_T"], f"mu_R_{key}": d["mu_R"], f"loss_{key}": d["loss"]}
    claims = (_checks(owner, slope) + _findings(config, owner, slope, arrays, seed)
              + _measurements(owner, arrays))
    arrays["caption_gauge_on_networks_owner"] = np.array(
        "Share of seeds whose a-heavy copy owns the duplicated feature at the end, per model and "
        "optimizer, with the 95% interval of its finding (rule proportion); the dashed line is 1/2.")
    arrays["caption_gauge_on_networks_drift"] = np.array(
        "Cumulative change of delta = |a|^2 - |w|^2 of the a-heavy (left) and w-heavy (right) copy, "
        "relative to |delta(0)|, seed 0 of each model and optimizer: measured (lines) and "
        "predicted (crosses; none under Adam). The axis is logarithmic beyond 1e-6 in size.")
    arrays["caption_gauge_on_networks_slope"] = np.array(
        "Drift per unit time of the invariants under full-batch GD against the step size, one "
        "line per seed and model (the transformer: its attention heads); the dashed line has "
        "slope 1.")
    wall: dict = {}
    for t, r in zip(tasks, results):
        key = f"{t['model']}_{t.get('optimizer', 'slope')}"
        wall[key] = wall.get(key, 0.0) + float(r["wall_time_s"])
    return arrays, claims, {"wall_time_s": wall}


def _plot_owner(arrays, outdir):
    import matplotlib.pyplot as plt

    runs = [str(o) for o in arrays["runs"]]
    fig, ax = plt.subplots(figsize=(max(3.6, 0.8 * len(runs)), 3.0))
    for i, run in enumerate(runs):
        p, lo, hi = arrays[f"owner_rate_{run}"]
        ax.errorbar([i], [p], yerr=[[p - lo], [hi - p]], fmt="o", color=f"C{i % 3}", capsize=4)
    ax.axhline(0.5, color="0.5", ls="--", lw=0.8)
    ax.set(xticks=range(len(runs)), xticklabels=[r.replace("_", "\n") for r in runs],
           ylim=(0, 1.05), ylabel="a-heavy copy owns (share of seeds)")
    return gf.save(fig, outdir, "gauge_on_networks_owner", arrays)


def _plot_drift(arrays, outdir):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.0))
    for i, run in enumerate(str(o) for o in arrays["runs"]):
        step = arrays[f"step_{run}"]
        d0 = np.abs(arrays[f"delta0_{run}"][0])
        ls = "-" if run.startswith("mlp") else ":"
        for c, ax in enumerate(axes):
            ax.plot(step, arrays[f"change_{run}"][0, :, c] / d0[c], color=f"C{i}", ls=ls,
                    label=run.replace("_", " "))
            ax.plot(step, arrays[f"predicted_{run}"][0, :, c] / d0[c], color=f"C{i}",
                    ls="none", marker="x", markersize=3, markevery=max(1, step.size // 12))
    for ax, copy in zip(axes, ("a-heavy", "w-heavy")):
        ax.set(xlabel="step", title=copy)
        ax.set_yscale("symlog", linthresh=1e-6)
    axes[0].set_ylabel("(delta(t) - delta(0)) / |delta(0)|")
    return gf.save(fig, outdir, "gauge_on_networks_drift", arrays, legends=(axes[0],))


def _plot_slope(arrays, outdir):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.8, 3.0))
    for i, model in enumerate(str(m) for m in arrays["slope_models"]):
        eta = arrays[f"slope_eta_{model}"]
        for s, drift in enumerate(arrays[f"slope_drift_{model}"]):
            ax.loglog(eta, drift, color=f"C{i}", lw=0.8, marker=".",
                      label=model if s == 0 else None)
        ref = arrays[f"slope_drift_{model}"][:, 0].mean()
        ax.loglog(eta, ref * eta / eta[0], color="0.5", ls="--", lw=0.8)
    ax.set(xlabel="step size eta", ylabel="drift per unit time")
    return gf.save(fig, outdir, "gauge_on_networks_slope", arrays, legends=(ax,))


EXPERIMENT = GaugeOnNetworks()

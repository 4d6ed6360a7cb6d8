r"""The gauge on a network the theory did not build: a ReLU MLP on the digits data.

Claim 3 of derivations/theory.md section 2 (the favourable gauge picks the owner among
duplicates) measured with :class:`gaugedyn.gauge.GaugeRecorder` on a 3-layer ReLU MLP trained
full-batch on scikit-learn's shipped ``load_digits`` (the model and the duplication:
:mod:`._digits`). Unit 0 of the first hidden layer is duplicated into unit 1 with the same
function and opposite gauges (unit 0 a-heavy, ``(|w|, |a|) -> (|w| / s, |a| s)``; unit 1
w-heavy), then trained with full-batch GD, GD with heavy-ball momentum and weight decay
(``torch.optim.SGD``) and Adam, ``seeds`` seeds each (tasks: optimizer x chunk of seeds).

Per run: the recorder's functional owner of the pair at the last step (``owner_units``; a tie
counts as not owned), the per-step change of every unit's ``delta = |a|^2 - |w|^2`` against its
prediction (GD: ``eta^2 (|g_a|^2 - |g_w|^2)``; momentum: the recorder's exact recursion; Adam:
measured only), the cumulative drift of the pair's ``delta`` and their mobilities
``mu_R = |a|^2 + |w|^2``, ``mu_T = 1 / |w|^2``.

Checks (they decide the exit status): the duplication and the gauges leave the outputs unchanged
to ``1e-12`` relative; every invariant's change per GD step equals its prediction to
:data:`._digits.GD_TOL` relative (plus the float's resolution of the invariant,
:func:`._digits.gap`), and per momentum step to :data:`._digits.MOMENTUM_TOL`. Findings, one per
optimizer, rule ``proportion`` (randomised exact interval, its uniform draw from the run's
analysis seed) claimed ``> 1/2``: the a-heavy copy owns the feature in
most seeds (the seed's flow claim gives rate 1, the paper value for GD and momentum, whose small
steps follow the flow; the paper gives no value under Adam). Measurements: the median relative
drift of each copy's ``delta`` and the median ratio ``mu_T(a-heavy) / mu_T(w-heavy)`` of the
copies' transport mobilities at the end (``s^4`` at the start). Seeds are not paired across
optimizers (each task draws its own).
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param, judged, labelled, no_paper_value
from ...stats import generator, judge
from . import _digits as dg
from . import _figures as gf

FUNCTION_TOL = 1e-12


class GaugeOnNetworks(Experiment):
    name = "gauge_on_networks"
    description = ("a duplicated unit with opposite gauges in a ReLU MLP on the digits data, "
                   "trained by GD, momentum and Adam: the owner rate and the drift of delta")
    params = {
        "optimizers": Param(list, list(dg.OPTIMIZERS), choices=dg.OPTIMIZERS, min_len=1,
                            max_len=3, distinct=True, help="optimizers to train with"),
        "seeds": Param(int, 16, quick=6, lo=2, hi=400, why="one seed is one CPU training run",
                       help="seeds per optimizer"),
        "chunk": Param(int, 4, quick=3, lo=1, hi=64, why="a task is one worker's share",
                       help="seeds per task"),
        "steps": Param(int, 1500, quick=600, lo=10, hi=20000,
                       why="every step is recorded in float64", help="training steps"),
        "samples": Param(int, 1797, quick=256, lo=64, hi=1797,
                         why="load_digits holds 1797 images", help="training images"),
        "hidden": Param(int, 32, lo=4, hi=256, why="the recorder reads every unit per step",
                        help="units per hidden layer"),
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
        keys = ("steps", "samples", "hidden", "gauge", "lr_gd", "lr_momentum", "momentum",
                "weight_decay", "lr_adam", "stride")
        out = []
        for opt in config["optimizers"]:
            for first in range(0, config["seeds"], config["chunk"]):
                n = min(config["chunk"], config["seeds"] - first)
                out.append({"optimizer": opt, "first_seed": first, "n_seeds": n,
                            **{k: config[k] for k in keys}})
        return out

    def run_task(self, task, seed):
        import time

        from ..._meta import integer_seed
        from ...training._support import single_thread

        t0 = time.perf_counter()
        runs = []
        with single_thread():
            for child in seed.spawn(task["n_seeds"]):
                runs.append(dg.train_one(task["optimizer"], task, integer_seed(child),
                                         task["stride"]))
        out = {k: np.array([r[k] for r in runs]) for k in runs[0] if k != "step"}
        out["step"] = runs[0]["step"]
        out["wall_time_s"] = np.array(time.perf_counter() - t0)
        return out

    def analyse(self, config, tasks, results, seed):
        return labelled(self.params, config, _analyse(config, tasks, results, seed))

    def plot(self, arrays, config, outdir):
        return [_plot_owner(arrays, outdir), _plot_drift(arrays, outdir)]


def _gather(tasks, results) -> dict:
    """Per optimizer the task results stacked over seeds (tasks in order)."""
    by: dict = {}
    for task, res in zip(tasks, results):
        by.setdefault(task["optimizer"], []).append(res)
    out = {}
    for opt, parts in by.items():
        out[opt] = {k: np.concatenate([np.atleast_1d(np.asarray(p[k])) for p in parts])
                    for k in parts[0] if k not in ("step", "wall_time_s")}
        out[opt]["step"] = np.asarray(parts[0]["step"])
    return out


def _checks(data: dict) -> list[Claim]:
    func = max(float(np.max(d["function_change"])) for d in data.values())
    claims = [Claim(id="gauge_on_networks.function_unchanged",
                    statement="duplicating unit 0 into unit 1 (whose output was zeroed) and giving "
                              "the copies the gauges 1/s and s leaves the outputs unchanged: "
                              "largest |f' - f| / max |f| over seeds",
                    measured=func, expected=0.0, tolerance=FUNCTION_TOL,
                    passed=bool(func <= FUNCTION_TOL))]
    words = {"gd": ("GD", "eta^2 (|g_a|^2 - |g_w|^2)", dg.GD_TOL),
             "momentum": ("momentum with weight decay", "the exact recursion", dg.MOMENTUM_TOL)}
    for opt, (name, what, tol) in words.items():
        if opt in data:
            g = float(np.max(data[opt]["gap"]))
            claims.append(Claim(
                id=f"gauge_on_networks.delta_prediction:{opt}",
                statement=(f"{name}: every unit's change of delta per step equals {what} to "
                           f"{tol:g} relative plus 4 eps (|a|^2 + |w|^2); largest error in units "
                           "of that allowance, over units, steps and seeds (at most 1 passes)"),
                measured=g, expected="<= 1", tolerance=tol, passed=bool(g <= 1.0)))
    return claims


def _findings(config, data: dict, arrays: dict, seed) -> list[Claim]:
    out = []
    for opt, d in data.items():
        owned = (d["owner"] == dg.A_HEAVY).astype(float)
        j = judge("proportion", owned, threshold=0.5, direction=">",
                  rng=generator(seed, "a_heavy_owns", opt))
        k, n = int(owned.sum()), owned.size
        arrays[f"owner_rate_{opt}"] = np.array([k / n, j.low, j.high])
        arrays[f"owner_{opt}"] = d["owner"]
        if opt == "adam":
            paper, extra = no_paper_value(j)
        else:
            paper, extra = 1.0, {"paper_value": 1.0}
        out.append(judged(
            f"gauge_on_networks.a_heavy_owns:{opt}",
            (f"{opt}: a unit of a ReLU MLP on the digits data duplicated with gauges 1/s and s "
             f"(s = {config['gauge']:g}): the a-heavy copy owns the feature after "
             f"{config['steps']} steps in most seeds ({k}/{n}; rule proportion)"),
            j, paper_value=paper, expected="> 0.5 (gradient flow: 1)", extra=extra))
    return out


def _measurements(data: dict, arrays: dict) -> list[Claim]:
    out = []
    for opt, d in data.items():
        drift = np.abs(d["change"][:, -1, :]) / np.abs(d["delta0"])
        ratio = d["mu_T"][:, -1, dg.A_HEAVY] / d["mu_T"][:, -1, dg.W_HEAVY]
        arrays[f"drift_{opt}"] = drift
        for i, copy in ((dg.A_HEAVY, "a-heavy"), (dg.W_HEAVY, "w-heavy")):
            out.append(Claim(id=f"gauge_on_networks.delta_drift:{opt}:{copy}",
                             statement=f"{opt}: median over seeds of |delta(T) - delta(0)| / "
                                       f"|delta(0)| of the {copy} copy",
                             measured=float(np.median(drift[:, i])), expected=None,
                             tolerance=None, passed=True, kind="measurement"))
        out.append(Claim(id=f"gauge_on_networks.transport_ratio:{opt}",
                         statement=f"{opt}: median over seeds of mu_T(a-heavy) / mu_T(w-heavy) "
                                   "= |w_w-heavy|^2 / |w_a-heavy|^2 at the end (s^4 at the start)",
                         measured=float(np.median(ratio)), expected=None, tolerance=None,
                         passed=True, kind="measurement"))
    return out


def _analyse(config, tasks, results, seed) -> tuple:
    data = _gather(tasks, results)
    arrays: dict = {"optimizers": np.array(list(data))}
    for opt, d in data.items():
        arrays |= {f"step_{opt}": d["step"], f"change_{opt}": d["change"],
                   f"predicted_{opt}": d["predicted"], f"delta0_{opt}": d["delta0"],
                   f"mu_T_{opt}": d["mu_T"], f"mu_R_{opt}": d["mu_R"], f"loss_{opt}": d["loss"]}
    claims = _checks(data) + _findings(config, data, arrays, seed) + _measurements(data, arrays)
    arrays["caption_gauge_on_networks_owner"] = np.array(
        "Share of seeds whose a-heavy copy owns the duplicated feature at the end, per optimizer, "
        "with the 95% interval of its finding (rule proportion); the dashed line is 1/2.")
    arrays["caption_gauge_on_networks_drift"] = np.array(
        "Cumulative change of delta = |a|^2 - |w|^2 of the a-heavy (left) and w-heavy (right) copy, "
        "relative to |delta(0)|, seed 0 of each optimizer: measured (lines) and predicted "
        "(crosses; none under Adam). The axis is logarithmic beyond 1e-6 in size.")
    wall = {t["optimizer"]: 0.0 for t in tasks}
    for t, r in zip(tasks, results):
        wall[t["optimizer"]] += float(r["wall_time_s"])
    return arrays, claims, {"wall_time_s": wall}


def _plot_owner(arrays, outdir):
    import matplotlib.pyplot as plt

    opts = [str(o) for o in arrays["optimizers"]]
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    for i, opt in enumerate(opts):
        p, lo, hi = arrays[f"owner_rate_{opt}"]
        ax.errorbar([i], [p], yerr=[[p - lo], [hi - p]], fmt="o", color=f"C{i}", capsize=4)
    ax.axhline(0.5, color="0.5", ls="--", lw=0.8)
    ax.set(xticks=range(len(opts)), xticklabels=opts, ylim=(0, 1.05),
           ylabel="a-heavy copy owns (share of seeds)")
    return gf.save(fig, outdir, "gauge_on_networks_owner", arrays)


def _plot_drift(arrays, outdir):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.0))
    for i, opt in enumerate(str(o) for o in arrays["optimizers"]):
        step = arrays[f"step_{opt}"]
        d0 = np.abs(arrays[f"delta0_{opt}"][0])
        for c, ax in enumerate(axes):
            ax.plot(step, arrays[f"change_{opt}"][0, :, c] / d0[c], color=f"C{i}", label=opt)
            ax.plot(step, arrays[f"predicted_{opt}"][0, :, c] / d0[c], color=f"C{i}", ls="none",
                    marker="x", markersize=3, markevery=max(1, step.size // 12))
    for ax, copy in zip(axes, ("a-heavy", "w-heavy")):
        ax.set(xlabel="step", title=copy)
        ax.set_yscale("symlog", linthresh=1e-6)
    axes[0].set_ylabel("(delta(t) - delta(0)) / |delta(0)|")
    return gf.save(fig, outdir, "gauge_on_networks_drift", arrays, legends=(axes[0],))


EXPERIMENT = GaugeOnNetworks()

"""Dimension scaling of the gauge measured on networks trained by finite-sample GD.

Claim 1 of derivations/theory.md section 2, on finite-sample full-batch GD (``n = n_factor * D``
Gaussian samples per seed, ``S`` seeds trained batched per configuration). The ``single`` set-up
in the w-heavy and the a-heavy gauge (strength ``D``). GD on the w-heavy neuron is stable only
for ``eta`` below about ``2 / (s D)`` (its reaction rate) while it specializes after a time of
order ``s D``, so its step count grows like ``D^2``; each gauge gets ``eta = c_gauge / (s D)``
(``c`` smaller for the a-heavy gauge, whose transport rate ``D / s`` is the fast one), and ``D``
stays small (the theory carries large ``D``, see the ``dimension_scaling`` experiment).
Specialization times come from linear interpolation of the alignment between recorded steps
(:func:`gaugedyn.training.crossing_time`); a run that never specializes counts at the end of its
run (a censored time, later than every measured one). Claims: the ratio of median specialization
times grows with ``D`` (95% t interval of the fitted exponent above 0) and its exponent agrees
with the population flow's over the same ``D`` within ``exponent_tolerance``. Seed intervals
(bootstrap of the medians, :mod:`gaugedyn.stats`) come from a generator derived from the tasks'
seeds.
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param
from ...stats import bootstrap_ci, generator, independent_ci, loglog_fit
from ...theory import Definitions, single, solve
from . import _figures as gf
from . import _training as gtr
from . import _trajectories as gt


def median_ratio_ci(w, a, rng) -> list[float]:
    """95% bootstrap interval of ``median(w) / median(a)``, the two samples resampled
    independently (:func:`gaugedyn.stats.independent_ci`, percentile)."""
    iv = independent_ci((w, a), lambda x, y, axis=-1: np.median(x, axis=axis)
                              / np.median(y, axis=axis), rng=rng)
    return [iv.low, iv.high]


class GaugeInTrainingScaling(Experiment):
    name = "gauge_in_training_scaling"
    description = "dimension scaling of the gauge on networks trained by finite-sample GD"
    params = {
        "dims": Param(list, [8, 16, 32, 64], quick=[8, 16, 32], lo=4, hi=256, min_len=3,
                      max_len=8, distinct=True, why="GD steps grow like D^2",
                      help="input dimensions D (steps grow like D^2)"),
        "seeds": Param(int, 24, quick=12, lo=2, hi=1000, why="seeds are trained in one batch",
                       help="seeds per configuration"),
        "scale": gtr.SCALE,
        "n_factor": gtr.N_FACTOR,
        "c_w": Param(float, 1.0, lo=0.0, lo_open=True, hi=1.5, why="GD stability: eta < 2 / (s D)",
                     help="w-heavy step eta = c_w / (s D)"),
        "c_a": Param(float, 0.05, lo=0.0, lo_open=True, hi=1.5, why="GD stability",
                     help="a-heavy step eta = c_a / (s D)"),
        "horizon": Param((int, float), 2.0, lo=1.0, lo_open=True, hi=10.0,
                         why="steps grow linearly with the horizon",
                         help="training time, in units of the flow's specialization time"),
        "exponent_tolerance": Param(float, 0.3, lo=0.0, lo_open=True, hi=1.0,
                                    why="a tolerance of 1 accepts D^1 for D^2",
                                    help="allowed distance of the trained ratio exponent from "
                                         "the flow's"),
        "threshold": gtr.THRESHOLD,
    }

    def tasks(self, config):
        out = []
        for D in sorted(config["dims"]):
            for g in gt.GAUGES:
                c = config["c_w"] if g == "w-heavy" else config["c_a"]
                out.append({"dim": int(D), "gauge": g, "c": c, "seeds": config["seeds"],
                            "horizon": config["horizon"], "scale": config["scale"],
                            "n_factor": config["n_factor"], "threshold": config["threshold"]})
        return out

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        D, s = task["dim"], float(task["scale"])
        definitions = Definitions(threshold=task["threshold"])
        problem = single(D, task["gauge"], scale=s)
        theory = solve(problem, stop_at_specialization=True, t_max=1e6, definitions=definitions)
        t_theory = float(np.min(theory.specialization_time))
        eta = task["c"] / (s * D)
        steps = int(np.ceil(task["horizon"] * t_theory / eta))
        cfg = TrainConfig(optimizer="gd", lr=eta, steps=steps, samples=task["n_factor"] * D,
                          points_per_decade=60)
        with single_thread():
            res = train(problem, cfg, seeds=task["seeds"], root_seed=integer_seed(seed), device="cpu",
                        definitions=definitions)
        return {"specialization_time": res.specialization_time()[:, 0],
                "theory_time": np.array(t_theory), "eta": np.array(eta),
                "steps": np.array(steps), "run_time": np.array(steps * eta),
                "wall_time_s": res.diagnostics.get("wall_time_s", np.nan)}

    def analyse(self, config, tasks, results, seed):
        rng = generator(seed, self.name)
        arrays = {}
        dims = sorted(config["dims"])
        med = {g: [] for g in gt.GAUGES}
        theory = {g: [] for g in gt.GAUGES}
        censored = {}
        n_missing = n_total = 0
        for task, res in zip(tasks, results):
            g, D = task["gauge"], task["dim"]
            ts = np.asarray(res["specialization_time"], dtype=float)
            arrays[f"spec_{g}_D{D}"] = ts
            n_missing += int(np.sum(~np.isfinite(ts)))
            n_total += ts.size
            end = float(res.get("run_time", np.inf))
            ts = np.where(np.isfinite(ts), ts, end)  # never specialized: at the end of the run
            censored[(g, D)] = ts
            med[g].append(float(np.median(ts)))
            theory[g].append(float(res["theory_time"]))
            arrays[f"spec_ci_{g}_D{D}"] = np.array(bootstrap_ci(ts, np.median, rng=rng).as_list())
            arrays[f"steps_{g}_D{D}"] = np.asarray(res["steps"])
        ratio = np.array(med["w-heavy"]) / np.array(med["a-heavy"])
        ratio_theory = np.array(theory["w-heavy"]) / np.array(theory["a-heavy"])
        ratio_ci = [median_ratio_ci(censored[("w-heavy", D)], censored[("a-heavy", D)], rng)
                    for D in dims]
        fit, fit_theory = loglog_fit(dims, ratio), loglog_fit(dims, ratio_theory)
        arrays |= {"dims": np.array(dims, dtype=float), "ratio": ratio,
                   "ratio_ci": np.array(ratio_ci), "ratio_theory": ratio_theory,
                   "median_w": np.array(med["w-heavy"]), "median_a": np.array(med["a-heavy"]),
                   "theory_w": np.array(theory["w-heavy"]), "theory_a": np.array(theory["a-heavy"]),
                   "fit": gf.fit_row(fit), "fit_theory": gf.fit_row(fit_theory),
                   "wall_time_s": gt.wall_times(results)}
        tol = config["exponent_tolerance"]
        claims = [
            Claim(id="gauge_in_training_scaling.ratio_grows",
                  statement=(f"trained by GD on n = {config['n_factor']} D samples "
                             f"({config['seeds']} seeds per point, D in {dims}), the ratio of "
                             "median specialization times w-heavy / a-heavy grows with D: fitted "
                             f"exponent (95% CI [{fit.slope_low:.3f}, {fit.slope_high:.3f}]) with "
                             f"the interval above 0; {n_missing} of {n_total} runs did not "
                             f"specialize within {config['horizon']:g} times the flow's time "
                             "(counted at the end of their run; at most 10% allowed)"),
                  measured=round(fit.slope, 4), expected="> 0 (interval)", tolerance=0.0,
                  passed=bool(fit.slope_low > 0 and n_missing <= 0.1 * n_total)),
            Claim(id="gauge_in_training_scaling.ratio_exponent_matches_flow",
                  statement=("the trained ratio exponent agrees with the population flow's over "
                             f"the same D (flow: {fit_theory.slope:.3f}; Theta(D^2) "
                             "asymptotically)"),
                  measured=round(fit.slope, 4), expected=round(fit_theory.slope, 4),
                  tolerance=tol, passed=bool(abs(fit.slope - fit_theory.slope) <= tol)),
        ]
        arrays["caption_gauge_in_training_scaling"] = np.array(
            "Specialization times of trained networks (markers: median over seeds, bars: 95% "
            "bootstrap interval) against D for both gauges, with the population flow (lines); "
            "right: their ratio with the fitted exponent, against the flow's ratio.")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        dims = arrays["dims"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for i, (g, key) in enumerate((("w-heavy", "w"), ("a-heavy", "a"))):
            m = arrays[f"median_{key}"]
            ci = np.array([arrays[f"spec_ci_{g}_D{int(D)}"] for D in dims])
            axes[0].errorbar(dims, m, yerr=[m - ci[:, 0], ci[:, 1] - m], fmt="o", color=f"C{i}",
                             label=f"trained, {g}")
            axes[0].plot(dims, arrays[f"theory_{key}"], color=f"C{i}", lw=1, label=f"flow, {g}")
        axes[0].set(xscale="log", yscale="log", xlabel="D", ylabel="specialization time")
        axes[0].legend(fontsize=7)
        r, ci = arrays["ratio"], arrays["ratio_ci"]
        axes[1].errorbar(dims, r, yerr=[r - ci[:, 0], ci[:, 1] - r], fmt="o",
                         label=f"trained, p = {arrays['fit'][0]:.2f}")
        axes[1].plot(dims, arrays["ratio_theory"], "k-", lw=1,
                     label=f"flow, p = {arrays['fit_theory'][0]:.2f}")
        axes[1].set(xscale="log", yscale="log", xlabel="D", ylabel="t_spec(w-heavy) / t_spec(a-heavy)")
        axes[1].legend(fontsize=7)
        names = [gf.save(fig, outdir, "gauge_in_training_scaling", arrays)]

        return names


EXPERIMENT = GaugeInTrainingScaling()

"""Finite-sample gradient descent converges to the population dynamics as ``n`` grows.

Claim 5 of THEORY.md section 2. The ``duplicates`` set-up (one a-heavy and one w-heavy copy at
gauge strength ``strength``) is trained by full-batch GD with step ``eta`` on ``n`` fixed Gaussian
samples, ``S`` seeds per ``n`` in one batched run. The reference is the population dynamics with
the same step (population GD, the Euler map of the flow, from :func:`gaugedyn.theory.solve`), so
the deviation measures the finite sample alone; the population flow is drawn too, and its distance
to population GD (the ``O(eta)`` discretisation bias) is reported. Per seed the deviation of an
observable is its root-mean-square difference from the reference over the recorded times (loss:
population loss of the trained weights; ``rho``: every student; alignment: the angle
``arccos m`` of every student); the median over seeds is fitted against ``n`` on log-log axes. Theory: deviation ``~ n^{-1/2}``.
"""

from __future__ import annotations

import numpy as np

from ..theory import duplicates, with_gauge
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param

OBSERVABLES = ("loss", "alignment", "rho")


def _metric(name, x):
    """Alignment deviations are measured as angles ``arccos m`` (linear in the weight error even
    where ``m`` is close to 1, where ``m`` itself moves only quadratically)."""
    return np.arccos(np.clip(x, -1.0, 1.0)) if name == "alignment" else x


def _ns_ok(v):
    return gc.int_list(3, 8, 10**6, distinct=False)(v) and max(v) / min(v) >= 100


class FiniteSample(Experiment):
    name = "finite_sample"
    description = "full-batch GD on n samples against population dynamics: deviation ~ n^-1/2"
    params = {
        "dim": Param(int, 5, check=lambda v: 2 <= v <= 1000, allowed="an integer in [2, 1000]",
                     help="input dimension D"),
        "ns": Param(list, [100, 300, 1000, 3000, 10000, 30000], quick=[100, 300, 1000, 3000, 10000],
                    check=gc.bounded(_ns_ok, ""),
                    allowed="a list of >= 3 integers in [8, 1e6] spanning at least two decades",
                    help="sample sizes n"),
        "seeds": Param(int, 96, quick=48, check=lambda v: 2 <= v <= 1000,
                       allowed="an integer in [2, 1000]", help="seeds per n (trained batched)"),
        "strength": Param((int, float), 2.0, check=lambda v: v >= 1, allowed="a number >= 1",
                          help="gauge strength lambda: a-heavy a^2 = s lambda, |w|^2 = s / lambda"),
        "eta": Param(float, 0.02, check=lambda v: 0 < v <= 0.2, allowed="a number in (0, 0.2]",
                     help="GD step size (time t = eta * steps)"),
        "t_max": Param((int, float), 8.0, quick=6.0, check=lambda v: 0 < v <= 1000,
                       allowed="a number in (0, 1000]", help="training time"),
        "tolerance": Param(float, 0.15, check=lambda v: 0 < v < 0.5, allowed="a number in (0, 0.5)",
                           help="allowed distance of each fitted exponent from -1/2"),
        "dtype": Param(str, "float64", check=lambda v: v in ("float32", "float64"),
                       allowed="float32 or float64", help="training precision"),
    }

    @staticmethod
    def problem(task):
        base = duplicates(task["dim"], ["a-heavy", "w-heavy"])
        return with_gauge(base, names=["a-heavy", "w-heavy"], strength=task["strength"])

    def tasks(self, config):
        keep = ("dim", "seeds", "strength", "eta", "t_max", "dtype")
        return [{"n": int(n), **{k: config[k] for k in keep}} for n in sorted(config["ns"])]

    def run_task(self, task, seed):
        from ..training import TrainConfig, train
        from ..training._support import root_of, single_thread

        problem = self.problem(task)
        eta = float(task["eta"])
        steps = int(round(task["t_max"] / eta))
        grid = np.unique(np.round(np.logspace(0, np.log10(steps), 60)).astype(int))
        cfg = TrainConfig(optimizer="gd", lr=eta, steps=steps, samples=task["n"],
                          record_steps=tuple(int(k) for k in grid))
        with single_thread():
            res = train(problem, cfg, seeds=task["seeds"], root_seed=root_of(seed),
                        dtype=task["dtype"], device="cpu")
        return {"t": res.time, "loss": res.loss, "loss_empirical": res.loss_empirical,
                "alignment": res.alignment()[..., 0], "rho": res.rho(),
                "wall_time_s": res.diagnostics["wall_time_s"]}

    def analyse(self, config, tasks, results):
        from ..training._support import band, match_times

        problem = self.problem(tasks[0])
        t = np.asarray(results[0]["t"])
        eta = float(config["eta"])
        gd = gc.trajectory(problem, t, dynamics="gd", eta=eta)
        flow = gc.trajectory(problem, t, rtol=1e-10, atol=1e-12)
        ig, jf = match_times(t, gd["t"]), match_times(t, flow["t"])
        ref = {"loss": gd["loss"][ig], "alignment": gd["alignment"][ig][..., 0], "rho": gd["rho"][ig]}
        ref_flow = {"loss": flow["loss"][jf], "alignment": flow["alignment"][jf][..., 0],
                    "rho": flow["rho"][jf]}
        ns = np.array([task["n"] for task in tasks], dtype=float)
        arrays = {"ns": ns, "t": t, "eta": np.array(eta)}
        for k in OBSERVABLES:
            arrays[f"gd_{k}"], arrays[f"flow_{k}"] = ref[k], ref_flow[k]
        claims = []
        fits = {}
        for k in OBSERVABLES:
            dev = []
            ref_k = _metric(k, ref[k])[None]
            for res in results:
                diff = _metric(k, np.asarray(res[k])) - ref_k
                dev.append(np.sqrt(np.mean(diff.reshape(diff.shape[0], -1) ** 2, axis=1)))
            dev = np.array(dev)  # (n, S): per-seed RMS deviation over the recorded times
            arrays[f"deviation_{k}"] = dev
            med = np.median(dev, axis=1)
            fit = gc.loglog_fit(ns, med)
            fits[k] = fit
            arrays[f"fit_{k}"] = gc.fit_row(fit)
            bias = float(np.max(np.abs(ref[k] - ref_flow[k])))
            arrays[f"eta_bias_{k}"] = np.array(bias)
            ok = abs(fit["slope"] + 0.5) <= config["tolerance"]
            claims.append(Claim(
                id=f"finite_sample.exponent_{k}",
                statement=(f"full-batch GD (eta = {eta:g}, D = {config['dim']}) on n samples: the "
                           f"RMS-over-time deviation of {k} from population GD over t <= "
                           f"{config['t_max']:g} (median over {config['seeds']} seeds) scales as "
                           f"n^p over n = {int(ns.min())}..{int(ns.max())}; fitted p (95% CI "
                           f"[{fit['ci'][0]:.3f}, {fit['ci'][1]:.3f}]); the population GD-to-flow "
                           f"distance (eta bias) is {bias:.2g}"),
                measured=round(fit["slope"], 4), expected=-0.5, tolerance=config["tolerance"],
                passed=bool(ok)))
        for k in OBSERVABLES:
            for i, res in enumerate(results):
                arrays[f"band_{k}_n{i}"] = band(np.asarray(res[k]).reshape(len(res[k]), len(t), -1)[..., 0])
        arrays["wall_time_s"] = gc.wall_times(results)
        arrays["caption_finite_sample_trajectories"] = np.array(
            f"The duplicates set-up (a-heavy and w-heavy copy, gauge strength {config['strength']:g}, "
            f"D = {config['dim']}) trained by full-batch GD with eta = {eta:g} on n samples: median "
            "(line) and 10-90% band over seeds for each n, against population GD (black) and the "
            "population flow (dashed). Loss is the closed-form population loss of the trained "
            "weights; alignment and rho are those of the a-heavy copy.")
        arrays["caption_finite_sample_deviation"] = np.array(
            "RMS-over-time deviation from population GD, median over seeds (markers, bars: "
            "10-90% of the per-seed values over seeds), against n, with the fitted power law and the n^-1/2 reference.")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        ns, t = arrays["ns"], arrays["t"]
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
        colors = plt.cm.viridis(np.linspace(0, 0.9, len(ns)))
        for ax, k in zip(axes, OBSERVABLES):
            for i, n in enumerate(ns):
                lo, med, hi = arrays[f"band_{k}_n{i}"]
                ax.plot(t[1:], med[1:], color=colors[i], lw=1, label=f"n = {int(n)}")
                ax.fill_between(t[1:], lo[1:], hi[1:], color=colors[i], alpha=0.25, lw=0)
            ref, fl = arrays[f"gd_{k}"], arrays[f"flow_{k}"]
            ax.plot(t[1:], (ref if ref.ndim == 1 else ref[:, 0])[1:], "k", lw=1.2, label="population GD")
            ax.plot(t[1:], (fl if fl.ndim == 1 else fl[:, 0])[1:], "k--", lw=1, label="population flow")
            ax.set(xscale="log", xlabel="t = eta * steps", title=k)
        axes[0].set_yscale("log")
        axes[0].legend(fontsize=6)
        names = [gc.save(fig, outdir, "finite_sample_trajectories", arrays)]

        fig, ax = plt.subplots(figsize=(5, 3.8))
        for j, k in enumerate(OBSERVABLES):
            dev = arrays[f"deviation_{k}"]
            med = np.median(dev, axis=1)
            lo, hi = np.quantile(dev, [0.1, 0.9], axis=1)
            ax.errorbar(ns, med, yerr=[med - lo, hi - med], fmt="o", color=f"C{j}", ms=4,
                        label=f"{k}: p = {arrays[f'fit_{k}'][0]:.3f}")
            slope, icpt = arrays[f"fit_{k}"][:2]
            ax.plot(ns, np.exp(icpt) * ns**slope, color=f"C{j}", lw=1)
        ax.plot(ns, med[0] * (ns / ns[0]) ** -0.5, "k:", lw=1, label="n^-1/2")
        ax.set(xscale="log", yscale="log", xlabel="samples n", ylabel="RMS deviation from population GD")
        ax.legend(fontsize=7)
        names.append(gc.save(fig, outdir, "finite_sample_deviation", arrays))
        return names


EXPERIMENT = FiniteSample()

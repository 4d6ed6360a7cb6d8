"""Specialization time of the ``single`` set-up against the input dimension, for both gauges.

Claim 1 of THEORY.md section 2: at a fixed initial function (``rho0 = s``, overlap ``D^-1/2``)
the w-heavy gauge (``|w0|^2 = s D``) specializes in a time ``Theta(D)`` and the a-heavy gauge
(``a0^2 = s D``) in ``Theta(1/D)``, so their ratio grows as ``D^2``. Each ``(D, gauge)`` is one
population-flow solve stopped at the specialization event; the exponents are least-squares fits
of ``log T`` on ``log D`` with Student-t confidence intervals.
"""

from __future__ import annotations

import numpy as np

from ..theory import Definitions, single
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param


class DimensionScaling(Experiment):
    name = "dimension_scaling"
    description = "specialization time against D for both gauges; the ratio grows as D^2"
    params = {
        "dims": Param(list, [10, 31, 100, 316, 1000, 3162, 10000, 31623, 100000],
                      quick=[10, 100, 1000, 10000, 100000],
                      check=gc.int_list(3, 2),
                      allowed="a list of at least 3 distinct integers >= 2",
                      help="input dimensions D"),
        "scale": gc.scale_param(),
        "threshold": gc.THRESHOLD,
        "large_dim": Param(int, 1000, check=lambda v: v >= 2, allowed="an integer >= 2",
                           help="the ratio exponent is fitted on D >= large_dim"),
        "exponent_tol": Param(float, 0.1, check=lambda v: v > 0, allowed="a number > 0",
                              help="allowed distance of each fitted exponent from theory"),
        "rtol": gc.rtol_param(1e-9, help="relative tolerance of the integrator"),
    }

    def tasks(self, config):
        return [{"dim": int(d), "gauge": g, "scale": float(config["scale"]),
                 "threshold": float(config["threshold"]), "rtol": float(config["rtol"])}
                for d in sorted(config["dims"]) for g in gc.GAUGES]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_max = 1e3 * task["dim"] / task["scale"]
        traj = gc.trajectory(problem, gc.time_grid(t_max, 8), rtol=task["rtol"],
                             definitions=Definitions(threshold=task["threshold"]),
                             stop_at_specialization=True)
        return {"specialization_time": traj["specialization_time"], **gc.diagnostics(traj)}

    def analyse(self, config, tasks, results):
        dims = np.array(sorted({t["dim"] for t in tasks}), dtype=float)
        times = {g: np.full(dims.size, np.nan) for g in gc.GAUGES}
        for task, res in zip(tasks, results):
            times[task["gauge"]][np.searchsorted(dims, task["dim"])] = res["specialization_time"]
        ratio = times["w-heavy"] / times["a-heavy"]
        large = dims >= config["large_dim"]
        fits = {g: gc.loglog_fit(dims[large], times[g][large]) for g in gc.GAUGES}
        fits["ratio"] = gc.loglog_fit(dims[large], ratio[large])
        fits_all = {g: gc.loglog_fit(dims, times[g]) for g in gc.GAUGES}
        fits_all["ratio"] = gc.loglog_fit(dims, ratio)
        tol = float(config["exponent_tol"])
        expected = {"w-heavy": 1.0, "a-heavy": -1.0, "ratio": 2.0}
        claims = []
        for key, cid, what in (("ratio", "ratio_exponent", "the ratio T(w-heavy)/T(a-heavy)"),
                               ("w-heavy", "w_heavy_exponent", "the w-heavy time"),
                               ("a-heavy", "a_heavy_exponent", "the a-heavy time")):
            f = fits[key]
            claims.append(Claim(
                id=f"dimension_scaling.{cid}",
                statement=(f"{what} grows as D^{expected[key]:g}: the log-log slope fitted on "
                           f"D >= {config['large_dim']} ({f['n']} dimensions) is within "
                           f"{tol:g} of {expected[key]:g} (95% CI from the fit: "
                           f"[{f['ci'][0]:.4f}, {f['ci'][1]:.4f}])"),
                measured=f["slope"], expected=expected[key], tolerance=tol,
                passed=bool(f["n"] >= 2 and abs(f["slope"] - expected[key]) <= tol)))
        arrays = {
            "dims": dims, "time_w_heavy": times["w-heavy"], "time_a_heavy": times["a-heavy"],
            "ratio": ratio, "large_dim": np.array(float(config["large_dim"])),
            **{f"fit_{k.replace('-', '_')}": gc.fit_row(fits[k]) for k in fits},
            **{f"fit_all_{k.replace('-', '_')}": gc.fit_row(fits_all[k]) for k in fits_all},
            "caption_dimension_scaling": np.array(
                "Specialization time (first t with alignment >= "
                f"{config['threshold']:g}) of the single set-up, rho0 = {config['scale']:g}, "
                "against input dimension D, for the w-heavy and a-heavy gauges at the same "
                "initial function, and their ratio. Lines: least-squares log-log fits on "
                f"D >= {config['large_dim']} with slopes (95% CI) in the legend; the ratio's "
                "slope is compared with 2."),
        }
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        dims = arrays["dims"]
        large = dims >= float(arrays["large_dim"])
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        series = (("w-heavy", arrays["time_w_heavy"], arrays["fit_w_heavy"], "C0", axes[0]),
                  ("a-heavy", arrays["time_a_heavy"], arrays["fit_a_heavy"], "C1", axes[0]),
                  ("ratio w/a", arrays["ratio"], arrays["fit_ratio"], "C2", axes[1]))
        for label, y, fit, color, ax in series:
            slope, icpt, lo, hi = fit
            ax.loglog(dims, y, "o", color=color,
                      label=f"{label}: slope {slope:.3f} [{lo:.3f}, {hi:.3f}]")
            xs = dims[large]
            if xs.size:
                ax.loglog(xs, np.exp(icpt) * xs**slope, "-", color=color, alpha=0.7)
        axes[0].set(xlabel="input dimension D", ylabel="specialization time T",
                    title="specialization time by gauge")
        axes[1].set(xlabel="input dimension D", ylabel="T(w-heavy) / T(a-heavy)",
                    title="ratio of specialization times (theory: D^2)")
        return [gc.save(fig, outdir, "dimension_scaling", arrays, legends=axes)]


EXPERIMENT = DimensionScaling()

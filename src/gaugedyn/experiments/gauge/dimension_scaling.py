"""Specialization time of the ``single`` set-up against the input dimension, for both gauges.

Claim 1 of derivations/theory.md section 2: at a fixed initial function (``rho0 = s``, overlap ``D^-1/2``)
the w-heavy gauge (``|w0|^2 = s D``) specializes in a time ``Theta(D)`` and the a-heavy gauge
(``a0^2 = s D``) in ``Theta(1/D)``, so their ratio grows as ``D^2``. Each ``(D, gauge)`` is one
population-flow solve stopped at the specialization event; the exponents are least-squares fits
of ``log T`` on ``log D`` over ``D >= large_dim`` only (:func:`gaugedyn.stats.loglog_fit`, Student-t
intervals). The residuals of a power law fitted to a pre-asymptotic curve are systematic, so the
t interval understates the uncertainty; the local slopes ``d log T / d log D`` between
consecutive dimensions (:func:`gaugedyn.stats.local_slopes`) are stored and drawn beside the fit
to show the drift. A ``dims`` list with fewer than three dimensions at or above ``large_dim`` is
refused before any work (:meth:`DimensionScaling.validate`).
"""

from __future__ import annotations

import numpy as np

from ..._errors import InputError
from ...harness import Claim, Experiment, Param
from ...stats import local_slopes, loglog_fit
from ...theory import Definitions, single
from . import _figures as gf
from . import _params as gp
from . import _trajectories as gt

MIN_FIT_DIMS = 3
"""Dimensions at or above ``large_dim`` that a fit with an interval needs."""


class DimensionScaling(Experiment):
    name = "dimension_scaling"
    description = "specialization time against D for both gauges; the ratio grows as D^2"
    params = {
        "dims": Param(list, [10, 31, 100, 316, 1000, 3162, 10000, 31623, 100000],
                      quick=[10, 100, 1000, 10000, 100000], lo=2, hi=gp.MAX_DIM, min_len=3,
                      max_len=40, distinct=True, why=gp.DIM_WHY, help="input dimensions D"),
        "scale": gp.scale_param(),
        "threshold": gp.THRESHOLD,
        "large_dim": Param(int, 1000, lo=2, hi=gp.MAX_DIM, why=gp.DIM_WHY,
                           help="the exponents are fitted on D >= large_dim"),
        "exponent_tol": Param(float, 0.1, lo=0.0, lo_open=True, hi=1.0,
                              why="a tolerance of 1 would accept D^1 for D^2",
                              help="allowed distance of each fitted exponent from theory"),
        "rtol": gp.rtol_param(1e-9, help="relative tolerance of the integrator"),
    }

    def validate(self, config: dict) -> None:
        """Refuse a ``dims`` list whose fit cannot be done: fewer than three dimensions at or
        above ``large_dim``."""
        above = sorted(d for d in config["dims"] if d >= config["large_dim"])
        if len(above) < MIN_FIT_DIMS:
            raise InputError(
                f"dims = {sorted(config['dims'])} with large_dim = {config['large_dim']} is not "
                f"allowed; allowed: at least {MIN_FIT_DIMS} dimensions >= large_dim (the fit "
                f"needs them; these have {len(above)}: {above})")

    def tasks(self, config):
        return [{"dim": int(d), "gauge": g, "scale": float(config["scale"]),
                 "threshold": float(config["threshold"]), "rtol": float(config["rtol"])}
                for d in sorted(config["dims"]) for g in gt.GAUGES]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_max = 1e3 * task["dim"] / task["scale"]
        traj = gt.trajectory(problem, gt.time_grid(t_max, 8), rtol=task["rtol"],
                             definitions=Definitions(threshold=task["threshold"]),
                             stop_at_specialization=True)
        return {"specialization_time": traj["specialization_time"], **gt.diagnostics(traj)}

    def analyse(self, config, tasks, results, seed):
        dims = np.array(sorted({t["dim"] for t in tasks}), dtype=float)
        times = {g: np.full(dims.size, np.nan) for g in gt.GAUGES}
        for task, res in zip(tasks, results):
            times[task["gauge"]][np.searchsorted(dims, task["dim"])] = res["specialization_time"]
        ratio = times["w-heavy"] / times["a-heavy"]
        large = dims >= config["large_dim"]
        fits = {g: loglog_fit(dims[large], times[g][large]) for g in gt.GAUGES}
        fits["ratio"] = loglog_fit(dims[large], ratio[large])
        fits_all = {g: loglog_fit(dims, times[g]) for g in gt.GAUGES}
        fits_all["ratio"] = loglog_fit(dims, ratio)
        tol = float(config["exponent_tol"])
        expected = {"w-heavy": 1.0, "a-heavy": -1.0, "ratio": 2.0}
        claims = []
        for key, cid, what in (("ratio", "ratio_exponent", "the ratio T(w-heavy)/T(a-heavy)"),
                               ("w-heavy", "w_heavy_exponent", "the w-heavy time"),
                               ("a-heavy", "a_heavy_exponent", "the a-heavy time")):
            f = fits[key]
            y = ratio if key == "ratio" else times[key]
            local = ", ".join(f"{v:.3f}" for v in local_slopes(dims, y))
            claims.append(Claim(
                id=f"dimension_scaling.{cid}",
                statement=(f"{what} grows as D^{expected[key]:g}: the log-log slope fitted on "
                           f"D >= {config['large_dim']} only ({f.n} dimensions) is within "
                           f"{tol:g} of {expected[key]:g} (t interval from the fit: "
                           f"[{f.slope_low:.4f}, {f.slope_high:.4f}]; it understates the "
                           f"uncertainty where the local slopes drift: {local})"),
                measured=f.slope, expected=expected[key], tolerance=tol,
                passed=bool(f.n >= 2 and abs(f.slope - expected[key]) <= tol)))
        arrays = {
            "dims": dims, "time_w_heavy": times["w-heavy"], "time_a_heavy": times["a-heavy"],
            "ratio": ratio, "large_dim": np.array(float(config["large_dim"])),
            "local_slope_ratio": local_slopes(dims, ratio),
            **{f"local_slope_{g.replace('-', '_')}": local_slopes(dims, times[g]) for g in gt.GAUGES},
            **{f"fit_{k.replace('-', '_')}": gf.fit_row(fits[k]) for k in fits},
            **{f"fit_all_{k.replace('-', '_')}": gf.fit_row(fits_all[k]) for k in fits_all},
            "caption_dimension_scaling": np.array(
                "Specialization time (first t with alignment >= "
                f"{config['threshold']:g}) of the single set-up, rho0 = {config['scale']:g}, "
                "against input dimension D, for the w-heavy and a-heavy gauges at the same "
                "initial function, and their ratio. Lines: least-squares log-log fits on "
                f"D >= {config['large_dim']} only, with slopes (t interval) in the legend; the "
                "ratio's slope is compared with 2. Inset numbers: the local slopes between "
                "consecutive D, which drift towards the asymptotic exponent."),
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
        mid = np.sqrt(dims[1:] * dims[:-1])
        for v, x, yv in zip(arrays["local_slope_ratio"], mid, np.sqrt(arrays["ratio"][1:]
                                                                     * arrays["ratio"][:-1])):
            axes[1].annotate(f"{v:.2f}", (x, yv), fontsize=6, color="C2",
                             textcoords="offset points", xytext=(0, 6), ha="center")
        axes[0].set(xlabel="input dimension D", ylabel="specialization time T",
                    title="specialization time by gauge")
        axes[1].set(xlabel="input dimension D", ylabel="T(w-heavy) / T(a-heavy)",
                    title="ratio of specialization times (theory: D^2)")
        return [gf.save(fig, outdir, "dimension_scaling", arrays, legends=axes)]


EXPERIMENT = DimensionScaling()

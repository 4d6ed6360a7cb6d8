"""Population gradient descent against the flow: first-order convergence.

Claim 4 of derivations/theory.md section 2 (second half, the step size). Two duplicates at ``D``
(copy 0 a-heavy, copy 1 w-heavy) are followed by the population flow (tight tolerance) and by
population gradient descent ``theta -> theta - eta grad L`` for several steps ``eta``, step ``k``
at time ``k eta``. The GD specialization time is read between the two steps that bracket the
threshold (linear interpolation of the alignment), so its error against the flow's is the
method's global error, ``O(eta)`` for the Euler map: the fitted log-log slope of the relative
error against ``eta`` is compared with 1 (:func:`gaugedyn.stats.loglog_fit`). The selection under
GD is the ``gd_selection`` experiment.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...harness import Claim, Experiment, Param
from ...stats import loglog_fit
from ...theory import Definitions, duplicates
from ...training import crossing_time
from . import _figures as gf
from . import _params as gp
from . import _trajectories as gt

GAUGES = ("a-heavy", "w-heavy")
"""Copy 0 and copy 1 of the duplicates."""

ETA_WHY = "GD on the w-heavy copy is unstable above about 2 / (s D)"


@functools.lru_cache(maxsize=8)
def flow_reference(dim: int, scale: float, threshold: float, t_end: float) -> dict:
    """The flow of the two duplicates (tight tolerance), shared by the tasks of one process."""
    problem = duplicates(dim, list(GAUGES), scale=scale)
    return gt.trajectory(problem, gt.time_grid(t_end, 200, 1e-6), rtol=1e-11, atol=1e-13,
                         definitions=Definitions(threshold=threshold))


class GradientDescent(Experiment):
    name = "gradient_descent"
    description = "population GD with step eta against the flow: O(eta) specialization-time error"
    params = {
        "dim": gp.dim_param(30, hi=10**4, why="GD steps to specialization grow like D"),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of each copy"),
        "etas": Param(list, [5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3], quick=[1e-4, 3e-4, 1e-3, 3e-3],
                      lo=1e-7, hi=0.1, hi_open=True, min_len=3, max_len=20, distinct=True,
                      why=ETA_WHY, help="step sizes for the specialization-time error"),
        "threshold": gp.THRESHOLD,
        "slope_tol": Param(float, 0.1, lo=0.0, lo_open=True, hi=1.0,
                           why="a slope within 1 of 1 would accept second order",
                           help="allowed distance of the fitted error slope from 1"),
    }

    def tasks(self, config):
        common = {"dim": config["dim"], "scale": config["scale"], "threshold": config["threshold"]}
        return [{"eta": float(e), **common} for e in sorted(config["etas"])]

    def run_task(self, task, seed):
        problem = duplicates(task["dim"], list(GAUGES), scale=task["scale"])
        definitions = Definitions(threshold=task["threshold"])
        eta = task["eta"]
        # the a-heavy copy specializes within O(1/(s D)); 2/(s D) + 4 steps bracket it
        t_max = eta * math.ceil((2.0 / (task["scale"] * task["dim"]) + 4 * eta) / eta)
        grid = np.arange(0, round(t_max / eta) + 1) * eta
        tr = gt.trajectory(problem, grid, dynamics="gd", eta=eta, definitions=definitions)
        m = tr["alignment"].max(axis=(1, 2))
        flow = flow_reference(task["dim"], task["scale"], task["threshold"], 2.0)
        return {"specialization_time": float(crossing_time(tr["t"], m, task["threshold"])),
                "step_time": tr["specialization_time"], "steps": len(tr["t"]) - 1,
                "flow_time": float(flow["specialization_time"])}

    def analyse(self, config, tasks, results, seed):
        t_flow = float(results[0]["flow_time"])
        etas = np.array([t["eta"] for t in tasks])
        t_gd = np.array([float(r["specialization_time"]) for r in results])
        rel = np.abs(t_gd - t_flow) / t_flow
        fit = loglog_fit(etas, rel)
        tol = float(config["slope_tol"])
        claims = [
            Claim(id="gradient_descent.error_slope",
                  statement=("the relative error of the GD specialization time against the flow's "
                             f"(T_flow = {t_flow:.6g}) scales as eta^1: fitted log-log slope over "
                             f"eta in [{etas.min():g}, {etas.max():g}] within {tol:g} of 1 (95% CI "
                             f"[{fit.slope_low:.3f}, {fit.slope_high:.3f}])"),
                  measured=fit.slope, expected=1.0, tolerance=tol,
                  passed=bool(np.isfinite(fit.slope) and abs(fit.slope - 1.0) <= tol)),
        ]
        arrays = {
            "etas": etas, "time_gd": t_gd, "time_flow": np.array(t_flow), "relative_error": rel,
            "fit": gf.fit_row(fit),
            "caption_gd_error": np.array(
                f"Two duplicates at D = {config['dim']} (a-heavy, w-heavy): relative error of the "
                "population-GD specialization time against the flow's, against the step eta, with "
                "the least-squares log-log fit (slope and 95% CI in the legend; first order: "
                "slope 1)."),
        }
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        etas, rel = arrays["etas"], arrays["relative_error"]
        slope, icpt, lo, hi = arrays["fit"]
        fig, ax = plt.subplots()
        ax.loglog(etas, rel, "o", label="|T_gd - T_flow| / T_flow")
        ax.loglog(etas, np.exp(icpt) * etas**slope, "-",
                  label=f"fit: slope {slope:.3f} [{lo:.3f}, {hi:.3f}]")
        ax.set(xlabel="step size eta", ylabel="relative error of specialization time",
               title="gradient descent against the flow")
        ax.legend()
        names = [gf.save(fig, outdir, "gd_error", arrays)]

        return names


EXPERIMENT = GradientDescent()

"""Population gradient descent against the flow: first-order convergence.

The protocol (set-up, claims and their rules, fixed before any run) is the ``gradient_descent``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.gradient_descent()` turns the results into
claims and `._figures.gradient_descent()` draws the figures.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...harness import Experiment, Param
from ...theory import Definitions, duplicates
from ...training import crossing_time
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt

GAUGES = ("a-heavy", "w-heavy")
"""Copy 0 and copy 1 of the duplicates."""

ETA_WHY = "GD on the w-heavy copy is unstable above about 2 / (s D)"


@functools.lru_cache(maxsize=8)
def flow_reference(dim: int, scale: float, threshold: float, t_end: float) -> dict:
    """The flow of the two duplicates (tight tolerance), shared by the tasks of one process."""
    problem = duplicates(dim, list(GAUGES), scale=scale)
    return gt.trajectory(
        problem,
        gt.time_grid(t_end, 200, 1e-6),
        rtol=1e-11,
        atol=1e-13,
        definitions=Definitions(threshold=threshold),
    )


class GradientDescent(Experiment):
    name = "gradient_descent"
    description = "population GD with step eta against the flow: O(eta) specialization-time error"
    params = {
        "dim": gp.dim_param(30, hi=10**4, why="GD steps to specialization grow like D"),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of each copy"),
        "etas": Param(
            list,
            [5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3],
            quick=[1e-4, 3e-4, 1e-3, 3e-3],
            lo=1e-7,
            hi=0.1,
            hi_open=True,
            min_len=3,
            max_len=20,
            distinct=True,
            why=ETA_WHY,
            help="step sizes for the specialization-time error",
        ),
        "threshold": gp.THRESHOLD,
        "slope_tol": Param(
            float,
            0.1,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            why="a slope within 1 of 1 would accept second order",
            help="allowed distance of the fitted error slope from 1",
        ),
    }

    def controls(self, config):
        return gc.controls("power_law", "pruning")

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
        return {
            "specialization_time": float(crossing_time(tr["t"], m, task["threshold"])),
            "step_time": tr["specialization_time"],
            "steps": len(tr["t"]) - 1,
            "flow_time": float(flow["specialization_time"]),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.gradient_descent(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.gradient_descent(arrays, config, outdir)


EXPERIMENT = GradientDescent()

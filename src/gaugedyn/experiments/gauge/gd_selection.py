"""Population gradient descent with small steps keeps the selection of the flow.

The protocol (set-up, claims and their rules, fixed before any run) is the ``gd_selection``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.gd_selection()` turns the results into
claims and `._figures.gd_selection()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from ...theory import Definitions, duplicates
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt
from .gradient_descent import ETA_WHY, GAUGES, flow_reference


class GDSelection(Experiment):
    name = "gd_selection"
    description = "population GD with small steps keeps the selection: owner and pruning"
    params = {
        "dim": gp.dim_param(30, hi=10**4, why="GD steps to t_end grow like D"),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of each copy"),
        "selection_etas": Param(
            list,
            [1e-3, 3e-3, 1e-2],
            quick=[3e-3, 1e-2],
            lo=1e-6,
            hi=0.1,
            hi_open=True,
            min_len=1,
            max_len=20,
            distinct=True,
            why=ETA_WHY,
            help="step sizes that must keep the selection",
        ),
        "t_end": Param(
            (int, float),
            2.0,
            lo=0.0,
            lo_open=True,
            hi=1e3,
            why="t_end / eta GD steps per run",
            help="time by which GD must have pruned the w-heavy copy",
        ),
        "threshold": gp.THRESHOLD,
    }

    def controls(self, config):
        return gc.controls("owner", "pruning")

    def tasks(self, config):
        common = {"dim": config["dim"], "scale": config["scale"], "threshold": config["threshold"]}
        return [
            {"eta": float(e), "t_end": config["t_end"], **common}
            for e in sorted(config["selection_etas"])
        ]

    def run_task(self, task, seed):
        from ...theory import owners

        problem = duplicates(task["dim"], list(GAUGES), scale=task["scale"])
        eta = task["eta"]
        tr = gt.trajectory(
            problem,
            gt.time_grid(task["t_end"], 60, eta),
            dynamics="gd",
            eta=eta,
            definitions=Definitions(threshold=task["threshold"]),
        )
        d0 = tr["delta"][0]
        scale0 = tr["a"][0] ** 2 + np.diagonal(tr["Q"][0])
        b, T = problem.b, problem.V @ problem.V.T
        flow = flow_reference(task["dim"], task["scale"], task["threshold"], task["t_end"])
        return {
            "t": tr["t"],
            "rho": tr["rho"],
            "owner": int(owners(tr["a"][-1], tr["Q"][-1], tr["R"][-1], T, b)[0]),
            "pruning_time": tr["pruning_time"],
            "delta_drift": float(np.max(np.abs(tr["delta"] - d0) / scale0)),
            "flow_t": flow["t"],
            "flow_rho": flow["rho"],
        }

    def analyse(self, config, tasks, results, seed):
        return ga.gd_selection(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.gd_selection(arrays, config, outdir)


EXPERIMENT = GDSelection()

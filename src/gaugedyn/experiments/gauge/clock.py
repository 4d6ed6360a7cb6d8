"""Opposite gauges follow different paths, not the same path on different clocks.

The protocol (set-up, claims and their rules, fixed before any run) is the ``clock``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.clock()` turns the results into
claims and `._figures.clock()` draws the figures.
"""

from __future__ import annotations

from ...harness import Choice, Experiment, Param
from ...theory import Definitions, single
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt


class Clock(Experiment):
    name = "clock"
    description = "paths of opposite gauges in the (rho, alignment) plane and their clocks"
    definitions = {
        "reaction_clock": "C_R(t) = int_0^t (a^2 + |w|^2) ds along the trajectory",
        "transport_clock": "C_T(t) = int_0^t |w|^-2 ds along the trajectory",
        "clock_separation": "[C_T/C_R](a-heavy, at its T_spec) / [C_T/C_R](w-heavy, at its T_spec)",
        "path": "(rho, alignment) resampled by arc length; distance: Hausdorff (Frechet beside)",
    }
    measures = gp.FINDING_MEASURES
    params = {
        "dim": gp.dim_param(hi=10**5, why="the w-heavy run to t_max must reach its T_spec ~ D"),
        "scale": gp.scale_param(),
        "t_max": gp.T_MAX_BOTH,
        "n_times": gp.n_times_param(1200, 500, 50),
        "n_path": Param(
            int,
            800,
            quick=300,
            lo=20,
            hi=5000,
            why="the Frechet table costs n_path^2 Python steps",
            help="points per path after resampling by arc length",
        ),
        "threshold": gp.THRESHOLD,
        "path_bound": Param(
            float,
            0.2,
            lo=0.0,
            lo_open=True,
            hi=2.0,
            why="both paths lie in [0, 1] x [-1, 1] near the teacher",
            help="Hausdorff distance the two paths must exceed",
        ),
        "clock_exponent": Param(
            float,
            1.0,
            lo=0.0,
            hi=4.0,
            why="the mobility ratio at t = 0 is about D^2",
            help="claimed: clock separation > D^clock_exponent",
        ),
    }

    space = {
        "threshold": Choice(
            values=(0.9, 0.99),
            why="the paper names no alignment at which a feature counts as learned; 0.9 to "
            "0.99 all read the same specialization",
        ),
        "scale": Choice(
            values=(0.5, 2.0),
            why="the paper gives no initial coefficient; a factor 2 either side of rho0 = 1",
        ),
    }

    def controls(self, config):
        return gc.controls("path", "clock", "specialization")

    def tasks(self, config):
        return [
            {
                "dim": int(config["dim"]),
                "gauge": g,
                "scale": float(config["scale"]),
                "t_max": float(config["t_max"]),
                "n_times": int(config["n_times"]),
                "threshold": float(config["threshold"]),
            }
            for g in gt.GAUGES
        ]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        grid = gt.time_grid(task["t_max"], task["n_times"], t_min=1e-4 / task["dim"] ** 2)
        traj = gt.trajectory(problem, grid, definitions=Definitions(threshold=task["threshold"]))
        mu_r, mu_t = gt.mobilities(traj["a"], traj["Q"])
        return {
            "t": traj["t"],
            "rho": traj["rho"][:, 0],
            "alignment": traj["alignment"][:, 0, 0],
            "mu_R": mu_r[:, 0],
            "mu_T": mu_t[:, 0],
            "specialization_time": traj["specialization_time"],
            **gt.diagnostics(traj),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.clock(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.clock(arrays, config, outdir)


EXPERIMENT = Clock()

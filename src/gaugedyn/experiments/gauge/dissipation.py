"""Reaction and transport dissipation along the two gauges' trajectories.

The protocol (set-up, claims and their rules, fixed before any run) is the ``dissipation``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.dissipation()` turns the results into
claims and `._figures.dissipation()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from ...theory import single
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _quadrature as quad
from . import _trajectories as gt


class Dissipation(Experiment):
    name = "dissipation"
    description = (
        "reaction and transport dissipation for both gauges; their integral is the loss drop"
    )
    definitions = {
        "reaction": "mu_R (dL~/drho)^2 = (dL/da)^2 + (u.dL/dw)^2 (closed form)",
        "transport": "mu_T |P grad_u L~|^2 = |dL/dw|^2 - (u.dL/dw)^2 (closed form)",
        "reaction_fd": "(d rho/dt)^2 / mu_R from the stored trajectory",
        "transport_fd": "(dm/dt)^2 / ((1 - m^2) mu_T) from the stored trajectory",
        "split_gap": "int |FD - closed form| dt / int closed form dt",
    }
    params = {
        "dim": gp.dim_param(hi=10**5, why="the w-heavy run to t_max must reach its T_spec ~ D"),
        "scale": gp.scale_param(),
        "t_max": gp.T_MAX_BOTH,
        "per_decade": Param(
            int,
            200,
            quick=60,
            lo=20,
            hi=2000,
            why="memory: the grid has per_decade x ~14 decades of states",
            help="output times per decade (the quadrature grid)",
        ),
        "rtol_balance": Param(
            float,
            1e-5,
            lo=0.0,
            lo_open=True,
            hi=0.1,
            why="a looser balance no longer tests the integrator",
            help="allowed relative gap between integrated dissipation and loss drop",
        ),
        "split_rtol": Param(
            float,
            1e-2,
            lo=0.0,
            lo_open=True,
            hi=0.5,
            why="beyond, a wrong split of the dissipation would pass",
            help="allowed integrated gap between each part from finite "
            "differences and its closed form",
        ),
    }

    def controls(self, config):
        return gc.controls("dissipation")

    def tasks(self, config):
        return [
            {
                "gauge": g,
                "dim": config["dim"],
                "scale": config["scale"],
                "t_max": config["t_max"],
                "per_decade": config["per_decade"],
            }
            for g in gt.GAUGES
        ]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_min = 1e-6 / (task["dim"] * task["scale"])
        n = int(np.ceil(task["per_decade"] * np.log10(task["t_max"] / t_min)))
        n += n % 2  # an odd number of Simpson nodes after t = 0
        grid = gt.time_grid(task["t_max"], n + 1, t_min=t_min)
        tr = gt.trajectory(problem, grid, rtol=1e-9, atol=1e-12)
        reaction, transport = tr["reaction"].sum(axis=1), tr["transport"].sum(axis=1)
        mu_r, mu_t = gt.mobilities(tr["a"], tr["Q"])
        return {
            "t": tr["t"],
            "loss": tr["loss"],
            "reaction": reaction,
            "transport": transport,
            "rho": tr["rho"][:, 0],
            "alignment": tr["alignment"][:, 0, 0],
            "mu_R": mu_r[:, 0],
            "mu_T": mu_t[:, 0],
            "integral_reaction": quad.integrate_log(tr["t"], reaction),
            "integral_transport": quad.integrate_log(tr["t"], transport),
            "specialization_time": tr["specialization_time"],
            **gt.diagnostics(tr),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.dissipation(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.dissipation(arrays, config, outdir)


EXPERIMENT = Dissipation()

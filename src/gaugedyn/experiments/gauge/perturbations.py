"""Selection under visible perturbations of the initial function: a phase diagram.

The protocol (set-up, claims and their rules, fixed before any run) is the ``perturbations``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.perturbations()` turns the results into
claims and `._figures.perturbations()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from ...theory import Definitions, duplicates, perturb, with_gauge
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt


class Perturbations(Experiment):
    name = "perturbations"
    description = "selection probability over perturbation size and gauge strength"
    params = {
        "strengths": Param(
            list,
            [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0],
            quick=[1.0, 2.0, 5.0, 20.0, 100.0],
            lo=1.0,
            hi=1e4,
            min_len=2,
            max_len=20,
            distinct=True,
            check=lambda v: 1.0 in v,
            why="the mobility ratio lambda^2 stays below 1e8",
            allowed="a list of at least 2 and at most 20 distinct numbers in [1, 10000] that contains 1 "
            "(upper bound: the mobility ratio lambda^2 stays below 1e8)",
            help="gauge strengths lambda (1: symmetric control)",
        ),
        "epsilons": Param(
            list,
            [0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
            quick=[0.01, 0.03, 0.1, 0.3, 1.0],
            lo=0.0,
            lo_open=True,
            hi=2.0,
            min_len=2,
            max_len=20,
            distinct=True,
            why="a perturbation of twice the function is no longer small",
            help="perturbation sizes epsilon",
        ),
        "n_samples": Param(
            int,
            64,
            quick=16,
            lo=4,
            hi=4096,
            why="one batch of n_samples x epsilons trajectories per strength",
            help="perturbed initial functions per (epsilon, lambda) cell",
        ),
        "dim": gp.dim_param(help="input dimension D (sets the initial overlap D^-1/2)"),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of each copy"),
        "t_max": Param(
            (int, float),
            100.0,
            lo=0.0,
            lo_open=True,
            hi=1e6,
            why="the stiff integrator's steps grow with the horizon",
            help="time at which the owner is read",
        ),
        "claim_strength": Param(
            (int, float),
            2.0,
            lo=1.0,
            lo_open=True,
            hi=1e4,
            why="the largest strength allowed",
            help="the claimed win-every-time region has lambda >= this",
        ),
        "claim_epsilon": Param(
            (int, float),
            0.1,
            lo=0.0,
            lo_open=True,
            hi=2.0,
            why="the largest perturbation allowed",
            help="the claimed win-every-time region has epsilon <= this",
        ),
        "rtol": gp.rtol_param(1e-6),
    }

    def controls(self, config):
        return gc.controls("owner")

    def tasks(self, config):
        keep = ("n_samples", "dim", "scale", "t_max", "rtol")
        return [
            {
                "strength": float(lam),
                "epsilons": [float(e) for e in sorted(config["epsilons"])],
                **{k: config[k] for k in keep},
            }
            for lam in sorted(config["strengths"])
        ]

    def run_task(self, task, seed):
        base = duplicates(task["dim"], ["balanced", "balanced"], scale=task["scale"])
        problem = with_gauge(base, names=["a-heavy", "w-heavy"], strength=task["strength"])
        n = task["n_samples"]
        problems = []
        for eps, child in zip(task["epsilons"], seed.spawn(len(task["epsilons"]))):
            rng = np.random.default_rng(child)
            problems += [perturb(problem, eps, rng) for _ in range(n)]
        grid = gt.time_grid(task["t_max"], 30, t_min=1e-3 / task["strength"])
        trajs = gt.trajectories_or_none(
            problems, grid, rtol=task["rtol"], atol=1e-9, definitions=Definitions()
        )
        owner = np.array([-1 if tr is None else int(tr["owner"][0]) for tr in trajs])
        pruned = np.array(
            [False if tr is None else bool(np.isfinite(tr["pruning_time"][1])) for tr in trajs]
        )
        shape = (len(task["epsilons"]), n)
        return {
            "owner": owner.reshape(shape),
            "loser_pruned": pruned.reshape(shape),
            "rho0": np.array([p.rho for p in problems]).reshape(shape + (2,)),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.perturbations(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.perturbations(arrays, config, outdir)


EXPERIMENT = Perturbations()

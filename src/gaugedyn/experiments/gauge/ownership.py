"""Among duplicate students, the one with the favourable gauge owns the teacher feature.

The protocol (set-up, claims and their rules, fixed before any run) is the ``ownership``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.ownership()` turns the results into
claims and `._figures.ownership()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from ...theory import Definitions, duplicates, owners, remaining_relative
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt


class Ownership(Experiment):
    name = "ownership"
    description = "K duplicates, favourable gauge on each index in turn: owner and pruning"
    definitions = {
        "owner": "the unique student with the largest share sign(b) rho_i m_i (ties: -1)",
        "remaining_function": "||sum_{i not owner} rho_i relu(u_i.x)||_{L2(N(0, I))} / ||f*||",
        "pruning_time": "first output time from which |rho_i| < prune_tol at every later time",
    }
    params = {
        "Ks": Param(
            list,
            [2, 3, 5, 8],
            lo=2,
            hi=16,
            min_len=1,
            max_len=8,
            distinct=True,
            why="the batch holds K runs of K copies: memory K^3 per output time",
            help="numbers of duplicate students",
        ),
        "dim": gp.dim_param(),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of every copy"),
        "t_check": Param(
            (int, float),
            2.0,
            lo=0.0,
            lo_open=True,
            hi=1e6,
            why="the stiff integrator's steps grow with the horizon",
            help="the stated time at which owner and pruning are checked",
        ),
        "prune_tol": Param(
            float,
            1e-3,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="|rho| of the teacher's owner is 1",
            help="|rho| below which a copy counts as pruned",
        ),
        "function_tol": Param(
            float,
            1e-3,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            hi_open=True,
            why="relative to ||f*||, 1 is no pruning at all",
            help="remaining function / ||f*|| below which it counts as zero",
        ),
        "threshold": gp.THRESHOLD,
        "n_times": gp.n_times_param(160, 100, 20),
        "rtol": gp.rtol_param(1e-8),
    }

    def controls(self, config):
        return gc.controls("owner", "pruning")

    def tasks(self, config):
        keep = ("dim", "scale", "t_check", "prune_tol", "threshold", "n_times", "rtol")
        return [{"K": int(K), **{k: config[k] for k in keep}} for K in sorted(config["Ks"])]

    def run_task(self, task, seed):
        K = task["K"]
        problems = []
        for j in range(K):
            gauges = ["w-heavy"] * K
            gauges[j] = "a-heavy"
            problems.append(duplicates(task["dim"], gauges, scale=task["scale"]))
        definitions = Definitions(threshold=task["threshold"], prune_tol=task["prune_tol"])
        grid = gt.time_grid(task["t_check"], task["n_times"], t_min=1e-4 / task["dim"])
        trajs = gt.trajectories(problems, grid, definitions=definitions, rtol=task["rtol"])
        b, T = problems[0].b, problems[0].V @ problems[0].V.T
        last = [(tr["a"][-1], tr["Q"][-1], tr["R"][-1]) for tr in trajs]
        return {
            "t": trajs[0]["t"],
            "rho": np.stack([tr["rho"] for tr in trajs]),
            "owner": np.array([int(owners(a, Q, R, T, b)[0]) for a, Q, R in last]),
            "pruning_time": np.stack([tr["pruning_time"] for tr in trajs]),
            "specialization_time": np.array([tr["specialization_time"] for tr in trajs]),
            "remaining": np.array([float(remaining_relative(a, Q, R, T, b)) for a, Q, R in last]),
            "nsteps_max": max(int(tr["diagnostics"].get("nsteps", 0)) for tr in trajs),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.ownership(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.ownership(arrays, config, outdir)


EXPERIMENT = Ownership()

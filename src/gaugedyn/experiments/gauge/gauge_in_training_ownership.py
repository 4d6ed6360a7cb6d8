"""Ownership of the teacher feature measured on networks trained by finite-sample GD.

The protocol (set-up, claims and their rules, fixed before any run) is the ``gauge_in_training_ownership``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.gauge_in_training_ownership()` turns the results into
claims and `._figures.gauge_in_training_ownership()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ..._meta import rng as meta_rng
from ...harness import Experiment, Param
from ...theory import Definitions, duplicates, owners, perturb, remaining_relative, solve
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp


class GaugeInTrainingOwnership(Experiment):
    name = "gauge_in_training_ownership"
    description = "ownership of the feature among duplicates trained by finite-sample GD"
    params = {
        "Ks": Param(
            list,
            [2, 3, 5],
            quick=[2, 3],
            lo=2,
            hi=12,
            min_len=1,
            max_len=8,
            distinct=True,
            why="GD's stable step falls as 1 / K",
            help="numbers of duplicates",
        ),
        "dim": Param(int, 16, lo=4, hi=256, why="steps grow like D", help="D of the duplicates"),
        "seeds": Param(
            int,
            64,
            quick=24,
            lo=2,
            hi=2000,
            why="seeds are trained in one batch",
            help="seeds per K",
        ),
        "epsilon": Param(
            float,
            0.02,
            lo=0.0,
            hi=0.2,
            why="a perturbation beyond 0.2 is no longer small",
            help="per-seed visible perturbation of the initial function",
        ),
        "scale": gp.TRAINED_SCALE,
        "n_factor": gp.N_FACTOR,
        "threshold": gp.THRESHOLD,
    }

    def controls(self, config):
        return gc.controls("owner", "pruning")

    def tasks(self, config):
        return [
            {
                "dim": config["dim"],
                "K": int(K),
                "seeds": config["seeds"],
                "epsilon": config["epsilon"],
                "scale": config["scale"],
                "n_factor": config["n_factor"],
                "threshold": config["threshold"],
            }
            for K in sorted(config["Ks"])
        ]

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        D, s, K = task["dim"], float(task["scale"]), task["K"]
        definitions = Definitions(threshold=task["threshold"])
        root = integer_seed(seed)
        base = duplicates(D, ["a-heavy"] + ["w-heavy"] * (K - 1), scale=s)
        flow = solve(base, t_max=50.0, definitions=definitions)
        rest = flow.pruning_time[1:]
        prune = np.nanmax(rest) if np.any(np.isfinite(rest)) else 10.0
        t_end = 2.0 * float(max(prune, np.min(flow.specialization_time)))
        problems = [
            perturb(base, task["epsilon"], meta_rng(root, i, "perturb"))
            for i in range(task["seeds"])
        ]
        eta = 0.5 / (K * s * D)
        cfg = TrainConfig(
            optimizer="gd",
            lr=eta,
            steps=int(np.ceil(t_end / eta)),
            samples=task["n_factor"] * D,
            points_per_decade=20,
        )
        with single_thread():
            res = train(problems, cfg, root_seed=root, device="cpu", definitions=definitions)
        b, T = base.b, base.V @ base.V.T
        last = (res.a[:, -1], res.Q[:, -1], res.R[:, -1], T, b)
        flow_at = solve(base, t_max=t_end, definitions=definitions)
        flow_remaining = remaining_relative(flow_at.a[-1], flow_at.Q[-1], flow_at.R[-1], T, b)
        return {
            "owner": owners(*last[:3], *last[3:5])[:, 0],
            "remaining": remaining_relative(*last),
            "flow_remaining": np.array(flow_remaining),
            "t": res.time,
            "rho": res.rho(),
            "t_end": np.array(t_end),
            "eta": np.array(eta),
            "wall_time_s": res.diagnostics.get("wall_time_s", np.nan),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.gauge_in_training_ownership(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.gauge_in_training_ownership(arrays, config, outdir)


EXPERIMENT = GaugeInTrainingOwnership()

"""Dimension scaling of the gauge measured on networks trained by finite-sample GD.

The protocol (set-up, claims and their rules, fixed before any run) is the ``gauge_in_training_scaling``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.gauge_in_training_scaling()` turns the results into
claims and `._figures.gauge_in_training_scaling()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from ...theory import Definitions, single, solve
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp
from . import _trajectories as gt


class GaugeInTrainingScaling(Experiment):
    name = "gauge_in_training_scaling"
    off_catalogue = {
        k: v for k, v in gp.OFF_CATALOGUE.items() if k.startswith("gauge_in_training_scaling.")
    }
    description = "dimension scaling of the gauge on networks trained by finite-sample GD"
    params = {
        "dims": Param(
            list,
            [8, 11, 16, 23, 32, 45, 64],
            quick=[6, 8, 11, 16, 23, 32],
            lo=4,
            hi=256,
            min_len=6,
            max_len=8,
            distinct=True,
            why="GD steps grow like D^2; the slope rules need six rows",
            help="input dimensions D (steps grow like D^2; at least six for the slope rules)",
        ),
        "seeds": Param(
            int,
            24,
            quick=12,
            lo=2,
            hi=1000,
            why="seeds are trained in one batch",
            help="seeds per configuration",
        ),
        "scale": gp.TRAINED_SCALE,
        "n_factor": gp.N_FACTOR,
        "c_w": Param(
            float,
            1.0,
            lo=0.0,
            lo_open=True,
            hi=1.5,
            why="GD stability: eta < 2 / (s D)",
            help="w-heavy step eta = c_w / (s D)",
        ),
        "c_a": Param(
            float,
            0.05,
            lo=0.0,
            lo_open=True,
            hi=1.5,
            why="GD stability",
            help="a-heavy step eta = c_a / (s D)",
        ),
        "horizon": Param(
            (int, float),
            2.0,
            lo=1.0,
            lo_open=True,
            hi=10.0,
            why="steps grow linearly with the horizon",
            help="training time, in units of the flow's specialization time",
        ),
        "exponent_tolerance": Param(
            float,
            0.3,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            why="a tolerance of 1 accepts D^1 for D^2",
            help="allowed distance of the trained ratio exponent from the flow's",
        ),
        "threshold": gp.THRESHOLD,
    }

    def controls(self, config):
        return gc.controls("power_law", "specialization")

    def tasks(self, config):
        out = []
        for D in sorted(config["dims"]):
            for g in gt.GAUGES:
                c = config["c_w"] if g == "w-heavy" else config["c_a"]
                out.append(
                    {
                        "dim": int(D),
                        "gauge": g,
                        "c": c,
                        "seeds": config["seeds"],
                        "horizon": config["horizon"],
                        "scale": config["scale"],
                        "n_factor": config["n_factor"],
                        "threshold": config["threshold"],
                    }
                )
        return out

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        D, s = task["dim"], float(task["scale"])
        definitions = Definitions(threshold=task["threshold"])
        problem = single(D, task["gauge"], scale=s)
        theory = solve(problem, stop_at_specialization=True, t_max=1e6, definitions=definitions)
        t_theory = float(np.min(theory.specialization_time))
        eta = task["c"] / (s * D)
        steps = int(np.ceil(task["horizon"] * t_theory / eta))
        cfg = TrainConfig(
            optimizer="gd", lr=eta, steps=steps, samples=task["n_factor"] * D, points_per_decade=60
        )
        with single_thread():
            res = train(
                problem,
                cfg,
                seeds=task["seeds"],
                root_seed=integer_seed(seed),
                device="cpu",
                definitions=definitions,
            )
        return {
            "specialization_time": res.specialization_time()[:, 0],
            "theory_time": np.array(t_theory),
            "eta": np.array(eta),
            "steps": np.array(steps),
            "run_time": np.array(steps * eta),
            "wall_time_s": res.diagnostics.get("wall_time_s", np.nan),
        }

    def analyse(self, config, tasks, results, seed):
        return ga.gauge_in_training_scaling(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.gauge_in_training_scaling(arrays, config, outdir)


EXPERIMENT = GaugeInTrainingScaling()

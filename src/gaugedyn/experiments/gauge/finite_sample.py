"""Finite-sample gradient descent converges to the population dynamics as ``n`` grows.

The protocol (set-up, claims and their rules, fixed before any run) is the ``finite_sample``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.finite_sample()` turns the results into
claims and `._figures.finite_sample()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp


class FiniteSample(Experiment):
    name = "finite_sample"
    description = "full-batch GD on n samples against population dynamics: deviation ~ n^-1/2"
    measures = gp.FINDING_MEASURES
    params = {
        "dim": Param(
            int,
            5,
            lo=2,
            hi=1000,
            why="memory: S x n x D samples per task",
            help="input dimension D",
        ),
        "ns": Param(
            list,
            [100, 300, 1000, 3000, 10000, 30000],
            quick=[100, 300, 1000, 3000, 10000, 30000],
            lo=8,
            hi=10**6,
            min_len=3,
            max_len=12,
            check=lambda v: max(v) / min(v) >= 100,
            why="memory: S x n x D samples per task",
            allowed="a list of at least 3 and at most 12 integers in [8, 1e+06] spanning at least two decades "
            "(upper bound: memory: S x n x D samples per task)",
            help="sample sizes n",
        ),
        "seeds": Param(
            int,
            96,
            quick=48,
            lo=2,
            hi=1000,
            why="seeds are trained in one batch",
            help="seeds per n (trained batched)",
        ),
        "strength": Param(
            (int, float),
            2.0,
            lo=1.0,
            hi=100.0,
            why="GD with eta is unstable once the fast mobility lambda s > 2 / eta",
            help="gauge strength lambda: a-heavy a^2 = s lambda, |w|^2 = s / lambda",
        ),
        "eta": Param(
            float,
            0.02,
            lo=0.0,
            lo_open=True,
            hi=0.2,
            why="GD stability",
            help="GD step size (time t = eta * steps)",
        ),
        "t_max": Param(
            (int, float),
            8.0,
            quick=6.0,
            lo=0.0,
            lo_open=True,
            hi=1000.0,
            why="t_max / eta full-batch steps per task",
            help="training time",
        ),
        "tolerance": Param(
            float,
            0.15,
            lo=0.0,
            hi=0.5,
            lo_open=True,
            hi_open=True,
            why="0.5 would accept no decrease at all",
            help="allowed distance of each fitted exponent from -1/2",
        ),
        "dtype": Param(str, "float64", choices=("float32", "float64"), help="training precision"),
    }

    problem = staticmethod(gp.finite_sample_problem)

    space = {
        "tolerance": Choice(
            values=(0.1, 0.2),
            why="the paper's n^-1/2 comes with no margin; 0.1 to 0.2 around -1/2 is what a fit "
            "over two decades of n resolves",
        ),
        "strength": Choice(
            values=(3.0,),
            why="the paper gives no gauge strength; lambda = 3 keeps GD stable at the step size",
        ),
    }

    def controls(self, config):
        return gc.controls("power_law", "dissipation", "time_matching")

    def tasks(self, config):
        keep = ("dim", "seeds", "strength", "eta", "t_max", "dtype")
        return [{"n": int(n), **{k: config[k] for k in keep}} for n in sorted(config["ns"])]

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        problem = self.problem(task)
        eta = float(task["eta"])
        steps = int(round(task["t_max"] / eta))
        grid = np.unique(np.round(np.logspace(0, np.log10(steps), 60)).astype(int))
        cfg = TrainConfig(
            optimizer="gd",
            lr=eta,
            steps=steps,
            samples=task["n"],
            record_steps=tuple(int(k) for k in grid),
        )
        with single_thread():
            res = train(
                problem,
                cfg,
                seeds=task["seeds"],
                root_seed=integer_seed(seed),
                dtype=task["dtype"],
                device="cpu",
            )
        reaction, transport = res.dissipation()
        return {
            "t": res.time,
            "loss": res.loss,
            "loss_empirical": res.loss_empirical,
            "alignment": res.alignment()[..., 0],
            "rho": res.rho(),
            "reaction": reaction.sum(axis=-1),
            "transport": transport.sum(axis=-1),
            "wall_time_s": res.diagnostics["wall_time_s"],
        }

    def analyse(self, config, tasks, results, seed):
        return ga.finite_sample(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.finite_sample(arrays, config, outdir)


EXPERIMENT = FiniteSample()

"""Finite-sample gradient descent converges to the population dynamics as ``n`` grows.

Claim 5 of derivations/theory.md section 2. The ``duplicates`` set-up (one a-heavy and one w-heavy copy at
gauge strength ``strength``) is trained by full-batch GD with step ``eta`` on ``n`` fixed Gaussian
samples, ``S`` seeds per ``n`` in one batched run. The reference is the population dynamics with
the same step (population GD, the Euler map of the flow, from :func:`gaugedyn.theory.solve`), so
the deviation measures the finite sample alone; the population flow is drawn too, and its distance
to population GD (the ``O(eta)`` discretisation bias) is reported. Per seed the deviation of an
observable is its root-mean-square difference from the reference over the recorded times (loss:
population loss of the trained weights; ``rho``: every student; alignment: the angle
``arccos m`` of every student; reaction and transport: the two parts of the dissipation
``-dL/dt``, summed over students, evaluated in closed form at the trained weights by the same
observable as the theory's, :func:`gaugedyn.theory.dissipation`); the median over seeds is
fitted against ``n`` on log-log axes (:func:`gaugedyn.stats.loglog_fit`). Theory: deviation
``~ n^{-1/2}``. Loss, alignment and ``rho`` are checks; the dissipation parts are findings of the
seed's statement 5, judged by the catalogue's ``slope_band`` rule on the points
``(log n, log median deviation)``: HELD when the 95% t interval of the least-squares slope lies
inside ``(-1/2 - tolerance, -1/2 + tolerance)`` (the paper's value ``-1/2`` is where the power is
computed), shown with their seed bands against population GD.
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from . import _analysis as ga
from . import _figures as gf
from . import _protocol as gp


class FiniteSample(Experiment):
    name = "finite_sample"
    description = "full-batch GD on n samples against population dynamics: deviation ~ n^-1/2"
    params = {
        "dim": Param(int, 5, lo=2, hi=1000, why="memory: S x n x D samples per task",
                     help="input dimension D"),
        "ns": Param(list, [100, 300, 1000, 3000, 10000, 30000], quick=[100, 300, 1000, 3000, 10000],
                    lo=8, hi=10**6, min_len=3, max_len=12, check=lambda v: max(v) / min(v) >= 100,
                    why="memory: S x n x D samples per task",
                    allowed="a list of at least 3 and at most 12 integers in [8, 1e+06] spanning at least two decades "
                            "(upper bound: memory: S x n x D samples per task)",
                    help="sample sizes n"),
        "seeds": Param(int, 96, quick=48, lo=2, hi=1000, why="seeds are trained in one batch",
                       help="seeds per n (trained batched)"),
        "strength": Param((int, float), 2.0, lo=1.0, hi=100.0,
                          why="GD with eta is unstable once the fast mobility lambda s > 2 / eta",
                          help="gauge strength lambda: a-heavy a^2 = s lambda, |w|^2 = s / lambda"),
        "eta": Param(float, 0.02, lo=0.0, lo_open=True, hi=0.2, why="GD stability",
                     help="GD step size (time t = eta * steps)"),
        "t_max": Param((int, float), 8.0, quick=6.0, lo=0.0, lo_open=True, hi=1000.0,
                       why="t_max / eta full-batch steps per task", help="training time"),
        "tolerance": Param(float, 0.15, lo=0.0, hi=0.5, lo_open=True, hi_open=True,
                           why="0.5 would accept no decrease at all",
                           help="allowed distance of each fitted exponent from -1/2"),
        "dtype": Param(str, "float64", choices=("float32", "float64"), help="training precision"),
    }

    problem = staticmethod(gp.finite_sample_problem)

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
        cfg = TrainConfig(optimizer="gd", lr=eta, steps=steps, samples=task["n"],
                          record_steps=tuple(int(k) for k in grid))
        with single_thread():
            res = train(problem, cfg, seeds=task["seeds"], root_seed=integer_seed(seed),
                        dtype=task["dtype"], device="cpu")
        reaction, transport = res.dissipation()
        return {"t": res.time, "loss": res.loss, "loss_empirical": res.loss_empirical,
                "alignment": res.alignment()[..., 0], "rho": res.rho(),
                "reaction": reaction.sum(axis=-1), "transport": transport.sum(axis=-1),
                "wall_time_s": res.diagnostics["wall_time_s"]}

    def analyse(self, config, tasks, results, seed):
        return ga.finite_sample(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.finite_sample(arrays, config, outdir)


EXPERIMENT = FiniteSample()

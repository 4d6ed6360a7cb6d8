"""Online SGD against the classical online ODE (erf) and the population flow (ReLU, small eta).

The protocol (set-up, claims and their rules, fixed before any run) is the ``online_sgd``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.online_sgd()` turns the results into
claims and `._figures.online_sgd()` draws the figures.
"""

from __future__ import annotations

from ...harness import Experiment, Param
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _protocol as gp


class OnlineSGD(Experiment):
    name = "online_sgd"
    off_catalogue = {k: v for k, v in gp.OFF_CATALOGUE.items() if k.startswith("online_sgd.")}
    description = "erf online SGD vs the online ODE (eta^2 terms); ReLU online SGD vs the flow"
    params = {
        "dims": Param(
            list,
            [100, 160, 250, 400, 630, 1000],
            quick=[100, 130, 175, 230, 300, 400],
            lo=8,
            hi=20000,
            min_len=6,
            max_len=12,
            distinct=True,
            item=int,
            why="memory and time: S seeds x D^2 order-parameter records per task",
            help="input dimensions D for the erf comparison (>= 6: the spread exponent is "
            "judged by slope_band, which needs six rows)",
        ),
        "seeds": Param(
            int,
            64,
            quick=48,
            lo=4,
            hi=1000,
            why="one task trains all seeds at once",
            help="seeds per configuration (the band checks' power: PROTOCOL.md)",
        ),
        "eta": Param(
            float,
            1.0,
            lo=0,
            lo_open=True,
            hi=3,
            why="the erf online dynamics diverge near eta = pi",
            help="erf learning rate (step eta / D)",
        ),
        "t_max": Param(
            (int, float),
            12.0,
            quick=8.0,
            lo=0,
            lo_open=True,
            hi=1000,
            why="steps = t_max D online steps per seed",
            help="erf training time t = steps / D",
        ),
        "relu_dim": Param(
            int, 100, quick=40, lo=8, hi=20000, why="as dims", help="D of the ReLU comparison"
        ),
        "relu_eta": Param(
            float,
            0.005,
            lo=0,
            lo_open=True,
            hi=1,
            why="the flow limit needs a small eta",
            help="ReLU learning rate (small: the flow limit)",
        ),
        "relu_flow_time": Param(
            (int, float),
            3.0,
            quick=2.0,
            lo=0,
            lo_open=True,
            hi=100,
            why="steps = flow_time D / eta online steps",
            help="ReLU run length in population-flow time eta t",
        ),
        "chain_dims": Param(
            list,
            [1000, 2500, 6300, 16000, 40000, 100000],
            quick=[1000, 1600, 2500, 4000, 6300, 10000],
            lo=8,
            hi=10**6,
            min_len=6,
            max_len=12,
            distinct=True,
            item=int,
            why="t_max D chain steps per seed (about 1 us each)",
            help="input dimensions D of the exact order-parameter chain (>= 6: the spread "
            "exponent is judged by slope_band, which needs six rows)",
        ),
        "spread_tolerance": Param(
            float,
            0.2,
            lo=0,
            lo_open=True,
            hi=0.5,
            hi_open=True,
            why="a wider band could not tell -1/2 from 0",
            help="allowed distance of the spread exponent from -1/2",
        ),
    }

    def controls(self, config):
        return gc.controls("power_law", "time_matching")

    def tasks(self, config):
        erf = [
            {
                "kind": "erf",
                "dim": int(d),
                "eta": config["eta"],
                "t_max": config["t_max"],
                "seeds": config["seeds"],
            }
            for d in sorted(config["dims"])
        ]
        chain = [
            {
                "kind": "chain",
                "dim": int(d),
                "eta": config["eta"],
                "t_max": config["t_max"],
                "seeds": config["seeds"],
            }
            for d in sorted(config["chain_dims"])
        ]
        relu = {
            "kind": "relu",
            "dim": config["relu_dim"],
            "eta": config["relu_eta"],
            "t_max": config["relu_flow_time"] / config["relu_eta"],
            "seeds": config["seeds"],
        }
        return erf + chain + [relu]

    problem = staticmethod(gp.online_problem)

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        steps = int(round(task["t_max"] * task["dim"]))
        cfg = TrainConfig(
            optimizer="sgd", lr=float(task["eta"]), steps=steps, samples=None, points_per_decade=15
        )
        if task["kind"] == "chain":
            from ...training import train_online

            res = train_online(
                self.problem(task), cfg, task["seeds"], integer_seed(seed), None, None, 1, "chain"
            )
        else:
            with single_thread():
                res = train(
                    self.problem(task),
                    cfg,
                    seeds=task["seeds"],
                    root_seed=integer_seed(seed),
                    device="cpu",
                    backend="torch",
                )
        return {
            "t": res.time,
            "flow_time": res.flow_time,
            "loss": res.loss,
            "a": res.a,
            "Q": res.Q,
            "R": res.R,
            "wall_time_s": res.diagnostics["wall_time_s"],
        }

    def analyse(self, config, tasks, results, seed):
        return ga.online_sgd(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.online_sgd(arrays, config, outdir)


EXPERIMENT = OnlineSGD()

"""The gauge on networks the theory did not build: a ReLU MLP, a small CNN and a tiny
transformer on the digits data.

The protocol (set-up, claims and their rules, fixed before any run) is the ``gauge_on_networks``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks, `._analysis.gauge_on_networks()` turns the results into
claims and `._figures.gauge_on_networks()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from . import _analysis as ga
from . import _controls as gc
from . import _digits as dg
from . import _figures as gf
from . import _protocol as gp


class GaugeOnNetworks(Experiment):
    name = "gauge_on_networks"
    description = (
        "a duplicated unit with opposite gauges in a ReLU MLP and a CNN on the digits "
        "data, trained by GD, momentum and Adam: the owner rate and the drift of "
        "delta; the drift's slope in the step size, attention heads included"
    )
    measures = gp.FINDING_MEASURES
    params = {
        "models": Param(
            list,
            list(dg.MODELS[:2]),
            quick=["mlp"],
            choices=dg.MODELS[:2],
            min_len=1,
            max_len=2,
            distinct=True,
            help="models of the owner runs",
        ),
        "slope_models": Param(
            list,
            list(dg.MODELS),
            choices=dg.MODELS,
            min_len=1,
            max_len=3,
            distinct=True,
            help="models of the slope runs",
        ),
        "slope_seeds": Param(
            int,
            8,
            quick=3,
            lo=3,
            hi=100,
            why="the equivalence rule needs three seeds or more",
            help="seeds per slope model",
        ),
        "slope_sizes": Param(
            int,
            4,
            quick=3,
            lo=2,
            hi=8,
            why="each halving doubles the steps of the smallest size",
            help="step sizes lr_gd 2^-k, k < slope_sizes",
        ),
        "slope_steps": Param(
            int,
            40,
            quick=16,
            lo=2,
            hi=2000,
            why="the smallest size runs slope_steps 2^(slope_sizes-1) steps",
            help="steps at the largest size (the time T = slope_steps lr_gd)",
        ),
        "optimizers": Param(
            list,
            list(dg.OPTIMIZERS),
            choices=dg.OPTIMIZERS,
            min_len=1,
            max_len=3,
            distinct=True,
            help="optimizers to train with",
        ),
        "seeds": Param(
            int,
            12,
            quick=6,
            lo=2,
            hi=400,
            why="one seed is one CPU training run",
            help="seeds per optimizer",
        ),
        "chunk": Param(
            int, 4, quick=3, lo=1, hi=64, why="a task is one worker's share", help="seeds per task"
        ),
        "steps": Param(
            int,
            1500,
            quick=600,
            lo=10,
            hi=20000,
            why="every step is recorded in float64",
            help="training steps",
        ),
        "samples": Param(
            int,
            256,
            quick=256,
            lo=64,
            hi=1797,
            why="load_digits holds 1797 images",
            help="training images (the first ones; 256 keeps the CNN and the "
            "transformer at a few ms per float64 step)",
        ),
        "hidden": Param(
            int,
            32,
            lo=4,
            hi=256,
            why="the recorder reads every unit per step",
            help="units per hidden layer of the MLP",
        ),
        "channels": Param(
            int,
            4,
            lo=2,
            hi=64,
            why="a float64 convolution per step",
            help="channels per convolution of the CNN",
        ),
        "gauge": Param(
            float,
            3.0,
            lo=1.0,
            hi=10.0,
            lo_open=True,
            why="the a-heavy copy's |w| shrinks as 1/s and a step kills its ReLU",
            help="s: the copies' gauges are 1/s (a-heavy) and s (w-heavy)",
        ),
        "lr_gd": Param(
            float,
            0.05,
            lo=0.0,
            hi=1.0,
            lo_open=True,
            why="GD on this loss diverges beyond about 1",
            help="GD step size",
        ),
        "lr_momentum": Param(
            float,
            0.005,
            lo=0.0,
            hi=0.1,
            lo_open=True,
            why="the effective step lr / (1 - momentum) stays stable",
            help="momentum step size",
        ),
        "momentum": Param(
            float,
            0.9,
            lo=0.0,
            hi=0.99,
            why="heavy-ball beyond 0.99 rings",
            help="heavy-ball momentum",
        ),
        "weight_decay": Param(
            float,
            1e-4,
            lo=0.0,
            hi=0.01,
            why="decay beyond 1e-2 erases the gauge within the run",
            help="weight decay of the momentum runs",
        ),
        "lr_adam": Param(
            float,
            1e-3,
            lo=0.0,
            hi=0.1,
            lo_open=True,
            why="Adam's per-coordinate step beyond 0.1 jumps past the features",
            help="Adam step size",
        ),
        "stride": Param(
            int,
            10,
            lo=1,
            hi=1000,
            why="stored trajectories only",
            help="store every stride-th step's readings",
        ),
    }

    space = {
        "gauge": Choice(
            values=(2.0, 5.0),
            why="the paper gives the copies' gauges no size; s = 2 to 5 keeps both copies' "
            "ReLUs alive",
        ),
    }

    def controls(self, config):
        return gc.controls("prediction_gap", "owner")

    def tasks(self, config):
        keys = (
            "steps",
            "samples",
            "hidden",
            "channels",
            "gauge",
            "lr_gd",
            "lr_momentum",
            "momentum",
            "weight_decay",
            "lr_adam",
            "stride",
            "slope_sizes",
            "slope_steps",
        )
        shared = {k: config[k] for k in keys}
        out = []
        for model in config["models"]:
            for opt in config["optimizers"]:
                for first in range(0, config["seeds"], config["chunk"]):
                    n = min(config["chunk"], config["seeds"] - first)
                    out.append(
                        {
                            "kind": "owner",
                            "model": model,
                            "optimizer": opt,
                            "first_seed": first,
                            "n_seeds": n,
                            **shared,
                        }
                    )
        for model in config["slope_models"]:
            for first in range(0, config["slope_seeds"], config["chunk"]):
                n = min(config["chunk"], config["slope_seeds"] - first)
                out.append(
                    {"kind": "slope", "model": model, "first_seed": first, "n_seeds": n, **shared}
                )
        return out

    def run_task(self, task, seed):
        import time

        from ..._meta import integer_seed
        from ...training import single_thread

        t0 = time.perf_counter()
        runs = []
        with single_thread():
            for child in seed.spawn(task["n_seeds"]):
                if task["kind"] == "slope":
                    runs.append(dg.drift_rates(task, integer_seed(child)))
                else:
                    runs.append(
                        dg.train_one(task["optimizer"], task, integer_seed(child), task["stride"])
                    )
        shared = ("step", "eta")
        out = {k: np.array([r[k] for r in runs]) for k in runs[0] if k not in shared}
        out |= {k: runs[0][k] for k in shared if k in runs[0]}
        out["wall_time_s"] = np.array(time.perf_counter() - t0)
        return out

    def analyse(self, config, tasks, results, seed):
        return ga.gauge_on_networks(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.gauge_on_networks(arrays, config, outdir)


SLOPE_BAND = (0.9, 1.1)
"""The drift's slope in eta counts as 1 inside this band (the issue's "within 0.1")."""


EXPERIMENT = GaugeOnNetworks()

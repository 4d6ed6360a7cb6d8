"""The population landscape: plateaus as saddles, escape times, gauge zero modes, a catalogue.

The protocol (set-up, claims and their rules, fixed before any run) is the ``landscape``
section of ``PROTOCOL.md`` in this folder, its fixed numbers `._protocol`; this module
declares the settings and runs the tasks (their computations are `._landscape`),
`._analysis.landscape()` turns the results into claims and `._figures.landscape()` draws
the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from . import _analysis as ga
from . import _controls as gc
from . import _figures as gf
from . import _landscape as study
from . import _protocol as gp


class Landscape(Experiment):
    name = "landscape"
    measures = gp.FINDING_MEASURES
    description = (
        "critical points at plateau ends, escape times 1/lambda_+, gauge zero modes, "
        "a catalogue of fixed points"
    )
    params = {
        "plateau_K": Param(
            list,
            [2, 3, 4],
            quick=[2],
            lo=1,
            hi=6,
            min_len=1,
            max_len=5,
            distinct=True,
            item=int,
            why="K <= 6: dense Hessians of the span",
            help="K = M of the plateau sources",
        ),
        "random_seeds": Param(
            int,
            6,
            quick=1,
            lo=1,
            hi=100,
            why="each seed is one trajectory per K and activation",
            help="seeds of the random plateau sources",
        ),
        "t_max": Param(
            float,
            300.0,
            lo=1,
            hi=1e6,
            why="flow time of each source",
            help="flow time of the plateau sources",
        ),
        "flatness": Param(
            float,
            0.05,
            lo=0.001,
            hi=0.5,
            why="a log-log slope of a half is not a plateau",
            help="flat where |d ln L / d ln t| <= flatness (range 0.02-0.1)",
        ),
        "min_span": Param(
            float,
            0.5,
            lo=0,
            hi=10,
            why="e-folds of an interior plateau",
            help="an interior plateau lasts this many e-folds (range 0.25-1)",
        ),
        "band": Param(
            float,
            0.02,
            lo=0.001,
            hi=0.5,
            why="a band of half the loss is no level",
            help="time spent: within band L* of the level (range 0.005-0.05)",
        ),
        "escape_eps": Param(
            list,
            list(np.geomspace(1e-2, 1e-6, 9)),
            quick=list(np.geomspace(1e-2, 1e-6, 6)),
            lo=1e-12,
            hi=0.5,
            min_len=6,
            max_len=40,
            distinct=True,
            item=float,
            why="a start half a unit away is not near the saddle",
            help="distances from the stable manifold (>= 6: four residual "
            "degrees of freedom of the slope)",
        ),
        "near": Param(
            float,
            0.5,
            lo=0,
            lo_open=True,
            hi=10.0,
            why="relative distances beyond 10 are no neighbourhood",
            help="a plateau end counts when the trajectory came within this "
            "relative distance (order parameters) of its critical point",
        ),
        "min_plateau_ends": Param(
            int,
            3,
            quick=1,
            lo=1,
            hi=100,
            why="plateau ends of the declared sources",
            help="plateau ends that must refine below 1e-10 with index "
            ">= 1 (from ReLU and erf when >= 2)",
        ),
        "gauge_K": Param(
            int,
            3,
            lo=1,
            hi=6,
            why="K <= 6: dense Hessians of the span",
            help="K = M of the gauge source (a random ReLU teacher)",
        ),
        "gauge_seed": Param(
            int, 0, lo=0, hi=2**32 - 1, why="a numpy seed", help="seed of the gauge source"
        ),
        "gauge_plateau": Param(
            int,
            1,
            lo=0,
            hi=20,
            why="stretches of one trajectory",
            help="which refined stretch of the gauge source",
        ),
        "gauge_strength": Param(
            float,
            4.0,
            lo=1.01,
            hi=100.0,
            why="a^2 / |w|^2 = strength^2 stays finite",
            help="strength of the a-heavy and w-heavy gauges",
        ),
        "gauge_eps": Param(
            float,
            1e-3,
            lo=1e-10,
            hi=0.1,
            why="near the saddle",
            help="common start: the balanced saddle moved this far",
        ),
        "catalogue_K": Param(
            list,
            [2, 3],
            quick=[2],
            lo=1,
            hi=4,
            min_len=1,
            max_len=4,
            distinct=True,
            item=int,
            why="K, M <= 4 (the issue's range)",
            help="K = M of the catalogues",
        ),
        "starts": Param(
            int,
            48,
            quick=4,
            lo=1,
            hi=10_000,
            why="flows per catalogue",
            help="random students per catalogue",
        ),
        "teacher_seed": Param(
            int, 123, lo=0, hi=2**32 - 1, why="a numpy seed", help="seed of the catalogue teachers"
        ),
        "online_etas": Param(
            list,
            [0.1, 0.5, 1.0],
            quick=[0.5],
            lo=0,
            lo_open=True,
            hi=3.0,
            min_len=1,
            max_len=10,
            item=float,
            why="the erf online dynamics diverge near eta = pi",
            help="learning rates of the online ODE's fixed points",
        ),
        "single_dims": Param(
            list,
            [10, 20, 40],
            quick=[10],
            lo=4,
            hi=1000,
            min_len=1,
            max_len=8,
            distinct=True,
            item=int,
            why="D of the single set-up",
            help="D of the single set-ups",
        ),
    }

    space = {
        "flatness": Choice(
            lo=0.02,
            hi=0.1,
            why="no paper says how flat a plateau is; any log-log slope of a few hundredths "
            "reads the same stretches of these curves (the setting's declared range)",
        ),
        "min_span": Choice(
            lo=0.25,
            hi=1.0,
            why="no paper fixes how long an interior plateau lasts; a quarter to one e-fold "
            "(the setting's declared range)",
        ),
        "band": Choice(
            lo=0.005,
            hi=0.05,
            scale="log",
            why="the time spent at a plateau needs a band around its level that no paper fixes; "
            "0.5% to 5% of the level (the setting's declared range)",
        ),
        "near": Choice(
            values=(0.25, 1.0),
            why="how close a trajectory must come for its plateau end to count is not in the "
            "papers; half the default to twice it",
        ),
        "gauge_strength": Choice(
            values=(2.0, 8.0),
            why="the gauge paper gives no strength of its a-heavy and w-heavy gauges; a factor "
            "2 either side of 4",
        ),
    }

    def controls(self, config):
        return gc.landscape(config)

    # -- tasks --------------------------------------------------------------------------------

    @staticmethod
    def sources(config) -> list[dict]:
        out = [
            {"kind": "random", "activation": act, "K": int(K), "dim": 20, "seed": s, "scale": 0.1}
            for act in ("relu", "erf")
            for K in config["plateau_K"]
            for s in range(config["random_seeds"])
        ]
        out += [
            {
                "kind": "symmetric",
                "activation": "erf",
                "K": int(K),
                "dim": 20,
                "seed": 0,
                "width": 0.1,
            }
            for K in config["plateau_K"]
        ]
        return out

    @staticmethod
    def gauge_source(config) -> dict:
        return {
            "kind": "random",
            "activation": "relu",
            "K": config["gauge_K"],
            "dim": 20,
            "seed": config["gauge_seed"],
            "scale": 0.1,
        }

    def tasks(self, config):
        common = {k: config[k] for k in ("t_max", "flatness", "min_span", "band")}
        tasks = [
            {
                "kind": "source",
                "source": s,
                "eps": config["escape_eps"],
                "near": config["near"],
                **common,
            }
            for s in self.sources(config)
        ]
        tasks.append(
            {
                "kind": "gauge",
                "source": self.gauge_source(config),
                "which": config["gauge_plateau"],
                "strength": config["gauge_strength"],
                "eps": config["escape_eps"],
                "common_eps": config["gauge_eps"],
                **common,
            }
        )
        tasks += [
            {
                "kind": "catalogue",
                "activation": act,
                "K": int(K),
                "dim": gp.LANDSCAPE_CATALOGUE_DIM,
                "teacher_seed": config["teacher_seed"],
                "starts": config["starts"],
                "etas": config["online_etas"] if act == "erf" else [],
                **common,
            }
            for act in ("relu", "erf")
            for K in config["catalogue_K"]
        ]
        tasks += [
            {
                "kind": "single",
                "activation": act,
                "gauge": g,
                "dim": int(D),
                **{k: common[k] for k in ("flatness", "min_span", "band")},
            }
            for act in ("relu", "erf")
            for g in ("w-heavy", "a-heavy")
            for D in config["single_dims"]
        ]
        tasks.append(
            {"kind": "controls", **{k: common[k] for k in ("flatness", "min_span", "band")}}
        )
        return tasks

    def run_task(self, task, seed):
        from ..._meta import integer_seed

        kind = task["kind"]
        if kind == "source":
            return study.source_task(
                task["source"],
                task["t_max"],
                task["flatness"],
                task["min_span"],
                task["band"],
                task["eps"],
                task["near"],
            )
        if kind == "gauge":
            point = study.plateau_point(
                task["source"], task["t_max"], task["flatness"], task["min_span"], task["which"]
            )
            return study.gauge_task(
                point, task["strength"], task["eps"], task["band"], task["common_eps"]
            )
        if kind == "catalogue":
            out = study.catalogue_task(
                task["activation"],
                task["K"],
                task["dim"],
                task["teacher_seed"],
                task["starts"],
                integer_seed(seed),
                task["t_max"],
                task["flatness"],
                task["min_span"],
            )
            if task["etas"]:
                out["online"] = study.online_fixed_points(
                    out["points"], task["activation"], task["etas"]
                )
            return out
        if kind == "single":
            return study.single_task(
                task["activation"],
                task["gauge"],
                task["dim"],
                None,
                task["flatness"],
                task["min_span"],
                task["band"],
            )
        return study.controls_task(
            task["band"], task.get("flatness", 0.05), task.get("min_span", 0.5)
        )

    # -- analysis ------------------------------------------------------------------------------

    def analyse(self, config, tasks, results, seed):
        return ga.landscape(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return gf.landscape(arrays, config, outdir)


EXPERIMENT = Landscape()

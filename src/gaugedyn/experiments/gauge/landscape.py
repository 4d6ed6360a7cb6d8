"""The population landscape: plateaus as saddles, escape times, gauge zero modes, a catalogue.

Protocol (fixed before the first full run; ``PROTOCOL`` below is the text the report quotes):

- **Plateau sources.** Random teachers (``random_problem(dim, K, K, default_rng(seed),
  scale=0.1)``, ReLU and erf, ``K`` in ``plateau_K``, seeds ``0 .. random_seeds - 1``) and
  Saad and Solla's symmetric teachers (``v_n = e_n``, ``b = 1``, small students, erf, ``K`` in
  ``plateau_K``, seed 0) are integrated to ``t_max`` (order parameters). Every initial and
  interior flat stretch (``|d ln L / d ln t| <= flatness`` for ``min_span`` e-folds) is refined
  by :func:`gaugedyn.theory.critical_point` from its slowest sample. Each refined point's
  Hessian is compared with an independent reference (torch autograd of the weight-space loss
  written from the closed forms; central differences of Tian's gradient at aligned ReLU pairs).
- **Escape.** From every plateau end that converges (``|grad| <= 1e-10``) with index >= 1 and
  that the trajectory came near (relative distance in order parameters at most ``near``), the
  flow starts at ``y* +- eps v_+`` for ``eps`` in ``escape_eps`` (both signs: two readings);
  the time spent is the time until ``L < L* (1 - band)``. Finding ``escape_slope``: the
  least-squares slope of ``lambda_+ T`` on ``ln(1/eps)`` lies in ``[0.95, 1.05]`` (rule
  ``slope_band``), judged for every saddle and sign; the verdict is the readings' common one.
- **Zero modes.** Finding ``zero_modes``: at every converged ReLU point (plateau ends and
  catalogue entries) with no dead or collapsed unit, the number of zero eigenvalues (below
  ``1e-8`` of the largest) minus the rotations fixing the teacher equals the active units plus
  the redistributions of coinciding units (rule ``deterministic`` on the number of points where
  it fails, ``< 0.5``). A second reading counts every converged ReLU point, dead units' free
  weights included in the prediction. Check: at every erf point the rescaling generators are
  not zero modes.
- **Gauge.** The ReLU saddle of the random source ``(gauge_K, gauge_seed)`` (its
  ``gauge_plateau``-th refined stretch) in
  the balanced, a-heavy and w-heavy gauges (``gauge_strength``): check that the three are one
  point (:func:`gaugedyn.theory.same_point`); finding ``gauge_rate``: ``lambda_+`` of the
  a-heavy copy differs from the w-heavy copy's by more than a factor 1.1
  (``|ln(lambda_a / lambda_w)| > ln 1.1``, rule ``deterministic``); finding
  ``gauge_clock``: from one initial function (the balanced saddle moved ``gauge_eps`` along its
  unstable direction, then put in each gauge), the time spent times ``lambda_+`` agrees between
  the a-heavy and w-heavy gauges within 5% (``|ln(lambda_a T_a / (lambda_w T_w))| < ln 1.05``):
  the gauge changes the rate of the escape, not the distance that matters.
- **Catalogue.** For ReLU and erf and ``K = M`` in ``catalogue_K``: ``K`` unit teachers drawn
  from ``teacher_seed`` with ``b = 1``, ``starts`` random students; entries merged up to
  permutation, gauge, sign flips and rotations; basin shares with Clopper-Pearson intervals.
  Check: every entry refined below ``1e-10``. The online-SGD ODE's fixed points are continued
  from the erf entries through ``online_etas``.
- **The gauge paper's single set-up** (ReLU and erf, w-heavy and a-heavy, ``D`` in
  ``single_dims``): the specialization time and the critical point its first plateau refines
  to, with the trajectory's distance from it (a measurement, no verdict).
- **Known-answer controls** (checks): the plateau finder on a curve with known flat stretches
  and on curves with none; the refiner on the teacher (a minimum), on the erf ``single`` saddle
  (closed-form loss ``1/6`` and ``lambda_+``) and, with one iteration, on a point that is not
  critical (must not report success); the escape instrument on that closed-form saddle (slope
  ``1/lambda_+`` within 1%) and on a minimum (refused: no unstable direction); deduplication on
  permuted and gauge-transformed copies (one entry) and on two different points (two).
"""

from __future__ import annotations

import numpy as np

from ...harness import Experiment, Param
from . import _landscape as study

PROTOCOL = __doc__.split("Protocol (fixed before the first full run; ``PROTOCOL`` below is the "
                         "text the report quotes):")[1].strip()

CATALOGUE_DIM = 10
"""Input dimension of the catalogue's teachers (``D`` only sets the students' initial overlaps)."""


class Landscape(Experiment):
    name = "landscape"
    description = ("critical points at plateau ends, escape times 1/lambda_+, gauge zero modes, "
                   "a catalogue of fixed points")
    params = {
        "plateau_K": Param(list, [2, 3, 4], quick=[2], lo=1, hi=6, min_len=1, max_len=5,
                           distinct=True, item=int, why="K <= 6: dense Hessians of the span",
                           help="K = M of the plateau sources"),
        "random_seeds": Param(int, 6, quick=1, lo=1, hi=100,
                              why="each seed is one trajectory per K and activation",
                              help="seeds of the random plateau sources"),
        "t_max": Param(float, 300.0, lo=1, hi=1e6, why="flow time of each source",
                       help="flow time of the plateau sources"),
        "flatness": Param(float, 0.05, lo=0.001, hi=0.5,
                          why="a log-log slope of a half is not a plateau",
                          help="flat where |d ln L / d ln t| <= flatness (range 0.02-0.1)"),
        "min_span": Param(float, 0.5, lo=0, hi=10, why="e-folds of an interior plateau",
                          help="an interior plateau lasts this many e-folds (range 0.25-1)"),
        "band": Param(float, 0.02, lo=0.001, hi=0.5, why="a band of half the loss is no level",
                      help="time spent: within band L* of the level (range 0.005-0.05)"),
        "escape_eps": Param(list, list(np.geomspace(1e-2, 1e-6, 9)),
                            quick=list(np.geomspace(1e-2, 1e-6, 6)), lo=1e-12, hi=0.5,
                            min_len=6, max_len=40, distinct=True, item=float,
                            why="a start half a unit away is not near the saddle",
                            help="distances from the stable manifold (>= 6: four residual "
                                 "degrees of freedom of the slope)"),
        "near": Param(float, 0.5, lo=0, lo_open=True, hi=10.0,
                      why="relative distances beyond 10 are no neighbourhood",
                      help="a plateau end counts when the trajectory came within this "
                           "relative distance (order parameters) of its critical point"),
        "min_plateau_ends": Param(int, 3, quick=1, lo=1, hi=100,
                                  why="plateau ends of the declared sources",
                                  help="plateau ends that must refine below 1e-10 with index "
                                       ">= 1 (from ReLU and erf when >= 2)"),
        "gauge_K": Param(int, 3, lo=1, hi=6, why="K <= 6: dense Hessians of the span",
                         help="K = M of the gauge source (a random ReLU teacher)"),
        "gauge_seed": Param(int, 0, lo=0, hi=2**32 - 1, why="a numpy seed",
                            help="seed of the gauge source"),
        "gauge_plateau": Param(int, 1, lo=0, hi=20, why="stretches of one trajectory",
                               help="which refined stretch of the gauge source"),
        "gauge_strength": Param(float, 4.0, lo=1.01, hi=100.0,
                                why="a^2 / |w|^2 = strength^2 stays finite",
                                help="strength of the a-heavy and w-heavy gauges"),
        "gauge_eps": Param(float, 1e-3, lo=1e-10, hi=0.1, why="near the saddle",
                           help="common start: the balanced saddle moved this far"),
        "catalogue_K": Param(list, [2, 3], quick=[2], lo=1, hi=4, min_len=1, max_len=4,
                             distinct=True, item=int, why="K, M <= 4 (the issue's range)",
                             help="K = M of the catalogues"),
        "starts": Param(int, 48, quick=4, lo=1, hi=10_000, why="flows per catalogue",
                        help="random students per catalogue"),
        "teacher_seed": Param(int, 123, lo=0, hi=2**32 - 1, why="a numpy seed",
                              help="seed of the catalogue teachers"),
        "online_etas": Param(list, [0.1, 0.5, 1.0], quick=[0.5], lo=0, lo_open=True, hi=3.0,
                             min_len=1, max_len=10, item=float,
                             why="the erf online dynamics diverge near eta = pi",
                             help="learning rates of the online ODE's fixed points"),
        "single_dims": Param(list, [10, 20, 40], quick=[10], lo=4, hi=1000, min_len=1,
                             max_len=8, distinct=True, item=int, why="D of the single set-up",
                             help="D of the single set-ups"),
    }

    # -- tasks --------------------------------------------------------------------------------

    @staticmethod
    def sources(config) -> list[dict]:
        out = [{"kind": "random", "activation": act, "K": int(K), "dim": 20, "seed": s,
                "scale": 0.1} for act in ("relu", "erf") for K in config["plateau_K"]
               for s in range(config["random_seeds"])]
        out += [{"kind": "symmetric", "activation": "erf", "K": int(K), "dim": 20, "seed": 0,
                 "width": 0.1} for K in config["plateau_K"]]
        return out

    @staticmethod
    def gauge_source(config) -> dict:
        return {"kind": "random", "activation": "relu", "K": config["gauge_K"], "dim": 20,
                "seed": config["gauge_seed"], "scale": 0.1}

    def tasks(self, config):
        common = {k: config[k] for k in ("t_max", "flatness", "min_span", "band")}
        tasks = [{"kind": "source", "source": s, "eps": config["escape_eps"],
                  "near": config["near"], **common} for s in self.sources(config)]
        tasks.append({"kind": "gauge", "source": self.gauge_source(config),
                      "which": config["gauge_plateau"], "strength": config["gauge_strength"],
                      "eps": config["escape_eps"], "common_eps": config["gauge_eps"], **common})
        tasks += [{"kind": "catalogue", "activation": act, "K": int(K), "dim": CATALOGUE_DIM,
                   "teacher_seed": config["teacher_seed"], "starts": config["starts"],
                   "etas": config["online_etas"] if act == "erf" else [], **common}
                  for act in ("relu", "erf") for K in config["catalogue_K"]]
        tasks += [{"kind": "single", "activation": act, "gauge": g, "dim": int(D),
                   **{k: common[k] for k in ("flatness", "min_span", "band")}}
                  for act in ("relu", "erf") for g in ("w-heavy", "a-heavy")
                  for D in config["single_dims"]]
        tasks.append({"kind": "controls", "band": config["band"]})
        return tasks

    def run_task(self, task, seed):
        from ..._meta import integer_seed

        kind = task["kind"]
        if kind == "source":
            return study.source_task(task["source"], task["t_max"], task["flatness"],
                                     task["min_span"], task["band"], task["eps"], task["near"])
        if kind == "gauge":
            point = study.plateau_point(task["source"], task["t_max"], task["flatness"],
                                        task["min_span"], task["which"])
            return study.gauge_task(point, task["strength"], task["eps"], task["band"],
                                    task["common_eps"])
        if kind == "catalogue":
            out = study.catalogue_task(task["activation"], task["K"], task["dim"],
                                       task["teacher_seed"], task["starts"],
                                       integer_seed(seed), task["t_max"], task["flatness"],
                                       task["min_span"])
            if task["etas"]:
                out["online"] = study.online_fixed_points(out["points"], task["activation"],
                                                          task["etas"])
            return out
        if kind == "single":
            return study.single_task(task["activation"], task["gauge"], task["dim"], None,
                                     task["flatness"], task["min_span"], task["band"])
        return study.controls_task(task["band"])

    # -- analysis ------------------------------------------------------------------------------

    def analyse(self, config, tasks, results, seed):
        by = {}
        for t, r in zip(tasks, results):
            by.setdefault(t["kind"], []).append((t, r))
        claims = []
        arrays = study.arrays_of(by)
        claims += study.control_checks(by["controls"][0][1])
        claims += study.plateau_checks(by["source"], config)
        claims.append(study.escape_finding(by["source"]))
        claims += study.zero_mode_claims(by["source"], by["catalogue"])
        claims += study.gauge_claims(by["gauge"][0][1], config)
        claims += study.catalogue_checks(by["catalogue"])
        diagnostics = {"catalogue": study.catalogue_table(by["catalogue"]),
                       "single": [r for _, r in by["single"]],
                       "online": {f"{t['activation']} K={t['K']}": r.get("online", [])
                                  for t, r in by["catalogue"]},
                       "protocol": PROTOCOL}
        return arrays, claims, diagnostics

    def plot(self, arrays, config, outdir):
        from . import _landscape_figures as figs

        return figs.plot(arrays, outdir)


EXPERIMENT = Landscape()

"""Prototype specialization in minimal Gaussian-activation MLPs: which structural loss lets the
training inputs be read back from the weights.

Width-``N`` networks ``f(x) = sum_i a_i exp(-(w_i x + b_i)^2 / 2) + c`` are trained on ``N``
uniform inputs with the plain fit and every combination of three structural losses (coverage,
separation, overlap), under every candidate reading of the set-up (coverage one-sided or chamfer,
prototypes initialised inside the data range or broadly; the usage ratio by nearest prototype or by
argmax of the response). One task is one ``(N, initialisation)``: all seeds, loss combinations,
coverage readings and the ``tau`` sweep on the separation-only mask train as one batched program.
The model, the readings and each finding's protocol are fixed in ``derivations/prototypes.md``;
the findings (thresholds fixed beforehand):

1. ``coverage_lowest_error``: ``min over N, k != cov of mean_s(err_k - err_cov) > 0``;
2. ``coverage_usage_above_plain``: ``mean over N of mean_s(usage_cov - usage_plain) > 0``;
3. ``overlap_harmful``: ``min over N of mean_s(err_ov - err_plain) > 0``;
4. ``overlap_fits_as_well``: ``max over N of mean(fit_with_ov - fit_without_ov) / var(y) < 0.01``;
5. ``overlap_expels``: ``mean over N of mean_s(out_ov - out_plain) > 0``;
6. ``coverage_keeps_inside``: ``mean over N and pairs of (out_with_cov - out_without) < 0``;
7. ``separation_large_tau_only``: at the largest ``N``, ``min(D(tau_max) - 0.05,
   0.05 - max_{tau <= 1/N} D(tau)) > 0`` with ``D = mean_s(out_sep(tau) - out_plain)``.

Intervals are paired bootstrap intervals over seeds (:func:`gaugedyn.stats.paired_ci`).
"""

from __future__ import annotations

import numpy as np

from ... import stats
from ..._errors import InputError
from ...harness import Experiment, Param
from . import _measures as pm
from . import _model as model

MEASURES = ("reconstruction_error", "usage_nearest", "usage_argmax", "outside_fraction",
            "fit_error")
FIT_TOLERANCE = 0.01
"""Finding 4: adding overlap may cost at most this much explained variance (fixed beforehand)."""
EXPULSION_MARGIN = 0.05
"""Finding 7: the outside-fraction excess over the plain fit that counts as expulsion."""
CONVERGED = 1e-3
"""Check (initialisation ``inside``): the plain fit's mean fit error over the target variance must be below this."""


def variants(config: dict) -> list[dict]:
    """The runs of one seed in one task: each combination (coverage ones once per coverage
    reading) at the nominal ``tau``, then the ``tau`` sweep on the separation-only mask."""
    out = []
    for mask in model.COMBINATIONS:
        for coverage in (config["coverages"] if mask[0] else (None,)):
            out.append({"mask": mask, "coverage": coverage, "tau": float(config["tau"]),
                        "sweep": False})
    for tau in config["taus"]:
        out.append({"mask": (0, 1, 0), "coverage": None, "tau": float(tau), "sweep": True})
    return out


def variant_index(config: dict, mask, coverage: str | None, *, tau: float | None = None) -> int:
    """Column of a run in a task's ``(S, V)`` arrays (coverage ``None`` for a mask without it)."""
    for j, v in enumerate(variants(config)):
        if tuple(v["mask"]) != tuple(mask) or v["sweep"] != (tau is not None):
            continue
        if (not mask[0] or v["coverage"] == coverage) and (tau is None or v["tau"] == tau):
            return j
    raise KeyError((mask, coverage, tau))


def _runs(config: dict, n: int, init: str, seed: np.random.SeedSequence) -> model.Runs:
    rows = []
    for s in range(int(config["seeds"])):
        x, y = model.training_data(stats.generator(seed, "data", s), n, config["target"])
        p0 = model.initial_parameters(stats.generator(seed, "init", s), n, init)
        rows += [(x, y, p0, v) for v in variants(config)]
    stack = lambda key: np.stack([r[2][key] for r in rows])  # noqa: E731
    return model.Runs(
        x=np.stack([r[0] for r in rows]), y=np.stack([r[1] for r in rows]), w=stack("w"),
        b=stack("b"), a=stack("a"), c=np.zeros(len(rows)),
        mask=np.array([r[3]["mask"] for r in rows], dtype=float),
        chamfer=np.array([r[3]["coverage"] == "chamfer" for r in rows], dtype=float),
        tau=np.array([r[3]["tau"] for r in rows]))


def _quick(config: dict) -> bool:
    """Whether the configuration is smaller than the declared full one (findings provisional)."""
    full = Prototypes.params
    return (config["seeds"] < full["seeds"].default or config["steps"] < full["steps"].default
            or list(config["sizes"]) != list(full["sizes"].default))


class Prototypes(Experiment):
    name = "prototypes"
    description = ("prototype reconstruction, usage and expulsion under coverage, separation and "
                   "overlap losses in width-N Gaussian MLPs")
    params = {
        "sizes": Param(list, [3, 5, 10, 20, 50, 100], quick=[3, 10, 20], lo=3, hi=200,
                       min_len=2, max_len=12, distinct=True, why="time and memory: B N^2 per step",
                       check=lambda v: all(type(n) is int for n in v) and v == sorted(v),
                       allowed="an ascending list of at least 2 and at most 12 distinct integers, "
                       "each in [3, 200] (upper bound: time and memory: B N^2 per step)",
                       help="dataset sizes N (= network widths), ascending"),
        "seeds": Param(int, 10, quick=3, lo=2, hi=200, why="time: one batch row per seed",
                       help="seeds per (N, initialisation, loss)"),
        "steps": Param(int, 4000, quick=2500, lo=1, hi=100_000, why="time",
                       help="full-batch Adam steps"),
        "lr": Param(float, 1e-2, lo=0, lo_open=True, hi=1.0, why="Adam moves each parameter "
                    "by ~lr per step", help="Adam step size"),
        "weight": Param(float, 0.1, lo=0, hi=100.0, why="the structural losses dwarf the fit",
                        help="regularisation weight lambda of every structural loss"),
        "tau": Param(float, 0.05, lo=0, lo_open=True, hi=10.0, why="beyond the data range",
                     help="nominal separation temperature (a length on the input axis)"),
        "taus": Param(list, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5], quick=[0.02, 0.05, 0.5], lo=0, lo_open=True, hi=10.0,
                      min_len=2, max_len=12, distinct=True, why="beyond the data range",
                      help="tau sweep on the separation-only mask"),
        "target": Param(str, "sin", choices=tuple(model.TARGETS), help="targets of the data"),
        "inits": Param(list, list(model.INITS), choices=model.INITS, min_len=1, max_len=2,
                       distinct=True, help="initialisation readings"),
        "coverages": Param(list, list(model.COVERAGES), choices=model.COVERAGES, min_len=1,
                           max_len=2, distinct=True, help="coverage readings"),
        "dtype": Param(str, "float32", choices=("float32", "float64"), help="training dtype"),
    }
    definitions = pm.DEFINITIONS | {
        "loss": "L = L_fit + lambda (m_cov L_cov + m_sep L_sep + m_ov L_ov), mask in {0,1}^3",
        "coverage_one_sided": "(1/M) sum_j min_i (x_j - p_i)^2",
        "coverage_chamfer": "one-sided + (1/N) sum_i min_j (p_i - x_j)^2",
        "separation": "1/(N(N-1)) sum_{i != k} exp(-(p_i - p_k)^2 / (2 tau^2))",
        "overlap": "1/(M N (N-1)) sum_j sum_{i != k} h_ij h_kj, h_ij = exp(-(w_i x_j + b_i)^2/2)",
        "init_inside": "w ~ N(0, N^2), b = -w u, u ~ U[0,1], a ~ N(0, 1/N), c = 0",
        "init_broad": "w ~ N(0, N^2), b ~ N(0, N^2), a ~ N(0, 1/N), c = 0",
        "data": "x_j ~ U[0,1] (j = 1..N); targets sin(2 pi x) or U[-1,1] labels",
    }

    def tasks(self, config):
        spacing = 1.0 / max(config["sizes"])
        if min(config["taus"]) > spacing or max(config["taus"]) <= spacing:
            raise InputError(f"taus = {config['taus']}: the sweep needs a tau <= 1/max(sizes) = "
                             f"{spacing:g} and a tau above it")
        keys = ("seeds", "steps", "lr", "weight", "tau", "taus", "target", "coverages", "dtype")
        return [{"n": int(n), "init": init, **{k: config[k] for k in keys}}
                for n in config["sizes"] for init in config["inits"]]

    def run_task(self, task, seed):
        import torch

        from ...training._support import single_thread

        runs = _runs(task, task["n"], task["init"], seed)
        steps = int(task["steps"])
        record = sorted({0, steps // 2, (3 * steps) // 4, steps})
        with single_thread():
            out = model.train(runs, steps=steps, lr=task["lr"], weight=task["weight"],
                              dtype=getattr(torch, task["dtype"]), record=record)
        got = pm.measure_runs(runs.x, runs.y, out["w"], out["b"], out["a"], out["c"])
        S = int(task["seeds"])
        shape = (S, -1)
        res = {k: got[k].reshape(shape) for k in MEASURES}
        res["prototypes"] = got["prototypes"].reshape(S, -1, task["n"])
        res["x"] = runs.x.reshape(S, -1, task["n"])[:, 0]
        res["fit_history"] = out["fit_history"].reshape(len(record), S, -1)
        res["record"] = np.array(record)
        return res

    def analyse(self, config, tasks, results, seed):
        from ._analysis import analyse

        return analyse(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        from ._analysis import plot

        return plot(arrays, config, outdir)


EXPERIMENT = Prototypes()

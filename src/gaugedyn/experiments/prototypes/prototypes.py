"""Prototype specialization in minimal Gaussian-activation MLPs: which structural loss lets the
training inputs be read back from the weights.

Width-``N`` networks ``f(x) = sum_i a_i exp(-(w_i x + b_i)^2 / 2) + c`` are trained on ``N``
uniform inputs with the plain fit and every combination of three structural losses (coverage,
separation, overlap), under every candidate reading of the set-up; one task is one
``(N, initialisation)``, every seed and loss combination trained as one batched program. The
protocol (runs, readings, the nine findings and their rules) is ``PROTOCOL.md`` beside this
module, its fixed numbers are `._protocol`, the findings `._analysis` and the figures
`._figures`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._errors import InputError
from ...harness import Choice, Experiment, Param
from . import _controls as pc
from . import _measures as pm
from ._protocol import (
    BUDGETS,
    COVERAGES,
    FINDING_MEASURES,
    HEADLINE_STAGES,
    INITS,
    MEASURES,
    REFERENCE_TAU,
    REFERENCE_WEIGHT,
    SENTENCES,
    TARGETS,
    variants,
)

if TYPE_CHECKING:
    from . import _model as model


def _runs(config: dict, n: int, init: str, seed: np.random.SeedSequence) -> model.Runs:
    from . import _model as model  # torch: imported by a run, not by the declaration

    return model.seeded_runs(
        seed, n, config["seeds"], init, config["target"], list(variants(config))
    )


def _contains(config: dict, one: str, many: str) -> None:
    if float(config[one]) not in [float(v) for v in config[many]]:
        raise InputError(
            f"{many} = {config[many]}: must contain {one} = {config[one]:g} (the "
            f"{one} judged is one of those trained)"
        )


def _check(config: dict) -> None:
    """The settings' relations, checked before any work (one `InputError` each)."""
    spacing = 1.0 / max(config["sizes"])
    taus = [float(t) for t in config["taus"]]
    if min(taus) > spacing / 4 or max(taus) <= spacing or taus != sorted(taus):
        raise InputError(
            f"taus = {config['taus']}: the sweep must be ascending, reach "
            f"tau <= 1/(4 max(sizes)) = {spacing / 4:g} and go above "
            f"1/max(sizes) = {spacing:g}"
        )
    if float(config["tau"]) not in [float(t) for t in config["nominal_taus"]] or not set(
        map(float, config["nominal_taus"])
    ) <= set(taus):
        raise InputError(
            f"nominal_taus = {config['nominal_taus']}: must contain tau = "
            f"{config['tau']:g} and lie in taus = {config['taus']}"
        )
    _contains(config, "weight", "weights")
    _contains(config, "lr", "lrs")
    _contains(config, "steps", "budgets")
    w, cap = int(config["window"]), int(config["cap"])
    budgets = [int(b) for b in config["budgets"]]
    if any(b % w for b in budgets) or cap % w or cap < max(budgets):
        raise InputError(
            f"window = {w}, budgets = {budgets}, cap = {cap}: the window must divide "
            "every budget and cap, and cap >= every budget"
        )


def budget_keys(task: dict) -> list[str]:
    """The budget readings a task stores: ``steps<T>`` for each fixed budget ``T``, and
    ``settled``."""
    return [f"steps{int(b)}" for b in sorted(task["budgets"])] + ["settled"]


def _run_task(task: dict, seed: np.random.SeedSequence) -> dict:
    import torch

    from ...training import single_thread
    from . import _model as model

    runs = _runs(task, task["n"], task["init"], seed)
    longest, window = max(int(b) for b in task["budgets"]), int(task["window"])
    record = sorted({0, *(int(b) for b in task["budgets"])})
    kw = {
        "steps": longest,
        "lr": task["lr"],
        "weight": REFERENCE_WEIGHT,
        "record": record,
        "window": window,
        "tolerance": task["settle_tolerance"],
        "cap": int(task["cap"]),
    }
    if task["dtype"] == "float64":
        out = model.train_fused(runs, **kw)
    else:
        with single_thread():
            out = model.train_chunked(runs, dtype=torch.float32, **kw)
    snaps, steps_at = out["snapshots"], out["checkpoints"]
    settled = out["settled_at"]
    at = np.where(settled >= 0, settled, steps_at[-1]) // window
    rows = np.arange(len(at))
    S = int(task["seeds"])
    res: dict[str, np.ndarray] = {}
    for key in budget_keys(task):
        k = at if key == "settled" else np.full(len(at), int(key[5:]) // window)
        got = pm.measure_runs(runs.x, runs.y, *(snaps[p][k, rows] for p in "wbac"))
        res |= {f"{key}__{m}": got[m].reshape(S, -1) for m in MEASURES}
        res[f"{key}__prototypes"] = got["prototypes"].reshape(S, -1, task["n"])
    res["x"] = runs.x.reshape(S, -1, task["n"])[:, 0]
    res["fit_history"] = out["fit_history"].reshape(len(record), S, -1)
    res["record"] = np.array(record)
    res["settled_at"] = settled.reshape(S, -1)
    res["checkpoints"] = steps_at
    with np.errstate(divide="ignore", invalid="ignore"):
        protos = -snaps["b"] / snaps["w"]  # (K, B, N); a row of nan: the slice had stopped
    res["outside_history"] = np.stack(
        [
            [
                np.nan if np.all(np.isnan(w)) else pm.outside_fraction(x, p)
                for x, p, w in zip(runs.x, protos[i], snaps["w"][i])
            ]
            for i in range(len(steps_at))
        ]
    ).reshape(len(steps_at), S, -1)
    return res


class Prototypes(Experiment):
    name = "prototypes"
    description = (
        "prototype reconstruction, usage and expulsion under coverage, separation and "
        "overlap losses in width-N Gaussian MLPs"
    )
    params = {
        "sizes": Param(
            list,
            [3, 5, 10, 20, 50, 100],
            quick=[3, 10, 20],
            lo=3,
            hi=200,
            min_len=2,
            max_len=12,
            distinct=True,
            why="time and memory: B N^2 per step",
            check=lambda v: all(type(n) is int for n in v) and v == sorted(v),
            allowed="an ascending list of at least 2 and at most 12 distinct integers, "
            "each in [3, 200] (upper bound: time and memory: B N^2 per step)",
            help="dataset sizes N (= network widths), ascending",
        ),
        "seeds": Param(
            int,
            40,
            quick=4,
            lo=2,
            hi=200,
            why="time: one batch row per seed",
            help="seeds per (N, initialisation, loss)",
        ),
        "steps": Param(
            int,
            4000,
            quick=2000,
            lo=1,
            hi=100_000,
            why="time",
            help="the fixed budget judged: full-batch Adam steps, one of budgets",
        ),
        "budgets": Param(
            list,
            [1000, 2000, 4000],
            quick=[1000, 2000],
            lo=1,
            hi=100_000,
            min_len=1,
            max_len=8,
            distinct=True,
            why="time",
            help="fixed budgets read from every run's checkpoints (multiples of window, at "
            "most cap); a run that has settled stops only after the largest",
        ),
        "budget": Param(
            str,
            "fixed",
            choices=BUDGETS,
            help="the budget reading judged: the fixed budget steps, or each run read where it "
            "settled (at most cap)",
        ),
        "window": Param(
            int,
            1000,
            quick=1000,
            lo=1,
            hi=100_000,
            why="time",
            help="steps between checkpoints; settling is judged over one window",
        ),
        "settle_tolerance": Param(
            float,
            0.01,
            lo=0,
            lo_open=True,
            hi=1.0,
            why="a length on the unit input interval",
            help="a run has settled when its largest prototype "
            "displacement over one window is below this",
        ),
        "cap": Param(
            int,
            6000,
            quick=2000,
            lo=1,
            hi=200_000,
            why="time",
            help="most steps of the settled reading (a multiple of window, >= steps)",
        ),
        "lr": Param(
            float,
            1e-2,
            lo=0,
            lo_open=True,
            hi=1.0,
            why="Adam moves each parameter by ~lr per step",
            help="the Adam step size judged, one of lrs (a guess: the abstract gives none)",
        ),
        "lrs": Param(
            list,
            [1e-2, 1e-3],
            lo=0,
            lo_open=True,
            hi=1.0,
            min_len=1,
            max_len=4,
            distinct=True,
            why="Adam moves each parameter by ~lr per step",
            help="Adam step sizes trained, one task each; must contain lr",
        ),
        "weight": Param(
            float,
            REFERENCE_WEIGHT,
            lo=0,
            hi=100.0,
            why="the structural losses dwarf the fit",
            help="the regularisation weight lambda judged, one of weights (a guess: the "
            "abstract gives none; the combinations of several losses train at "
            f"{REFERENCE_WEIGHT:g} only)",
        ),
        "weights": Param(
            list,
            [0.03, 0.1, 0.3],
            lo=0,
            lo_open=True,
            hi=100.0,
            min_len=1,
            max_len=6,
            distinct=True,
            why="the structural losses dwarf the fit",
            help="lambdas trained on the single-loss masks; must contain weight",
        ),
        "tau": Param(
            float,
            REFERENCE_TAU,
            lo=0,
            lo_open=True,
            hi=10.0,
            why="beyond the data range",
            help="the separation temperature judged, one of nominal_taus (a length on the input "
            f"axis; a guess; the combinations train at {REFERENCE_TAU:g} only)",
        ),
        "taus": Param(
            list,
            [0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
            lo=0,
            lo_open=True,
            hi=10.0,
            min_len=2,
            max_len=12,
            distinct=True,
            why="beyond the data range",
            help="tau sweep on the separation-only mask, ascending; its largest is "
            "the 'large temperature'",
        ),
        "nominal_taus": Param(
            list,
            [0.01, 0.02, 0.05, 0.1],
            lo=0,
            lo_open=True,
            hi=10.0,
            min_len=1,
            max_len=12,
            distinct=True,
            why="beyond the data range",
            help="plausible nominal temperatures, trained on the separation-only mask at every "
            "lambda; a subset of taus containing tau",
        ),
        "target": Param(str, "sin", choices=tuple(TARGETS), help="targets of the data"),
        "inits": Param(
            list,
            list(INITS),
            choices=INITS,
            min_len=1,
            max_len=2,
            distinct=True,
            help="initialisation readings",
        ),
        "coverages": Param(
            list,
            list(COVERAGES),
            choices=COVERAGES,
            min_len=1,
            max_len=2,
            distinct=True,
            help="coverage readings",
        ),
        "design": Param(
            str,
            "full",
            choices=("full", *HEADLINE_STAGES),
            help="full: every task of the declared set-up space; headline, headline-2: only "
            "what coverage_lowest_error needs under the primary reading, at the stage's seed "
            "count per size declared before its run (_protocol.HEADLINE_STAGES; the extensions "
            "'headline' and 'headline-2')",
        ),
        "dtype": Param(
            str,
            "float64",
            choices=("float32", "float64"),
            help="training dtype: float64 trains through the compiled kernel "
            "(model.train_fused), float32 through torch (model.train_chunked)",
        ),
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

    measures = FINDING_MEASURES
    sentences = SENTENCES
    extensions = {stage: {"design": stage} for stage in HEADLINE_STAGES}

    def extension_table(self, runs):
        """The headline configuration's finding: its verdict, estimate and interval, power at
        the declared smallest difference (per size and joint), the seeds per size and the runs
        trained, beside the abstract's 480 runs (`._headline.extension_table`)."""
        from ._headline import extension_table

        return extension_table(runs)

    space = {
        "lr": Choice(
            values=(1e-3,),
            why="the abstract gives no step size; ten times smaller in the same budget is as "
            "plausible a training as 1e-2",
        ),
        "steps": Choice(
            values=(1000, 2000),
            why="the abstract gives no budget and expulsion is a drift: a quarter and a half "
            "of the declared budget (of the quick one too)",
        ),
        "budget": Choice(
            values=("settled",),
            why="the abstract gives no budget: trained until the prototypes stop moving is "
            "as plausible a reading as a fixed one",
        ),
        "tau": Choice(
            values=(0.01, 0.02, 0.1),
            why="the nominal temperature is a guess; the plausible nominal readings span the "
            "sample spacing at N = 100 to twice the guess",
        ),
        "weight": Choice(
            values=(0.03, 0.3),
            why="the abstract gives no lambda; a factor 3 either side of the nominal 0.1",
        ),
    }

    def controls(self, config):
        return pc.controls(config)

    def tasks(self, config):
        _check(config)
        if config["design"] in HEADLINE_STAGES:
            from . import _headline

            return _headline.tasks(config)
        keys = (
            "seeds",
            "budgets",
            "window",
            "settle_tolerance",
            "cap",
            "weights",
            "taus",
            "nominal_taus",
            "target",
            "coverages",
            "dtype",
        )
        return [
            {"n": int(n), "init": init, "lr": float(lr), **{k: config[k] for k in keys}}
            for n in config["sizes"]
            for init in config["inits"]
            for lr in config["lrs"]
        ]

    def run_task(self, task, seed):
        if task.get("design") in HEADLINE_STAGES:
            from . import _headline

            return _headline.run_task(task, seed)
        return _run_task(task, seed)

    def analyse(self, config, tasks, results, seed):
        if config["design"] in HEADLINE_STAGES:
            from . import _headline

            return _headline.analyse(config, tasks, results, seed)
        from ._analysis import analyse

        return analyse(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        if config["design"] in HEADLINE_STAGES:
            return []  # one finding, no figure: its table is the docs' (publish:extensions)
        from ._figures import plot

        return plot(arrays, config, outdir)


EXPERIMENT = Prototypes()

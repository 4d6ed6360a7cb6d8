"""Conservation laws counted, not assumed: how many independent laws a network's gradient flow
has, which symmetries give them, whether the gauge recorder tracks all of them, and how the
recorded invariants drift under gradient descent.

The protocol (set-up, claims and their rules, fixed before any run) is ``PROTOCOL.md`` in this
folder, its fixed numbers `._protocol`; this module declares the settings and runs the
tasks, `._analysis.conservation_laws()` turns the results into claims and
`._figures.conservation_laws()` draws the figures.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from . import _analysis as ca
from . import _controls as cc
from . import _figures as cf
from . import _protocol as pr

_SUMMARY = (
    "laws",
    "span",
    "lie",
    "symmetries",
    "depth",
    "gap",
    "confirmed",
    "saturated",
    "stable",
    "points",
)


class ConservationLaws(Experiment):
    name = "conservation_laws"
    measures = pr.FINDING_MEASURES
    description = (
        "the independent conservation laws of gradient flow counted at generic "
        "points (Lie trace of the fields) for two-layer ReLU and linear, deep "
        "linear, polynomial, multi-head and grouped-query attention networks, "
        "against the derived counts and the symmetries; the gauge recorder's "
        "completeness; the eta^2 drift of every recorded invariant"
    )
    params = {
        "families": Param(
            list,
            list(pr.FAMILIES),
            choices=pr.FAMILIES,
            min_len=1,
            max_len=len(pr.FAMILIES),
            distinct=True,
            help="families of the catalogue whose counts are judged",
        ),
        "quick_catalogue": Param(
            bool, False, quick=True, help="count one architecture per family only"
        ),
        "readings": Param(
            list,
            list(pr.READINGS),
            quick=["function"],
            choices=pr.READINGS,
            min_len=1,
            max_len=2,
            distinct=True,
            help="the flow's fields: outputs' or per-sample losses' gradients",
        ),
        "points": Param(
            int,
            3,
            lo=2,
            hi=16,
            why="every point is a full count",
            help="generic points per count (the generic count needs two)",
        ),
        "rtol": Param(
            float,
            1e-9,
            lo=1e-12,
            hi=1e-6,
            why="float64 rounding sits near 1e-15, the smallest genuine singular values near 1e-4",
            help="relative tolerance of every rank decision",
        ),
        "vector_std": Param(
            float,
            0.2,
            lo=0.05,
            hi=1.0,
            why="larger biases leave ReLU units dead on most data",
            help="standard deviation of biases at a generic point",
        ),
        "data_factor": Param(
            float,
            4.0,
            lo=2.0,
            hi=16.0,
            why="the Jacobian has factor x D rows",
            help="Jacobian rows per parameter in the catalogue's data",
        ),
        "recorder_factor": Param(
            float,
            10.0,
            lo=2.0,
            hi=40.0,
            why="ReLU networks with biases need rich data",
            help="Jacobian rows per parameter for the recorder's ReLU "
            "models with biases (the others: data_factor)",
        ),
        "recorder_models": Param(
            list,
            list(pr.RECORDER_MODELS),
            quick=list(pr.QUICK_RECORDER),
            choices=pr.RECORDER_MODELS,
            min_len=0,
            max_len=len(pr.RECORDER_MODELS),
            distinct=True,
            help="models whose recorded invariants are compared",
        ),
        "perturbation": Param(
            float,
            0.1,
            lo=0.01,
            hi=1.0,
            why="relu(z) + eps z^2 at eps ~ 1",
            help="eps of the symmetry-breaking control",
        ),
        "drift_models": Param(
            list,
            list(pr.DRIFT_MODELS),
            choices=pr.DRIFT_MODELS,
            min_len=1,
            max_len=3,
            distinct=True,
            help="digits networks whose invariants' drift is fitted",
        ),
        "drift_readings": Param(
            list,
            list(pr.SLOPE_BANDS),
            quick=["steps"],
            choices=tuple(pr.SLOPE_BANDS),
            min_len=1,
            max_len=2,
            distinct=True,
            help="fixed steps (slope 2), fixed time (1)",
        ),
        "drift_seeds": Param(
            int,
            8,
            quick=7,
            lo=7,
            hi=100,
            why="the slopes' median rule (median_band) reads NOT HELD off its 97.5% interval, "
            "finite at every draw from seven seeds (2^-7 <= 1.25%)",
            help="initial models per drift network",
        ),
        "eta0": Param(
            float,
            0.02,
            lo=0.001,
            hi=0.05,
            why="GD on these networks is smooth below gauge_on_networks' 0.05",
            help="largest GD step size",
        ),
        "drift_sizes": Param(
            int,
            6,
            lo=6,
            hi=10,
            why="each halving doubles the time reading's "
            "steps; 6 leave a fit four residual degrees of freedom",
            help="step sizes eta0 2^-k, k < drift_sizes",
        ),
        "drift_steps": Param(
            int,
            5,
            lo=2,
            hi=50,
            why="the steps reading needs eta0 S small",
            help="steps S at every size (the time T = S eta0)",
        ),
        "samples": Param(
            int,
            256,
            lo=64,
            hi=1797,
            why="load_digits holds 1797 images",
            help="training images of the drift runs",
        ),
        "chunk": Param(
            int, 4, lo=1, hi=64, why="a task is one worker's share", help="drift seeds per task"
        ),
    }

    space = {
        "rtol": Choice(
            values=(1e-11, 1e-7),
            why="the abstract fixes no rank tolerance; any between float64 rounding (near "
            "1e-15) and the smallest genuine singular values (near 1e-4) counts the same laws",
        ),
        "vector_std": Choice(
            values=(0.1, 0.5),
            why="a generic point has no declared bias spread; any that leaves the ReLU units "
            "alive on the data is generic",
        ),
    }

    def controls(self, config):
        return cc.controls(config)

    def tasks(self, config):
        shared = {k: config[k] for k in ("points", "rtol", "vector_std")}
        cat = [pr.CATALOGUE[i] for i in pr.QUICK] if config["quick_catalogue"] else pr.CATALOGUE
        out = [
            {
                "part": "count",
                "spec": s,
                "readings": config["readings"],
                "factor": config["data_factor"],
                **shared,
            }
            for s in cat
            if s["family"] in config["families"]
        ]
        out.append(
            {
                "part": "count",
                "spec": pr.FILLING,
                "readings": config["readings"],
                "factor": config["data_factor"],
                **shared,
            }
        )
        out += [
            {
                "part": "recorder",
                "model": m,
                "factor": config["recorder_factor"],
                "plain_factor": config["data_factor"],
                **shared,
            }
            for m in config["recorder_models"]
        ]
        drift = {
            k: config[k]
            for k in ("eta0", "drift_sizes", "drift_steps", "samples", "drift_readings")
        }
        for first in range(0, config["drift_seeds"], config["chunk"]):
            n = min(config["chunk"], config["drift_seeds"] - first)
            out += [
                {"part": "drift", "model": m, "first_seed": first, "n_seeds": n, **drift}
                for m in config["drift_models"]
            ]
        return out

    def run_task(self, task, seed):
        import time

        from ...training import single_thread

        t0 = time.perf_counter()
        with single_thread():
            out = RUNS[task["part"]](task, seed)
        out["wall_time_s"] = np.array(time.perf_counter() - t0)
        return out

    def analyse(self, config, tasks, results, seed):
        return ca.conservation_laws(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        return cf.conservation_laws(arrays, config, outdir)


def _summary(r, prefix: str) -> dict:
    """The arrays of one `gaugedyn.gauge.ConservationLaws`, keys ``prefix_...``."""
    out = {
        f"{prefix}_{k}": np.array(getattr(r, k) if k != "points" else len(r.points), dtype=float)
        for k in _SUMMARY
    }
    near = [
        list(d["near"]) + [np.nan] * (4 - len(d["near"])) for p in r.points for d in p["decisions"]
    ]
    out[f"{prefix}_near"] = np.array(near, dtype=float)  # s_(r-1), s_r | s_(r+1), s_(r+2)
    if r.known is not None:
        k = r.known
        out |= {
            f"{prefix}_known_count": np.array(k["count"], dtype=float),
            f"{prefix}_known_rank": np.array(k["rank"], dtype=float),
            f"{prefix}_known_inside": np.array(k["inside_lie"]),
            f"{prefix}_known_complete": np.array(float(k["complete"])),
        }
    if r.generators is not None:
        g = r.generators
        out |= {
            f"{prefix}_gen_rank": np.array(g["rank"], dtype=float),
            f"{prefix}_gen_symmetric": np.array(g["symmetric"]["rank"], dtype=float),
            f"{prefix}_gen_silent": np.array(g["silent"], dtype=float),
            f"{prefix}_gen_inside": np.array(g["symmetric"]["inside_lie"]),
            f"{prefix}_gen_null": np.array(
                max(g["symmetric"]["null_residual"], g["antisymmetric"]["null_residual"])
            ),
            f"{prefix}_noether": np.array(float(g["noether"])),
            f"{prefix}_spanned": np.array(float(g["symmetries_spanned"])),
        }
    return out


def _count(task, seed) -> dict:
    from ...gauge import conservation_laws
    from ._architectures import build

    a = build(task["spec"], task["factor"])
    out = {
        "derived_laws": np.array(a.laws, dtype=float),
        "derived_symmetries": np.array(a.symmetries, dtype=float),
    }
    for reading in task["readings"]:
        r = conservation_laws(
            a.model,
            a.inputs,
            fields=reading,
            points=task["points"],
            rtol=task["rtol"],
            vector_std=task["vector_std"],
            min_gap=pr.MIN_GAP,
            seed=_int(seed),
            **a.count_kwargs(),
        )
        out |= _summary(r, reading)
    return out


def _recorder(task, seed) -> dict:
    from ...gauge import GaugeRecorder
    from ._networks import recorder_model

    m = recorder_model(task["model"])
    kw = {
        "points": task["points"],
        "rtol": task["rtol"],
        "vector_std": task["vector_std"],
        "min_gap": pr.MIN_GAP,
        "seed": _int(seed),
    } | m.kwargs
    D = sum(p.numel() for p in m.model.parameters())
    factor = task["factor"] if m.rich else task["plain_factor"]
    n = (
        800
        if task["model"].startswith("docs_bn")
        else max(24, int(np.ceil(factor * D / m.outputs)))
    )
    r = GaugeRecorder(m.model).completeness((n, *m.sample), **kw)
    return _summary(r, "count") | {
        "derived_laws": np.array(m.laws, dtype=float),
        "derived_symmetries": np.array(m.symmetries, dtype=float),
        "samples": np.array(n, dtype=float),
    }


def _drift(task, seed) -> dict:
    import torch

    from ...training import digits_inputs, digits_network, digits_tensors
    from . import _drift as dr

    x, y = digits_tensors(task["samples"])
    x = digits_inputs(task["model"], x)
    out: dict = {}
    for child in seed.spawn(task["n_seeds"]):
        torch_seed = _int(child)

        def make(s=torch_seed):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(s)
                return digits_network(task["model"])

        for reading in task["drift_readings"]:
            res = dr.drift_rates(
                make,
                x,
                y,
                eta0=task["eta0"],
                sizes=task["drift_sizes"],
                steps=task["drift_steps"],
                reading=reading,
            )
            out.setdefault(f"{reading}_eta", res["eta"])
            out.setdefault(f"{reading}_gap", []).append(res["gap"])
            out.setdefault(f"{reading}_frozen", []).append(res["frozen"])
            for name, g in res["groups"].items():
                key = f"{reading}|{name}|{g['kind']}"
                out.setdefault(f"{key}|drift", []).append(g["drift"])
                if "slope" in g:
                    out.setdefault(f"{key}|slope", []).append(g["slope"])
                    out.setdefault(f"{key}|unit_slopes", []).append(g["unit_slopes"])
    return {
        k: (np.concatenate(v) if k.endswith("unit_slopes") else np.asarray(v))
        for k, v in out.items()
    }


def _int(seed) -> int:
    from ..._meta import integer_seed

    return integer_seed(seed)


RUNS = {
    "count": _count,
    "recorder": _recorder,
    "drift": _drift,
}
"""The run of each part of the experiment, by the task's ``part``."""

EXPERIMENT = ConservationLaws()

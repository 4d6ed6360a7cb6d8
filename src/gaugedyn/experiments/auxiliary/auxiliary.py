"""Auxiliary learning in the teacher-student model: online SGD on a weighted joint loss against
its ODE, the linear closed form, the benefit map, the fluctuation-dissipation relation and the
forcing-versus-noise split.

The model is declared in ``derivations/auxiliary.md``; the protocol (runs, readings, findings,
rules, controls) is ``PROTOCOL.md`` beside this module, its fixed numbers `._protocol`, the
runs `._runs`, the findings `._analysis` and the figures `._figures`.
"""

from __future__ import annotations

import numpy as np

from ...harness import Choice, Experiment, Param
from . import _controls as cc
from . import _protocol as pc
from . import _runs as runs

_RUN = {
    "trajectory": runs.run_trajectory,
    "closed_form": runs.run_closed_form,
    "order": runs.run_order,
    "map": runs.run_map,
    "fdt_ode": runs.run_fdt_ode,
    "fdt_sim": runs.run_fdt_sim,
}


_TAU_WHY = "tau = eta t; steps = tau D / eta"


def _fraction(lo: float, hi: float, why: str, help: str, default, quick=None) -> Param:
    return Param(float, default, quick=quick, lo=lo, hi=hi, why=why, help=help)


def _grid(default, quick, lo, hi, help: str, why: str) -> Param:
    return Param(
        list,
        default,
        quick=quick,
        lo=lo,
        hi=hi,
        min_len=1,
        max_len=12,
        distinct=True,
        item=float,
        why=why,
        help=help,
    )


class Auxiliary(Experiment):
    name = "auxiliary"
    measures = pc.FINDING_MEASURES
    description = (
        "auxiliary learning in the teacher-student model: online SGD against its ODE, "
        "the linear closed form, the benefit map, the FDT and forcing against noise"
    )
    params = {
        # section 1: the ODE against simulations
        "dims": Param(
            list,
            [1000, 10000],
            quick=[1000],
            lo=10,
            hi=10**6,
            min_len=1,
            max_len=4,
            distinct=True,
            item=int,
            why="the chain costs the same at every D; "
            "above 1e6 the O(1/D) effects are below float64 sums of a run",
            help="input dimensions of the chain (exact SGD in law) in section 1",
        ),
        "weight_dim": Param(
            int,
            1000,
            quick=300,
            lo=10,
            hi=10**5,
            why="weight space costs D per step",
            help="D of weight-space SGD over the whole run (section 1)",
        ),
        "wide_dim": Param(
            int,
            10000,
            quick=1000,
            lo=10,
            hi=10**5,
            why="weight space costs D per step",
            help="D of the short weight-space runs (section 1)",
        ),
        "wide_t": _fraction(
            0,
            100,
            "steps = wide_t wide_dim per seed",
            "training time t = steps / D of the wide weight-space runs",
            0.5,
            0.3,
        ),
        "traj_seeds": Param(
            int,
            20,
            quick=20,
            lo=4,
            hi=1000,
            why="one kernel call per seed",
            help="seeds per trajectory run (section 1)",
        ),
        "wide_seeds": Param(
            int,
            20,
            quick=20,
            lo=4,
            hi=1000,
            why="one kernel call per seed",
            help="seeds per wide weight-space run",
        ),
        "traj_eta": _fraction(
            0,
            2,
            "the erf dynamics diverge near eta = pi; linear near 2",
            "learning rate of section 1 (step eta / D)",
            0.4,
        ),
        "traj_t": _fraction(
            0, 200, "steps = t D per seed", "training time t of section 1", 8.0, 3.0
        ),
        "traj_points": Param(
            int,
            16,
            quick=8,
            lo=4,
            hi=200,
            why="records per run",
            help="log-spaced records of section 1",
        ),
        "traj_rho": _fraction(
            -1, 1, "an overlap of unit teachers", "teachers' overlap, sec. 1", 0.5
        ),
        "traj_gamma": _fraction(
            0,
            10,
            "an auxiliary weight beyond 10 is the auxiliary task",
            "auxiliary weight of section 1",
            0.5,
        ),
        "traj_sigma": _fraction(
            0,
            10,
            "label noise beyond 10 swamps the teachers",
            "label noise of both tasks, section 1",
            0.5,
        ),
        # section 2: the linear closed form
        "lin_eta": _fraction(
            0,
            0.5,
            "the closed form is first order in eta",
            "learning rate of the closed-form comparison",
            0.0125,
            0.05,
        ),
        "lin_gamma": _fraction(0, 10, "as traj_gamma", "auxiliary weight of section 2", 0.5),
        "lin_rhos": _grid(
            [0.0, 0.25, 0.5, 0.75, 1.0],
            [0.0, 1.0],
            -1,
            1,
            "teachers' overlaps of section 2",
            "an overlap is a cosine",
        ),
        "lin_sigmas": _grid(
            [0.0, 0.5],
            [0.5],
            0,
            10,
            "label noises of section 2",
            "label noise beyond 10 swamps the teachers",
        ),
        "lin_tau": Param(
            list,
            [0.25, 1.5],
            lo=0.01,
            hi=20,
            min_len=2,
            max_len=2,
            item=float,
            why=_TAU_WHY,
            check=lambda v: v[0] < v[1],
            allowed=f"two increasing times tau = eta t (at most 2 values), each in [0.01, 20] "
            f"(upper bound: {_TAU_WHY})",
            help="first and last record of section 2 in tau = eta t",
        ),
        "lin_points": Param(
            int,
            6,
            quick=3,
            lo=2,
            hi=100,
            why="records per run",
            help="records of section 2 (evenly in tau)",
        ),
        "lin_seeds": Param(
            int,
            48,
            quick=6,
            lo=4,
            hi=1000,
            why="one kernel call per seed",
            help="seeds per closed-form run (48: PROTOCOL.md, section 2, design change)",
        ),
        "lin_dim": Param(
            int,
            1000,
            quick=300,
            lo=10,
            hi=10**6,
            why="steps = tau D / eta",
            help="D of the closed-form runs (the chain)",
        ),
        "control_shift": _fraction(
            0,
            5,
            "a shift of the auxiliary weight",
            "the closed-form control's wrong gamma is lin_gamma + this",
            0.2,
        ),
        # section 3: the benefit map
        "map_eta": _fraction(0, 0.5, "first order in eta", "learning rate of the map", 0.1),
        "map_gamma": _fraction(0, 10, "as traj_gamma", "auxiliary weight of the map", 0.25),
        "map_rhos": _grid(
            [0.0, 0.25, 0.5, 0.75, 1.0],
            [0.0, 1.0],
            -1,
            1,
            "teachers' overlaps of the map",
            "an overlap is a cosine",
        ),
        "map_sigmas": _grid(
            [0.0, 1.0, 2.0],
            [0.0, 2.0],
            0,
            10,
            "label noises of the map",
            "label noise beyond 10 swamps the teachers",
        ),
        "map_window": Param(
            list,
            [3.0, 8.0],
            quick=[3.0, 5.0],
            lo=0.1,
            hi=50,
            min_len=2,
            max_len=2,
            item=float,
            why=_TAU_WHY,
            check=lambda v: v[0] < v[1],
            allowed=f"two increasing times tau = eta t (at most 2 values), each in [0.1, 50] "
            f"(upper bound: {_TAU_WHY})",
            help="the window in tau = eta t over which the errors average",
        ),
        "map_points": Param(
            int,
            81,
            quick=41,
            lo=10,
            hi=2000,
            why="records per run",
            help="evenly spaced records of a map run (the decomposition's trapezoid)",
        ),
        "map_seeds": Param(
            int,
            12,
            quick=6,
            lo=4,
            hi=1000,
            why="one kernel call per seed",
            help="seeds per map run",
        ),
        "map_dim": Param(
            int,
            1000,
            quick=300,
            lo=10,
            hi=10**6,
            why="steps = tau D / eta",
            help="D of the map runs (the chain)",
        ),
        # section 4: the fluctuation-dissipation relation
        "fdt_eta": _fraction(
            0, 0.5, "first order in eta", "learning rate of the FDT runs", 0.05, 0.1
        ),
        "fdt_gamma": _fraction(0, 10, "as traj_gamma", "auxiliary weight of the FDT", 0.5),
        "fdt_sigma": _fraction(0, 10, "as traj_sigma", "label noise of the FDT", 0.5),
        "fdt_rhos": _grid(
            [1.0, 0.5],
            [1.0, 0.5],
            -1,
            1,
            "overlaps of the FDT (1: identical teachers, the single-task form)",
            "an overlap is a cosine",
        ),
        "fdt_relaxations": _fraction(
            1,
            20,
            "burn-in and window in bulk relaxation times",
            "relaxation times of burn-in (and of the window)",
            5.0,
            3.0,
        ),
        "fdt_points": Param(
            int,
            101,
            quick=41,
            lo=10,
            hi=2000,
            why="records per run",
            help="evenly spaced records of an FDT run",
        ),
        "fdt_seeds": Param(
            int,
            16,
            quick=6,
            lo=4,
            hi=1000,
            why="one kernel call per seed",
            help="seeds per FDT run",
        ),
        "fdt_dim": Param(
            int,
            1000,
            quick=300,
            lo=10,
            hi=10**6,
            why="steps = t D",
            help="D of the FDT runs (the chain)",
        ),
        "fdt_ode_activations": Param(
            list,
            list(pc.FDT_ODE_ACTIVATIONS),
            quick=["erf", "relu"],
            choices=pc.FDT_ODE_ACTIVATIONS,
            min_len=1,
            distinct=True,
            help="activations of the FDT along the ODE",
        ),
    }

    space = {
        "map_gamma": Choice(
            values=(0.1, 0.5),
            why="the abstract's sign change of the benefit is claimed at no particular auxiliary "
            "weight; a smaller and a larger weight than 0.25 move the boundary, not its existence",
        ),
        "map_window": Choice(
            values=([2.0, 5.0], [4.0, 8.0]),
            why="the benefit is read as an average over a window in tau = eta t that no paper "
            "fixes; an earlier and a later window of the transient",
        ),
        "fdt_relaxations": Choice(
            lo=3.0,
            hi=10.0,
            why="the stationary state is reached after a burn-in of a few bulk relaxation "
            "times that the abstract does not fix; 3 to 10 of them",
        ),
        "lin_eta": Choice(
            values=(0.00625, 0.025),
            why="the closed form is first order in eta and the abstract fixes no learning rate "
            "at which it is compared; half and twice the default",
        ),
    }

    def controls(self, config: dict) -> list:
        return cc.controls(config)

    def tasks(self, config: dict) -> list[dict]:
        return (
            _trajectory_tasks(config)
            + _linear_tasks(config)
            + _map_tasks(config)
            + _fdt_tasks(config)
        )

    def run_task(self, task: dict, seed: np.random.SeedSequence) -> dict:
        return _RUN[task["kind"]](task, seed)

    def analyse(self, config, tasks, results, seed):
        from . import _analysis

        return _analysis.analyse(config, tasks, results, seed)

    def plot(self, arrays, config, outdir):
        from . import _figures

        return _figures.plot(arrays, config, outdir)


def _trajectory_tasks(c: dict) -> list[dict]:
    """Section 1: every activation, reading, backend and ``D``."""
    base = {
        "kind": "trajectory",
        "rho": c["traj_rho"],
        "gamma": c["traj_gamma"],
        "sigma": c["traj_sigma"],
        "eta": c["traj_eta"],
        "points": c["traj_points"],
    }
    runs_ = [
        ("compiled", c["weight_dim"], c["traj_t"], c["traj_seeds"]),
        ("compiled", c["wide_dim"], c["wide_t"], c["wide_seeds"]),
    ]
    runs_ += [("chain", d, c["traj_t"], c["traj_seeds"]) for d in c["dims"]]
    return [
        base
        | {"activation": act, "reading": reading, "backend": backend, "dim": int(dim)}
        | {"t_end": t_end, "seeds": seeds}
        for act in pc.TRAJECTORY_ACTIVATIONS
        for reading in pc.READINGS
        for backend, dim, t_end, seeds in runs_
    ]


_LINEAR = {"activation": "linear", "reading": "one_output", "lr2": 0.0, "backend": "chain"}


def _linear_tasks(c: dict) -> list[dict]:
    """Section 2: the closed form's runs over (rho, sigma) and its order fit."""
    lin = _LINEAR | {"gamma": c["lin_gamma"], "eta": c["lin_eta"]}
    runs_ = [
        lin
        | {"kind": "closed_form", "rho": rho, "sigma": sigma, "tau": c["lin_tau"]}
        | {"points": c["lin_points"], "seeds": c["lin_seeds"], "dim": c["lin_dim"]}
        | {"control_shift": c["control_shift"]}
        for rho in c["lin_rhos"]
        for sigma in c["lin_sigmas"]
    ]
    return runs_ + [lin | {"kind": "order", "rho": 0.5, "sigma": 0.5, "dim": 100}]


def _map_tasks(c: dict) -> list[dict]:
    """Section 3: per reading and sigma, the single task and every rho."""
    out = []
    for reading in pc.READINGS:
        m = _LINEAR | {
            "kind": "map",
            "reading": reading,
            "lr2": 0.0 if reading == "one_output" else 1.0,
            "eta": c["map_eta"],
            "window": c["map_window"],
            "points": c["map_points"],
            "seeds": c["map_seeds"],
            "dim": c["map_dim"],
        }
        for sigma in c["map_sigmas"]:
            out.append(m | {"rho": 1.0, "sigma": sigma, "gamma": 0.0, "single": True})
            out += [
                m | {"rho": rho, "sigma": sigma, "gamma": c["map_gamma"], "single": False}
                for rho in c["map_rhos"]
            ]
    return out


def _fdt_tasks(c: dict) -> list[dict]:
    """Section 4: along the ODE (every activation of the setting, both readings, each rho) and in
    simulation (the single task as well at rho = 1; no two-head ReLU run: no stationary
    state)."""
    fdt = {"gamma": c["fdt_gamma"], "sigma": c["fdt_sigma"], "dim": 100}

    def lr2(reading):
        return 0.0 if reading == "one_output" else 1.0

    out = [
        fdt
        | {"kind": "fdt_ode", "activation": act, "reading": reading, "rho": rho}
        | {"lr2": lr2(reading), "eta": pc.FDT_ETAS[0]}
        for act in c["fdt_ode_activations"]
        for reading in pc.READINGS
        for rho in c["fdt_rhos"]
    ]
    sim = {"kind": "fdt_sim", "eta": c["fdt_eta"], "backend": "chain", "dim": c["fdt_dim"]}
    sim |= {"seeds": c["fdt_seeds"], "relaxations": c["fdt_relaxations"]}
    sim |= {"points": c["fdt_points"]}
    for act in pc.FDT_SIM_ACTIVATIONS:
        for reading in pc.READINGS:
            if act == "relu" and reading == "two_heads":
                continue
            for rho in c["fdt_rhos"]:
                for gamma in [c["fdt_gamma"], 0.0] if rho == 1 else [c["fdt_gamma"]]:
                    out.append(
                        fdt
                        | sim
                        | {"activation": act, "reading": reading, "rho": rho, "gamma": gamma}
                        | {"lr2": lr2(reading)}
                    )
    return out


EXPERIMENT = Auxiliary()

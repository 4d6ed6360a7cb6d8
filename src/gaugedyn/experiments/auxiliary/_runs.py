"""The runs of the ``auxiliary`` experiment: one function per task kind, each a pure function of
its task (and seed), returning arrays. The protocol is ``PROTOCOL.md``; the fixed numbers
`._protocol`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ... import training as tr
from ...training import AuxiliaryProblem, JointLoss
from . import _protocol as pc

if TYPE_CHECKING:
    from ...training import TrainConfig


def problem(task: dict) -> AuxiliaryProblem:
    """The task's problem: the linear tasks start from `LINEAR_START`, the FDT's from
    `FDT_START`, the others from `START` (``R_aux = R_main`` at ``rho = 1``, where
    the teachers coincide)."""
    start = {
        "closed_form": pc.LINEAR_START,
        "map": pc.LINEAR_START,
        "order": pc.LINEAR_START,
        "fdt_ode": pc.FDT_START,
        "fdt_sim": pc.FDT_START,
    }.get(task["kind"], pc.START)
    r_aux = start["R_main"] if task["rho"] == 1 else start["R_aux"]
    return tr.two_teachers(
        int(task["dim"]),
        float(task["rho"]),
        activation=task["activation"],
        Q=start["Q"],
        R_main=start["R_main"],
        R_aux=r_aux,
        a=start["a"],
    )


def loss(task: dict, gamma: float | None = None) -> JointLoss:
    g = task["gamma"] if gamma is None else gamma
    return JointLoss(float(g), float(task["sigma"]), float(task["sigma"]), task["reading"])


def lr2(task: dict) -> float:
    """The heads' relative rate: a fixed head (0) for the one-output linear student and the FDT
    runs of one output; trained heads (1) otherwise."""
    return float(task.get("lr2", 1.0))


def _config(task: dict, times) -> TrainConfig:
    from ...training import TrainConfig  # torch: imported by a run, not by the declaration

    D = int(task["dim"])
    steps = np.unique(np.round(np.asarray(times) * D).astype(np.int64))
    return TrainConfig(
        optimizer="sgd",
        samples=None,
        lr=float(task["eta"]),
        steps=int(steps[-1]),
        lr2=lr2(task),
        record_steps=tuple(int(s) for s in steps),
    )


def _simulate(
    task: dict,
    seed: np.random.SeedSequence,
    times,
    start: AuxiliaryProblem | None = None,
    gamma: float | None = None,
) -> dict:
    from ..._meta import integer_seed

    p = problem(task) if start is None else start
    return tr.train_auxiliary(
        p,
        loss(task, gamma),
        _config(task, times),
        int(task["seeds"]),
        integer_seed(seed),
        backend=task["backend"],
        threads=1,
    )


def trajectory_times(task: dict) -> np.ndarray:
    """Log-spaced records from ``t = T_MIN / 2`` to ``t_end`` (``points`` of them) and ``t = 0``."""
    t = np.geomspace(pc.T_MIN / 2, float(task["t_end"]), int(task["points"]))
    return np.concatenate([[0.0], t])


def run_trajectory(task: dict, seed) -> dict:
    """Section 1: one activation, reading, backend and ``D``: the seeds' errors and the ODE with
    and without its ``eta^2`` term at the records."""
    sim = _simulate(task, seed, trajectory_times(task))
    p, lo = problem(task), loss(task)
    out = {
        "t": sim["t"],
        "eps_main": sim["eps_main"],
        "eps_aux": sim["eps_aux"],
        "wall_time_s": np.array(sim["diagnostics"]["wall_time_s"]),
    }
    for label, noise in (("ode", True), ("ode_no_noise", False)):
        o = tr.auxiliary_ode(p, lo, float(task["eta"]), sim["t"], noise=noise, lr2=lr2(task))
        out[f"{label}_main"], out[f"{label}_aux"] = o["eps_main"], o["eps_aux"]
    return out


def closed_form_times(task: dict) -> np.ndarray:
    lo, hi = task["tau"]
    tau = np.linspace(lo, hi, int(task["points"]))
    return np.concatenate([[0.0], tau / float(task["eta"])])


def closed(task: dict, gamma: float | None = None) -> tr.LinearClosedForm:
    """The task's linear closed form (its start `LINEAR_START`; ``gamma`` replaced if
    given)."""
    g = task["gamma"] if gamma is None else gamma
    s = pc.LINEAR_START
    return tr.LinearClosedForm(
        float(task["eta"]),
        float(g),
        float(task["rho"]),
        float(task["sigma"]),
        float(task["sigma"]),
        1,
        s["Q"],
        s["R_main"],
        s["R_main"] if task["rho"] == 1 else s["R_aux"],
    )


def run_closed_form(task: dict, seed) -> dict:
    """Section 2: the linear one-output student at one ``(rho, sigma)``: the seeds' main error
    against the leading-order closed form, the exact closed form and the ODE at the records."""
    sim = _simulate(task, seed, closed_form_times(task))
    t = sim["t"]
    cf = closed(task)
    ode = tr.auxiliary_ode(problem(task), loss(task), cf.eta, t, lr2=0.0)
    wrong = closed(task, float(task["gamma"]) + float(task["control_shift"]))
    return {
        "t": t,
        "eps_main": sim["eps_main"],
        "leading": cf.leading(cf.eta * t),
        "exact": cf.error(t),
        "ode": ode["eps_main"],
        "wrong_gamma": wrong.leading(cf.eta * t),
        "wall_time_s": np.array(sim["diagnostics"]["wall_time_s"]),
    }


def run_order(task: dict, seed=None) -> dict:
    """Section 2: the leading-order closed form's largest gap to the ODE over ``tau`` in
    `ORDER_TAU`, at each learning rate of `ORDER_ETAS` (deterministic)."""
    tau = np.linspace(*pc.ORDER_TAU, 40)
    gaps, exact = [], []
    for eta in pc.ORDER_ETAS:
        t2 = replace_eta(task, eta)
        cf = closed(t2)
        o = tr.auxiliary_ode(problem(t2), loss(t2), eta, tau / eta, lr2=0.0)
        gaps.append(np.max(np.abs(cf.leading(tau) - o["eps_main"])))
        exact.append(np.max(np.abs(cf.error(tau / eta) - o["eps_main"])))
    return {"etas": np.array(pc.ORDER_ETAS), "gap": np.array(gaps), "exact_gap": np.array(exact)}


def replace_eta(task: dict, eta: float) -> dict:
    return {**task, "eta": float(eta)}


def map_times(task: dict) -> np.ndarray:
    """Records every ``dt`` over ``[0, tau_end / eta]`` (dense: the decomposition's trapezoid)."""
    end = float(task["window"][1]) / float(task["eta"])
    return np.linspace(0.0, end, int(task["points"]))


def window_mask(task: dict, t: np.ndarray) -> np.ndarray:
    lo, hi = task["window"]
    tau = np.asarray(t) * float(task["eta"])
    return (tau >= lo - 1e-12) & (tau <= hi + 1e-12)


def window_mean(t: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The time average of ``x (..., T)`` over the records in ``mask`` (trapezoid)."""
    tt = np.asarray(t)[mask]
    return np.trapezoid(np.asarray(x)[..., mask], tt, axis=-1) / (tt[-1] - tt[0])


def run_map(task: dict, seed) -> dict:
    """Section 3: the linear student at one ``(rho, sigma)`` (or the single task, ``gamma = 0``)
    of one reading: per seed, the main error's window average, its drift and diffusion parts
    (cumulative from ``t = 0``, and over the window) and the heads' gauge ``a^2 + c^2 - Q``;
    the theory's values (closed form for one output, ODE for both)."""
    t = map_times(task)
    sim = _simulate(task, seed, t)
    p, lo = problem(task), loss(task)
    t = sim["t"]
    mask = window_mask(task, t)
    dec = tr.error_decomposition(p, sim)["main"]
    out = {
        "t": t,
        "eps_window": window_mean(t, sim["eps_main"], mask),
        "drift_total": dec["drift"][:, -1],
        "diffusion_total": dec["diffusion"][:, -1],
        "drift_window": dec["drift"][:, mask][:, -1] - dec["drift"][:, mask][:, 0],
        "diffusion_window": dec["diffusion"][:, mask][:, -1] - dec["diffusion"][:, mask][:, 0],
        "closure": np.max(np.abs(dec["closure"]), axis=-1),
        "eps_start": sim["eps_main"][:, 0],
    }
    gauge = sim["a"][..., 0] ** 2 + sim["c"][..., 0] ** 2 - sim["Q"][..., 0, 0]
    out["gauge_slope"] = np.polyfit(t[mask], gauge[:, mask].T, 1)[0]
    o = tr.auxiliary_ode(p, lo, float(task["eta"]), t, lr2=lr2(task))
    rates = tr.error_rates(p, lo, float(task["eta"]), o["y"], lr2=lr2(task))["main"]
    from scipy.integrate import cumulative_trapezoid

    drift = cumulative_trapezoid(rates[0], t, initial=0)
    diffusion = cumulative_trapezoid(rates[1], t, initial=0)
    out |= {
        "ode_window": window_mean(t, o["eps_main"], mask),
        "ode_drift_total": drift[-1],
        "ode_diffusion_total": diffusion[-1],
        "ode_drift_window": drift[mask][-1] - drift[mask][0],
        "ode_diffusion_window": diffusion[mask][-1] - diffusion[mask][0],
    }
    if task["reading"] == "one_output":
        cf = closed(task)
        out["closed_window"] = window_mean(t, cf.leading(cf.eta * t), mask)
        out["closed_diffusion"] = cf.diffusion(t[-1])
    out["wall_time_s"] = np.array(sim["diagnostics"]["wall_time_s"])
    return out


def run_fdt_ode(task: dict, seed=None) -> dict:
    """Section 4 along the ODE: the relation's ratio at the stationary states for
    `FDT_ETAS`, the exact balance there, and (identical teachers) the single-task form;
    with a trained ReLU head the rescaling gauge's rate instead (no stationary state)."""
    p, lo = problem(task), loss(task)
    if task["activation"] in ("relu", "linear") and lr2(task) == 1.0 and lo.heads == 2:
        eta = float(pc.FDT_ETAS[-1])
        f = tr.AuxiliaryODE(p, lo, eta, lr2=1.0)
        y = f.initial()
        a, c, _, _ = f.unpack(y)
        da, dc, dQ, _ = f.unpack(f(0.0, y))
        noise = f.unpack(f.evaluate(y, 0.0, eta**2))[2]
        return {
            "stationary": np.array(False),
            "gauge_rate": np.array(2 * a @ da + 2 * c @ dc - np.trace(dQ)),
            "gauge_noise": np.array(-np.trace(noise)),
        }
    opt = tr.joint_optimum(p, lo, lr2=lr2(task))
    rows, start = [], None
    for eta in pc.FDT_ETAS:  # continuation: each state starts from the previous eta's
        rows.append(tr.fdt_relation(p, lo, eta, lr2=lr2(task), optimum=opt, start=start))
        start = rows[-1]["stationary"]["y"]
    out = {
        "stationary": np.array(True),
        "etas": np.array(pc.FDT_ETAS),
        "ratio": np.array([r["ratio"] for r in rows]),
        "E_star": np.array(rows[0]["E_star"]),
        "trace": np.array(rows[0]["trace"]),
        "misfit": np.array(rows[0]["misfit"]),
        "chi_main": np.array(rows[0]["chi_main"]),
    }
    balance = []
    for r in rows:
        rates = tr.error_rates(p, lo, r["eta"], r["stationary"]["y"], lr2=lr2(task))
        drift = rates["main"][0][0] + lo.gamma * rates["aux"][0][0]
        diffusion = rates["main"][1][0] + lo.gamma * rates["aux"][1][0]
        balance.append(abs(drift + diffusion) / max(abs(drift), abs(diffusion), 1e-300))
    out["balance"] = np.array(balance)
    if task["rho"] == 1:
        single, start = [], opt["y"]
        for eta in pc.FDT_ETAS:
            state = tr.stationary_state(p, lo.single(), eta, lr2=lr2(task), y0=start)
            single.append(state["eps_main"])
            start = state["y"]
        out["single_form"] = (
            (1 + lo.gamma)
            * np.array([r["eps_main"] for r in rows])
            / (np.array(single) * (1 + lo.gamma**2))
        )
    return out


def run_fdt_sim(task: dict, seed) -> dict:
    """Section 4 in simulation: the seeds start at the joint optimum of their loss (the single
    task's optimum for ``gamma = 0``) and run at ``eta`` for twice ``relaxations`` relaxation
    times of the first layer's bulk, ``1 / (4 eta lambda_min(G_J))`` (``G_J = dL_J/dQ`` at the
    optimum: the relation needs the bulk in equilibrium; the directions in the teachers' span
    relax more slowly but move ``L_J`` at second order only); per seed, the averages of both
    errors over the second half; the relation's prediction and the ODE's stationary state at
    the same ``eta``."""
    p = problem(task)
    gamma = float(task["gamma"])
    lo = loss(task, gamma)
    eta = float(task["eta"])
    opt = tr.joint_optimum(p, lo, lr2=lr2(task))
    rel = tr.fdt_relation(p, lo, eta, lr2=lr2(task), optimum=opt)
    grads = tr.error_gradients(p, opt["a"], opt["c"], opt["Q"], opt["R"])
    G = grads["main"][2] + gamma * grads["aux"][2]
    rate = 4.0 * eta * float(np.linalg.eigvalsh(0.5 * (G + G.T)).min())
    t_burn = float(task["relaxations"]) / rate
    start = _at(p, opt["a"], opt["c"], opt["Q"], opt["R"])
    t = np.linspace(0.0, 2 * t_burn, int(task["points"]))
    sim = _simulate(task, seed, t, start=start, gamma=gamma)
    t = sim["t"]
    mask = t >= t_burn
    return {
        "t": t,
        "eps_main": window_mean(t, sim["eps_main"], mask),
        "eps_aux": window_mean(t, sim["eps_aux"], mask),
        "E_star": np.array(rel["E_star"]),
        "trace": np.array(rel["trace"]),
        "predicted": np.array(rel["predicted"]),
        "ode_ratio": np.array(rel["ratio"]),
        "ode_main": np.array(rel["eps_main"]),
        "ode_aux": np.array(rel["eps_aux"]),
        "rate": np.array(rate),
        "t_burn": np.array(t_burn),
        "wall_time_s": np.array(sim["diagnostics"]["wall_time_s"]),
    }


def _at(p: AuxiliaryProblem, a, c, Q, R) -> AuxiliaryProblem:
    """``p`` with its student at the order parameters ``(a, c, Q, R)``: ``W = R T^+ V + W_perp``
    (``T^+`` the pseudo-inverse: identical teachers have a singular ``T``) with ``W_perp`` the
    Cholesky factor of ``Q - R T^+ R^T`` in the coordinates after the teachers'."""
    V = p.V
    T = V @ V.T
    par = R @ np.linalg.pinv(T) @ V
    rest = Q - par @ par.T
    w, U = np.linalg.eigh(0.5 * (rest + rest.T))
    perp = U * np.sqrt(np.clip(w, 0.0, None))
    W = par.copy()
    n = V.shape[0]
    W[:, n : n + p.K] += perp
    return replace(p, a=np.asarray(a, float).copy(), c=np.asarray(c, float).copy(), W=W)

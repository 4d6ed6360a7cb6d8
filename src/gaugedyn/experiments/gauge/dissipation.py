"""Reaction and transport dissipation along the two gauges' trajectories.

derivations/theory.md section 2: ``-dL/dt = sum_i mu_R_i (dL~/drho_i)^2 + mu_T_i |P_i grad_{u_i}
L~|^2``. For the ``single`` set-up at ``D`` in both gauges, the two parts are recorded over time
(the engine's closed-form observables ``reaction`` and ``transport``) with the trajectory itself
(``rho``, the alignment ``m = u.v`` and the mobilities ``mu_R = a^2 + |w|^2``,
``mu_T = 1/|w|^2``). Checks:

- ``dissipation.balance``: ``int_0^{t_max} (reaction + transport) dt`` (Simpson's rule in
  ``log t`` on a dense log-spaced grid) equals the loss drop ``L(0) - L(t_max)`` to
  ``rtol_balance``;
- ``dissipation.reaction_split`` and ``dissipation.transport_split``: each part recomputed from the
  stored trajectory alone, by finite differences in ``log t`` (second order), as
  ``(d rho/dt)^2 / mu_R`` and ``|du/dt|^2 / mu_T``; the direction ``u`` moves in the plane of
  ``u_0`` and the teacher, so ``|du/dt|^2 = (dm/dt)^2 / (1 - m^2)``. The measure is the
  integrated gap ``int |FD - closed form| dt / int closed form dt`` per part and gauge, which
  must stay below ``split_rtol`` (default 1e-2: the finite-difference error is about
  ``h^2 = (ln 10 / per_decade)^2``, 1.5e-3 at the quick grid's 60 points per decade).

The share of the total carried by transport is reported for each gauge.
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param
from ...theory import single
from . import _figures as gf
from . import _params as gp
from . import _quadrature as quad
from . import _trajectories as gt


def split_from_trajectory(t, rho, m, mu_r, mu_t) -> tuple[np.ndarray, np.ndarray]:
    """Reaction ``(d rho/dt)^2 / mu_R`` and transport ``(dm/dt)^2 / ((1 - m^2) mu_T)`` on
    ``t[1:]`` (the log-spaced part of the grid), by :func:`_quadrature.time_derivative`."""
    t, rho, m = (np.asarray(x, dtype=float)[1:] for x in (t, rho, m))
    mu_r, mu_t = np.asarray(mu_r)[1:], np.asarray(mu_t)[1:]
    drho, dm = quad.time_derivative(t, rho), quad.time_derivative(t, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        transport = np.where(m < 1.0, dm**2 / np.maximum(1.0 - m * m, 1e-300) / mu_t, 0.0)
    return drho**2 / mu_r, transport


def split_gap(t, closed, derived) -> float:
    """``int |derived - closed| dt / int closed dt`` over ``t[1:]`` (Simpson in ``log t``)."""
    t, closed = np.asarray(t, dtype=float)[1:], np.asarray(closed, dtype=float)[1:]
    gap = np.nan_to_num(np.abs(np.asarray(derived) - closed), nan=np.inf)
    total = quad.integrate_log(t, closed)
    return float(quad.integrate_log(t, gap) / total) if total > 0 else float("nan")


class Dissipation(Experiment):
    name = "dissipation"
    description = "reaction and transport dissipation for both gauges; their integral is the loss drop"
    definitions = {
        "reaction": "mu_R (dL~/drho)^2 = (dL/da)^2 + (u.dL/dw)^2 (closed form)",
        "transport": "mu_T |P grad_u L~|^2 = |dL/dw|^2 - (u.dL/dw)^2 (closed form)",
        "reaction_fd": "(d rho/dt)^2 / mu_R from the stored trajectory",
        "transport_fd": "(dm/dt)^2 / ((1 - m^2) mu_T) from the stored trajectory",
        "split_gap": "int |FD - closed form| dt / int closed form dt",
    }
    params = {
        "dim": gp.dim_param(hi=10**5, why="the w-heavy run to t_max must reach its T_spec ~ D"),
        "scale": gp.scale_param(),
        "t_max": gp.T_MAX_BOTH,
        "per_decade": Param(int, 200, quick=60, lo=20, hi=2000,
                            why="memory: the grid has per_decade x ~14 decades of states",
                            help="output times per decade (the quadrature grid)"),
        "rtol_balance": Param(float, 1e-5, lo=0.0, lo_open=True, hi=0.1,
                              why="a looser balance no longer tests the integrator",
                              help="allowed relative gap between integrated dissipation and "
                                   "loss drop"),
        "split_rtol": Param(float, 1e-2, lo=0.0, lo_open=True, hi=0.5,
                            why="beyond, a wrong split of the dissipation would pass",
                            help="allowed integrated gap between each part from finite "
                                 "differences and its closed form"),
    }

    def tasks(self, config):
        return [{"gauge": g, "dim": config["dim"], "scale": config["scale"],
                 "t_max": config["t_max"], "per_decade": config["per_decade"]} for g in gt.GAUGES]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_min = 1e-6 / (task["dim"] * task["scale"])
        n = int(np.ceil(task["per_decade"] * np.log10(task["t_max"] / t_min)))
        n += n % 2  # an odd number of Simpson nodes after t = 0
        grid = gt.time_grid(task["t_max"], n + 1, t_min=t_min)
        tr = gt.trajectory(problem, grid, rtol=1e-9, atol=1e-12)
        reaction, transport = tr["reaction"].sum(axis=1), tr["transport"].sum(axis=1)
        mu_r, mu_t = gt.mobilities(tr["a"], tr["Q"])
        return {"t": tr["t"], "loss": tr["loss"], "reaction": reaction, "transport": transport,
                "rho": tr["rho"][:, 0], "alignment": tr["alignment"][:, 0, 0],
                "mu_R": mu_r[:, 0], "mu_T": mu_t[:, 0],
                "integral_reaction": quad.integrate_log(tr["t"], reaction),
                "integral_transport": quad.integrate_log(tr["t"], transport),
                "specialization_time": tr["specialization_time"], **gt.diagnostics(tr)}

    def analyse(self, config, tasks, results, seed):
        arrays, gaps, shares, split = {}, {}, {}, {}
        for task, r in zip(tasks, results):
            g, key = task["gauge"], task["gauge"].replace("-", "_")
            t, loss = np.asarray(r["t"]), np.asarray(r["loss"])
            reaction, transport = np.asarray(r["reaction"]), np.asarray(r["transport"])
            drop = float(loss[0] - loss[-1])
            total = float(r["integral_reaction"] + r["integral_transport"])
            gaps[g] = abs(total - drop) / abs(drop)
            shares[g] = float(r["integral_transport"]) / total
            fd_r, fd_t = split_from_trajectory(t, r["rho"], r["alignment"], r["mu_R"], r["mu_T"])
            split[g] = (split_gap(t, reaction, fd_r), split_gap(t, transport, fd_t))
            arrays |= {f"t_{key}": t, f"loss_{key}": loss, f"reaction_{key}": reaction,
                       f"transport_{key}": transport, f"reaction_fd_{key}": fd_r,
                       f"transport_fd_{key}": fd_t, f"split_gap_{key}": np.array(split[g]),
                       f"cumulative_reaction_{key}": quad.cumulative(t, reaction),
                       f"cumulative_transport_{key}": quad.cumulative(t, transport),
                       f"balance_{key}": np.array([drop, float(r["integral_reaction"]),
                                                   float(r["integral_transport"])]),
                       f"specialization_time_{key}": np.array(r["specialization_time"])}
        tol, stol = float(config["rtol_balance"]), float(config["split_rtol"])
        worst = max(gaps.values())
        claims = [
            Claim(id="dissipation.balance",
                  statement=("for both gauges, int_0^t_max (reaction + transport) dt equals the "
                             f"loss drop L(0) - L(t_max) (t_max = {config['t_max']:g}, D = "
                             f"{config['dim']}): largest relative gap "
                             f"(w-heavy {gaps['w-heavy']:.2e}, a-heavy {gaps['a-heavy']:.2e}); "
                             f"transport carries {shares['w-heavy']:.3f} (w-heavy) and "
                             f"{shares['a-heavy']:.3f} (a-heavy) of the dissipation"),
                  measured=worst, expected=0.0, tolerance=tol, passed=bool(worst <= tol)),
        ]
        for i, (part, formula) in enumerate((("reaction", "(d rho/dt)^2 / mu_R"),
                                             ("transport", "|du/dt|^2 / mu_T"))):
            worst_part = max(v[i] for v in split.values())
            claims.append(Claim(
                id=f"dissipation.{part}_split",
                statement=(f"the {part} dissipation recomputed from the stored trajectory alone, "
                           f"{formula} by finite differences, matches the closed-form {part} "
                           "part: integrated gap / integrated part, largest over the gauges "
                           f"(w-heavy {split['w-heavy'][i]:.2e}, a-heavy "
                           f"{split['a-heavy'][i]:.2e})"),
                measured=worst_part, expected=f"<= {stol:g}", tolerance=stol,
                passed=bool(np.isfinite(worst_part) and worst_part <= stol)))
        arrays["transport_share"] = np.array([shares[g] for g in gt.GAUGES])
        arrays["caption_dissipation"] = np.array(
            f"Single set-up at D = {config['dim']}, both gauges from the same initial function. "
            "Left: reaction (solid) and transport (dotted) dissipation in closed form, with the "
            "parts recomputed from the trajectory by finite differences (crosses, every 10th "
            "point); -dL/dt = reaction + transport. Right: the loss and the loss drop accounted "
            "for by the running integral of each part; the integrals match L(0) - L(t) "
            "(relative gaps in the claims).")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8))
        for key, label, color in gt.GAUGE_STYLES:
            t = arrays[f"t_{key}"][1:]
            axes[0].loglog(t, np.maximum(arrays[f"reaction_{key}"][1:], 1e-30), "-", color=color,
                           label=f"reaction, {label}")
            axes[0].loglog(t, np.maximum(arrays[f"transport_{key}"][1:], 1e-30), ":",
                           color=color, label=f"transport, {label}")
            for part in ("reaction", "transport"):
                axes[0].loglog(t[::10], np.maximum(arrays[f"{part}_fd_{key}"][::10], 1e-30), "x",
                               color=color, ms=3, alpha=0.6)
            loss = arrays[f"loss_{key}"]
            axes[1].semilogx(t, loss[1:], "-", color=color, label=f"loss, {label}")
            axes[1].semilogx(t, loss[0] - arrays[f"cumulative_reaction_{key}"][1:], "--",
                             color=color, alpha=0.7, label=f"L(0) - int reaction, {label}")
            axes[1].semilogx(t, loss[0] - arrays[f"cumulative_reaction_{key}"][1:]
                             - arrays[f"cumulative_transport_{key}"][1:], ":", color="k", lw=1)
        axes[0].set(xlabel="time t", ylabel="dissipation rate", title="reaction and transport "
                    "dissipation", ylim=(1e-14, None))
        axes[1].set(xlabel="time t", ylabel="loss",
                    title="loss and L(0) - integrated dissipation (black dotted)")
        return [gf.save(fig, outdir, "dissipation", arrays, legends=axes)]


EXPERIMENT = Dissipation()

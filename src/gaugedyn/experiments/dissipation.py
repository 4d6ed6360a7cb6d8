"""Reaction and transport dissipation along the two gauges' trajectories.

THEORY.md section 2: ``-dL/dt = sum_i mu_R_i (dL~/drho_i)^2 + mu_T_i |P_i grad_{u_i} L~|^2``.
For the ``single`` set-up at ``D`` in both gauges, the two parts are recorded over time (the
engine's observables ``reaction`` and ``transport``) and their total is integrated,
``int_0^{t_max} (reaction + transport) dt``, by Simpson's rule in ``log t`` on a dense log-spaced
grid; it must equal the loss drop ``L(0) - L(t_max)`` to the stated relative tolerance. The share
of the total carried by transport is reported for each gauge.
"""

from __future__ import annotations

import numpy as np

from ..theory import single
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param


class Dissipation(Experiment):
    name = "dissipation"
    description = "reaction and transport dissipation for both gauges; their integral is the loss drop"
    params = {
        "dim": gc.dim_param(),
        "scale": gc.scale_param(),
        "t_max": gc.T_MAX_BOTH,
        "per_decade": Param(int, 200, quick=60, check=lambda v: v >= 20,
                            allowed="an integer >= 20",
                            help="output times per decade (the quadrature grid)"),
        "rtol_balance": Param(float, 1e-5, check=lambda v: v > 0, allowed="a number > 0",
                              help="allowed relative gap between integrated dissipation and "
                                   "loss drop"),
    }

    def tasks(self, config):
        return [{"gauge": g, "dim": config["dim"], "scale": config["scale"],
                 "t_max": config["t_max"], "per_decade": config["per_decade"]} for g in gc.GAUGES]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        t_min = 1e-6 / (task["dim"] * task["scale"])
        n = int(np.ceil(task["per_decade"] * np.log10(task["t_max"] / t_min)))
        n += n % 2  # an odd number of Simpson nodes after t = 0
        grid = gc.time_grid(task["t_max"], n + 1, t_min=t_min)
        tr = gc.trajectory(problem, grid, rtol=1e-9, atol=1e-12)
        reaction, transport = tr["reaction"].sum(axis=1), tr["transport"].sum(axis=1)
        return {"t": tr["t"], "loss": tr["loss"], "reaction": reaction, "transport": transport,
                "integral_reaction": gc.integrate_log(tr["t"], reaction),
                "integral_transport": gc.integrate_log(tr["t"], transport),
                "specialization_time": tr["specialization_time"], **gc.diagnostics(tr)}

    def analyse(self, config, tasks, results):
        arrays, gaps, shares = {}, {}, {}
        for task, r in zip(tasks, results):
            key = task["gauge"].replace("-", "_")
            t, loss = np.asarray(r["t"]), np.asarray(r["loss"])
            reaction, transport = np.asarray(r["reaction"]), np.asarray(r["transport"])
            drop = float(loss[0] - loss[-1])
            total = float(r["integral_reaction"] + r["integral_transport"])
            gaps[task["gauge"]] = abs(total - drop) / abs(drop)
            shares[task["gauge"]] = float(r["integral_transport"]) / total
            arrays |= {f"t_{key}": t, f"loss_{key}": loss, f"reaction_{key}": reaction,
                       f"transport_{key}": transport,
                       f"cumulative_reaction_{key}": gc.cumulative(t, reaction),
                       f"cumulative_transport_{key}": gc.cumulative(t, transport),
                       f"balance_{key}": np.array([drop, float(r["integral_reaction"]),
                                                   float(r["integral_transport"])]),
                       f"specialization_time_{key}": np.array(r["specialization_time"])}
        tol = float(config["rtol_balance"])
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
        arrays["transport_share"] = np.array([shares[g] for g in gc.GAUGES])
        arrays["caption_dissipation"] = np.array(
            f"Single set-up at D = {config['dim']}, both gauges from the same initial function. "
            "Left: reaction (solid) and transport (dotted) dissipation, -dL/dt = reaction + "
            "transport. Right: the loss and the loss drop accounted for by the running integral "
            "of each part; the integrals match L(0) - L(t) (relative gaps in the claim).")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8))
        for key, label, color in gc.GAUGE_STYLES:
            t = arrays[f"t_{key}"][1:]
            axes[0].loglog(t, np.maximum(arrays[f"reaction_{key}"][1:], 1e-30), "-", color=color,
                           label=f"reaction, {label}")
            axes[0].loglog(t, np.maximum(arrays[f"transport_{key}"][1:], 1e-30), ":",
                           color=color, label=f"transport, {label}")
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
        return [gc.save(fig, outdir, "dissipation", arrays, legends=axes)]


EXPERIMENT = Dissipation()

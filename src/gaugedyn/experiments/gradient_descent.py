"""Population gradient descent against the flow: first-order convergence and kept selection.

Claim 4 of THEORY.md section 2 (second half). Two duplicates at ``D`` (copy 0 a-heavy, copy 1
w-heavy) are followed by the population flow (tight tolerance) and by population gradient
descent ``theta -> theta - eta grad L`` for several steps ``eta``, step ``k`` at time ``k eta``.
The GD specialization time is read between the two steps that bracket the threshold (linear
interpolation of the alignment), so its error against the flow's is the method's global error,
``O(eta)`` for the Euler map: the fitted log-log slope of the relative error against ``eta`` is
compared with 1. Separately, for the larger steps, GD runs to ``t_end`` and must keep the
selection: copy 0 owns the feature and copy 1 is pruned.
"""

from __future__ import annotations

import math

import numpy as np

from ..theory import Definitions, duplicates
from ..training import crossing_time
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param

GAUGES = ("a-heavy", "w-heavy")
"""Copy 0 and copy 1 of the duplicates."""


class GradientDescent(Experiment):
    name = "gradient_descent"
    description = "population GD with step eta against the flow: O(eta) error, selection kept"
    params = {
        "dim": gc.dim_param(30),
        "scale": gc.scale_param(help="initial coefficient rho0 = s of each copy"),
        "etas": Param(list, [5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3], quick=[1e-4, 3e-4, 1e-3, 3e-3],
                      check=gc.bounded(lambda v: gc.positive_list(min_len=3)(v)
                                       and max(v) < 0.1, ""),
                      allowed="a list of at least 3 step sizes in (0, 0.1)",
                      help="step sizes for the specialization-time error"),
        "selection_etas": Param(list, [1e-3, 3e-3, 1e-2], quick=[3e-3, 1e-2],
                                check=gc.bounded(lambda v: gc.positive_list()(v)
                                                 and max(v) < 0.1, ""),
                                allowed="a non-empty list of step sizes in (0, 0.1)",
                                help="step sizes that must keep the selection"),
        "t_end": Param((int, float), 2.0, check=lambda v: v > 0, allowed="a number > 0",
                       help="time by which GD must have pruned the w-heavy copy"),
        "threshold": gc.THRESHOLD,
        "slope_tol": Param(float, 0.1, check=lambda v: v > 0, allowed="a number > 0",
                           help="allowed distance of the fitted error slope from 1"),
    }

    def tasks(self, config):
        common = {"dim": config["dim"], "scale": config["scale"], "threshold": config["threshold"]}
        out = [{"kind": "flow", **common, "t_end": config["t_end"]}]
        out += [{"kind": "error", "eta": float(e), **common} for e in sorted(config["etas"])]
        out += [{"kind": "selection", "eta": float(e), "t_end": config["t_end"], **common}
                for e in sorted(config["selection_etas"])]
        return out

    def run_task(self, task, seed):
        problem = duplicates(task["dim"], list(GAUGES), scale=task["scale"])
        definitions = Definitions(threshold=task["threshold"])
        if task["kind"] == "flow":
            tr = gc.trajectory(problem, gc.time_grid(task["t_end"], 200, 1e-6), rtol=1e-11,
                               atol=1e-13, definitions=definitions)
            return {"t": tr["t"], "alignment": tr["alignment"][:, :, 0], "rho": tr["rho"],
                    "specialization_time": tr["specialization_time"],
                    "owner": int(tr["owner"][0]), "pruning_time": tr["pruning_time"]}
        eta = task["eta"]
        if task["kind"] == "error":
            # the a-heavy copy specializes within O(1/(s D)); 2/(s D) + 4 steps bracket it
            t_max = eta * math.ceil((2.0 / (task["scale"] * task["dim"]) + 4 * eta) / eta)
            grid = np.arange(0, round(t_max / eta) + 1) * eta
            tr = gc.trajectory(problem, grid, dynamics="gd", eta=eta, definitions=definitions)
            m = tr["alignment"].max(axis=(1, 2))
            return {"specialization_time": float(crossing_time(tr["t"], m, task["threshold"])),
                    "step_time": tr["specialization_time"], "steps": len(tr["t"]) - 1}
        tr = gc.trajectory(problem, gc.time_grid(task["t_end"], 60, eta), dynamics="gd",
                           eta=eta, definitions=definitions)
        d0 = tr["delta"][0]
        scale0 = tr["a"][0] ** 2 + np.diagonal(tr["Q"][0])
        return {"t": tr["t"], "rho": tr["rho"], "owner": int(tr["owner"][0]),
                "pruning_time": tr["pruning_time"],
                "delta_drift": float(np.max(np.abs(tr["delta"] - d0) / scale0))}

    def analyse(self, config, tasks, results):
        flow = next(r for t, r in zip(tasks, results) if t["kind"] == "flow")
        t_flow = float(flow["specialization_time"])
        err = [(t["eta"], r) for t, r in zip(tasks, results) if t["kind"] == "error"]
        sel = [(t["eta"], r) for t, r in zip(tasks, results) if t["kind"] == "selection"]
        etas = np.array([e for e, _ in err])
        t_gd = np.array([float(r["specialization_time"]) for _, r in err])
        rel = np.abs(t_gd - t_flow) / t_flow
        fit = gc.loglog_fit(etas, rel)
        tol = float(config["slope_tol"])
        sel_etas = np.array([e for e, _ in sel])
        owners = np.array([int(r["owner"]) for _, r in sel])
        prune = np.array([float(np.asarray(r["pruning_time"])[1]) for _, r in sel])
        kept = (owners == 0) & np.isfinite(prune) & (prune <= config["t_end"])
        claims = [
            Claim(id="gradient_descent.error_slope",
                  statement=("the relative error of the GD specialization time against the flow's "
                             f"(T_flow = {t_flow:.6g}) scales as eta^1: fitted log-log slope over "
                             f"eta in [{etas.min():g}, {etas.max():g}] within {tol:g} of 1 (95% CI "
                             f"[{fit['ci'][0]:.3f}, {fit['ci'][1]:.3f}])"),
                  measured=fit["slope"], expected=1.0, tolerance=tol,
                  passed=bool(np.isfinite(fit["slope"]) and abs(fit["slope"] - 1.0) <= tol)),
            Claim(id="gradient_descent.selection",
                  statement=(f"GD with eta in {{{', '.join(f'{e:g}' for e in sel_etas)}}} keeps the "
                             "selection: the a-heavy copy owns the feature and the w-heavy copy is "
                             f"pruned by t = {config['t_end']:g} (runs kept / runs)"),
                  measured=float(kept.mean()) if kept.size else math.nan, expected=1.0,
                  tolerance=0.0, passed=bool(kept.size and kept.all())),
        ]
        arrays = {
            "etas": etas, "time_gd": t_gd, "time_flow": np.array(t_flow), "relative_error": rel,
            "fit": gc.fit_row(fit),
            "selection_etas": sel_etas, "selection_owner": owners, "selection_pruning_time": prune,
            "selection_delta_drift": np.array([r["delta_drift"] for _, r in sel]),
            "flow_t": np.asarray(flow["t"]), "flow_rho": np.asarray(flow["rho"]),
            "flow_pruning_time": np.asarray(flow["pruning_time"]),
            "t_end": np.array(float(config["t_end"])),
            "caption_gd_error": np.array(
                f"Two duplicates at D = {config['dim']} (a-heavy, w-heavy): relative error of the "
                "population-GD specialization time against the flow's, against the step eta, with "
                "the least-squares log-log fit (slope and 95% CI in the legend; first order: "
                "slope 1)."),
            "caption_gd_selection": np.array(
                "|rho| of both copies under the flow (black) and under GD with the larger steps "
                "(colours): the a-heavy copy keeps the feature and the w-heavy copy falls through "
                f"the pruning tolerance before t = {config['t_end']:g}."),
        }
        for (eta, r) in sel:
            arrays[f"selection_t_{eta:g}"] = np.asarray(r["t"])
            arrays[f"selection_rho_{eta:g}"] = np.asarray(r["rho"])
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        etas, rel = arrays["etas"], arrays["relative_error"]
        slope, icpt, lo, hi = arrays["fit"]
        fig, ax = plt.subplots()
        ax.loglog(etas, rel, "o", label="|T_gd - T_flow| / T_flow")
        ax.loglog(etas, np.exp(icpt) * etas**slope, "-",
                  label=f"fit: slope {slope:.3f} [{lo:.3f}, {hi:.3f}]")
        ax.set(xlabel="step size eta", ylabel="relative error of specialization time",
               title="gradient descent against the flow")
        ax.legend()
        names = [gc.save(fig, outdir, "gd_error", arrays)]

        fig, ax = plt.subplots()
        t = arrays["flow_t"][1:]
        for i, ls in ((0, "-"), (1, "--")):
            ax.loglog(t, np.maximum(np.abs(arrays["flow_rho"][1:, i]), 1e-16), ls, color="k",
                      label=f"flow, copy {i} ({'a' if i == 0 else 'w'}-heavy)")
        for c, eta in enumerate(arrays["selection_etas"]):
            ts = arrays[f"selection_t_{eta:g}"][1:]
            rho = np.abs(arrays[f"selection_rho_{eta:g}"][1:])
            for i, ls in ((0, "-"), (1, "--")):
                ax.loglog(ts, np.maximum(rho[:, i], 1e-16), ls, color=f"C{c}", alpha=0.8,
                          label=f"GD eta={eta:g}" if i == 0 else None)
        ax.axvline(float(arrays["t_end"]), color="k", ls=":", lw=1)
        ax.set(xlabel="time t", ylabel="|rho_i|", title="selection under gradient descent",
               ylim=(1e-10, 10))
        ax.legend(fontsize=7)
        names.append(gc.save(fig, outdir, "gd_selection", arrays))
        return names


EXPERIMENT = GradientDescent()

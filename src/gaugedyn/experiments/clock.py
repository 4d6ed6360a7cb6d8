"""Opposite gauges follow different paths, not the same path on different clocks.

Claim 2 of THEORY.md section 2. The w-heavy and a-heavy ``single`` set-ups share the initial
function, hence the reaction mobility ``mu_R = sqrt(delta^2 + 4 rho^2)`` at ``t = 0``, while their
transport mobilities ``mu_T = 2 / (sqrt(delta^2 + 4 rho^2) -+ delta)`` differ by
``(root + |delta|) / (root - |delta|)``. If a monotone change of time ``t -> h(t)`` mapped one
trajectory onto the other, the two would trace the same curve in the ``(rho, alignment)`` plane;
any reparametrization leaves that curve (the image of the path) unchanged, so the Hausdorff
distance between the two images is a lower bound on the distance between the trajectories under
every reparametrization (the Frechet distance is reported alongside).
"""

from __future__ import annotations

import numpy as np

from ..theory import Definitions, single
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param


class Clock(Experiment):
    name = "clock"
    description = "paths of opposite gauges in the (rho, alignment) plane and their clocks"
    params = {
        "dim": gc.dim_param(),
        "scale": gc.scale_param(),
        "t_max": gc.T_MAX_BOTH,
        "n_times": Param(int, 1200, quick=500, check=lambda v: v >= 50, allowed="an integer >= 50",
                         help="number of log-spaced output times"),
        "n_path": Param(int, 800, quick=300, check=lambda v: v >= 20, allowed="an integer >= 20",
                        help="points per path after resampling by arc length"),
        "threshold": gc.THRESHOLD,
        "path_bound": Param(float, 0.2, check=lambda v: v > 0, allowed="a number > 0",
                            help="Hausdorff distance the two paths must exceed"),
        "mobility_rtol": Param(float, 1e-12, check=lambda v: v > 0, allowed="a number > 0",
                               help="relative tolerance for equal reaction mobilities at t = 0"),
    }

    def tasks(self, config):
        return [{"dim": int(config["dim"]), "gauge": g, "scale": float(config["scale"]),
                 "t_max": float(config["t_max"]), "n_times": int(config["n_times"]),
                 "threshold": float(config["threshold"])} for g in gc.GAUGES]

    def run_task(self, task, seed):
        problem = single(task["dim"], task["gauge"], scale=task["scale"])
        grid = gc.time_grid(task["t_max"], task["n_times"], t_min=1e-4 / task["dim"] ** 2)
        traj = gc.trajectory(problem, grid, definitions=Definitions(threshold=task["threshold"]))
        mu_r, mu_t = gc.mobilities(traj["a"], traj["Q"])
        return {"t": traj["t"], "rho": traj["rho"][:, 0], "alignment": traj["alignment"][:, 0, 0],
                "mu_R": mu_r[:, 0], "mu_T": mu_t[:, 0], "delta0": float(problem.delta[0]),
                "rho0": float(problem.rho[0]),
                "specialization_time": traj["specialization_time"], **gc.diagnostics(traj)}

    def analyse(self, config, tasks, results):
        by = {t["gauge"]: r for t, r in zip(tasks, results)}
        w, a = by["w-heavy"], by["a-heavy"]
        n = int(config["n_path"])
        Pw = gc.resample_path(w["rho"], w["alignment"], n)
        Pa = gc.resample_path(a["rho"], a["alignment"], n)
        haus = gc.hausdorff(Pw, Pa)
        fre = gc.frechet(Pw, Pa)
        mu_r_w, mu_r_a = float(w["mu_R"][0]), float(a["mu_R"][0])
        rel_r = abs(mu_r_w - mu_r_a) / max(mu_r_w, mu_r_a)
        d, r = abs(float(w["delta0"])), float(w["rho0"])
        root = np.hypot(d, 2 * r)
        ratio_theory = (root + d) / (root - d) if root > d else np.inf
        ratio = float(a["mu_T"][0] / w["mu_T"][0])
        arrays = {"dim": np.array(float(config["dim"])), "path_w_heavy": Pw, "path_a_heavy": Pa}
        for (key, _, _), res in zip(gc.GAUGE_STYLES, (w, a)):
            arrays |= {f"t_{key}": res["t"], f"rho_{key}": res["rho"],
                       f"alignment_{key}": res["alignment"], f"mu_R_{key}": res["mu_R"],
                       f"mu_T_{key}": res["mu_T"],
                       f"clock_R_{key}": gc.cumulative(res["t"], res["mu_R"]),
                       f"clock_T_{key}": gc.cumulative(res["t"], res["mu_T"]),
                       f"specialization_time_{key}": np.array(res["specialization_time"])}
        arrays |= {
            "hausdorff": np.array(haus), "frechet": np.array(fre),
            "caption_clock_paths": np.array(
                f"Single set-up at D = {config['dim']}, rho0 = {config['scale']:g}: the w-heavy and "
                "a-heavy trajectories from the same initial function (left) as paths in the "
                "(rho, alignment) plane, resampled by arc length; a change of time cannot move a "
                f"path, and the two stay {haus:.3f} apart (Hausdorff; Frechet {fre:.3f}). Right: "
                "rho and alignment against time."),
            "caption_clock_mobilities": np.array(
                "Reaction mobility mu_R = a^2 + |w|^2 and transport mobility mu_T = 1/|w|^2 along "
                "both trajectories (left) and the clocks they define, int mu dt (right): the "
                "reaction mobilities start equal, the transport mobilities start a factor "
                f"{ratio:.3g} apart."),
        }
        claims = [
            Claim(id="clock.path_distance",
                  statement=("no monotone reparametrization of time maps the w-heavy trajectory onto "
                             "the a-heavy one: the Hausdorff distance between their paths in the "
                             f"(rho, alignment) plane exceeds {config['path_bound']:g} "
                             f"(discrete Frechet distance {fre:.4f})"),
                  measured=haus, expected=f"> {config['path_bound']:g}",
                  tolerance=float(config["path_bound"]),
                  passed=bool(np.isfinite(haus) and haus > config["path_bound"])),
            Claim(id="clock.reaction_mobility",
                  statement=("the reaction mobilities of the two gauges agree at t = 0 (same "
                             "function): relative difference of mu_R"),
                  measured=rel_r, expected=0.0, tolerance=float(config["mobility_rtol"]),
                  passed=bool(rel_r <= config["mobility_rtol"])),
            Claim(id="clock.transport_ratio",
                  statement=("the transport mobilities differ at t = 0 by (root + |delta|) / "
                             "(root - |delta|), root = sqrt(delta^2 + 4 rho^2): measured ratio "
                             f"mu_T(a-heavy)/mu_T(w-heavy) = {ratio:.6g} against "
                             f"{ratio_theory:.6g} (relative error)"),
                  measured=abs(ratio / ratio_theory - 1), expected=0.0, tolerance=1e-8,
                  passed=bool(abs(ratio / ratio_theory - 1) <= 1e-8 and ratio > 1)),
        ]
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        names = []
        keys = gc.GAUGE_STYLES
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        for key, label, color in keys:
            P = arrays[f"path_{key}"]
            axes[0].plot(P[:, 0], P[:, 1], "-", color=color, label=label)
            axes[0].plot(P[-1, 0], P[-1, 1], "s", color=color)
            t = arrays[f"t_{key}"][1:]
            axes[1].semilogx(t, arrays[f"alignment_{key}"][1:], "-", color=color,
                             label=f"alignment, {label}")
            axes[1].semilogx(t, arrays[f"rho_{key}"][1:], "--", color=color,
                             label=f"rho, {label}")
        P = arrays["path_w_heavy"]
        axes[0].plot(P[0, 0], P[0, 1], "ko", label="common start")
        axes[0].set(xlabel="coefficient rho", ylabel="alignment u.v",
                    title=f"paths (Hausdorff distance {float(arrays['hausdorff']):.3f})")
        axes[1].set(xlabel="time t", ylabel="rho, alignment", title="against time")
        names.append(gc.save(fig, outdir, "clock_paths", arrays, legends=axes))

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        for (key, label, color), lw in zip(keys, (4.0, 1.4)):  # equal mu_R: thick under thin
            t = arrays[f"t_{key}"][1:]
            axes[0].loglog(t, arrays[f"mu_R_{key}"][1:], "-", color=color, lw=lw, alpha=0.8,
                           label=f"mu_R, {label}")
            axes[0].loglog(t, arrays[f"mu_T_{key}"][1:], "--", color=color,
                           label=f"mu_T, {label}")
            axes[1].loglog(t, arrays[f"clock_R_{key}"][1:], "-", color=color, lw=lw, alpha=0.8,
                           label=f"reaction clock, {label}")
            axes[1].loglog(t, arrays[f"clock_T_{key}"][1:], "--", color=color,
                           label=f"transport clock, {label}")
        axes[0].set(xlabel="time t", ylabel="mobility", title="reaction and transport mobility")
        axes[1].set(xlabel="time t", ylabel="int_0^t mu ds", title="reaction and transport clocks")
        names.append(gc.save(fig, outdir, "clock_mobilities", arrays, legends=axes))
        return names


EXPERIMENT = Clock()

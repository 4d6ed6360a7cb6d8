"""Among duplicate students, the one with the favourable gauge owns the teacher feature.

Claim 3 of derivations/theory.md section 2, on one pattern: ``K`` copies of the ``single`` neuron
share ``rho0 = s`` and the direction ``u0``; copy ``j`` gets the a-heavy gauge (fast transport)
and the others the w-heavy gauge. For every ``K`` in the list and every ``j``, the population
flow is solved (the ``K`` runs of one ``K`` in one batch) and checked at the stated time
``t_check``: copy ``j`` is the unique owner (a tie counts as not owned;
:func:`gaugedyn.theory.owners`), every other copy is pruned from some time ``<= t_check`` on
(``|rho_i| < prune_tol`` from then on), and the function the non-owners still carry,
``||sum_{i != owner} rho_i relu(u_i.x)|| / ||f*||`` (closed-form Gaussian norm,
:func:`gaugedyn.theory.remaining_relative`), is below ``function_tol``. Other gauge patterns
(mixed, balanced, tied) are mapped by the ``ownership_patterns`` experiment.
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param
from ...theory import Definitions, duplicates, owners, remaining_relative
from . import _figures as gf
from . import _params as gp
from . import _trajectories as gt


class Ownership(Experiment):
    name = "ownership"
    description = "K duplicates, favourable gauge on each index in turn: owner and pruning"
    definitions = {
        "owner": "the unique student with the largest share sign(b) rho_i m_i (ties: -1)",
        "remaining_function": "||sum_{i not owner} rho_i relu(u_i.x)||_{L2(N(0, I))} / ||f*||",
        "pruning_time": "first output time from which |rho_i| < prune_tol at every later time",
    }
    params = {
        "Ks": Param(list, [2, 3, 5, 8], lo=2, hi=16, min_len=1, max_len=8, distinct=True,
                    why="the batch holds K runs of K copies: memory K^3 per output time",
                    help="numbers of duplicate students"),
        "dim": gp.dim_param(),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of every copy"),
        "t_check": Param((int, float), 2.0, lo=0.0, lo_open=True, hi=1e6,
                         why="the stiff integrator's steps grow with the horizon",
                         help="the stated time at which owner and pruning are checked"),
        "prune_tol": Param(float, 1e-3, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                           why="|rho| of the teacher's owner is 1",
                           help="|rho| below which a copy counts as pruned"),
        "function_tol": Param(float, 1e-3, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                              why="relative to ||f*||, 1 is no pruning at all",
                              help="remaining function / ||f*|| below which it counts as zero"),
        "threshold": gp.THRESHOLD,
        "n_times": gp.n_times_param(160, 100, 20),
        "rtol": gp.rtol_param(1e-8),
    }

    def tasks(self, config):
        keep = ("dim", "scale", "t_check", "prune_tol", "threshold", "n_times", "rtol")
        return [{"K": int(K), **{k: config[k] for k in keep}} for K in sorted(config["Ks"])]

    def run_task(self, task, seed):
        K = task["K"]
        problems = []
        for j in range(K):
            gauges = ["w-heavy"] * K
            gauges[j] = "a-heavy"
            problems.append(duplicates(task["dim"], gauges, scale=task["scale"]))
        definitions = Definitions(threshold=task["threshold"], prune_tol=task["prune_tol"])
        grid = gt.time_grid(task["t_check"], task["n_times"], t_min=1e-4 / task["dim"])
        trajs = gt.trajectories(problems, grid, definitions=definitions, rtol=task["rtol"])
        b, T = problems[0].b, problems[0].V @ problems[0].V.T
        last = [(tr["a"][-1], tr["Q"][-1], tr["R"][-1]) for tr in trajs]
        return {"t": trajs[0]["t"], "rho": np.stack([tr["rho"] for tr in trajs]),
                "owner": np.array([int(owners(a, Q, R, T, b)[0]) for a, Q, R in last]),
                "pruning_time": np.stack([tr["pruning_time"] for tr in trajs]),
                "specialization_time": np.array([tr["specialization_time"] for tr in trajs]),
                "remaining": np.array([float(remaining_relative(a, Q, R, T, b))
                                       for a, Q, R in last]),
                "nsteps_max": max(int(tr["diagnostics"].get("nsteps", 0)) for tr in trajs)}

    def analyse(self, config, tasks, results, seed):
        tol, t_check = float(config["prune_tol"]), float(config["t_check"])
        ftol = float(config["function_tol"])
        arrays = {"Ks": np.array([t["K"] for t in tasks]), "prune_tol": np.array(tol),
                  "t_check": np.array(t_check), "function_tol": np.array(ftol)}
        n_runs = n_owned = n_ties = 0
        worst_rho, worst_remaining, latest_prune = 0.0, 0.0, 0.0
        for task, res in zip(tasks, results):
            K = task["K"]
            owner = np.asarray(res["owner"])
            n_runs += K
            n_owned += int(np.sum(owner == np.arange(K)))
            n_ties += int(np.sum(owner < 0))
            rho_end = np.abs(np.asarray(res["rho"])[:, -1, :])
            others = ~np.eye(K, dtype=bool)
            worst_rho = max(worst_rho, float(np.max(rho_end[others])))
            prune = np.asarray(res["pruning_time"])[others]
            latest_prune = max(latest_prune, float(np.max(np.where(np.isnan(prune), np.inf, prune))))
            worst_remaining = max(worst_remaining, float(np.max(res["remaining"])))
            arrays |= {f"t_K{K}": np.asarray(res["t"]), f"rho_K{K}": np.asarray(res["rho"]),
                       f"owner_K{K}": owner, f"pruning_time_K{K}": np.asarray(res["pruning_time"]),
                       f"specialization_time_K{K}": np.asarray(res["specialization_time"]),
                       f"remaining_K{K}": np.asarray(res["remaining"])}
        Ks = ", ".join(str(t["K"]) for t in tasks)
        claims = [
            Claim(id="ownership.owner",
                  statement=(f"for K in {{{Ks}}} duplicates at D = {config['dim']}, the copy given "
                             "the a-heavy gauge is the unique owner of the teacher feature at t = "
                             f"{t_check:g}, every time (runs owned / runs; {n_ties} ties)"),
                  measured=n_owned / max(n_runs, 1), expected=1.0, tolerance=0.0,
                  passed=bool(n_runs > 0 and n_owned == n_runs)),
            Claim(id="ownership.pruned",
                  statement=(f"every other copy is pruned (|rho| < {tol:g} from then on) by t = "
                             f"{t_check:g} (largest |rho| of a non-favourable copy at that time; "
                             f"the latest pruning time is {latest_prune:.4g})"),
                  measured=worst_rho, expected=f"< {tol:g}", tolerance=tol,
                  passed=bool(worst_rho < tol and latest_prune <= t_check)),
            Claim(id="ownership.remaining_function",
                  statement=("the function the non-owners still carry, "
                             "||sum_{i != owner} rho_i relu(u_i.x)|| / ||f*|| in closed form, at "
                             f"t = {t_check:g} is below {ftol:g} (largest over runs)"),
                  measured=worst_remaining, expected=f"< {ftol:g}", tolerance=ftol,
                  passed=bool(np.isfinite(worst_remaining) and worst_remaining < ftol)),
        ]
        arrays["caption_ownership_rho"] = np.array(
            f"Duplicates at D = {config['dim']}: K copies with the same initial function, the "
            "a-heavy gauge given to one copy in turn (all K runs overlaid). Solid: |rho| of the "
            "favourable copy; grey: the other copies, falling through the pruning tolerance "
            f"{tol:g} (dashed) before the stated time t = {t_check:g} (dotted).")
        arrays["caption_ownership_summary"] = np.array(
            "Left: time from which each non-favourable copy stays pruned, against K and the "
            "index of the favourable copy. Right: the function the non-owners still carry at the "
            "stated time, relative to the teacher's norm (closed form; dashed: function_tol).")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        Ks = [int(k) for k in arrays["Ks"]]
        tol, t_check = float(arrays["prune_tol"]), float(arrays["t_check"])
        ncol = min(len(Ks), 4)
        nrow = -(-len(Ks) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol + 1, 2.8 * nrow + 0.5),
                                 squeeze=False, sharey=True)
        for ax, K in zip(axes.ravel(), Ks):
            t, rho = arrays[f"t_K{K}"][1:], np.abs(arrays[f"rho_K{K}"][:, 1:, :])
            for j in range(K):
                for i in range(K):
                    if i != j:
                        ax.loglog(t, np.maximum(rho[j, :, i], 1e-16), color="0.6", lw=0.8)
                ax.loglog(t, rho[j, :, j], color="C0", lw=1.4)
            ax.axhline(tol, color="C1", ls="--", lw=1)
            ax.axvline(t_check, color="k", ls=":", lw=1)
            ax.set(title=f"K = {K}", xlabel="time t", ylim=(1e-12, 1e1))
        for ax in axes[:, 0]:
            ax.set_ylabel("|rho_i|")
        for ax in axes.ravel()[len(Ks):]:
            ax.set_visible(False)
        axes[0, 0].plot([], [], color="C0", label="favourable (a-heavy) copy")
        axes[0, 0].plot([], [], color="0.6", label="other copies (w-heavy)")
        axes[0, 0].legend(fontsize=7, loc="lower left")
        names = [gf.save(fig, outdir, "ownership_rho", arrays)]

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for K in Ks:
            P = arrays[f"pruning_time_K{K}"]
            for j in range(K):
                others = np.delete(P[j], j)
                axes[0].plot(K + 0.6 * (j / max(K - 1, 1) - 0.5) + 0 * others, others, ".",
                             color="C0", ms=4)
            axes[1].semilogy(np.full(K, K), np.maximum(arrays[f"remaining_K{K}"], 1e-18), "o",
                             color="C2")
        axes[0].axhline(t_check, color="k", ls=":", lw=1, label="stated time")
        axes[0].set(xlabel="K (spread: index of the favourable copy)", ylabel="pruning time",
                    title="pruning times of the other copies", yscale="log")
        axes[0].legend(fontsize=7)
        axes[1].axhline(float(arrays["function_tol"]), color="C1", ls="--", lw=1)
        axes[1].set(xlabel="K", ylabel="||f_others|| / ||f*||",
                    title=f"remaining contribution at t = {t_check:g}")
        names.append(gf.save(fig, outdir, "ownership_summary", arrays))
        return names


EXPERIMENT = Ownership()

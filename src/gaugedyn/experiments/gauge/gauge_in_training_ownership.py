"""Ownership of the teacher feature measured on networks trained by finite-sample GD.

Claim 3 of derivations/theory.md section 2, on finite-sample full-batch GD (``n = n_factor * D``
Gaussian samples per seed). ``K`` duplicates with the a-heavy gauge on copy 0 and the w-heavy
gauge on the others, each seed's initial function perturbed visibly by ``epsilon``
(:func:`gaugedyn.theory.perturb`, its own generator). Claims: copy 0 is the unique owner of the
feature in every seed (:func:`gaugedyn.theory.owners`; a tie counts as not owned); the
non-owners' remaining function ``||sum_{i != owner} rho_i relu(u_i.x)|| / ||f*||``
(:func:`gaugedyn.theory.remaining_relative`) is reported per ``K`` with a 95% bootstrap interval
of its median over seeds (generator derived from the tasks' seeds), next to the flow's value.
"""

from __future__ import annotations

import numpy as np

from ..._meta import rng as meta_rng
from ...harness import Claim, Experiment, Param
from ...stats import bootstrap_ci, generator
from ...theory import Definitions, duplicates, owners, perturb, remaining_relative, solve
from . import _figures as gf
from . import _training as gtr
from . import _trajectories as gt


class GaugeInTrainingOwnership(Experiment):
    name = "gauge_in_training_ownership"
    description = "ownership of the feature among duplicates trained by finite-sample GD"
    params = {
        "Ks": Param(list, [2, 3, 5], quick=[2, 3], lo=2, hi=12, min_len=1, max_len=8,
                    distinct=True, why="GD's stable step falls as 1 / K", help="numbers of duplicates"),
        "dim": Param(int, 16, lo=4, hi=256, why="steps grow like D",
                     help="D of the duplicates"),
        "seeds": Param(int, 64, quick=24, lo=2, hi=2000, why="seeds are trained in one batch",
                       help="seeds per K"),
        "epsilon": Param(float, 0.02, lo=0.0, hi=0.2,
                         why="a perturbation beyond 0.2 is no longer small",
                         help="per-seed visible perturbation of the initial function"),
        "scale": gtr.SCALE,
        "n_factor": gtr.N_FACTOR,
        "threshold": gtr.THRESHOLD,
    }

    def tasks(self, config):
        return [{"dim": config["dim"], "K": int(K), "seeds": config["seeds"],
                 "epsilon": config["epsilon"], "scale": config["scale"],
                 "n_factor": config["n_factor"], "threshold": config["threshold"]}
                for K in sorted(config["Ks"])]

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        D, s, K = task["dim"], float(task["scale"]), task["K"]
        definitions = Definitions(threshold=task["threshold"])
        root = integer_seed(seed)
        base = duplicates(D, ["a-heavy"] + ["w-heavy"] * (K - 1), scale=s)
        flow = solve(base, t_max=50.0, definitions=definitions)
        rest = flow.pruning_time[1:]
        prune = np.nanmax(rest) if np.any(np.isfinite(rest)) else 10.0
        t_end = 2.0 * float(max(prune, np.min(flow.specialization_time)))
        problems = [perturb(base, task["epsilon"], meta_rng(root, i, "perturb"))
                    for i in range(task["seeds"])]
        eta = 0.5 / (K * s * D)
        cfg = TrainConfig(optimizer="gd", lr=eta, steps=int(np.ceil(t_end / eta)),
                          samples=task["n_factor"] * D, points_per_decade=20)
        with single_thread():
            res = train(problems, cfg, root_seed=root, device="cpu", definitions=definitions)
        b, T = base.b, base.V @ base.V.T
        last = (res.a[:, -1], res.Q[:, -1], res.R[:, -1], T, b)
        flow_at = solve(base, t_max=t_end, definitions=definitions)
        flow_remaining = remaining_relative(flow_at.a[-1], flow_at.Q[-1], flow_at.R[-1], T, b)
        return {"owner": owners(*last[:3], *last[3:5])[:, 0],
                "remaining": remaining_relative(*last), "flow_remaining": np.array(flow_remaining),
                "t": res.time, "rho": res.rho(), "t_end": np.array(t_end), "eta": np.array(eta),
                "wall_time_s": res.diagnostics.get("wall_time_s", np.nan)}

    def analyse(self, config, tasks, results, seed):
        rng = generator(seed, self.name)
        arrays = {}
        Ks, rates, remaining, remaining_ci, flow_remaining = [], [], [], [], []
        n_runs = n_owned = 0
        for task, res in zip(tasks, results):
            K = task["K"]
            owner = np.asarray(res["owner"])
            n_runs += owner.size
            n_owned += int(np.sum(owner == 0))
            c = np.asarray(res["remaining"])
            Ks.append(K)
            rates.append(float(np.mean(owner == 0)))
            iv = bootstrap_ci(c, np.median, rng=rng)
            remaining.append(iv.estimate)
            remaining_ci.append(iv.as_list())
            flow_remaining.append(float(res["flow_remaining"]))
            arrays |= {f"own_t_K{K}": np.asarray(res["t"]), f"own_rho_K{K}": np.asarray(res["rho"]),
                       f"own_remaining_K{K}": c, f"own_owner_K{K}": owner}
        arrays |= {"Ks": np.array(Ks), "owner_rate": np.array(rates),
                   "remaining_median": np.array(remaining), "remaining_ci": np.array(remaining_ci),
                   "flow_remaining": np.array(flow_remaining), "wall_time_s": gt.wall_times(results)}
        text = ", ".join(f"K={K}: {m:.2e} [{lo:.2e}, {hi:.2e}] (flow {f:.2e})"
                         for K, m, (lo, hi), f in zip(Ks, remaining, remaining_ci, flow_remaining))
        claims = [
            Claim(id="gauge_in_training_ownership.owner_every_seed",
                  statement=(f"K in {Ks} duplicates at D = {config['dim']}, the a-heavy copy "
                             "favoured, each seed's initial function perturbed by epsilon = "
                             f"{config['epsilon']:g}, trained by GD on n = {config['n_factor']} D "
                             "samples: the a-heavy copy is the unique owner of the feature in "
                             "every seed (selection rate)"),
                  measured=n_owned / max(n_runs, 1), expected=1.0, tolerance=0.0,
                  passed=bool(n_runs > 0 and n_owned == n_runs)),
            Claim(id="gauge_in_training_ownership.remaining_function",
                  statement=("remaining function of the non-owners ||f_others|| / ||f*|| at the "
                             "end of training, median over seeds with 95% bootstrap interval: "
                             f"{text}; every median below 0.05"),
                  measured=[round(c, 6) for c in remaining], expected="< 0.05", tolerance=0.05,
                  passed=bool(all(c < 0.05 for c in remaining))),
        ]
        arrays["caption_gauge_in_training_ownership"] = np.array(
            "Trained duplicates: |rho| of every copy over time, median (line) and 10-90% band over "
            "seeds; the a-heavy copy (C0) keeps the feature while the w-heavy copies are pruned.")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        Ks = [int(k) for k in arrays["Ks"]]
        fig, axes = plt.subplots(1, len(Ks), figsize=(3.6 * len(Ks), 3.4), squeeze=False)
        for ax, K in zip(axes[0], Ks):
            t = arrays[f"own_t_K{K}"][1:]
            rho = np.abs(arrays[f"own_rho_K{K}"][:, 1:, :])
            for i in range(K):
                lo, med, hi = np.quantile(rho[:, :, i], [0.1, 0.5, 0.9], axis=0)
                color = "C0" if i == 0 else "0.5"
                ax.plot(t, med, color=color, lw=1.2 if i == 0 else 0.8)
                ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0)
            ax.set(xscale="log", yscale="log", xlabel="t = eta * steps", title=f"K = {K}")
        axes[0, 0].set_ylabel("|rho_i|")
        return [gf.save(fig, outdir, "gauge_in_training_ownership", arrays)]




EXPERIMENT = GaugeInTrainingOwnership()

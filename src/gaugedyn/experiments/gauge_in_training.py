"""The gauge claims measured on trained networks: dimension scaling and ownership over many seeds.

Claims 1 and 3 of THEORY.md section 2, on finite-sample full-batch GD (``n = n_factor * D``
Gaussian samples per seed, ``S`` seeds trained batched per configuration).

Dimension scaling: the ``single`` set-up in the w-heavy and the a-heavy gauge (strength ``D``).
GD on the w-heavy neuron is stable only for ``eta`` below about ``2 / (s D)`` (its reaction rate)
while it specializes after a time of order ``s D``, so its step count grows like ``D^2``; each
gauge gets ``eta = c_gauge / (s D)`` (``c`` smaller for the a-heavy gauge, whose transport rate
``D / s`` is the fast one), and ``D`` stays small (the theory carries large ``D``, see the
``dimension_scaling`` experiment). Specialization times come from linear interpolation of the
alignment between recorded steps (:func:`gaugedyn.training.crossing_time`). Claims: the ratio of
median specialization times grows with ``D`` (95% interval of the fitted exponent above 0) and
its exponent agrees with the population flow's over the same ``D`` within ``exponent_tolerance``.

Ownership: ``K`` duplicates with the a-heavy gauge on copy 0 and the w-heavy gauge on the others,
each seed's initial function perturbed visibly by ``epsilon``
(:func:`gaugedyn.theory.perturb`, its own generator). Claims: copy 0 owns the feature in every
seed; the pruned copies' remaining contribution ``||sum_{i != owner} rho_i relu(u_i.x)|| / ||f*||``
is reported per ``K`` with a bootstrap interval of its median over seeds, next to the flow's value.
"""

from __future__ import annotations

import numpy as np

from .._meta import rng as meta_rng
from ..theory import Definitions, duplicates, perturb, single, solve
from . import _gauge_common as gc
from ._protocol import Claim, Experiment, Param


class GaugeInTraining(Experiment):
    name = "gauge_in_training"
    description = "dimension scaling and ownership on networks trained by finite-sample GD"
    params = {
        "dims": Param(list, [8, 16, 32, 64], quick=[8, 16, 32], check=gc.int_list(3, 4, 256),
                      allowed="a list of >= 3 distinct integers in [4, 256]",
                      help="input dimensions D of the scaling part (steps grow like D^2)"),
        "seeds": Param(int, 24, quick=12, check=lambda v: 2 <= v <= 1000,
                       allowed="an integer in [2, 1000]", help="seeds per scaling configuration"),
        "scale": Param((int, float), 1.0, check=lambda v: 0 < v <= 10, allowed="a number in (0, 10]",
                       help="initial coefficient rho0 = s"),
        "n_factor": Param(int, 20, check=lambda v: 2 <= v <= 1000, allowed="an integer in [2, 1000]",
                          help="samples per seed n = n_factor * D"),
        "c_w": Param(float, 1.0, check=lambda v: 0 < v <= 1.5, allowed="a number in (0, 1.5]",
                     help="w-heavy step eta = c_w / (s D)"),
        "c_a": Param(float, 0.05, check=lambda v: 0 < v <= 1.5, allowed="a number in (0, 1.5]",
                     help="a-heavy step eta = c_a / (s D)"),
        "horizon": Param((int, float), 2.0, check=lambda v: 1 < v <= 10, allowed="a number in (1, 10]",
                         help="training time of the scaling runs, in units of the flow's "
                              "specialization time"),
        "exponent_tolerance": Param(float, 0.3, check=lambda v: 0 < v <= 1, allowed="a number in (0, 1]",
                                    help="allowed distance of the trained ratio exponent from the flow's"),
        "Ks": Param(list, [2, 3, 5], quick=[2, 3], check=gc.int_list(1, 2, 12),
                    allowed="a list of distinct integers in [2, 12]", help="numbers of duplicates"),
        "own_dim": Param(int, 16, check=lambda v: 4 <= v <= 256, allowed="an integer in [4, 256]",
                         help="D of the ownership part"),
        "own_seeds": Param(int, 64, quick=24, check=lambda v: 2 <= v <= 2000,
                           allowed="an integer in [2, 2000]", help="seeds per K"),
        "epsilon": Param(float, 0.02, check=lambda v: 0 <= v <= 0.2, allowed="a number in [0, 0.2]",
                         help="per-seed visible perturbation of the initial function"),
        "threshold": gc.THRESHOLD,
    }

    def tasks(self, config):
        common = {"scale": config["scale"], "n_factor": config["n_factor"],
                  "threshold": config["threshold"]}
        out = []
        for D in sorted(config["dims"]):
            for g in gc.GAUGES:
                c = config["c_w"] if g == "w-heavy" else config["c_a"]
                out.append({"part": "scaling", "dim": int(D), "gauge": g, "c": c,
                            "seeds": config["seeds"], "horizon": config["horizon"], **common})
        for K in sorted(config["Ks"]):
            out.append({"part": "ownership", "dim": config["own_dim"], "K": int(K),
                        "seeds": config["own_seeds"], "epsilon": config["epsilon"], **common})
        return out

    def run_task(self, task, seed):
        from ..training import TrainConfig, train
        from ..training._support import root_of, single_thread

        D, s = task["dim"], float(task["scale"])
        definitions = Definitions(threshold=task["threshold"])
        root = root_of(seed)
        if task["part"] == "scaling":
            problem = single(D, task["gauge"], scale=s)
            theory = solve(problem, stop_at_specialization=True, t_max=1e6, definitions=definitions)
            t_theory = float(np.min(theory.specialization_time))
            eta = task["c"] / (s * D)
            steps = int(np.ceil(task["horizon"] * t_theory / eta))
            cfg = TrainConfig(optimizer="gd", lr=eta, steps=steps, samples=task["n_factor"] * D,
                              points_per_decade=60)
            with single_thread():
                res = train(problem, cfg, seeds=task["seeds"], root_seed=root, device="cpu",
                            definitions=definitions)
            return {"specialization_time": res.specialization_time()[:, 0],
                    "theory_time": np.array(t_theory), "eta": np.array(eta),
                    "steps": np.array(steps), "wall_time_s": res.diagnostics["wall_time_s"]}
        K = task["K"]
        gauges = ["a-heavy"] + ["w-heavy"] * (K - 1)
        base = duplicates(D, gauges, scale=s)
        flow = solve(base, t_max=50.0, definitions=definitions)
        prune = np.nanmax(flow.pruning_time[1:]) if np.any(np.isfinite(flow.pruning_time[1:])) else 10.0
        t_end = 2.0 * float(max(prune, np.min(flow.specialization_time)))
        problems = [perturb(base, task["epsilon"], meta_rng(root, i, "perturb"))
                    for i in range(task["seeds"])]
        eta = 0.5 / (K * s * D)
        cfg = TrainConfig(optimizer="gd", lr=eta, steps=int(np.ceil(t_end / eta)),
                          samples=task["n_factor"] * D, points_per_decade=20)
        with single_thread():
            res = train(problems, cfg, root_seed=root, device="cpu", definitions=definitions)
        owner = res.owner()[:, -1, 0]
        contribution = [gc.remaining_contribution(res.a[j, -1], res.Q[j, -1], owner[j])
                        for j in range(res.a.shape[0])]
        flow_at = solve(base, t_max=t_end, definitions=definitions)
        flow_contribution = gc.remaining_contribution(flow_at.a[-1], flow_at.Q[-1], 0)
        return {"owner": owner, "contribution": np.array(contribution),
                "flow_contribution": np.array(flow_contribution), "t": res.time,
                "rho": res.rho(), "t_end": np.array(t_end), "eta": np.array(eta),
                "wall_time_s": res.diagnostics["wall_time_s"]}

    def analyse(self, config, tasks, results):
        from ..training._support import bootstrap_median

        boot = np.random.default_rng(0)
        arrays, claims = {}, []
        dims = sorted(config["dims"])
        med = {g: [] for g in gc.GAUGES}
        theory = {g: [] for g in gc.GAUGES}
        for task, res in zip(tasks, results):
            if task["part"] != "scaling":
                continue
            g, D = task["gauge"], task["dim"]
            ts = np.asarray(res["specialization_time"], dtype=float)
            arrays[f"spec_{g}_D{D}"] = ts
            ts = np.where(np.isnan(ts), np.inf, ts)  # never specialized: later than the run
            med[g].append(float(np.median(ts)))
            theory[g].append(float(res["theory_time"]))
            arrays[f"spec_ci_{g}_D{D}"] = np.array(bootstrap_median(ts, boot))
            arrays[f"steps_{g}_D{D}"] = np.asarray(res["steps"])
        ratio = np.array(med["w-heavy"]) / np.array(med["a-heavy"])
        ratio_theory = np.array(theory["w-heavy"]) / np.array(theory["a-heavy"])
        # seed interval of the ratio: bootstrap both medians
        ratio_ci = []
        for D in dims:
            w, a = (np.nan_to_num(arrays[f"spec_{g}_D{D}"], nan=np.inf) for g in gc.GAUGES)
            r = (np.median(w[boot.integers(0, w.size, (2000, w.size))], axis=1)
                 / np.median(a[boot.integers(0, a.size, (2000, a.size))], axis=1))
            ratio_ci.append(np.quantile(r, [0.05, 0.95]))
        fit = gc.loglog_fit(dims, ratio)
        fit_theory = gc.loglog_fit(dims, ratio_theory)
        n_missing = sum(int(np.sum(~np.isfinite(arrays[f"spec_{g}_D{D}"]))) for g in gc.GAUGES for D in dims)
        n_total = sum(arrays[f"spec_{g}_D{D}"].size for g in gc.GAUGES for D in dims)
        arrays |= {"dims": np.array(dims, dtype=float), "ratio": ratio, "ratio_ci": np.array(ratio_ci),
                   "ratio_theory": ratio_theory,
                   "median_w": np.array(med["w-heavy"]), "median_a": np.array(med["a-heavy"]),
                   "theory_w": np.array(theory["w-heavy"]), "theory_a": np.array(theory["a-heavy"]),
                   "fit": gc.fit_row(fit), "fit_theory": gc.fit_row(fit_theory)}
        claims.append(Claim(
            id="gauge_in_training.ratio_grows",
            statement=(f"trained by GD on n = {config['n_factor']} D samples ({config['seeds']} "
                       f"seeds per point, D in {dims}), the ratio of median specialization times "
                       "w-heavy / a-heavy grows with D: fitted exponent (95% CI "
                       f"[{fit['ci'][0]:.3f}, {fit['ci'][1]:.3f}]) with the interval above 0; "
                       f"{n_missing} of {n_total} runs did not specialize within {config['horizon']:g} "
                       "times the flow's time (counted as later than the run; at most 10% allowed)"),
            measured=round(fit["slope"], 4), expected="> 0 (interval)", tolerance=0.0,
            passed=bool(fit["ci"][0] > 0 and n_missing <= 0.1 * n_total)))
        tol = config["exponent_tolerance"]
        claims.append(Claim(
            id="gauge_in_training.ratio_exponent_matches_flow",
            statement=("the trained ratio exponent agrees with the population flow's over the same "
                       f"D (flow: {fit_theory['slope']:.3f}; Theta(D^2) asymptotically)"),
            measured=round(fit["slope"], 4), expected=round(fit_theory["slope"], 4),
            tolerance=tol, passed=bool(abs(fit["slope"] - fit_theory["slope"]) <= tol)))

        Ks, rates, contrib, contrib_ci, flow_contrib = [], [], [], [], []
        n_runs = n_owned = 0
        for task, res in zip(tasks, results):
            if task["part"] != "ownership":
                continue
            K = task["K"]
            owner = np.asarray(res["owner"])
            n_runs += owner.size
            n_owned += int(np.sum(owner == 0))
            c = np.asarray(res["contribution"])
            Ks.append(K)
            rates.append(float(np.mean(owner == 0)))
            contrib.append(float(np.median(c)))
            contrib_ci.append(bootstrap_median(c, boot))
            flow_contrib.append(float(res["flow_contribution"]))
            arrays |= {f"own_t_K{K}": np.asarray(res["t"]), f"own_rho_K{K}": np.asarray(res["rho"]),
                       f"own_contribution_K{K}": c, f"own_owner_K{K}": owner}
        arrays |= {"Ks": np.array(Ks), "owner_rate": np.array(rates),
                   "contribution_median": np.array(contrib), "contribution_ci": np.array(contrib_ci),
                   "flow_contribution": np.array(flow_contrib)}
        claims.append(Claim(
            id="gauge_in_training.owner_every_seed",
            statement=(f"K in {Ks} duplicates at D = {config['own_dim']}, the a-heavy copy "
                       f"favoured, each seed's initial function perturbed by epsilon = "
                       f"{config['epsilon']:g}, trained by GD on n = {config['n_factor']} D "
                       "samples: the a-heavy copy owns the feature in every seed (selection rate)"),
            measured=n_owned / max(n_runs, 1), expected=1.0, tolerance=0.0,
            passed=bool(n_runs > 0 and n_owned == n_runs)))
        text = ", ".join(f"K={K}: {m:.2e} [{lo:.2e}, {hi:.2e}] (flow {f:.2e})"
                         for K, m, (lo, hi), f in zip(Ks, contrib, contrib_ci, flow_contrib))
        claims.append(Claim(
            id="gauge_in_training.remaining_contribution",
            statement=("remaining contribution of the pruned copies ||f_others|| / ||f*|| at the "
                       f"end of training, median over seeds with 90% bootstrap interval: {text}; "
                       "reported (passes when every median is below 0.05)"),
            measured=[round(c, 6) for c in contrib], expected="< 0.05", tolerance=0.05,
            passed=bool(all(c < 0.05 for c in contrib))))
        arrays["wall_time_s"] = gc.wall_times(results)
        arrays["caption_gauge_in_training_scaling"] = np.array(
            "Specialization times of trained networks (markers: median over seeds, bars: 90% "
            "bootstrap interval) against D for both gauges, with the population flow (lines); "
            "right: their ratio with the fitted exponent, against the flow's ratio.")
        arrays["caption_gauge_in_training_ownership"] = np.array(
            "Trained duplicates: |rho| of every copy over time, median (line) and 10-90% band over "
            "seeds; the a-heavy copy (C0) keeps the feature while the w-heavy copies are pruned.")
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        dims = arrays["dims"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for i, (g, key) in enumerate((("w-heavy", "w"), ("a-heavy", "a"))):
            m = arrays[f"median_{key}"]
            ci = np.array([arrays[f"spec_ci_{g}_D{int(D)}"] for D in dims])
            axes[0].errorbar(dims, m, yerr=[m - ci[:, 0], ci[:, 1] - m], fmt="o", color=f"C{i}",
                             label=f"trained, {g}")
            axes[0].plot(dims, arrays[f"theory_{key}"], color=f"C{i}", lw=1, label=f"flow, {g}")
        axes[0].set(xscale="log", yscale="log", xlabel="D", ylabel="specialization time")
        axes[0].legend(fontsize=7)
        r, ci = arrays["ratio"], arrays["ratio_ci"]
        axes[1].errorbar(dims, r, yerr=[r - ci[:, 0], ci[:, 1] - r], fmt="o",
                         label=f"trained, p = {arrays['fit'][0]:.2f}")
        axes[1].plot(dims, arrays["ratio_theory"], "k-", lw=1,
                     label=f"flow, p = {arrays['fit_theory'][0]:.2f}")
        axes[1].set(xscale="log", yscale="log", xlabel="D", ylabel="t_spec(w-heavy) / t_spec(a-heavy)")
        axes[1].legend(fontsize=7)
        names = [gc.save(fig, outdir, "gauge_in_training_scaling", arrays)]

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
        names.append(gc.save(fig, outdir, "gauge_in_training_ownership", arrays))
        return names


EXPERIMENT = GaugeInTraining()

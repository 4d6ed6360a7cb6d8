"""Selection under visible perturbations of the initial function: a phase diagram.

Claim 4 of derivations/theory.md section 2 (first half). Two duplicate students start from the ``single``
function; copy 0 gets the a-heavy gauge and copy 1 the w-heavy gauge, both at gauge strength
``lambda`` (``named_delta``: a-heavy ``a^2 = lambda |rho|``, ``|w|^2 = |rho| / lambda``; w-heavy
swapped), so their transport mobilities differ by ``lambda^2`` and ``lambda = 1`` is the
symmetric control (both balanced). Each sample perturbs the initial function by
:func:`gaugedyn.theory.perturb` with size ``epsilon`` (gauges kept), and the batched integrator
follows every sample to ``t_max``; the favourable copy wins when it owns the teacher feature at
``t_max``. The map of the win fraction over ``(epsilon, lambda)`` is the phase diagram; a sample
whose trajectory diverges (a perturbation that drives some ``|w_i|`` through zero) counts as not
won and is reported.
"""

from __future__ import annotations

import math

import numpy as np

from ...harness import Claim, Experiment, Param
from ...theory import Definitions, duplicates, perturb, with_gauge
from . import _figures as gf
from . import _params as gp
from . import _trajectories as gt


class Perturbations(Experiment):
    name = "perturbations"
    description = "selection probability over perturbation size and gauge strength"
    params = {
        "strengths": Param(list, [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0],
                           quick=[1.0, 2.0, 5.0, 20.0, 100.0], lo=1.0, hi=1e4, min_len=2,
                           max_len=20, distinct=True, check=lambda v: 1.0 in v,
                           why="the mobility ratio lambda^2 stays below 1e8",
                           allowed="a list of at least 2 and at most 20 distinct numbers in [1, 10000] that contains 1 "
                                   "(upper bound: the mobility ratio lambda^2 stays below 1e8)",
                           help="gauge strengths lambda (1: symmetric control)"),
        "epsilons": Param(list, [0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                          quick=[0.01, 0.03, 0.1, 0.3, 1.0], lo=0.0, lo_open=True, hi=2.0,
                          min_len=2, max_len=20, distinct=True,
                          why="a perturbation of twice the function is no longer small",
                          help="perturbation sizes epsilon"),
        "n_samples": Param(int, 64, quick=16, lo=4, hi=4096,
                           why="one batch of n_samples x epsilons trajectories per strength",
                           help="perturbed initial functions per (epsilon, lambda) cell"),
        "dim": gp.dim_param(help="input dimension D (sets the initial overlap D^-1/2)"),
        "scale": gp.scale_param(help="initial coefficient rho0 = s of each copy"),
        "t_max": Param((int, float), 100.0, lo=0.0, lo_open=True, hi=1e6,
                       why="the stiff integrator's steps grow with the horizon",
                       help="time at which the owner is read"),
        "claim_strength": Param((int, float), 2.0, lo=1.0, lo_open=True, hi=1e4,
                                why="the largest strength allowed",
                                help="the claimed win-every-time region has lambda >= this"),
        "claim_epsilon": Param((int, float), 0.1, lo=0.0, lo_open=True, hi=2.0,
                               why="the largest perturbation allowed",
                               help="the claimed win-every-time region has epsilon <= this"),
        "rtol": gp.rtol_param(1e-6),
    }

    def tasks(self, config):
        keep = ("n_samples", "dim", "scale", "t_max", "rtol")
        return [{"strength": float(lam), "epsilons": [float(e) for e in sorted(config["epsilons"])],
                 **{k: config[k] for k in keep}} for lam in sorted(config["strengths"])]

    def run_task(self, task, seed):
        base = duplicates(task["dim"], ["balanced", "balanced"], scale=task["scale"])
        problem = with_gauge(base, names=["a-heavy", "w-heavy"], strength=task["strength"])
        n = task["n_samples"]
        problems = []
        for eps, child in zip(task["epsilons"], seed.spawn(len(task["epsilons"]))):
            rng = np.random.default_rng(child)
            problems += [perturb(problem, eps, rng) for _ in range(n)]
        grid = gt.time_grid(task["t_max"], 30, t_min=1e-3 / task["strength"])
        trajs = gt.trajectories_or_none(problems, grid, rtol=task["rtol"], atol=1e-9,
                                        definitions=Definitions())
        owner = np.array([-1 if tr is None else int(tr["owner"][0]) for tr in trajs])
        pruned = np.array([False if tr is None else bool(np.isfinite(tr["pruning_time"][1]))
                           for tr in trajs])
        shape = (len(task["epsilons"]), n)
        return {"owner": owner.reshape(shape), "loser_pruned": pruned.reshape(shape),
                "rho0": np.array([p.rho for p in problems]).reshape(shape + (2,))}

    def analyse(self, config, tasks, results, seed):
        strengths = np.array([t["strength"] for t in tasks])
        epsilons = np.array(tasks[0]["epsilons"])
        owner = np.stack([np.asarray(r["owner"]) for r in results])  # (lambda, eps, sample)
        win = (owner == 0).mean(axis=-1)
        diverged = (owner < 0).mean(axis=-1)
        pruned = np.stack([np.asarray(r["loser_pruned"]) for r in results]).mean(axis=-1)
        always = (owner == 0).all(axis=-1)
        n = owner.shape[-1]
        region = (strengths[:, None] >= config["claim_strength"]) & (
            epsilons[None, :] <= config["claim_epsilon"])
        region_min = float(win[region].min()) if region.any() else math.nan
        control = strengths == 1.0
        pooled = float(win[control].mean()) if control.any() else math.nan
        n_pooled = int(control.sum() * epsilons.size * n)
        band = 4.0 * math.sqrt(0.25 / max(n_pooled, 1))
        # largest epsilon up to which every smaller cell is won every time, per strength
        edge = np.array([epsilons[:np.argmin(row)].max() if not row.all() and row[0]
                         else (epsilons.max() if row.all() else 0.0) for row in always])
        claims = [
            Claim(id="perturbations.win_region",
                  statement=(f"with gauge strength lambda >= {config['claim_strength']:g} and "
                             f"perturbation size epsilon <= {config['claim_epsilon']:g}, the "
                             f"favourable (a-heavy) copy owns the feature in every one of the {n} "
                             "perturbed samples of each cell (smallest win fraction in that "
                             "region)"),
                  measured=region_min, expected=1.0, tolerance=0.0,
                  passed=bool(region.any() and region_min == 1.0)),
            Claim(id="perturbations.symmetric_control",
                  statement=("at lambda = 1 (both copies balanced, the labels interchangeable) "
                             "the 'favourable' copy wins about half the time: pooled win "
                             f"fraction over {n_pooled} samples within 4 binomial standard "
                             "errors of 1/2"),
                  measured=pooled, expected=0.5, tolerance=band,
                  passed=bool(control.any() and abs(pooled - 0.5) <= band)),
        ]
        arrays = {
            "strengths": strengths, "epsilons": epsilons, "win_fraction": win,
            "win_always": always, "diverged_fraction": diverged, "loser_pruned_fraction": pruned,
            "win_edge_epsilon": edge, "n_samples": np.array(n),
            "claim_strength": np.array(float(config["claim_strength"])),
            "claim_epsilon": np.array(float(config["claim_epsilon"])),
            "caption_perturbations_map": np.array(
                f"Two duplicates at D = {config['dim']}, a-heavy and w-heavy at gauge strength "
                "lambda (transport mobility ratio lambda^2), initial function perturbed at size "
                f"epsilon ({n} samples per cell). Colour: fraction of samples in which the "
                f"a-heavy copy owns the feature at t = {config['t_max']:g}; cells outlined in "
                "white: it wins every time; dashed box: the region claimed. lambda = 1 is the "
                "symmetric control. Samples whose trajectory diverged (some |w_i| driven through "
                f"zero by a large perturbation; at most {diverged.max():.3f} of a cell) count as "
                "not won."),
            "caption_perturbations_edge": np.array(
                "Largest perturbation size up to which the favourable copy wins every sample, "
                "against gauge strength, and the fraction of samples in which the other copy is "
                "pruned (|rho| below tolerance) by the end."),
        }
        return arrays, claims

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        lam, eps = arrays["strengths"], arrays["epsilons"]
        win, always = arrays["win_fraction"], arrays["win_always"]
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        xi, yi = np.arange(eps.size), np.arange(lam.size)
        mesh = ax.pcolormesh(xi, yi, win, vmin=0, vmax=1, cmap="viridis", shading="nearest")
        for i in yi:
            for j in xi:
                if always[i, j]:
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                               ec="white", lw=1.5))
                ax.text(j, i, f"{win[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="k" if win[i, j] > 0.6 else "w")
        inside_l = np.flatnonzero(lam >= float(arrays["claim_strength"]))
        inside_e = np.flatnonzero(eps <= float(arrays["claim_epsilon"]))
        if inside_l.size and inside_e.size:
            ax.add_patch(plt.Rectangle((inside_e[0] - 0.5, inside_l[0] - 0.5), inside_e.size,
                                       inside_l.size, fill=False, ec="C1", lw=2, ls="--"))
        ax.set_xticks(xi, [f"{e:g}" for e in eps])
        ax.set_yticks(yi, [f"{v:g}" for v in lam])
        ax.grid(False)
        ax.set(xlabel="perturbation size epsilon", ylabel="gauge strength lambda",
               title="P(favourable copy owns the feature)")
        fig.colorbar(mesh, ax=ax, label="win fraction")
        names = [gf.save(fig, outdir, "perturbations_map", arrays)]

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        edge = arrays["win_edge_epsilon"]
        won = edge > 0
        axes[0].loglog(lam[won], edge[won], "o-", label="largest epsilon won every time")
        floor = eps.min() / 3
        axes[0].plot(lam[~won], np.full((~won).sum(), floor), "x", color="C3", ms=8,
                     label="not won every time even at the smallest epsilon")
        axes[0].set(xlabel="gauge strength lambda", ylabel="epsilon",
                    title="favourable copy wins every sample up to", ylim=(floor / 2, None))
        axes[0].legend(fontsize=7)
        for i, v in enumerate(lam):
            axes[1].semilogx(eps, arrays["loser_pruned_fraction"][i], "o-", label=f"lambda={v:g}")
        axes[1].set(xlabel="perturbation size epsilon", ylabel="fraction",
                    title="other copy pruned by the end")
        axes[1].legend(fontsize=7)
        names.append(gf.save(fig, outdir, "perturbations_edge", arrays))
        return names


EXPERIMENT = Perturbations()

"""Online SGD against the classical online ODE (erf) and the population flow (ReLU, small eta).

erf part: a ``K = 2``, ``M = 1`` teacher-student problem whose order parameters ``(a, Q, R, T)`` are
the same at every ``D`` (the weights are embedded in the first ``K + M`` coordinates) is trained by
online SGD (one fresh sample per step, step ``eta / D``, time ``t = steps / D``), ``S`` seeds
batched per ``D``. The reference is the online ODE of Saad & Solla / Goldt et al. with its
``eta^2`` noise term (:mod:`gaugedyn.training._online_ode`); the ODE without that term is shown
too. Claims: the ODE lies inside the seeds' 10-90% band of the population loss at (at least 90%
of) the records after ``MIN_STEPS`` steps, over all ``D`` (the largest
``|median - ODE| / half-width`` is reported), and the seed spread shrinks as
``D^{-1/2}`` (fitted exponent of the time-averaged standard deviation over seeds).

erf at large ``D``: the same problem, eta, time and seeds run as the exact order-parameter chain
of online SGD (``backend="chain"``, :mod:`gaugedyn.training._online_chain`; the same law as
weight-space SGD at each ``D``, at a cost per step independent of ``D``) for ``D`` up to 1e5.
The same two checks, with the same rules, fixed before the first run: the ODE inside the 10-90%
band at >= 90% of the records after ``MIN_STEPS`` steps over the chain's ``D``, and the spread
exponent within ``spread_tolerance`` of -1/2 over the chain's ``D``.

ReLU part: the ``duplicates`` set-up (a-heavy and w-heavy copy) trained by online SGD with a small
``eta`` against the population flow at flow time ``eta t``.
"""

from __future__ import annotations

import numpy as np

from ...harness import Claim, Experiment, Param
from ...stats import band, loglog_fit
from ...theory import Problem, duplicates, population_loss, with_gauge
from . import _figures as gf
from . import _trajectories as gt

MIN_STEPS = 10
"""Records after fewer steps are not compared (a few samples do not average to the ODE)."""

ERF_STATE = {
    "a": [0.2, 0.2],
    "Q": [[0.5, 0.1], [0.1, 0.3]],
    "R": [[0.1], [0.0]],
    "b": [1.0],
    "T": [[1.0]],
}


def embedded_problem(dim: int, a, Q, R, b, T, activation: str) -> Problem:
    """A problem with prescribed order parameters, weights in the first ``K + M`` coordinates."""
    a, Q, R, b, T = (np.asarray(x, dtype=float) for x in (a, Q, R, b, T))
    K, M = a.size, b.size
    L = np.linalg.cholesky(np.block([[T, R.T], [R, Q]]))
    basis = np.zeros((K + M, dim))
    basis[:, : K + M] = L
    return Problem(a=a, W=basis[M:], b=b, V=basis[:M], activation=activation,
                   setup={"name": "embedded", "dim": dim})


class OnlineSGD(Experiment):
    name = "online_sgd"
    description = "erf online SGD vs the online ODE (eta^2 terms); ReLU online SGD vs the flow"
    params = {
        "dims": Param(list, [100, 200, 400, 800], quick=[100, 200, 400], lo=8, hi=20000,
                      min_len=3, max_len=12, distinct=True, item=int,
                      why="memory and time: S seeds x D^2 order-parameter records per task",
                      help="input dimensions D for the erf comparison (>= 3 for the spread fit)"),
        "seeds": Param(int, 32, quick=16, lo=4, hi=1000, why="one task trains all seeds at once",
                       help="seeds per configuration"),
        "eta": Param(float, 1.0, lo=0, lo_open=True, hi=3,
                     why="the erf online dynamics diverge near eta = pi",
                     help="erf learning rate (step eta / D)"),
        "t_max": Param((int, float), 12.0, quick=8.0, lo=0, lo_open=True, hi=1000,
                       why="steps = t_max D online steps per seed",
                       help="erf training time t = steps / D"),
        "relu_dim": Param(int, 100, quick=40, lo=8, hi=20000, why="as dims",
                          help="D of the ReLU comparison"),
        "relu_eta": Param(float, 0.005, lo=0, lo_open=True, hi=1,
                          why="the flow limit needs a small eta",
                          help="ReLU learning rate (small: the flow limit)"),
        "relu_flow_time": Param((int, float), 3.0, quick=2.0, lo=0, lo_open=True, hi=100,
                                why="steps = flow_time D / eta online steps",
                                help="ReLU run length in population-flow time eta t"),
        "chain_dims": Param(list, [1000, 10000, 100000], quick=[1000, 3000, 10000], lo=8,
                            hi=10**6, min_len=3, max_len=12, distinct=True, item=int,
                            why="t_max D chain steps per seed (about 1 us each)",
                            help="input dimensions D of the exact order-parameter chain (>= 3 "
                            "for the spread fit)"),
        "spread_tolerance": Param(float, 0.2, lo=0, lo_open=True, hi=0.5, hi_open=True,
                                  why="a wider band could not tell -1/2 from 0",
                                  help="allowed distance of the spread exponent from -1/2"),
    }

    def tasks(self, config):
        erf = [{"kind": "erf", "dim": int(d), "eta": config["eta"], "t_max": config["t_max"],
                "seeds": config["seeds"]} for d in sorted(config["dims"])]
        chain = [{"kind": "chain", "dim": int(d), "eta": config["eta"], "t_max": config["t_max"],
                  "seeds": config["seeds"]} for d in sorted(config["chain_dims"])]
        relu = {"kind": "relu", "dim": config["relu_dim"], "eta": config["relu_eta"],
                "t_max": config["relu_flow_time"] / config["relu_eta"], "seeds": config["seeds"]}
        return erf + chain + [relu]

    @staticmethod
    def problem(task) -> Problem:
        if task["kind"] in ("erf", "chain"):
            return embedded_problem(task["dim"], activation="erf", **ERF_STATE)
        base = duplicates(task["dim"], ["a-heavy", "w-heavy"], overlap=0.3)
        return with_gauge(base, names=["a-heavy", "w-heavy"], strength=2.0)

    def run_task(self, task, seed):
        from ..._meta import integer_seed
        from ...training import TrainConfig, single_thread, train

        steps = int(round(task["t_max"] * task["dim"]))
        cfg = TrainConfig(optimizer="sgd", lr=float(task["eta"]), steps=steps, samples=None,
                          points_per_decade=15)
        if task["kind"] == "chain":
            from ...training import train_online

            res = train_online(self.problem(task), cfg, task["seeds"], integer_seed(seed), None, None,
                               1, "chain")
        else:
            with single_thread():
                res = train(self.problem(task), cfg, seeds=task["seeds"],
                            root_seed=integer_seed(seed), device="cpu")
        return {"t": res.time, "flow_time": res.flow_time, "loss": res.loss, "a": res.a,
                "Q": res.Q, "R": res.R, "wall_time_s": res.diagnostics["wall_time_s"]}

    def analyse(self, config, tasks, results, seed):
        arrays, claims = self._analyse_erf(config, tasks, results, "erf")
        chain_arrays, chain_claims = self._analyse_erf(config, tasks, results, "chain")
        arrays |= chain_arrays
        claims += chain_claims
        relu_arrays, relu_claim = self._analyse_relu(tasks, results)
        arrays |= relu_arrays
        claims.append(relu_claim)
        arrays["wall_time_s"] = gt.wall_times(results)
        arrays["caption_online_sgd_erf"] = np.array(
            "erf online SGD: population loss, median (line) and 10-90% band over seeds for each "
            "D, against the online ODE with its eta^2 noise term (black) and without it (dashed).")
        arrays["caption_online_sgd_spread"] = np.array(
            "Seed spread of the loss against D with the fitted power laws and the D^-1/2 "
            "reference: weight-space SGD (circles) and its exact order-parameter chain (squares).")
        arrays["caption_online_sgd_relu"] = np.array(
            "ReLU online SGD at small eta against the population flow (black), time eta t.")
        return arrays, claims

    def _erf_task(self, task, res, prefix):
        """Band, ODE curves and the comparison numbers of one erf task; the ODE without its
        noise term only for weight space (``prefix == "erf"``), the one check that uses it."""
        from ...training import online_ode

        D = task["dim"]
        problem = self.problem(task)
        t, loss = np.asarray(res["t"]), np.asarray(res["loss"])
        b, T = problem.b, problem.V @ problem.V.T
        odes = {}
        curves = {"ode": True, "ode_eta1": False} if prefix == "erf" else {"ode": True}
        for label, noise in curves.items():
            o = online_ode(problem, task["eta"], t, noise=noise)
            odes[label] = population_loss(o["a"], o["Q"], o["R"], b, T, "erf")
        lo, med, hi = band(loss)
        half = np.maximum(0.5 * (hi - lo), 1e-12)
        sel = t * D >= MIN_STEPS
        late = t >= 0.2 * t[-1]
        return {
            "worst": {k: float((np.abs(med - v)[sel] / half[sel]).max()) for k, v in odes.items()},
            "inside": int(np.sum(((lo <= odes["ode"]) & (odes["ode"] <= hi))[sel])),
            "total": int(np.sum(sel)),
            "spread": float(np.mean(np.std(loss[:, late], axis=0))),
            "arrays": {f"{prefix}_t_D{D}": t, f"{prefix}_band_D{D}": np.stack([lo, med, hi])}
            | {f"{prefix}_{k}_D{D}": v for k, v in odes.items()},
        }

    def _analyse_erf(self, config, tasks, results, kind):
        """The erf checks over the tasks of ``kind``: ``"erf"`` (weight space, with the noise-term
        contrast) or ``"chain"`` (the exact order-parameter chain at large ``D``)."""
        erf = [(tk, self._erf_task(tk, r, kind)) for tk, r in zip(tasks, results)
               if tk["kind"] == kind]
        dims = [tk["dim"] for tk, _ in erf]
        arrays = {}
        for _, m in erf:
            arrays |= m["arrays"]
        worst = max([0.0] + [m["worst"]["ode"] for _, m in erf])
        frac = sum(m["inside"] for _, m in erf) / max(sum(m["total"] for _, m in erf), 1)
        spreads = [m["spread"] for _, m in erf]
        fit = loglog_fit(dims, spreads)
        arrays |= {f"{kind}_dims": np.array(dims, dtype=float), f"{kind}_spread": np.array(spreads),
                   f"{kind}_spread_fit": np.array([fit.slope, fit.intercept, fit.slope_low,
                                                   fit.slope_high])}
        tol = config["spread_tolerance"]
        how = ("erf online SGD" if kind == "erf" else
               "erf online SGD run as its exact order-parameter chain (backend 'chain')")
        within = Claim(
            id=f"online_sgd.{kind}_within_spread",
            statement=(f"{how} (eta = {config['eta']:g}, step eta/D, t = steps/D, "
                       f"D in {dims}, {config['seeds']} seeds): the online ODE with its eta^2 "
                       "noise term lies inside the seeds' 10-90% band of the population loss "
                       f"(fraction of records after >= {MIN_STEPS} steps, all D; largest "
                       f"|median - ODE| / band half-width {worst:.3f})"),
            measured=round(frac, 4), expected=">= 0.9", tolerance=0.1, passed=bool(frac >= 0.9))
        spread = Claim(
            id=f"online_sgd.{kind}_spread_exponent",
            statement=(f"{how}: the seed spread (standard deviation of the loss over seeds, "
                       f"averaged over the last 80% of the run) scales as D^p over D in {dims}; "
                       f"fitted p (95% CI [{fit.slope_low:.3f}, {fit.slope_high:.3f}]); "
                       "theory -1/2"),
            measured=round(fit.slope, 4), expected=-0.5, tolerance=tol,
            passed=bool(abs(fit.slope + 0.5) <= tol))
        if kind != "erf":
            return arrays, [within, spread]
        worst_noiseless = next(m["worst"]["ode_eta1"] for tk, m in erf if tk["dim"] == max(dims))
        noise = Claim(
            id="online_sgd.erf_noise_term_needed",
            statement=("without its eta^2 term the ODE leaves the seed band at the largest D "
                       "(largest |median - ODE_eta| / band half-width; > 1 means outside)"),
            measured=round(worst_noiseless, 4), expected="> 1", tolerance=1.0,
            passed=bool(worst_noiseless > 1.0))
        return arrays, [within, noise, spread]

    def _analyse_relu(self, tasks, results):
        from ...training import match_times

        task, res = next((tk, r) for tk, r in zip(tasks, results) if tk["kind"] == "relu")
        ft = np.asarray(res["flow_time"])
        flow = gt.trajectory(self.problem(task), ft, rtol=1e-10, atol=1e-12)
        ref = flow["loss"][match_times(ft, flow["t"])]
        lo, med, hi = band(np.asarray(res["loss"]))
        half = np.maximum(0.5 * (hi - lo), 1e-12)
        sel = np.asarray(res["t"]) * task["dim"] >= MIN_STEPS
        r_relu = float(np.max(np.abs(med - ref)[sel] / half[sel]))
        f_relu = float(np.mean(((lo <= ref) & (ref <= hi))[sel]))
        arrays = {"relu_flow_time": ft, "relu_band": np.stack([lo, med, hi]), "relu_flow": ref}
        return arrays, Claim(
            id="online_sgd.relu_flow_limit",
            statement=(f"ReLU duplicates (a-heavy + w-heavy, D = {task['dim']}) by online SGD "
                       f"with eta = {task['eta']:g}: the population flow at time eta t lies "
                       "inside the seeds' 10-90% band of the loss (fraction of records after "
                       f">= {MIN_STEPS} steps; largest |median - flow| / band half-width "
                       f"{r_relu:.3f})"),
            measured=round(f_relu, 4), expected=">= 0.9", tolerance=0.1,
            passed=bool(f_relu >= 0.9))

    def plot(self, arrays, config, outdir):
        import matplotlib.pyplot as plt

        dims = [int(d) for d in arrays["erf_dims"]]
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, D in enumerate(dims):
            t = arrays[f"erf_t_D{D}"][1:]
            lo, med, hi = arrays[f"erf_band_D{D}"][:, 1:]
            ax.plot(t, med, color=f"C{i}", lw=1, label=f"SGD D = {D}")
            ax.fill_between(t, lo, hi, color=f"C{i}", alpha=0.25, lw=0)
        t = arrays[f"erf_t_D{dims[-1]}"][1:]
        ax.plot(t, arrays[f"erf_ode_D{dims[-1]}"][1:], "k", lw=1.2, label="online ODE (eta, eta^2)")
        ax.plot(t, arrays[f"erf_ode_eta1_D{dims[-1]}"][1:], "k--", lw=1, label="ODE without eta^2")
        ax.set(xscale="log", yscale="log", xlabel="t = steps / D", ylabel="population loss")
        ax.legend(fontsize=7)
        names = [gf.save(fig, outdir, "online_sgd_erf", arrays)]

        fig, ax = plt.subplots(figsize=(4.5, 3.6))
        everything = []
        for i, (kind, marker, what) in enumerate((("erf", "o", "weight space"),
                                                  ("chain", "s", "chain"))):
            if f"{kind}_dims" not in arrays:  # a run from before the chain existed
                continue
            d, s = arrays[f"{kind}_dims"], arrays[f"{kind}_spread"]
            slope, icpt = arrays[f"{kind}_spread_fit"][:2]
            ax.plot(d, s, marker, color=f"C{i}", label=f"{what}, p = {slope:.3f}")
            ax.plot(d, np.exp(icpt) * d**slope, f"C{i}-", lw=1)
            everything.append((d, s))
        d = np.concatenate([x for x, _ in everything])
        d0, s0 = everything[0][0][0], everything[0][1][0]
        d = np.sort(d)
        ax.plot(d, s0 * (d / d0) ** -0.5, "k:", label="D^-1/2")
        ax.set(xscale="log", yscale="log", xlabel="D", ylabel="seed std of loss")
        ax.legend(fontsize=7)
        names.append(gf.save(fig, outdir, "online_sgd_spread", arrays))

        fig, ax = plt.subplots(figsize=(5, 3.6))
        ft = arrays["relu_flow_time"][1:]
        lo, med, hi = arrays["relu_band"][:, 1:]
        ax.plot(ft, med, "C0", lw=1, label="online SGD (median)")
        ax.fill_between(ft, lo, hi, color="C0", alpha=0.3, lw=0)
        ax.plot(ft, arrays["relu_flow"][1:], "k", lw=1, label="population flow")
        ax.set(xscale="log", yscale="log", xlabel="flow time eta t", ylabel="population loss")
        ax.legend(fontsize=7)
        names.append(gf.save(fig, outdir, "online_sgd_relu", arrays))
        return names


EXPERIMENT = OnlineSGD()

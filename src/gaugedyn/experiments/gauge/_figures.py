"""Figures of the gauge experiments, drawn from the stored arrays alone: one function per
experiment (named after it; the experiment's ``plot`` calls it), with the captions stored with
the arrays, the shared saving and the stored row of a fit."""

from __future__ import annotations

import numpy as np

from . import _protocol as gp
from . import _trajectories as gt


def caption(arrays: dict, name: str) -> str:
    """The caption stored with the arrays under ``caption_<name>``."""
    value = arrays.get(f"caption_{name}", "")
    return str(np.asarray(value).item()) if np.size(value) else ""


def save(fig, outdir, name: str, arrays: dict, legends=()) -> tuple[str, str]:
    """Write ``name.png`` and ``name.pdf`` (shared style); return ``(name, caption)``.

    Each axis in ``legends`` gets its legend (font size 7) first.
    """
    from ...plotting import save_figure

    for ax in legends:
        ax.legend(fontsize=7)
    return save_figure(fig, outdir, name, caption=caption(arrays, name))


def fit_row(fit) -> np.ndarray:
    """A `gaugedyn.stats.LineFit` as the stored row ``[slope, intercept, low, high]``."""
    return np.array([fit.slope, fit.intercept, fit.slope_low, fit.slope_high])


def clock(arrays, config, outdir):
    import matplotlib.pyplot as plt

    names = []
    keys = gt.GAUGE_STYLES
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for key, label, color in keys:
        P = arrays[f"path_{key}"]
        axes[0].plot(P[:, 0], P[:, 1], "-", color=color, label=label)
        axes[0].plot(P[-1, 0], P[-1, 1], "s", color=color)
        t = arrays[f"t_{key}"][1:]
        axes[1].semilogx(
            t, arrays[f"alignment_{key}"][1:], "-", color=color, label=f"alignment, {label}"
        )
        axes[1].semilogx(t, arrays[f"rho_{key}"][1:], "--", color=color, label=f"rho, {label}")
    P = arrays["path_w_heavy"]
    axes[0].plot(P[0, 0], P[0, 1], "ko", label="common start")
    axes[0].set(
        xlabel="coefficient rho",
        ylabel="alignment u.v",
        title=f"paths (Hausdorff distance {float(arrays['hausdorff']):.3f})",
    )
    axes[1].set(xlabel="time t", ylabel="rho, alignment", title="against time")
    names.append(save(fig, outdir, "clock_paths", arrays, legends=axes))

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for (key, label, color), lw in zip(keys, (4.0, 1.4)):  # equal mu_R: thick under thin
        t = arrays[f"t_{key}"][1:]
        axes[0].loglog(
            t, arrays[f"mu_R_{key}"][1:], "-", color=color, lw=lw, alpha=0.8, label=f"mu_R, {label}"
        )
        axes[0].loglog(t, arrays[f"mu_T_{key}"][1:], "--", color=color, label=f"mu_T, {label}")
        axes[1].loglog(
            t,
            arrays[f"clock_R_{key}"][1:],
            "-",
            color=color,
            lw=lw,
            alpha=0.8,
            label=f"reaction clock, {label}",
        )
        axes[1].loglog(
            t, arrays[f"clock_T_{key}"][1:], "--", color=color, label=f"transport clock, {label}"
        )
        t_spec = float(arrays[f"specialization_time_{key}"])
        axes[1].plot([t_spec, t_spec], arrays[f"clocks_at_spec_{key}"], "o", color=color)
    axes[0].set(xlabel="time t", ylabel="mobility", title="reaction and transport mobility")
    axes[1].set(xlabel="time t", ylabel="int_0^t mu ds", title="reaction and transport clocks")
    names.append(save(fig, outdir, "clock_mobilities", arrays, legends=axes))
    return names


def dimension_scaling(arrays, config, outdir):
    import matplotlib.pyplot as plt

    dims = arrays["dims"]
    large = dims >= float(arrays["large_dim"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    series = (
        ("w-heavy", arrays["time_w_heavy"], arrays["fit_w_heavy"], "C0", axes[0]),
        ("a-heavy", arrays["time_a_heavy"], arrays["fit_a_heavy"], "C1", axes[0]),
        ("ratio w/a", arrays["ratio"], arrays["fit_ratio"], "C2", axes[1]),
    )
    for label, y, fit, color, ax in series:
        slope, icpt, lo, hi = fit
        ax.loglog(
            dims, y, "o", color=color, label=f"{label}: slope {slope:.3f} [{lo:.3f}, {hi:.3f}]"
        )
        xs = dims[large]
        if xs.size:
            ax.loglog(xs, np.exp(icpt) * xs**slope, "-", color=color, alpha=0.7)
    mid = np.sqrt(dims[1:] * dims[:-1])
    for v, x, yv in zip(
        arrays["local_slope_ratio"], mid, np.sqrt(arrays["ratio"][1:] * arrays["ratio"][:-1])
    ):
        axes[1].annotate(
            f"{v:.2f}",
            (x, yv),
            fontsize=6,
            color="C2",
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
        )
    axes[0].set(
        xlabel="input dimension D",
        ylabel="specialization time T",
        title="specialization time by gauge",
    )
    axes[1].set(
        xlabel="input dimension D",
        ylabel="T(w-heavy) / T(a-heavy)",
        title="ratio of specialization times (theory: D^2)",
    )
    return [save(fig, outdir, "dimension_scaling", arrays, legends=axes)]


def dissipation(arrays, config, outdir):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8))
    for key, label, color in gt.GAUGE_STYLES:
        t = arrays[f"t_{key}"][1:]
        axes[0].loglog(
            t,
            np.maximum(arrays[f"reaction_{key}"][1:], 1e-30),
            "-",
            color=color,
            label=f"reaction, {label}",
        )
        axes[0].loglog(
            t,
            np.maximum(arrays[f"transport_{key}"][1:], 1e-30),
            ":",
            color=color,
            label=f"transport, {label}",
        )
        for part in ("reaction", "transport"):
            axes[0].loglog(
                t[::10],
                np.maximum(arrays[f"{part}_fd_{key}"][::10], 1e-30),
                "x",
                color=color,
                ms=3,
                alpha=0.6,
            )
        loss = arrays[f"loss_{key}"]
        axes[1].semilogx(t, loss[1:], "-", color=color, label=f"loss, {label}")
        axes[1].semilogx(
            t,
            loss[0] - arrays[f"cumulative_reaction_{key}"][1:],
            "--",
            color=color,
            alpha=0.7,
            label=f"L(0) - int reaction, {label}",
        )
        axes[1].semilogx(
            t,
            loss[0]
            - arrays[f"cumulative_reaction_{key}"][1:]
            - arrays[f"cumulative_transport_{key}"][1:],
            ":",
            color="k",
            lw=1,
        )
    axes[0].set(
        xlabel="time t",
        ylabel="dissipation rate",
        title="reaction and transport dissipation",
        ylim=(1e-14, None),
    )
    axes[1].set(
        xlabel="time t",
        ylabel="loss",
        title="loss and L(0) - integrated dissipation (black dotted)",
    )
    return [save(fig, outdir, "dissipation", arrays, legends=axes)]


def finite_sample(arrays, config, outdir):
    import matplotlib.pyplot as plt

    ns, t = arrays["ns"], arrays["t"]
    fig, axes = plt.subplots(1, len(gp.OBSERVABLES), figsize=(4 * len(gp.OBSERVABLES), 3.6))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(ns)))
    for ax, k in zip(axes, gp.OBSERVABLES):
        for i, n in enumerate(ns):
            lo, med, hi = arrays[f"band_{k}_n{i}"]  # stats.band: (low, median, high)
            ax.plot(t[1:], med[1:], color=colors[i], lw=1, label=f"n = {int(n)}")
            ax.fill_between(t[1:], lo[1:], hi[1:], color=colors[i], alpha=0.25, lw=0)
        ref, fl = arrays[f"gd_{k}"], arrays[f"flow_{k}"]
        ax.plot(
            t[1:], (ref if ref.ndim == 1 else ref[:, 0])[1:], "k", lw=1.2, label="population GD"
        )
        ax.plot(t[1:], (fl if fl.ndim == 1 else fl[:, 0])[1:], "k--", lw=1, label="population flow")
        ax.set(xscale="log", xlabel="t = eta * steps", title=k)
    for i in (0, 3, 4):
        axes[i].set_yscale("log")
    axes[0].legend(fontsize=6)
    names = [save(fig, outdir, "finite_sample_trajectories", arrays)]

    fig, ax = plt.subplots(figsize=(5, 3.8))
    for j, k in enumerate(gp.OBSERVABLES):
        dev = arrays[f"deviation_{k}"]
        med = np.median(dev, axis=1)
        lo, hi = np.quantile(dev, [0.1, 0.9], axis=1)
        ax.errorbar(
            ns,
            med,
            yerr=[med - lo, hi - med],
            fmt="o",
            color=f"C{j}",
            ms=4,
            label=f"{k}: p = {arrays[f'fit_{k}'][0]:.3f}",
        )
        slope, icpt = arrays[f"fit_{k}"][:2]
        ax.plot(ns, np.exp(icpt) * ns**slope, color=f"C{j}", lw=1)
    ax.plot(ns, med[0] * (ns / ns[0]) ** -0.5, "k:", lw=1, label="n^-1/2")
    ax.set(
        xscale="log", yscale="log", xlabel="samples n", ylabel="RMS deviation from population GD"
    )
    ax.legend(fontsize=7)
    names.append(save(fig, outdir, "finite_sample_deviation", arrays))
    return names


def gauge_in_training_ownership(arrays, config, outdir):
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
    return [save(fig, outdir, "gauge_in_training_ownership", arrays)]


def gauge_in_training_scaling(arrays, config, outdir):
    import matplotlib.pyplot as plt

    dims = arrays["dims"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, (g, key) in enumerate((("w-heavy", "w"), ("a-heavy", "a"))):
        m = arrays[f"median_{key}"]
        ci = np.array([arrays[f"spec_ci_{g}_D{int(D)}"] for D in dims])
        axes[0].errorbar(
            dims,
            m,
            yerr=[m - ci[:, 0], ci[:, 1] - m],
            fmt="o",
            color=f"C{i}",
            label=f"trained, {g}",
        )
        axes[0].plot(dims, arrays[f"theory_{key}"], color=f"C{i}", lw=1, label=f"flow, {g}")
    axes[0].set(xscale="log", yscale="log", xlabel="D", ylabel="specialization time")
    axes[0].legend(fontsize=7)
    r, ci = arrays["ratio"], arrays["ratio_ci"]
    axes[1].errorbar(
        dims,
        r,
        yerr=[r - ci[:, 0], ci[:, 1] - r],
        fmt="o",
        label=f"trained, p = {arrays['fit'][0]:.2f}",
    )
    axes[1].plot(
        dims, arrays["ratio_theory"], "k-", lw=1, label=f"flow, p = {arrays['fit_theory'][0]:.2f}"
    )
    axes[1].set(xscale="log", yscale="log", xlabel="D", ylabel="t_spec(w-heavy) / t_spec(a-heavy)")
    axes[1].legend(fontsize=7)
    names = [save(fig, outdir, "gauge_in_training_scaling", arrays)]

    return names


def gauge_on_networks(arrays, config, outdir):
    out = []
    if arrays["runs"].size:
        out += [_networks_owner(arrays, outdir), _networks_drift(arrays, outdir)]
    if arrays["slope_models"].size:
        out.append(_networks_slope(arrays, outdir))
    return out


def _networks_owner(arrays, outdir):
    import matplotlib.pyplot as plt

    runs = [str(o) for o in arrays["runs"]]
    fig, ax = plt.subplots(figsize=(max(3.6, 0.8 * len(runs)), 3.0))
    for i, run in enumerate(runs):
        p, lo, hi = arrays[f"owner_rate_{run}"]
        ax.errorbar([i], [p], yerr=[[p - lo], [hi - p]], fmt="o", color=f"C{i % 3}", capsize=4)
    ax.axhline(0.5, color="0.5", ls="--", lw=0.8)
    ax.set(
        xticks=range(len(runs)),
        xticklabels=[r.replace("_", "\n") for r in runs],
        ylim=(0, 1.05),
        ylabel="a-heavy copy owns (share of seeds)",
    )
    return save(fig, outdir, "gauge_on_networks_owner", arrays)


def _networks_drift(arrays, outdir):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.0))
    for i, run in enumerate(str(o) for o in arrays["runs"]):
        step = arrays[f"step_{run}"]
        d0 = np.abs(arrays[f"delta0_{run}"][0])
        ls = "-" if run.startswith("mlp") else ":"
        for c, ax in enumerate(axes):
            ax.plot(
                step,
                arrays[f"change_{run}"][0, :, c] / d0[c],
                color=f"C{i}",
                ls=ls,
                label=run.replace("_", " "),
            )
            ax.plot(
                step,
                arrays[f"predicted_{run}"][0, :, c] / d0[c],
                color=f"C{i}",
                ls="none",
                marker="x",
                markersize=3,
                markevery=max(1, step.size // 12),
            )
    for ax, copy in zip(axes, ("a-heavy", "w-heavy")):
        ax.set(xlabel="step", title=copy)
        ax.set_yscale("symlog", linthresh=1e-6)
    axes[0].set_ylabel("(delta(t) - delta(0)) / |delta(0)|")
    return save(fig, outdir, "gauge_on_networks_drift", arrays, legends=(axes[0],))


def _networks_slope(arrays, outdir):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.8, 3.0))
    for i, model in enumerate(str(m) for m in arrays["slope_models"]):
        eta = arrays[f"slope_eta_{model}"]
        for s, drift in enumerate(arrays[f"slope_drift_{model}"]):
            ax.loglog(
                eta, drift, color=f"C{i}", lw=0.8, marker=".", label=model if s == 0 else None
            )
        ref = arrays[f"slope_drift_{model}"][:, 0].mean()
        ax.loglog(eta, ref * eta / eta[0], color="0.5", ls="--", lw=0.8)
    ax.set(xlabel="step size eta", ylabel="drift per unit time")
    return save(fig, outdir, "gauge_on_networks_slope", arrays, legends=(ax,))


def gd_selection(arrays, config, outdir):
    import matplotlib.pyplot as plt

    names = []
    fig, ax = plt.subplots()
    t = arrays["flow_t"][1:]
    for i, ls in ((0, "-"), (1, "--")):
        ax.loglog(
            t,
            np.maximum(np.abs(arrays["flow_rho"][1:, i]), 1e-16),
            ls,
            color="k",
            label=f"flow, copy {i} ({'a' if i == 0 else 'w'}-heavy)",
        )
    for c, eta in enumerate(arrays["selection_etas"]):
        ts = arrays[f"selection_t_{eta:g}"][1:]
        rho = np.abs(arrays[f"selection_rho_{eta:g}"][1:])
        for i, ls in ((0, "-"), (1, "--")):
            ax.loglog(
                ts,
                np.maximum(rho[:, i], 1e-16),
                ls,
                color=f"C{c}",
                alpha=0.8,
                label=f"GD eta={eta:g}" if i == 0 else None,
            )
    ax.axvline(float(arrays["t_end"]), color="k", ls=":", lw=1)
    ax.set(
        xlabel="time t",
        ylabel="|rho_i|",
        title="selection under gradient descent",
        ylim=(1e-10, 10),
    )
    ax.legend(fontsize=7)
    names.append(save(fig, outdir, "gd_selection", arrays))
    return names


def gradient_descent(arrays, config, outdir):
    import matplotlib.pyplot as plt

    etas, rel = arrays["etas"], arrays["relative_error"]
    slope, icpt, lo, hi = arrays["fit"]
    fig, ax = plt.subplots()
    ax.loglog(etas, rel, "o", label="|T_gd - T_flow| / T_flow")
    ax.loglog(
        etas, np.exp(icpt) * etas**slope, "-", label=f"fit: slope {slope:.3f} [{lo:.3f}, {hi:.3f}]"
    )
    ax.set(
        xlabel="step size eta",
        ylabel="relative error of specialization time",
        title="gradient descent against the flow",
    )
    ax.legend()
    names = [save(fig, outdir, "gd_error", arrays)]

    return names


def online_sgd(arrays, config, outdir):
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
    names = [save(fig, outdir, "online_sgd_erf", arrays)]

    fig, ax = plt.subplots(figsize=(4.5, 3.6))
    everything = []
    for i, (kind, marker, what) in enumerate(
        (("erf", "o", "weight space"), ("chain", "s", "chain"))
    ):
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
    names.append(save(fig, outdir, "online_sgd_spread", arrays))

    fig, ax = plt.subplots(figsize=(5, 3.6))
    ft = arrays["relu_flow_time"][1:]
    lo, med, hi = arrays["relu_band"][:, 1:]
    ax.plot(ft, med, "C0", lw=1, label="online SGD (median)")
    ax.fill_between(ft, lo, hi, color="C0", alpha=0.3, lw=0)
    ax.plot(ft, arrays["relu_flow"][1:], "k", lw=1, label="population flow")
    ax.set(xscale="log", yscale="log", xlabel="flow time eta t", ylabel="population loss")
    ax.legend(fontsize=7)
    names.append(save(fig, outdir, "online_sgd_relu", arrays))
    return names


def ownership(arrays, config, outdir):
    import matplotlib.pyplot as plt

    Ks = [int(k) for k in arrays["Ks"]]
    tol, t_check = float(arrays["prune_tol"]), float(arrays["t_check"])
    ncol = min(len(Ks), 4)
    nrow = -(-len(Ks) // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(2.6 * ncol + 1, 2.8 * nrow + 0.5), squeeze=False, sharey=True
    )
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
    for ax in axes.ravel()[len(Ks) :]:
        ax.set_visible(False)
    axes[0, 0].plot([], [], color="C0", label="favourable (a-heavy) copy")
    axes[0, 0].plot([], [], color="0.6", label="other copies (w-heavy)")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    names = [save(fig, outdir, "ownership_rho", arrays)]

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for K in Ks:
        P = arrays[f"pruning_time_K{K}"]
        for j in range(K):
            others = np.delete(P[j], j)
            axes[0].plot(
                K + 0.6 * (j / max(K - 1, 1) - 0.5) + 0 * others, others, ".", color="C0", ms=4
            )
        axes[1].semilogy(
            np.full(K, K), np.maximum(arrays[f"remaining_K{K}"], 1e-18), "o", color="C2"
        )
    axes[0].axhline(t_check, color="k", ls=":", lw=1, label="stated time")
    axes[0].set(
        xlabel="K (spread: index of the favourable copy)",
        ylabel="pruning time",
        title="pruning times of the other copies",
        yscale="log",
    )
    axes[0].legend(fontsize=7)
    axes[1].axhline(float(arrays["function_tol"]), color="C1", ls="--", lw=1)
    axes[1].set(
        xlabel="K",
        ylabel="||f_others|| / ||f*||",
        title=f"remaining contribution at t = {t_check:g}",
    )
    names.append(save(fig, outdir, "ownership_summary", arrays))
    return names


def ownership_patterns(arrays, config, outdir):
    import matplotlib.pyplot as plt

    colors = ("C2", "C1", "C0", "C3")
    scales = arrays["scales"]
    gap, s, out = (arrays[f"pattern_{k}"] for k in ("gap", "scale", "outcome"))
    unpruned = arrays["pattern_unpruned"].astype(bool)
    jitter = 0.04 * np.sin(np.arange(gap.size) * 2.399)
    ypos = np.searchsorted(scales, s) + 3 * jitter
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for code, name in enumerate(gp.OUTCOMES):
        m = out == code
        ax.scatter(gap[m] + jitter[m], ypos[m], s=14, color=colors[code], label=name)
    m = unpruned & (out == 0)
    ax.scatter(
        gap[m] + jitter[m],
        ypos[m],
        s=40,
        facecolors="none",
        edgecolors="k",
        lw=0.6,
        label="selected, a non-owner unpruned",
    )
    ce = arrays
    ax.scatter(
        ce["counterexample_gap"],
        np.searchsorted(scales, ce["counterexample_scale"]),
        marker="*",
        s=160,
        c=[colors[int(o)] for o in ce["counterexample_outcome"]],
        edgecolors="k",
        label="issue's patterns",
    )
    for i, b in enumerate(arrays["boundary_gap"]):
        if np.isfinite(b):
            ax.plot([b, b], [i - 0.3, i + 0.3], "k-", lw=2)
    inside = np.flatnonzero(scales >= float(arrays["scale_claim"]))
    if inside.size:
        ax.add_patch(
            plt.Rectangle(
                (float(arrays["gap_claim"]) - 0.05, inside[0] - 0.4),
                2.1 - float(arrays["gap_claim"]),
                inside.size - 0.2,
                fill=False,
                ec="k",
                ls="--",
            )
        )
    ax.set_yticks(range(scales.size), [f"{v:g}" for v in scales])
    ax.set(
        xlabel="gap g(1) - g(2) (transport mobility ratio ~ D^gap)",
        ylabel="scale s",
        title="outcome of random duplicate-gauge patterns",
        xlim=(-0.15, 2.15),
    )
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    names = [save(fig, outdir, "ownership_patterns_map", arrays)]

    fig, axes = plt.subplots(1, scales.size, figsize=(3.2 * scales.size, 3.2), squeeze=False)
    rem = arrays["pattern_remaining"]
    for ax, v in zip(axes[0], scales):
        m = s == v
        ax.semilogy(gap[m] + jitter[m], np.maximum(rem[m], 1e-16), ".", color="C0")
        ax.axhline(float(config["function_tol"]), color="C1", ls="--", lw=1)
        ax.set(title=f"s = {v:g}", xlabel="gap", ylim=(1e-16, 2))
    axes[0, 0].set_ylabel("remaining function / ||f*||")
    names.append(save(fig, outdir, "ownership_patterns_remaining", arrays))
    return names


def perturbations(arrays, config, outdir):
    import matplotlib.pyplot as plt

    lam, eps = arrays["strengths"], arrays["epsilons"]
    win, always = arrays["win_fraction"], arrays["win_always"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xi, yi = np.arange(eps.size), np.arange(lam.size)
    mesh = ax.pcolormesh(xi, yi, win, vmin=0, vmax=1, cmap="viridis", shading="nearest")
    for i in yi:
        for j in xi:
            if always[i, j]:
                ax.add_patch(
                    plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="white", lw=1.5)
                )
            ax.text(
                j,
                i,
                f"{win[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="k" if win[i, j] > 0.6 else "w",
            )
    inside_l = np.flatnonzero(lam >= float(arrays["claim_strength"]))
    inside_e = np.flatnonzero(eps <= float(arrays["claim_epsilon"]))
    if inside_l.size and inside_e.size:
        ax.add_patch(
            plt.Rectangle(
                (inside_e[0] - 0.5, inside_l[0] - 0.5),
                inside_e.size,
                inside_l.size,
                fill=False,
                ec="C1",
                lw=2,
                ls="--",
            )
        )
    ax.set_xticks(xi, [f"{e:g}" for e in eps])
    ax.set_yticks(yi, [f"{v:g}" for v in lam])
    ax.grid(False)
    ax.set(
        xlabel="perturbation size epsilon",
        ylabel="gauge strength lambda",
        title="P(favourable copy owns the feature)",
    )
    fig.colorbar(mesh, ax=ax, label="win fraction")
    names = [save(fig, outdir, "perturbations_map", arrays)]

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    edge = arrays["win_edge_epsilon"]
    won = edge > 0
    axes[0].loglog(lam[won], edge[won], "o-", label="largest epsilon won every time")
    floor = eps.min() / 3
    axes[0].plot(
        lam[~won],
        np.full((~won).sum(), floor),
        "x",
        color="C3",
        ms=8,
        label="not won every time even at the smallest epsilon",
    )
    axes[0].set(
        xlabel="gauge strength lambda",
        ylabel="epsilon",
        title="favourable copy wins every sample up to",
        ylim=(floor / 2, None),
    )
    axes[0].legend(fontsize=7)
    for i, v in enumerate(lam):
        axes[1].semilogx(eps, arrays["loser_pruned_fraction"][i], "o-", label=f"lambda={v:g}")
    axes[1].set(
        xlabel="perturbation size epsilon", ylabel="fraction", title="other copy pruned by the end"
    )
    axes[1].legend(fontsize=7)
    names.append(save(fig, outdir, "perturbations_edge", arrays))
    return names


def landscape(arrays, config, outdir):
    """The ``landscape`` figures: the catalogues, the escape slopes and one saddle in three
    gauges."""
    return [
        _landscape_catalogue(arrays, outdir),
        _landscape_escape(arrays, outdir),
        _landscape_gauge(arrays, outdir),
    ]


def _landscape_catalogue(arrays: dict, outdir):
    """One panel per catalogue: loss of each entry (symlog), colour by index, and the share
    of starts whose flow ended there with its interval."""
    import matplotlib.pyplot as plt

    keys = sorted(k for k in arrays if k.startswith("catalogue_"))
    fig, axes = plt.subplots(
        2,
        len(keys),
        figsize=(3.2 * len(keys), 5.2),
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": [1.3, 1]},
    )
    from matplotlib.ticker import MaxNLocator

    for j, k in enumerate(keys):
        rows = arrays[k]
        x = np.arange(rows.shape[0])
        ax, bx = axes[0, j], axes[1, j]
        colors = [f"C{min(int(idx), 9)}" for idx in rows[:, 1]]
        ax.scatter(x, np.maximum(rows[:, 0], 0.0), c=colors, s=28, edgecolor="k", lw=0.4, zorder=3)
        for xi, (loss, idx) in zip(x, rows[:, :2]):
            ax.annotate(
                f"{int(idx)}",
                (xi, max(loss, 0.0)),
                textcoords="offset points",
                xytext=(4, 3),
                fontsize=6,
            )
        ax.set_yscale("symlog", linthresh=1e-4)
        act, K = k.removeprefix("catalogue_").split("_K")
        ax.set_title(f"{act}, K = M = {K}", fontsize=8)
        ax.set_ylabel("loss (label: index)" if j == 0 else "")
        share, low, high = rows[:, 2], rows[:, 3], rows[:, 4]
        bx.bar(x, share, color=colors, edgecolor="k", lw=0.4)
        bx.errorbar(
            x,
            share,
            yerr=[share - low, high - share],
            fmt="none",
            ecolor="k",
            elinewidth=0.8,
            capsize=2,
        )
        bx.set(ylim=(0, 1), xlabel="entry (by loss)")
        bx.xaxis.set_major_locator(MaxNLocator(integer=True))
        bx.set_ylabel("share of flow ends" if j == 0 else "")
    return save(fig, outdir, "landscape_catalogue", arrays)


def _landscape_escape(arrays: dict, outdir):
    """Left: ``lambda_+ T`` against ``ln(1/eps)`` for every saddle and sign (ReLU orange, erf
    blue), shifted to start at zero, with the slope-1 line. Right: each reading's fitted slope
    of ``lambda_+ T`` with its 95% interval, against the band ``[0.95, 1.05]``."""
    import matplotlib.pyplot as plt

    labels = [str(s) for s in np.atleast_1d(arrays["escape_labels"])]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.5, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    for k, label in enumerate(labels):
        x, plus, minus = arrays[f"escape_{k}"]
        color = "C1" if label.startswith("relu") else "C0"
        ax.plot(x, plus - plus[0], "o", color=color, ms=3, alpha=0.7)
        ax.plot(x, minus - minus[0], "x", color=color, ms=3, alpha=0.7)
    if labels:
        x = arrays["escape_0"][0]
        ax.plot(x, x - x[0], "k-", lw=0.8, label="slope 1")
    ax.plot([], [], "o", color="C1", label="ReLU saddles")
    ax.plot([], [], "o", color="C0", label="erf saddles")
    ax.set(xlabel="ln(1/eps)", ylabel="lambda_+ T (from the first eps)")
    ax.legend(fontsize=7)
    fits = arrays["escape_slopes"]
    y = np.arange(fits.shape[0])
    bx.axvspan(0.95, 1.05, color="0.9", zorder=0)
    bx.errorbar(
        fits[:, 0],
        y,
        xerr=[fits[:, 0] - fits[:, 1], fits[:, 2] - fits[:, 0]],
        fmt="o",
        ms=3,
        color="k",
        elinewidth=0.8,
    )
    bx.axvline(1.0, color="k", lw=0.5)
    bx.set(
        xlabel="fitted slope of lambda_+ T on ln(1/eps)",
        ylabel="reading (saddle, sign)",
        xlim=(0.94, 1.06),
    )
    return save(fig, outdir, "landscape_escape", arrays)


def _landscape_gauge(arrays: dict, outdir):
    """One saddle in three gauges: ``lambda_+``, the time spent from one initial function, and
    their product."""
    import matplotlib.pyplot as plt

    names = ["a-heavy", "balanced", "w-heavy"]
    lam, T, _ = arrays["gauge"].T
    fig, axes = plt.subplots(1, 3, figsize=(8, 2.8))
    for ax, values, label in zip(
        axes, (lam, T, lam * T), ("lambda_+", "time spent T", "lambda_+ T")
    ):
        ax.bar(names, values, color=["C1", "C7", "C0"])
        ax.set_title(label, fontsize=8)
        if label != "lambda_+ T":
            ax.set_yscale("log")
        ax.tick_params(axis="x", labelsize=7)
    return save(fig, outdir, "landscape_gauge", arrays)

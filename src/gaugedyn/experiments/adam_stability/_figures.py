"""The figures of ``spike_boundary`` and ``adam_edge``, drawn from their stored arrays only."""

from __future__ import annotations

import numpy as np

from ._protocol import WINDOWS
from ._spike_analysis import _is_1d


def spike_maps(arrays, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    names = [str(s) for s in arrays["systems"]]
    fig, axes = plt.subplots(2, len(names), figsize=(3.2 * len(names), 6.2), squeeze=False)
    level = float(arrays["fitted_level"])
    cmap = plt.get_cmap("magma").with_extremes(bad="0.75")
    for col, name in enumerate(names):
        a, c = arrays[f"{name}__a"], arrays[f"{name}__c"]
        pairs = (
            (("orbit", "settled"), ("generic", "transient"))
            if _is_1d(name)
            else (("init", "settled"), ("init", "transient"))
        )
        for row, (start, window) in enumerate(pairs):
            ax = axes[row, col]
            P = np.ma.masked_invalid(arrays[f"{name}_{start}_{window}__prob"])
            ax.pcolormesh(c, a, P, shading="nearest", cmap=cmap, vmin=0, vmax=1)
            styles = {
                ("orbit", "settled"): "c^-",
                ("orbit", "transient"): "gv:",
                ("generic", "settled"): "bs--",
                ("generic", "transient"): "yo:",
                ("init", "settled"): "c^-",
                ("init", "transient"): "yo:",
            }
            for (s, w), style in styles.items():
                if f"{name}_{s}_{w}__boundary" not in arrays:
                    continue
                ax.plot(
                    arrays[f"{name}_{s}_{w}__boundary"],
                    a,
                    style,
                    ms=3,
                    lw=1,
                    label=f"edge: {s}, {w}",
                )
            key = f"{name}__theory_turn_growth"
            levels = sorted({1.0, level} if np.isfinite(level) and name == "n2" else {1.0})
            if key in arrays:
                ax.contour(
                    arrays["theory_c"],
                    arrays["theory_a"],
                    arrays[key],
                    levels=levels,
                    colors="w",
                    linestyles=["--", ":"][: len(levels)],
                )
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="1 - beta2",
                ylabel="1 - beta1",
                title=f"{name}: {start}, {window}",
                xlim=(c.min() / 1.5, c.max() * 1.5),
                ylim=(a.min() / 1.5, a.max() * 1.5),
            )
            ax.grid(False)
    axes[0, 0].legend(fontsize=5)
    caption = (
        "Spike probability (black 0, white 1; grey: not simulated, below the row's first "
        "spiky cell, or no judged seed) over (1 - beta2, 1 - beta1) for each n; top: orbit start, "
        "settled window (the primary reading); bottom: generic start, transient-inclusive "
        "window; for a training task (from its initialisation) top settled, bottom "
        "transient-inclusive. Lines: the fitted upper edge under the four start x window readings. "
        "White: the 1-D theory's level curves of 2 pi delta/omega (growth per slow turn of "
        f"the oscillating state, eps = 0): dashed at level 1, dotted at {level:.3g}, the "
        "level measured on the simulated settled orbit-start edge of the beta1 >= 0.9 rows."
    )
    return save_figure(fig, outdir, "spike_boundary_maps", caption)


def local_slopes(arrays, outdir):
    """Per system, the edges with their intervals against ``1 - beta1`` (top) and the local
    slopes between consecutive rows with their ranges (bottom), every start x window."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from ...plotting import save_figure

    names = [str(s) for s in arrays["systems"]]
    fig, axes = plt.subplots(2, len(names), figsize=(3.2 * len(names), 5.6), squeeze=False)
    for col, name in enumerate(names):
        a = np.asarray(arrays[f"{name}__a"], float)
        order = np.argsort(a)
        mid = np.sqrt(a[order][1:] * a[order][:-1])
        starts = ("orbit", "generic") if _is_1d(name) else ("init",)
        drawn = False
        for k, (start, window) in enumerate((s, w) for s in starts for w in WINDOWS):
            key = f"{name}_{start}_{window}"
            if f"{key}__local_slope" not in arrays:
                continue
            e = np.asarray(arrays[f"{key}__boundary"], float)
            drawn = drawn or bool(np.isfinite(e).any())
            lo = np.asarray(arrays[f"{key}__boundary_low"], float)
            hi = np.asarray(arrays[f"{key}__boundary_high"], float)
            shift = 1.0 + 0.02 * k
            err = np.stack([np.nan_to_num(e - lo, nan=0.0), np.nan_to_num(hi - e, nan=0.0)])
            axes[0, col].errorbar(
                a * shift, e, yerr=err, fmt="o", ms=3, lw=0.8, label=f"{start}, {window}"
            )
            ls = np.asarray(arrays[f"{key}__local_slope"], float)
            lerr = np.stack(
                [
                    np.nan_to_num(ls[:, 0] - ls[:, 1], nan=0.0),
                    np.nan_to_num(ls[:, 2] - ls[:, 0], nan=0.0),
                ]
            )
            axes[1, col].errorbar(mid * shift, ls[:, 0], yerr=np.abs(lerr), fmt="o-", ms=3, lw=0.8)
        axes[0, col].set(xscale="log", xlabel="1 - beta1", ylabel="edge 1 - beta2")
        if drawn:
            axes[0, col].set_yscale("log")
        else:
            axes[0, col].text(0.5, 0.5, "no edge", transform=axes[0, col].transAxes, ha="center")
        axes[0, col].set_title(name)
        axes[1, col].axhline(3.0 if name == "n2" else 1.0, color="r", lw=1)
        axes[1, col].axvline(0.1, color="0.5", lw=0.8, ls=":")
        axes[1, col].set(xscale="log", xlabel="1 - beta1", ylabel="local slope", ylim=(-2, 6))
        for ax in axes[:, col]:
            ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0, 0].legend(fontsize=5)
    caption = (
        "Top: each row's edge (the upper edge of the spiky region, bisected on the 1-D maps) "
        "with its interval from the seeds (bars; an open side drawn as none), per start and "
        "window. Bottom: the local slope d log c_b / d log(1 - beta1) between consecutive rows "
        "with its range over the two edges' intervals; red: the claimed slope (3 for n = 2, "
        "1 otherwise); dotted: 1 - beta1 = 0.1, the primary rows below it."
    )
    return save_figure(fig, outdir, "spike_boundary_local_slopes", caption)


def edge_curvature(arrays, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    keys = [str(k) for k in arrays["run_keys"] if str(k).endswith("__s0")]
    fig, axes = plt.subplots(3, 1, figsize=(8, 9))
    for k in keys:
        lr = float(k.split("__lr")[1].split("__")[0])
        thr = float(arrays[f"{k}__threshold"])
        lz = arrays[f"{k}__lanczos_step"]
        (line,) = axes[0].plot(
            lz, lr * arrays[f"{k}__sharpness"] / thr, ".-", ms=3, lw=0.8, label=k.replace("__", " ")
        )
        for fz in np.atleast_2d(arrays[f"{k}__frozen_sharpness"]):
            axes[0].plot(lz, lr * fz / thr, "x--", ms=3, lw=0.8, color=line.get_color())
        axes[1].semilogy(arrays[f"{k}__loss"], lw=0.4, color=line.get_color())
        axes[1].semilogy(arrays[f"{k}__ema_loss"], lw=0.8, ls="--", color=line.get_color())
    axes[0].axhline(1.0, color="r", lw=1)
    axes[0].set(xlabel="step", ylabel="lr S / thr (x: v frozen before the edge)", yscale="log")
    axes[0].legend(fontsize=5, ncol=2)
    axes[1].set(xlabel="step", ylabel="loss (dashed: averaged iterate)")
    for b1 in arrays["quadratic_beta1s"]:
        key = f"quadratic__b{float(b1):g}"
        (line,) = axes[2].semilogy(arrays[f"{key}__S"], lw=0.6, label=f"S, beta1 {float(b1):g}")
        axes[2].semilogy(
            arrays[f"{key}__kappa"],
            lw=0.6,
            ls=":",
            color=line.get_color(),
            label=f"kappa_g, beta1 {float(b1):g}",
        )
    axes[2].axhline(1.0, color="r", lw=1)
    axes[2].set(xlabel="step", ylabel="lr x curvature / thr (diagonal quadratic)")
    axes[2].legend(fontsize=6)
    caption = (
        "Top: preconditioned sharpness lr S over the threshold 2(1+beta1)/(1-beta1) of the "
        "adaptive runs (dots, seed 0 of each cell) and of their copies with v frozen before "
        "the edge, at each declared share of the threshold (crosses). Middle: losses of the iterate and of its exponential average "
        "(decay 0.9, dashed). Bottom: the diagonal quadratic, exact lr S / thr (solid) and "
        "active curvature lr kappa_g / thr (dotted)."
    )
    return save_figure(fig, outdir, "adam_edge_curvature", caption)

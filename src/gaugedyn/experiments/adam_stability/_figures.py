"""The figures of ``spike_boundary`` and ``adam_edge``, drawn from their stored arrays only."""

from __future__ import annotations

import numpy as np

from ._protocol import WINDOWS
from ._spike_analysis import _is_1d

SPIKE_CMAP = "magma"
"""The colour map of the spike probability (0 to 1) on the maps."""
NO_PROBABILITY_COLOUR = "0.75"
"""The colour of a map cell with no probability (not simulated, or no judged seed)."""
EDGE_STYLES = {
    ("orbit", "settled"): "c^-",
    ("orbit", "transient"): "gv:",
    ("generic", "settled"): "bs--",
    ("generic", "transient"): "yo:",
    ("init", "settled"): "c^-",
    ("init", "transient"): "yo:",
}
"""The line of each start x window reading's fitted edge."""


ZOOM = 0.25
"""A map's 1 - beta2 axis starts at this multiple of its smallest edge or bisection cell,
where every grid cell further left is 0 or has no probability (nothing is cut but cells
that show no spike)."""


def _zoom_left(arrays, system, start, window) -> float:
    """The left end of a map's 1 - beta2 axis: the grid's own end, or `ZOOM` times the
    smallest edge or bisection cell when every grid cell left of that shows no spike."""
    c = np.asarray(arrays[f"{system}__c"], float)
    full = float(c.min()) / 1.5
    near = [
        np.asarray(arrays[k], float)
        for k in (
            *(f"{system}_{s}_{w}__boundary" for s, w in EDGE_STYLES),
            f"{system}_{start}__bisect_c",
        )
        if k in arrays
    ]
    finite = np.concatenate([x[np.isfinite(x)].ravel() for x in near]) if near else np.array([])
    if finite.size == 0:
        return full
    left = ZOOM * float(finite.min())
    P = np.asarray(arrays[f"{system}_{start}_{window}__prob"], float)
    cut = P[:, c < left]
    if left <= full or np.any(np.nan_to_num(cut, nan=0.0) > 0):
        return full
    return left


def spike_maps(arrays, outdir):
    """The spike-probability maps, split so each edge reads at page width: the 1-D maps in the
    primary reading (orbit start, settled window), the 1-D maps in the generic start's
    transient-inclusive window (2 x 2 panels each), and the training tasks in both windows (a
    column per task, the settled window's row above the transient-inclusive one's); one colour
    bar, the bisection cells drawn over the grid."""
    names = [str(s) for s in arrays["systems"]]
    one_d = [n for n in names if _is_1d(n)]
    tasks = [n for n in names if not _is_1d(n)]
    level = float(arrays["fitted_level"])
    out = []
    if one_d:
        for start, window, name, reading in (
            (
                "orbit",
                "settled",
                "spike_boundary_maps",
                "orbit start, settled window (the primary reading)",
            ),
            (
                "generic",
                "transient",
                "spike_boundary_maps_transient",
                "generic start, transient-inclusive window",
            ),
        ):
            panels = [(n, start, window, n) for n in one_d]
            out.append(_map_figure(arrays, panels, outdir, name, reading, level))
    if tasks:
        panels = [(n, "init", w, f"{n}: {w}") for w in ("settled", "transient") for n in tasks]
        out.append(
            _map_figure(
                arrays,
                panels,
                outdir,
                "spike_boundary_task_maps",
                "training tasks from their initialisation, settled (top) and transient-inclusive "
                "(bottom) window",
                level,
                ncol=len(tasks),
            )
        )
    return out


def _map_figure(arrays, panels, outdir, name, reading, level, ncol=None):
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize

    from ...plotting import save_figure

    cmap = plt.get_cmap(SPIKE_CMAP).with_extremes(bad=NO_PROBABILITY_COLOUR)
    norm = Normalize(0.0, 1.0)  # one norm for every panel: the one colour bar shows them all
    if ncol is None:
        ncol = 2 if len(panels) > 1 else 1
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.7 * nrow + 0.8), squeeze=False)
    mesh, zoomed, handles = None, False, {}
    for ax, (system, start, window, title) in zip(axes.flat, panels):
        mesh, left = _map_panel(ax, arrays, system, start, window, level, cmap, norm, handles)
        zoomed = zoomed or left > float(np.min(arrays[f"{system}__c"])) / 1.5
        ax.set_title(title)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    fig.colorbar(mesh, ax=axes, label="spike probability", shrink=0.9)
    labels = [h.get_label() for h in handles.values()]
    fig.legend(list(handles.values()), labels, loc="outside lower center", ncol=3, fontsize=8)
    fig.suptitle(f"Spike probability: {reading}")
    theory = any(f"{s}__theory_turn_growth" in arrays for s, *_ in panels)
    caption = _map_caption(reading, cmap, level, zoomed, "bisection cells" in handles, theory)
    return save_figure(fig, outdir, name, caption)


def _map_panel(ax, arrays, system, start, window, level, cmap, norm, handles):
    """One map: the grid's probabilities, the bisection cells, the edges under every reading
    and (1-D) the theory's level curves; returns the mesh and the axis' left end."""
    a, c = arrays[f"{system}__a"], arrays[f"{system}__c"]
    P = np.ma.masked_invalid(arrays[f"{system}_{start}_{window}__prob"])
    mesh = ax.pcolormesh(c, a, P, shading="nearest", cmap=cmap, norm=norm)
    bc = arrays.get(f"{system}_{start}__bisect_c")
    bp = arrays.get(f"{system}_{start}_{window}__bisect_prob")
    if bc is not None and bp is not None:
        rows = np.broadcast_to(np.asarray(a, float)[:, None], np.shape(bc))
        keep = np.isfinite(bc) & np.isfinite(bp)
        if keep.any():
            handles["bisection cells"] = ax.scatter(
                bc[keep],
                rows[keep],
                c=bp[keep],
                cmap=cmap,
                norm=norm,
                s=22,
                marker="D",
                edgecolors="0.5",
                linewidths=0.5,
                label="bisection cells (colour: their probability)",
            )
    for (s, w), style in EDGE_STYLES.items():
        key = f"{system}_{s}_{w}__boundary"
        if key in arrays:
            (line,) = ax.plot(arrays[key], a, style, ms=4, lw=1.2, label=f"edge: {s}, {w}")
            handles.setdefault(line.get_label(), line)
    key = f"{system}__theory_turn_growth"
    levels = sorted({1.0, level} if np.isfinite(level) and system == "n2" else {1.0})
    if key in arrays:
        ax.contour(
            arrays["theory_c"],
            arrays["theory_a"],
            arrays[key],
            levels=levels,
            colors="w",
            linestyles=["--", ":"][: len(levels)],
        )
    left = _zoom_left(arrays, system, start, window)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="1 - beta2",
        ylabel="1 - beta1",
        xlim=(left, c.max() * 1.5),
        ylim=(a.min() / 1.5, a.max() * 1.5),
    )
    ax.grid(False)
    return mesh, left


def _map_caption(reading, cmap, level, zoomed, bisection, theory) -> str:
    """The caption of a map figure, its colours named from the colour map itself."""
    from ...plotting import colour_name

    caption = (
        f"Spike probability, {reading}, over (1 - beta2, 1 - beta1) on the {SPIKE_CMAP} colour "
        f"map: {colour_name(cmap(0.0))} at 0 through {colour_name(cmap(0.5))} at 0.5 to "
        f"{colour_name(cmap(1.0))} at 1 (colour bar); {colour_name(NO_PROBABILITY_COLOUR)}: no "
        "probability (not simulated, below the row's first spiky cell, or no judged seed). "
        "Rectangles: the scan's grid cells. "
    )
    if bisection:
        caption += "Diamonds: the bisection's cells near the edge, coloured on the same map. "
    caption += "Lines: the fitted upper edge under each start x window reading (legend). "
    if zoomed:
        caption += (
            f"Zoomed to the edge: a panel's 1 - beta2 axis starts at {ZOOM:g} times its "
            "smallest edge or bisection cell where every grid cell further left shows "
            "probability 0 or none. "
        )
    if theory:
        caption += (
            "White: the 1-D theory's level curves of 2 pi delta/omega (growth per slow turn of "
            "the oscillating state, eps = 0): dashed at level 1, dotted (n2) at "
            f"{level:.3g}, the level measured on the simulated settled orbit-start edge of the "
            "beta1 >= 0.9 rows."
        )
    return caption.strip()


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

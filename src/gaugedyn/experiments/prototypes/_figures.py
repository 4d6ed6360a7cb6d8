"""Figures of the ``prototypes`` experiment, drawn from the stored arrays alone."""

from __future__ import annotations

import numpy as np

from ...plotting import save_figure
from . import _measures as pm
from . import _model as model
from ._protocol import (
    BUDGETS,
    COMBINATIONS,
    DRIFT_MARGIN,
    EXPULSION_MARGIN,
    variant_index,
    variants,
)

COLORS = {
    "plain": "k",
    "cov": "tab:green",
    "sep": "tab:blue",
    "ov": "tab:red",
    "cov+sep": "tab:cyan",
    "cov+ov": "tab:olive",
    "sep+ov": "tab:purple",
    "cov+sep+ov": "tab:brown",
}


def _line(ax, x, ivs, label, color, style="-"):
    """A centre over seeds (mean or median) with its stored 95% interval ``ivs`` (rows: centre, low,
    high)."""
    ax.plot(x, ivs[:, 0], style, color=color, label=label, marker="o", ms=3)
    ax.fill_between(x, ivs[:, 1], ivs[:, 2], color=color, alpha=0.15, lw=0)


def _log_sizes(ax, sizes):
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{n:g}" for n in sizes])
    ax.minorticks_off()


def _plain_log_y(ax):
    """A log y axis with plain-text labels at a few decades and no minor ticks (the default
    minor ticks and mathtext labels were most of a figure's drawing time)."""
    from matplotlib import ticker

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(numticks=6))
    ax.yaxis.set_major_formatter(ticker.LogFormatter(labelOnlyBase=True))
    ax.yaxis.set_minor_locator(ticker.NullLocator())


def _legend(fig, ax, ncol=4):
    """One legend for the whole figure, below the panels, from ``ax``'s lines (every panel
    draws the same ones)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=7)


def _grid(config, rows, cols, title):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(rows), len(cols), figsize=(4.6 * len(cols), 3.4 * len(rows)), squeeze=False, sharex=True
    )
    fig.suptitle(title, fontsize=9)
    return fig, axes


def _panels(config):
    return [(cov, budget) for cov in config["coverages"] for budget in BUDGETS]


def _by_mask_figure(arrays, config, outdir, measure, name, ylabel, caption, *, medians, log):
    sizes = arrays["sizes"]
    inits, panels = config["inits"], _panels(config)
    fig, axes = _grid(config, inits, panels, f"{ylabel} against N")
    for r, init in enumerate(inits):
        for c, (cov, budget) in enumerate(panels):
            ax = axes[r, c]
            centre = "median" if medians else "mean"
            band = arrays[f"{centre}__{measure}__{budget}__{init}"]
            means = arrays[f"mean__{measure}__{budget}__{init}"]
            for mask in COMBINATIONS:
                label = model.combination_name(mask)
                j = variant_index(config, mask, cov)
                _line(ax, sizes, band[:, j], label, COLORS[label])
                if medians:
                    ax.plot(sizes, means[:, j, 0], "x", color=COLORS[label], ms=4)
            _log_sizes(ax, sizes)
            if log:
                _plain_log_y(ax)
            ax.set(xlabel="N", ylabel=ylabel, title=f"init {init}, coverage {cov}, {budget} budget")
    _legend(fig, axes[0, 0], ncol=8)
    return save_figure(fig, outdir, name, caption)


def error_figure(arrays, config, outdir):
    caption = (
        "Reconstruction error (min over one-to-one assignments of mean |x_j - p_sigma(j)|)"
        " against N for the eight loss combinations: lines are medians over seeds with "
        "their 95% distribution-free intervals, crosses the means (the error is "
        "heavy-tailed); rows: initialisation reading, columns: coverage reading and "
        "budget reading (fixed step budget, or trained until the prototypes settle)."
    )
    return _by_mask_figure(
        arrays,
        config,
        outdir,
        "reconstruction_error",
        "prototypes_error",
        "reconstruction error",
        caption,
        medians=True,
        log=True,
    )


def fit_figure(arrays, config, outdir):
    caption = (
        "Fit error mean_j (f(x_j) - y_j)^2 against N for the eight loss combinations: "
        "medians over seeds with 95% distribution-free intervals, crosses the means; "
        "panels as in the error figure."
    )
    return _by_mask_figure(
        arrays,
        config,
        outdir,
        "fit_error",
        "prototypes_fit",
        "fit error",
        caption,
        medians=True,
        log=True,
    )


def outside_figure(arrays, config, outdir):
    caption = (
        "Fraction of prototypes outside the data's hull against N for the eight loss "
        "combinations, means over seeds with 95% t intervals; panels as in the error "
        "figure."
    )
    return _by_mask_figure(
        arrays,
        config,
        outdir,
        "outside_fraction",
        "prototypes_outside",
        "outside fraction",
        caption,
        medians=False,
        log=False,
    )


def usage_figure(arrays, config, outdir):
    sizes = arrays["sizes"]
    inits = config["inits"]
    fig, axes = _grid(config, inits, pm.USAGES, "prototype-usage specialization ratio")
    lines = [((0, 0, 0), None, "-"), ((0, 1, 0), None, "-"), ((0, 0, 1), None, "-")]
    lines += [((1, 0, 0), cov, "-" if cov == "chamfer" else "--") for cov in config["coverages"]]
    for r, init in enumerate(inits):
        for c, usage in enumerate(pm.USAGES):
            ax = axes[r, c]
            m = arrays[f"mean__usage_{usage}__fixed__{init}"]
            for mask, cov, style in lines:
                name = model.combination_name(mask) + (f" ({cov})" if cov else "")
                color = COLORS[model.combination_name(mask)]
                _line(ax, sizes, m[:, variant_index(config, mask, cov)], name, color, style)
            _log_sizes(ax, sizes)
            ax.set(xlabel="N", ylabel="usage ratio", title=f"init {init}, usage by {usage}")
    _legend(fig, axes[0, 0], ncol=5)
    caption = (
        "Prototype-usage specialization ratio (distinct neurons serving some training "
        "input, over N) against N at the fixed budget, means over seeds with 95% t "
        "intervals; columns: nearest-prototype and argmax-of-response readings; coverage "
        "dashed for the one-sided reading."
    )
    return save_figure(fig, outdir, "prototypes_usage", caption)


def positions_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    inits = config["inits"]
    vs = [v for v in variants(config) if v["kind"] == "core"]
    fig, axes = plt.subplots(
        1, len(inits), figsize=(5.2 * len(inits), 0.32 * len(vs) + 1.6), squeeze=False
    )
    for ax, init in zip(axes[0], inits):
        pos, x = arrays[f"positions__{init}"][0], arrays[f"x_last__{init}"][0]
        for row, v in enumerate(vs):
            j = variant_index(config, v["mask"], v["coverage"])
            p = np.clip(pos[j], -0.5, 1.5)
            name = model.combination_name(v["mask"])
            ax.plot(p, np.full(p.size, row), "|", color=COLORS[name], ms=8)
        ax.plot(x, np.full(x.size, -1), "|", color="0.4", ms=8)
        labels = [
            model.combination_name(v["mask"]) + (f" ({v['coverage']})" if v["coverage"] else "")
            for v in vs
        ]
        ax.set_yticks(range(-1, len(vs)), ["data"] + labels, fontsize=6)
        ax.axvspan(x.min(), x.max(), color="0.9", zorder=0)
        ax.set(
            xlim=(-0.55, 1.55),
            xlabel="prototype p = -b/w (clipped to [-0.5, 1.5])",
            title=f"N = {x.size}, init {init}, seed 0, judged budget",
        )
    caption = (
        "Prototype positions p_i = -b_i/w_i at the largest N for every loss combination "
        "and coverage reading (first seed), against the training inputs (bottom row); "
        "the grey band is the inputs' hull, positions beyond [-0.5, 1.5] drawn at the edge."
    )
    return save_figure(fig, outdir, "prototypes_positions", caption)


def tau_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    taus, sizes = arrays["taus"], arrays["sizes"]
    inits = config["inits"]
    fig, axes = plt.subplots(
        len(BUDGETS), len(inits), figsize=(4.8 * len(inits), 3.4 * 2), squeeze=False
    )
    for r, budget in enumerate(BUDGETS):
        for ax, init in zip(axes[r], inits):
            ci = arrays[f"tau__{budget}__{init}"]
            for i, n in enumerate(sizes):
                color = f"C{i}"
                _line(ax, taus, ci[i], f"N = {n:g}", color)
                ax.axvline(1 / n, color=color, ls=":", lw=0.8)
            ax.axhline(EXPULSION_MARGIN, color="k", ls="--", lw=0.8)
            nominal = [float(t) for t in config["nominal_taus"]]
            ax.axvspan(
                min(nominal), max(nominal), color="0.85", zorder=0, label="plausible nominal taus"
            )
            ax.axvline(
                float(config["tau"]),
                color="k",
                lw=1.2,
                label=f"nominal tau {float(config['tau']):g}",
            )
            _log_sizes(ax, taus)
            ax.tick_params(axis="x", labelsize=6)
            ax.set(
                xlabel="tau",
                ylabel="outside fraction - plain's",
                title=f"separation-only tau sweep, init {init}, {budget} budget",
            )
    _legend(fig, axes[0, 0], ncol=5)
    caption = (
        "Excess fraction of prototypes outside the hull over the plain fit, separation-only "
        "mask, against tau, per N (dotted: the sample spacing 1/N; dashed: the 0.05 "
        "expulsion margin; solid black: the nominal tau; grey band: the plausible nominal "
        "taus judged as readings), means over seeds with 95% t intervals of the paired "
        "difference; rows: fixed and settled budget."
    )
    return save_figure(fig, outdir, "prototypes_tau", caption)


HISTORY_LINES: tuple[tuple[str, str, str], ...] = (
    ("plain", "k", "-"),
    ("cov", COLORS["cov"], "-"),
    ("sep", COLORS["sep"], "-"),
    ("ov", COLORS["ov"], "-"),
    ("sep at the largest tau", COLORS["sep"], "--"),
)
"""The approaches of the history and drift figures (`._analysis.APPROACHES`' order)."""


def _history_columns(config):
    big = max(float(t) for t in config["taus"])
    return [
        variant_index(config, (0, 0, 0)),
        variant_index(config, (1, 0, 0), config["coverages"][-1]),
        variant_index(config, (0, 1, 0), tau=float(config["tau"]), weight=float(config["weight"])),
        variant_index(config, (0, 0, 1), weight=float(config["weight"])),
        variant_index(config, (0, 1, 0), tau=big, weight=float(config["weight"])),
    ]


def history_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    steps, sizes, lrs = arrays["checkpoints"], arrays["sizes"], arrays["lrs"]
    inits = config["inits"]
    fig, axes = plt.subplots(
        len(inits), len(lrs), figsize=(4.8 * len(lrs), 3.4 * len(inits)), squeeze=False
    )
    cols = _history_columns(config)
    for r, init in enumerate(inits):
        for c, lr in enumerate(lrs):
            ax = axes[r, c]
            h = arrays[f"history__{init}__lr{c}"][-1]  # (K, V, 3) at the largest N
            rate = arrays[f"drift__{init}__lr{c}"][-1]  # at the cap: (approaches, 3)
            for (name, color, style), j, rr in zip(HISTORY_LINES, cols, rate):
                label = f"{name} ({rr[0]:+.3f} / 1000 steps)" if c == r == 0 else None
                _line(ax, steps, h[:, j], label or "_", color, style)
                ax.annotate(f"{rr[0]:+.3f}", (steps[-1], h[-1, j, 0]), fontsize=6, color=color)
            for b in config["budgets"]:
                ax.axvline(float(b), color="0.6", ls=":", lw=0.8)
            ax.set(
                xlabel="Adam steps",
                ylabel="outside fraction",
                title=f"N = {sizes[-1]:g}, init {init}, lr {lr:g}",
            )
    _legend(fig, axes[0, 0], ncol=3)
    caption = (
        "Fraction of prototypes outside the hull against training steps at the largest N for "
        "the four approaches the abstract names and separation at the largest tau (judged "
        f"lambda {float(config['weight']):g} and tau {float(config['tau']):g}), means over "
        "seeds with 95% t intervals; columns: the step sizes trained; dotted: the fixed "
        "budgets. Numbers: each approach's drift rate per 1,000 steps over the second half "
        f"of the cap ({config['cap']} steps; mean over N and seeds). A settled run (largest "
        f"prototype displacement per {config['window']} steps below "
        f"{config['settle_tolerance']:g}) holds its position."
    )
    return save_figure(fig, outdir, "prototypes_history", caption)


def drift_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    ends, lrs = arrays["drift_ends"], arrays["lrs"]
    inits = config["inits"]
    fig, axes = plt.subplots(
        len(inits), len(lrs), figsize=(4.6 * len(lrs), 3.2 * len(inits)), squeeze=False
    )
    for r, init in enumerate(inits):
        for c, lr in enumerate(lrs):
            ax = axes[r, c]
            table = arrays[f"drift__{init}__lr{c}"]  # (ends, approaches, 3)
            for k, (name, color, style) in enumerate(HISTORY_LINES):
                _line(ax, ends, table[:, k], name, color, style)
            ax.axhline(0.0, color="k", lw=0.6)
            ax.axhline(DRIFT_MARGIN, color="k", ls="--", lw=0.8)
            ax.set_xscale("log")
            ax.set_xticks(ends, [f"{e:g}" for e in ends])
            ax.minorticks_off()
            ax.set(
                xlabel="budget (steps)",
                ylabel="drift per 1000 steps",
                title=f"init {init}, lr {lr:g}",
            )
    _legend(fig, axes[0, 0], ncol=5)
    caption = (
        "Drift rate of the outside fraction per 1,000 steps (least-squares slope over the "
        "second half of each budget; the last point: of the cap), per approach, mean over "
        "seeds of the mean over N with 95% t intervals; dashed: the drift margin "
        f"{DRIFT_MARGIN:g} of the rate findings; columns: the step sizes trained."
    )
    return save_figure(fig, outdir, "prototypes_drift", caption)


def plot(arrays: dict, config: dict, outdir) -> list:
    """The figures: error, fit error, outside fraction and usage against N, positions at the
    largest N, the tau sweep, the outside fraction against steps and the drift rates."""
    return [
        error_figure(arrays, config, outdir),
        fit_figure(arrays, config, outdir),
        outside_figure(arrays, config, outdir),
        usage_figure(arrays, config, outdir),
        positions_figure(arrays, config, outdir),
        tau_figure(arrays, config, outdir),
        history_figure(arrays, config, outdir),
        drift_figure(arrays, config, outdir),
    ]

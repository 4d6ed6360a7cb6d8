"""Figures of the ``prototypes`` experiment, drawn from the stored arrays alone."""

from __future__ import annotations

import numpy as np

from ...plotting import save_figure
from . import _model as model
from . import prototypes as ex

COLORS = {"plain": "k", "cov": "tab:green", "sep": "tab:blue", "ov": "tab:red",
          "cov+sep": "tab:cyan", "cov+ov": "tab:olive", "sep+ov": "tab:purple",
          "cov+sep+ov": "tab:brown"}


def _line(ax, x, ivs, label, color, style="-"):
    """Mean over seeds with its stored 95% bootstrap interval ``ivs`` (rows: mean, low, high)."""
    ax.plot(x, ivs[:, 0], style, color=color, label=label, marker="o", ms=3)
    ax.fill_between(x, ivs[:, 1], ivs[:, 2], color=color, alpha=0.15, lw=0)


def _log_sizes(ax, sizes):
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{n:g}" for n in sizes])
    ax.minorticks_off()


def _grid(config, rows, cols, title):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), len(cols), figsize=(4.6 * len(cols), 3.4 * len(rows)),
                             squeeze=False, sharex=True)
    fig.suptitle(title, fontsize=9)
    return fig, axes


def error_figure(arrays, config, outdir):
    sizes = arrays["sizes"]
    inits, covs = config["inits"], config["coverages"]
    fig, axes = _grid(config, inits, covs, "reconstruction error against N")
    for r, init in enumerate(inits):
        err = arrays[f"ci__reconstruction_error__{init}"]
        for c, cov in enumerate(covs):
            ax = axes[r, c]
            for mask in model.COMBINATIONS:
                name = model.combination_name(mask)
                j = ex.variant_index(config, mask, cov)
                _line(ax, sizes, err[:, j], name, COLORS[name])
            _log_sizes(ax, sizes)
            ax.set(yscale="log", xlabel="N",
                   ylabel="reconstruction error", title=f"init {init}, coverage {cov}")
            ax.legend(fontsize=6, ncol=2)
    caption = ("Mean reconstruction error (mean over seeds of min over one-to-one assignments of "
               "mean |x_j - p_sigma(j)|) against N for the eight loss combinations, 95% bootstrap "
               "intervals of the mean over seeds; rows: initialisation reading, columns: coverage reading.")
    return save_figure(fig, outdir, "prototypes_error", caption)


def usage_figure(arrays, config, outdir):
    sizes = arrays["sizes"]
    inits = config["inits"]
    fig, axes = _grid(config, inits, ex.pm.USAGES, "prototype-usage specialization ratio")
    lines = [((0, 0, 0), None, "-"), ((0, 1, 0), None, "-"), ((0, 0, 1), None, "-")]
    lines += [((1, 0, 0), cov, "-" if cov == "chamfer" else "--") for cov in config["coverages"]]
    for r, init in enumerate(inits):
        for c, usage in enumerate(ex.pm.USAGES):
            ax = axes[r, c]
            m = arrays[f"ci__usage_{usage}__{init}"]
            for mask, cov, style in lines:
                name = model.combination_name(mask) + (f" ({cov})" if cov else "")
                color = COLORS[model.combination_name(mask)]
                _line(ax, sizes, m[:, ex.variant_index(config, mask, cov)], name, color, style)
            _log_sizes(ax, sizes)
            ax.set(xlabel="N", ylabel="usage ratio",
                   title=f"init {init}, usage by {usage}")
            ax.legend(fontsize=6)
    caption = ("Prototype-usage specialization ratio (distinct neurons serving some training "
               "input, over N) against N, 95% bootstrap intervals of the mean over seeds; columns: nearest-prototype "
               "and argmax-of-response readings; coverage dashed for the one-sided reading.")
    return save_figure(fig, outdir, "prototypes_usage", caption)


def positions_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    inits = config["inits"]
    vs = [v for v in ex.variants(config) if not v["sweep"]]
    fig, axes = plt.subplots(1, len(inits), figsize=(5.2 * len(inits), 0.32 * len(vs) + 1.6),
                             squeeze=False)
    for ax, init in zip(axes[0], inits):
        pos, x = arrays[f"positions__{init}"][0], arrays[f"x_last__{init}"][0]
        for row, v in enumerate(vs):
            j = ex.variant_index(config, v["mask"], v["coverage"])
            p = np.clip(pos[j], -0.5, 1.5)
            name = model.combination_name(v["mask"])
            ax.plot(p, np.full(p.size, row), "|", color=COLORS[name], ms=8)
        ax.plot(x, np.full(x.size, -1), "|", color="0.4", ms=8)
        labels = [model.combination_name(v["mask"]) + (f" ({v['coverage']})" if v["coverage"]
                                                        else "") for v in vs]
        ax.set_yticks(range(-1, len(vs)), ["data"] + labels, fontsize=6)
        ax.axvspan(x.min(), x.max(), color="0.9", zorder=0)
        ax.set(xlim=(-0.55, 1.55), xlabel="prototype p = -b/w (clipped to [-0.5, 1.5])",
               title=f"N = {x.size}, init {init}, seed 0")
    caption = ("Prototype positions p_i = -b_i/w_i at the largest N for every loss combination "
               "and coverage reading (first seed), against the training inputs (bottom row); "
               "the grey band is the inputs' hull, positions beyond [-0.5, 1.5] drawn at the edge.")
    return save_figure(fig, outdir, "prototypes_positions", caption)


def tau_figure(arrays, config, outdir):
    import matplotlib.pyplot as plt

    taus, sizes = arrays["taus"], arrays["sizes"]
    inits = config["inits"]
    fig, axes = plt.subplots(1, len(inits), figsize=(4.6 * len(inits), 3.4), squeeze=False)
    for ax, init in zip(axes[0], inits):
        ci = arrays[f"tau_ci__{init}"]
        for i, n in enumerate(sizes):
            color = f"C{i}"
            _line(ax, taus, ci[i], f"N = {n:g}", color)
            ax.axvline(1 / n, color=color, ls=":", lw=0.8)
        ax.axhline(ex.EXPULSION_MARGIN, color="k", ls="--", lw=0.8)
        _log_sizes(ax, taus)
        ax.set(xlabel="tau", ylabel="outside fraction - plain's",
               title=f"separation-only tau sweep, init {init}")
        ax.legend(fontsize=6)
    caption = ("Excess fraction of prototypes outside the hull over the plain fit, separation-only "
               "mask, against tau, per N (dotted: the sample spacing 1/N; dashed: the 0.05 margin "
               "of the finding), 95% paired bootstrap intervals over seeds.")
    return save_figure(fig, outdir, "prototypes_tau", caption)


def plot(arrays: dict, config: dict, outdir) -> list:
    """The four figures: error and usage against N, positions at the largest N, tau sweep."""
    return [error_figure(arrays, config, outdir), usage_figure(arrays, config, outdir),
            positions_figure(arrays, config, outdir), tau_figure(arrays, config, outdir)]

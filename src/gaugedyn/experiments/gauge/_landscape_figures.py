"""Figures of the ``landscape`` experiment, drawn from its stored arrays only."""

from __future__ import annotations

import numpy as np

from . import _figures as gf


def plot(arrays: dict, outdir) -> list:
    return [catalogue(arrays, outdir), escape(arrays, outdir), gauge(arrays, outdir)]


def catalogue(arrays: dict, outdir):
    """One panel per catalogue: loss of each entry (symlog), colour by index, and the share
    of starts whose flow ended there with its interval."""
    import matplotlib.pyplot as plt

    keys = sorted(k for k in arrays if k.startswith("catalogue_"))
    fig, axes = plt.subplots(2, len(keys), figsize=(3.2 * len(keys), 5.2), squeeze=False,
                             sharex="col", gridspec_kw={"height_ratios": [1.3, 1]})
    from matplotlib.ticker import MaxNLocator
    for j, k in enumerate(keys):
        rows = arrays[k]
        x = np.arange(rows.shape[0])
        ax, bx = axes[0, j], axes[1, j]
        colors = [f"C{min(int(idx), 9)}" for idx in rows[:, 1]]
        ax.scatter(x, np.maximum(rows[:, 0], 0.0), c=colors, s=28, edgecolor="k", lw=0.4,
                   zorder=3)
        for xi, (loss, idx) in zip(x, rows[:, :2]):
            ax.annotate(f"{int(idx)}", (xi, max(loss, 0.0)), textcoords="offset points",
                        xytext=(4, 3), fontsize=6)
        ax.set_yscale("symlog", linthresh=1e-4)
        act, K = k.removeprefix("catalogue_").split("_K")
        ax.set_title(f"{act}, K = M = {K}",
                     fontsize=8)
        ax.set_ylabel("loss (label: index)" if j == 0 else "")
        share, low, high = rows[:, 2], rows[:, 3], rows[:, 4]
        bx.bar(x, share, color=colors, edgecolor="k", lw=0.4)
        bx.errorbar(x, share, yerr=[share - low, high - share], fmt="none", ecolor="k",
                    elinewidth=0.8, capsize=2)
        bx.set(ylim=(0, 1), xlabel="entry (by loss)")
        bx.xaxis.set_major_locator(MaxNLocator(integer=True))
        bx.set_ylabel("share of flow ends" if j == 0 else "")
    fig.tight_layout()
    return gf.save(fig, outdir, "landscape_catalogue", arrays)


def escape(arrays: dict, outdir):
    """Left: ``lambda_+ T`` against ``ln(1/eps)`` for every saddle and sign (ReLU orange, erf
    blue), shifted to start at zero, with the slope-1 line. Right: each reading's fitted slope
    of ``lambda_+ T`` with its 95% interval, against the band ``[0.95, 1.05]``."""
    import matplotlib.pyplot as plt

    labels = [str(s) for s in np.atleast_1d(arrays["escape_labels"])]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.5, 3.8),
                                 gridspec_kw={"width_ratios": [1.2, 1]})
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
    bx.errorbar(fits[:, 0], y, xerr=[fits[:, 0] - fits[:, 1], fits[:, 2] - fits[:, 0]],
                fmt="o", ms=3, color="k", elinewidth=0.8)
    bx.axvline(1.0, color="k", lw=0.5)
    bx.set(xlabel="fitted slope of lambda_+ T on ln(1/eps)", ylabel="reading (saddle, sign)",
           xlim=(0.94, 1.06))
    fig.tight_layout()
    return gf.save(fig, outdir, "landscape_escape", arrays)


def gauge(arrays: dict, outdir):
    """One saddle in three gauges: ``lambda_+``, the time spent from one initial function, and
    their product."""
    import matplotlib.pyplot as plt

    names = ["a-heavy", "balanced", "w-heavy"]
    lam, T, _ = arrays["gauge"].T
    fig, axes = plt.subplots(1, 3, figsize=(8, 2.8))
    for ax, values, label in zip(axes, (lam, T, lam * T), ("lambda_+", "time spent T",
                                                            "lambda_+ T")):
        ax.bar(names, values, color=["C1", "C7", "C0"])
        ax.set_title(label, fontsize=8)
        if label != "lambda_+ T":
            ax.set_yscale("log")
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return gf.save(fig, outdir, "landscape_gauge", arrays)

"""The figures of ``beta_grid`` and ``gauge_under_adam``, drawn from their stored arrays only."""

from __future__ import annotations

import numpy as np

from ._gauge_analysis import _cell
from ._grid_analysis import HEATMAP_FIELDS, VERDICT_CODES
from ._protocol import TASK_KINDS

# the colour of each verdict in the verdict map; its caption names them from here
VERDICT_COLOURS = {
    "NOT HELD": "tab:red",
    "HELD": "tab:green",
    "UNRESOLVED": "gold",
    "depends on the reading": "tab:orange",
}


def _label(b: float) -> str:
    return f"{b:g}"


def _heatmap_panel(ax, data: np.ndarray, b1s, b2s, diverged: np.ndarray, f: str):
    from matplotlib.patches import Rectangle

    unit = f.startswith(("share", "dominance"))
    im = ax.imshow(
        data,
        origin="lower",
        aspect="auto",
        cmap="viridis",
        vmin=0 if unit else None,
        vmax=1 if unit else None,
    )
    for i, a in enumerate(b1s):
        for j, b in enumerate(b2s):
            if np.isfinite(data[i, j]):
                ax.text(
                    j,
                    i,
                    f"{data[i, j]:.2f}" if unit else f"{data[i, j]:.3g}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="w" if (unit and data[i, j] < 0.5) else "k",
                )
            if diverged[i, j]:
                ax.add_patch(
                    Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="xxx", ec="0.85", lw=0)
                )
            if a == b:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="r", lw=1.2))
    ax.set_xticks(range(len(b2s)), [_label(b) for b in b2s], rotation=45)
    ax.set_yticks(range(len(b1s)), [_label(b) for b in b1s])
    ax.set(xlabel="beta2", ylabel="beta1", title=f.replace("_", " "))
    ax.grid(False)
    return im


def plot_heatmaps(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    b1s, b2s = arrays["beta1s"], arrays["beta2s"]
    diverged = np.asarray(arrays[f"{task}__cell_diverged"]).astype(bool)
    n = len(HEATMAP_FIELDS)
    fig, axes = plt.subplots(1, n, figsize=(2.9 * n, 3.1), squeeze=False)
    for ax, f in zip(axes[0], HEATMAP_FIELDS):
        data = np.asarray(arrays[f"{task}__{f}"], dtype=float)
        fig.colorbar(_heatmap_panel(ax, data, b1s, b2s, diverged, f), ax=ax, shrink=0.8)
    fig.suptitle(f"{task} ({TASK_KINDS[task]})")
    caption = str(arrays.get(f"caption_heatmaps_{task}", task))
    return save_figure(fig, outdir, f"beta_grid_heatmaps_{task}", caption)


def plot_update_norms(arrays: dict, outdir, task: str):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    b1s, b2s = [float(b) for b in arrays["beta1s"]], [float(b) for b in arrays["beta2s"]]
    un = np.asarray(arrays[f"{task}__update_norm"], dtype=float)
    rough = np.asarray(arrays[f"{task}__roughness"], dtype=float)
    diverged = np.asarray(arrays[f"{task}__cell_diverged"]).astype(bool)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True, squeeze=False)
    cmap = plt.get_cmap("viridis")
    for i, a in enumerate(b1s):
        color = cmap(i / max(len(b1s) - 1, 1))
        for j, b in enumerate(b2s):
            y = un[i, j]
            if not np.isfinite(y).any():
                continue
            ax = axes[0, 0] if a == b else axes[0, 1]
            ls = "-" if a == b else (":" if b < a else "--")
            tag = " diverged" if diverged[i, j] else ""
            ax.plot(
                np.arange(1, y.size + 1),
                y,
                color=color,
                ls=ls,
                lw=1.0,
                alpha=0.35 if diverged[i, j] else 1.0,
                label=f"({a:g}, {b:g}) r={rough[i, j]:.3f}{tag}",
            )
    titles = ("tied: beta1 = beta2", "untied (dashed: beta2 > beta1, dotted: beta2 < beta1)")
    for ax, title in zip(axes[0], titles):
        ax.set(yscale="log", xlabel="step", title=title)
        if ax.lines:
            ax.legend(fontsize=5, ncol=2)
    axes[0, 0].set_ylabel("update norm |u|")
    fig.suptitle(task)
    caption = (
        f"{task}: update-norm trajectories |u_t| (seed mean), tied cells left, untied right, "
        "colour by beta1; r = detrended roughness mean|Delta^2 log|u|| of each cell; "
        "faint: diverged cells."
    )
    return save_figure(fig, outdir, f"beta_grid_update_norms_{task}", caption)


def plot_verdicts(arrays: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    names = [str(t) for t in arrays["task_names"]]
    cols = [str(v) for v in arrays["finding_names"]]
    table = np.array([arrays[f"{n}__verdicts"] for n in names], dtype=float)
    from matplotlib.colors import BoundaryNorm, ListedColormap

    words = {v: k for k, v in VERDICT_CODES.items()}
    order = sorted(words)
    cmap = ListedColormap([VERDICT_COLOURS[words[k]] for k in order])
    norm = BoundaryNorm(np.arange(len(order) + 1) - 0.5, len(order))
    fig, ax = plt.subplots(figsize=(0.7 * len(cols) + 3.5, 0.55 * len(names) + 3.6))
    image = ax.imshow(table, cmap=cmap, norm=norm, aspect="auto")
    for i in range(len(names)):
        for j in range(len(cols)):
            ax.text(
                j,
                i,
                words[int(table[i, j])].replace(" ", "\n"),
                ha="center",
                va="center",
                fontsize=6,
            )
    ax.set_xticks(range(len(cols)), [c.replace(":", "\n") for c in cols], fontsize=7, rotation=90)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.grid(False)
    ax.set_title("beta_grid: each finding's verdict per task")
    bar = fig.colorbar(image, ax=ax, ticks=order, shrink=0.8)
    bar.ax.set_yticklabels([words[k] for k in order], fontsize=8)
    legend = ", ".join(f"{VERDICT_COLOURS[w].removeprefix('tab:')}: {w}" for w in VERDICT_CODES)
    caption = (
        f"Every finding judged task by task under the written protocol ({legend}; each from "
        "the 95% t intervals over seeds in every sign reading and share convention); the "
        "numbers of each reading are in the claims table."
    )
    return save_figure(fig, outdir, "beta_grid_verdicts", caption)


def _xlabels(a: dict) -> list[str]:
    return [_cell(x, y) for x, y in zip(a["beta1"], a["beta2"])]


def _shade_tied(ax, tied) -> None:
    for j, t in enumerate(tied):
        if t:
            ax.axvspan(j - 0.45, j + 0.45, color="0.9", zorder=0)


def plot_owner_gap(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    dims, tied = a["dims"], a["tied"]
    x = np.arange(len(tied))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, D in enumerate(dims):
        off = 0.15 * (i - (len(dims) - 1) / 2)
        r = a["owner_rate"][i]
        axes[0].errorbar(
            x + off,
            r,
            yerr=[r - a["owner_lo"][i], a["owner_hi"][i] - r],
            fmt="o",
            capsize=3,
            label=f"D = {int(D)}",
        )
        g = a["gap"][i]
        axes[1].errorbar(
            x + off,
            g,
            yerr=[g - a["gap_lo"][i], a["gap_hi"][i] - g],
            fmt="o",
            capsize=3,
            label=f"D = {int(D)}",
        )
    for ax in axes:
        _shade_tied(ax, tied)
        ax.set_xticks(x, _xlabels(a), rotation=30)
        ax.set_xlabel("(beta1, beta2); grey: tied")
        ax.legend()
    axes[0].set(
        ylabel="owner = a-heavy copy (fraction of seeds)",
        ylim=(-0.05, 1.05),
        title="owner selection (Wilson 95%)",
    )
    gaps = np.asarray(a["gap"], float)
    scale = "log" if np.any(np.isfinite(gaps) & (gaps > 0)) else "linear"  # none measured: linear
    axes[1].set(ylabel="t_w / t_a", yscale=scale, title="gauge gap (bootstrap 95%)")
    caption = (
        "Left: fraction of seeds in which the a-heavy copy of the duplicates ends as the "
        "owner, with Wilson 95% intervals. Right: gauge gap t_w / t_a of the single set-up "
        "(geometric mean over seeds, bootstrap 95% interval). Tied (beta1, beta2) shaded."
    )
    return save_figure(fig, outdir, "gauge_under_adam_owner_gap", caption)


def plot_lag_shares(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    dims, tied = a["dims"], a["tied"]
    x = np.arange(len(tied))
    fig, axes = plt.subplots(
        1, len(dims), figsize=(4.8 * len(dims) + 0.5, 3.8), squeeze=False, sharey=True
    )
    series = [
        ("duplicates: a-heavy copy", "share_dup", 0, "o"),
        ("duplicates: w-heavy copy 1", "share_dup", 1, "s"),
        ("single w-heavy", "share_single", 0, "^"),
        ("single a-heavy", "share_single", 1, "v"),
    ]
    for i, D in enumerate(dims):
        ax = axes[0, i]
        _shade_tied(ax, tied)
        for n, (label, key, idx, marker) in enumerate(series):
            m = a[key][i, :, idx, 1]
            lo, hi = a[f"{key}_lo"][i, :, idx, 1], a[f"{key}_hi"][i, :, idx, 1]
            ax.errorbar(
                x + 0.12 * (n - 1.5), m, yerr=[m - lo, hi - m], fmt=marker, capsize=2, label=label
            )
        ax.set_xticks(x, _xlabels(a), rotation=30)
        ax.set(title=f"D = {int(D)}", xlabel="(beta1, beta2); grey: tied")
    axes[0, 0].set_ylabel("lag share of the neuron's update")
    axes[0, 0].legend(fontsize=7)
    caption = (
        "Lag share |lag| / (|sign| + |lag| + |residual|) of each neuron's Adam update "
        "(mean over steps after start-up, seed mean with 95% interval): the duplicates' "
        "a-heavy and w-heavy copies and the single neuron in each gauge. Exactly zero on "
        "tied (shaded) configurations."
    )
    return save_figure(fig, outdir, "gauge_under_adam_lag_shares", caption)


def plot_alignment(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    i = len(a["dims"]) - 1
    t = a["time"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for j, label in enumerate(_xlabels(a)):
        color = f"C{j % 8}"
        ax.plot(t[1:], a["alignment"][i, j, 1, 1:], color=color, ls="-", label=f"{label} a-heavy")
        ax.plot(t[1:], a["alignment"][i, j, 0, 1:], color=color, ls="--", label=f"{label} w-heavy")
    ax.axhline(float(a["threshold"]), color="k", ls=":", lw=1)
    ax.set(
        xscale="log",
        xlabel="time t = lr * steps",
        ylabel="alignment u.v (seed median)",
        title=f"single, D = {int(a['dims'][i])}",
    )
    ax.legend(fontsize=6, ncol=2)
    caption = (
        f"Alignment of the single neuron with the teacher under Adam at D = "
        f"{int(a['dims'][i])} (median over seeds); solid a-heavy, dashed w-heavy, one colour "
        "per (beta1, beta2); dotted: the specialization threshold."
    )
    return save_figure(fig, outdir, "gauge_under_adam_alignment", caption)


def plot_share_trajectories(a: dict, outdir):
    import matplotlib.pyplot as plt

    from ...plotting import save_figure

    i = len(a["dims"]) - 1
    bins = a["share_bins_dup"].shape[2]
    t_end = float(a["time"][-1])
    tb = (np.arange(bins) + 0.5) * t_end / bins
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for j, label in enumerate(_xlabels(a)):
        color = f"C{j % 8}"
        for ax, k in zip(axes, (0, 1)):
            ax.plot(tb, a["share_bins_dup"][i, j, :, k, 1], color=color, label=label)
    for ax, title in zip(axes, ("a-heavy copy", "w-heavy copy 1")):
        ax.set(xlabel="time t", title=f"duplicates, D = {int(a['dims'][i])}: {title}")
    axes[0].set_ylabel("lag share (seed mean, window mean)")
    axes[0].legend(fontsize=7)
    caption = (
        "Lag share of each duplicate copy's Adam update over time (window means, seed "
        f"means) at D = {int(a['dims'][i])}, one colour per (beta1, beta2)."
    )
    return save_figure(fig, outdir, "gauge_under_adam_share_trajectories", caption)

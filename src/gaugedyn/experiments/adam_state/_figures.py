"""Figures of ``shared_representation``, drawn from the stored arrays alone: the route contrasts
per condition, the formation endpoints, continued opposition, formation-time accounting and the
pulse dose-response."""

from __future__ import annotations

import numpy as np

from ... import stats

ROLES = ("acquisition", "update")


def _plot_contrasts(arrays: dict, config: dict, outdir):
    from ...plotting import save_figure, subplots

    names = [str(n) for n in arrays["contrast_names"]]
    iv = np.asarray(arrays["contrasts"], dtype=float)
    fig, ax = subplots(figsize=(6.5, 0.28 * len(names) + 1.2))
    y = np.arange(len(names))
    ax.errorbar(iv[:, 0], y, xerr=[iv[:, 0] - iv[:, 1], iv[:, 2] - iv[:, 0]], fmt="o", ms=3)
    m = config["margin"]
    ax.axvspan(-m, m, color="0.85", zorder=0, label=f"+-{m:g} margin")
    ax.axvline(0.05, ls="--", color="0.4", lw=0.8, label="+0.05 (Table 2)")
    ax.set_yticks(y, names, fontsize=7)
    ax.set(
        xlabel="route contrast (specialization lost, A - U) or its change",
        title="pulse responses per intervention",
    )
    ax.legend(fontsize=7)
    return save_figure(
        fig,
        outdir,
        "shared_representation_contrasts",
        "Route contrast (acquisition-formed minus update-formed specialization "
        "lost; ctl_: constant minus variable weight history) per condition, and "
        "differences between conditions (a-b), with 95% intervals.",
    )


def _plot_endpoints(arrays: dict, outdir):
    from ...plotting import save_figure, subplots

    e = np.asarray(arrays["endpoints"], dtype=float)  # [route, side, seed]
    fig, ax = subplots(figsize=(4.5, 3.5))
    for i, (route, color) in enumerate((("acquisition-formed", "C0"), ("update-formed", "C1"))):
        mf, mo = (stats.mean_ci(e[i, 0]), stats.mean_ci(e[i, 1]))
        ax.errorbar(
            [mf.estimate],
            [mo.estimate],
            xerr=[[mf.estimate - mf.low], [mf.high - mf.estimate]],
            yerr=[[mo.estimate - mo.low], [mo.high - mo.estimate]],
            fmt="o",
            color=color,
            label=route,
        )
        ax.plot(e[i, 0], e[i, 1], ".", color=color, alpha=0.3, ms=3)
    ax.set(
        xlabel="r_f (favoured target)", ylabel="r_o (opposed target)", title="formation endpoints"
    )
    ax.legend(fontsize=7)
    return save_figure(
        fig,
        outdir,
        "shared_representation_endpoints",
        "Readout precisions of the favoured and the opposed target at the "
        "formation endpoint per seed (dots) and their means with 95% t intervals.",
    )


def _plot_horizon(arrays: dict, config: dict, outdir):
    from ...plotting import save_figure, subplots

    marks = np.asarray(arrays["horizon_marks"], dtype=float)
    fig, ax = subplots(figsize=(5, 3.5))
    for name, color in (("inherited", "C0"), ("fresh", "C1"), ("sgd", "C2")):
        iv = np.asarray(arrays[f"horizon_{name}"], dtype=float)
        ax.plot(
            marks,
            iv[:, 0],
            "o-",
            color=color,
            label=f"{name} " + ("Adam" if name != "sgd" else "(calibrated SGD)"),
        )
        ax.fill_between(marks, iv[:, 1], iv[:, 2], color=color, alpha=0.2)
    m = config["margin"]
    ax.axhspan(-m, m, color="0.85", zorder=0)
    ax.set_xscale("log")
    ax.set(xlabel="opposing updates", ylabel="route contrast", title="continued opposition")
    ax.legend(fontsize=7)
    return save_figure(
        fig,
        outdir,
        "shared_representation_horizon",
        "Route contrast under continued combined opposition with inherited Adam, "
        "fresh Adam and SGD calibrated to Adam's first update norm; bands are 95% "
        "paired seed-bootstrap intervals; the grey band is the ten-update margin.",
    )


def _plot_formation(arrays: dict, outdir):
    from ...plotting import save_figure, subplots

    t, v = np.asarray(arrays["form_t"]), np.asarray(arrays["form_v"])  # v: [T, layer, role]
    anc = np.asarray(arrays["form_v_ancestor"])
    fig, axes = subplots(1, 3, figsize=(11, 3.4))
    for layer in (0, 1):
        for j, role in enumerate(ROLES):
            axes[layer].semilogy(t, v[:, layer, j], color=f"C{j}", label=role)
        axes[layer].semilogy(t, anc[:, layer], "k--", lw=0.8, label="ancestor, discounted")
        axes[layer].set(
            xlabel="formation step", ylabel="mean v per parameter", title=f"encoder layer {layer}"
        )
    c = np.asarray(arrays["form_cancel"])
    axes[2].bar(
        range(len(ROLES)),
        c[:, 0],
        yerr=[c[:, 0] - c[:, 1], c[:, 2] - c[:, 0]],
        color=[f"C{j}" for j in range(len(ROLES))],
    )
    axes[2].set_xticks(range(len(ROLES)), ROLES, fontsize=7)
    axes[2].set(ylabel="-C/S (accumulated)", title="gradient cancellation in the encoder")
    axes[0].legend(fontsize=7)
    return save_figure(
        fig,
        outdir,
        "shared_representation_formation",
        "Formation-time accounting: mean second moment per encoder parameter along "
        "each route (dashed: the shared ancestor's v discounted by beta2^t) and "
        "the accumulated cancellation fraction -C/S between task gradients.",
    )


def _plot_dose(arrays: dict, outdir):
    """Per acquisition reading (rows): specialization lost under the combined pulse (left) and
    the switch rate among specialized checkpoints (right) against the declared strength, per
    route, heads (solid) and probe (dashed), with 95% intervals."""
    from ...plotting import save_figure, subplots

    names = [str(n) for n in arrays["dose_strengths"]]
    meanings = [str(m) for m in arrays["dose_meanings"]]
    lost = np.asarray(arrays["dose_lost"], dtype=float)  # [meaning, strength, kind, route, ro, 3]
    switch = np.asarray(arrays["dose_switch"], dtype=float)  # [meaning, strength, route, ro, 3]
    fig, axes = subplots(len(meanings), 2, figsize=(9, 3.2 * len(meanings)), squeeze=False)
    x = np.arange(len(names))
    for i, m in enumerate(meanings):
        for j, role in enumerate(ROLES):
            for q, (ro, ls) in enumerate((("heads", "-"), ("probe", "--"))):
                for ax, iv in (
                    (axes[i, 0], lost[i, :, -1, j, q]),
                    (axes[i, 1], switch[i, :, j, q]),
                ):
                    off = x + 0.06 * (2 * j + q - 1.5)
                    ax.errorbar(
                        off,
                        iv[:, 0],
                        yerr=[iv[:, 0] - iv[:, 1], iv[:, 2] - iv[:, 0]],
                        fmt="o" + ls,
                        ms=3,
                        color=f"C{j}",
                        label=f"{role}-formed, {ro}",
                    )
        axes[i, 0].set(ylabel="specialization lost", title=f"{m} acquisition: combined pulse")
        axes[i, 1].set(
            ylabel="switch rate", ylim=(-0.05, 1.05), title=f"{m} acquisition: switching"
        )
        for ax in axes[i]:
            ax.set_xticks(x, names, fontsize=7)
            ax.set_xlabel("declared pulse strength (weakest first)")
    axes[0, 0].legend(fontsize=6)
    return save_figure(
        fig,
        outdir,
        "shared_representation_dose",
        "Dose-response on Table 2's seeds: specialization lost under the combined pulse and "
        "the switch rate among checkpoints specialized before it, against the declared pulse "
        "strength, per route (acquisition-formed C0, update-formed C1), heads (solid) and probe "
        "(dashed), per acquisition reading; 95% t intervals and Wilson intervals.",
    )


def plot(arrays: dict, config: dict, outdir) -> list:
    figures = [
        _plot_contrasts(arrays, config, outdir),
        _plot_endpoints(arrays, outdir),
        _plot_horizon(arrays, config, outdir),
        _plot_formation(arrays, outdir),
    ]
    if "dose_lost" in arrays:
        figures.append(_plot_dose(arrays, outdir))
    return figures

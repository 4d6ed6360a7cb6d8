"""The figures of ``conservation_laws``, drawn from the stored arrays only."""

from __future__ import annotations

import numpy as np


def _save(fig, outdir, name: str, arrays: dict, legends=()) -> tuple[str, str]:
    from ...plotting import save_figure

    for ax in legends:
        ax.legend(fontsize=7)
    value = arrays.get(f"caption_{name}", "")
    return save_figure(
        fig, outdir, name, caption=str(np.asarray(value).item()) if np.size(value) else ""
    )


def conservation_laws(arrays: dict, config: dict, outdir) -> list:
    out = []
    if np.size(arrays.get("count_names", [])):
        out += [_counts(arrays, outdir), _gaps(arrays, outdir)]
    if np.size(arrays.get("drift_models", [])):
        out.append(_drift(arrays, config, outdir))
    return out


def _counts(arrays: dict, outdir):
    import matplotlib.pyplot as plt

    fams = [str(f) for f in arrays["count_families"]]
    measured, derived = arrays["count_measured"][:, 0], arrays["count_derived"]
    fig, axes = plt.subplots(1, 2, figsize=(7.4, 3.2))
    for i, fam in enumerate(dict.fromkeys(fams)):
        m = np.array([f == fam for f in fams])
        axes[0].scatter(derived[m], measured[m], s=18, color=f"C{i}", label=fam)
        axes[1].scatter(arrays["count_symmetries"][m], measured[m], s=18, color=f"C{i}")
    top = max(measured.max(), derived.max(), arrays["count_symmetries"].max()) + 1
    for ax in axes:
        ax.plot([0, top], [0, top], color="0.5", ls="--", lw=0.8)
        ax.set(xscale="symlog", yscale="symlog")
    axes[0].set(xlabel="derived laws", ylabel="measured laws")
    axes[1].set(xlabel="infinitesimal symmetries", ylabel="measured laws")
    return _save(fig, outdir, "conservation_laws_counts", arrays, legends=(axes[0],))


def _gaps(arrays: dict, outdir):
    import matplotlib.pyplot as plt

    names = [str(n) for n in arrays["count_names"]]
    kept = arrays["count_kept"].min(axis=1)
    dropped = np.nanmax(arrays["count_near"], axis=1)
    fig, ax = plt.subplots(figsize=(7.4, 3.4))
    x = np.arange(len(names))
    ax.scatter(x, kept, marker="^", s=16, label="smallest kept")
    ax.scatter(x, np.maximum(dropped, 1e-17), marker="v", s=16, label="largest dropped")
    ax.vlines(x, np.maximum(dropped, 1e-17), kept, color="0.7", lw=0.8)
    ax.axhline(float(_rtol(arrays)), color="0.5", ls="--", lw=0.8)
    ax.set(yscale="log", xticks=x, ylabel="singular value / largest")
    ax.set_xticklabels(names, rotation=90, fontsize=5)
    return _save(fig, outdir, "conservation_laws_gaps", arrays, legends=(ax,))


def _rtol(arrays: dict) -> float:
    """The rank tolerance drawn as the dashed line (stored with the arrays, else 1e-9)."""
    return float(np.asarray(arrays.get("rtol", 1e-9)))


def _drift(arrays: dict, config: dict, outdir):
    import matplotlib.pyplot as plt

    readings = [r for r in ("steps", "time") if f"eta_{r}" in arrays]
    fig, axes = plt.subplots(1, len(readings), figsize=(3.8 * len(readings), 3.2), squeeze=False)
    keys = [k for k in arrays if k.startswith("drift_") and k != "drift_models"]
    for ax, rd in zip(axes[0], readings):
        eta = arrays[f"eta_{rd}"]
        mine = [k for k in keys if k.endswith(f"_{rd}")]
        for i, k in enumerate(mine):
            label = k[len("drift_") : -len(rd) - 1]
            for s, drift in enumerate(arrays[k]):
                ax.loglog(
                    eta,
                    drift / drift[0],
                    color=f"C{i % 10}",
                    lw=0.7,
                    alpha=0.8,
                    label=label if s == 0 else None,
                )
        slope = 2.0 if rd == "steps" else 1.0
        ax.loglog(
            eta, (eta / eta[0]) ** slope, color="0.2", ls="--", lw=1.0, label=f"slope {slope:g}"
        )
        ax.set(
            xlabel="step size eta", title=f"{rd} reading", ylabel="drift / drift at the largest eta"
        )
    return _save(fig, outdir, "conservation_laws_drift", arrays, legends=(axes[0][0],))

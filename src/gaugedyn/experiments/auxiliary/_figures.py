"""Figures of the ``auxiliary`` experiment, drawn from the stored arrays only."""

from __future__ import annotations

import numpy as np

CAPTIONS = {
    "auxiliary_trajectories": "Main error of the two-head student against t: the exact chain's "
    "seed mean and 95% band at each D, the online ODE (black) and the ODE without its eta^2 "
    "noise term (dashed).",
    "auxiliary_closed_form": "Left: the one-output linear student's main error, D = 1000 "
    "simulations (dots) against the leading-order closed form (lines). Right: the closed form's "
    "largest gap to the ODE against eta, with the fitted power law.",
    "auxiliary_benefit_map": "Left: the closed form's stationary benefit eps_m(0) - eps_m(gamma) "
    "over (rho, sigma), its zero (black) and the sign measured in simulation (dots). Right: the "
    "closed form's optimal gamma.",
    "auxiliary_fdt": "The fluctuation-dissipation relation along the ODE: |ratio - 1| at the "
    "stationary states against eta.",
    "auxiliary_forcing_noise": "The benefit's drift part (forcing) and diffusion part (gradient "
    "noise), cumulative from t = 0, per (rho, sigma) cell: simulation (bars) and ODE (marks).",
}


def _save(fig, outdir, name):
    from ...plotting import save_figure

    return save_figure(fig, outdir, name, caption=CAPTIONS[name])


def trajectories(arrays, outdir) -> str:
    import matplotlib.pyplot as plt

    acts = ("erf", "relu", "linear")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for ax, act in zip(axes, acts):
        keys = sorted(
            (
                k
                for k in arrays
                if k.startswith(f"traj_band_{act}-two_heads-chain-") and k.endswith("-main")
            ),
            key=lambda k: int(k.split("-")[3]),
        )
        for i, k in enumerate(keys):
            label = k[len("traj_band_") :]
            t = arrays[f"traj_t_{label}"][1:]
            lo, mid, hi = arrays[k][:, 1:]
            ax.fill_between(t, lo, hi, color=f"C{i}", alpha=0.3, lw=0)
            ax.plot(t, mid, color=f"C{i}", lw=1, label=f"chain D = {label.split('-')[3]}")
            if i == len(keys) - 1:
                ax.plot(t, arrays[f"traj_ode_{label}"][1:], "k", lw=1.2, label="ODE")
                ax.plot(t, arrays[f"traj_bare_{label}"][1:], "k--", lw=1, label="ODE w/o eta^2")
        ax.set(xscale="log", yscale="log", xlabel="t = steps / D", title=act)
    axes[0].set_ylabel("main error (two heads)")
    axes[0].legend(fontsize=7)
    return _save(fig, outdir, "auxiliary_trajectories")


def closed_form(arrays, outdir) -> str:
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.6))
    keys = sorted(k[len("closed_t_") :] for k in arrays if k.startswith("closed_t_"))
    for i, key in enumerate(keys):
        t = arrays[f"closed_t_{key}"]
        ax.plot(t[1:], arrays[f"closed_sim_{key}"][1:], "o", color=f"C{i % 10}", ms=3)
        ax.plot(
            t[1:],
            arrays[f"closed_cf_{key}"][1:],
            "-",
            color=f"C{i % 10}",
            lw=1,
            label=key.replace("_", ", "),
        )
    ax.set(
        yscale="log", xlabel="t", ylabel="main error", title="closed form (lines), D = 1000 (dots)"
    )
    ax.legend(fontsize=6, ncol=2)
    e, g = arrays["order_etas"], arrays["order_gap"]
    slope, icpt = arrays["order_fit"]
    bx.loglog(e, g, "o")
    bx.loglog(e, np.exp(icpt) * e**slope, "k-", lw=1, label=f"slope {slope:.3f}")
    bx.set(xlabel="eta", ylabel="max |closed form - ODE|", title="order of the closed form")
    bx.legend(fontsize=7)
    return _save(fig, outdir, "auxiliary_closed_form")


def benefit_map(arrays, outdir) -> str:
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4))
    rhos, sigmas = arrays["opt_rhos"], arrays["opt_sigmas"]
    b = arrays["cf_benefit"]
    lim = np.nanmax(np.abs(b))
    im = ax.pcolormesh(rhos, sigmas, b, cmap="RdBu", vmin=-lim, vmax=lim, shading="auto")
    ax.contour(rhos, sigmas, b, levels=[0.0], colors="k", linewidths=1)
    fig.colorbar(im, ax=ax, label="closed-form benefit")
    if "map_cells_one_output" in arrays:
        cells = arrays["map_cells_one_output"]
        sim = arrays["map_sim_one_output"]
        ax.scatter(
            cells[:, 0],
            cells[:, 1],
            c=np.sign(sim),
            cmap="RdBu",
            vmin=-1,
            vmax=1,
            edgecolors="k",
            s=60,
            label="simulation sign",
        )
        ax.legend(fontsize=7, loc="upper left")
    ax.set(xlabel="rho", ylabel="sigma", title="benefit of auxiliary learning (one output)")
    og = arrays["opt_gamma"]
    im2 = bx.pcolormesh(rhos, sigmas, og, shading="auto", cmap="viridis")
    fig.colorbar(im2, ax=bx, label="optimal gamma")
    bx.set(xlabel="rho", ylabel="sigma", title="closed-form optimal gamma")
    return _save(fig, outdir, "auxiliary_benefit_map")


def fdt(arrays, outdir) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    etas = arrays.get("fdt_etas")
    for i, k in enumerate(sorted(k for k in arrays if k.startswith("fdt_ratio_"))):
        ax.loglog(
            etas,
            np.abs(arrays[k] - 1),
            "o-",
            ms=3,
            color=f"C{i % 10}",
            label=k[len("fdt_ratio_") :],
        )
    ax.set(xlabel="eta", ylabel="|ratio - 1|", title="FDT along the ODE")
    ax.legend(fontsize=6)
    return _save(fig, outdir, "auxiliary_fdt")


def forcing(arrays, outdir) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    if "map_cells_one_output" in arrays:
        cells = arrays["map_cells_one_output"]
        x = np.arange(len(cells))
        ax.bar(x - 0.2, arrays["forcing_drift_total_one_output"], 0.4, label="drift part")
        ax.bar(x + 0.2, arrays["forcing_diffusion_total_one_output"], 0.4, label="diffusion part")
        ax.plot(x - 0.2, arrays["forcing_ode_drift_total_one_output"], "k_", ms=12)
        ax.plot(x + 0.2, arrays["forcing_ode_diffusion_total_one_output"], "k_", ms=12, label="ODE")
        ax.set_xticks(x, [f"{r:g},{s:g}" for r, s in cells], rotation=90, fontsize=6)
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="(rho, sigma)", ylabel="benefit's part", title="forcing against noise")
    ax.legend(fontsize=7)
    return _save(fig, outdir, "auxiliary_forcing_noise")


def plot(arrays, config, outdir) -> list:
    return [
        trajectories(arrays, outdir),
        closed_form(arrays, outdir),
        benefit_map(arrays, outdir),
        fdt(arrays, outdir),
        forcing(arrays, outdir),
    ]

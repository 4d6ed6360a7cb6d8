"""The ``(beta1, beta2)`` grid: tasks, one cell's run, the analysis with the four seed claims.

Per run, a share is the mean over steps after a start-up fraction ``skip`` of
``share_k = |p_k| / (|sign| + |lag| + |residual|)``; smoothness is
``mean_t |Delta log |u_t||`` (smaller is smoother). Claims per task (thresholds configurable):

1. ``tied_sign_dominated``: on the diagonal ``b1 == b2`` the sign share is the largest of the
   three in every tied cell (measured: min over tied cells of ``share_sign - max(lag, residual)``,
   expected ``> 0``).
2. ``lag_substantial_off_diagonal``: mean lag share over off-diagonal cells ``>= lag_min``.
3. ``residual_comparatively_small``: mean residual share over all cells ``< residual_max``
   (default 1/3, below an equal three-way split).
4. ``tied_smoother``: mean smoothness on the diagonal divided by the mean off the diagonal ``< 1``
   (measured also: the fraction of off-diagonal cells rougher than the tied cell of their row).
"""

from __future__ import annotations

import numpy as np

from .._errors import InputError

DEFAULT_BETAS: tuple[float, ...] = (0.8, 0.9, 0.95, 0.99, 0.999)
QUICK_BETAS: tuple[float, ...] = (0.9, 0.99)

DEFAULT_CONFIG: dict = {
    "tasks": ["digits_mlp", "digits_cnn", "char_transformer", "char_gru", "teacher_student"],
    "beta1s": list(DEFAULT_BETAS),
    "beta2s": list(DEFAULT_BETAS),
    "seeds": 3,
    "steps": None,
    "lr": None,
    "quick": False,
}
QUICK_CONFIG: dict = {**DEFAULT_CONFIG, "beta1s": list(QUICK_BETAS), "beta2s": list(QUICK_BETAS),
                      "seeds": 2, "quick": True}

THRESHOLDS: dict = {"lag_min": 0.1, "residual_max": 1.0 / 3.0, "skip": 0.1}
_FIELDS = ("share_sign", "share_lag", "share_residual", "smoothness", "final_loss")


def grid_tasks(config: dict) -> list[dict]:
    """One task dict per ``(task, beta1, beta2, seed)``: JSON-ready coordinates of a run."""
    from .tasks import TASKS

    cfg = {**DEFAULT_CONFIG, **config}
    for t in cfg["tasks"]:
        if t not in TASKS:
            raise InputError(f"tasks: {t!r} is not allowed; choose from {list(TASKS)}")
    for key in ("beta1s", "beta2s"):
        for b in cfg[key]:
            if not 0.0 <= float(b) < 1.0:
                raise InputError(f"{key}: {b!r} is not allowed; betas lie in [0, 1)")
    if int(cfg["seeds"]) < 1:
        raise InputError(f"seeds={cfg['seeds']!r} is not allowed; use an integer >= 1")
    return [
        {"task": t, "beta1": float(b1), "beta2": float(b2), "seed": s,
         "steps": cfg["steps"], "lr": cfg["lr"], "quick": bool(cfg["quick"])}
        for t in cfg["tasks"] for b1 in cfg["beta1s"] for b2 in cfg["beta2s"]
        for s in range(int(cfg["seeds"]))
    ]


def run_grid_cell(task: dict, seed: np.random.SeedSequence) -> dict:
    """Train one grid task (see :func:`gaugedyn.adam.tasks.train_task`); arrays and scalars.

    The task's coordinates come back as ``task_index``, ``beta1``, ``beta2``, ``seed_index``.
    """
    from .tasks import TASKS, train_task

    out = train_task(task["task"], task["beta1"], task["beta2"], seed=seed,
                     steps=task.get("steps"), lr=task.get("lr"), quick=task.get("quick", False),
                     device=task.get("device", "cpu"))
    out.update(task_index=TASKS.index(task["task"]), beta1=float(task["beta1"]),
               beta2=float(task["beta2"]), seed_index=int(task["seed"]))
    return out


def _run_summary(r: dict, skip: float) -> dict:
    n = len(r["share_sign"])
    k = min(int(skip * n), max(n - 1, 0))
    return {
        "share_sign": float(np.mean(r["share_sign"][k:])),
        "share_lag": float(np.mean(r["share_lag"][k:])),
        "share_residual": float(np.mean(r["share_residual"][k:])),
        "smoothness": float(r["smoothness"]),
        "final_loss": float(r["final_loss"]),
    }


def analyse_grid(results: list[dict], tasks: list[dict] | None = None,
                 thresholds: dict | None = None) -> tuple[dict, list[dict]]:
    """Grid arrays and the four seed claims per task.

    ``results``: outputs of :func:`run_grid_cell` (coordinates taken from ``tasks`` when given,
    else from the results). Returns ``(arrays, claims)``; arrays are keyed ``"<task>__<field>"``
    with shape ``(len(beta1s), len(beta2s))`` (seed means; ``..._std`` seed standard deviations),
    ``"<task>__update_norm"`` ``(n1, n2, steps)`` and ``beta1s``, ``beta2s``. Each claim is a dict
    ``{id, statement, measured, expected, tolerance, passed}`` with ``id = "<task>:<claim>"``.
    """
    from .tasks import TASKS

    th = {**THRESHOLDS, **(thresholds or {})}
    coords = []
    for i, r in enumerate(results):
        if tasks is not None:
            t = tasks[i]
            coords.append((t["task"], float(t["beta1"]), float(t["beta2"])))
        else:
            coords.append((TASKS[int(r["task_index"])], float(r["beta1"]), float(r["beta2"])))
    b1s = sorted({c[1] for c in coords})
    b2s = sorted({c[2] for c in coords})
    names = [t for t in TASKS if any(c[0] == t for c in coords)]
    arrays: dict[str, np.ndarray] = {"beta1s": np.array(b1s), "beta2s": np.array(b2s)}
    claims: list[dict] = []
    for name in names:
        per: dict[tuple[int, int], list[dict]] = {}
        traj: dict[tuple[int, int], list[np.ndarray]] = {}
        for c, r in zip(coords, results):
            if c[0] != name:
                continue
            key = (b1s.index(c[1]), b2s.index(c[2]))
            per.setdefault(key, []).append(_run_summary(r, th["skip"]))
            traj.setdefault(key, []).append(np.asarray(r["update_norm"], dtype=float))
        for f in _FIELDS:
            mean = np.full((len(b1s), len(b2s)), np.nan)
            std = np.full_like(mean, np.nan)
            for (i, j), runs in per.items():
                vals = np.array([x[f] for x in runs])
                mean[i, j], std[i, j] = vals.mean(), vals.std(ddof=1) if len(vals) > 1 else 0.0
            arrays[f"{name}__{f}"] = mean
            arrays[f"{name}__{f}_std"] = std
        T = max(len(x) for v in traj.values() for x in v)
        un = np.full((len(b1s), len(b2s), T), np.nan)
        for (i, j), v in traj.items():
            L = min(len(x) for x in v)
            un[i, j, :L] = np.mean([x[:L] for x in v], axis=0)
        arrays[f"{name}__update_norm"] = un
        claims += grid_claims(name, b1s, b2s, {f: arrays[f"{name}__{f}"] for f in _FIELDS}, th)
    return arrays, claims


def grid_claims(name: str, b1s, b2s, cell: dict, thresholds: dict | None = None) -> list[dict]:
    """The four seed claims of one task from its cell means (arrays ``(n1, n2)``; see module doc)."""
    th = {**THRESHOLDS, **(thresholds or {})}
    b1s, b2s = list(map(float, b1s)), list(map(float, b2s))
    diag = np.zeros((len(b1s), len(b2s)), dtype=bool)
    for i, a in enumerate(b1s):
        for j, b in enumerate(b2s):
            diag[i, j] = a == b
    have = np.isfinite(cell["share_sign"])
    on, off = diag & have, ~diag & have
    sign, lag, res, sm = (np.asarray(cell[k], dtype=float) for k in
                          ("share_sign", "share_lag", "share_residual", "smoothness"))
    out = []

    def claim(cid, statement, measured, expected, tol, passed):
        out.append({"id": f"{name}:{cid}", "statement": statement, "measured": measured,
                    "expected": expected, "tolerance": tol, "passed": bool(passed)})

    if on.any():
        margin = sign[on] - np.maximum(lag[on], res[on])
        claim("tied_sign_dominated",
              "tied updates are sign-dominated: in every tied cell the sign share exceeds the lag "
              "and residual shares",
              {"min_margin": float(margin.min()), "min_sign_share": float(sign[on].min()),
               "mean_sign_share": float(sign[on].mean())},
              "min_margin > 0", 0.0, margin.min() > 0)
    else:
        claim("tied_sign_dominated", "no tied cell in the grid", None, "min_margin > 0", 0.0, False)
    if off.any():
        m = float(lag[off].mean())
        claim("lag_substantial_off_diagonal",
              f"off the diagonal the lag share is substantial (mean >= {th['lag_min']:.3g})",
              {"mean_lag_share": m, "max_lag_share": float(lag[off].max()),
               "max_lag_share_on_diagonal": float(lag[on].max()) if on.any() else None},
              f">= {th['lag_min']:.3g}", 0.0, m >= th["lag_min"])
    else:
        claim("lag_substantial_off_diagonal", "no off-diagonal cell in the grid", None,
              f">= {th['lag_min']:.3g}", 0.0, False)
    r = float(res[have].mean()) if have.any() else float("nan")
    claim("residual_comparatively_small",
          f"the residual share is comparatively small (mean < {th['residual_max']:.3g})",
          {"mean_residual_share": r, "max_residual_share": float(res[have].max()) if have.any()
           else None, "mean_sign_share": float(sign[have].mean()) if have.any() else None},
          f"< {th['residual_max']:.3g}", 0.0, r < th["residual_max"])
    if on.any() and off.any():
        ratio = float(sm[on].mean() / sm[off].mean())
        rougher = []
        for i, a in enumerate(b1s):
            if a in b2s and np.isfinite(sm[i, b2s.index(a)]):
                tied = sm[i, b2s.index(a)]
                rougher += [sm[i, j] > tied for j in range(len(b2s)) if off[i, j]]
        frac = float(np.mean(rougher)) if rougher else float("nan")
        claim("tied_smoother",
              "tied configurations have smoother update-norm trajectories (mean |Delta log|u|| "
              "on the diagonal below the off-diagonal mean)",
              {"smoothness_ratio_tied_over_untied": ratio,
               "mean_smoothness_tied": float(sm[on].mean()),
               "mean_smoothness_untied": float(sm[off].mean()),
               "fraction_untied_rougher_than_row_tied": frac},
              "< 1", 0.0, ratio < 1.0)
    else:
        claim("tied_smoother", "needs tied and untied cells", None, "< 1", 0.0, False)
    return out


def _figure(nrows: int, ncols: int, size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def plot_heatmaps(arrays: dict, outdir, task: str) -> list[str]:
    """Heatmaps of sign, lag, residual shares, smoothness and final loss over ``(b1, b2)``."""
    from pathlib import Path

    b1s, b2s = arrays["beta1s"], arrays["beta2s"]
    fields = ("share_sign", "share_lag", "share_residual", "smoothness", "final_loss")
    fig, ax = _figure(1, len(fields), (3.2 * len(fields), 3.0))
    for a, f in zip(ax[0], fields):
        im = a.imshow(arrays[f"{task}__{f}"], origin="lower", aspect="auto",
                      vmin=0 if f.startswith("share") else None,
                      vmax=1 if f.startswith("share") else None)
        a.set_xticks(range(len(b2s)), [f"{b:g}" for b in b2s], rotation=45)
        a.set_yticks(range(len(b1s)), [f"{b:g}" for b in b1s])
        a.set_xlabel("beta2")
        a.set_ylabel("beta1")
        a.set_title(f.replace("_", " "))
        fig.colorbar(im, ax=a, shrink=0.8)
    fig.suptitle(task)
    name = f"adam_grid_heatmaps_{task}"
    Path(outdir).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(outdir) / f"{name}.png", dpi=110)
    return [name]


def plot_update_norms(arrays: dict, outdir, task: str) -> list[str]:
    """Update-norm trajectories: tied cells (solid) and the untied cells of each row (dashed)."""
    from pathlib import Path

    b1s, b2s = list(arrays["beta1s"]), list(arrays["beta2s"])
    un = arrays[f"{task}__update_norm"]
    fig, ax = _figure(1, 2, (10, 3.4))
    for i, a in enumerate(b1s):
        for j, b in enumerate(b2s):
            y = un[i, j]
            if not np.isfinite(y).any():
                continue
            tgt = ax[0, 0] if a == b else ax[0, 1]
            tgt.plot(y, lw=1.0, label=f"({a:g}, {b:g})")
    for a, title in zip(ax[0], ("tied b1 = b2", "untied")):
        a.set_yscale("log")
        a.set_xlabel("step")
        a.set_ylabel("|u|")
        a.set_title(title)
        if a.lines:
            a.legend(fontsize=6, ncol=2)
    fig.suptitle(task)
    name = f"adam_grid_update_norms_{task}"
    Path(outdir).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(outdir) / f"{name}.png", dpi=110)
    return [name]


def plot_grid(arrays: dict, outdir) -> list[str]:
    """All grid figures, for every task present in ``arrays``."""
    tasks = sorted({k.split("__")[0] for k in arrays if "__" in k})
    names = []
    for t in tasks:
        names += plot_heatmaps(arrays, outdir, t) + plot_update_norms(arrays, outdir, t)
    return names

"""The ``(beta1, beta2)`` grid analysis: cell means over seeds and the four seed claims.

The grid itself is declared and run by :mod:`gaugedyn.experiments.beta_grid`.

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

TASKS: tuple[str, ...] = (
    "digits_mlp", "digits_cnn", "char_transformer", "char_gru", "teacher_student",
)
"""The training tasks of :mod:`gaugedyn.adam.tasks` (named here so the analysis needs no torch)."""
FIELDS: tuple[str, ...] = ("share_sign", "share_lag", "share_residual", "smoothness", "final_loss")
CLAIMS: tuple[str, ...] = ("tied_sign_dominated", "lag_substantial_off_diagonal",
                           "residual_comparatively_small", "tied_smoother")
THRESHOLDS: dict = {"lag_min": 0.1, "residual_max": 1.0 / 3.0, "skip": 0.1}


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


def analyse_grid(results: list[dict], tasks: list[dict],
                 thresholds: dict | None = None) -> tuple[dict, list[dict]]:
    """Grid arrays and the four seed claims per task.

    ``results[i]``: the run of ``tasks[i] = {task, beta1, beta2, ...}`` (a dict with the per-step
    ``share_sign``, ``share_lag``, ``share_residual``, ``update_norm`` and the scalars
    ``smoothness``, ``final_loss``). Returns ``(arrays, claims)``; arrays are keyed
    ``"<task>__<field>"`` with shape ``(len(beta1s), len(beta2s))`` (seed means; ``..._std`` seed
    standard deviations), ``"<task>__update_norm"`` ``(n1, n2, steps)`` and ``beta1s``,
    ``beta2s``. Each claim is a dict ``{id, statement, measured, expected, tolerance, passed}``
    with ``id = "<task>:<claim>"``.
    """
    if len(tasks) != len(results):
        raise InputError(f"tasks has {len(tasks)} entries and results {len(results)}; "
                         "allowed: one task per result")
    th = {**THRESHOLDS, **(thresholds or {})}
    coords = [(t["task"], float(t["beta1"]), float(t["beta2"])) for t in tasks]
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
        for f in FIELDS:
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
        claims += grid_claims(name, b1s, b2s, {f: arrays[f"{name}__{f}"] for f in FIELDS}, th)
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

"""The analysis of ``spike_boundary`` (``PROTOCOL.md`` section 1): per-cell probabilities, the
upper edges, the slope fits under every reading and the findings."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ... import stats
from ..._errors import InputError
from ...adam import spiral_ratio
from ...harness import Claim, judged
from ._bisect import row_edges, significance
from ._protocol import (
    BANDS,
    BETA1_ROWS,
    C_SHIFT,
    CHECK_TOL,
    CODES,
    FINDING_MEASURES,
    NOT_SIMULATED,
    ROWSETS,
    STARTS,
    WINDOWS,
    probability,
)


def turn_growth(a, c, n: float = 2.0) -> np.ndarray:
    """The linear theory's growth per slow turn ``2 pi delta/omega`` of the oscillating state's
    leading multiplier (eps = 0), ``inf`` where the multiplier is real, ``nan`` where ``a`` or
    ``c`` is not finite (a row without an edge)."""
    a, c = np.broadcast_arrays(np.asarray(a, float), np.asarray(c, float))
    ok = np.isfinite(a) & np.isfinite(c)
    out = np.full(a.shape, np.nan)
    out[ok] = 2 * np.pi * spiral_ratio(a[ok], c[ok], n, 0.0)
    return out


def readings(fn, factors: dict) -> tuple[str, dict]:
    """``fn(**choice)`` for every combination of the ``factors`` (name -> options, the first
    option primary); returns the primary reading's name and ``{reading name: result}``."""
    names = list(factors)
    out = {}
    for combo in itertools.product(*factors.values()):
        out[", ".join(combo)] = fn(**dict(zip(names, combo)))
    return next(iter(out)), out


def _rows(a, rowset):
    a = np.asarray(a, float)
    return a <= BETA1_ROWS * (1 + 1e-9) if rowset == ROWSETS[0] else np.ones(a.size, bool)


def _rule(fid: str, form: str) -> str:
    """The rule the finding's declared measure chooses for a claim of ``form``."""
    return stats.measure_of(FINDING_MEASURES, fid).rule(form)


def _rng(seed, fid: str, *labels):
    """A median rule's generator: the run's analysis seed, the finding's id and the reading."""
    return stats.generator(seed, "spike_boundary", fid, *labels)


def slope_judgement(a, cb, band, fid):
    return stats.judge(_rule(fid, "inside"), np.log(a), np.log(cb), threshold=band)


def analyse(tasks, results, seed):
    """``(arrays, claims, diagnostics)`` of a ``spike_boundary`` run."""
    arrays, claims, diag = {}, [], {"systems": {}}
    edges, names = {}, []
    task_edges: dict = {}
    missing: dict = {}
    seeds_of: dict = {}
    for t, r in zip(tasks, results):
        if t["kind"] == "check":
            claims.append(_check_claim(r))
            arrays |= {f"check_{k}": np.asarray(r[k]) for k in ("a", "r", "c_theory", "c_sim")}
            continue
        name = f"n{t['n']:g}" if t["kind"] == "1d" else t["task"]
        start = t["start"]
        if t["kind"] == "task":
            arrays[f"{name}__final_log10_loss"] = np.asarray(r["final_log10_loss"])
        if name not in names:
            names.append(name)
        st = np.asarray(r["status"])
        key = f"{name}_{start}"
        arrays |= {f"{name}__a": np.asarray(r["a"]), f"{name}__c": np.asarray(r["c"])}
        bc, bs = _bisection_cells(r, st)
        arrays[f"{key}__bisect_c"] = bc
        for w, window in enumerate(WINDOWS):
            prob = probability(st[..., w])
            e = row_edges(r["c"], st, bc, bs, w)
            cb = edges[(name, window, start)] = e[:, 0]
            arrays |= {
                f"{key}_{window}__prob": prob,
                f"{key}_{window}__bisect_prob": probability(bs[..., w]),
                f"{key}_{window}__boundary": cb,
                f"{key}_{window}__boundary_low": e[:, 1],
                f"{key}_{window}__boundary_high": e[:, 2],
                f"{key}_{window}__local_slope": local_slopes(r["a"], e),
                f"{key}_{window}__undetermined": (st[..., w] == CODES["undetermined"]).mean(
                    axis=-1
                ),
            }
            diag["systems"][f"{key}_{window}"] = {
                "boundary": [float(v) for v in cb],
                "boundary_interval": [[float(v) for v in row[1:]] for row in e],
                "bisection_cells": int(np.sum(np.isfinite(bc))),
                "undetermined_cells": int(np.sum(st[..., w] == CODES["undetermined"])),
                "diverged_cells": int(np.sum(st[..., w] == CODES["diverged"])),
                "simulated_cells": int(np.sum(st[..., w] != NOT_SIMULATED)),
            }
        if t["kind"] == "task":
            missing[name] = {
                window: missing_edges(r["c"], st[..., w]) for w, window in enumerate(WINDOWS)
            }
            seeds_of[name] = int(st.shape[-2])
        if "status_rises" in r:
            arrays |= _rise_edges(name, key, r, bc, bs, task_edges)
        diag["systems"][key + "_steps_run"] = int(r["steps_run"])
    arrays["systems"] = np.array(names)
    one_d = [n for n in names if _is_1d(n)]
    a_of = {n: arrays[f"{n}__a"] for n in names}
    claims += _findings(one_d, a_of, edges, seed)
    task_names = [n for n in names if not _is_1d(n)]
    claims += [
        _task_claim(n, a_of[n], edges, task_edges, missing.get(n), seeds_of.get(n))
        for n in task_names
    ]
    if len(task_names) >= 2 and all(
        np.array_equal(a_of[n], a_of[task_names[0]]) for n in task_names
    ):
        claims.append(_tasks_C_claim(task_names, a_of, edges, seed))
    level = _level(a_of, edges)
    arrays |= _theory_arrays(one_d, level)
    return arrays, claims, diag


def _bisection_cells(r: dict, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bisection's cells of a result (none for a task scanned on its grid alone)."""
    if "bisect_c" in r:
        return np.asarray(r["bisect_c"], float), np.asarray(r["bisect_status"])
    rows = status.shape[0]
    return np.full((rows, 1), np.nan), np.full(
        (rows, 1) + status.shape[2:], NOT_SIMULATED, dtype=np.int8
    )


def local_slopes(a, edges: np.ndarray) -> np.ndarray:
    """``(rows - 1, 3)``: between consecutive rows (ascending ``a``), the slope
    ``d log c_b / d log a`` of the edges and its range over the edges' intervals (from the
    lower row's high end to the upper row's low end and back; ``nan`` where a side is open)."""
    a = np.asarray(a, float)
    order = np.argsort(a)
    la = np.log(a[order])
    with np.errstate(divide="ignore", invalid="ignore"):
        le = np.log(np.asarray(edges, float)[order])
    d = np.diff(la)
    est = (le[1:, 0] - le[:-1, 0]) / d
    lo = (le[1:, 1] - le[:-1, 2]) / d
    hi = (le[1:, 2] - le[:-1, 1]) / d
    return np.stack([est, lo, hi], axis=1)


def _is_1d(name: str) -> bool:
    return name.startswith("n") and name[1:].replace(".", "", 1).isdigit()


def _rise_edges(name, key, r, bc, bs, task_edges) -> dict:
    """A task's edges under every rise-threshold reading (``status_rises``), into
    ``task_edges[(name, window, "rise h")]``; returns their arrays."""
    out = {}
    st = np.asarray(r["status_rises"])
    for q, h in enumerate(np.asarray(r["rises"], float)):
        for w, window in enumerate(WINDOWS):
            e = row_edges(r["c"], st[..., q], bc, bs, w)
            task_edges[(name, window, f"rise {h:g}")] = e[:, 0]
            out[f"{key}_{window}_rise{h:g}__boundary"] = e[:, 0]
    return out


def missing_edges(c, status) -> list[str | None]:
    """Per row of a grid read without bisection (a task's: ``status`` ``(rows, cols, seeds)``
    of one window, columns at ``c``), why the row has no edge (`_bisect.row_edge`'s rule), or
    ``None`` where it has one: no cell with a seed judged spiky or quiet; never spiky on the
    grid (an edge, if the row has one, lies below the grid's lowest ``c``); or spiky up to the
    grid's highest judged cell."""
    c = np.asarray(c, float)
    p = probability(np.asarray(status))
    out: list[str | None] = []
    for row in p:
        ok = np.isfinite(row)
        judged_p = row[ok][np.argsort(c[ok])]
        if judged_p.size == 0:
            out.append("no cell with a judged seed")
        elif not np.any(judged_p >= 0.5):
            out.append(
                f"never spiky on the grid (an edge, if any, lies below 1 - beta2 = {c.min():g})"
            )
        elif judged_p[-1] >= 0.5:
            out.append("spiky up to the grid's highest judged 1 - beta2")
        else:
            out.append(None)
    return out


def min_edge_seeds() -> int:
    """The fewest seeds a cell for which an edge's interval can close: the smallest number of
    seeds, all spiky, whose exact interval of the probability lies above 1/2
    (`_bisect.significance`)."""
    k = 1
    while significance(np.full((1, k), CODES["spiky"]))[0] != 1:
        k += 1
    return k


def _missing_words(a, why: dict | None, seeds: int | None) -> str:
    """The statement's words on a task's rows without a settled edge and on edge intervals
    its seeds cannot close (empty when there is nothing to say)."""
    out = []
    rows = [(x, r) for x, r in zip(a, (why or {}).get("settled", [])) if r is not None]
    if rows:
        out.append(
            "rows without a settled edge at the configured rise: "
            + "; ".join(f"{x:g} {r}" for x, r in rows)
        )
    if seeds is not None and seeds < min_edge_seeds():
        out.append(
            f"no edge has an interval from its seeds: {seeds} seed{'s' * (seeds != 1)} a cell, "
            "and an exact 95% "
            f"interval of the probability lies above or below 1/2 only from {min_edge_seeds()}"
        )
    return "".join(f"; {w}" for w in out)


def _task_claim(name, a, edges, task_edges=None, why=None, seeds=None):
    """``linear_on_tasks:name``: slope in (0.5, 1.5) over all rows of the task grid, judged
    under both windows (settled primary) and, where the runs were judged at several rise
    thresholds (the configured one primary, then the declared range's ends), under each;
    ``C = c_b / a`` (slope fixed at 1, the configured rise) reported per window as the
    geometric mean over the rows with an edge, with its t interval; ``why`` (`missing_edges`
    per window) and ``seeds`` (a cell's) say which rows lack an edge and why, and whether the
    seeds can give an edge an interval at all."""
    rises = sorted(
        {k[2] for k in (task_edges or {}) if k[0] == name},
        key=lambda x: (x != _primary_rise(task_edges, name), x),
    )

    fid = f"spike_boundary.linear_on_tasks:{name}"

    def one(window, rise=None):
        cb = edges[(name, window, "init")] if rise is None else task_edges[(name, window, rise)]
        return slope_judgement(a, cb, BANDS["linear"], fid)

    factors: dict = {"window": WINDOWS}
    if rises:
        factors["rise"] = tuple(rises)
    primary, js = readings(one, factors)
    j = js[primary]
    n_rows = int(np.isfinite(edges[(name, "settled", "init")]).sum())
    beside = "; ".join(
        f"{k}: {v.estimate:.3g} [{v.low:.3g}, {v.high:.3g}]" for k, v in js.items() if k != primary
    )
    C = {w: task_C(a, edges[(name, w, "init")]) for w in WINDOWS}
    Cw = "; ".join(f"{w} {v[0]:.3g} [{v[1]:.3g}, {v[2]:.3g}]" for w, v in C.items())
    return judged(
        fid,
        f"{name}: the spike boundary is linear: slope ({primary}) {j.estimate:.3g} "
        f"(95% [{j.low:.3g}, {j.high:.3g}], {n_rows} rows with an edge); claim slope "
        f"in {BANDS['linear']}; other readings: {beside}; C = c_b / (1 - beta1) "
        f"(geometric mean over rows, 95%): {Cw}{_missing_words(a, why, seeds)}",
        j,
        measure=stats.measure_of(FINDING_MEASURES, fid),
        readings=js,
        extra={
            "slopes": {k: [v.estimate, v.low, v.high] for k, v in js.items()},
            "C": C,
            "edges": {w: [float(x) for x in edges[(name, w, "init")]] for w in WINDOWS},
            **({"rows_without_edge": why} if why is not None else {}),
            **({"seeds": seeds, "edge_interval_seeds": min_edge_seeds()} if seeds else {}),
        },
    )


def _primary_rise(task_edges, name) -> str | None:
    """The rise reading whose edges are the task's primary ones (the first judged)."""
    keys = [k[2] for k in (task_edges or {}) if k[0] == name]
    return keys[0] if keys else None


def task_C(a, cb) -> list[float]:
    """``C = c_b / a`` at slope 1: ``[geometric mean, low, high]`` over the rows with an edge
    (the Student t interval of the mean of ``log10 C``, the ``mean_threshold`` rule's); ``nan``
    with fewer than two rows."""
    lc = np.log10(np.asarray(cb, float) / np.asarray(a, float))
    lc = lc[np.isfinite(lc)]
    if lc.size < 2:
        return [float(10 ** lc[0]) if lc.size else math.nan, math.nan, math.nan]
    j = stats.judge("mean_threshold", lc, threshold=0.0, direction=">")
    return [float(10**j.estimate), float(10**j.low), float(10**j.high)]


def _tasks_C_claim(names, a_of, edges, seed):
    """``C_differs_between_tasks``: per row, ``log C`` of another task minus the first's outside
    [-C_SHIFT, C_SHIFT] (``relevant_difference``), judged under every window and every pair of
    the comparison set (`task_pairs()`: each later task against the first; the first pair, the
    finding's first declaration, primary)."""
    first = names[0]
    a = a_of[first]
    pairs = task_pairs(names)

    fid = "spike_boundary.C_differs_between_tasks"

    def one(window, pair):
        second = pairs[pair]
        d = np.log(edges[(second, window, "init")] / edges[(first, window, "init")])
        # the first pair's generator is the one it had before the comparison set was a reading
        labels = (window,) if pair == next(iter(pairs)) else (window, pair)
        return stats.judge(
            _rule(fid, "outside"), d, threshold=(-C_SHIFT, C_SHIFT), rng=_rng(seed, fid, *labels)
        )

    primary, js = readings(one, {"window": WINDOWS, "pair": tuple(pairs)})
    j = js[primary]
    second = pairs[primary.split(", ")[1]]
    return judged(
        fid,
        f"per row 1 - beta1 ({', '.join(f'{v:g}' for v in a)}), log C({second}) - "
        f"log C({first}) = {j.estimate:.3g} (95% [{j.low:.3g}, {j.high:.3g}], {j.n} "
        f"rows with an edge on both, {primary}); claim: C depends on the task, "
        f"outside [-{C_SHIFT:g}, {C_SHIFT:g}]; the comparison set is a reading (every later "
        f"task against {first})",
        j,
        measure=stats.measure_of(FINDING_MEASURES, fid),
        readings=js,
    )


def task_pairs(names) -> dict[str, str]:
    """The comparison set of ``C_differs_between_tasks``: reading name ``"<task> vs <first>"``
    -> task, for each task after the first (in the run's order; the first pair primary).

    Parameters
    ----------
    names : sequence of str
        The run's network tasks, at least two, the reference first.

    Returns
    -------
    dict
        Reading name to the task compared with ``names[0]``.
    """
    if len(names) < 2:
        raise InputError(f"names={list(names)!r}: the comparison needs at least two tasks")
    return {f"{n} vs {names[0]}": n for n in names[1:]}


def _level(a_of, edges) -> float:
    if "n2" not in a_of:
        return math.nan
    cb = edges[("n2", "settled", "orbit")]
    keep = _rows(a_of["n2"], ROWSETS[0]) & np.isfinite(cb)
    with np.errstate(divide="ignore"):
        lv = np.log10(turn_growth(a_of["n2"][keep], cb[keep]))
    lv = lv[np.isfinite(lv)]
    return float(10 ** lv.mean()) if lv.size else math.nan


def _factors(start=True):
    f = {"window": WINDOWS, "rows": ROWSETS}
    return f | {"start": tuple(f"{s} start" for s in STARTS)} if start else f


def _edge(edges, name, window, start):
    return edges[(name, window, start.removesuffix(" start"))]


def _slope_claim(cid, what, name, a, edges, band, power):
    """A slope finding of a 1-D map under every reading; beside it ``C = c_b / a^power`` (the
    paper's law with the slope fixed at ``power``) per reading, the geometric mean over the
    reading's rows with an edge and its t interval (:func:`task_C`)."""

    def one(window, rows, start):
        keep = _rows(a, rows)
        return slope_judgement(a[keep], _edge(edges, name, window, start)[keep], band, cid)

    primary, js = readings(one, _factors())
    j = js[primary]
    C = {}
    for combo in itertools.product(*_factors().values()):
        keep = _rows(a, combo[1])
        C[", ".join(combo)] = task_C(a[keep] ** power, _edge(edges, name, combo[0], combo[2])[keep])
    c = C[primary]
    n_rows = int(np.isfinite(_edge(edges, name, "settled", "orbit")[_rows(a, ROWSETS[0])]).sum())
    beside = "; ".join(
        f"{k}: {v.estimate:.3g} [{v.low:.3g}, {v.high:.3g}]" for k, v in js.items() if k != primary
    )
    return judged(
        cid,
        f"{what}: boundary slope ({primary}) {j.estimate:.3g} (95% [{j.low:.3g}, "
        f"{j.high:.3g}], {n_rows} rows); claim slope in ({band[0]:g}, {band[1]:g}); "
        f"C = c_b / (1 - beta1)^{power:g} (slope fixed at {power:g}; geometric mean over the "
        f"rows with an edge, 95%) {c[0]:.3g} [{c[1]:.3g}, {c[2]:.3g}]; other readings: {beside}",
        j,
        measure=stats.measure_of(FINDING_MEASURES, cid),
        readings=js,
        extra={"slopes": {k: [v.estimate, v.low, v.high] for k, v in js.items()}, "C": C},
    )


def _findings(names, a_of, edges, seed):
    out = []
    if "n2" in names:
        out.append(
            _slope_claim(
                "spike_boundary.cubic_quadratic",
                "n = 2: the 1-D quadratic's boundary is cubic",
                "n2",
                a_of["n2"],
                edges,
                BANDS["cubic"],
                3.0,
            )
        )
        out.append(_level_claim(a_of["n2"], edges))
    big = sorted(float(n[1:]) for n in names if float(n[1:]) > 2)
    for n in big:
        out.append(
            _slope_claim(
                f"spike_boundary.near_linear:n{n:g}",
                f"n = {n:g}: the boundary of |x|^n is near-linear",
                f"n{n:g}",
                a_of[f"n{n:g}"],
                edges,
                BANDS["linear"],
                1.0,
            )
        )
    if len(big) >= 2:
        lo, hi = f"n{big[0]:g}", f"n{big[-1]:g}"
        a = a_of[lo]

        def one(window, rows, start):
            keep = _rows(a, rows)
            d = np.log(_edge(edges, hi, window, start) / _edge(edges, lo, window, start))[keep]
            fid = "spike_boundary.C_moves_with_n"
            return stats.judge(
                _rule(fid, "outside"),
                d,
                threshold=(-C_SHIFT, C_SHIFT),
                rng=_rng(seed, fid, window, rows, start),
            )

        primary, js = readings(one, _factors())
        j = js[primary]
        out.append(
            judged(
                "spike_boundary.C_moves_with_n",
                f"C (slope fixed at 1) moves with n: per row log C(n={big[-1]:g}) - "
                f"log C(n={big[0]:g}) = {j.estimate:.3g} (95% [{j.low:.3g}, "
                f"{j.high:.3g}], {j.n} rows, {primary}); claim outside "
                f"[-{C_SHIFT:g}, {C_SHIFT:g}]",
                j,
                measure=stats.measure_of(FINDING_MEASURES, "spike_boundary.C_moves_with_n"),
                readings=js,
            )
        )
    return out


def level_interval(a, cb) -> list[float]:
    """The linear theory's growth per slow turn ``2 pi delta/omega`` on the edges ``cb`` of the
    rows ``a``: ``[10^mean, 10^low, 10^high]`` of its ``log10`` over the rows with an edge
    (the Student t interval of the mean, the ``mean_threshold`` rule's); ``nan`` with fewer
    than two rows."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lv = np.log10(turn_growth(a, cb))
    lv = lv[np.isfinite(lv)]
    if lv.size < 2:
        return [math.nan] * 3
    j = stats.judge("mean_threshold", lv, threshold=0.0, direction=">")
    return [float(10**j.estimate), float(10**j.low), float(10**j.high)]


def _level_claim(a, edges):
    """``edge_level``: the theory's level on the measured edge, an open measurement (no
    derivation says which level the edge sits at), with its interval under every reading."""
    levels = {}
    for combo in itertools.product(*_factors().values()):
        window, rows, start = combo
        keep = _rows(a, rows)
        levels[", ".join(combo)] = level_interval(a[keep], _edge(edges, "n2", window, start)[keep])
    primary = next(iter(levels))
    lv = levels[primary]
    beside = "; ".join(
        f"{k}: {v[0]:.3g} [{v[1]:.3g}, {v[2]:.3g}]" for k, v in levels.items() if k != primary
    )
    window, rows, start = primary.split(", ")
    keep = _rows(a, rows)
    cb = _edge(edges, "n2", window, start)[keep]
    has = np.isfinite(cb)
    order = np.argsort(a[keep][has])
    per_row = {
        "one_minus_beta1": [float(x) for x in a[keep][has][order]],
        "level": [float(x) for x in turn_growth(a[keep][has], cb[has])[order]],
    }
    drift = (
        f"; per row from {per_row['level'][0]:.3g} at 1 - beta1 = "
        f"{per_row['one_minus_beta1'][0]:.3g} to {per_row['level'][-1]:.3g} at "
        f"{per_row['one_minus_beta1'][-1]:.3g}"
        if per_row["level"]
        else ""
    )
    return Claim(
        id="spike_boundary.edge_level",
        statement=f"n = 2: on the measured edge ({primary}) the linear theory's growth per slow "
        f"turn 2 pi delta/omega has level {lv[0]:.3g} (95% [{lv[1]:.3g}, {lv[2]:.3g}]; "
        f"geometric mean over the rows with an edge, Student t interval of the mean log10{drift}); "
        "an open measurement: no derivation places the edge on a level curve of the linear "
        f"theory; other readings: {beside}",
        measured=lv[0],
        expected=None,
        tolerance={"level": levels, "per_row": per_row},
        passed=True,
        kind="measurement",
        interval=lv[1:],
    )


def _check_claim(r) -> Claim:
    err = np.abs(np.log(np.asarray(r["c_sim"]) / np.asarray(r["c_theory"])))
    worst = float(np.max(err)) if np.all(np.isfinite(err)) else float("inf")
    return Claim(
        id="spike_boundary.theory_matches_simulation",
        statement=(
            "on the quadratic with eps share r, the stability boundary 1 - beta2 of "
            "the derived cubic (Schur-Cohn) equals the one found by bisection on "
            "the simulated growth rate of the exact Adam map: largest "
            f"|log(c_sim / c_theory)| over {len(err)} (1 - beta1, r) cells"
        ),
        measured=worst,
        expected=0.0,
        tolerance=CHECK_TOL,
        passed=worst <= CHECK_TOL,
    )


def _theory_arrays(names, level: float) -> dict:
    a = np.logspace(-3, 0, 61)[:-1]
    c = np.logspace(-7, 0, 71)[:-1]
    out = {"theory_a": a, "theory_c": c, "fitted_level": np.asarray(level)}
    for name in names:
        out[f"{name}__theory_turn_growth"] = np.minimum(
            2 * np.pi * spiral_ratio(a[:, None], c[None, :], float(name[1:]), 0.0), 1e6
        )
    return out

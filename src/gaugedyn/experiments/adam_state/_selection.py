"""The candidate family and the selection rules of ``shared_representation`` (`family()`,
`properties()`, `choose()`, `choose_readings()`, `reading_picks()`, `primary_strength()`):
plain Python on calibration rows, kept apart from the torch-backed stages (`._stages`, which
re-exports them) so that planning a run's tasks and declaring its controls (what ``gaugedyn
publish`` reads) import no torch."""

from __future__ import annotations

import itertools

from ._protocol import DOSE_FRACTION, STRENGTHS


def _as_list(v) -> list:
    return list(v) if isinstance(v, list | tuple) else [v]


def cand_name(c: dict) -> str:
    return f"{c['acquisition']}-d{c['d_Z']}-lr{c['lr']:g}-{c['eval']}"


def family(hp: dict) -> list[dict]:
    """The candidate set-ups of ``hp``'s family lists, in the declared order (which breaks
    ties): acquisition meaning x ``d_Z`` x learning rate x evaluation."""
    out = []
    evals = _as_list(hp["readout"])
    for m, d, lr in itertools.product(
        _as_list(hp["acquisition"]), _as_list(hp["d_Z"]), _as_list(hp["lr"])
    ):
        for e in evals if m == "gain" else ["common" if "common" in evals else evals[0]]:
            c = {"acquisition": m, "d_Z": int(d), "lr": float(lr), "eval": e}
            out.append(c | {"name": cand_name(c)})
    return out


def primary_strength(fractions: dict[str, float]) -> str:
    """The declared strength whose specialization-lost fraction is closest to
    `._protocol.DOSE_FRACTION` (ties: the weaker, the declared order)."""
    names = [k for k in STRENGTHS if k in fractions]
    return min(names, key=lambda k: (abs(fractions[k] - DOSE_FRACTION), names.index(k)))


def properties(row: dict, hp: dict) -> dict:
    """The defining properties of a candidate's calibration row: ``matched`` (both endpoint
    intervals, ``r_f`` and ``r_o`` by the heads, inside ``+-tolerance``), ``specialized`` (mean
    probe specialization at least ``spec_level`` in both routes) and ``conflicting`` (the
    acquisition route's mean ``-C/S`` at least ``conflict_level``)."""
    tol = hp["tolerance"]
    matched = all(-tol < iv[1] and iv[2] < tol for iv in row["endpoint_intervals"])
    spec = min(row["probe_specialization"].values()) >= hp["spec_level"]
    conf = row["cancellation"]["acquisition"] >= hp["conflict_level"]
    return {"matched": bool(matched), "specialized": bool(spec), "conflicting": bool(conf)}


def choose(rows: list[dict]) -> dict:
    """The pre-specified rule: among the candidates with every defining property, the smallest
    endpoint mismatch (ties: the family's order). If none has them all, there is no choice
    (``choice = None``) and the run measures the *closest* candidate (most properties, then
    smallest mismatch) only to report it; its findings are UNRESOLVED."""
    if not rows:
        raise ValueError("empty candidate family")
    pool = [r for r in rows if r["eligible"]]
    if pool:
        best = min(pool, key=lambda r: (r["mismatch"], rows.index(r)))
        return {
            "choice": best["name"],
            "measured": best["name"],
            "w_star": best["w_star"],
            "strength": best.get("strength", "mild"),
            "rule": "every defining property; smallest endpoint mismatch",
        }
    near = min(rows, key=lambda r: (-sum(r["properties"].values()), r["mismatch"], rows.index(r)))
    return {
        "choice": None,
        "measured": near["name"],
        "w_star": near["w_star"],
        "strength": near.get("strength", "mild"),
        "rule": "no candidate has every defining property (matched endpoints, probe "
        "specialization, conflicting gradients); the closest is measured, not judged",
    }


def choose_readings(rows: list[dict]) -> dict[str, dict]:
    """The rule of `choose()` applied to each acquisition meaning's rows alone (in the
    family's order): ``{meaning: choice}``. Every meaning whose choice is not ``None`` is a
    reading of the protocol."""
    meanings = list(dict.fromkeys(r["acquisition"] for r in rows))
    return {m: choose([r for r in rows if r["acquisition"] == m]) for m in meanings}


def reading_picks(cal: dict) -> dict[str, dict]:
    """The set-ups a run measures, primary first: with a choice, every acquisition meaning
    with its own chosen candidate (`choose_readings()`; the whole family's choice's
    meaning primary); without one, the closest candidate only (its findings unresolved).
    Each value has ``measured``, ``w_star`` and ``strength``."""
    rows = cal["candidates"]
    measured = next(r for r in rows if r["name"] == cal["measured"])
    if not cal.get("choice"):
        return {measured["acquisition"]: {k: cal[k] for k in ("measured", "w_star", "strength")}}
    per = cal.get("readings") or choose_readings(rows)
    primary = measured["acquisition"]
    order = [primary] + [m for m in per if m != primary]
    return {
        m: {k: per[m][k] for k in ("measured", "w_star", "strength")}
        for m in order
        if per[m].get("choice")
    }

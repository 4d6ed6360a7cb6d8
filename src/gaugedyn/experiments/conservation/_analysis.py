"""The claims of ``conservation_laws`` from its task results (``PROTOCOL.md``): checks of the
instruments and of every count's stability, findings on the counts, the correspondence of
symmetries and laws and the drift's order, and the measurements behind the tables."""

from __future__ import annotations

import numpy as np

from ...harness import Claim, judged
from ...stats import generator, judge, measure_of
from . import _protocol as pr

TOL = 1e-6
"""A law's gradient may have at most this share of its norm inside the Lie trace (the
``tol`` of `gaugedyn.gauge.conservation_laws()`)."""


def _value(res: dict, key: str) -> float:
    return float(np.asarray(res[key]))


def _check(id: str, statement: str, measured, expected, passed: bool, tol=None) -> Claim:
    return Claim(
        id=f"conservation_laws.{id}",
        statement=statement,
        measured=measured,
        expected=expected,
        tolerance=tol,
        passed=bool(passed),
    )


def _measure(id: str, statement: str, measured, expected=None) -> Claim:
    return Claim(
        id=f"conservation_laws.{id}",
        statement=statement,
        measured=measured,
        expected=expected,
        tolerance=None,
        passed=True,
        kind="measurement",
    )


def _counts(tasks, results, readings) -> dict:
    """Per architecture (name): its family, derived numbers, and per reading the count."""
    from ._architectures import build

    out = {}
    for t, r in zip(tasks, results):
        if t["part"] != "count":
            continue
        a = build(t["spec"])
        row = {
            "family": a.family,
            "why": a.why,
            "derived_laws": a.laws,
            "derived_symmetries": a.symmetries,
            "group": a.extra.get("group"),
            "dimension": (
                sum(int(np.prod(s)) for s in a.params.values())
                if a.params is not None
                else sum(p.numel() for p in a.model.parameters())
            ),
        }
        for reading in readings:
            row[reading] = {
                k.split("_", 1)[1]: np.asarray(v)
                for k, v in r.items()
                if k.startswith(f"{reading}_")
            }
        out[a.name] = row
    return out


def _count_findings(counts: dict, readings) -> list[Claim]:
    out = []
    for fam in pr.FAMILIES:
        rows = {n: c for n, c in counts.items() if c["family"] == fam}
        if not rows:
            continue
        judgements, notes = {}, []
        for reading in readings:
            diff = max(abs(float(c[reading]["laws"]) - c["derived_laws"]) for c in rows.values())
            judgements[reading] = judge(
                "deterministic", [diff], threshold=pr.COUNT_MARGIN, direction="<"
            )
            notes.append(f"{reading} fields: largest |measured - derived| {diff:g}")
        primary = judgements[readings[0]]
        names = ", ".join(
            f"{n}: {int(c[readings[0]]['laws'])} (derived {c['derived_laws']})"
            for n, c in rows.items()
        )
        out.append(
            judged(
                f"conservation_laws.count:{fam}",
                f"{fam}: the number of independent conservation laws (D minus the Lie trace's "
                f"dimension at generic points) equals the derived count at every size: {names}; "
                + "; ".join(notes)
                + " (rule deterministic: HELD below 0.5)",
                primary,
                readings=judgements if len(readings) > 1 else None,
                measure=measure_of(pr.FINDING_MEASURES, f"conservation_laws.count:{fam}"),
                expected=f"< {pr.COUNT_MARGIN:g} (every count as derived)",
            )
        )
    return out


def _noether_value(c: dict, reading: str) -> float:
    r = c[reading]
    laws, sym = float(r["laws"]), float(r["symmetries"])
    return (
        abs(laws - float(r["gen_symmetric"]))
        + abs((sym - laws) - float(r["gen_silent"]))
        + abs(sym - float(r["gen_rank"]))
        + float(float(r["gen_inside"]) > TOL)
    )


def _noether_findings(counts: dict, readings) -> list[Claim]:
    out = []
    for fam in pr.FAMILIES:
        rows = {
            n: c for n, c in counts.items() if c["family"] == fam and "gen_rank" in c[readings[0]]
        }
        if not rows:
            continue
        judgements = {
            reading: judge(
                "deterministic",
                [max(_noether_value(c, reading) for c in rows.values())],
                threshold=pr.COUNT_MARGIN,
                direction="<",
            )
            for reading in readings
        }
        detail = "; ".join(
            f"{n}: {int(c[readings[0]]['symmetries'])} symmetries = "
            f"{int(c[readings[0]]['gen_symmetric'])} symmetric (laws) + "
            f"{int(c[readings[0]]['gen_silent'])} antisymmetric (silent)"
            for n, c in rows.items()
        )
        out.append(
            judged(
                f"conservation_laws.noether:{fam}",
                f"{fam}: symmetries and laws correspond as Noether's theorem for gradient flow says: "
                "the group's generators span every infinitesimal symmetry, the symmetric ones are "
                "the laws' gradients (orthogonal to the Lie trace, as many as the laws) and the "
                f"antisymmetric ones (isometries) are exactly the symmetries without law: {detail} "
                "(rule deterministic on the number of mismatches: HELD below 0.5)",
                judgements[readings[0]],
                readings=judgements if len(readings) > 1 else None,
                measure=measure_of(pr.FINDING_MEASURES, f"conservation_laws.noether:{fam}"),
                expected="< 0.5 (no mismatch)",
            )
        )
    return out


def _filling_finding(counts: dict, readings) -> list[Claim]:
    rows = {n: c for n, c in counts.items() if c["family"] == "filling"}
    if not rows:
        return []
    ((name, c),) = rows.items()
    judgements = {}
    for reading in readings:
        r = c[reading]
        value = abs(float(r["laws"]) - c["group"]) + float(float(r["symmetries"]) <= c["group"])
        judgements[reading] = judge(
            "deterministic", [value], threshold=pr.COUNT_MARGIN, direction="<"
        )
    r = c[readings[0]]
    return [
        judged(
            "conservation_laws.beyond_identifiability",
            f"{name}: a polynomial network wider than the maps it can express has more null "
            f"directions than symmetries of its group ({int(r['symmetries'])} against the "
            f"{c['group']} scalings: the fibre of its parametrisation), yet only the group's "
            f"{c['group']} laws: {int(r['laws'])} measured; the extra directions are reached by the "
            "brackets (rule deterministic on |laws - scalings| plus 1 if no extra direction: HELD "
            "below 0.5)",
            judgements[readings[0]],
            readings=judgements if len(readings) > 1 else None,
            measure=measure_of(pr.FINDING_MEASURES, "conservation_laws.beyond_identifiability"),
            expected="< 0.5",
        )
    ]


def _stability(counts: dict, readings) -> list[Claim]:
    gaps, bad = [], []
    for n, c in counts.items():
        for reading in readings:
            r = c[reading]
            gaps.append(float(r["gap"]))
            if not (float(r["stable"]) and float(r["gap"]) >= pr.MIN_GAP):
                bad.append(f"{n} ({reading})")
    out = [
        _check(
            "stable",
            "every count of the catalogue, every reading: the "
            "generic count reached at two points or more saturated by half their data, "
            f"and every rank decision's singular-value gap at least {pr.MIN_GAP:g} "
            "(float64); measured: the smallest gap"
            + (f"; unstable: {', '.join(bad)}" if bad else ""),
            min(gaps) if gaps else float("nan"),
            f">= {pr.MIN_GAP:g}",
            not bad and bool(gaps),
            pr.MIN_GAP,
        )
    ]
    inside = [
        float(c[reading]["known_inside"])
        for c in counts.values()
        for reading in readings
        if "known_inside" in c[reading]
    ]
    if inside:
        out.append(
            _check(
                "known_laws",
                "every closed-form law of the catalogue (the units' "
                "delta, the gl and attention matrices) is conserved: the largest share "
                "of a law's gradient inside the Lie trace",
                max(inside),
                f"<= {TOL:g}",
                max(inside) <= TOL,
                TOL,
            )
        )
    return out


def slope_rule() -> str:
    """The drift slopes' rule, their declared measure's choice for a band (``PROTOCOL.md``)."""
    return measure_of(pr.FINDING_MEASURES, "conservation_laws.drift_slope:*").rule("inside")


def _recorder(tasks, results) -> tuple[list[Claim], dict]:
    from ._networks import recorder_model

    claims, arrays, bad = [], {}, []
    names = []
    for t, r in zip(tasks, results):
        if t["part"] != "recorder":
            continue
        m = recorder_model(t["model"])
        laws, sym = int(_value(r, "count_laws")), int(_value(r, "count_symmetries"))
        rank, count = int(_value(r, "count_known_rank")), int(_value(r, "count_known_count"))
        inside = _value(r, "count_known_inside")
        missing = laws - rank if inside <= TOL else None
        names.append(t["model"])
        arrays[f"recorder_{t['model']}"] = np.array(
            [laws, sym, rank, count, inside, _value(r, "count_gap")]
        )
        if not (laws == m.laws and sym == m.symmetries and _value(r, "count_stable")):
            bad.append(t["model"])
        claims.append(
            _measure(
                f"recorder:{t['model']}",
                f"{t['model']}: {laws} laws (derived {m.laws}: {m.why}), {sym} symmetries (derived "
                f"{m.symmetries}); the recorder's {count} invariant functions have rank {rank}"
                + (
                    ""
                    if inside <= TOL
                    else f" and are not all conserved (largest share inside the "
                    f"Lie trace {inside:.2g})"
                )
                + f"; recorded: {m.recorded}; gap {_value(r, 'count_gap'):.2g}; measured: the laws "
                "the recorder misses",
                missing if missing is not None else float("nan"),
                laws - min(laws, rank),
            )
        )
    if names:
        claims.insert(
            0,
            _check(
                "recorder_counts",
                "every recorder model's count (laws and "
                "symmetries) equals the number docs/gauge-recorder.md states, "
                "and is stable" + (f"; differing: {', '.join(bad)}" if bad else ""),
                len(bad),
                0,
                not bad,
            ),
        )
        arrays["recorder_models"] = np.array(names)
    return claims, arrays


def _drift(tasks, results, readings, seed) -> tuple[list[Claim], dict]:
    by: dict = {}
    for t, r in zip(tasks, results):
        if t["part"] == "drift":
            by.setdefault(t["model"], []).append(r)
    claims: list[Claim] = []
    arrays: dict = {}
    for model, parts in by.items():
        gaps = [float(np.max(p[f"{rd}_gap"])) for p in parts for rd in readings]
        frozen = max(float(np.max(p[f"{rd}_frozen"])) for p in parts for rd in readings)
        claims.append(
            _check(
                f"delta_prediction:{model}",
                f"{model}, GD at every step size of every reading: "
                "every recorded invariant's change per step (every unit and head) equals eta^2 k to "
                "1e-10 relative plus 4 eps times its size; largest error in units of that allowance "
                "(at most 1 passes)"
                + (
                    f"; every frozen entry's gradient is rounding, at most "
                    f"{pr.FROZEN_TOL:g} of the largest other gradient "
                    f"(measured {frozen:.2g})"
                    if frozen
                    else ""
                ),
                max(gaps),
                "<= 1",
                max(gaps) <= 1.0 and frozen <= pr.FROZEN_TOL,
                1e-10,
            )
        )
        groups = sorted({k.split("|")[1] for p in parts for k in p if k.endswith("|slope")})
        for g in groups:
            claims += _drift_group(tasks, model, g, parts, readings, seed, arrays)
    arrays["drift_models"] = np.array(list(by))
    return claims, arrays


def _drift_group(
    tasks, model: str, g: str, parts: list, readings, seed, arrays: dict
) -> list[Claim]:
    """One model's group of recorded invariants: its per-unit slopes and its drift slope
    finding under every reading (the arrays it shows are added to ``arrays``)."""
    claims: list[Claim] = []
    judgements, slopes = {}, {}
    for rd in readings:
        kind = next(k.split("|")[2] for k in parts[0] if k.startswith(f"{rd}|{g}|"))
        key = f"{rd}|{g}|{kind}"
        slopes[rd] = np.concatenate([np.atleast_1d(p[f"{key}|slope"]) for p in parts])
        judgements[rd] = judge(
            slope_rule(),
            slopes[rd],
            threshold=pr.SLOPE_BANDS[rd],
            rng=generator(seed, "conservation_laws", "drift_slope", model, g, rd),
        )
        arrays[f"drift_{model}_{g}_{rd}"] = np.concatenate(
            [np.atleast_2d(p[f"{key}|drift"]) for p in parts]
        )
        arrays[f"eta_{rd}"] = parts[0][f"{rd}_eta"]
        units = np.concatenate([np.atleast_1d(p[f"{key}|unit_slopes"]) for p in parts])
        lo5, med, hi95 = np.percentile(units, [5, 50, 95]) if units.size else [np.nan] * 3
        claims.append(
            _measure(
                f"unit_slopes:{model}:{g}:{rd}",
                f"{model}, group {g} ({kind}), {rd} "
                f"reading: median over units and seeds of each unit's own slope, with its "
                f"5-95% range [{lo5:.3g}, {hi95:.3g}] ({units.size} unit fits; units whose "
                "change vanishes are left out)",
                float(med),
            )
        )
    first = readings[0]
    band = pr.SLOPE_BANDS[first]
    claims.append(
        judged(
            f"conservation_laws.drift_slope:{model}:{g}",
            f"{model}, the recorded invariants of group {g} ({kind}): under full-batch GD "
            f"from one initial model per seed at {arrays[f'eta_{first}'].size} step sizes, "
            "their drift (norm over the units of the summed change) scales as eta^2: slope "
            f"inside [{band[0]:g}, {band[1]:g}] over {_steps(tasks)} steps"
            + (
                f"; per unit time over a fixed time, inside {pr.SLOPE_BANDS['time']}"
                if "time" in readings
                else ""
            )
            + f" (per-seed least-squares slopes, {slopes[first].size} seeds; rule "
            f"{slope_rule()})",
            judgements[first],
            readings=judgements if len(readings) > 1 else None,
            measure=measure_of(
                pr.FINDING_MEASURES, f"conservation_laws.drift_slope:{model}:{g}"
            ).at(2.0 if first == "steps" else 1.0),
            expected=f"inside {band} (second order: {2 if first == 'steps' else 1})",
            extra={"paper_value": 2.0 if first == "steps" else 1.0},
        )
    )
    return claims


def _steps(tasks) -> int:
    """The drift runs' steps per size (``drift_steps``)."""
    return next((t["drift_steps"] for t in tasks if t["part"] == "drift"), 0)


def conservation_laws(config, tasks, results, seed) -> tuple:
    readings = list(config["readings"])
    counts = _counts(tasks, results, readings)
    claims = _stability(counts, readings)
    rec_claims, rec_arrays = _recorder(tasks, results)
    drift_claims, drift_arrays = _drift(tasks, results, list(config["drift_readings"]), seed)
    claims += (
        _count_findings(counts, readings)
        + _noether_findings(counts, readings)
        + _filling_finding(counts, readings)
        + drift_claims
    )
    for name, c in counts.items():
        r = c[readings[0]]
        other = "".join(f"; {rd} fields: {int(c[rd]['laws'])}" for rd in readings[1:])
        claims.append(
            _measure(
                f"count:{name}",
                f"{name}: D = {c['dimension']}; span {int(r['span'])}, Lie "
                f"trace {int(r['lie'])} (depth {int(r['depth'])}); {int(r['laws'])} laws (derived "
                f"{c['derived_laws']}{other}); {int(r['symmetries'])} symmetries (derived "
                f"{c['derived_symmetries']}), {int(r['symmetries'] - r['laws'])} without law; gap "
                f"{float(r['gap']):.2g}; {c['why']}",
                int(r["laws"]),
                c["derived_laws"],
            )
        )
    claims += rec_claims
    arrays = _count_arrays(counts, readings) | rec_arrays | drift_arrays
    arrays |= _captions() | {"rtol": np.array(float(config["rtol"]))}
    wall: dict = {}
    for t, r in zip(tasks, results):
        wall[t["part"]] = wall.get(t["part"], 0.0) + float(r["wall_time_s"])
    return arrays, claims, {"wall_time_s": wall}


def _count_arrays(counts: dict, readings) -> dict:
    names = list(counts)
    first = readings[0]
    return {
        "count_names": np.array(names),
        "count_families": np.array([counts[n]["family"] for n in names]),
        "count_measured": np.array(
            [[float(counts[n][rd]["laws"]) for rd in readings] for n in names]
        ),
        "count_derived": np.array([counts[n]["derived_laws"] for n in names], dtype=float),
        "count_symmetries": np.array([float(counts[n][first]["symmetries"]) for n in names]),
        "count_gap": np.array([float(counts[n][first]["gap"]) for n in names]),
        "count_near": np.array(
            [
                np.fmax.reduce(counts[n][first]["near"][:, 2:], axis=0)
                if counts[n][first]["near"].size
                else [np.nan] * 2
                for n in names
            ]
        ),
        "count_kept": np.array(
            [np.fmin.reduce(counts[n][first]["near"][:, :2], axis=0) for n in names]
        ),
    }


def _captions() -> dict:
    return {
        "caption_conservation_laws_counts": np.array(
            "Measured number of independent conservation laws against the derived count, per "
            "architecture of the catalogue (function fields; the diagonal is equality), and the "
            "infinitesimal symmetries beside them."
        ),
        "caption_conservation_laws_gaps": np.array(
            "Per architecture, the smallest kept singular value (relative to the largest) of "
            "every rank decision and the largest discarded one: the gap between them, at least "
            "1e6, is what makes each count a decision."
        ),
        "caption_conservation_laws_drift": np.array(
            "Drift of the recorded invariants of each group under full-batch GD against the "
            "step size, relative to its value at the largest step, one line per seed and group: "
            "over a fixed number of steps (left; dashed: slope 2) and per unit time over a fixed "
            "time (right; dashed: slope 1)."
        ),
    }

r"""The two stages of ``shared_representation``: calibration over the candidate family, then the
confirmatory measurement of every table on its own seeds.

Calibration seeds and each table's confirmatory seeds come from different streams of the task's
seed (labels ``"calibration"`` and ``("confirm", table)``, `gaugedyn.stats.generator()`), so
no confirmatory network is ever seen by the choice and no two tables share a seed.

The family (`family()`) crosses what *acquisition* means (input gain; label-observation rate
per sample; per step), the representation's capacity ``d_Z``, the learning rate and the
evaluation distribution (``own``/``common``; the two coincide unless acquisition means input
gain, so only ``common`` is kept there). A candidate is chosen **only by its defining
properties** (`properties()`), measured on calibration seeds: matched endpoints, real
specialization (read by the probe, in both routes) and conflicting task gradients (``-C/S`` of
the acquisition route). No outcome a table reports enters the choice. The choice is made once
over the whole family and once per acquisition meaning (`choose_readings()`): every meaning
with a chosen candidate is a *reading* of the protocol, measured on the same confirmatory seeds.

The pulse is a declared dose (`._protocol.STRENGTHS`): every strength is run on Table 2's
seeds; the primary strength of a candidate is the one whose combined pulse removes the declared
fraction `._protocol.DOSE_FRACTION` of the update-formed route's specialization on the
calibration seeds (`primary_strength()`), a property of the pulse, not a finding's outcome.
"""

from __future__ import annotations

import json

import numpy as np
import torch

from ... import adam, stats
from . import _model as sm
from . import _pulses as sp
from ._protocol import (
    CONTROL,
    DOSE_PULSES,
    EVALS,
    INTERVENTIONS,
    MARKS,
    PULSES,
    STRENGTHS,
    TABLES,
)
from ._selection import (  # noqa: F401  (re-exported: the stages' selection rules, torch-free)
    cand_name,
    choose,
    choose_readings,
    family,
    primary_strength,
    properties,
    reading_picks,
)


def torch_gen(seed: np.random.SeedSequence, *labels) -> torch.Generator:
    """A torch generator derived from the task seed and labels (never a constant)."""
    word = int(stats.generator(seed, *labels).integers(0, 2**62))
    return torch.Generator().manual_seed(word)


def pulse_seed(seed: np.random.SeedSequence, *labels) -> int:
    return int(stats.generator(seed, "pulse", *labels).integers(0, 2**62))


def with_candidate(hp: dict, cand: dict, strength: str = "mild") -> dict:
    """``hp`` with the candidate's set-up (meaning, capacity, learning rate) and the pulse of
    the declared ``strength``."""
    return hp | {
        "acquisition": cand["acquisition"],
        "bottleneck": cand["d_Z"],
        "lr": cand["lr"],
        **STRENGTHS[strength],
    }


def dose_fractions(
    hp: dict,
    world: sm.World,
    evals: sm.EvalDraw,
    route: sm.Cohort,
    mode: str,
    seed,
    strengths: dict[str, dict] = STRENGTHS,
) -> dict[str, float]:
    """Per strength (the declared ones by default), the fraction of the route's specialization
    (heads, mean over seeds and directions) that the combined pulse removes:
    ``mean(s_0 - s_T) / mean(s_0)``; every strength on the same pulse batches."""
    out = {}
    for name, values in strengths.items():
        pulse = sp.Pulse(world, evals, hp | values, mode, pulse_seed(seed, "calibration", "dose"))
        res = pulse.run([sp.clone(route)], "combined")["routes"][0]["heads"]
        out[name] = float(np.mean(res["lost"]) / max(float(np.mean(res["s0"])), 1e-12))
    return out


def line_point(a: float) -> dict[str, float]:
    """The point ``a`` of the declared strength line (`._protocol.STRENGTHS`): the others'
    gain and observation rate ``1 - a``, the opposed target's loss weight ``(1 + a) / 2``. At
    ``a = 0`` this is not *no pulse*: it is ``pulse_steps`` updates at equal loss weights with
    every label, a finite change from either route's formation (the update-formed route's
    weight on its favoured target falls from ``w*`` to 1/2)."""
    return {"pulse_gain": 1.0 - a, "pulse_observe": 1.0 - a, "pulse_weight": (1.0 + a) / 2}


def dose_line(
    hp: dict, seed: np.random.SeedSequence, cand: dict, w_star: float, a_values
) -> dict[str, dict[str, float]]:
    """Candidate ``cand``'s formation grown again on the calibration seeds exactly as the
    calibration grows it (`calibrate()`, from the calibration ``seed``), then per route
    (``update``: the update-formed route at ``w_star``; ``acquisition``) the fraction of its
    specialization the combined pulse removes (`dose_fractions()`, the same pulse batches) at
    each point ``a`` of the strength line (`line_point()`; keys ``"a=<a>"``), and, for the
    update-formed route, under ``pulse_steps`` updates of its own formation loss (weight
    ``w_star`` on the favoured target, every label; key ``"own formation"``, two targets).
    At the declared strengths' points it gives the calibration's stored dose fractions."""
    S, grid = hp["calibration_seeds"], hp["w_grid"]
    hpc = with_candidate(hp, cand)
    roles = [("acquisition", 0.5)] + [("update", w) for w in grid]
    record = sm.FormationRecord(every=10**9)
    world, routes, _ = grow(hpc, S, torch_gen(seed, "calibration", "data"), roles, record)
    evals = sm.EvalDraw.draw(world, torch_gen(seed, "calibration", "eval"), hp["eval_n"])
    line = {f"a={a:g}": line_point(a) for a in a_values}
    own = {"own formation": {"pulse_gain": 1.0, "pulse_observe": 1.0, "pulse_weight": 1 - w_star}}
    return {
        "update": dose_fractions(
            hpc,
            world,
            evals,
            routes[f"update@{w_star:g}"],
            cand["eval"],
            seed,
            line | (own if hp["targets"] == 2 else {}),
        ),
        "acquisition": dose_fractions(
            hpc, world, evals, routes["acquisition"], cand["eval"], seed, line
        ),
    }


def grow(
    hp: dict,
    seeds: int,
    gen: torch.Generator,
    roles: list[tuple[str, float]],
    record: sm.FormationRecord | None = None,
) -> tuple[sm.World, dict, sm.Cohort]:
    """World, shared ancestor, then every route formed from it; returns the routes by name."""
    world = sm.World.draw(gen, seeds, hp["dim"], hp["targets"], hp["rho"], hp["sigma"])
    K = hp["targets"]
    anc = sm.init_cohort(gen, seeds, hp, sp.sm.Variant("ancestor", 0, (1.0,) * K, sp.equal(K)))
    sm.train(anc, world, gen, hp["ancestor_steps"], hp["batch"])
    variants = [v for role, w in roles for v in sp.route_variants(role, hp, w)]
    form = sm.replicate(anc, variants)
    sm.train(form, world, gen, hp["formation_steps"], hp["batch"], record)
    names = [f"{role}@{w:g}" if role == "update" else role for role, w in roles]
    return world, sp.split(form, names), anc


def endpoints(pulse: sp.Pulse, c: sm.Cohort) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per readout, readout precisions ``r_f`` and ``r_o`` per seed (mean over directions)."""
    K = c.hp["targets"]
    rs = sm.readouts(c.net, pulse.world, pulse.evals, sp.eval_gains(c, pulse.mode), c.R)
    f = torch.tensor([v.fav for v in c.variants]).repeat(c.seeds)
    rows = torch.arange(f.shape[0])
    out = {}
    for name, r in rs.items():
        rf = r[rows, f].reshape(c.seeds, c.R).double().numpy().mean(1)
        ro = r[rows, (f + 1) % K].reshape(c.seeds, c.R).double().numpy().mean(1)
        out[name] = (rf, ro)
    return out


def _paired(x, y, seed, *labels) -> stats.Interval:
    return stats.mean_difference_ci(x, y, rng=stats.generator(seed, *labels))


def _route_cancellation(record: sm.FormationRecord, S: int, n_routes: int, K: int) -> np.ndarray:
    """``-C/S`` per seed and route (``[S, routes]``, mean over directions)."""
    return record.cancellation().reshape(S, n_routes, K).mean(axis=2)


def calibrate(
    hp: dict, seed: np.random.SeedSequence, cands: list[dict] | None = None, map_=map
) -> dict:
    """Every candidate on the calibration seeds: ``w*`` by the endpoint mismatch (the largest
    route difference of mean ``r_f``, ``r_o`` by the heads) over ``w_grid``; at ``w*`` the
    endpoint intervals, each route's mean specialization by both readouts and each route's
    ``-C/S``; then `properties()` and `choose()`. One formation serves every candidate
    that shares its meaning, ``d_Z`` and learning rate; the formations are independent (each
    from the same calibration stream), so ``map_`` may run them in worker processes with the
    same result."""
    cands = family(hp) if cands is None else cands
    groups: dict[tuple, list[dict]] = {}
    for c in cands:
        groups.setdefault((c["acquisition"], c["d_Z"], c["lr"]), []).append(c)
    jobs = [(hp, seed, members) for members in groups.values()]
    rows = [row for part in map_(_calibrate_group, jobs) for row in part]
    return {
        "candidates": rows,
        **choose(rows),
        "readings": choose_readings(rows),
        "levels": {k: hp[k] for k in ("tolerance", "spec_level", "conflict_level")},
    }


def _calibrate_group(job: tuple) -> list[dict]:
    """The calibration rows of the candidates sharing one formation (see `calibrate()`)."""
    hp, seed, members = job
    S, grid, K = hp["calibration_seeds"], hp["w_grid"], hp["targets"]
    rows = []
    hpc = with_candidate(hp, members[0])
    roles = [("acquisition", 0.5)] + [("update", w) for w in grid]
    record = sm.FormationRecord(every=10**9)
    world, routes, _ = grow(hpc, S, torch_gen(seed, "calibration", "data"), roles, record)
    cancel = _route_cancellation(record, S, len(roles), K)
    evals = sm.EvalDraw.draw(world, torch_gen(seed, "calibration", "eval"), hp["eval_n"])
    for cand in members:
        pulse = sp.Pulse(world, evals, hpc, cand["eval"], 0)
        a = routes["acquisition"]
        ra = endpoints(pulse, a)
        miss = []
        for w in grid:
            heads = endpoints(pulse, routes[f"update@{w:g}"])["heads"]
            miss.append(
                max(
                    abs(np.mean(ra["heads"][0] - heads[0])), abs(np.mean(ra["heads"][1] - heads[1]))
                )
            )
        i_star = int(np.argmin(miss))
        w_star = float(grid[i_star])
        ru = endpoints(pulse, routes[f"update@{w_star:g}"])
        ivs = [
            _paired(ra["heads"][i], ru["heads"][i], seed, "calibration", cand["name"], i)
            for i in (0, 1)
        ]
        row = cand | {
            "w_star": w_star,
            "mismatch": float(min(miss)),
            "endpoint_intervals": [list(iv) for iv in ivs],
            "probe_specialization": {
                "acquisition": float(np.mean(ra["probe"][0] - ra["probe"][1])),
                "update": float(np.mean(ru["probe"][0] - ru["probe"][1])),
            },
            "heads_specialization": {
                "acquisition": float(np.mean(ra["heads"][0] - ra["heads"][1])),
                "update": float(np.mean(ru["heads"][0] - ru["heads"][1])),
            },
            "cancellation": {
                "acquisition": float(cancel[:, 0].mean()),
                "update": float(cancel[:, 1 + i_star].mean()),
            },
        }
        row["dose"] = dose_fractions(
            hpc, world, evals, routes[f"update@{w_star:g}"], cand["eval"], seed
        )
        row["strength"] = primary_strength(row["dose"])
        row["properties"] = properties(row, hp)
        row["eligible"] = all(row["properties"].values())
        rows.append(row)
    return rows


def _grow_table(hp: dict, table: str, w_star: float, seed) -> tuple:
    roles_of, recorded = TABLES[table]
    roles = [(r, w_star if r == "update" else 0.5) for r in roles_of]
    record = sm.FormationRecord(every=hp["record_every"]) if recorded else None
    world, routes, anc = grow(
        hp, hp["seeds"], torch_gen(seed, "confirm", table, "data"), roles, record
    )
    named = {r: routes[f"update@{w_star:g}" if r == "update" else r] for r in roles_of}
    evals = sm.EvalDraw.draw(world, torch_gen(seed, "confirm", table, "eval"), hp["eval_n"])
    return world, named, anc, record, evals, len(roles)


def _put(out: dict, key: str, res: dict) -> None:
    """Store a comparison's per-readout arrays: ``{key}_a`` (heads) and ``{key}_a_probe``."""
    for ro in sm.READOUTS:
        sfx = "" if ro == "heads" else f"_{ro}"
        r = res[ro]
        out[f"{key}_a{sfx}"], out[f"{key}_b{sfx}"] = r["lost_a"], r["lost_b"]
        for part in ("switch", "specialized"):
            for t in "ab":
                out[f"{key}_{part}_{t}{sfx}"] = r[f"{part}_{t}"].astype(float)


def _endpoint_arrays(out: dict, prefix: str, view: sp.Pulse, routes: dict[str, sm.Cohort]) -> None:
    """``{prefix}_{tag}_f`` and ``_o`` (and ``_probe``): ``r_f``, ``r_o`` per seed of each route."""
    for tag, c in routes.items():
        ends = endpoints(view, c)
        for ro in sm.READOUTS:
            sfx = "" if ro == "heads" else f"_{ro}"
            out[f"{prefix}_{tag}_f{sfx}"], out[f"{prefix}_{tag}_o{sfx}"] = ends[ro]


def dose_response(hp: dict, pulse: sp.Pulse, A: sm.Cohort, U: sm.Cohort) -> tuple[dict, dict]:
    """Every declared strength (`._protocol.STRENGTHS`) x pulse kind x (inherited state,
    reset) on the same routes and pulse batches: arrays ``dose_{strength}_{kind}_{own|reset}``
    (per readout, as `_put()` stores them) and the toolkit's records."""
    out: dict = {}
    records: dict = {}
    for strength, values in STRENGTHS.items():
        view = sp.Pulse(pulse.world, pulse.evals, hp | values, pulse.mode, pulse.seed)
        for kind in DOSE_PULSES:
            for n in ("own", "reset"):
                key = f"dose_{strength}_{kind}_{n}"
                res = sp.compare(view, A, U, n, kind)
                _put(out, key, res)
                records[key] = json.loads(res["records"])
    return out, records


def confirm(
    hp: dict,
    cand: dict,
    w_star: float,
    seed: np.random.SeedSequence,
    tables=tuple(TABLES),
    strength: str = "mild",
) -> dict:
    """Every table on its own ``hp["seeds"]`` confirmatory seeds with the candidate, ``w*`` and
    the primary pulse ``strength``: per-seed arrays (``[S, K]``: seed x direction) keyed by
    table and condition, by both readouts. Table 2's seeds also carry the dose-response
    (`dose_response()`: every declared strength; Table 2's keys are the primary strength's),
    Table 4's the weight-history control's endpoints beside the constant route's
    (``ctl_end_{a|v}_{f|o}``)."""
    hpc = with_candidate(hp, cand, strength)
    out: dict = {}
    records: dict = {}
    for table in tables:
        world, R, anc, record, evals, n_roles = _grow_table(hpc, table, w_star, seed)
        pseed = pulse_seed(seed, "confirm", table)
        pulse = sp.Pulse(world, evals, hpc, cand["eval"], pseed)
        A = R["acquisition"]
        jobs = []
        if table == "t2":
            for mode in EVALS:
                view = sp.Pulse(world, evals, hpc, mode, pseed)
                _endpoint_arrays(out, f"end_{mode}", view, {"a": A, "u": R["update"]})
            doses, recs = dose_response(hpc, pulse, A, R["update"])
            out |= doses
            records |= recs
            for k in PULSES:
                for n in ("own", "reset"):
                    src = f"dose_{strength}_{k}_{n}"
                    out |= {
                        f"t2_{k}_{n}" + key[len(src) :]: v
                        for key, v in doses.items()
                        if key.startswith(src + "_")
                    }
            out |= formation_arrays(record, anc, hpc, n_roles, "t2")
        elif table == "t4":
            _endpoint_arrays(out, "ctl_end", pulse, {"a": A, "v": R["variable"]})
            jobs = [("t4_own", A, R["update"], "own", "combined")]
            jobs += [(f"iv_{n}", A, R["update"], n, "combined") for n in INTERVENTIONS[table]]
            jobs += [(f"ctl_{n}", A, R["variable"], n, "combined") for n in CONTROL]
        elif table in ("pattern", "t5"):
            jobs = [(f"{table}_own", A, R["update"], "own", "combined")]
            jobs += [(f"{table}_{n}", A, R["update"], n, "combined") for n in INTERVENTIONS[table]]
        elif table == "t6":
            out |= table6(pulse, A, R["projected"])
            out |= formation_arrays(record, anc, hpc, n_roles, "t6")
        elif table == "horizon":
            out |= horizon(pulse, A, R["update"], hpc)
        for key, a, b, name, kind in jobs:
            res = sp.compare(pulse, a, b, name, kind)
            _put(out, key, res)
            records[key] = json.loads(res["records"])
    out["records"] = json.dumps(records)
    return out


def table6(pulse: sp.Pulse, A: sm.Cohort, P: sm.Cohort) -> dict:
    """Crossed second-moment transplants: each recipient (weights, ``m``, step fixed) pulsed with
    its own ``v`` or the other route's (``native`` = the acquisition route's ``v``)."""
    out = {}
    for rname, rec in (("acq", A), ("proj", P)):
        for vname, src in (("native", A), ("projected", P)):
            c = sp.clone(rec)
            if src is not rec:
                adam.transplant(c.opt, c.net, adam.snapshot(src.opt, src.net, weights=False), "v")
            res = pulse.run([c])["routes"][0]
            for ro in sm.READOUTS:
                sfx = "" if ro == "heads" else f"_{ro}"
                out[f"t6_{rname}_{vname}{sfx}"] = res[ro]["lost"]
    return out


def horizon(pulse: sp.Pulse, A: sm.Cohort, U: sm.Cohort, hp: dict) -> dict:
    """Continued combined opposition for ``horizon`` updates under inherited Adam, fresh Adam
    (state and step reset) and calibrated SGD; specialization lost at the marks."""
    H = hp["horizon"]
    marks = tuple(m for m in MARKS if m <= H)
    out = {"horizon_marks": np.array(marks, dtype=float)}
    for name in ("inherited", "fresh", "sgd"):
        a, b = sp.clone(A), sp.clone(U)
        rates = None
        if name == "fresh":
            sp.intervene("reset", a, b)
        if name == "sgd":
            rates = [sp.sgd_rates(c, pulse.world, "combined", hp, pulse.seed) for c in (a, b)]
        res = pulse.run([a, b], "combined", steps=H, sgd=rates, marks=marks)["routes"]
        for ro in sm.READOUTS:
            sfx = "" if ro == "heads" else f"_{ro}"
            out[f"hz_{name}_a{sfx}"] = res[0][ro]["trace"]
            out[f"hz_{name}_b{sfx}"] = res[1][ro]["trace"]
    return out


def formation_arrays(
    record: sm.FormationRecord, anc: sm.Cohort, hp: dict, n_roles: int, table: str
) -> dict:
    """Encoder-layer mean ``v`` along formation per route (mean over seeds and directions), per
    seed at the end (``[layer, S, route]``), the ancestor's ``v`` discounted by ``beta2^t``, and
    ``-C/S`` per seed and route; keys prefixed ``{table}_``."""
    K, S = hp["targets"], anc.seeds
    v = np.stack(record.v_mean).reshape(len(record.v_mean), 2, S, n_roles, K)
    t = record.every * np.arange(1, v.shape[0] + 1, dtype=float)
    anc_v = sm.encoder_v_means(anc).mean(axis=1)
    p = f"{table}_"
    return {
        p + "form_t": t,
        p + "form_v": v.mean(axis=(2, 4)),
        p + "form_v_final": v[-1].mean(axis=3),
        p + "form_v_ancestor": anc_v[None, :] * hp["beta2"] ** t[:, None],
        p + "form_cancel": _route_cancellation(record, S, n_roles, K),
    }

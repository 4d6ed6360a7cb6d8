r"""The two stages of ``shared_representation``: calibration over the candidate family, then the
confirmatory measurement of every table on its own seeds.

Calibration seeds and each table's confirmatory seeds come from different streams of the task's
seed (labels ``"calibration"`` and ``("confirm", table)``, `gaugedyn.stats.generator()`), so
no confirmatory network is ever seen by the choice and no two tables share a seed.

The family (`family()`) crosses what *acquisition* means (input gain; label-observation rate
per sample; per step), the representation's capacity ``d_Z``, the learning rate, the pulse
strength and the evaluation distribution (``own``/``common``; the two coincide unless
acquisition means input gain, so only ``common`` is kept there). A candidate is chosen **only by
its defining properties** (`properties()`), measured on calibration seeds: matched endpoints,
real specialization (read by the probe, in both routes) and conflicting task gradients (``-C/S``
of the acquisition route). No outcome a table reports enters the choice.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import torch

from ... import adam, stats
from . import _model as sm
from . import _pulses as sp
from ._protocol import CONTROL, EVALS, INTERVENTIONS, MARKS, PULSES, STRENGTHS, TABLES


def _list(v) -> list:
    return list(v) if isinstance(v, list | tuple) else [v]


def cand_name(c: dict) -> str:
    return f"{c['acquisition']}-d{c['d_Z']}-lr{c['lr']:g}-{c['pulse']}-{c['eval']}"


def family(hp: dict) -> list[dict]:
    """The candidate set-ups of ``hp``'s family lists, in the declared order (which breaks
    ties): acquisition meaning x ``d_Z`` x learning rate x pulse strength x evaluation."""
    out = []
    evals = _list(hp["readout"])
    for m, d, lr, pulse in itertools.product(
        _list(hp["acquisition"]), _list(hp["d_Z"]), _list(hp["lr"]), _list(hp["pulse"])
    ):
        for e in evals if m == "gain" else ["common" if "common" in evals else evals[0]]:
            c = {"acquisition": m, "d_Z": int(d), "lr": float(lr), "pulse": pulse, "eval": e}
            out.append(c | {"name": cand_name(c)})
    return out


def torch_gen(seed: np.random.SeedSequence, *labels) -> torch.Generator:
    """A torch generator derived from the task seed and labels (never a constant)."""
    word = int(stats.generator(seed, *labels).integers(0, 2**62))
    return torch.Generator().manual_seed(word)


def pulse_seed(seed: np.random.SeedSequence, *labels) -> int:
    return int(stats.generator(seed, "pulse", *labels).integers(0, 2**62))


def with_candidate(hp: dict, cand: dict) -> dict:
    """``hp`` with the candidate's set-up (meaning, capacity, learning rate, pulse)."""
    return hp | {
        "acquisition": cand["acquisition"],
        "bottleneck": cand["d_Z"],
        "lr": cand["lr"],
        **STRENGTHS[cand["pulse"]],
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
        row["properties"] = properties(row, hp)
        row["eligible"] = all(row["properties"].values())
        rows.append(row)
    return rows


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
            "rule": "every defining property; smallest endpoint mismatch",
        }
    near = min(rows, key=lambda r: (-sum(r["properties"].values()), r["mismatch"], rows.index(r)))
    return {
        "choice": None,
        "measured": near["name"],
        "w_star": near["w_star"],
        "rule": "no candidate has every defining property (matched endpoints, probe "
        "specialization, conflicting gradients); the closest is measured, not judged",
    }


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


def confirm(
    hp: dict, cand: dict, w_star: float, seed: np.random.SeedSequence, tables=tuple(TABLES)
) -> dict:
    """Every table on its own ``hp["seeds"]`` confirmatory seeds with the candidate and ``w*``:
    per-seed arrays (``[S, K]``: seed x direction) keyed by table and condition, by both
    readouts."""
    hpc = with_candidate(hp, cand)
    out: dict = {}
    records = {}
    for table in tables:
        world, R, anc, record, evals, n_roles = _grow_table(hpc, table, w_star, seed)
        pseed = pulse_seed(seed, "confirm", table)
        pulse = sp.Pulse(world, evals, hpc, cand["eval"], pseed)
        A = R["acquisition"]
        jobs = []
        if table == "t2":
            for mode in EVALS:
                view = sp.Pulse(world, evals, hpc, mode, pseed)
                for tag, c in (("a", A), ("u", R["update"])):
                    ends = endpoints(view, c)
                    for ro in sm.READOUTS:
                        sfx = "" if ro == "heads" else f"_{ro}"
                        out[f"end_{mode}_{tag}_f{sfx}"], out[f"end_{mode}_{tag}_o{sfx}"] = ends[ro]
            jobs = [(f"t2_{k}_{n}", A, R["update"], n, k) for k in PULSES for n in ("own", "reset")]
            out |= formation_arrays(record, anc, hpc, n_roles, "t2")
        elif table == "t4":
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

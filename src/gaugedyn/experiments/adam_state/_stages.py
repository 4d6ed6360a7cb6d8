r"""The two stages of ``shared_representation``: calibration over the candidate family, then the
confirmatory measurement of every table on disjoint seeds.

Calibration seeds and confirmatory seeds come from different streams of the task's seed
(labels ``"calibration"`` and ``"confirm"``), so no confirmatory network is ever seen by the choice.
"""

from __future__ import annotations

import json

import numpy as np
import torch

from ... import stats
from ...adam import _state as st
from . import _model as sm
from . import _protocol as sp

BOTTLENECKS = (32, 2, 1)
EVALS = ("own", "common")
STRENGTHS = {"mild": (0.5, 0.75), "strong": (0.25, 0.9)}
"""Pulse strength: ``(pulse_gain, pulse_weight)`` of the opposing pulse."""

FAMILY = tuple({"name": f"b{b}-{e}-{s}", "bottleneck": b, "eval": e, "pulse": s}
               for b in BOTTLENECKS for e in EVALS for s in STRENGTHS)
"""The candidate set-ups, fixed before calibration: encoder bottleneck (second-layer width) x
evaluation distribution x pulse strength. Order is the tie-break of last resort."""

INTERVENTIONS = ("own", "reset", "xm", "xv", "scal", "eq", "scal+eq", "eq+xv", "xv:enc0",
                 "xv:enc1", "xv:heads", "move")
CONTROL = ("own", "xm", "xv", "reset")
MARKS = (1, 2, 5, 10, 20, 50, 100, 200, 400)


def torch_gen(seed: np.random.SeedSequence, *labels) -> torch.Generator:
    """A torch generator derived from the task seed and labels (never a constant)."""
    word = int(stats.generator(seed, *labels).integers(0, 2**62))
    return torch.Generator().manual_seed(word)


def pulse_seed(seed: np.random.SeedSequence, *labels) -> int:
    return int(stats.generator(seed, "pulse", *labels).integers(0, 2**62))


def with_candidate(hp: dict, cand: dict) -> dict:
    gain, weight = STRENGTHS[cand["pulse"]]
    return hp | {"bottleneck": cand["bottleneck"], "pulse_gain": gain, "pulse_weight": weight}


def grow(hp: dict, seeds: int, gen: torch.Generator, roles: list[tuple[str, float]],
         record: sm.FormationRecord | None = None) -> tuple[sm.World, dict, sm.Cohort]:
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


def endpoints(pulse: sp.Pulse, c: sm.Cohort) -> tuple[np.ndarray, np.ndarray]:
    """Readout precisions ``r_f`` and ``r_o`` per seed (mean over directions)."""
    K = c.hp["targets"]
    r = sm.readouts(c.net, pulse.world, *pulse.evals, sp.eval_gains(c, pulse.mode), c.R)
    f = torch.tensor([v.fav for v in c.variants]).repeat(c.seeds)
    rows = torch.arange(r.shape[0])
    rf = r[rows, f].reshape(c.seeds, c.R).double().numpy().mean(1)
    ro = r[rows, (f + 1) % K].reshape(c.seeds, c.R).double().numpy().mean(1)
    return rf, ro


def _paired(x, y, seed, *labels) -> stats.Interval:
    return stats.mean_difference_ci(x, y, rng=stats.generator(seed, *labels))


def calibrate(hp: dict, seed: np.random.SeedSequence, family=FAMILY) -> dict:
    """Every candidate on the calibration seeds: ``w*`` chosen by endpoint mismatch, the endpoint
    intervals at ``w*`` and the sign of the inherited combined-pulse contrast."""
    S, tol, grid = hp["calibration_seeds"], hp["tolerance"], hp["w_grid"]
    rows = []
    for b in sorted({c["bottleneck"] for c in family}, reverse=True):
        hpb = hp | {"bottleneck": b}
        world, routes, _ = grow(hpb, S, torch_gen(seed, "calibration", "data"),
                               [("acquisition", 0.5)] + [("update", w) for w in grid])
        evals = world.sample(torch_gen(seed, "calibration", "eval"), hp["eval_n"])
        for cand in [c for c in family if c["bottleneck"] == b]:
            hpc = with_candidate(hpb, cand)
            pulse = sp.Pulse(world, evals, hpc, cand["eval"], pulse_seed(seed, "calibration"))
            a = routes["acquisition"]
            ra = endpoints(pulse, a)
            miss = []
            for w in grid:
                ru = endpoints(pulse, routes[f"update@{w:g}"])
                miss.append(max(abs(np.mean(ra[0] - ru[0])), abs(np.mean(ra[1] - ru[1]))))
            w_star = float(grid[int(np.argmin(miss))])
            u = routes[f"update@{w_star:g}"]
            ru = endpoints(pulse, u)
            ivs = [_paired(ra[i], ru[i], seed, "calibration", cand["name"], i) for i in (0, 1)]
            res = sp.compare(pulse, a, u, "own")
            con = _paired(res["lost_a"].mean(1), res["lost_b"].mean(1), seed, "calibration",
                          cand["name"], "contrast")
            matched = all(-tol < iv.low and iv.high < tol for iv in ivs)
            rows.append(cand | {"w_star": w_star, "mismatch": float(min(miss)),
                                "endpoint_intervals": [list(iv) for iv in ivs],
                                "endpoints_matched": bool(matched),
                                "contrast": list(con), "sign_positive": bool(con.low > 0),
                                "eligible": bool(matched and con.low > 0)})
    return {"candidates": rows, **choose(rows)}


def choose(rows: list[dict]) -> dict:
    """The pre-specified rule: among eligible candidates (endpoints matched and inherited
    contrast interval above 0) the smallest endpoint mismatch; if none, among those with a
    positive contrast; if none, the smallest mismatch overall (the record says which)."""
    for rule, pool in (("eligible", [r for r in rows if r["eligible"]]),
                       ("sign only (no candidate matched endpoints)",
                        [r for r in rows if r["sign_positive"]]),
                       ("none eligible: smallest mismatch", rows)):
        if pool:
            best = min(pool, key=lambda r: (r["mismatch"], rows.index(r)))
            return {"choice": best["name"], "rule": rule, "w_star": best["w_star"]}
    raise ValueError("empty candidate family")


def confirm(hp: dict, cand: dict, w_star: float, seed: np.random.SeedSequence) -> dict:
    """Every table on ``hp["seeds"]`` confirmatory seeds with the chosen candidate and ``w*``:
    per-seed arrays (``[S, K]``: seed x direction) keyed by table and condition."""
    hpc = with_candidate(hp, cand)
    record = sm.FormationRecord(every=hp["record_every"])
    roles = [("acquisition", 0.5), ("update", w_star), ("variable", 0.5), ("projected", 0.5)]
    world, routes, anc = grow(hpc, hp["seeds"], torch_gen(seed, "confirm", "data"), roles, record)
    A, U = routes["acquisition"], routes[f"update@{w_star:g}"]
    evals = world.sample(torch_gen(seed, "confirm", "eval"), hp["eval_n"])
    pseed = pulse_seed(seed, "confirm")
    pulse = sp.Pulse(world, evals, hpc, cand["eval"], pseed)
    out: dict = {}
    for mode in EVALS:
        view = sp.Pulse(world, evals, hpc, mode, pseed)
        for tag, c in (("a", A), ("u", U)):
            out[f"end_{mode}_{tag}_f"], out[f"end_{mode}_{tag}_o"] = endpoints(view, c)
    records = {}
    jobs = [(f"t2_{k}_{n}", A, U, n, k) for k in sp.PULSES for n in ("own", "reset")]
    jobs += [(f"iv_{n}", A, U, n, "combined") for n in INTERVENTIONS if n not in ("own",
                                                                                  "reset")]
    jobs += [(f"ctl_{n}", A, routes["variable"], n, "combined") for n in CONTROL]
    for key, a, b, name, kind in jobs:
        res = sp.compare(pulse, a, b, name, kind)
        out[f"{key}_a"], out[f"{key}_b"] = res["lost_a"], res["lost_b"]
        out[f"{key}_switch_a"] = res["switch_a"].astype(float)
        out[f"{key}_switch_b"] = res["switch_b"].astype(float)
        out[f"{key}_specialized_a"] = res["specialized_a"].astype(float)
        out[f"{key}_specialized_b"] = res["specialized_b"].astype(float)
        records[key] = json.loads(res["records"])
    out |= table6(pulse, A, routes["projected"])
    out |= horizon(pulse, A, U, hpc)
    out |= formation_arrays(record, anc, hpc, len(roles))
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
                st.transplant(c.opt, c.net, st.snapshot(src.opt, src.net, weights=False), "v")
            out[f"t6_{rname}_{vname}"] = pulse.run([c])["routes"][0]["lost"]
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
        out[f"hz_{name}_a"], out[f"hz_{name}_b"] = res[0]["trace"], res[1]["trace"]
    return out


def formation_arrays(record: sm.FormationRecord, anc: sm.Cohort, hp: dict, n_roles: int) -> dict:
    """Encoder-layer mean ``v`` along formation per route (mean over seeds and directions), the
    ancestor's ``v`` discounted by ``beta2^t``, and ``-C/S`` per seed and route."""
    K, S = hp["targets"], anc.seeds
    v = np.stack(record.v_mean).reshape(len(record.v_mean), 2, S, n_roles, K)
    t = record.every * np.arange(1, v.shape[0] + 1, dtype=float)
    anc_v = sm.encoder_v_means(anc).mean(axis=1)
    return {"form_t": t, "form_v": v.mean(axis=(2, 4)),
            "form_v_final": v[-1].mean(axis=3),
            "form_v_ancestor": anc_v[None, :] * hp["beta2"] ** t[:, None],
            "form_cancel": record.cancellation().reshape(S, n_roles, K).mean(axis=2)}

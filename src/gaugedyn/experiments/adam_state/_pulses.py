r"""Routes, pulses and Adam-state interventions of ``shared_representation``.

A *route* is a cohort of ``S`` seeds x ``K`` directions (direction ``f`` favours target ``f``).
*Acquisition* has one of three meanings (``hp["acquisition"]``): ``gain`` (the input shows the
favoured target at gain 1, the others at ``gain_weak``), ``rate`` (every target at gain 1; the
others' labels observed per sample with probability ``observe_weak``) or ``step`` (the same rate,
drawn once per update for the whole batch).
A *pulse* is ``pulse_steps`` further updates that favour the opposing target ``o = (f+1) mod K``:
``acquisition`` (acquisition in the set-up's meaning towards ``o``: gain ``pulse_gain`` or
observation rate ``pulse_observe`` for the others; equal loss weights), ``update`` (equal
gains, every label; ``w_o = pulse_weight``, others share the rest) or ``combined`` (both).
Specialization is ``s = r_f - r_o`` (readout precisions on the evaluation distribution, under
each readout of `._model.READOUTS`); the *specialization lost*
is ``s_0 - s_T``; the checkpoint *switches* when ``argmax_k r_k = f`` before the pulse and not
after it (checkpoints specialized before are the denominator).
Every route of one comparison receives the same pulse batches (common random numbers).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from ... import adam
from . import _model as sm


def equal(K: int) -> tuple[float, ...]:
    return tuple([1.0 / K] * K)


def favour(K: int, f: int, top: float, rest: float | None = None) -> tuple[float, ...]:
    """A vector with ``top`` at ``f`` and the others ``rest`` (default: share ``1 - top``)."""
    other = (1.0 - top) / (K - 1) if rest is None else rest
    return tuple(top if k == f else other for k in range(K))


def acquired(hp: dict, f: int, weak_gain: float, weak_rate: float) -> dict:
    """Variant fields of acquisition towards ``f`` in the set-up's meaning: ``gains`` and
    ``observe``/``per`` (the other targets at ``weak_gain`` or observed at ``weak_rate``)."""
    K, meaning = hp["targets"], hp["acquisition"]
    if meaning == "gain":
        return {"gains": favour(K, f, 1.0, weak_gain)}
    if meaning in ("rate", "step"):
        return {
            "gains": (1.0,) * K,
            "observe": favour(K, f, 1.0, weak_rate),
            "per": "sample" if meaning == "rate" else "step",
        }
    raise ValueError(f"unknown acquisition meaning {meaning!r}")


def route_variants(role: str, hp: dict, w_star: float = 0.5) -> list[sm.Variant]:
    """The ``K`` directions of a route: ``acquisition`` (acquisition favours ``f``, equal
    weights), ``update`` (equal gains, every label, weights ``w*`` to ``f``), ``variable``
    (acquisition, weights alternating every ``period`` steps between ``1/K +- delta`` on ``f``:
    mean ``1/K`` as for ``acquisition``), ``projected`` (acquisition with gradient projection)."""
    K = hp["targets"]
    out = []
    for f in range(K):
        acq = acquired(hp, f, hp["gain_weak"], hp["observe_weak"])
        if role in ("acquisition", "projected"):
            v = sm.Variant(role, f, weights=equal(K), projected=role == "projected", **acq)
        elif role == "update":
            v = sm.Variant(role, f, tuple([1.0] * K), favour(K, f, w_star))
        elif role == "variable":
            d = hp["control_delta"]
            v = sm.Variant(
                role,
                f,
                weights=favour(K, f, 1 / K + d),
                alt=favour(K, f, 1 / K - d),
                period=hp["control_period"],
                **acq,
            )
        else:
            raise ValueError(f"unknown route role {role!r}")
        out.append(v)
    return out


def clone(c: sm.Cohort) -> sm.Cohort:
    rows = torch.arange(c.seeds * c.R).reshape(c.seeds, c.R)
    return sm.replicate(c, c.variants, rows)


def split(c: sm.Cohort, roles: list[str]) -> dict[str, sm.Cohort]:
    """The routes of a formation cohort (variants ordered role by role, ``K`` each)."""
    K = c.hp["targets"]
    out = {}
    for i, role in enumerate(roles):
        cols = torch.arange(i * K, (i + 1) * K)
        rows = torch.arange(c.seeds)[:, None] * c.R + cols[None, :]
        out[role] = sm.replicate(c, c.variants[i * K : (i + 1) * K], rows)
    return out


def eval_gains(c: sm.Cohort, mode: str) -> torch.Tensor:
    """Evaluation gains per variant: the route's own formation gains, or common equal gains
    (the two coincide unless acquisition means input gain)."""
    if mode == "own":
        return c.gains()
    return torch.ones(c.R, c.hp["targets"])


def pulse_spec(c: sm.Cohort, kind: str, hp: dict) -> dict:
    """The pulse of ``kind`` for the route's directions: ``gains [R, K]``, loss ``weights
    [S R, K]``, ``observe [R, K]`` and ``per_step [R]``."""
    K = hp["targets"]
    gains, weights, observe, per = [], [], [], []
    for v in c.variants:
        o = (v.fav + 1) % K
        acq = {"gains": (1.0,) * K}
        if kind != "update":
            acq = acquired(hp, o, hp["pulse_gain"], hp["pulse_observe"])
        gains.append(acq["gains"])
        observe.append(acq.get("observe", (1.0,) * K))
        per.append(acq.get("per") == "step")
        weights.append(favour(K, o, hp["pulse_weight"]) if kind != "acquisition" else equal(K))
    return {
        "gains": torch.tensor(gains),
        "weights": torch.tensor(weights).repeat(c.seeds, 1),
        "observe": torch.tensor(observe),
        "per_step": torch.tensor(per),
    }


def _pulse_loss(c: sm.Cohort, world: sm.World, spec: dict, z, xi, gen) -> torch.Tensor:
    mask = sm.label_mask(gen, c.seeds, z.shape[1], spec["observe"], spec["per_step"])
    losses = sm.task_losses(c.net, world.inputs(z, xi, spec["gains"]), z, c.R, mask)
    return (spec["weights"] * losses).sum()


def spec_of(r: torch.Tensor, c: sm.Cohort) -> tuple[np.ndarray, np.ndarray]:
    """``(s = r_f - r_o, argmax_k r_k == f)`` per checkpoint, shaped ``[S, K]``."""
    K = c.hp["targets"]
    f = torch.tensor([v.fav for v in c.variants]).repeat(c.seeds)
    o = (f + 1) % K
    rows = torch.arange(r.shape[0])
    s = (r[rows, f] - r[rows, o]).reshape(c.seeds, c.R)
    top = (r.argmax(dim=1) == f).reshape(c.seeds, c.R)
    return s.double().numpy(), top.numpy()


class Pulse:
    """Runs one pulse on a list of routes with shared batches and a fixed evaluation draw."""

    def __init__(self, world: sm.World, evals: sm.EvalDraw, hp: dict, mode: str, seed: int):
        self.world, self.evals, self.hp, self.mode, self.seed = world, evals, hp, mode, seed

    def measure(self, c: sm.Cohort) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per readout, ``(s, favoured target on top)`` per checkpoint (``[S, K]`` each)."""
        r = sm.readouts(c.net, self.world, self.evals, eval_gains(c, self.mode), c.R)
        return {name: spec_of(r[name], c) for name in sm.READOUTS}

    def run(
        self,
        routes: list[sm.Cohort],
        kind: str = "combined",
        steps: int | None = None,
        movement: bool = False,
        sgd: list[torch.Tensor] | None = None,
        marks: tuple[int, ...] = (),
    ) -> dict:
        """Per route and readout, the specialization lost and the switches after ``steps``;
        with ``marks``, the specialization lost at those step counts too (``[marks, S, K]``).

        A checkpoint *switches* when its favoured target ``f`` is on top (``argmax_k r_k = f``)
        before the pulse and not after it; ``specialized`` marks the checkpoints with ``f`` on top
        before the pulse (the switch rate's denominator). A checkpoint whose other target is
        already on top before the pulse is never counted as switched."""
        steps = self.hp["pulse_steps"] if steps is None else steps
        gen = torch.Generator().manual_seed(self.seed)
        specs = [pulse_spec(c, kind, self.hp) for c in routes]
        first = [self.measure(c) for c in routes]
        trace: list[dict[str, list[np.ndarray]]] = [
            {name: [] for name in sm.READOUTS} for _ in routes
        ]
        for t in range(1, steps + 1):
            z, xi = self.world.sample(gen, self.hp["batch"])
            state = gen.get_state()  # every route draws the same label masks
            before = [adam.weights(c.net) for c in routes] if movement else None
            for i, (c, spec) in enumerate(zip(routes, specs)):
                gen.set_state(state)
                loss = _pulse_loss(c, self.world, spec, z, xi, gen)
                c.opt.zero_grad(set_to_none=True)
                loss.backward()
                if sgd is not None:
                    _sgd_step(c, sgd[i])
                else:
                    c.opt.step()
            if before is not None:
                _equal_movement(routes, before)
            if t in marks:
                for i, c in enumerate(routes):
                    now = self.measure(c)
                    for name in sm.READOUTS:
                        trace[i][name].append(first[i][name][0] - now[name][0])
        out = []
        for i, c in enumerate(routes):
            end = self.measure(c)
            row = {}
            for name in sm.READOUTS:
                (s0, top0), (s1, top1) = first[i][name], end[name]
                row[name] = {
                    "lost": s0 - s1,
                    "switched": top0 & ~top1,
                    "specialized": top0,
                    "s0": s0,
                    "trace": np.array(trace[i][name]) if marks else None,
                }
            out.append(row)
        return {"routes": out}


@torch.no_grad()
def _sgd_step(c: sm.Cohort, lr: torch.Tensor) -> None:
    for p in c.net.parameters():
        p.sub_(sm._expand(lr, p) * sm.grad_of(p))


def _equal_movement(routes: list[sm.Cohort], before: list[dict]) -> None:
    """The joint norm-control rule: every route's update rescaled, per seed and direction, to
    the mean of the routes' own update norms at that step."""
    norms = [adam.update_norm(c.net, b, batch_dims=1) for c, b in zip(routes, before)]
    target = sum(norms) / len(norms)
    for c, b in zip(routes, before):
        adam.rescale_update(c.net, b, target, batch_dims=1)


def sgd_rates(c: sm.Cohort, world: sm.World, kind: str, hp: dict, seed: int) -> torch.Tensor:
    r"""Calibrated SGD: per network, ``eta = |Delta_Adam| / |g|`` on the pulse's first batch, with
    ``Delta_Adam`` the update the inherited Adam state would take from that gradient."""
    gen = torch.Generator().manual_seed(seed)
    z, xi = world.sample(gen, hp["batch"])
    c.opt.zero_grad(set_to_none=True)
    _pulse_loss(c, world, pulse_spec(c, kind, hp), z, xi, gen).backward()
    b1, b2, lr, eps = hp["beta1"], hp["beta2"], hp["lr"], hp["eps"]
    du: float | torch.Tensor = 0.0
    gg: float | torch.Tensor = 0.0
    for p in c.net.parameters():
        s = c.opt.state[p]
        t = float(s["step"]) + 1
        g = sm.grad_of(p)
        m = (b1 * s["exp_avg"] + (1 - b1) * g) / (1 - b1**t)
        v = (b2 * s["exp_avg_sq"] + (1 - b2) * g**2) / (1 - b2**t)
        du = du + ((lr * m / (v.sqrt() + eps)) ** 2).flatten(1).sum(1)
        gg = gg + (g**2).flatten(1).sum(1)
    c.opt.zero_grad(set_to_none=True)
    return (torch.as_tensor(du).sqrt() / torch.as_tensor(gg).sqrt().clamp_min(1e-30)).detach()


def intervene(name: str, a: sm.Cohort, b: sm.Cohort) -> list[Any]:
    """Apply intervention ``name`` to the pair ``(a, b)`` in place; the toolkit's records
    (`gaugedyn.adam.StateRecord`)."""
    recs: list[Any] = []
    for step in name.split("+"):
        if step in ("own", "move"):
            continue
        if step == "reset":
            for c in (a, b):
                recs += [adam.reset(c.opt, c.net, "both"), adam.reset_step(c.opt, c.net, 0)]
        elif step in ("xm", "xv"):
            recs.append(adam.exchange(a.opt, a.net, b.opt, b.net, step[1]))
        elif step.startswith("xv:"):
            names = {"enc0": "encoder.0.*", "enc1": "encoder.1.*", "heads": "heads.*"}[step[3:]]
            recs.append(adam.exchange(a.opt, a.net, b.opt, b.net, "v", names))
        elif step == "scal":
            recs += [adam.scalarise_v(c.opt, c.net, per="tensor", batch_dims=1) for c in (a, b)]
        elif step == "eq":
            recs.append(adam.equalise_adaptive_scale(a.opt, a.net, b.opt, b.net, batch_dims=1))
        else:
            raise ValueError(f"unknown intervention step {step!r}")
    return recs


def summarise_records(recs: list[Any]) -> str:
    """A compact JSON text of the toolkit records (operation, tensors, total norms)."""
    out = []
    for r in recs:
        d = r.to_dict()
        out.append(
            {
                "operation": d["operation"],
                "component": d["component"],
                "tensors": [e["name"] + ":" + e["tensor"] for e in d["entries"]],
                "norm_before": float(np.sqrt(sum(e["norm_before"] ** 2 for e in d["entries"]))),
                "norm_after": float(np.sqrt(sum(e["norm_after"] ** 2 for e in d["entries"]))),
            }
        )
    return json.dumps(out)


def compare(pulse: Pulse, a: sm.Cohort, b: sm.Cohort, name: str, kind: str = "combined") -> dict:
    """Clone the pair, apply ``name``, pulse both: per readout, per-seed losses, switches and
    the switch denominators (``{readout: {"lost_a", ...}}``), and the toolkit's records."""
    a, b = clone(a), clone(b)
    recs = intervene(name, a, b)
    res = pulse.run([a, b], kind, movement=name.endswith("move"))["routes"]
    out: dict[str, Any] = {"records": summarise_records(recs)}
    for ro in sm.READOUTS:
        ra, rb = res[0][ro], res[1][ro]
        out[ro] = {
            "lost_a": ra["lost"],
            "lost_b": rb["lost"],
            "switch_a": ra["switched"],
            "switch_b": rb["switched"],
            "specialized_a": ra["specialized"],
            "specialized_b": rb["specialized"],
        }
    return out

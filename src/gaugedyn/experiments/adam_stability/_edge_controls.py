"""Known-answer controls of ``adam_edge``'s instruments (``PROTOCOL.md`` section 2).

- **The frozen-``v`` comparison** (`._freeze`), ``v`` frozen *before* the edge (at
  `._freeze.FREEZE_BEFORE` of the threshold) at each ``beta1`` of the configuration, its
  ``beta2`` and step size: on the diagonal quadratic, where adaptation of ``v`` is the only
  mechanism that moves the preconditioned sharpness, the adaptive arm reaches the edge and the
  frozen arm does not within the run (the mechanism's signature); on a model that sharpens by
  itself under a fixed preconditioner, where ``v`` plays no part, both arms reach the edge at the
  same step (no signature). Frozen *at* the edge, the comparison reads no signature on either
  model (``tests/test_instruments.py``): today's arm cannot tell the mechanism from its absence.
- **The edge finder** (`._protocol.edge_start()`): a Lanczos record crossing ``0.9 thr`` at a
  known step after the start-up (found there), one crossing only during the start-up and one
  never crossing (no edge).
- **The frozen and adaptive readouts of the edge window** (`._edge_analysis.window_stats()`):
  a record whose frozen copy sits at twice the threshold after the freeze (reads ``log10 2``),
  and one whose frozen copy equals the adaptive run (reads equal values).
- **The period-2 readout** (`._edge_analysis.period_two()`): an alternation ``+-e`` on a trend
  (reads ``2 e``), and a smooth curve (reads nearly 0).
- **The diagonal quadratic's separation readout** (`._edge_analysis.quadratic_separation()`):
  a sharpness ten times the active curvature (reads 1) and equal to it (reads 0).
"""

from __future__ import annotations

import math

import numpy as np

from ...harness import Control
from ._freeze import (
    delay,
    diagonal_quadratic_model,
    edge_times,
    freeze_arms,
    sharpening_model,
)

FREEZE_STEPS = 3000
"""Steps of each arm of the frozen-``v`` controls."""


def freeze_controls(config: dict, arms=freeze_arms) -> list[Control]:
    """The frozen-``v`` comparison's controls at each ``beta1`` and each freeze fraction of
    ``config`` (module doc), read by the analysis's delay (:func:`._freeze.censored_delay`);
    ``arms`` is the comparison (an argument, so a test can hand a broken one)."""
    lr, b2 = float(config["lrs"][0]), float(config["beta2"])
    out = []
    for b1 in config["beta1s"]:
        for f in config["freeze_fractions"]:

            def quadratic(b1=b1, f=f):
                r = arms(diagonal_quadratic_model(), lr, b1, b2, FREEZE_STEPS, f)
                ta, tf = edge_times(r)
                d = delay(r)
                return {"adaptive": ta, "frozen": tf, "delay": d}, ta >= 0 and tf < 0 and d > 0

            def fixed(b1=b1, f=f):
                model = sharpening_model(lr, b1)
                r = arms(model, lr, b1, b2, FREEZE_STEPS, f, fixed=1.0)
                ta, tf = edge_times(r)
                d = delay(r)
                return {"adaptive": ta, "frozen": tf, "delay": d}, ta >= 0 and d == 0

            where = f"beta1 {b1:g}, beta2 {b2:g}, lr {lr:g}, v frozen at {f:g} thr"
            out += [
                Control(
                    f"freeze.quadratic:b{b1:g}:f{f:g}",
                    "frozen-v comparison, v frozen before the edge (delay readout)",
                    "positive",
                    f"diagonal quadratic ({where}): the adaptive arm reaches the edge, the "
                    f"frozen arm not in {FREEZE_STEPS} steps (a positive censored delay)",
                    "the comparison shows v driving the sharpness where v is the only mechanism",
                    quadratic,
                ),
                Control(
                    f"freeze.fixed_preconditioner:b{b1:g}:f{f:g}",
                    "frozen-v comparison, v frozen before the edge (delay readout)",
                    "negative",
                    f"a model sharpening by itself under a fixed preconditioner ({where}): "
                    "both arms reach the edge at the same step (delay 0)",
                    "the comparison reads no mechanism where v plays no part",
                    fixed,
                ),
            ]
    return out + time_controls(config, arms)


def time_controls(config: dict, arms=freeze_arms) -> list[Control]:
    """The time-to-the-edge readout against ``1 - beta2`` (:func:`._freeze.first_at_edge` and
    :func:`._edge_analysis.time_slope`) on the configuration's ``beta2s``: the diagonal
    quadratic, where ``v``'s memory sets the pace, reads a slope below -0.5; the model
    sharpening by itself under a fixed preconditioner reads a slope within 0.05 of 0."""
    from ._edge_analysis import time_slope

    lr, b1 = float(config["lrs"][0]), float(config["beta1s"][0])
    b2s = [float(b) for b in config["beta2s"]]
    steps = int(max(FREEZE_STEPS, 6 / (1 - max(b2s))))

    def slope(model, **kw):
        times = [edge_times(arms(model, lr, b1, b2, steps, math.inf, **kw))[0] for b2 in b2s]
        return float(time_slope(b2s, times).estimate), times

    def quadratic():
        s, times = slope(diagonal_quadratic_model())
        return {"slope": s, "times": times}, s <= -0.5

    def fixed():
        s, times = slope(sharpening_model(lr, b1), fixed=1.0)
        return {"slope": s, "times": times}, abs(s) <= 0.05

    where = f"beta1 {b1:g}, lr {lr:g}, beta2 in {b2s}"
    return [
        Control(
            "time_to_edge.quadratic",
            "time to the edge against 1 - beta2 (first_at_edge, time_slope)",
            "positive",
            f"diagonal quadratic ({where}): log t_e on log(1 - beta2) has slope below -0.5",
            "the readout sees the edge reached on v's memory time where v sets the pace",
            quadratic,
        ),
        Control(
            "time_to_edge.fixed_preconditioner",
            "time to the edge against 1 - beta2 (first_at_edge, time_slope)",
            "negative",
            f"a model sharpening by itself under a fixed preconditioner ({where}): slope "
            "within 0.05 of 0",
            "no dependence on the memory is read where v plays no part",
            fixed,
        ),
    ]


def _edge_record(thr: float, lr: float, cross: int | None, every: int = 10, steps: int = 400):
    t = np.arange(0, steps, every)
    S = np.full(t.size, 0.5 * thr / lr)
    if cross is not None:
        S[t >= cross] = 0.95 * thr / lr
    return {"lanczos_step": t, "sharpness": S, "threshold": thr}


def readout_controls(config: dict) -> list[Control]:
    """The edge finder's and the readouts' controls (module doc)."""
    from ._edge_analysis import window_stats

    lr, b1, b2 = float(config["lrs"][0]), float(config["beta1s"][0]), float(config["beta2"])
    return (
        _edge_finder_controls(b1, lr, b2)
        + _window_controls(b1, lr, b2, window_stats)
        + _small_readout_controls()
        + exponent_controls()
    )


def exponent_controls(measure=None) -> list[Control]:
    """The effective exponent (:func:`gaugedyn.adam.effective_exponent`, as the runs call it)
    on 1-D losses with known answers, their minimum off the origin: ``|s - 0.3|^4 / 4`` reads
    4, a quadratic reads 2, a quadratic core of half-width 0.2 updates with a quartic wall reads
    above 2.5 with the wall between 0.1 and 0.4 updates."""
    from ...adam import core_wall, effective_exponent

    measure = effective_exponent if measure is None else measure

    def quartic():
        e = measure(lambda s: abs(s - 0.3) ** 4 / 4)
        return e["exponent"], abs(e["exponent"] - 4) <= 0.05

    def quadratic():
        e = measure(lambda s: 3.0 * (s + 0.2) ** 2)
        return e["exponent"], abs(e["exponent"] - 2) <= 0.05

    def wall():
        cw = core_wall(0.2, 1e3)
        e = measure(lambda s: cw(s - 0.3))
        out = {"exponent": e["exponent"], "wall": e["wall"]}
        return out, e["exponent"] > 2.5 and 0.1 <= e["wall"] <= 0.4

    name = "effective exponent along the update (effective_exponent)"
    return [
        Control(
            "exponent.power",
            name,
            "positive",
            "|s - 0.3|^4 / 4: reads 4 within 0.05",
            "the fit measures a known power around the line minimum",
            quartic,
        ),
        Control(
            "exponent.quadratic",
            name,
            "negative",
            "3 (s + 0.2)^2: reads 2 within 0.05",
            "a quadratic reads no superquadratic exponent",
            quadratic,
        ),
        Control(
            "exponent.core_wall",
            name,
            "positive",
            "a quadratic core of half-width 0.2 updates and a quartic wall (stiffness 1e3), "
            "minimum at 0.3: reads above 2.5, the wall between 0.1 and 0.4 updates",
            "a step that reaches a wall reads superquadratic, and where the wall is",
            wall,
        ),
    ]


def _threshold(beta1: float) -> float:
    """`._edge.threshold()`, imported when a control runs: its module needs torch, which
    declaring the controls (what ``gaugedyn publish`` reads) does not."""
    from ._edge import threshold

    return threshold(beta1)


def _edge_finder_controls(b1: float, lr: float, b2: float) -> list[Control]:
    from ._protocol import edge_start

    task = {"skip": 0.1, "steps": 400, "lr": lr, "beta2": b2}

    def found(cross, expect):
        t = edge_start(_edge_record(_threshold(b1), lr, cross), task)
        return t, t == expect

    def started_up():
        thr = _threshold(b1)
        rec = _edge_record(thr, lr, None)
        rec["sharpness"][:2] = 0.95 * thr / lr  # during the start-up only
        t = edge_start(rec, task)
        return t, t == -1

    return [
        Control(
            "edge.found",
            "edge finder (edge_start)",
            "positive",
            "Lanczos record crossing 0.9 thr at step 200 (after the start-up): edge at 200",
            "the finder reads the edge where the sharpness reaches it",
            lambda: found(200, 200),
        ),
        Control(
            "edge.never",
            "edge finder (edge_start)",
            "negative",
            "a record at half the threshold throughout: no edge",
            "no edge where none is",
            lambda: found(None, -1),
        ),
        Control(
            "edge.start_up",
            "edge finder (edge_start)",
            "negative",
            "a record above the edge only during the start-up: no edge",
            "the start-up is left out",
            started_up,
        ),
    ]


def _small_readout_controls() -> list[Control]:
    from ._edge_analysis import period_two, quadratic_separation

    y = 0.01 * np.arange(200)
    e = 0.3
    wave = np.sin(2 * np.pi * np.arange(200) / 50)
    known = 10.0 ** np.linspace(0, 1, 100)
    return [
        Control(
            "period_two.alternation",
            "period-2 readout (period_two)",
            "positive",
            f"a trend with an alternation +-{e:g}: reads {2 * e:g} (within 1e-9)",
            "the readout measures the period-2 component",
            lambda: (v := period_two(y + e * (-1.0) ** np.arange(200)), abs(v - 2 * e) < 1e-9),
        ),
        Control(
            "period_two.smooth",
            "period-2 readout (period_two)",
            "negative",
            "a trend and a slow sine (period 50 steps): reads below 0.01",
            "slow changes read no period-2 component",
            lambda: (v := period_two(y + wave), v < 0.01),
        ),
        Control(
            "separation.tenfold",
            "quadratic separation readout",
            "positive",
            "sharpness ten times the active curvature over the second half: reads 1",
            "the readout measures log10(S / kappa_g)",
            lambda: (
                v := quadratic_separation({"sharpness": 10 * known, "kappa_g": known}),
                abs(v - 1) < 1e-12,
            ),
        ),
        Control(
            "separation.equal",
            "quadratic separation readout",
            "negative",
            "sharpness equal to the active curvature: reads 0",
            "no separation reads none",
            lambda: (
                v := quadratic_separation({"sharpness": known, "kappa_g": known}),
                abs(v) < 1e-12,
            ),
        ),
    ]


def _window_controls(b1, lr, b2, window_stats) -> list[Control]:
    from ._edge_analysis import freeze_readout

    steps, edge = 1000, 100
    t = np.arange(0, steps, 10)

    def record(cross: int | None):
        thr = _threshold(b1)
        ratio = np.where(t >= edge, 1.0, 0.5)
        frozen = np.where(t >= 50, 0.6, np.nan)
        if cross is not None:
            frozen[t >= cross] = 0.95
        return {
            "edge_start": edge,
            "threshold": thr,
            "kappa_g": np.full(steps, thr / lr),
            "cosine": np.full(steps, -0.9),
            "loss": 1.0 + 0.1 * (-1.0) ** np.arange(steps),
            "ema_loss": 1.0 + 0.01 * (-1.0) ** np.arange(steps),
            "secant": np.ones(steps),
            "lanczos_step": t,
            "sharpness": ratio * thr / lr,
            "freeze_step": np.array([50]),
            "freeze_ratio": np.array([0.5]),
            "frozen_sharpness": frozen[None, :] * thr / lr,
        }

    task = {"lr": lr, "beta2": b2}

    def read(cross):
        fr = freeze_readout(record(cross), task)
        w = window_stats(record(cross), task)
        return {
            "delay": fr["delay"][0],
            "time_to_edge": fr["time_to_edge"],
            "adaptive": w.get("adaptive"),
        }

    def later():
        r = read(600)
        return r, r["delay"] == 500 and r["time_to_edge"] == edge and r["adaptive"] == 0

    def same():
        r = read(edge)
        return r, r["delay"] == 0

    def never():
        r = read(None)
        return r, r["delay"] == t[-1] - edge

    words = (
        "a record on the edge from step 100 (half the threshold before), a copy frozen at "
        "step 50 at 0.6 of the threshold"
    )
    return [
        Control(
            "window.frozen_later",
            "frozen-before-edge delay and edge-window readouts (freeze_readout, window_stats)",
            "positive",
            f"{words} that reaches the edge at step 600: delay 500, time to the edge 100, the "
            "adaptive run's log10 lr S / thr in the window 0",
            "the readouts measure when each arm reaches the edge",
            later,
        ),
        Control(
            "window.frozen_equal",
            "frozen-before-edge delay and edge-window readouts (freeze_readout, window_stats)",
            "negative",
            f"{words} that reaches the edge with the adaptive run: delay 0",
            "equal arms read no delay",
            same,
        ),
        Control(
            "window.frozen_never",
            "frozen-before-edge delay and edge-window readouts (freeze_readout, window_stats)",
            "positive",
            f"{words} that never reaches the edge: delay to the record's end (990 - 100)",
            "a copy that never arrives reads the run's end, a lower bound",
            never,
        ),
    ]

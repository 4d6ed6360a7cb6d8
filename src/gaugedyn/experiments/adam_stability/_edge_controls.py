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
from ._edge import threshold
from ._freeze import (
    FREEZE_BEFORE,
    delay,
    diagonal_quadratic_model,
    edge_times,
    freeze_arms,
    sharpening_model,
)

FREEZE_STEPS = 3000
"""Steps of each arm of the frozen-``v`` controls."""


def freeze_controls(config: dict, arms=freeze_arms) -> list[Control]:
    """The frozen-``v`` comparison's controls at each ``beta1`` of ``config`` (module doc);
    ``arms`` is the comparison (an argument, so a test can hand a broken one)."""
    lr, b2 = float(config["lrs"][0]), float(config["beta2"])
    out = []
    for b1 in config["beta1s"]:

        def quadratic(b1=b1):
            r = arms(diagonal_quadratic_model(), lr, b1, b2, FREEZE_STEPS, FREEZE_BEFORE)
            ta, tf = edge_times(r)
            return {"adaptive": ta, "frozen": tf}, ta >= 0 and tf < 0

        def fixed(b1=b1):
            model = sharpening_model(lr, b1)
            r = arms(model, lr, b1, b2, FREEZE_STEPS, FREEZE_BEFORE, fixed=1.0)
            ta, tf = edge_times(r)
            return {"adaptive": ta, "frozen": tf}, ta >= 0 and delay(r) == 0

        where = f"beta1 {b1:g}, beta2 {b2:g}, lr {lr:g}, v frozen at {FREEZE_BEFORE:g} thr"
        out += [
            Control(
                f"freeze.quadratic:b{b1:g}",
                "frozen-v comparison, v frozen before the edge",
                "positive",
                f"diagonal quadratic ({where}): the adaptive arm reaches the edge, the frozen "
                f"arm not in {FREEZE_STEPS} steps",
                "the comparison shows v driving the sharpness where v is the only mechanism",
                quadratic,
            ),
            Control(
                f"freeze.fixed_preconditioner:b{b1:g}",
                "frozen-v comparison, v frozen before the edge",
                "negative",
                f"a model sharpening by itself under a fixed preconditioner ({where}): both "
                "arms reach the edge at the same step",
                "the comparison reads no mechanism where v plays no part",
                fixed,
            ),
        ]
    return out


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
    thr = threshold(b1)
    return (
        _edge_finder_controls(thr, lr, b2)
        + _window_controls(thr, lr, b2, window_stats)
        + _small_readout_controls()
    )


def _edge_finder_controls(thr: float, lr: float, b2: float) -> list[Control]:
    from ._protocol import edge_start

    task = {"skip": 0.1, "steps": 400, "lr": lr, "beta2": b2}

    def found(cross, expect):
        t = edge_start(_edge_record(thr, lr, cross), task)
        return t, t == expect

    def started_up():
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


def _window_controls(thr, lr, b2, window_stats) -> list[Control]:
    memory = 1.0 / (1.0 - b2)
    steps = int(20 * memory)
    t = np.arange(0, steps, max(1, int(memory) // 4))

    def record(frozen_factor):
        S = np.full(t.size, thr / lr)
        rec = {
            "edge_start": 0,
            "threshold": thr,
            "kappa_g": np.full(steps, thr / lr),
            "cosine": np.full(steps, -0.9),
            "loss": 1.0 + 0.1 * (-1.0) ** np.arange(steps),
            "ema_loss": 1.0 + 0.01 * (-1.0) ** np.arange(steps),
            "secant": np.ones(steps),
            "lanczos_step": t,
            "sharpness": S,
            "freeze_step": 0,
            "frozen_sharpness": frozen_factor * S,
        }
        w = window_stats(rec, {"lr": lr, "beta2": b2})
        return {"frozen": w.get("frozen"), "adaptive": w.get("adaptive")}

    def doubled():
        r = record(2.0)
        return r, math.isclose(r["frozen"], math.log10(2), abs_tol=1e-12) and r["adaptive"] == 0

    def same():
        r = record(1.0)
        return r, r["frozen"] == r["adaptive"] == 0

    return [
        Control(
            "window.frozen_doubles",
            "frozen and adaptive readouts (window_stats)",
            "positive",
            "a frozen copy at twice the threshold after the freeze, the "
            "adaptive run on it: reads log10 2 and 0",
            "the readouts measure each arm's sharpness against the threshold",
            doubled,
        ),
        Control(
            "window.frozen_equal",
            "frozen and adaptive readouts (window_stats)",
            "negative",
            "a frozen copy equal to the adaptive run on the threshold: reads 0 and 0",
            "equal arms read equal",
            same,
        ),
    ]

"""Known-answer controls of the prototypes' measures (`._measures`), on hand-placed
prototypes, through `._measures.measure_runs()`, the function every run's measures come from.

``N = 10`` training inputs ``x_j = (j + 1/2) / N`` on the unit interval; a prototype
``p_i = -b_i / w_i`` is placed by choosing ``w_i = 10`` and ``b_i = -10 p_i``:

- **expulsion** (outside fraction): two prototypes placed at ``-0.3`` and ``1.4`` and the rest
  on inputs read ``0.2``; every prototype on an input reads 0;
- **coverage** (reconstruction error and usage): prototypes on the inputs shifted by ``0.01``
  read a reconstruction error of ``0.01`` and use every prototype (usage 1 by the nearest
  prototype and by the largest response); every prototype on one input reads usage ``1/N`` by
  both, and the error of matching all inputs to that point.
"""

from __future__ import annotations

import numpy as np

from ...harness import Control
from . import _measures as pm

N = 10
X = (np.arange(N) + 0.5) / N


def measured(p, measure=None) -> dict:
    """Every measure of one run whose prototypes are ``p`` (``w = 10``, ``a = 1``, ``c = 0``)."""
    measure = pm.measure_runs if measure is None else measure
    p = np.asarray(p, float)[None, :]
    w = np.full_like(p, 10.0)
    got = measure(
        X[None, :], np.sin(2 * np.pi * X)[None, :], w, -w * p, np.ones_like(p), np.zeros(1)
    )
    return {k: float(np.asarray(v)[0]) for k, v in got.items() if k != "prototypes"}


def controls(config: dict, measure=None) -> list[Control]:
    """The measures' controls (module doc); ``measure`` replaces ``measure_runs`` in a test."""
    expelled = X.copy()
    expelled[0], expelled[-1] = -0.3, 1.4
    shifted = X + 0.01
    one = np.full(N, X[3])
    collapsed_error = float(np.mean(np.abs(X - X[3])))

    def check(p, **expect):
        got = measured(p, measure)
        ok = all(abs(got[k] - v) < 1e-9 for k, v in expect.items())
        return {k: got[k] for k in expect}, ok

    return [
        Control(
            "expulsion.two_outside",
            "outside fraction (measure_runs)",
            "positive",
            "10 prototypes, two placed outside the inputs' hull at -0.3 and 1.4: 0.2",
            "the measure counts the prototypes expelled from the data",
            lambda: check(expelled, outside_fraction=0.2),
        ),
        Control(
            "expulsion.none",
            "outside fraction (measure_runs)",
            "negative",
            "every prototype on a training input: 0",
            "no prototype outside reads none",
            lambda: check(X, outside_fraction=0.0),
        ),
        Control(
            "coverage.shifted",
            "reconstruction error and usage (measure_runs)",
            "positive",
            "prototypes on the inputs shifted by 0.01: error 0.01, usage 1 "
            "(nearest and largest response)",
            "the measures read how the prototypes cover the data",
            lambda: check(shifted, reconstruction_error=0.01, usage_nearest=1.0, usage_argmax=1.0),
        ),
        Control(
            "coverage.collapsed",
            "reconstruction error and usage (measure_runs)",
            "negative",
            f"every prototype on one input: usage 1/{N} by both, error {collapsed_error:.3g}",
            "prototypes that cover nothing read so",
            lambda: check(
                one, reconstruction_error=collapsed_error, usage_nearest=1 / N, usage_argmax=1 / N
            ),
        ),
    ]

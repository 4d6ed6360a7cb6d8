"""Argument checks at the public entry points of `gaugedyn.stats`: a confidence level, a
count of successes, an interval's endpoints and p-values are refused with one
`InputError` naming the argument and what is allowed, instead of a NaN interval
or a verdict read from a reversed interval."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .._errors import InputError


def confidence(value: Any) -> float:
    """A confidence level: a number strictly between 0 and 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < float(value) < 1.0
    ):
        raise InputError(f"confidence={value!r} is not allowed; allowed: a number in (0, 1)")
    return float(value)


def counts(k: Any, n: Any) -> tuple[int, int]:
    r"""``k`` successes in ``n`` trials: integers with $0 \le k \le n$ ($n = 0$ allowed)."""
    for name, value in (("n", n), ("k", k)):
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Integral | float)
            or (isinstance(value, float) and not value.is_integer())
        ):
            raise InputError(
                f"{name}={value!r} is not allowed; allowed: a whole number of trials or successes"
            )
    k, n = int(k), int(n)
    if n < 0 or not 0 <= k <= max(n, 0):
        raise InputError(
            f"k={k}, n={n} is not allowed; allowed: 0 <= k <= n successes in n >= 0 trials"
        )
    return k, n


def endpoints(low: Any, high: Any) -> tuple[float, float]:
    r"""An interval's endpoints as numbers, refusing a reversed interval
    ($\mathit{low} > \mathit{high}$); NaN endpoints pass (they stand for an interval that could
    not be formed)."""
    try:
        low, high = float(low), float(high)
    except (TypeError, ValueError):
        raise InputError(
            f"interval ({low!r}, {high!r}) is not allowed; allowed: two numbers low <= high"
        ) from None
    if low > high:
        raise InputError(f"interval ({low:g}, {high:g}) is reversed; allowed: low <= high")
    return low, high


def threshold(value: Any) -> float:
    """A verdict's threshold: a finite number."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
    ):
        raise InputError(f"threshold={value!r} is not allowed; allowed: a finite number")
    return float(value)


def pvalues(p: Any) -> np.ndarray:
    """p-values: numbers in [0, 1], at least one along the last axis."""
    try:
        a = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"p={p!r} is not allowed; allowed: p-values, numbers in [0, 1]") from None
    if a.ndim == 0 or a.shape[-1] == 0:
        raise InputError("p is empty or a single number; allowed: an array of p-values")
    bad = ~((a >= -ROUNDING) & (a <= 1.0 + ROUNDING))
    if bool(bad.any()):
        raise InputError(
            f"p holds {float(a[bad].flat[0])!r}, which is not a p-value; allowed: numbers in [0, 1]"
        )
    return np.clip(a, 0.0, 1.0)


ROUNDING = 1e-12
"""How far outside [0, 1] a computed p-value may fall by rounding (then it is clipped)."""

r"""The effective exponent of a loss along a line, at the scale of one update.

For ``f(s) = L(x + s u)`` (``u`` an update, so ``s = 1`` is one step) with its line minimum
``s*`` in ``[-search, search]`` (bounded Brent, `scipy.optimize.minimize_scalar()`), the
rise $D(s) = f(s^* + s) - f(s^*)$ is fitted as $D \approx A |s|^n$ over ``|s|`` from ``lo`` to
``step`` on both sides (``points`` log-spaced values a side): the **effective exponent** ``n`` is
the least-squares slope of ``log D`` on ``log |s|`` (both sides pooled, and each side apart).
A quadratic reads 2, $|x|^n / n$ reads $n$; a narrow quadratic core with a steep wall reads
2 when the step stays inside the core and more than 2 when the step reaches the wall. The
**local exponents** are the slopes between neighbouring ``|s|`` (the two sides' rises summed),
and the **distance to the wall** is the smallest ``|s|`` (in steps) at which the local exponent
first reaches ``wall_exponent`` (``nan`` when it never does inside the fitted range).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from .._errors import InputError

WALL_EXPONENT = 2.5
"""The local exponent at which the loss along the line counts as on its wall."""


def effective_exponent(
    f: Callable[[float], float],
    step: float = 1.0,
    lo: float = 1.0 / 32.0,
    points: int = 12,
    search: float = 2.0,
    wall_exponent: float = WALL_EXPONENT,
) -> dict:
    """The effective exponent of ``f`` around its line minimum (module doc).

    A rise that is not positive (the loss at its float resolution) leaves its point out; fewer
    than three points a side give ``nan``.

    Parameters
    ----------
    f : Callable[[float], float]
        The loss along the line, ``f(s) = L(x + s u)``, in units of one update ``u``.
    step : float
        The largest ``|s|`` fitted (``1.0``: one update); finite and above ``lo``.
    lo : float
        The smallest ``|s|`` fitted; ``0 < lo < step``.
    points : int
        How many log-spaced ``|s|`` are fitted on each side of ``s*``; at least 3.
    search : float
        The line minimum ``s*`` is searched in ``[-search, search]``; positive.
    wall_exponent : float
        The local exponent at which the loss counts as on its wall.

    Returns
    -------
    dict
        ``exponent`` (both sides pooled), ``exponent_sides`` (``s < 0``, ``s > 0``),
        ``s_min`` (``s*``), ``s`` (the ``|s|`` fitted), ``rise`` ``(2, points)`` (``D`` at
        ``-s`` and ``+s``), ``local`` (local exponents between neighbouring ``|s|``) and
        ``wall`` (the distance to the wall, ``nan`` when none).

    Raises
    ------
    InputError
        When not ``0 < lo < step``, ``points < 3``, ``search <= 0`` or ``step`` is not
        finite.
    """
    if not (0 < lo < step and points >= 3 and search > 0 and math.isfinite(step)):
        raise InputError(
            f"lo={lo}, step={step}, points={points}, search={search}: allowed: "
            "0 < lo < step, points >= 3, search > 0"
        )
    res = minimize_scalar(
        f, bounds=(-search, search), method="bounded", options={"xatol": 1e-6 * lo}
    )
    s_min = float(res.x)
    f0 = float(f(s_min))
    s = np.geomspace(lo, step, points)
    rise = np.array([[float(f(s_min + sign * x)) - f0 for x in s] for sign in (-1.0, 1.0)])
    ls = np.log(s)

    def slope(x, y):
        ok = np.isfinite(y) & (y > 0)
        if ok.sum() < 3:
            return math.nan
        return float(np.polyfit(x[ok], np.log(y[ok]), 1)[0])

    sides = [slope(ls, rise[0]), slope(ls, rise[1])]
    pooled = slope(np.concatenate([ls, ls]), np.concatenate(list(rise)))
    both = rise.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        local = np.diff(np.log(np.where(both > 0, both, np.nan))) / np.diff(ls)
    hit = np.flatnonzero(local >= wall_exponent)
    wall = float(math.sqrt(s[hit[0]] * s[hit[0] + 1])) if hit.size else math.nan
    return {
        "exponent": pooled,
        "exponent_sides": sides,
        "s_min": s_min,
        "s": s,
        "rise": rise,
        "local": local,
        "wall": wall,
    }


def core_wall(width: float, stiffness: float, power: float = 4.0) -> Callable[[float], float]:
    r"""A 1-D core-wall loss: $s^2 / 2$ inside $|s| < \texttt{width}$, plus
    $\texttt{stiffness}\,(|s| - \texttt{width})^\texttt{power}$ beyond (a narrow quadratic core and a steep wall): the known answer of
    `effective_exponent()` (2 for a step inside the core, above 2 for one that reaches the
    wall, the wall at ``width``).

    Parameters
    ----------
    width : float
        The half-width of the quadratic core, where the wall starts.
    stiffness : float
        The wall's coefficient.
    power : float
        The wall's power in ``|s| - width``.

    Returns
    -------
    Callable[[float], float]
        The loss ``f(s)``.
    """

    def f(s: float) -> float:
        x = abs(s)
        return 0.5 * x * x + (stiffness * (x - width) ** power if x > width else 0.0)

    return f

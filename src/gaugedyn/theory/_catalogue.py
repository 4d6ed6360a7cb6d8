r"""A catalogue of the critical points a teacher's landscape shows to gradient flow.

From ``starts`` random students ($w_i \sim \mathcal{N}(0, I/D)$, $a_i \sim \mathcal{N}(0, \mathit{scale}^2 / K)$, each drawn
from its own ``numpy.random.SeedSequence(seed).spawn`` child) the flow runs to ``t_max``
(`solve_batch()`, order parameters); the end of each trajectory, every interior plateau on
the way (`plateaus()`) and the start itself (Newton's method finds critical points of every
index, where the flow finds minima) are refined to critical points (`critical_point()`),
and the converged ones are merged into entries up to permutation of the students, the gauge,
coinciding units and rotations fixing the teacher (`same_point()`). An entry's **basin** is
the share of starts whose end refines to it, with the Clopper-Pearson interval of
`scipy.stats.binomtest.proportion_ci()`; its **visits** are the starts that plateaued
there and its **newton** the starts from which Newton's method reached it. A start whose flow
failed (non-finite) or whose end did not refine below ``tol`` is listed as unresolved; its
share is the remainder of the basins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._errors import InputError
from .._json import strict
from .._options import Param
from ._landscape import CriticalPoint, critical_point, realize, same_point
from ._plateaus import SETTINGS as PLATEAU_SETTINGS
from ._plateaus import plateaus
from ._problem import Problem
from ._solve import log_times, solve_batch

SETTINGS = {
    "starts": Param(
        int,
        default=64,
        name="starts",
        lo=1,
        hi=100_000,
        why="a day of flows on one core",
        help="random students",
    ),
    "t_max": Param(
        float,
        default=1000.0,
        name="t_max",
        lo=0,
        lo_open=True,
        hi=1e8,
        why="float64 time resolution",
        help="flow time of each start",
    ),
    "scale": Param(
        float,
        default=1.0,
        name="scale",
        lo=0,
        lo_open=True,
        hi=1e3,
        why="second-layer weights beyond 1e3 overflow the loss",
        help="a_i ~ N(0, scale^2 / K)",
    ),
    "confidence": Param(
        float,
        default=0.95,
        name="confidence",
        lo=0.5,
        hi=0.999,
        why="an interval wider than 99.9% says nothing",
        help="level of the basin intervals",
    ),
}
"""The settings of `catalogue()`, declared once."""


@dataclass
class Entry:
    """One critical point of the catalogue: ``point``; ``ends``: the starts whose flow ended
    here; ``visits``: the starts that plateaued here on the way; ``newton``: the starts from
    which `critical_point()` reached it directly."""

    point: CriticalPoint
    ends: list = field(default_factory=list)
    visits: list = field(default_factory=list)
    newton: list = field(default_factory=list)


@dataclass
class Catalogue:
    """Entries sorted by loss; ``starts`` drawn; ``unresolved``: starts whose flow failed or
    whose end did not refine below ``tol`` (with the reason); ``settings``; ``singular``: the
    converged refinements at which a unit's weights had collapsed to zero (not catalogued:
    the parameterisation is singular there)."""

    entries: list
    starts: int
    unresolved: list
    settings: dict
    singular: int = 0

    def basin(self, entry: Entry) -> dict:
        """``{"count", "share", "low", "high"}``: the share of starts ending at ``entry`` with its
        Clopper-Pearson interval at the catalogue's confidence."""
        from scipy.stats import binomtest

        k = len(entry.ends)
        ci = binomtest(k, self.starts).proportion_ci(self.settings["confidence"], "exact")
        return {"count": k, "share": k / self.starts, "low": float(ci.low), "high": float(ci.high)}

    def to_dict(self) -> dict:
        """JSON-ready: per entry its loss, gradient norm, index, unstable rates, zero modes,
        function units, basin and visits."""
        from ._landscape import function_units

        rows = []
        for e in self.entries:
            p = e.point
            units = function_units(p)
            rows.append(
                {
                    "loss": p.loss,
                    "grad_norm": p.grad_norm,
                    "index": p.index,
                    "unstable_rates": p.unstable_rates,
                    "modes": p.modes,
                    "units": p.units,
                    "residual": p.residual,
                    "function": units,
                    "basin": self.basin(e),
                    "visits": len(set(e.visits)),
                    "newton": len(e.newton),
                    "ends": e.ends,
                }
            )
        return strict(
            {
                "entries": rows,
                "starts": self.starts,
                "unresolved": self.unresolved,
                "settings": self.settings,
            }
        )


class _Merger:
    """Converged critical points merged into entries by `same_point()`; singular ones
    (a unit's weights collapsed) counted, not catalogued."""

    def __init__(self):
        self.entries: list[Entry] = []
        self.singular = 0

    def add(self, point: CriticalPoint, how: str, start: int) -> Entry | None:
        """Record ``start`` under ``how`` (``ends``, ``visits``, ``newton``) at the entry of
        ``point`` (new if no entry is the same point); ``None`` if it did not converge or is
        singular."""
        if not point.success:
            return None
        if point.singular:
            self.singular += 1
            return None
        for e in self.entries:
            if same_point(e.point, point):
                if point.grad_norm < e.point.grad_norm:
                    e.point = point
                getattr(e, how).append(start)
                return e
        self.entries.append(Entry(point))
        getattr(self.entries[-1], how).append(start)
        return self.entries[-1]


def _end_of(solution, teacher: Problem) -> Problem:
    """The last state of a trajectory as a `Problem` (realised order parameters)."""
    return realize(
        solution.a[-1],
        solution.Q[-1],
        solution.R[-1],
        teacher.b,
        teacher.V @ teacher.V.T,
        teacher.activation,
        teacher.teacher_activation,
        teacher.setup,
    )


def random_students(teacher: Problem, starts: int, seed: int, scale: float = 1.0) -> list:
    r"""``starts`` students for ``teacher`` (its ``K``, ``D``, activation): $w_i \sim \mathcal{N}(0, I/D)$,
    $a_i \sim \mathcal{N}(0, \mathit{scale}^2 / K)$, start ``j`` from ``SeedSequence(seed).spawn(starts)[j]``."""
    out = []
    for j, child in enumerate(np.random.SeedSequence(seed).spawn(starts)):
        rng = np.random.default_rng(child)
        W = rng.normal(size=(teacher.K, teacher.dim)) / np.sqrt(teacher.dim)
        a = scale * rng.normal(size=teacher.K) / np.sqrt(teacher.K)
        out.append(teacher.replace(a=a, W=W, setup={**teacher.setup, "start": j, "seed": seed}))
    return out


def catalogue(
    teacher: Problem,
    *,
    starts: int = 64,
    seed: int = 0,
    scale: float = 1.0,
    t_max: float = 1000.0,
    flatness: float = 0.05,
    min_span: float = 0.5,
    confidence: float = 0.95,
    tol: float = 1e-11,
    progress=None,
    **refine,
) -> Catalogue:
    r"""The catalogue of ``teacher``'s landscape (module docstring).

    ``teacher``: a `Problem` whose ``K``, ``D``, teacher ``(b, V)`` and activation are
    used (its student is not). ``flatness``, ``min_span``: `plateaus()`. ``tol`` and
    ``refine``: `critical_point()`. ``progress(done, total)`` is called after each start is
    refined.

    Parameters
    ----------
    teacher : Problem
        Supplies $K$, $D$, the teacher $(b, V)$ and the activation(s); its student is unused.
    starts : int
        Random students, in $[1, 10^5]$.
    seed : int
        Entropy of the ``numpy.random.SeedSequence`` spawned once per start (a non-negative
        integer).
    scale : float
        $a_i \sim N(0, \mathrm{scale}^2 / K)$, in $(0, 10^3]$.
    t_max : float
        Flow time of each start, in $(0, 10^8]$.
    flatness : float
        See `flat_stretches()`, in $(0, 1]$.
    min_span : float
        See `flat_stretches()`, in $[0, 50]$.
    confidence : float
        Level of the basins' Clopper-Pearson intervals, in $[0.5, 0.999]$.
    tol : float
        The gradient norm at which `critical_point()` stops.
    progress : Callable or None
        ``progress(done, total)``, called after each start.
    **refine : dict
        Further keyword arguments of `critical_point()` (``formulation``, ``zero_tol``, ...).

    Returns
    -------
    Catalogue
        The merged critical points sorted by loss, with their basins, visits and Newton starts,
        the unresolved starts and the settings.

    Raises
    ------
    InputError
        For a ``teacher`` that is not a `Problem` or a setting outside its range (before any
        flow runs).
    """
    if not isinstance(teacher, Problem):
        raise InputError(f"teacher={type(teacher).__name__} is not allowed; allowed: a Problem")
    starts = SETTINGS["starts"].accept(starts)
    scale = SETTINGS["scale"].accept(scale)
    t_max = SETTINGS["t_max"].accept(t_max)
    confidence = SETTINGS["confidence"].accept(confidence)
    PLATEAU_SETTINGS["flatness"].accept(flatness)
    PLATEAU_SETTINGS["min_span"].accept(min_span)
    problems = random_students(teacher, starts, seed, scale)
    batch = solve_batch(problems, t_max=t_max, t_eval=log_times(t_max))
    merger = _Merger()
    unresolved: list[dict] = []
    for j, pr in enumerate(problems):
        merger.add(critical_point(pr, tol=tol, **refine), "newton", j)
        if batch.failed[j]:
            unresolved.append({"start": j, "reason": str(batch.errors[j])})
        else:
            sol = batch[j]
            for pl in plateaus(
                sol,
                pr,
                flatness=flatness,
                min_span=min_span,
                kinds=("interior",),
                tol=tol,
                **refine,
            ):
                merger.add(pl.point, "visits", j)
            end = critical_point(_end_of(sol, teacher), tol=tol, **refine)
            if merger.add(end, "ends", j) is None and not end.singular:
                unresolved.append(
                    {
                        "start": j,
                        "reason": end.message,
                        "grad_norm": end.grad_norm,
                        "index": end.index,
                        "loss": end.loss,
                    }
                )
        if progress is not None:
            progress(j + 1, starts)
    entries = merger.entries
    entries.sort(key=lambda e: e.point.loss)
    settings = dict(
        starts=starts,
        seed=seed,
        scale=scale,
        t_max=t_max,
        flatness=flatness,
        min_span=min_span,
        confidence=confidence,
        tol=tol,
        **refine,
        activation=str(teacher.activation),
        K=teacher.K,
        M=teacher.M,
        dim=teacher.dim,
    )
    return Catalogue(entries, starts, unresolved, settings, merger.singular)

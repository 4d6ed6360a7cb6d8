"""LSODA (ODEPACK) on one trajectory, stepping inside Fortran between output times.

``scipy.integrate.solve_ivp(method="LSODA")`` drives the same Fortran code one step at a time
from Python and builds a dense-output object per step. Here ``scipy.integrate.ode("lsoda")``
advances from one output time to the next inside Fortran (LSODA's own interpolation gives the
state there), with the package's right-hand side and a Jacobian of `JACOBIANS` (the exact
one, or forward differences in one vectorised call of the right-hand side); LSODA switches between
Adams (orders 1-12, non-stiff) and BDF (orders 1-5, stiff) by itself. The output grid is the
requested ``t_eval`` merged with 40 log-spaced times per decade (`_grid()`), so events are
bracketed between neighbouring grid times (relative spacing 6%); each bracket is then
re-integrated with ``solve_ivp(LSODA)`` and dense output from the left grid state, and the
crossing located by Brent's method on it. A fresh LSODA start there is in Adams mode; on the stiff
w-heavy flow at D = 1e4 it crawled at steps of 1e-4 where the march took steps of 1e3 (160k
evaluations in 40 s, unfinished), so a bracket that needs more than `BRACKET_BUDGET`
evaluations is re-integrated by Radau instead (L-stable, its own dense output: 0.2 s there).
With ``task.stop`` the run ends at the first grid time past the last specialization event, and
the final state is taken from that bracket's dense output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._errors import DivergenceError
from ._flows import FlowParams, difference_jacobian, jacobian, rhs
from ._methods import (
    FlowTask,
    Integration,
    _initial_events,
    _stopped_at_start,
    with_final,
)

MAX_STEPS = 10**6


def _compiled(p: FlowParams) -> tuple[Callable, Callable]:
    from ._compiled_flow import CompiledFlow

    flow = CompiledFlow(p)
    return (lambda t, y, p: flow.fun(t, y)), (lambda t, y, p: flow.jac(t, y))


JACOBIANS: dict[str, Callable[[FlowParams], tuple[Callable, Callable]]] = {
    "exact": lambda p: (rhs, jacobian),
    "differences": lambda p: (rhs, difference_jacobian),
    "compiled": _compiled,
}
"""The right-hand sides and Jacobians LSODA can be given, by name, each a function of the
`FlowParams` giving ``(rhs, jac)``: the exact Jacobian (`jacobian()`,
the chain rule through the kernels' second derivatives), forward differences of the vectorised
right-hand side (`difference_jacobian()`), or ``"compiled"``: the compiled
right-hand side of `._compiled_flow` with its forward differences (order parameters, an
activation with closed-form kernels and no teacher activation of its own)."""
BRACKET_BUDGET = 2000
"""Evaluations after which a bracket's LSODA re-integration is handed to Radau."""


def _grid(task: FlowTask) -> np.ndarray:
    """``t_eval``, ``0`` and 40 log-spaced times per decade from ``t_min`` to ``t_max``, where
    ``t_min`` is at most ``1e-3``, ``t_max / 10`` and the fastest initial relative rate's time
    ``min_i |y0_i| / |f_i(y0)|``, and at least ``1e-16 t_max``: an event in the first transient
    must fall inside a short bracket (the a-heavy gauge at D = 1e5, where ``R`` grows from 1e-5
    at 79 per unit time, specializes at t = 3.9e-5; with the grid starting at 1e-3 its bracket
    [0, 1e-3] took 22k evaluations). LSODA's step count depends on the first output times in a
    way no rule predicts (the D = 1000 a-heavy set-up at rtol 1e-10 takes 243 to 673 steps as
    ``t_min`` moves between a thousandth and one of that time); this choice was measured at
    339 (rtol 1e-10) and 783 (1e-11) steps, against 478 and 980 for ``solve_ivp(LSODA)``."""
    f = np.abs(rhs(0.0, task.y0, task.params))
    size = np.maximum(np.abs(task.y0), task.atol)
    fastest = float(np.max(f / size)) if f.size else 0.0
    scale = 1.0 / fastest if fastest > 0 else np.inf
    t_min = max(min(1e-3, task.t_max / 10.0, scale), 1e-16 * task.t_max)
    num = max(int(np.ceil(40 * np.log10(task.t_max / t_min))) + 1, 2)
    return np.union1d(np.union1d(task.t_eval, np.geomspace(t_min, task.t_max, num)), [0.0])


class _Counted:
    """The right-hand side and Jacobian (``jac(t, y, p)``) as LSODA calls them, counted, refusing
    non-finite states with a `DivergenceError`."""

    def __init__(self, p: FlowParams, jac: str = "exact"):
        self.p, self.nfev, self.njev, self.nsteps = p, 0, 0, 0
        self._rhs, self._jac = JACOBIANS[jac](p)

    def fun(self, t, y):
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise DivergenceError(self.p.component(bad), float(t), self.nfev, None)
        self.nfev += 1
        return self._rhs(t, y, self.p)

    def jac(self, t, y):
        self.njev += 1
        return self._jac(t, y, self.p)


def _march(task: FlowTask, grid, counted: _Counted, events):
    """Integrate along ``grid``: ``(times, states, brackets)``, ``brackets[e]`` the grid index
    at whose left neighbour event ``e`` is still ``< 0`` and at which it is ``>= 0``."""
    from scipy.integrate import ode

    solver = ode(counted.fun, counted.jac).set_integrator(
        "lsoda", rtol=task.rtol, atol=task.atol, nsteps=MAX_STEPS
    )
    solver.set_initial_value(task.y0, 0.0)
    ys, brackets = [task.y0.copy()], {}
    for k in range(1, grid.size):
        y = solver.integrate(grid[k])
        if not solver.successful():
            raise DivergenceError(
                f"integration failed (LSODA code {solver.get_return_code()})",
                float(solver.t),
                k,
                ys[-1],
            )
        ys.append(np.array(y))
        g = task.event_fn(ys[-1][None], task.params)[0]
        for e in np.flatnonzero(np.isnan(events) & (g >= 0)):
            if e not in brackets:
                brackets[int(e)] = k
        pending = np.isnan(events) & ~np.isin(np.arange(events.size), list(brackets))
        if task.stop and not np.any(pending[task.stop_mask]):
            break
    nsteps = int(solver._integrator.iwork[10]) if hasattr(solver._integrator, "iwork") else 0
    return grid[: len(ys)], np.array(ys), brackets, nsteps


class _OverBudget(Exception):
    """A bracket's LSODA re-integration used up `BRACKET_BUDGET` evaluations."""


def _bracket(task: FlowTask, t0, t1, y0, counted: _Counted):
    """Dense solution on ``[t0, t1]`` from ``y0``: ``solve_ivp(LSODA)``, handed to Radau if it
    needs more than `BRACKET_BUDGET` evaluations (module docstring); its steps are added
    to ``counted.nsteps``."""
    from scipy.integrate import solve_ivp

    start = counted.nfev

    def fun(t, y):
        if counted.nfev - start > BRACKET_BUDGET:
            raise _OverBudget
        return counted.fun(t, y)

    kw = dict(rtol=task.rtol, atol=task.atol, dense_output=True, jac=counted.jac)
    try:
        sol = solve_ivp(fun, (t0, t1), y0, method="LSODA", **kw)
    except _OverBudget:
        sol = solve_ivp(counted.fun, (t0, t1), y0, method="Radau", **kw)
    counted.nsteps += len(sol.t) - 1
    return sol.sol


def _locate(task: FlowTask, ts, ys, brackets, events, counted: _Counted):
    """Event times inside their brackets; returns the dense solutions by bracket index."""
    from scipy.optimize import brentq

    p = task.params
    dense = {
        k: _bracket(task, ts[k - 1], ts[k], ys[k - 1], counted)
        for k in sorted(set(brackets.values()))
    }
    for e, k in brackets.items():

        def g(t, e=e, k=k):
            return task.event_fn(dense[k](t)[None], p)[0, e]

        lo, hi = ts[k - 1], ts[k]
        events[e] = (
            hi
            if g(hi) < 0
            else brentq(g, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
        )
    return dense


class Lsoda:
    """LSODA through ``scipy.integrate.ode`` with the Jacobian ``JACOBIANS[jacobian]`` (see the
    module docstring); ``Lsoda(jacobian)(task) -> Integration``."""

    def __init__(self, jacobian: str = "exact"):
        if jacobian not in JACOBIANS:
            raise ValueError(f"jacobian={jacobian!r}; allowed: {', '.join(JACOBIANS)}")
        self.jacobian = jacobian

    def __repr__(self) -> str:
        return f"Lsoda({self.jacobian!r})"

    def __call__(self, task: FlowTask) -> Integration:
        return lsoda(task, self.jacobian)


def lsoda(task: FlowTask, jacobian: str = "exact") -> Integration:
    """LSODA through ``scipy.integrate.ode`` with the Jacobian ``JACOBIANS[jacobian]`` (see the
    module docstring)."""
    events = _initial_events(task)
    if task.stop and np.all(np.isfinite(events[task.stop_mask])):
        return _stopped_at_start(task, events)
    counted = _Counted(task.params, jacobian)
    ts, ys, brackets, nsteps = _march(task, _grid(task), counted, events)
    dense = _locate(task, ts, ys, brackets, events, counted)
    stopped = task.stop and np.all(np.isfinite(events[task.stop_mask]))
    t_final = float(np.max(events[task.stop_mask])) if stopped else float(ts[-1])
    keep = np.isin(ts, task.t_eval) & (ts <= t_final)
    k_stop = max(brackets.get(e, 0) for e in np.flatnonzero(task.stop_mask)) if stopped else 0
    te, Y = with_final(
        ts[keep], ys[keep], t_final, lambda: dense[k_stop](t_final) if stopped else ys[-1]
    )
    return Integration(
        t=te,
        y=Y,
        events=events,
        t_final=t_final,
        nfev=counted.nfev,
        njev=counted.njev,
        nsteps=nsteps + counted.nsteps,
        nrejected=None,
        status=1 if stopped else 0,
        message="stopped at event" if stopped else "reached t_max",
    )

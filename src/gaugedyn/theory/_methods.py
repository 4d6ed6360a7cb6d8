"""The integrators of the population flow (the registry `METHODS` is in `._registry`).

Every method is a callable ``method(task: FlowTask) -> Integration`` (as ``scipy.integrate``'s
``METHODS`` maps names to solver classes). A `FlowTask` is one trajectory: the initial
state and parameters, the horizon, the output times, the tolerances and the events; an
`Integration` is what comes back: states on the output times (and the final time), event
times and the integrator's counters. Events are first crossings from ``< 0`` to ``>= 0`` of
``task.event_fn`` (``0`` when already ``>= 0`` at the start), located on each method's dense
output; with ``task.stop`` the run ends once every specialization event has happened.

Here: `rodas()` (one trajectory of the batched Rosenbrock method), `ScipyIVP`
(``scipy.integrate.solve_ivp``) and `gradient_descent()` (the ``dynamics="gd"`` map).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._errors import DivergenceError, InputError
from .._options import MAX_SECONDS
from ._flows import FlowParams, gd_step, jacobian, rhs, rhs_and_jacobian
from ._rosenbrock import rodas4


@dataclass(frozen=True)
class FlowTask:
    """One trajectory to integrate: ``dy/dt = rhs(t, y, params)`` from ``y0`` on ``[0, t_max]``,
    outputs at ``t_eval``, tolerances ``rtol, atol``; ``event_fn(y (N, n), params) -> (N, E)``
    with ``E = n_events`` (the first ``M`` are the specialization events); ``stop``: end once
    those ``M`` have all happened."""

    y0: np.ndarray
    params: FlowParams
    t_max: float
    t_eval: np.ndarray
    rtol: float
    atol: float
    event_fn: Callable
    n_events: int
    stop: bool = False

    @property
    def stop_mask(self) -> np.ndarray:
        """The events that end the run (every teacher specialized)."""
        K, M = self.params.K, self.params.M
        return np.concatenate([np.ones(M, dtype=bool), np.zeros(K, dtype=bool)])


@dataclass
class Integration:
    """One integrated trajectory: ``t (T,)`` (the output times reached, then the final time),
    states ``y (T, n)``, first-crossing ``events (E,)`` (NaN: none), ``t_final`` and counters
    (``nrejected`` is ``None`` where the method does not report it); ``status`` ``0`` reached
    ``t_max``, ``1`` stopped at the events; ``integrator`` names the method that ran where a
    dispatching method (``"auto"``) chose it."""

    t: np.ndarray
    y: np.ndarray
    events: np.ndarray
    t_final: float
    nfev: int
    njev: int
    nsteps: int
    nrejected: int | None
    status: int
    message: str
    integrator: str | None = None


def with_final(te, Y, t_final, y_final: Callable):
    """Outputs ``(te, Y)`` with the final time appended unless it is the last output time
    (``y_final()`` gives the state there)."""
    if te.size == 0 or te[-1] < t_final:
        te = np.append(te, t_final)
        Y = np.vstack([Y, y_final()[None]])
    return te, Y


def rodas(task: FlowTask) -> Integration:
    """The Rodas4 integrator of `._rosenbrock` on one trajectory."""
    p = task.params
    res = rodas4(
        rhs,
        jacobian,
        task.y0[None],
        p,
        lambda q, i: q,
        np.array([task.t_max]),
        task.t_eval,
        rtol=task.rtol,
        atol=task.atol,
        event_fn=task.event_fn,
        n_events=task.n_events,
        stop_when_all=task.stop_mask if task.stop else None,
        component=p.component,
        fun_jac=rhs_and_jacobian,
    )
    t_final = float(res.t_final[0])
    keep = task.t_eval <= t_final
    te, Y = with_final(task.t_eval[keep], res.y[0, keep], t_final, lambda: res.y_final[0])
    return Integration(
        t=te,
        y=Y,
        events=res.events[0],
        t_final=t_final,
        nfev=int(res.nfev[0]),
        njev=int(res.njev[0]),
        nsteps=int(res.nsteps[0]),
        nrejected=int(res.nrejected[0]),
        status=int(res.status[0]),
        message=res.message[0],
    )


def _initial_events(task: FlowTask) -> np.ndarray:
    g0 = task.event_fn(task.y0[None], task.params)[0]
    return np.where(g0 >= 0, 0.0, np.nan)


def _stopped_at_start(task: FlowTask, events) -> Integration:
    return Integration(
        t=np.array([0.0]),
        y=task.y0[None],
        events=events,
        t_final=0.0,
        nfev=0,
        njev=0,
        nsteps=0,
        nrejected=None,
        status=1,
        message="stopped at event",
    )


def _refine_events(task: FlowTask, events, ts, ys, sol_fn) -> None:
    """Fill the events still NaN from the values on the steps ``(ts, ys)``: the first step where
    an event is ``>= 0`` brackets it; Brent's method on the dense output ``sol_fn`` locates it."""
    from scipy.optimize import brentq

    G = task.event_fn(ys, task.params)
    for e in range(task.n_events):
        if np.isfinite(events[e]):
            continue
        hit = np.flatnonzero(G[:, e] >= 0)
        if hit.size and hit[0] > 0:
            k = hit[0]

            def ge(tt, e=e):
                return task.event_fn(sol_fn(tt)[None], task.params)[0, e]

            lo, hi = ts[k - 1], ts[k]
            if ge(lo) >= 0:
                events[e] = lo
            else:
                events[e] = brentq(
                    ge, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500
                )


class Pace:
    """The work guard of a step-by-step integration: at the end of each window of at least
    `PACE_AFTER` seconds (looked at every `PACE_EVERY` right-hand sides) it projects
    the time still needed to reach ``t_max`` at the window's pace (``(t_max - t)`` times the
    seconds per unit of ``t`` in the window) and raises `InputError` when the projection
    exceeds `gaugedyn._options.MAX_SECONDS` (about a day).

    An explicit method's step is bounded by the flow's stiffness, which stays once the flow has
    settled, so its pace there is constant and the projection honest (``DOP853`` on the D = 10
    ``single`` set-up: 1.2 steps per unit of ``t``, so ``t_max = 1e12`` would take decades); while
    the flow still moves, steps are shorter than later, so the projection errs long, which the
    margin from seconds to a day absorbs."""

    def __init__(self, method: str, t_max: float):
        import time

        self.method, self.t_max, self.clock = method, t_max, time.perf_counter
        self.start = self.clock()
        self.t_ref, self.wall_ref, self.t_seen, self.calls = 0.0, self.start, 0.0, 0

    def __call__(self, t: float) -> None:
        self.calls += 1
        self.t_seen = max(self.t_seen, t)
        if self.calls % PACE_EVERY:
            return
        now = self.clock()
        if now - self.wall_ref < PACE_AFTER:  # windows of at least PACE_AFTER seconds
            return
        if self.t_seen > self.t_ref:
            left = (self.t_max - self.t_seen) * (now - self.wall_ref) / (self.t_seen - self.t_ref)
            if left > MAX_SECONDS:
                raise InputError(
                    f"method={self.method!r} has reached t={self.t_seen:.4g} of t_max="
                    f"{self.t_max:g} in {now - self.start:.3g} s ({self.calls} right-hand "
                    f"sides); at its pace since t={self.t_ref:.4g} the rest needs about "
                    f"{left / 3600:.3g} h, more than the {MAX_SECONDS / 3600:.3g} h (about a "
                    "day) a solve accepts: its steps stay short after the flow settles (an "
                    "explicit method's are bounded by the flow's stiffness); use method 'lsoda' "
                    "(implicit, for stiff flows; the span or order-parameter formulation keeps "
                    "the state small) or a smaller t_max"
                )
        self.t_ref, self.wall_ref = self.t_seen, now


PACE_AFTER = 2.0
"""Seconds of the shortest window over which `Pace` projects."""
PACE_EVERY = 256
"""Right-hand sides between two projections of `Pace`."""


class ScipyIVP:
    """``scipy.integrate.solve_ivp(method=name)`` with the package's right-hand side (and its
    exact Jacobian for the implicit methods), events located by Brent's method on the dense
    output; a non-finite state raises `DivergenceError`, a run that would take more than
    about a day `InputError` within seconds (`Pace`)."""

    IMPLICIT = ("Radau", "BDF", "LSODA")

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ScipyIVP({self.name!r})"

    def _fun(self, p: FlowParams, pace: Pace):
        count = {"nfev": 0}

        def fun(t, y):
            if not np.all(np.isfinite(y)):
                bad = int(np.flatnonzero(~np.isfinite(y))[0])
                raise DivergenceError(p.component(bad), float(t), count["nfev"], None)
            count["nfev"] += 1
            pace(float(t))
            return rhs(t, y, p)

        return fun

    def _terminal(self, task: FlowTask):
        M, p = task.params.M, task.params

        def spec_event(t, y):
            return float(np.min(task.event_fn(y[None], p)[0, :M]))

        # attributes scipy's solve_ivp reads from an event function (mypy cannot type them)
        spec_event.terminal = True  # type: ignore[attr-defined]
        spec_event.direction = 1  # type: ignore[attr-defined]
        return [spec_event]

    def __call__(self, task: FlowTask) -> Integration:
        from scipy.integrate import solve_ivp

        p = task.params
        kwargs = {"jac": lambda t, y: jacobian(t, y, p)} if self.name in self.IMPLICIT else {}
        events = _initial_events(task)
        if task.stop and np.all(np.isfinite(events[task.stop_mask])):
            return _stopped_at_start(task, events)
        fun = self._fun(p, Pace(self.name, task.t_max))
        sol = solve_ivp(
            fun,
            (0.0, task.t_max),
            task.y0,
            method=self.name,
            rtol=task.rtol,
            atol=task.atol,
            dense_output=True,
            events=self._terminal(task) if task.stop else None,
            **kwargs,
        )
        if sol.status == -1:
            last = sol.y[:, -1] if sol.y.size else task.y0
            raise DivergenceError(
                f"integration failed ({sol.message})", float(sol.t[-1]), len(sol.t) - 1, last
            )
        t_final = float(sol.t[-1])
        _refine_events(task, events, sol.t, sol.y.T, sol.sol)
        if task.stop and sol.status == 1:
            t_final = float(sol.t_events[0][0])
            g_end = task.event_fn(sol.sol(t_final)[None], p)[0]
            events = np.where(np.isnan(events) & (g_end >= -1e-12), t_final, events)
        te = task.t_eval[task.t_eval <= t_final]
        Y = sol.sol(te).T if te.size else np.empty((0, task.y0.size))
        te, Y = with_final(te, Y, t_final, lambda: sol.sol(t_final))
        return Integration(
            t=te,
            y=Y,
            events=events,
            t_final=t_final,
            nfev=sol.nfev,
            njev=sol.njev,
            nsteps=len(sol.t) - 1,
            nrejected=None,
            status=sol.status,
            message=sol.message,
        )


def _gd_events(task: FlowTask, events, g_prev, y, k: int, eta: float):
    """Record the first crossings between iterates ``k - 1`` and ``k``, placed by linear
    interpolation of the event values; returns the values at ``k``."""
    g = task.event_fn(y[None], task.params)[0]
    new = np.isnan(events) & (g >= 0)
    if g_prev is None:
        events[new] = 0.0
    else:
        frac = np.clip(g_prev / np.where(new, g_prev - g, 1.0), 0.0, 1.0)
        events[new] = ((k - 1) + frac[new]) * eta
    return g


def gradient_descent(
    task: FlowTask, eta: float, progress: Callable[[int, int], object] | None = None
) -> Integration:
    r"""Population gradient descent $\theta \to \theta - \eta \nabla L$ (`gd_step()`), step ``k``
    reported at time $k \eta$; the outputs are the iterates nearest to ``t_eval``.
    ``progress(done, total)`` is called once per chunk of at most 1000 steps."""
    p = task.params
    n_steps = int(np.ceil(task.t_max / eta - 1e-9))
    chunk = max(1, min(1000, n_steps // 200))
    k_out = np.unique(np.clip(np.rint(task.t_eval / eta).astype(np.int64), 0, n_steps))
    events = np.full(task.n_events, np.nan)
    y = task.y0.copy()
    ys, ks = [], []
    j, k, g_prev = 0, 0, None
    for k in range(n_steps + 1):
        if progress is not None and k % chunk == 0:
            progress(k, n_steps)
        if task.n_events:  # finite iterates near overflow: the next step reports divergence
            with np.errstate(over="ignore", invalid="ignore"):
                g_prev = _gd_events(task, events, g_prev, y, k, eta)
        halt = task.stop and np.all(np.isfinite(events[task.stop_mask]))
        if (j < k_out.size and k_out[j] == k) or halt or k == n_steps:
            ys.append(y.copy())
            ks.append(k)
            j += k_out[j] == k if j < k_out.size else 0
        if halt or k == n_steps:
            break
        with np.errstate(over="ignore", invalid="ignore"):
            y_new = gd_step(y, eta, p)
        if not np.all(np.isfinite(y_new)):
            bad = int(np.flatnonzero(~np.isfinite(y_new))[0])
            raise DivergenceError(p.component(bad), (k + 1) * eta, k + 1, y)
        y = y_new
    if progress is not None:
        progress(k, n_steps)
    done = np.array(ks)
    stopped = k < n_steps
    return Integration(
        t=done * eta,
        y=np.array(ys),
        events=events,
        t_final=done[-1] * eta,
        nfev=k,
        njev=0,
        nsteps=k,
        nrejected=0,
        status=1 if stopped else 0,
        message="stopped at event" if stopped else "reached t_max",
    )

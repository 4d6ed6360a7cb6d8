"""Solving the population dynamics: integrators chosen by name, events, results.

``METHODS`` maps a name to an integrator: ``"rodas"`` (the batched L-stable Rosenbrock method of
:mod:`._rosenbrock`, vectorised over trajectories) and scipy's ``solve_ivp`` methods ``"Radau"``,
``"BDF"``, ``"LSODA"`` (given the exact Jacobian), ``"DOP853"``, ``"RK45"``. Events are found by
root-finding on each method's dense output:

- specialization time of teacher ``n``: first ``t`` with ``max_i m_in(t) >= threshold``;
- pruning time of student ``i``: first ``t`` with ``|rho_i(t)| < prune_tol``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

from .._errors import DivergenceError, InputError
from ._flows import (
    FlowParams,
    _check_formulation,
    _expand_params,
    gd_step,
    initial_state,
    jacobian,
    rhs,
    rhs_and_jacobian,
    state_to_order_parameters,
    weights,
)
from ._observables import Definitions, alignment, delta_drift, observe, owner, rho
from ._rosenbrock import rodas4
from ._solution import BatchSolution, Solution

SCIPY_METHODS = ("Radau", "BDF", "LSODA", "DOP853", "RK45")
_IMPLICIT = ("Radau", "BDF", "LSODA")
METHODS = {"rodas": "batched Rodas4 (L-stable Rosenbrock, exact Jacobian, quintic dense output)",
           **{m: f"scipy.integrate.solve_ivp(method={m!r})" for m in SCIPY_METHODS}}
DYNAMICS = ("flow", "gd")
DEFAULT_DEFINITIONS = Definitions()


def default_t_max(problem) -> float:
    """A horizon long enough for the slowest neuron to specialise.

    Transport of neuron ``i`` runs at mobility ``1/|w_i|^2`` and reaction at ``a_i^2 + |w_i|^2``,
    so the slowest clock is ``max_i max(|w_i|^2, 1/(a_i^2 + |w_i|^2), 1)``; the horizon is
    ``100`` of those over ``min_n |b_n|`` (for the w-heavy ``single`` set-up, ``100 s D``, about
    12 times its specialization time).
    """
    q = np.sum(problem.W**2, axis=1)
    clock = np.maximum(np.maximum(q, 1.0 / (problem.a**2 + q)), 1.0)
    return float(100.0 * np.max(clock) / max(np.min(np.abs(problem.b)), 1e-3))


def log_times(t_max: float, t_min: float = 1e-3, per_decade: int = 40) -> np.ndarray:
    """``0`` followed by log-spaced times from ``min(t_min, t_max/10)`` to ``t_max``."""
    t_min = min(t_min, t_max / 10.0)
    num = max(int(np.ceil(per_decade * np.log10(t_max / t_min))) + 1, 2)
    return np.concatenate([[0.0], np.geomspace(t_min, t_max, num)])


def _check_positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}={value!r} is not allowed; it must be a number > 0") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"{name}={value!r} is not allowed; it must be finite and > 0")
    return v


def _check_common(formulation, dynamics, method, rtol, atol):
    _check_formulation(formulation)
    if dynamics not in DYNAMICS:
        raise InputError(f"dynamics={dynamics!r} is not allowed; choose one of {', '.join(DYNAMICS)}")
    if method not in METHODS:
        raise InputError(f"method={method!r} is not allowed; choose one of {', '.join(METHODS)}")
    _check_positive("rtol", rtol)
    _check_positive("atol", atol)


def _check_t_eval(t_eval, t_max):
    t_eval = np.asarray(t_eval, dtype=np.float64).ravel()
    if t_eval.size == 0 or not np.all(np.isfinite(t_eval)) or np.any(np.diff(t_eval) <= 0) \
            or t_eval[0] < 0 or t_eval[-1] > t_max:
        raise InputError(f"t_eval must be strictly increasing within [0, t_max={t_max:g}]; got "
                         f"{t_eval.size} values from {t_eval.min():g} to {t_eval.max():g}")
    return t_eval


def _event_fn(definitions: Definitions):
    def events(y, p: FlowParams):
        a, Q, R = state_to_order_parameters(y, p)
        T = _expand_params(p, y)[1]
        # specialization of teacher n: max_i m_in crosses the threshold (one event per teacher)
        m = np.max(alignment(Q, R, T), axis=-2) - definitions.threshold
        prune = definitions.prune_tol - np.abs(rho(a, Q))
        return np.concatenate([m, prune], axis=-1)

    return events


def _split_events(ev, M):
    """``(specialization (..., M), pruning (..., K))`` from first-crossing times ``(..., M + K)``."""
    return ev[..., :M], ev[..., M:]


def _stop_mask(K, M):
    """Stop once every teacher is specialized (whichever students carry it)."""
    return np.concatenate([np.ones(M, dtype=bool), np.zeros(K, dtype=bool)])


def _scipy(method, y0, p, t_max, t_eval, rtol, atol, event_fn, E, stop):
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq

    count = {"nfev": 0}

    def fun(t, y):
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise DivergenceError(p.component(bad), float(t), count["nfev"], None)
        count["nfev"] += 1
        return rhs(t, y, p)

    kwargs = {}
    if method in _IMPLICIT:
        kwargs["jac"] = lambda t, y: jacobian(t, y, p)
    ev_list = None
    if stop:
        M = p.M

        def spec_event(t, y):
            return float(np.min(event_fn(y[None], p)[0, :M]))

        spec_event.terminal = True
        spec_event.direction = 1
        ev_list = [spec_event]
    g0 = event_fn(y0[None], p)[0]
    events = np.where(g0 >= 0, 0.0, np.nan)
    stop_now = stop and np.all(np.isfinite(events[_stop_mask(p.K, p.M)]))
    if stop_now:
        return dict(t=np.array([0.0]), y=y0[None], events=events, t_final=0.0, nfev=0, njev=0,
                    nsteps=0, nrejected=0, status=1, message="stopped at event")
    sol = solve_ivp(fun, (0.0, t_max), y0, method=method, rtol=rtol, atol=atol, dense_output=True,
                    events=ev_list, **kwargs)
    if sol.status == -1:
        last = sol.y[:, -1] if sol.y.size else y0
        raise DivergenceError(f"integration failed ({sol.message})", float(sol.t[-1]),
                              len(sol.t) - 1, last)
    t_final = float(sol.t[-1])
    ts = sol.t
    G = event_fn(sol.y.T, p)
    for e in range(E):
        if np.isfinite(events[e]):
            continue
        hit = np.flatnonzero(G[:, e] >= 0)
        if hit.size and hit[0] > 0:
            k = hit[0]

            def ge(tt, e=e):
                return event_fn(sol.sol(tt)[None], p)[0, e]

            lo, hi = ts[k - 1], ts[k]
            if ge(lo) >= 0:
                events[e] = lo
            else:
                events[e] = brentq(ge, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    if stop and sol.status == 1:
        t_final = float(sol.t_events[0][0])
        g_end = event_fn(sol.sol(t_final)[None], p)[0]
        events = np.where(np.isnan(events) & (g_end >= -1e-12), t_final, events)
    te = t_eval[t_eval <= t_final]
    Y = sol.sol(te).T if te.size else np.empty((0, y0.size))
    te, Y = _with_final(te, Y, t_final, lambda: sol.sol(t_final))
    return dict(t=te, y=Y, events=events, t_final=t_final, nfev=sol.nfev, njev=sol.njev,
                nsteps=len(sol.t) - 1, nrejected=None, status=sol.status, message=sol.message)


def _with_final(te, Y, t_final, y_final):
    """Outputs ``(te, Y)`` with the final time appended unless it is the last output time
    (``y_final()`` gives the state there)."""
    if te.size == 0 or te[-1] < t_final:
        te = np.append(te, t_final)
        Y = np.vstack([Y, y_final()[None]])
    return te, Y


def _rodas_single(y0, p, t_max, t_eval, rtol, atol, event_fn, E, stop):
    res = rodas4(rhs, jacobian, y0[None], p, lambda q, i: q, np.array([t_max]), t_eval,
                 rtol=rtol, atol=atol, event_fn=event_fn, n_events=E,
                 stop_when_all=_stop_mask(p.K, p.M) if stop else None, component=p.component,
                 fun_jac=rhs_and_jacobian)
    t_final = float(res.t_final[0])
    keep = t_eval <= t_final
    te, Y = _with_final(t_eval[keep], res.y[0, keep], t_final, lambda: res.y_final[0])
    return dict(t=te, y=Y, events=res.events[0], t_final=t_final, nfev=int(res.nfev[0]),
                njev=int(res.njev[0]), nsteps=int(res.nsteps[0]), nrejected=int(res.nrejected[0]),
                status=int(res.status[0]), message=res.message[0])


def _gd(y0, p, eta, t_max, t_eval, event_fn, E, stop, progress=None):
    n_steps = int(np.ceil(t_max / eta - 1e-9))
    chunk = max(1, min(1000, n_steps // 200))  # how often ``progress(done, total)`` is called
    k_out = np.unique(np.clip(np.rint(t_eval / eta).astype(np.int64), 0, n_steps))
    events = np.full(E, np.nan)
    stop_mask = _stop_mask(p.K, p.M)
    y = y0.copy()
    ys, ks = [], []
    j = 0
    k = 0
    g_prev = None
    for k in range(n_steps + 1):
        if progress is not None and k % chunk == 0:
            progress(k, n_steps)
        if E:
            # first crossing, placed by linear interpolation between the two iterates around it
            g = event_fn(y[None], p)[0]
            new = np.isnan(events) & (g >= 0)
            if g_prev is None:
                events[new] = 0.0
            else:
                frac = np.clip(g_prev / np.where(new, g_prev - g, 1.0), 0.0, 1.0)
                events[new] = ((k - 1) + frac[new]) * eta
            g_prev = g
        halt = stop and np.all(np.isfinite(events[stop_mask]))
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
    ks = np.array(ks)
    return dict(t=ks * eta, y=np.array(ys), events=events, t_final=ks[-1] * eta, nfev=k,
                njev=0, nsteps=k, nrejected=0, status=1 if k < n_steps else 0,
                message="stopped at event" if k < n_steps else "reached t_max")


def _assemble(problem, p, raw, definitions, keep_weights):
    a, Q, R = state_to_order_parameters(raw["y"], p)
    b, T = problem.b, p.T
    obs = observe(a, Q, R, b, T, problem.activation, definitions)
    a0, Q0, _ = state_to_order_parameters(raw["y"][:1], p)
    drift = float(np.max(delta_drift(a, Q, a0[0], Q0[0])))
    spec, prune = _split_events(raw["events"], p.M)
    W = weights(raw["y"], p)[1] if keep_weights else None
    return a, Q, R, obs, spec, prune, owner(a[-1], Q[-1], R[-1], T, b), drift, W


def solve(problem, *, formulation: str = "order-parameters", dynamics: str = "flow",
          eta: float | None = None, t_max: float | None = None, method: str = "rodas",
          rtol: float = 1e-8, atol: float = 1e-10, definitions: Definitions = DEFAULT_DEFINITIONS,
          t_eval=None, stop_at_specialization: bool = False, keep_weights: bool = False,
          singular_cutoff: float = 1e-10,
          progress: Callable[[int, int], object] | None = None) -> Solution:
    """Population gradient flow (or gradient descent with step ``eta``) from a :class:`Problem`.

    ``dynamics="flow"`` integrates ``da/dt = -dL/da``, ``dW/dt = -dL/dW`` with ``method`` (see
    :data:`METHODS`) in the chosen exact ``formulation``; ``dynamics="gd"`` iterates
    ``theta -> theta - eta grad L`` and reports step ``k`` at time ``k eta``. Outputs at
    ``t_eval`` (default: ``0`` and log-spaced times up to ``t_max``; default ``t_max`` from
    :func:`default_t_max`), plus the final time. With ``stop_at_specialization`` the run ends when
    every teacher feature has specialised. Raises :class:`InputError` on bad settings and
    :class:`DivergenceError` when the trajectory stops being finite. ``progress``, if given, is
    called as ``progress(steps_done, steps_total)`` once per chunk of at most 1000
    gradient-descent steps (the flow does not call it); it does not change the result.
    """
    _check_common(formulation, dynamics, method, rtol, atol)
    if not isinstance(definitions, Definitions):
        raise InputError(f"definitions={definitions!r} is not allowed; pass a Definitions")
    if dynamics == "gd":
        if eta is None:
            raise InputError("eta is required for dynamics='gd'; give a step size > 0")
        eta = _check_positive("eta", eta)
    elif eta is not None:
        raise InputError(f"eta={eta!r} is only used with dynamics='gd'")
    t_max = default_t_max(problem) if t_max is None else _check_positive("t_max", t_max)
    t_eval = log_times(t_max) if t_eval is None else _check_t_eval(t_eval, t_max)
    if dynamics == "gd" and t_max / eta > 1e7:
        raise InputError(f"dynamics='gd' with eta={eta:g} up to t_max={t_max:g} needs "
                         f"{t_max / eta:.3g} steps (more than 1e7); give a smaller t_max")
    if method in _IMPLICIT and formulation == "weight-space" and problem.K * problem.dim > 5000:
        raise InputError(f"method={method!r} on the weight-space flow needs a dense "
                         f"{problem.K * problem.dim}^2 Jacobian; use formulation='span' (exact at "
                         "any D) or an explicit method")
    if method == "rodas" and formulation == "weight-space" and problem.K * problem.dim > 5000:
        raise InputError(f"method='rodas' on the weight-space flow at K*D={problem.K * problem.dim}"
                         " needs a dense Jacobian; use formulation='span' (exact at any D)")
    y0, p = initial_state(problem, formulation, singular_cutoff=singular_cutoff)
    event_fn = _event_fn(definitions)
    E = p.M + p.K
    start = time.perf_counter()
    if dynamics == "gd":
        raw = _gd(y0, p, eta, t_max, t_eval, event_fn, E, stop_at_specialization, progress)
        method_name = "gd"
    elif method == "rodas":
        raw = _rodas_single(y0, p, t_max, t_eval, rtol, atol, event_fn, E, stop_at_specialization)
        method_name = method
    else:
        raw = _scipy(method, y0, p, t_max, t_eval, rtol, atol, event_fn, E, stop_at_specialization)
        method_name = method
    wall = time.perf_counter() - start
    a, Q, R, obs, spec, prune, own, drift, W = _assemble(problem, p, raw, definitions,
                                                         keep_weights)
    settings = dict(formulation=formulation, dynamics=dynamics, eta=eta, t_max=t_max,
                    method=method_name, rtol=rtol, atol=atol,
                    stop_at_specialization=stop_at_specialization,
                    singular_cutoff=singular_cutoff)
    diagnostics = dict(method=method_name, rtol=rtol, atol=atol, nfev=raw["nfev"],
                       njev=raw["njev"], nsteps=raw["nsteps"], nrejected=raw["nrejected"],
                       status=raw["status"], message=raw["message"], wall_time=wall,
                       t_final=raw["t_final"])
    return Solution(t=raw["t"], a=a, Q=Q, R=R, observables=obs, specialization_time=spec,
                    pruning_time=prune, owner=own, delta_drift=drift, diagnostics=diagnostics,
                    definitions=definitions, problem=problem.describe(), W=W, settings=settings)


def solve_batch(problems: Sequence, *, formulation: str = "order-parameters",
                t_max: float | None = None, rtol: float = 1e-8, atol: float = 1e-10,
                definitions: Definitions = DEFAULT_DEFINITIONS, t_eval=None, method: str = "rodas",
                stop_at_specialization: bool = False,
                singular_cutoff: float = 1e-10) -> BatchSolution:
    """Population gradient flow of many problems (same ``K``, ``M``, activation) at once.

    ``method="rodas"`` advances all trajectories together with per-trajectory adaptive steps
    (vectorised numpy, batched linear solves); any other name of :data:`METHODS` loops
    :func:`solve` over the problems (for comparison). Outputs share ``t_eval``; ``t_max``
    defaults to the largest :func:`default_t_max` of the batch.
    """
    problems = list(problems)
    if not problems:
        raise InputError("problems is empty; give at least one Problem")
    _check_common(formulation, "flow", method, rtol, atol)
    first = problems[0]
    for i, pr in enumerate(problems):
        if (pr.K, pr.M, pr.activation) != (first.K, first.M, first.activation):
            raise InputError(f"problem {i} has K={pr.K}, M={pr.M}, activation={pr.activation!r};"
                             f" the batch needs K={first.K}, M={first.M}, "
                             f"activation={first.activation!r}")
        if formulation == "weight-space" and pr.dim != first.dim:
            raise InputError(f"problem {i} has dim={pr.dim}; a weight-space batch needs one dim")
    if t_max is None:
        t_max = max(default_t_max(pr) for pr in problems)
    t_max = _check_positive("t_max", t_max)
    t_eval = log_times(t_max) if t_eval is None else _check_t_eval(t_eval, t_max)
    start = time.perf_counter()
    if method != "rodas":
        sols = [solve(pr, formulation=formulation, t_max=t_max, method=method, rtol=rtol,
                      atol=atol, definitions=definitions, t_eval=t_eval,
                      stop_at_specialization=stop_at_specialization,
                      singular_cutoff=singular_cutoff) for pr in problems]
        return _stack(sols, t_eval, definitions, time.perf_counter() - start)
    states = [initial_state(pr, formulation, singular_cutoff=singular_cutoff) for pr in problems]
    sizes = {y.size for y, _ in states}
    if len(sizes) != 1:
        raise InputError(f"formulation={formulation!r} gives state sizes {sorted(sizes)} across "
                         "the batch (span rank differs); use formulation='order-parameters'")
    y0 = np.stack([y for y, _ in states])
    p0 = states[0][1]
    stacked = {"b": np.stack([p.b for _, p in states]), "T": np.stack([p.T for _, p in states])}
    if p0.V is not None:
        stacked["V"] = np.stack([p.V for _, p in states])
    P = dataclasses.replace(p0, basis=None, **stacked)
    E = p0.M + p0.K
    res = rodas4(rhs, jacobian, y0, P, lambda q, i: q.take(i), np.full(len(problems), t_max),
                 t_eval, rtol=rtol, atol=atol, event_fn=_event_fn(definitions), n_events=E,
                 stop_when_all=_stop_mask(p0.K, p0.M) if stop_at_specialization else None,
                 component=p0.component, fun_jac=rhs_and_jacobian)
    wall = time.perf_counter() - start
    a, Q, R = state_to_order_parameters(res.y, P)
    b, T = P.b[:, None, :], P.T[:, None, :, :]
    obs = observe(a, Q, R, b, T, first.activation, definitions)
    drift = np.nanmax(delta_drift(a, Q, a[:, :1], Q[:, :1]), axis=1)
    af, Qf, Rf = state_to_order_parameters(res.y_final, P)
    own = owner(af, Qf, Rf, P.T, P.b)
    spec, prune = _split_events(res.events, p0.M)
    settings = dict(formulation=formulation, dynamics="flow", t_max=t_max, method=method,
                    rtol=rtol, atol=atol, stop_at_specialization=stop_at_specialization,
                    singular_cutoff=singular_cutoff)
    diags = [dict(method=method, rtol=rtol, atol=atol, nfev=int(res.nfev[i]),
                  njev=int(res.njev[i]), nsteps=int(res.nsteps[i]),
                  nrejected=int(res.nrejected[i]), status=int(res.status[i]),
                  message=res.message[i], t_final=float(res.t_final[i]), wall_time=wall)
             for i in range(len(problems))]
    return BatchSolution(t=t_eval, a=a, Q=Q, R=R, observables=obs, specialization_time=spec,
                         pruning_time=prune, owner=own, delta_drift=drift, diagnostics=diags,
                         definitions=definitions, problems=[pr.describe() for pr in problems],
                         wall_time=wall, settings=settings)


def _stack(sols, t_eval, definitions, wall):
    T = t_eval.size

    def pad(x):
        out = np.full((T,) + x.shape[1:], np.nan)
        n = min(T, x.shape[0])
        out[:n] = x[:n]
        return out

    def stack(get):
        return np.stack([pad(get(s)) for s in sols])

    obs = {k: stack(lambda s, k=k: s.observables[k].astype(float)) for k in sols[0].observables}
    return BatchSolution(
        t=t_eval, a=stack(lambda s: s.a), Q=stack(lambda s: s.Q), R=stack(lambda s: s.R),
        observables=obs, specialization_time=np.stack([s.specialization_time for s in sols]),
        pruning_time=np.stack([s.pruning_time for s in sols]),
        owner=np.stack([s.owner for s in sols]),
        delta_drift=np.array([s.delta_drift for s in sols]),
        diagnostics=[s.diagnostics for s in sols], definitions=definitions,
        problems=[s.problem for s in sols], wall_time=wall, settings=sols[0].settings)

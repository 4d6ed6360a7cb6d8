"""Solving the population dynamics: validation, events, the batched solver and results.

`METHODS` (see `._methods`) maps a name to an integrator ``method(task) ->
Integration``; `solve()` builds the task, calls the method (or iterates gradient descent)
and turns its states into a `Solution`. Events are found by root-finding on each
method's dense output:

- specialization time of teacher ``n``: first ``t`` with ``max_i m_in(t) >= threshold``;
- pruning time of student ``i``: first ``t`` with ``|rho_i(t)| < prune_tol``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

from .._errors import DivergenceError, InputError
from .._options import Param
from ._flows import (
    FlowParams,
    _check_formulation,
    _expand_params,
    initial_state,
    jacobian,
    rhs,
    rhs_and_jacobian,
    state_to_order_parameters,
    weights,
)
from ._methods import FlowTask, Integration, gradient_descent
from ._observables import (
    Definitions,
    classification_error,
    delta_drift,
    observe,
    owner,
    rho,
    specialization,
)
from ._registry import BATCHED, METHODS
from ._rosenbrock import rodas4
from ._solution import BatchSolution, Solution

DYNAMICS = ("flow", "gd")

PARAMS: dict[str, Param] = {
    "t_max": Param(
        float,
        name="t_max",
        lo=0,
        hi=1e12,
        lo_open=True,
        help="horizon",
        why="beyond 1e12 float64 time no longer resolves the steps",
    ),
    "dynamics": Param(
        str, "flow", name="dynamics", choices=DYNAMICS, help="gradient flow or gradient descent"
    ),
    "eta": Param(
        float,
        name="eta",
        lo=0,
        hi=1e3,
        lo_open=True,
        help="gradient-descent step size (dynamics gd only)",
        why="gradient descent with larger steps diverges at once on these losses",
    ),
    "method": Param(
        str, "auto", name="method", choices=tuple(METHODS), help="integrator of the flow"
    ),
    "rtol": Param(
        float,
        1e-8,
        name="rtol",
        lo=1e-13,
        hi=1e-2,
        help="relative tolerance",
        why="above 1e-2 the answer is off by more than 1% (below 1e-13 float64 rounding dominates)",
    ),
    "atol": Param(
        float,
        1e-10,
        name="atol",
        lo=1e-20,
        hi=1e-2,
        help="absolute tolerance",
        why="the state's components start at |a| ~ (s/D)^(1/2), well below 1e-2",
    ),
}
"""The settings of `solve()` and `solve_batch()`, declared once: checked by them and
offered by the command line (``gaugedyn solve``)."""
DEFAULT_DEFINITIONS = Definitions()


def default_t_max(problem) -> float:
    r"""A horizon long enough for the slowest neuron to specialise.

    Transport of neuron $i$ runs at mobility $1/|w_i|^2$ and reaction at $a_i^2 + |w_i|^2$,
    so the slowest clock is $\max_i \max(|w_i|^2, 1/(a_i^2 + |w_i|^2), 1)$; the horizon is
    $100$ of those over $\min_n |b_n|$ (for the w-heavy ``single`` set-up, $100 s D$, about
    12 times its specialization time).

    Parameters
    ----------
    problem : Problem
        The initial student and teacher; a teacher weight $|b_n|$ below $10^{-3}$ counts as
        $10^{-3}$.

    Returns
    -------
    float
        The horizon $t_\mathrm{max}$.
    """
    q = np.sum(problem.W**2, axis=1)
    clock = np.maximum(np.maximum(q, 1.0 / (problem.a**2 + q)), 1.0)
    return float(100.0 * np.max(clock) / max(np.min(np.abs(problem.b)), 1e-3))


def log_times(t_max: float, t_min: float = 1e-3, per_decade: int = 40) -> np.ndarray:
    """``0`` followed by log-spaced times from ``min(t_min, t_max/10)`` to ``t_max``.

    Parameters
    ----------
    t_max : float
        The last time, $> 0$.
    t_min : float
        The first positive time (lowered to ``t_max / 10`` for a short horizon).
    per_decade : int
        Times per decade; at least two positive times in all.

    Returns
    -------
    numpy.ndarray
        Increasing times starting at ``0`` and ending at ``t_max``.
    """
    t_min = min(t_min, t_max / 10.0)
    num = max(int(np.ceil(per_decade * np.log10(t_max / t_min))) + 1, 2)
    return np.concatenate([[0.0], np.geomspace(t_min, t_max, num)])


MAX_GD_STEPS = 1e7
GD_STEP_SECONDS = 1.2e-4
"""Fixed cost of one population gradient-descent step whatever its size (the Python loop, the
event checks, the small matrix products): 124 us of CPU per step for ``single`` at D = 10,
measured with ``solve(dynamics="gd")`` over 2,000 steps on a loaded two-core x86-64."""


def gd_flop(K: int, M: int, width: int) -> float:
    r"""Floating-point operations of one gradient-descent step beyond the fixed cost:
    $60\, \mathit{width}\, (K + M) + 12 K^2 (K + M)$, with ``width`` the columns of the state (``D`` in weight
    space, ``K + M`` for the span and the order parameters). Within a factor 2 of the CPU time
    measured at ``(K, D)`` = (1, 1e4), (1, 1e5), (8, 1e4) in weight space and K = 64 in order
    parameters, at `gaugedyn._options.FLOP_RATE`."""
    return 60.0 * width * (K + M) + 12.0 * K * K * (K + M)


def check_gd_steps(
    eta: float,
    t_max: float,
    K: int = 1,
    M: int = 1,
    width: int = 2,
    eta_name: str = "eta",
    t_max_name: str = "t_max",
) -> int:
    """The number of gradient-descent steps up to ``t_max`` (``ceil(t_max / eta)``, at most
    `MAX_GD_STEPS`) after checking their work: ``steps (GD_STEP_SECONDS + gd_flop /
    FLOP_RATE)`` seconds must stay under `gaugedyn._options.MAX_SECONDS` (about a day);
    otherwise `InputError`."""
    from .._options import FLOP_RATE, check_work

    steps = t_max / eta  # inf when eta is tiny: refused below, never turned into an int
    if not steps <= MAX_GD_STEPS:
        raise InputError(
            f"dynamics gd with {eta_name}={eta:g} up to {t_max_name}={t_max:g} "
            f"needs {steps:.3g} steps (more than {MAX_GD_STEPS:g}); give a larger "
            f"{eta_name} or a smaller {t_max_name}"
        )
    flop = gd_flop(K, M, width)
    check_work(
        f"dynamics gd with {eta_name}={eta:g} up to {t_max_name}={t_max:g} "
        f"({steps:.3g} steps, K={K}, width {width})",
        steps * (GD_STEP_SECONDS + flop / FLOP_RATE),
        f"{GD_STEP_SECONDS * 1e6:g} us per step plus {flop:.3g} floating-point "
        f"operations per step at {FLOP_RATE:g} per second",
        f"give a larger {eta_name}, a smaller {t_max_name} or the order-parameter formulation",
    )
    return int(steps)


def _check_positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}={value!r} is not allowed; it must be a number > 0") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"{name}={value!r} is not allowed; it must be finite and > 0")
    return v


def _check_problem(problem, name: str = "problem"):
    from ._problem import Problem

    if not isinstance(problem, Problem):
        raise InputError(
            f"{name}={type(problem).__name__} is not allowed; allowed: a "
            "gaugedyn.theory.Problem (single, duplicates, random_problem, ...)"
        )


def _check_common(formulation, dynamics, method, rtol, atol):
    _check_formulation(formulation)
    for name, value in (("dynamics", dynamics), ("method", method), ("rtol", rtol), ("atol", atol)):
        PARAMS[name].accept(value)


def _check_t_eval(t_eval, t_max):
    t_eval = np.asarray(t_eval, dtype=np.float64).ravel()
    if (
        t_eval.size == 0
        or not np.all(np.isfinite(t_eval))
        or np.any(np.diff(t_eval) <= 0)
        or t_eval[0] < 0
        or t_eval[-1] > t_max
    ):
        raise InputError(
            f"t_eval must be strictly increasing within [0, t_max={t_max:g}]; got "
            f"{t_eval.size} values from {t_eval.min():g} to {t_eval.max():g}"
        )
    return t_eval


def _event_fn(definitions: Definitions):
    def events(y, p: FlowParams):
        a, Q, R = state_to_order_parameters(y, p)
        T = _expand_params(p, y)[1]
        # specialization of teacher n: s_n crosses the threshold (one event per teacher)
        m = specialization(Q, R, T, p.activation) - definitions.threshold
        prune = definitions.prune_tol - np.abs(rho(a, Q))
        return np.concatenate([m, prune], axis=-1)

    return events


def _split_events(ev, M):
    """``(specialization (..., M), pruning (..., K))`` from first-crossing times ``(..., M + K)``."""
    return ev[..., :M], ev[..., M:]


def _stop_mask(K, M):
    """Stop once every teacher is specialized (whichever students carry it)."""
    return np.concatenate([np.ones(M, dtype=bool), np.zeros(K, dtype=bool)])


def _assemble(problem, p, raw: Integration, definitions, keep_weights):
    a, Q, R = state_to_order_parameters(raw.y, p)
    b, T = problem.b, p.T
    obs = observe(a, Q, R, b, T, problem.activation, definitions, problem.teacher_activation)
    a0, Q0, _ = state_to_order_parameters(raw.y[:1], p)
    drift = float(np.max(delta_drift(a, Q, a0[0], Q0[0])))
    spec, prune = _split_events(raw.events, p.M)
    W = weights(raw.y, p)[1] if keep_weights else None
    return a, Q, R, obs, spec, prune, owner(a[-1], Q[-1], R[-1], T, b), drift, W


def _check_solve(
    problem,
    formulation,
    dynamics,
    eta,
    t_max,
    method,
    rtol,
    atol,
    definitions,
    t_eval,
    singular_cutoff=1e-10,
):
    """Validated ``(eta, t_max, t_eval)`` of `solve()` (one `InputError` otherwise)."""
    _check_problem(problem)
    _check_common(formulation, dynamics, method, rtol, atol)
    if not isinstance(definitions, Definitions):
        raise InputError(f"definitions={definitions!r} is not allowed; pass a Definitions")
    if dynamics == "gd":
        if eta is None:
            raise InputError(
                "eta=None is not allowed with dynamics='gd'; give a step size: "
                f"{PARAMS['eta'].describe()}"
            )
        eta = PARAMS["eta"].accept(eta)
    elif eta is not None:
        raise InputError(f"eta={eta!r} is only used with dynamics='gd'")
    t_max = (
        _check_positive("t_max", default_t_max(problem))
        if t_max is None
        else PARAMS["t_max"].accept(t_max)
    )
    t_eval = log_times(t_max) if t_eval is None else _check_t_eval(t_eval, t_max)
    if not (isinstance(singular_cutoff, int | float) and 0 <= singular_cutoff < 1):
        raise InputError(
            f"singular_cutoff={singular_cutoff!r} is not allowed; allowed: a number "
            "in [0, 1) (relative singular values below it are dropped)"
        )
    if dynamics == "gd":
        K, M = problem.K, problem.M
        check_gd_steps(eta, t_max, K, M, problem.dim if formulation == "weight-space" else K + M)
    if method == "lsoda-compiled":
        from ._compiled_flow import flow_key

        if formulation != "order-parameters" or (
            flow_key(problem.activation, problem.teacher_activation) is None
        ):
            raise InputError(
                f"method='lsoda-compiled' needs the order-parameter formulation and an "
                f"activation with compiled kernels (relu, erf, linear or positively homogeneous) "
                f"and no teacher activation of its own; got formulation={formulation!r}, "
                f"activation={problem.activation!r}; use method='lsoda-fd' or 'auto'"
            )
    dense_jacobian = method not in ("DOP853", "RK45", "auto")
    if dense_jacobian and formulation == "weight-space" and problem.K * problem.dim > 5000:
        raise InputError(
            f"method={method!r} on the weight-space flow at K*D="
            f"{problem.K * problem.dim} needs a dense Jacobian; use "
            "formulation='span' (exact at any D) or an explicit method"
        )
    return eta, t_max, t_eval


def _check_classification_samples(samples) -> None:
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 0:
        raise InputError(
            f"classification_samples={samples!r} is not allowed; "
            "allowed: an integer >= 0 (0: no classification error)"
        )


def _diagnostics(raw: Integration, method: str, rtol: float, atol: float, wall: float) -> dict:
    """The integrator's diagnostics of a `Solution` (``method``: the name asked for)."""
    return dict(
        method=method,
        integrator=raw.integrator or method,
        rtol=rtol,
        atol=atol,
        nfev=raw.nfev,
        njev=raw.njev,
        nsteps=raw.nsteps,
        nrejected=raw.nrejected,
        status=raw.status,
        message=raw.message,
        wall_time=wall,
        t_final=raw.t_final,
    )


def solve(
    problem,
    *,
    formulation: str = "order-parameters",
    dynamics: str = "flow",
    eta: float | None = None,
    t_max: float | None = None,
    method: str = "auto",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    definitions: Definitions = DEFAULT_DEFINITIONS,
    t_eval=None,
    stop_at_specialization: bool = False,
    keep_weights: bool = False,
    singular_cutoff: float = 1e-10,
    progress: Callable[[int, int], object] | None = None,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    classification_samples: int = 0,
) -> Solution:
    r"""Population gradient flow (or gradient descent with step ``eta``) from a `Problem`.

    ``dynamics="flow"`` integrates $\dot a = -\partial L/\partial a$,
    $\dot W = -\partial L/\partial W$ with ``method`` (a name of `METHODS`; the default ``"auto"``
    runs LSODA up to 500 state numbers and DOP853 above, and ``diagnostics["integrator"]`` says
    which ran) in the chosen exact ``formulation``; ``dynamics="gd"`` iterates
    $\theta \to \theta - \eta \nabla L$ and reports step $k$ at time $k \eta$. Outputs at
    ``t_eval`` (default: ``0`` and log-spaced times up to ``t_max``; default ``t_max`` from
    `default_t_max()`), plus the final time. With ``stop_at_specialization`` the run ends when
    every teacher feature has specialised. Raises `InputError` on bad settings and
    `DivergenceError` when the trajectory stops being finite. ``progress``, if given, is
    called as ``progress(steps_done, steps_total)`` once per chunk of at most 1000
    gradient-descent steps (the flow does not call it); it does not change the result.
    ``weight_decay`` and ``lr2`` are the classical options of `FlowParams` (weight decay
    on both layers; the second layer's rate relative to the first, 0 freezing it).
    ``classification_samples > 0`` adds the classification error beside the mean-squared error:
    ``observables["classification_error"]`` and ``["classification_error_se"]`` at every output
    time (`classification_error()` with that many draws).

    Parameters
    ----------
    problem : Problem
        The teacher, the initial student and the activation(s).
    formulation : str
        ``order-parameters``, ``weight-space`` or ``span`` (`FORMULATIONS`).
    dynamics : str
        ``flow`` (gradient flow) or ``gd`` (gradient descent).
    eta : float or None
        The gradient-descent step, in $(0, 10^3]$; required with ``gd``, refused with ``flow``.
    t_max : float or None
        The horizon, in $(0, 10^{12}]$; ``None``: `default_t_max()`.
    method : str
        The flow's integrator, a name of `METHODS` (``auto``: LSODA or DOP853 by state size).
    rtol : float
        Relative tolerance, in $[10^{-13}, 10^{-2}]$.
    atol : float
        Absolute tolerance, in $[10^{-20}, 10^{-2}]$.
    definitions : Definitions
        The observables' threshold and pruning tolerance (events and owners).
    t_eval : array_like or None
        Output times, strictly increasing within $[0, t_\mathrm{max}]$; ``None``: `log_times()`.
    stop_at_specialization : bool
        End the run once every teacher is specialised.
    keep_weights : bool
        Keep the weights ``W (T, K, D)`` (weight-space and span formulations).
    singular_cutoff : float
        In $[0, 1)$: regularisation of the Jacobian on aligned pairs (`gradient_jvp()`).
    progress : Callable or None
        ``progress(steps_done, steps_total)``, called by gradient descent only.
    weight_decay : float
        Weight decay $\lambda$ on both layers, in $[0, 10^3]$.
    lr2 : float
        The second layer's rate relative to the first, in $[0, 10^3]$.
    classification_samples : int
        Draws of `classification_error()` at every output time; ``0``: none.

    Returns
    -------
    Solution
        The trajectory in order parameters, its observables, event times, final owners, gauge
        drift, settings and the integrator's diagnostics.

    Raises
    ------
    InputError
        Before any work, for a setting outside the ranges above, a ``problem`` that is not a
        `Problem`, ``eta`` missing with ``gd`` or given with ``flow``, gradient descent beyond
        $10^7$ steps or a day of work, ``lsoda-compiled`` without the order-parameter formulation
        and a compiled activation, or an implicit method on a weight-space flow with
        $K D > 5000$.
    DivergenceError
        When the trajectory stops being finite.
    """
    _check_classification_samples(classification_samples)
    eta, t_max, t_eval = _check_solve(
        problem,
        formulation,
        dynamics,
        eta,
        t_max,
        method,
        rtol,
        atol,
        definitions,
        t_eval,
        singular_cutoff,
    )
    y0, p = initial_state(
        problem, formulation, singular_cutoff=singular_cutoff, weight_decay=weight_decay, lr2=lr2
    )
    task = FlowTask(
        y0=y0,
        params=p,
        t_max=t_max,
        t_eval=t_eval,
        rtol=rtol,
        atol=atol,
        event_fn=_event_fn(definitions),
        n_events=p.M + p.K,
        stop=stop_at_specialization,
    )
    method_name = "gd" if dynamics == "gd" else method
    start = time.perf_counter()
    raw = gradient_descent(task, eta, progress) if dynamics == "gd" else METHODS[method](task)
    wall = time.perf_counter() - start
    a, Q, R, obs, spec, prune, own, drift, W = _assemble(problem, p, raw, definitions, keep_weights)
    if classification_samples:
        obs["classification_error"], obs["classification_error_se"] = classification_error(
            a,
            Q,
            R,
            problem.b,
            p.T,
            problem.activation,
            problem.teacher_activation,
            samples=classification_samples,
        )
    settings = dict(
        formulation=formulation,
        dynamics=dynamics,
        eta=eta,
        t_max=t_max,
        method=method_name,
        rtol=rtol,
        atol=atol,
        stop_at_specialization=stop_at_specialization,
        singular_cutoff=singular_cutoff,
    )
    if not p.plain:
        settings.update(weight_decay=p.weight_decay, lr2=p.lr2)
    diagnostics = _diagnostics(raw, method_name, rtol, atol, wall)
    return Solution(
        t=raw.t,
        a=a,
        Q=Q,
        R=R,
        observables=obs,
        specialization_time=spec,
        pruning_time=prune,
        owner=own,
        delta_drift=drift,
        diagnostics=diagnostics,
        definitions=definitions,
        problem=problem.describe(),
        W=W,
        settings=settings,
    )


def _check_batch(problems, formulation, method, rtol, atol, t_max, t_eval):
    """Validated ``(t_max, t_eval)`` of `solve_batch()`."""
    if not problems:
        raise InputError("problems is empty; give at least one Problem")
    for i, pr in enumerate(problems):
        _check_problem(pr, f"problems[{i}]")
    _check_common(formulation, "flow", method, rtol, atol)
    first = problems[0]
    for i, pr in enumerate(problems):
        if (pr.K, pr.M, pr.activation, pr.teacher_activation) != (
            first.K,
            first.M,
            first.activation,
            first.teacher_activation,
        ):
            raise InputError(
                f"problem {i} has K={pr.K}, M={pr.M}, activation={pr.activation!r},"
                f" teacher_activation={pr.teacher_activation!r}; the batch needs "
                f"K={first.K}, M={first.M}, activation={first.activation!r}, "
                f"teacher_activation={first.teacher_activation!r}"
            )
        if formulation == "weight-space" and pr.dim != first.dim:
            raise InputError(f"problem {i} has dim={pr.dim}; a weight-space batch needs one dim")
    t_max = (
        _check_positive("t_max", max(default_t_max(pr) for pr in problems))
        if t_max is None
        else PARAMS["t_max"].accept(t_max)
    )
    t_eval = log_times(t_max) if t_eval is None else _check_t_eval(t_eval, t_max)
    return t_max, t_eval


def _batch_params(problems, formulation, singular_cutoff):
    """Stacked initial states ``(B, n)`` and the batch's `FlowParams`."""
    states = [initial_state(pr, formulation, singular_cutoff=singular_cutoff) for pr in problems]
    sizes = {y.size for y, _ in states}
    if len(sizes) != 1:
        raise InputError(
            f"formulation={formulation!r} gives state sizes {sorted(sizes)} across "
            "the batch (span rank differs); use formulation='order-parameters'"
        )
    y0 = np.stack([y for y, _ in states])
    p0 = states[0][1]
    stacked = {"b": np.stack([p.b for _, p in states]), "T": np.stack([p.T for _, p in states])}
    if p0.V is not None:
        stacked["V"] = np.stack([p.V for _, p in states])
    return y0, dataclasses.replace(p0, basis=None, **stacked)


def solve_batch(
    problems: Sequence,
    *,
    formulation: str = "order-parameters",
    t_max: float | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    definitions: Definitions = DEFAULT_DEFINITIONS,
    t_eval=None,
    method: str = "auto",
    stop_at_specialization: bool = False,
    singular_cutoff: float = 1e-10,
) -> BatchSolution:
    r"""Population gradient flow of many problems (same $K$, $M$, activation) at once.

    ``method="auto"`` (the default) or ``"rodas"`` advances all trajectories together with
    per-trajectory adaptive steps (vectorised numpy, batched linear solves); any other name of
    `METHODS` loops `solve()` over the problems (for comparison). Outputs share
    ``t_eval``; ``t_max`` defaults to the largest `default_t_max()` of the batch. A
    trajectory that stops being finite is marked failed (``errors``, ``failed``, its
    diagnostics' ``status`` ``-2`` and ``message``); the others finish exactly as they would
    alone.

    Parameters
    ----------
    problems : Sequence
        `Problem` objects of one ``K``, ``M``, activation and teacher activation (and one
        ``dim`` in weight space).
    formulation : str
        ``order-parameters``, ``weight-space`` or ``span``; the span needs one rank across the
        batch.
    t_max : float or None
        The horizon, in $(0, 10^{12}]$; ``None``: the largest `default_t_max()`.
    rtol : float
        Relative tolerance, in $[10^{-13}, 10^{-2}]$.
    atol : float
        Absolute tolerance, in $[10^{-20}, 10^{-2}]$.
    definitions : Definitions
        The observables' threshold and pruning tolerance.
    t_eval : array_like or None
        Shared output times, strictly increasing within $[0, t_\mathrm{max}]$; ``None``:
        `log_times()`.
    method : str
        ``auto`` or ``rodas`` (batched), or another name of `METHODS` (a loop of `solve()`).
    stop_at_specialization : bool
        End each trajectory once every teacher is specialised (batched: once all are).
    singular_cutoff : float
        Regularisation of the Jacobian on aligned pairs (`gradient_jvp()`).

    Returns
    -------
    BatchSolution
        Every trajectory on the shared ``t_eval``, with per-trajectory diagnostics and errors.

    Raises
    ------
    InputError
        Before any work, for a ``problems`` that is not a sequence of `Problem` or is empty,
        problems that differ in ``K``, ``M``, activation or (in weight space) ``dim``, span ranks
        that differ, or a setting outside its range.
    DivergenceError
        When every trajectory of a looped (non-batched) method diverges.
    """
    try:
        problems = list(problems)
    except TypeError:
        raise InputError(
            f"problems={type(problems).__name__} is not allowed; allowed: a "
            "sequence of gaugedyn.theory.Problem"
        ) from None
    t_max, t_eval = _check_batch(problems, formulation, method, rtol, atol, t_max, t_eval)
    start = time.perf_counter()
    if method not in BATCHED:
        kw = dict(
            formulation=formulation,
            t_max=t_max,
            method=method,
            rtol=rtol,
            atol=atol,
            definitions=definitions,
            t_eval=t_eval,
            stop_at_specialization=stop_at_specialization,
            singular_cutoff=singular_cutoff,
        )
        sols = [_solve_or_error(pr, kw) for pr in problems]
        return _stack(problems, sols, t_eval, definitions, time.perf_counter() - start)
    y0, P = _batch_params(problems, formulation, singular_cutoff)
    res = rodas4(
        rhs,
        jacobian,
        y0,
        P,
        lambda q, i: q.take(i),
        np.full(len(problems), t_max),
        t_eval,
        rtol=rtol,
        atol=atol,
        event_fn=_event_fn(definitions),
        n_events=P.M + P.K,
        stop_when_all=_stop_mask(P.K, P.M) if stop_at_specialization else None,
        component=P.component,
        fun_jac=rhs_and_jacobian,
        raise_divergence=False,
    )
    wall = time.perf_counter() - start
    settings = dict(
        formulation=formulation,
        dynamics="flow",
        t_max=t_max,
        method=method,
        rtol=rtol,
        atol=atol,
        stop_at_specialization=stop_at_specialization,
        singular_cutoff=singular_cutoff,
    )
    return _batch_solution(problems, P, res, definitions, settings, wall)


def _batch_solution(problems, P: FlowParams, res, definitions, settings, wall) -> BatchSolution:
    """A `BatchSolution` from the batched integrator's raw result."""
    a, Q, R = state_to_order_parameters(res.y, P)
    b, T = P.b[:, None, :], P.T[:, None, :, :]
    obs = observe(
        a, Q, R, b, T, problems[0].activation, definitions, problems[0].teacher_activation
    )
    drift = np.nanmax(delta_drift(a, Q, a[:, :1], Q[:, :1]), axis=1)
    af, Qf, Rf = state_to_order_parameters(res.y_final, P)
    own = owner(af, Qf, Rf, P.T, P.b)
    spec, prune = _split_events(res.events, P.M)
    common = dict(
        method=settings["method"], integrator="rodas", rtol=settings["rtol"], atol=settings["atol"]
    )
    diags = [
        dict(
            **common,
            nfev=int(res.nfev[i]),
            njev=int(res.njev[i]),
            nsteps=int(res.nsteps[i]),
            nrejected=int(res.nrejected[i]),
            status=int(res.status[i]),
            message=res.message[i],
            t_final=float(res.t_final[i]),
            wall_time=wall,
        )
        for i in range(len(problems))
    ]
    return BatchSolution(
        t=res.t_eval,
        a=a,
        Q=Q,
        R=R,
        observables=obs,
        specialization_time=spec,
        pruning_time=prune,
        owner=own,
        delta_drift=drift,
        diagnostics=diags,
        definitions=definitions,
        problems=[pr.describe() for pr in problems],
        wall_time=wall,
        settings=settings,
        errors=list(res.errors),
    )


def _solve_or_error(problem, kw):
    """`solve()`, or the `DivergenceError` it raised."""
    try:
        return solve(problem, **kw)
    except DivergenceError as err:
        return err


def _failed_diagnostics(err: DivergenceError, kw) -> dict:
    return dict(
        method=kw["method"],
        rtol=kw["rtol"],
        atol=kw["atol"],
        status=-2,
        message=str(err),
        t_final=err.time,
    )


def _stack(problems, results, t_eval, definitions, wall):
    """A `BatchSolution` from `solve()`'s results (a `DivergenceError` in
    place of a failed one: all NaN, marked failed)."""
    ok = [isinstance(s, Solution) for s in results]
    if not any(ok):
        raise results[0]
    ref = results[ok.index(True)]
    T = t_eval.size

    def pad(x):
        out = np.full((T,) + x.shape[1:], np.nan)
        n = min(T, x.shape[0])
        out[:n] = x[:n]
        return out

    def stack(get):
        return np.stack(
            [
                pad(get(s)) if good else np.full((T,) + get(ref).shape[1:], np.nan)
                for s, good in zip(results, ok)
            ]
        )

    def each(get):
        return np.stack(
            [
                get(s) if good else np.full(np.shape(get(ref)), np.nan)
                for s, good in zip(results, ok)
            ]
        )

    obs = {k: stack(lambda s, k=k: s.observables[k].astype(float)) for k in ref.observables}
    diags = [
        s.diagnostics if good else _failed_diagnostics(s, ref.settings)
        for s, good in zip(results, ok)
    ]
    return BatchSolution(
        t=t_eval,
        a=stack(lambda s: s.a),
        Q=stack(lambda s: s.Q),
        R=stack(lambda s: s.R),
        observables=obs,
        specialization_time=each(lambda s: s.specialization_time),
        pruning_time=each(lambda s: s.pruning_time),
        owner=each(lambda s: s.owner),
        delta_drift=each(lambda s: s.delta_drift),
        diagnostics=diags,
        definitions=definitions,
        problems=[pr.describe() for pr in problems],
        wall_time=wall,
        settings=ref.settings,
        errors=[None if good else s for s, good in zip(results, ok)],
    )

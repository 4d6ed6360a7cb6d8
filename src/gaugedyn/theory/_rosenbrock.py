r"""Batched Rodas4: an L-stable Rosenbrock method advancing ``B`` trajectories at once.

Each trajectory has its own adaptive step. A step of size ``h`` from ``y`` with $J = \partial f/\partial y$
solves, for $i = 1, \dots, 6$,

$$
\left(\frac{I}{\gamma h} - J\right) k_i = f\Big(y + \sum_{j<i} a_{ij} k_j\Big)
+ \sum_{j<i} \frac{c_{ij}}{h} k_j,
$$

then $y_{new} = y + \sum_j a_{6j} k_j + k_6$ (stiffly accurate), and ``k_6`` is the embedded error
estimate (Hairer & Wanner, *Solving ODEs II*, Sect. IV.7, in the ``k``-form of their code
``RODAS``). The system is autonomous, so the time-derivative terms vanish. Dense output is the
method's own continuous extension (order 3, built from the stages ``k_1..k_5``); events are
located on it by vectorised regula falsi. Linear algebra goes through LAPACK: one factorisation
of $I/(\gamma h) - J$ per step and trajectory (a batched inverse for small systems, an LU
factorisation otherwise), reused by the six stages.

The integrator is split as scipy's ``OdeSolver`` is: `init()` builds the state of the
batch, `attempt()` tries one step, `control()` accepts or rejects it and picks the next
step size, `evaluate()` takes ``f`` and ``J`` at the accepted points, `locate_events()`
finds event times on the dense output (`dense()`), and `rodas4()` drives the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .._errors import DivergenceError

GAMMA = 0.25
_A = np.array(
    [
        [0, 0, 0, 0, 0],
        [1.544, 0, 0, 0, 0],
        [0.9466785280815826, 0.2557011698983284, 0, 0, 0],
        [3.314825187068521, 2.896124015972201, 0.9986419139977817, 0, 0],
        [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 0],
        [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1.0],
    ]
)
_C = np.array(
    [
        [0, 0, 0, 0, 0],
        [-5.6688, 0, 0, 0, 0],
        [-2.430093356833875, -0.2063599157091915, 0, 0, 0],
        [-0.1073529058151375, -9.594562251023355, -20.47028614809616, 0, 0],
        [7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160, 0],
        [
            8.083246795921522,
            -7.981132988064893,
            -31.52159432874371,
            16.31930543123136,
            -6.058818238834054,
        ],
    ]
)
_H = np.array(
    [
        [
            10.12623508344586,
            -7.487995877610167,
            -34.80091861555747,
            -7.992771707568823,
            1.025137723295662,
        ],
        [
            -0.6762803392801253,
            6.087714651680015,
            16.43084320892478,
            24.76722511418386,
            -6.594389125716872,
        ],
    ]
)
_EPS4 = 4 * np.finfo(float).eps


def dense(s, y0, y1, d1, d2):
    r"""Rodas4 continuous extension at ``t0 + s h``:
    $(1 - s)\, y_0 + s\, (y_1 + (1 - s)(d_1 + s\, d_2))$ with $d_r = \sum_j H_{rj} k_j$."""
    s = s[:, None]
    return (1 - s) * y0 + s * (y1 + (1 - s) * (d1 + s * d2))


def dense_coefficients(ks):
    """``(d1, d2)`` of `dense()` from the stages ``k_1..k_5`` of a step."""
    kk = np.stack(ks[:5], axis=-1)
    return kk @ _H[0], kk @ _H[1]


@dataclass
class BatchResult:
    """Raw output: states on ``t_eval`` (NaN after a trajectory stopped), final time and state,
    event times (NaN when none) and per-trajectory counters. ``status`` is ``0`` (reached
    ``t_end``), ``1`` (stopped at the events), ``-1`` (step budget spent) or ``-2`` (diverged;
    ``errors[j]`` then holds the `DivergenceError`)."""

    t_eval: np.ndarray
    y: np.ndarray
    t_final: np.ndarray
    y_final: np.ndarray
    events: np.ndarray
    nfev: np.ndarray
    njev: np.ndarray
    nsteps: np.ndarray
    nrejected: np.ndarray
    status: np.ndarray
    message: list
    errors: list | None = None


@dataclass
class System:
    """What the integrator needs besides the state: ``fun(t, y, params)``, ``jac`` (or both at
    once through ``fun_jac``), ``take(params, rows)``, the events and the tolerances."""

    fun: Callable
    jac: Callable
    params: object
    take: Callable
    rtol: float
    atol: float
    event_fn: Callable | None = None
    n_events: int = 0
    stop_mask: np.ndarray | None = None
    component: Callable = str
    fun_jac: Callable | None = None
    raise_divergence: bool = True


@dataclass
class State:
    """The batch between steps: accepted point ``(t, y, f, J)``, previous point ``(tp, yp)`` and
    the dense-output coefficients ``d1, d2`` of the step between them, the proposed step ``h``,
    output buffer ``out`` with its next index ``ptr``, counters, events and outcomes."""

    t: np.ndarray
    y: np.ndarray
    f: np.ndarray
    J: np.ndarray
    tp: np.ndarray
    yp: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    h: np.ndarray
    t_end: np.ndarray
    t_eval: np.ndarray
    out: np.ndarray
    ptr: np.ndarray
    have_prev: np.ndarray
    need: np.ndarray
    done: np.ndarray
    last_rejected: np.ndarray
    nfev: np.ndarray
    njev: np.ndarray
    nsteps: np.ndarray
    nrej: np.ndarray
    status: np.ndarray
    message: list
    events: np.ndarray
    t_final: np.ndarray
    y_final: np.ndarray
    errors: list

    def result(self) -> BatchResult:
        return BatchResult(
            self.t_eval,
            self.out,
            self.t_final,
            self.y_final,
            self.events,
            self.nfev,
            self.njev,
            self.nsteps,
            self.nrej,
            self.status,
            self.message,
            self.errors,
        )


def init(sys: System, y0, t_end, t_eval) -> State:
    """The state of the batch at ``t = 0`` (events already true there are recorded at ``0``;
    trajectories whose stop condition holds at once are finished)."""
    y0 = np.array(y0, dtype=np.float64)
    B, n = y0.shape
    t_end = np.broadcast_to(np.asarray(t_end, dtype=np.float64), (B,)).copy()
    t_eval = np.asarray(t_eval, dtype=np.float64)
    zeros_i, false = np.zeros(B, dtype=int), np.zeros(B, dtype=bool)
    st = State(
        t=np.zeros(B),
        y=y0.copy(),
        f=np.empty((B, n)),
        J=np.empty((B, n, n)),
        tp=np.zeros(B),
        yp=y0.copy(),
        d1=np.zeros((B, n)),
        d2=np.zeros((B, n)),
        h=np.full(B, np.nan),
        t_end=t_end,
        t_eval=t_eval,
        out=np.full((B, t_eval.size, n), np.nan),
        ptr=np.searchsorted(t_eval, 0.0, side="right") * np.ones(B, dtype=int),
        have_prev=false.copy(),
        need=np.ones(B, dtype=bool),
        done=false.copy(),
        last_rejected=false.copy(),
        nfev=zeros_i.copy(),
        njev=zeros_i.copy(),
        nsteps=zeros_i.copy(),
        nrej=zeros_i.copy(),
        status=zeros_i.copy(),
        message=["reached t_max"] * B,
        events=np.full((B, sys.n_events), np.nan),
        t_final=t_end.copy(),
        y_final=np.full((B, n), np.nan),
        errors=[None] * B,
    )
    st.out[:, : st.ptr[0]] = y0[:, None, :]
    if sys.n_events:
        assert sys.event_fn is not None  # n_events > 0 comes with an event function
        st.events[sys.event_fn(y0, sys.params) >= 0] = 0.0
        s0 = _stopped(sys, st, np.arange(B))
        st.t_final[s0] = 0.0
        st.y_final[s0] = y0[s0]
        st.out[s0, st.ptr[0] :] = np.nan
        st.done |= s0
        st.status[s0] = 1
        for j in np.flatnonzero(s0):
            st.message[j] = "stopped at event"
    return st


def _stopped(sys: System, st: State, rows):
    if sys.stop_mask is None or not sys.stop_mask.any():
        return np.zeros(rows.size, dtype=bool)
    return np.all(np.isfinite(st.events[rows][:, sys.stop_mask]), axis=1)


def _diverged(sys: System, st: State, j: int, quantity, state) -> None:
    """Trajectory ``j`` stopped being finite: raise, or mark it failed and finish it."""
    name = sys.component(quantity) if isinstance(quantity, int | np.integer) else quantity
    prefix = f"trajectory {j}: " if st.t.size > 1 and sys.raise_divergence else ""
    err = DivergenceError(prefix + name, float(st.t[j]), int(st.nsteps[j]), state)
    if sys.raise_divergence:
        raise err
    st.errors[j] = err
    st.done[j] = True
    st.status[j] = -2
    st.message[j] = str(err)
    st.t_final[j], st.y_final[j] = st.t[j], state
    st.out[j, st.ptr[j] :] = np.nan


def evaluate(sys: System, st: State) -> None:
    """``f`` and ``J`` at the newly accepted points; events and outputs on the step just taken;
    trajectories that reached ``t_end`` are finished."""
    idx = np.flatnonzero(st.need)
    if not idx.size:
        return
    p = sys.take(sys.params, idx)
    if sys.fun_jac is None:
        fi, Ji = sys.fun(st.t[idx], st.y[idx], p), sys.jac(st.t[idx], st.y[idx], p)
    else:
        fi, Ji = sys.fun_jac(st.t[idx], st.y[idx], p)
    bad = ~np.all(np.isfinite(fi), axis=1)
    for k in np.flatnonzero(bad):
        st.need[idx[k]] = False
        _diverged(sys, st, idx[k], int(np.flatnonzero(~np.isfinite(fi[k]))[0]), st.yp[idx[k]])
    if bad.any():
        idx, fi, Ji = idx[~bad], fi[~bad], Ji[~bad]
    st.f[idx], st.J[idx] = fi, Ji
    st.nfev[idx] += 1
    st.njev[idx] += 1
    seg = idx[st.have_prev[idx] & ~st.done[idx]]
    if seg.size:
        _segment(sys, st, seg)
    st.tp[idx], st.yp[idx] = st.t[idx], st.y[idx]
    st.have_prev[idx] = True
    st.need[idx] = False
    fin = idx[(st.t[idx] >= st.t_end[idx]) & ~st.done[idx]]
    st.done[fin] = True
    st.y_final[fin] = st.y[fin]
    st.t_final[fin] = st.t[fin]


def _segment(sys: System, st: State, rows) -> None:
    """Events, stops and outputs on the step ``[tp, t]`` of ``rows``."""
    hh = st.t[rows] - st.tp[rows]
    upper = st.t[rows].copy()
    if sys.n_events:
        locate_events(sys, st, rows, hh)
        _halt(sys, st, rows, hh, upper)
    _record_outputs(st, rows, hh, upper)


def locate_events(sys: System, st: State, rows, hh) -> None:
    """First crossings (``< 0`` to ``>= 0``) inside the last step, located on the dense output by
    the Illinois variant of regula falsi (bisection after 40 iterations) to ``4 eps |t|``."""
    assert sys.event_fn is not None  # called only when there are events
    pr = sys.take(sys.params, rows)
    ga, gb = sys.event_fn(st.yp[rows], pr), sys.event_fn(st.y[rows], pr)
    r, e = np.nonzero(np.isnan(st.events[rows]) & (ga < 0) & (gb >= 0))
    if not r.size:
        return
    rr = rows[r]
    pe = sys.take(sys.params, rr)

    def g(mid):
        ym = dense((mid - st.tp[rr]) / hh[r], st.yp[rr], st.y[rr], st.d1[rr], st.d2[rr])
        return sys.event_fn(ym, pe)[np.arange(rr.size), e]

    st.events[rr, e] = _illinois(g, st.tp[rr].copy(), st.t[rr].copy(), ga[r, e], gb[r, e])


def _illinois(g: Callable, lo, hi, glo, ghi):
    """Vectorised root brackets ``g(lo) < 0 <= g(hi)`` shrunk to ``4 eps |hi|``; returns ``hi``."""
    side = np.zeros(lo.size)
    for it in range(120):
        if np.all(hi - lo <= _EPS4 * np.abs(hi)):
            break
        if it < 40:
            mid = (lo * ghi - hi * glo) / (ghi - glo)
            mid = np.where((mid > lo) & (mid < hi), mid, 0.5 * (lo + hi))
        else:
            mid = 0.5 * (lo + hi)
        gm = g(mid)
        up = gm >= 0
        glo = np.where(~up, gm, np.where(side > 0, 0.5 * glo, glo))
        ghi = np.where(up, gm, np.where(side < 0, 0.5 * ghi, ghi))
        side = np.where(up, 1.0, -1.0)
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
        close = (gm == 0) | (hi - lo <= _EPS4 * np.abs(hi))
        lo = np.where(close, hi, lo)
    return hi


def _halt(sys: System, st: State, rows, hh, upper) -> None:
    """Finish the trajectories whose stop events have all happened, at the last of them."""
    halt = _stopped(sys, st, rows) & ~st.done[rows]
    for k in np.flatnonzero(halt):
        j = rows[k]
        ts = float(np.max(st.events[j][sys.stop_mask]))
        upper[k] = ts
        st.t_final[j] = ts
        st.y_final[j] = dense(
            np.array([(ts - st.tp[j]) / hh[k]]),
            st.yp[j : j + 1],
            st.y[j : j + 1],
            st.d1[j : j + 1],
            st.d2[j : j + 1],
        )[0]
        st.done[j] = True
        st.status[j] = 1
        st.message[j] = "stopped at event"


def _record_outputs(st: State, rows, hh, upper) -> None:
    """Dense output at the output times inside ``(tp, upper]`` of each row."""
    hi_idx = np.searchsorted(st.t_eval, upper, side="right")
    counts = np.maximum(hi_idx - st.ptr[rows], 0)
    if counts.sum():
        k = np.repeat(np.arange(rows.size), counts)
        starts = np.repeat(st.ptr[rows] - np.cumsum(counts) + counts, counts)
        te_idx = np.arange(counts.sum()) + starts
        rr = rows[k]
        te = st.t_eval[te_idx]
        st.out[rr, te_idx] = dense(
            (te - st.tp[rr]) / hh[k], st.yp[rr], st.y[rr], st.d1[rr], st.d2[rr]
        )
    st.ptr[rows] = np.maximum(st.ptr[rows], hi_idx)


def _rms(x):
    return np.sqrt(np.mean(x * x, axis=-1))


def active(st: State, max_steps: int):
    """Trajectories still running; those past the step budget are finished with status ``-1``."""
    act = np.flatnonzero(~st.done)
    over = act[st.nsteps[act] + st.nrej[act] >= max_steps]
    if over.size:
        st.done[over] = True
        st.status[over] = -1
        st.t_final[over], st.y_final[over] = st.t[over], st.y[over]
        for j in over:
            st.message[j] = f"max_steps={max_steps} reached at t={st.t[j]:.6g}"
        act = np.flatnonzero(~st.done)
    return act


def _initial_step(sys: System, st: State, act) -> None:
    """Hairer-Wanner's starting step for trajectories without one yet."""
    init_ = np.isnan(st.h[act])
    if not init_.any():
        return
    ya, fa = st.y[act], st.f[act]
    sc = sys.atol + sys.rtol * np.abs(ya)
    n0, n1 = _rms(ya / sc), _rms(fa / sc)
    n2 = _rms(np.einsum("bij,bj->bi", st.J[act], fa) / sc)
    ha = np.where((n0 > 1e-5) & (n1 > 1e-5), 0.01 * n0 / np.maximum(n1, 1e-300), 1e-6)
    hb = (0.01 / np.maximum(np.maximum(n1, n2), 1e-15)) ** 0.2
    st.h[act] = np.where(init_, np.minimum(100 * ha, hb), st.h[act])


class Factorization:
    r"""$M = I/(\gamma h) - J$ factorised once per step through LAPACK, solved six times: a
    batched inverse (``numpy.linalg.inv``, one call for the whole batch) for ``n <= 48``, where
    the per-call cost of a per-matrix LU would dominate; per-matrix LU (``scipy.linalg.lu_factor``,
    ``getrf``, a third of the inverse's flops) for larger systems."""

    INVERSE_MAX = 48

    def __init__(self, M):
        self.inv, self.lu = None, None
        if M.shape[-1] <= self.INVERSE_MAX:
            try:
                self.inv = np.linalg.inv(M)
                return
            except np.linalg.LinAlgError:
                pass
        self.lu = [scipy.linalg.lu_factor(m, check_finite=False) for m in M]

    def solve(self, b):
        if self.inv is not None:
            return np.sum(self.inv * b[:, None, :], axis=-1)
        return np.stack(
            [scipy.linalg.lu_solve(lu, bi, check_finite=False) for lu, bi in zip(self.lu, b)]
        )


def attempt(sys: System, st: State, act):
    """One Rodas4 step of the active trajectories: ``(y_new, err, stages, h)``, ``err`` the RMS
    of ``k_6`` in units of ``atol + rtol max(|y|, |y_new|)``."""
    _initial_step(sys, st, act)
    n = st.y.shape[1]
    ya, fa = st.y[act], st.f[act]
    hh = np.minimum(st.h[act], st.t_end[act] - st.t[act])
    p = sys.take(sys.params, act)
    M = np.eye(n) / (GAMMA * hh)[:, None, None] - st.J[act]
    ks: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        lu = Factorization(M)
        for i in range(6):
            if i == 0:
                rhs_i = fa
            else:
                u = ya + sum(_A[i, j] * ks[j] for j in range(i) if _A[i, j])
                rhs_i = (
                    sys.fun(st.t[act] + hh, u, p)
                    + sum(_C[i, j] * ks[j] for j in range(i)) / hh[:, None]
                )
            ks.append(lu.solve(rhs_i))
        y_new = ya + sum(_A[5, j] * ks[j] for j in range(5)) + ks[5]
        err = _rms(ks[5] / (sys.atol + sys.rtol * np.maximum(np.abs(ya), np.abs(y_new))))
    st.nfev[act] += 5
    return y_new, err, ks, hh


def control(sys: System, st: State, act, y_new, err, ks, hh) -> None:
    r"""Accept the steps with $\mathit{err} \le 1$, reject the others; next step $0.9\, h\, \mathit{err}^{-1/4}$
    (factor within ``[0.2, 6]``, not growing right after a rejection)."""
    err = np.where(np.isfinite(err) & np.all(np.isfinite(y_new), axis=1), err, np.inf)
    ok = err <= 1.0
    with np.errstate(divide="ignore"):
        fac = np.clip(0.9 * err**-0.25, 0.2, 6.0)
    fac = np.where(ok & st.last_rejected[act], np.minimum(fac, 1.0), fac)
    acc = act[ok]
    t_end = st.t_end[acc]
    st.t[acc] = np.where(
        t_end - (st.t[acc] + hh[ok]) <= 1e-13 * np.abs(t_end), t_end, st.t[acc] + hh[ok]
    )
    st.y[acc] = y_new[ok]
    st.d1[acc], st.d2[acc] = dense_coefficients([k[ok] for k in ks])
    st.need[acc] = True
    st.nsteps[acc] += 1
    st.nrej[act[~ok]] += 1
    st.last_rejected[act] = ~ok
    st.h[act] = hh * fac
    tiny = (st.h[act] < 1e-14 * np.maximum(np.abs(st.t[act]), 1e-300)) | ~np.isfinite(st.h[act])
    for k in np.flatnonzero(tiny):
        badc = np.flatnonzero(~np.isfinite(y_new[k]))
        _diverged(sys, st, act[k], int(badc[0]) if badc.size else "step size", st.y[act[k]].copy())


def rodas4(
    fun: Callable,
    jac: Callable,
    y0,
    params,
    take: Callable,
    t_end,
    t_eval,
    *,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    event_fn: Callable | None = None,
    n_events: int = 0,
    stop_when_all=None,
    max_steps: int = 50_000,
    component: Callable = str,
    fun_jac: Callable | None = None,
    raise_divergence: bool = True,
) -> BatchResult:
    """Integrate ``dy/dt = fun(t, y, params)`` for ``y0 (B, n)`` up to ``t_end (B,)``.

    ``take(params, index)`` restricts the parameters to a subset of trajectories; ``fun_jac``
    (optional) returns ``(fun, jac)`` together.
    ``event_fn(y, params) -> (N, E)``: event ``e`` happens at the first ``t`` where its value turns
    from ``< 0`` to ``>= 0`` (``0`` if it is already ``>= 0`` at the start). With
    ``stop_when_all`` (a boolean mask over events) a trajectory stops when all masked events have
    happened. When a state's slope is not finite or the step size collapses, raises
    `DivergenceError`, or with ``raise_divergence=False`` finishes that trajectory with
    status ``-2`` and its error, the others running on unchanged.
    """
    stop_mask = None if stop_when_all is None else np.asarray(stop_when_all, dtype=bool)
    sys = System(
        fun=fun,
        jac=jac,
        params=params,
        take=take,
        rtol=rtol,
        atol=atol,
        event_fn=event_fn,
        n_events=n_events,
        stop_mask=stop_mask,
        component=component,
        fun_jac=fun_jac,
        raise_divergence=raise_divergence,
    )
    st = init(sys, y0, t_end, t_eval)
    while True:
        evaluate(sys, st)
        act = active(st, max_steps)
        if not act.size:
            break
        y_new, err, ks, hh = attempt(sys, st, act)
        control(sys, st, act, y_new, err, ks, hh)
    return st.result()

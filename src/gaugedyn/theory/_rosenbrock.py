"""Batched Rodas4: an L-stable Rosenbrock method advancing ``B`` trajectories at once.

Each trajectory has its own adaptive step. A step of size ``h`` from ``y`` with ``J = df/dy``
solves, for ``i = 1..6``,

    (I / (gamma h) - J) k_i = f(y + sum_{j<i} a_ij k_j) + sum_{j<i} (c_ij / h) k_j,

then ``y_new = y + sum_j a_6j k_j + k_6`` (stiffly accurate), and ``k_6`` is the embedded error
estimate (Hairer & Wanner, *Solving ODEs II*, Sect. IV.7). The system is autonomous, so the
time-derivative terms vanish. Dense output is the method's own continuous extension (order 3,
built from the stages ``k_1..k_5``); events are located on it by vectorised bisection. Linear solves are batched: one vectorised factorisation of ``I/(gamma h) - J`` per step (an explicit
inverse for ``n <= 8``, partial-pivoting LU otherwise), reused by the six stages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._errors import DivergenceError

GAMMA = 0.25
_A = np.array([
    [0, 0, 0, 0, 0],
    [1.544, 0, 0, 0, 0],
    [0.9466785280815826, 0.2557011698983284, 0, 0, 0],
    [3.314825187068521, 2.896124015972201, 0.9986419139977817, 0, 0],
    [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 0],
    [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1.0],
])
_C = np.array([
    [0, 0, 0, 0, 0],
    [-5.6688, 0, 0, 0, 0],
    [-2.430093356833875, -0.2063599157091915, 0, 0, 0],
    [-0.1073529058151375, -9.594562251023355, -20.47028614809616, 0, 0],
    [7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160, 0],
    [8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
     -6.058818238834054],
])


_H = np.array([
    [10.12623508344586, -7.487995877610167, -34.80091861555747, -7.992771707568823,
     1.025137723295662],
    [-0.6762803392801253, 6.087714651680015, 16.43084320892478, 24.76722511418386,
     -6.594389125716872],
])


def dense(s, y0, y1, d1, d2):
    """Rodas4 continuous extension at ``t0 + s h``:
    ``(1 - s) y0 + s (y1 + (1 - s)(d1 + s d2))`` with ``d_r = sum_j H_rj k_j``."""
    s = s[:, None]
    return (1 - s) * y0 + s * (y1 + (1 - s) * (d1 + s * d2))


@dataclass
class BatchResult:
    """Raw output: states on ``t_eval`` (NaN after a trajectory stopped), final time and state,
    event times (NaN when none) and per-trajectory counters."""

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


def _lu(M):
    """Batched LU factorisation with partial pivoting, vectorised over the leading axis."""
    A = M.copy()
    B, n, _ = A.shape
    piv = np.tile(np.arange(n), (B, 1))
    rows = np.arange(B)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(A[:, k:, k]), axis=1)
        swap = p != k
        if swap.any():
            r_ = rows[swap]
            A[r_, k], A[r_, p[swap]] = A[r_, p[swap]].copy(), A[r_, k].copy()
            piv[r_, k], piv[r_, p[swap]] = piv[r_, p[swap]].copy(), piv[r_, k].copy()
        A[:, k + 1:, k] /= A[:, k, k][:, None]
        A[:, k + 1:, k + 1:] -= A[:, k + 1:, k, None] * A[:, k, None, k + 1:]
    return A, piv


def _lu_solve(lu, b):
    """Solve ``M x = b`` for ``b (B, n)`` from :func:`_lu`."""
    A, piv = lu
    n = A.shape[-1]
    x = np.take_along_axis(b, piv, axis=1)
    for k in range(1, n):
        x[:, k] -= np.einsum("bj,bj->b", A[:, k, :k], x[:, :k])
    for k in range(n - 1, -1, -1):
        x[:, k] = (x[:, k] - np.einsum("bj,bj->b", A[:, k, k + 1:], x[:, k + 1:])) / A[:, k, k]
    return x


def _rms(x):
    return np.sqrt(np.mean(x * x, axis=-1))


def rodas4(fun: Callable, jac: Callable, y0, params, take: Callable, t_end, t_eval, *,
           rtol: float = 1e-8, atol: float = 1e-10, event_fn: Callable | None = None,
           n_events: int = 0, stop_when_all=None, max_steps: int = 50_000,
           component: Callable = str, fun_jac: Callable | None = None) -> BatchResult:
    """Integrate ``dy/dt = fun(t, y, params)`` for ``y0 (B, n)`` up to ``t_end (B,)``.

    ``take(params, index)`` restricts the parameters to a subset of trajectories; ``fun_jac``
    (optional) returns ``(fun, jac)`` together.
    ``event_fn(y, params) -> (N, E)``: event ``e`` happens at the first ``t`` where its value turns
    from ``< 0`` to ``>= 0`` (``0`` if it is already ``>= 0`` at the start). With
    ``stop_when_all`` (a boolean mask over events) a trajectory stops when all masked events have
    happened. Raises :class:`DivergenceError` when a state's slope is not finite or the step size
    collapses.
    """
    y0 = np.array(y0, dtype=np.float64)
    B, n = y0.shape
    t_end = np.broadcast_to(np.asarray(t_end, dtype=np.float64), (B,)).copy()
    t_eval = np.asarray(t_eval, dtype=np.float64)
    E = n_events
    t = np.zeros(B)
    y = y0.copy()
    f = np.empty((B, n))
    J = np.empty((B, n, n))
    eye = np.eye(n)
    tp, yp = np.zeros(B), y0.copy()
    d1, d2 = np.zeros((B, n)), np.zeros((B, n))
    have_prev = np.zeros(B, dtype=bool)
    need = np.ones(B, dtype=bool)
    done = np.zeros(B, dtype=bool)
    last_rejected = np.zeros(B, dtype=bool)
    h = np.full(B, np.nan)
    out = np.full((B, t_eval.size, n), np.nan)
    ptr = np.searchsorted(t_eval, 0.0, side="right") * np.ones(B, dtype=int)
    out[:, : ptr[0]] = y0[:, None, :]
    nfev, njev = np.zeros(B, dtype=int), np.zeros(B, dtype=int)
    nsteps, nrej = np.zeros(B, dtype=int), np.zeros(B, dtype=int)
    status = np.zeros(B, dtype=int)
    message = ["reached t_max"] * B
    events = np.full((B, E), np.nan)
    t_final, y_final = t_end.copy(), np.full((B, n), np.nan)
    stop_mask = None if stop_when_all is None else np.asarray(stop_when_all, dtype=bool)
    if E:
        ev0 = event_fn(y0, params)
        events[ev0 >= 0] = 0.0

    def diverged(j, quantity, state):
        name = component(quantity) if isinstance(quantity, int | np.integer) else quantity
        prefix = f"trajectory {j}: " if B > 1 else ""
        raise DivergenceError(prefix + name, float(t[j]), int(nsteps[j]), state)

    def stopped(rows):
        if stop_mask is None or not stop_mask.any():
            return np.zeros(rows.size, dtype=bool)
        return np.all(np.isfinite(events[rows][:, stop_mask]), axis=1)

    # trajectories whose stop condition already holds at t = 0
    if E:
        s0 = stopped(np.arange(B))
        t_final[s0] = 0.0
        y_final[s0] = y0[s0]
        out[s0, ptr[0]:] = np.nan
        done |= s0
        for j in np.flatnonzero(s0):
            message[j] = "stopped at event"

    def segment(rows):
        hh = t[rows] - tp[rows]
        upper = t[rows].copy()
        if E:
            pr = take(params, rows)
            ga, gb = event_fn(yp[rows], pr), event_fn(y[rows], pr)
            cross = np.isnan(events[rows]) & (ga < 0) & (gb >= 0)
            r, e = np.nonzero(cross)
            if r.size:
                rr = rows[r]
                lo, hi = tp[rr].copy(), t[rr].copy()
                glo, ghi = ga[r, e], gb[r, e]
                pe = take(params, rr)
                side = np.zeros(rr.size)
                eps4 = 4 * np.finfo(float).eps
                for it in range(120):
                    if np.all(hi - lo <= eps4 * np.abs(hi)):
                        break
                    # Illinois (modified regula falsi), then bisection as a safeguard
                    if it < 40:
                        mid = (lo * ghi - hi * glo) / (ghi - glo)
                        mid = np.where((mid > lo) & (mid < hi), mid, 0.5 * (lo + hi))
                    else:
                        mid = 0.5 * (lo + hi)
                    ym = dense((mid - tp[rr]) / hh[r], yp[rr], y[rr], d1[rr], d2[rr])
                    gm = event_fn(ym, pe)[np.arange(rr.size), e]
                    up = gm >= 0
                    glo = np.where(~up, gm, np.where(side > 0, 0.5 * glo, glo))
                    ghi = np.where(up, gm, np.where(side < 0, 0.5 * ghi, ghi))
                    side = np.where(up, 1.0, -1.0)
                    hi = np.where(up, mid, hi)
                    lo = np.where(up, lo, mid)
                    close = (gm == 0) | (hi - lo <= eps4 * np.abs(hi))
                    lo = np.where(close, hi, lo)
                events[rr, e] = hi
            halt = stopped(rows) & ~done[rows]
            for k in np.flatnonzero(halt):
                j = rows[k]
                ts = float(np.max(events[j][stop_mask]))
                upper[k] = ts
                t_final[j] = ts
                y_final[j] = dense(np.array([(ts - tp[j]) / hh[k]]), yp[j:j + 1], y[j:j + 1],
                                   d1[j:j + 1], d2[j:j + 1])[0]
                done[j] = True
                message[j] = "stopped at event"
        hi_idx = np.searchsorted(t_eval, upper, side="right")
        counts = np.maximum(hi_idx - ptr[rows], 0)
        if counts.sum():
            k = np.repeat(np.arange(rows.size), counts)
            starts = np.repeat(ptr[rows] - np.cumsum(counts) + counts, counts)
            te_idx = np.arange(counts.sum()) + starts
            rr = rows[k]
            te = t_eval[te_idx]
            out[rr, te_idx] = dense((te - tp[rr]) / hh[k], yp[rr], y[rr], d1[rr], d2[rr])
        ptr[rows] = np.maximum(ptr[rows], hi_idx)

    while True:
        idx = np.flatnonzero(need)
        if idx.size:
            p = take(params, idx)
            if fun_jac is None:
                fi, Ji = fun(t[idx], y[idx], p), jac(t[idx], y[idx], p)
            else:
                fi, Ji = fun_jac(t[idx], y[idx], p)
            bad = ~np.all(np.isfinite(fi), axis=1)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                diverged(idx[k], int(np.flatnonzero(~np.isfinite(fi[k]))[0]), yp[idx[k]])
            f[idx], J[idx] = fi, Ji
            nfev[idx] += 1
            njev[idx] += 1
            seg = idx[have_prev[idx] & ~done[idx]]
            if seg.size:
                segment(seg)
            tp[idx], yp[idx] = t[idx], y[idx]
            have_prev[idx] = True
            need[idx] = False
            fin = idx[(t[idx] >= t_end[idx]) & ~done[idx]]
            done[fin] = True
            y_final[fin] = y[fin]
            t_final[fin] = t[fin]
        act = np.flatnonzero(~done)
        if not act.size:
            break
        over = act[nsteps[act] + nrej[act] >= max_steps]
        if over.size:
            done[over] = True
            status[over] = -1
            t_final[over], y_final[over] = t[over], y[over]
            for j in over:
                message[j] = f"max_steps={max_steps} reached at t={t[j]:.6g}"
            act = np.flatnonzero(~done)
            if not act.size:
                break
        ya, fa = y[act], f[act]
        sc = atol + rtol * np.abs(ya)
        init = np.isnan(h[act])
        if init.any():
            n0, n1 = _rms(ya / sc), _rms(fa / sc)
            n2 = _rms(np.einsum("bij,bj->bi", J[act], fa) / sc)
            ha = np.where((n0 > 1e-5) & (n1 > 1e-5), 0.01 * n0 / np.maximum(n1, 1e-300), 1e-6)
            hb = (0.01 / np.maximum(np.maximum(n1, n2), 1e-15)) ** 0.2
            h[act] = np.where(init, np.minimum(100 * ha, hb), h[act])
        hh = np.minimum(h[act], t_end[act] - t[act])
        p = take(params, act)
        M = eye / (GAMMA * hh)[:, None, None] - J[act]
        ks = []
        with np.errstate(all="ignore"):
            # small systems: one batched inverse per step; larger: one batched LU per step
            Minv, lu = None, None
            if n <= 8:
                try:
                    Minv = np.linalg.inv(M)
                except np.linalg.LinAlgError:
                    lu = _lu(M)
            else:
                lu = _lu(M)
            for i in range(6):
                if i == 0:
                    rhs_i = fa
                else:
                    u = ya + sum(_A[i, j] * ks[j] for j in range(i) if _A[i, j])
                    rhs_i = fun(t[act] + hh, u, p) + sum(_C[i, j] * ks[j] for j in range(i)) / hh[:, None]
                ks.append(np.einsum("bij,bj->bi", Minv, rhs_i) if lu is None
                          else _lu_solve(lu, rhs_i))
            y_new = ya + sum(_A[5, j] * ks[j] for j in range(5)) + ks[5]
            err = _rms(ks[5] / (atol + rtol * np.maximum(np.abs(ya), np.abs(y_new))))
        nfev[act] += 5
        err = np.where(np.isfinite(err) & np.all(np.isfinite(y_new), axis=1), err, np.inf)
        ok = err <= 1.0
        with np.errstate(divide="ignore"):
            fac = np.clip(0.9 * err ** -0.25, 0.2, 6.0)
        fac = np.where(ok & last_rejected[act], np.minimum(fac, 1.0), fac)
        acc = act[ok]
        t[acc] = np.where(t_end[acc] - (t[acc] + hh[ok]) <= 1e-13 * np.abs(t_end[acc]),
                          t_end[acc], t[acc] + hh[ok])
        y[acc] = y_new[ok]
        kk = np.stack(ks[:5], axis=-1)[ok]
        d1[acc] = kk @ _H[0]
        d2[acc] = kk @ _H[1]
        need[acc] = True
        nsteps[acc] += 1
        rej = act[~ok]
        nrej[rej] += 1
        last_rejected[act] = ~ok
        h[act] = hh * fac
        tiny = act[(h[act] < 1e-14 * np.maximum(np.abs(t[act]), 1e-300)) | ~np.isfinite(h[act])]
        if tiny.size:
            j = tiny[0]
            k = int(np.flatnonzero(act == j)[0])
            badc = np.flatnonzero(~np.isfinite(y_new[k]))
            diverged(j, int(badc[0]) if badc.size else "step size", y[j].copy())
    return BatchResult(t_eval, out, t_final, y_final, events, nfev, njev, nsteps, nrej, status,
                       message)

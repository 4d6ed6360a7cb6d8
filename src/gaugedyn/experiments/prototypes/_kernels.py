"""The numba kernel behind `._model.train_fused()` (imported on first use).

`train_window()` trains every run of a batch for a number of full-batch Adam steps, one run
after another: a run's parameters, Adam moments and its ``N x M`` responses stay in cache for all
the window's steps, and no step goes back to Python. The gradient is the closed form of
`._model.gradients()` (same equations, the same nearest-neighbour tie rule), written as
loops in float64; where `._model.gradients()` raises an exponent below ``FLOOR`` to it
(``e^-60 ~ 1e-26``), the kernel drops the term (it computes a neuron's response only on the
samples where its exponent exceeds ``FLOOR``), a difference below round-off; the Adam update is ``torch.optim.Adam``'s
(betas ``(0.9, 0.999)``, ``eps = 1e-8``, bias corrections of the global step count). The runs are
independent, so a run's trajectory does not depend on which other runs share its batch: the
arithmetic of one run is the same sequence of float64 operations however the batch is made up.

The prototype part sorts the prototypes once a step (coverage and separation share the order),
by insertion from the previous step's order (nearly sorted: ``O(N)``), under a strict total
order (ties by index), so the order does not depend on where the sort starts; nearest neighbours
of the sorted samples come from one walk along the sorted prototypes. These give the indices
``np.argsort`` and ``np.searchsorted`` gave (issue 44's benchmark checked the trajectories bit
for bit against the kernel before them, ``benchmarks/bench_prototypes_full.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

FLOOR = -60.0
LOG2E = 1.0 / math.log(2.0)
LN2_HI = 6.93147180369123816490e-01  # fdlibm's split of log(2): LN2_HI * k is exact for |k| < 2^20
LN2_LO = 1.90821492927058770002e-10
INV_FACT = tuple(1.0 / math.factorial(n) for n in range(14))


@numba.njit(inline="always", cache=True)
def _pow2(k):
    """``2^k`` exactly, for an integer-valued float ``-1022 <= k <= 1023``: the biased exponent
    ``k + 1023`` in the exponent field and a zero mantissa, one bit cast (it vectorises; the
    table of powers it replaces took a gather per element)."""
    return np.int64((np.int64(k) + 1023) << 52).view(np.float64)


@numba.njit(inline="always", cache=True)
def _exp(q):
    """``e^q`` for ``FLOOR <= q <= 0`` without a branch or a library call, so that a loop over
    it vectorises: ``q = k log 2 + r`` (``|r| <= log(2)/2``, Cody-Waite split of ``log 2``),
    ``e^r`` by its Taylor polynomial of degree 13 (truncation ``< 4e-18`` relative), times
    ``2^k`` built from its bits. Within 2 ulp of ``math.exp`` (tested)."""
    k = math.floor(q * LOG2E + 0.5)
    r = (q - k * LN2_HI) - k * LN2_LO
    p = INV_FACT[13]
    p = p * r + INV_FACT[12]
    p = p * r + INV_FACT[11]
    p = p * r + INV_FACT[10]
    p = p * r + INV_FACT[9]
    p = p * r + INV_FACT[8]
    p = p * r + INV_FACT[7]
    p = p * r + INV_FACT[6]
    p = p * r + INV_FACT[5]
    p = p * r + INV_FACT[4]
    p = p * r + INV_FACT[3]
    p = p * r + INV_FACT[2]
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _pow2(k)


RADIUS = math.sqrt(-2.0 * FLOOR)
"""``|z| < RADIUS`` is where ``-z^2/2 > FLOOR``."""
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
FAST = {"reassoc", "contract"}
"""The gradient's sums may be reordered and multiply-adds fused (round-off only), so that its
loops vectorise; no assumption about nan or inf is made."""


@numba.njit(inline="always", cache=True)
def _nearest(points, q):
    """Index into ascending ``points`` of the nearest point to ``q`` (ties: the lower index),
    as `._model._nearest()` (``searchsorted`` left, clamped)."""
    K = points.shape[0]
    hi = np.searchsorted(points, q)
    if hi > K - 1:
        hi = K - 1
    lo = hi - 1 if hi > 0 else 0
    return lo if abs(points[lo] - q) <= abs(points[hi] - q) else hi


@numba.njit(inline="always", cache=True)
def _support(xs, wi, bi):
    """``[lo, hi)``: the samples (ascending ``xs``) at which neuron ``(wi, bi)``'s exponent
    ``-(wi x + bi)^2 / 2`` may exceed ``FLOOR``, i.e. ``|x - p| < RADIUS / |wi|``."""
    M = xs.shape[0]
    half = RADIUS / abs(wi)
    p = -bi / wi
    if not (math.isfinite(half) and math.isfinite(p)):
        return 0, M
    half = half * (1.0 + 1e-9)
    return np.searchsorted(xs, p - half), np.searchsorted(xs, p + half, side="right")


@numba.njit(inline="always", cache=True)
def _before(va, ia, vb, ib):
    """Whether value ``va`` at index ``ia`` sorts before ``vb`` at ``ib``: ascending values,
    ``nan`` last, ties by index (a strict total order, so the sorted order is unique)."""
    if va == va and vb == vb:
        return va < vb or (va == vb and ia < ib)
    if va != va and vb != vb:
        return ia < ib
    return vb != vb


@numba.njit(inline="always", cache=True)
def _argsort(ps, order, srt):
    """``order`` rearranged so that ``ps[order]`` ascends (`_before`), and ``srt = ps[order]``.
    Insertion sort from the order ``order`` holds (any permutation): the previous step's, which
    the prototypes' small moves leave nearly sorted, so a step costs ``O(N)`` compares."""
    N = ps.shape[0]
    for a in range(1, N):
        cur = order[a]
        v = ps[cur]
        j = a - 1
        while j >= 0 and _before(v, cur, ps[order[j]], order[j]):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = cur
    for k in range(N):
        srt[k] = ps[order[k]]


@numba.njit(inline="always", cache=True, fastmath=FAST)
def _prototype_part(xs, b, w, m_cov, m_sep, chamfer, tau, gp, ps, pull, e, order, srt):
    """``gp = d(m_cov L_cov + m_sep L_sep)/dp`` of one run (``ps``: its prototypes; ``pull``,
    ``e``, ``srt`` scratch; ``order`` a permutation of ``0 .. N-1``, left sorting ``ps``):
    nearest neighbours on the line by one sort and a walk along the sorted samples, the
    separation kernel on pairs closer than ``RADIUS tau``."""
    N, M = w.shape[0], xs.shape[0]
    for i in range(N):
        gp[i] = 0.0
    if m_cov == 0.0 and m_sep == 0.0:
        return
    for i in range(N):
        ps[i] = -b[i] / w[i]
    _argsort(ps, order, srt)
    if m_cov != 0.0:
        for k in range(N):
            pull[k] = 0.0
        hi = 0  # searchsorted(srt, xs[j]) (left), non-decreasing in j as xs ascends
        for j in range(M):
            while hi < N and srt[hi] < xs[j]:
                hi += 1
            top = hi if hi < N else N - 1
            lo = top - 1 if top > 0 else 0
            k = lo if abs(srt[lo] - xs[j]) <= abs(srt[top] - xs[j]) else top
            pull[k] += -2.0 * (xs[j] - srt[k]) / M
        for k in range(N):
            gp[order[k]] = pull[k]
        if chamfer != 0.0:
            for i in range(N):
                back = xs[_nearest(xs, ps[i])]
                gp[i] += 2.0 * (ps[i] - back) / N
    if m_sep != 0.0:
        inv = 1.0 / (tau * tau)
        reach = RADIUS * tau
        for i in range(N):
            pull[i] = 0.0
        for i in range(N):
            end = np.searchsorted(srt, srt[i] + reach)  # pairs beyond contribute e^q < e^FLOOR
            m = end - i - 1
            for t in range(m):
                d = srt[i] - srt[i + 1 + t]
                e[t] = max(-0.5 * inv * (d * d), FLOOR)
            acc = 0.0
            for t in range(m):
                q = e[t]
                d = srt[i] - srt[i + 1 + t]
                v = _exp(q) * d if q > FLOOR else 0.0
                acc += v
                pull[i + 1 + t] -= v
            pull[i] += acc
        scale = -(2.0 / (N * (N - 1))) * inv
        for k in range(N):
            gp[order[k]] += scale * pull[k]


@numba.njit(cache=True, fastmath=FAST)
def _gradient(
    xs,
    y,
    w,
    b,
    a,
    c,
    m_cov,
    m_sep,
    m_ov,
    chamfer,
    tau,
    lam,
    H,
    span,
    r,
    s,
    e,
    gw,
    gb,
    ga,
    gp,
    ps,
    pull,
    order,
    srt,
):
    """Closed-form ``dL/dw``, ``dL/db``, ``dL/da`` of one run into ``gw``, ``gb``, ``ga``;
    returns ``(dL/dc, L_fit)``. ``H`` (``N x M``), ``span`` (``N x 2``), ``r``, ``s`` (``M``), ``gp``, ``ps``,
    ``pull`` (``N``) are scratch."""
    N, M = w.shape[0], xs.shape[0]
    for j in range(M):
        r[j] = 0.0
    for i in range(N):
        wi, bi, ai = w[i], b[i], a[i]
        lo, hi = _support(xs, wi, bi)
        span[i, 0], span[i, 1] = lo, hi
        m = hi - lo
        for t in range(m):
            z = wi * xs[lo + t] + bi
            e[t] = -0.5 * (z * z)
        for t in range(m):
            q = max(e[t], FLOOR)
            h = _exp(q)
            e[t] = h if q > FLOOR else 0.0
        for t in range(m):
            H[i, lo + t] = e[t]
            r[lo + t] += ai * e[t]
    fit = 0.0
    gc = 0.0
    for j in range(M):
        r[j] = r[j] + c - y[j]
        fit += r[j] * r[j]
        gc += r[j]
    fit /= M
    gc *= 2.0 / M
    ov = lam * m_ov * 2.0 / (M * N * (N - 1))
    if ov != 0.0:
        for j in range(M):
            s[j] = 0.0
        for i in range(N):
            for j in range(span[i, 0], span[i, 1]):
                s[j] += H[i, j]
    for i in range(N):
        wi, bi, ai = w[i], b[i], a[i]
        gwi, gbi, gai = 0.0, 0.0, 0.0
        coef = (-2.0 / M) * ai
        for j in range(span[i, 0], span[i, 1]):
            h = H[i, j]
            z = wi * xs[j] + bi
            g = coef * r[j]
            if ov != 0.0:
                g += (h - s[j]) * ov
            g = g * h * z
            gbi += g
            gwi += g * xs[j]
            gai += h * r[j]
        gw[i], gb[i], ga[i] = gwi, gbi, (2.0 / M) * gai
    # the prototype part: d(m_cov L_cov + m_sep L_sep)/dp, then dp/dw = -p/w, dp/db = -1/w
    _prototype_part(xs, b, w, m_cov, m_sep, chamfer, tau, gp, ps, pull, e, order, srt)
    if m_cov != 0.0 or m_sep != 0.0:
        for i in range(N):
            g = lam * gp[i]
            gw[i] -= g * ps[i] / w[i]
            gb[i] -= g / w[i]
    return gc, fit


@numba.njit(inline="always", cache=True)
def _adam(p, g, m, v, step_size, bc2_sqrt):
    for i in range(p.shape[0]):
        m[i] = m[i] + (1.0 - BETA1) * (g[i] - m[i])
        v[i] = v[i] * BETA2 + (1.0 - BETA2) * (g[i] * g[i])
        p[i] -= step_size * (m[i] / (math.sqrt(v[i]) / bc2_sqrt + EPS))


@numba.njit(cache=True)
def train_window(xs, y, w, b, a, c, mom, mask, chamfer, tau, lam, lr, done, n, active, fit):
    """``n`` Adam steps (steps ``done + 1 .. done + n``) on every run ``r`` with ``active[r]``,
    in place on ``w``, ``b``, ``a`` (``(B, N)``), ``c`` (``(B,)``) and the Adam moments ``mom``
    (``(B, 2, 4, N)``: first and second moments of ``w``, ``b``, ``a`` and, in column 0, ``c``);
    ``fit[r]`` gets ``L_fit`` at the parameters before the window (after ``done`` steps). With
    ``n = 0`` only ``fit`` is computed."""
    B, N = w.shape
    M = xs.shape[1]
    H = np.empty((N, M))
    span = np.empty((N, 2), dtype=np.int64)
    r, s, e = np.empty(M), np.empty(M), np.empty(M)
    gw, gb, ga = np.empty(N), np.empty(N), np.empty(N)
    gp, ps, pull = np.empty(N), np.empty(N), np.empty(N)
    gcv = np.empty(1)
    order, srt = np.arange(N), np.empty(N)
    for row in range(B):
        if not active[row]:
            continue
        wr, br, ar, cr = w[row], b[row], a[row], c[row : row + 1]
        mw, mb, ma, mc = mom[row, 0, 0], mom[row, 0, 1], mom[row, 0, 2], mom[row, 0, 3, :1]
        vw, vb, va, vc = mom[row, 1, 0], mom[row, 1, 1], mom[row, 1, 2], mom[row, 1, 3, :1]
        for k in range(max(n, 1)):
            gcv[0], f = _gradient(
                xs[row],
                y[row],
                wr,
                br,
                ar,
                cr[0],
                mask[row, 0],
                mask[row, 1],
                mask[row, 2],
                chamfer[row],
                tau[row],
                lam[row],
                H,
                span,
                r,
                s,
                e,
                gw,
                gb,
                ga,
                gp,
                ps,
                pull,
                order,
                srt,
            )
            if k == 0:
                fit[row] = f
            if n == 0:
                break
            t = done + k + 1
            step_size = lr / (1.0 - BETA1 ** float(t))
            bc2_sqrt = math.sqrt(1.0 - BETA2 ** float(t))
            _adam(wr, gw, mw, vw, step_size, bc2_sqrt)
            _adam(br, gb, mb, vb, step_size, bc2_sqrt)
            _adam(ar, ga, ma, va, step_size, bc2_sqrt)
            _adam(cr, gcv, mc, vc, step_size, bc2_sqrt)

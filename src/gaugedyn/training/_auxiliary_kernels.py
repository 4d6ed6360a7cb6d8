"""The numba kernels of the auxiliary-learning model (imported on first use).

Online SGD in weight space (`run()`), its exact order-parameter chain (`chain_run()`)
and the online-ODE right-hand side (`rhs()`) of the two-teacher model declared in
``derivations/auxiliary.md``; the equations are in `gaugedyn.training._auxiliary`. Fields
are ordered students (``K``), main teachers (``M``), auxiliary teachers (``Ma``); ``heads`` is 1
(one output trained on both labels: the auxiliary head is the main head) or 2 (two heads). The
activation codes, schedules, Cholesky factor and field draws are those of
`gaugedyn.training._online_kernels`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import _auxiliary_generated as gen
from ._online_kernels import FAST, cholesky_psd, draw_fields, g, g_prime, step_size
from ._orthant import relu_moment

# --- the Gaussian expectations of the ODE -------------------------------------------------------

_pair = {
    name: tuple(
        numba.njit(inline="always")(getattr(gen, f"{kind}_{name}"))
        for kind in ("pair", "pair_dq1", "pair_dc")
    )
    for name in ("relu", "erf", "linear")
}
_erf_i4 = numba.njit(inline="always")(gen.erf_i4)
_relu_a2 = numba.njit(inline="always")(gen.relu_a2)
_relu_a3 = numba.njit(inline="always")(gen.relu_a3)
_F_relu, _F1_relu, _Fc_relu = _pair["relu"]
_F_erf, _F1_erf, _Fc_erf = _pair["erf"]
_F_lin, _F1_lin, _Fc_lin = _pair["linear"]

CLOSED = (0, 1, 2)
"""Activation codes with closed-form kernels (relu, erf, linear); relu's four-point integrals on
four distinct fields (``K > 1``) need one smooth one-dimensional integral (`relu_i4()`)."""


@numba.njit(cache=True)
def _pair_kernels(act, q1, q2, c):
    """``(F, dF/dq1, dF/dc)`` of the pair kernel of a closed-form activation."""
    if act == 0:
        return _F_relu(q1, q2, c), _F1_relu(q1, q2, c), _Fc_relu(q1, q2, c)
    if act == 1:
        return _F_erf(q1, q2, c), _F1_erf(q1, q2, c), _Fc_erf(q1, q2, c)
    return _F_lin(q1, q2, c), _F1_lin(q1, q2, c), _Fc_lin(q1, q2, c)


ALIGNED = 1e-12
"""Relative conditional variance below which a field is taken as a multiple of the student's
(``u_p = alpha u_0``): the three-field formulas divide by it."""


@numba.njit(cache=True)
def _aligned(C, p):
    """``alpha`` with ``u_p = alpha u_0`` when ``u_p`` is (to `ALIGNED`) a multiple of the
    student field ``u_0``, else ``nan``."""
    if C[p, p] - C[0, p] * C[0, p] / C[0, 0] <= ALIGNED * C[p, p]:
        return C[0, p] / C[0, 0]
    return math.nan


@numba.njit(cache=True)
def _relu_i4_one(C, p, q):
    """``E[theta(u_0) relu(u_p) relu(u_q)]`` (field 0 the only student): at most three fields.
    A field aligned with the student (``u_p = alpha u_0``) reduces it to two fields:
    ``theta(u_0) relu(alpha u_0) = alpha relu(u_0)`` for ``alpha > 0`` and 0 otherwise."""
    if p == 0 and q == 0:
        return 0.5 * C[0, 0]
    if p == 0 or q == 0:
        r = q if p == 0 else p
        return _F_relu(C[0, 0], C[r, r], C[0, r])
    ap, aq = _aligned(C, p), _aligned(C, q)
    if not math.isnan(ap) or not math.isnan(aq):
        if not math.isnan(ap) and not math.isnan(aq):
            return ap * aq * 0.5 * C[0, 0] if ap > 0.0 and aq > 0.0 else 0.0
        alpha, other = (ap, q) if not math.isnan(ap) else (aq, p)
        return alpha * _F_relu(C[0, 0], C[other, other], C[0, other]) if alpha > 0.0 else 0.0
    if p == q:
        return _relu_a2(C[0, 0], C[0, p], C[p, p])
    return _relu_a3(C[0, 0], C[0, p], C[0, q], C[p, p], C[p, q], C[q, q])


# --- ReLU's four-point integrals on any number of fields (K > 1) ---------------------------------


@numba.njit(cache=True)
def relu_i4(C, i, j, p, q):
    """``E[theta(u_i) theta(u_j) relu(u_p) relu(u_q)] = E[u_p u_q prod_{s in S} theta(u_s)]``,
    ``S = {i, j, p, q}``: the orthant moment of `gaugedyn.training._orthant` (Stein's lemma
    twice, Plackett's integral for four distinct fields); a field collinear with another of
    ``S`` shares its orthant, an opposite one makes the product zero."""
    return relu_moment(C, i, j, p, q)


@numba.njit(cache=True)
def closed_moments(C, K, act, k, cm, ca, Em, Ea, Hd, N, J):
    """The ODE's expectations from the closed-form kernels: ``Em_i = E[e_m g(u_i)]``,
    ``Ea_i = E[e_a g(u_i)]`` (label noise aside), ``Hd_ij = E[kappa_i g'(u_i) u_j]`` (``j`` over
    all fields), ``N_ij = E[kappa_i kappa_j g'(u_i) g'(u_j)]`` and ``J_ij = E[g'(u_i) g'(u_j)]``,
    with ``kappa_i = sum_p k_ip g(u_p)`` and ``e = sum_p c_p g(u_p)``. ``I3(i, j, p) = 2 C_ij
    dF/dq1 + C_jp dF/dc`` (Stein and Price); ``I4`` closed for erf and linear, and for relu when
    ``K = 1``. Returns False where relu would need four fields (the caller uses quadrature)."""
    P = C.shape[0]
    for i in range(K):
        Em[i] = 0.0
        Ea[i] = 0.0
        for j in range(P):
            Hd[i, j] = 0.0
        for p in range(P):
            F, F1, Fc = _pair_kernels(act, C[i, i], C[p, p], C[i, p])
            Em[i] += cm[p] * F
            Ea[i] += ca[p] * F
            for j in range(P):
                Hd[i, j] += k[i, p] * (2.0 * C[i, j] * F1 + C[j, p] * Fc)
        for j in range(K):
            J[i, j] = _pair_kernels(act, C[i, i], C[j, j], C[i, j])[2]
    for i in range(K):
        for j in range(i, K):
            s = 0.0
            for p in range(P):
                for q in range(P):
                    w = k[i, p] * k[j, q]
                    if w == 0.0:
                        continue
                    if act == 1:
                        v = _erf_i4(
                            C[i, i],
                            C[i, j],
                            C[i, p],
                            C[i, q],
                            C[j, j],
                            C[j, p],
                            C[j, q],
                            C[p, p],
                            C[p, q],
                            C[q, q],
                        )
                    elif act == 2:
                        v = C[p, q]
                    elif K == 1:
                        v = _relu_i4_one(C, p, q)
                    else:
                        v = relu_i4(C, i, j, p, q)
                    s += w * v
            N[i, j] = s
            N[j, i] = s
    return True


@numba.njit(cache=True)
def eigen_factor(C, tol):
    """``A (P, r)`` with ``A A^T = C`` on the eigenvalues above ``tol`` times the largest."""
    w, V = np.linalg.eigh(C)
    top = max(w.max(), 1e-300)
    r = 0
    for x in w:
        if x > tol * top:
            r += 1
    A = np.empty((C.shape[0], r))
    col = 0
    for m in range(w.shape[0]):
        if w[m] > tol * top:
            s = math.sqrt(w[m])
            for p in range(C.shape[0]):
                A[p, col] = V[p, m] * s
            col += 1
    return A


@numba.njit(cache=True)
def quadrature_moments(C, K, act, k, cm, ca, nodes, weights, counts, Em, Ea, Hd, N, J, only_noise):
    """The same expectations as `closed_moments()` by one direct Gauss-Hermite rule on the
    eigen factor of ``C`` (rank ``r``; ``counts[r]`` probabilists' nodes per axis, rows of
    ``nodes``/``weights`` by rank): exact for polynomial integrands up to degree ``2 n - 1`` per
    axis, exponentially accurate for smooth ``g``, algebraically for a kink. With
    ``only_noise`` only ``N`` and ``J`` are computed."""
    P = C.shape[0]
    A = eigen_factor(C, 1e-13)
    r = A.shape[1]
    n = counts[r]
    for i in range(K):
        Em[i] = 0.0
        Ea[i] = 0.0
        for j in range(P):
            Hd[i, j] = 0.0
        for j in range(K):
            J[i, j] = 0.0
            N[i, j] = 0.0
    u = np.empty(P)
    h = np.empty(P)
    gp = np.empty(K)
    kap = np.empty(K)
    idx = np.zeros(max(r, 1), dtype=np.int64)
    total = n**r
    for _ in range(total):
        w = 1.0
        for m in range(r):
            w *= weights[r, idx[m]]
        for p in range(P):
            s = 0.0
            for m in range(r):
                s += A[p, m] * nodes[r, idx[m]]
            u[p] = s
            h[p] = g(act, s)
        em, ea = 0.0, 0.0
        for p in range(P):
            em += cm[p] * h[p]
            ea += ca[p] * h[p]
        for i in range(K):
            gp[i] = g_prime(act, u[i])
            s = 0.0
            for p in range(P):
                s += k[i, p] * h[p]
            kap[i] = s
        for i in range(K):
            for j in range(K):
                N[i, j] += w * kap[i] * kap[j] * gp[i] * gp[j]
                J[i, j] += w * gp[i] * gp[j]
        if not only_noise:
            for i in range(K):
                Em[i] += w * em * h[i]
                Ea[i] += w * ea * h[i]
                for j in range(P):
                    Hd[i, j] += w * kap[i] * gp[i] * u[j]
        m = 0
        while m < r:
            idx[m] += 1
            if idx[m] < n:
                break
            idx[m] = 0
            m += 1


@numba.njit(cache=True)
def unpack(y, K, Mt, heads):
    """``(a, c, Q, R)`` views of the state ``y = (a, [c], Q (K x K), R (K x Mt))``."""
    a = y[:K]
    off = K
    if heads == 2:
        c = y[K : 2 * K]
        off = 2 * K
    else:
        c = a
    Q = y[off : off + K * K].reshape(K, K)
    R = y[off + K * K : off + K * K + K * Mt].reshape(K, Mt)
    return a, c, Q, R


@numba.njit(cache=True)
def rhs(
    y,
    K,
    M,
    Ma,
    heads,
    bm,
    ba,
    T,
    gamma,
    sm2,
    sa2,
    eta,
    lr2,
    wd,
    noise_scale,
    act,
    quad,
    nodes,
    weights,
    counts,
    out,
):
    """``dy/dt`` of the online ODE (state of `unpack()`); ``quad`` = 0: closed forms;
    1: the quadrature for everything;
    2: the quadrature's noise term only (the caller adds the drift from the package's pair
    kernels, so that it is the gradient flow of the errors it reports)."""
    Mt = M + Ma
    P = K + Mt
    a, c, Q, R = unpack(y, K, Mt, heads)
    C = np.empty((P, P))
    for i in range(K):
        for j in range(K):
            C[i, j] = Q[i, j]
        for n in range(Mt):
            C[i, K + n] = R[i, n]
            C[K + n, i] = R[i, n]
    for n in range(Mt):
        for m in range(Mt):
            C[K + n, K + m] = T[n, m]
    cm = np.zeros(P)
    ca = np.zeros(P)
    for i in range(K):
        cm[i] = a[i]
        ca[i] = c[i]
    for n in range(M):
        cm[K + n] = -bm[n]
    for n in range(Ma):
        ca[K + M + n] = -ba[n]
    k = np.empty((K, P))
    for i in range(K):
        for p in range(P):
            k[i, p] = a[i] * cm[p] + gamma * c[i] * ca[p]
    Em, Ea = np.empty(K), np.empty(K)
    Hd = np.empty((K, P))
    N, J = np.empty((K, K)), np.empty((K, K))
    if quad == 0 and act <= 2:
        closed_moments(C, K, act, k, cm, ca, Em, Ea, Hd, N, J)
    else:
        quadrature_moments(
            C, K, act, k, cm, ca, nodes, weights, counts, Em, Ea, Hd, N, J, quad == 2
        )
    for i in range(K):
        if heads == 2:
            out[i] = -eta * lr2 * (Em[i] + wd * a[i])
            out[K + i] = -eta * lr2 * (gamma * Ea[i] + wd * c[i])
        else:
            out[i] = -eta * lr2 * (Em[i] + gamma * Ea[i] + wd * a[i])
    off = 2 * K if heads == 2 else K
    for i in range(K):
        for j in range(i, K):
            v = -eta * (Hd[i, j] + Hd[j, i] + 2.0 * wd * Q[i, j])
            if noise_scale != 0.0:
                v += noise_scale * (
                    N[i, j] + (a[i] * a[j] * sm2 + gamma * gamma * c[i] * c[j] * sa2) * J[i, j]
                )
            out[off + i * K + j] = v
            out[off + j * K + i] = v
        for n in range(Mt):
            out[off + K * K + i * Mt + n] = -eta * (Hd[i, K + n] + wd * R[i, n])
    return out


# --- online SGD in weight space ------------------------------------------------------------------


@numba.njit(cache=True, fastmath=FAST)
def _record(r, a, c, U, K, heads, out_a, out_c, out_Q, out_R):
    P, D = U.shape
    ok = True
    for i in range(K):
        out_a[r, i] = a[i]
        out_c[r, i] = c[i] if heads == 2 else a[i]
        ok = ok and math.isfinite(a[i]) and math.isfinite(c[i])
        for j in range(P):
            s = 0.0
            for d in range(D):
                s += U[i, d] * U[j, d]
            if j < K:
                out_Q[r, i, j] = s
            else:
                out_R[r, i, j - K] = s
            ok = ok and math.isfinite(s)
    return ok


@numba.njit(cache=True, fastmath=FAST)
def _sample(spec, a, c, u, noise, k, mu, given, gen, coef, ga, gc):
    """The errors of one sample from its fields ``u`` under the model ``spec = (act, bm, ba, K,
    M, gamma, sm, sa, heads)``, the first layer's coefficients ``coef_i = kappa_i g'(u_i)`` and
    the heads' gradients added to ``ga``, ``gc``; the label noises ``xi_m``, ``xi_a`` drawn in
    that order (or read from ``noise[k, mu]``). Returns ``(e_m^2 / 2, e_a^2 / 2)``."""
    act, bm, ba, K, M, gamma, sm, sa, heads = spec
    P = u.shape[0]
    em, ea = 0.0, 0.0
    for i in range(K):
        gi = g(act, u[i])
        em += a[i] * gi
        ea += c[i] * gi
    for n in range(M):
        em -= bm[n] * g(act, u[K + n])
    for n in range(P - K - M):
        ea -= ba[n] * g(act, u[K + M + n])
    if sm != 0.0:
        em -= sm * (noise[k, mu, 0] if given else gen.standard_normal())
    if sa != 0.0:
        ea -= sa * (noise[k, mu, 1] if given else gen.standard_normal())
    for i in range(K):
        gi = g(act, u[i])
        if heads == 2:
            ga[i] += em * gi
            gc[i] += gamma * ea * gi
        else:
            ga[i] += (em + gamma * ea) * gi
        coef[i] = (a[i] * em + gamma * c[i] * ea) * g_prime(act, u[i])
    return 0.5 * em * em, 0.5 * ea * ea


@numba.njit(cache=True, fastmath=FAST)
def _draw_project(U, x, u, X, k, mu, given, gen):
    """One sample into ``x`` (drawn whole first, or read from ``X[k, mu]``), then its fields
    ``u = U x`` (contiguous dot products)."""
    P, D = U.shape
    if given:
        for d in range(D):
            x[d] = X[k, mu, d]
    else:
        for d in range(D):
            x[d] = gen.standard_normal()
    for p in range(P):
        s = 0.0
        for d in range(D):
            s += U[p, d] * x[d]
        u[p] = s


@numba.njit(cache=True, fastmath=FAST)
def _weight_step(U, gW, quad, eta, batch, wd, K):
    """``w_i <- (1 - eta wd) w_i - (eta / B) gW_i``; the step's quadratic part
    ``(eta / B)^2 gW gW^T`` added to ``quad``."""
    D = U.shape[1]
    shrink = 1.0 - eta * wd
    scale = eta / batch
    for i in range(K):
        for j in range(i + 1):
            s = 0.0
            for d in range(D):
                s += gW[i, d] * gW[j, d]
            quad[i, j] += scale * scale * s
            quad[j, i] = quad[i, j]
    for i in range(K):
        for d in range(D):
            U[i, d] = shrink * U[i, d] - scale * gW[i, d]


@numba.njit(inline="always", cache=True)
def _heads(a, c, ga, gc, eta, batch, wd, lr2, heads):
    for i in range(a.shape[0]):
        a[i] -= (eta * lr2) * (ga[i] / batch + wd * a[i])
        if heads == 2:
            c[i] -= (eta * lr2) * (gc[i] / batch + wd * c[i])


@numba.njit(nogil=True, cache=True, fastmath=FAST)
def run(
    a,
    c,
    W,
    Vm,
    Va,
    bm,
    ba,
    heads,
    act,
    sched,
    lr,
    lr_min,
    decay,
    steps,
    grid,
    batch,
    gen,
    X,
    noise,
    gamma,
    sm,
    sa,
    wd,
    lr2,
    out_a,
    out_c,
    out_Q,
    out_R,
    out_quad,
    out_em,
    out_ea,
    out_flow,
):
    """Online SGD of one seed in place on ``a``, ``c`` (two heads) and ``W``; records at
    ``grid``: ``a``, ``c``, ``Q``, ``R`` (main then auxiliary teachers), the cumulative quadratic
    part of ``Q``'s increments (``sum_steps dW dW^T``, the diffusion part), the online losses of
    the two tasks (means since the last record) and the flow time. Samples drawn from ``gen``
    (inputs, then ``xi_m``, ``xi_a``) or read from ``X (steps, B, D)`` and ``noise (steps, B,
    2)``. Returns -1, or the record index at which a value became non-finite."""
    K, D = W.shape
    M, Ma = Vm.shape[0], Va.shape[0]
    P = K + M + Ma
    U = np.empty((P, D))
    U[:K] = W
    U[K : K + M] = Vm
    U[K + M :] = Va
    spec = (act, bm, ba, K, M, gamma, sm, sa, heads)
    given = X.shape[0] > 0
    x, u, coef = np.empty(D), np.empty(P), np.empty(K)
    ga, gc = np.empty(K), np.empty(K)
    gW = np.zeros((K, D))
    quad = np.zeros((K, K))
    if not _record(0, a, c, U, K, heads, out_a, out_c, out_Q, out_R):
        return 0
    out_quad[0] = quad
    out_em[0], out_ea[0], out_flow[0] = np.nan, np.nan, 0.0
    flow, acc_m, acc_a, count, r = 0.0, 0.0, 0.0, 0, 1
    for k in range(steps):
        eta = step_size(sched, lr, k, steps, lr_min, decay) / D
        ga[:] = 0.0
        gc[:] = 0.0
        gW[:, :] = 0.0
        for mu in range(batch):
            _draw_project(U, x, u, X, k, mu, given, gen)
            lm, la = _sample(spec, a, c, u, noise, k, mu, given, gen, coef, ga, gc)
            acc_m += lm / batch
            acc_a += la / batch
            for i in range(K):
                ci = coef[i]
                for d in range(D):
                    gW[i, d] += ci * x[d]
        _weight_step(U, gW, quad, eta, batch, wd, K)
        _heads(a, c, ga, gc, eta, batch, wd, lr2, heads)
        flow += eta
        count += 1
        if r < grid.shape[0] and k + 1 == grid[r]:
            if not _record(r, a, c, U, K, heads, out_a, out_c, out_Q, out_R):
                return r
            out_quad[r] = quad
            out_em[r], out_ea[r], out_flow[r] = acc_m / count, acc_a / count, flow
            acc_m, acc_a, count, r = 0.0, 0.0, 0, r + 1
    W[:, :] = U[:K]
    return -1


# --- the exact order-parameter chain -------------------------------------------------------------


@numba.njit(cache=True, fastmath=FAST)
def _chain_step(C, cf, u, G, quad, K, batch, shrink):
    """``w_i' = s w_i - sum_mu c_mu,i x_mu`` on the Gram matrix ``C``: ``Q' = s^2 Q - s (linear
    terms) + sum_munu c_mu,i c_nu,j G_munu`` (the quadratic part, added to ``quad``) and
    ``R' = s R - sum_mu c_mu,i nu_mu``."""
    P = C.shape[0]
    for i in range(K):
        for j in range(i, P):
            lin, qd = 0.0, 0.0
            for mu in range(batch):
                lin -= cf[mu, i] * u[mu, j]
                if j < K:
                    lin -= cf[mu, j] * u[mu, i]
                    for nu in range(batch):
                        qd += cf[mu, i] * cf[nu, j] * G[mu, nu]
            if j < K:
                C[i, j] = shrink * (shrink * C[i, j] + lin) + qd
                quad[i, j] += qd
                quad[j, i] = quad[i, j]
            else:
                C[i, j] = shrink * C[i, j] + lin
            C[j, i] = C[i, j]


@numba.njit(cache=True)
def _chain_record(r, a, c, C, K, heads, out_a, out_c, out_Q, out_R):
    P = C.shape[0]
    ok = True
    for i in range(K):
        out_a[r, i] = a[i]
        out_c[r, i] = c[i] if heads == 2 else a[i]
        ok = ok and math.isfinite(a[i]) and math.isfinite(c[i])
        for j in range(P):
            if j < K:
                out_Q[r, i, j] = C[i, j]
            else:
                out_R[r, i, j - K] = C[i, j]
            ok = ok and math.isfinite(C[i, j])
    return ok


@numba.njit(nogil=True, cache=True, fastmath=FAST)
def chain_run(
    a,
    c,
    C,
    bm,
    ba,
    K,
    D,
    heads,
    act,
    sched,
    lr,
    lr_min,
    decay,
    steps,
    grid,
    batch,
    gen,
    F,
    S,
    noise,
    tol,
    gamma,
    sm,
    sa,
    wd,
    lr2,
    out_a,
    out_c,
    out_Q,
    out_R,
    out_quad,
    out_em,
    out_ea,
    out_flow,
):
    """The exact order-parameter chain of `run()` for one seed, in place on ``a``, ``c`` and
    the Gram matrix ``C (P, P)`` of ``[W; V_m; V_a]``. Per batch the fields ``u_mu = L z_mu`` and
    the samples' Gram matrix (``_online_kernels.draw_fields``; or ``F (steps, B, P)``,
    ``S (steps, B, B)``), then the label noises; ``w_i' = s w_i - sum_mu c_mu,i x_mu`` with
    ``s = 1 - eta wd``, ``c_mu,i = (eta / B) kappa_mu,i g'(lambda_mu,i)``, so
    ``Q' = s^2 Q - s (linear terms) + sum_munu c_mu,i c_nu,j G_munu`` (the last: the quadratic
    part, accumulated) and ``R' = s R - sum_mu c_mu,i nu_mu``. Records as `run()`."""
    P = C.shape[0]
    M = bm.shape[0]
    spec = (act, bm, ba, K, M, gamma, sm, sa, heads)
    L = np.zeros((P, P))
    z, u = np.empty((batch, P)), np.empty((batch, P))
    G = np.empty((batch, batch))
    A = np.zeros((batch, batch))
    cf = np.empty((batch, K))
    coef = np.empty(K)
    ga, gc = np.empty(K), np.empty(K)
    quad = np.zeros((K, K))
    given = F.shape[0] > 0
    if not _chain_record(0, a, c, C, K, heads, out_a, out_c, out_Q, out_R):
        return 0
    out_quad[0] = quad
    out_em[0], out_ea[0], out_flow[0] = np.nan, np.nan, 0.0
    flow, acc_m, acc_a, count, r = 0.0, 0.0, 0.0, 0, 1
    for k in range(steps):
        eta = step_size(sched, lr, k, steps, lr_min, decay) / D
        if given:
            for mu in range(batch):
                u[mu] = F[k, mu]
                G[mu] = S[k, mu]
        else:
            rank = cholesky_psd(C, L, tol)
            draw_fields(L, rank, D, batch, gen, z, u, G, A)
        ga[:] = 0.0
        gc[:] = 0.0
        for mu in range(batch):
            lm, la = _sample(spec, a, c, u[mu], noise, k, mu, given, gen, coef, ga, gc)
            acc_m += lm / batch
            acc_a += la / batch
            for i in range(K):
                cf[mu, i] = (eta / batch) * coef[i]
        _chain_step(C, cf, u, G, quad, K, batch, 1.0 - eta * wd)
        _heads(a, c, ga, gc, eta, batch, wd, lr2, heads)
        flow += eta
        count += 1
        if r < grid.shape[0] and k + 1 == grid[r]:
            if not _chain_record(r, a, c, C, K, heads, out_a, out_c, out_Q, out_R):
                return r
            out_quad[r] = quad
            out_em[r], out_ea[r], out_flow[r] = acc_m / count, acc_a / count, flow
            acc_m, acc_a, count, r = 0.0, 0.0, 0, r + 1
    return -1

"""The numba kernels behind `gaugedyn.training._online_fast` (imported on first use).

Online SGD in weight space (`run()`), its exact order-parameter chain (`chain_run()`)
and the erf online-ODE right-hand side (`online_rhs()`), all cached on disk by numba; the
equations are in the docstrings of ``_online_fast`` and ``_online_chain``. Activation codes (``Activation.code`` of
``gaugedyn.theory.ACTIVATIONS``): 0 relu, 1 erf (``erf(z / sqrt 2)``), 2 linear, 3 tanh,
4 softplus, 5 gelu, 6 leaky_relu, 7 abs, 8 quadratic, 9 he2, 10 he3; any other code raises.
Schedule codes: 0 constant, 1 cosine, 2 inverse.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..theory import LEAKY_SLOPE, jit_generated

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_PI = 2.0 / math.pi


@numba.njit(inline="always", cache=True)
def g(act, z):
    """``g(z)`` of activation code ``act`` (``gaugedyn.theory.ACTIVATIONS[name].code``); an
    unknown code raises."""
    if act == 0:
        return z if z > 0.0 else 0.0
    if act == 1:
        return math.erf(z * _INV_SQRT2)
    if act == 2:
        return z
    if act == 3:
        return math.tanh(z)
    if act == 4:
        return max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    if act == 5:
        return 0.5 * z * (1.0 + math.erf(z * _INV_SQRT2))
    if act == 6:
        return z if z > 0.0 else LEAKY_SLOPE * z
    if act == 7:
        return abs(z)
    if act == 8:
        return z * z
    if act == 9:
        return z * z - 1.0
    if act == 10:
        return z * z * z - 3.0 * z
    raise ValueError("unknown activation code")


@numba.njit(inline="always", cache=True)
def g_prime(act, z):
    """``g'(z)`` of activation code ``act``; an unknown code raises."""
    if act == 0:
        return 1.0 if z > 0.0 else 0.0
    if act == 1:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * (z * z))
    if act == 2:
        return 1.0
    if act == 3:
        t = math.tanh(z)
        return 1.0 - t * t
    if act == 4:
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0.0 else math.exp(z) / (1.0 + math.exp(z))
    if act == 5:
        return 0.5 * (1.0 + math.erf(z * _INV_SQRT2)) + z * _INV_SQRT_2PI * math.exp(-0.5 * (z * z))
    if act == 6:
        return 1.0 if z > 0.0 else LEAKY_SLOPE
    if act == 7:
        return 1.0 if z > 0.0 else (-1.0 if z < 0.0 else 0.0)
    if act == 8 or act == 9:
        return 2.0 * z
    if act == 10:
        return 3.0 * z * z - 3.0
    raise ValueError("unknown activation code")


@numba.njit(inline="always", cache=True)
def g_second(act, z):
    """``g''(z)`` of activation code ``act`` away from a kink (0 for the piecewise-linear codes
    0, 2, 6, 7: their kernels never read it); an unknown code raises."""
    if act == 0 or act == 2 or act == 6 or act == 7:
        return 0.0
    if act == 1:
        return -z * _SQRT_2_OVER_PI * math.exp(-0.5 * (z * z))
    if act == 3:
        t = math.tanh(z)
        return -2.0 * t * (1.0 - t * t)
    if act == 4:
        s = 1.0 / (1.0 + math.exp(-z)) if z >= 0.0 else math.exp(z) / (1.0 + math.exp(z))
        return s * (1.0 - s)
    if act == 5:
        return (2.0 - z * z) * _INV_SQRT_2PI * math.exp(-0.5 * (z * z))
    if act == 8 or act == 9:
        return 2.0
    if act == 10:
        return 6.0 * z
    raise ValueError("unknown activation code")


@numba.njit(cache=True)
def step_size(sched, lr, k, steps, lr_min, decay):
    """``eta_k`` of `gaugedyn.training._optim.step_size()`, by schedule code."""
    if sched == 0:
        return lr
    if sched == 1:
        return lr_min + (lr - lr_min) * 0.5 * (1.0 + math.cos(math.pi * k / max(steps, 1)))
    return lr / (1.0 + k / decay)


FAST = {"reassoc", "contract"}
"""The floating-point licence of the dot products and updates: reassociation (so the sums over
the input coordinates vectorise) and fused multiply-adds; no assumption that values are finite,
so a diverging run is still caught."""


@numba.njit(cache=True, fastmath=FAST)
def record(r, a, U, K, out_a, out_Q, out_R):
    """Store ``a`` and ``Q = W W^T``, ``R = W V^T`` (``U = [W; V]``, one row per field) at record
    ``r``; False if any is not finite."""
    P, D = U.shape
    ok = True
    for i in range(K):
        out_a[r, i] = a[i]
        ok = ok and math.isfinite(a[i])
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
def sample_gradient(act, tact, a, b, U, K, x, u, gen, X, k, mu, coef, ga, sigma, N):
    """Draw (or read) one sample into ``x``, add its ``e g(lambda)`` to ``ga``, set
    ``coef_i = e a_i g'(lambda_i)``; return the sample's loss ``e^2 / 2``. The sample is drawn
    whole first, then projected on every field (``u = U x``: contiguous dot products). With
    label noise ``sigma > 0`` the label is ``y = f*(x) + sigma xi``, so ``e = f - f* - sigma xi``,
    ``xi ~ N(0, 1)`` drawn right after the sample's inputs (or read from ``N[k, mu]``)."""
    P, D = U.shape
    if X.shape[0] > 0:
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
    e = 0.0
    for i in range(K):
        e += a[i] * g(act, u[i])
    for n in range(P - K):
        e -= b[n] * g(tact, u[K + n])
    if sigma != 0.0:
        e -= sigma * (N[k, mu] if N.shape[0] > 0 else gen.standard_normal())
    for i in range(K):
        ga[i] += e * g(act, u[i])
        coef[i] = e * a[i] * g_prime(act, u[i])
    return 0.5 * e * e


@numba.njit(inline="always", cache=True)
def advance(a, ga, eta, batch, loss, flow, acc, count, wd, lr2):
    """End of a step, shared by both kernels: ``a -= eta lr2 (ga / B + wd a)`` (plain:
    ``a -= eta ga / B``); the flow time (``+ eta``, whatever ``lr2``), the summed batch losses
    and the step count since the last record, advanced."""
    if wd == 0.0 and lr2 == 1.0:
        for i in range(a.shape[0]):
            a[i] -= eta * ga[i] / batch
    else:
        for i in range(a.shape[0]):
            a[i] -= (eta * lr2) * (ga[i] / batch + wd * a[i])
    return flow + eta, acc + loss / batch, count + 1


@numba.njit(inline="always", cache=True)
def close_record(r, acc, count, flow, out_emp, out_flow):
    """Store record ``r``'s online loss (the mean since the last record) and flow time; the
    accumulators restart and the next record is ``r + 1``."""
    out_emp[r], out_flow[r] = acc / count, flow
    return 0.0, 0, r + 1


@numba.njit(nogil=True, cache=True, fastmath=FAST)
def run(
    a,
    W,
    V,
    b,
    act,
    tact,
    sched,
    lr,
    lr_min,
    decay,
    steps,
    grid,
    batch,
    gen,
    X,
    wd,
    lr2,
    sigma,
    N,
    out_a,
    out_Q,
    out_R,
    out_emp,
    out_flow,
):
    """Online SGD of one seed in place (``a``, ``W``); records at ``grid``. The classical
    options as in the torch trainer: weight decay ``wd`` (``w <- (1 - eta wd) w - eta grad``,
    ``eta`` the step ``eta_k / D``), the second layer's relative rate ``lr2`` (0 freezes it) and
    label noise ``sigma`` (`sample_gradient()`; ``N (steps, B)`` the noises when ``X`` is
    given). Returns -1, or the record index at which a value became non-finite."""
    K, D = W.shape
    P = K + V.shape[0]
    U = np.empty((P, D))  # student and teacher weights, one contiguous row per field
    U[:K] = W
    U[K:] = V
    x, u, coef, ga = np.empty(D), np.empty(P), np.empty(K), np.empty(K)
    gW = np.zeros((K, D))
    if not record(0, a, U, K, out_a, out_Q, out_R):
        return 0
    out_emp[0], out_flow[0] = np.nan, 0.0
    flow, acc, count, r = 0.0, 0.0, 0, 1
    for k in range(steps):
        eta = step_size(sched, lr, k, steps, lr_min, decay) / D
        ga[:] = 0.0
        loss = 0.0
        if batch == 1:
            loss = sample_gradient(act, tact, a, b, U, K, x, u, gen, X, k, 0, coef, ga, sigma, N)
            if wd == 0.0:
                for i in range(K):
                    c = eta * coef[i]
                    for d in range(D):
                        U[i, d] -= c * x[d]
            else:
                shrink = 1.0 - eta * wd
                for i in range(K):
                    c = eta * coef[i]
                    for d in range(D):
                        U[i, d] = shrink * U[i, d] - c * x[d]
        else:
            gW[:, :] = 0.0
            for mu in range(batch):
                loss += sample_gradient(
                    act, tact, a, b, U, K, x, u, gen, X, k, mu, coef, ga, sigma, N
                )
                for i in range(K):
                    c = coef[i]
                    for d in range(D):
                        gW[i, d] += c * x[d]
            if wd == 0.0:
                for i in range(K):
                    for d in range(D):
                        U[i, d] -= (eta / batch) * gW[i, d]
            else:
                shrink = 1.0 - eta * wd
                for i in range(K):
                    for d in range(D):
                        U[i, d] = shrink * U[i, d] - (eta / batch) * gW[i, d]
        flow, acc, count = advance(a, ga, eta, batch, loss, flow, acc, count, wd, lr2)
        if r < grid.shape[0] and k + 1 == grid[r]:
            if not record(r, a, U, K, out_a, out_Q, out_R):
                return r
            acc, count, r = close_record(r, acc, count, flow, out_emp, out_flow)
    W[:, :] = U[:K]
    return -1


# --- the exact order-parameter chain (``_online_chain``'s docstring has the derivation) -------


@numba.njit(cache=True, fastmath=FAST)
def cholesky_psd(C, L, tol):
    """Lower-triangular ``L`` with ``L L^T = C`` for a positive semi-definite ``C``, in place
    (the strict upper triangle of ``L`` is left as it is: zero when ``L`` starts as zeros); a
    pivot at or below ``tol`` times its diagonal entry is a direction the rows do not span: its
    column is set to zero. Returns the rank (the count of nonzero pivots)."""
    n = C.shape[0]
    rank = 0
    for j in range(n):
        d = C[j, j]
        for m in range(j):
            d -= L[j, m] * L[j, m]
        if d > tol * C[j, j] and d > 0.0:
            piv = math.sqrt(d)
            inv = 1.0 / piv
            L[j, j] = piv
            rank += 1
            for i in range(j + 1, n):
                s = C[i, j]
                for m in range(j):
                    s -= L[i, m] * L[j, m]
                L[i, j] = s * inv
        else:  # not spanned; or a diverged state, passed on to the record check
            v = 0.0 if math.isfinite(d) else d
            rank += 0 if math.isfinite(d) else 1
            for i in range(j, n):
                L[i, j] = v
    return rank


@numba.njit(cache=True, fastmath=FAST)
def draw_fields(L, rank, D, batch, gen, z, u, G, A):
    """One batch of the chain's randomness at the Gram matrix ``L L^T``: the fields ``u (B, P)``
    (``u_mu = L z_mu``, ``z_mu ~ N(0, I)`` on the nonzero pivots) and the samples' Gram matrix
    ``G (B, B)``: ``G_munu = z_mu . z_nu`` plus a Wishart(``D - rank``, ``I_B``) matrix, the
    inner products of the parts of ``x_mu`` orthogonal to the rows (Bartlett's construction in
    the scratch ``A (B, B)``, or explicit normals there when ``D - rank < B``)."""
    P = L.shape[0]
    for mu in range(batch):
        for p in range(P):
            z[mu, p] = gen.standard_normal() if L[p, p] != 0.0 else 0.0
        for p in range(P):
            s = 0.0
            for q in range(p + 1):
                s += L[p, q] * z[mu, q]
            u[mu, p] = s
    for mu in range(batch):
        for nu in range(mu + 1):
            s = 0.0
            for p in range(P):
                s += z[mu, p] * z[nu, p]
            G[mu, nu] = s
    free = max(D - rank, 0)
    if batch == 1:
        if free > 0:
            G[0, 0] += gen.chisquare(free)
        return
    if free >= batch:  # Bartlett: G_perp = A A^T, A lower triangular
        for i in range(batch):
            A[i, i] = math.sqrt(gen.chisquare(free - i))
            for j in range(i):
                A[i, j] = gen.standard_normal()
            for j in range(i + 1, batch):
                A[i, j] = 0.0
        width = batch
    else:  # G_perp = Y Y^T with Y (B, free) standard normal
        for i in range(batch):
            for m in range(free):
                A[i, m] = gen.standard_normal()
        width = free
    for mu in range(batch):
        for nu in range(mu + 1):
            s = 0.0
            for m in range(width):
                s += A[mu, m] * A[nu, m]
            G[mu, nu] += s
    for mu in range(batch):
        for nu in range(mu):
            G[nu, mu] = G[mu, nu]


@numba.njit(nogil=True, cache=True, fastmath=FAST)
def chain_run(
    a,
    C,
    b,
    K,
    D,
    act,
    tact,
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
    tol,
    wd,
    lr2,
    sigma,
    N,
    out_a,
    out_Q,
    out_R,
    out_emp,
    out_flow,
):
    """The exact order-parameter chain of online SGD for one seed, in place on ``a (K,)`` and
    ``C (P, P)``, the Gram matrix of the rows ``[W; V]`` (students first). The fields and the
    samples' Gram matrix come from `draw_fields()`, or, if ``F`` has rows, from
    ``F (steps, B, P)`` and ``S (steps, B, B)``. The classical options as in `run()`: with
    label noise each sample's ``xi`` is drawn after the step's fields (or read from
    ``N (steps, B)``); weight decay ``w_i' = s w_i - sum_mu c_mu,i x_mu``, ``s = 1 - eta wd``,
    gives ``Q' = s^2 Q - s (linear terms) + (quadratic terms)`` and ``R' = s R - sum_mu c_mu,i
    nu_mu`` (``_online_chain``). Records at ``grid``; returns -1, or the record index at which
    a value became non-finite."""
    P = C.shape[0]
    M = P - K
    L = np.zeros((P, P))
    z, u = np.empty((batch, P)), np.empty((batch, P))
    G = np.empty((batch, batch))
    A = np.zeros((batch, batch))
    c = np.empty((batch, K))
    ga = np.empty(K)
    given = F.shape[0] > 0
    if not chain_record(0, a, C, K, out_a, out_Q, out_R):
        return 0
    out_emp[0], out_flow[0] = np.nan, 0.0
    flow, acc, count, r = 0.0, 0.0, 0, 1
    for k in range(steps):
        eta = step_size(sched, lr, k, steps, lr_min, decay) / D
        if given:
            for mu in range(batch):
                for p in range(P):
                    u[mu, p] = F[k, mu, p]
                for nu in range(batch):
                    G[mu, nu] = S[k, mu, nu]
        else:
            rank = cholesky_psd(C, L, tol)
            draw_fields(L, rank, D, batch, gen, z, u, G, A)
        ga[:] = 0.0
        loss = 0.0
        for mu in range(batch):
            e = 0.0
            for i in range(K):
                e += a[i] * g(act, u[mu, i])
            for n in range(M):
                e -= b[n] * g(tact, u[mu, K + n])
            if sigma != 0.0:
                e -= sigma * (N[k, mu] if given else gen.standard_normal())
            for i in range(K):
                ga[i] += e * g(act, u[mu, i])
                c[mu, i] = (eta / batch) * e * a[i] * g_prime(act, u[mu, i])
            loss += 0.5 * e * e
        if wd == 0.0:
            # w_i' = w_i - sum_mu c_mu,i x_mu: the new inner products, from u and G alone
            for i in range(K):
                for j in range(i, P):
                    s = 0.0
                    for mu in range(batch):
                        s -= c[mu, i] * u[mu, j]
                        if j < K:
                            s -= c[mu, j] * u[mu, i]
                            for nu in range(batch):
                                s += c[mu, i] * c[nu, j] * G[mu, nu]
                    C[i, j] += s
                    C[j, i] = C[i, j]
        else:
            # w_i' = shrink w_i - sum_mu c_mu,i x_mu
            shrink = 1.0 - eta * wd
            for i in range(K):
                for j in range(i, P):
                    lin, quad = 0.0, 0.0
                    for mu in range(batch):
                        lin -= c[mu, i] * u[mu, j]
                        if j < K:
                            lin -= c[mu, j] * u[mu, i]
                            for nu in range(batch):
                                quad += c[mu, i] * c[nu, j] * G[mu, nu]
                    if j < K:
                        C[i, j] = shrink * (shrink * C[i, j] + lin) + quad
                    else:
                        C[i, j] = shrink * C[i, j] + lin
                    C[j, i] = C[i, j]
        flow, acc, count = advance(a, ga, eta, batch, loss, flow, acc, count, wd, lr2)
        if r < grid.shape[0] and k + 1 == grid[r]:
            if not chain_record(r, a, C, K, out_a, out_Q, out_R):
                return r
            acc, count, r = close_record(r, acc, count, flow, out_emp, out_flow)
    return -1


@numba.njit(cache=True)
def chain_record(r, a, C, K, out_a, out_Q, out_R):
    """Store ``a``, ``Q`` and ``R`` (blocks of ``C``) at record ``r``; False if any is not
    finite."""
    P = C.shape[0]
    ok = True
    for i in range(K):
        out_a[r, i] = a[i]
        ok = ok and math.isfinite(a[i])
        for j in range(P):
            if j < K:
                out_Q[r, i, j] = C[i, j]
            else:
                out_R[r, i, j - K] = C[i, j]
            ok = ok and math.isfinite(C[i, j])
    return ok


def _generated(name: str):
    """The numba scalar kernel of ``gaugedyn.theory.generated_kernels.<name>`` (`jit_generated()`,
    inlined into the cached kernels below)."""
    from ..theory import generated_kernels as gk

    return jit_generated(getattr(gk, name))


# the erf integrals I2 = E[g g], I3 = E[g' u g], I4 = E[g' g' g g] of the symbolic module
erf_i2, erf_i3, erf_i4 = _generated("pair_erf"), _generated("erf_i3"), _generated("erf_i4")


@numba.njit(cache=True)
def ode_fields(y, K, M, b, T):
    """The covariance ``C`` of the student and teacher fields and their output weights
    ``c = (a, -b)`` at the online-ODE state ``y = (a, Q, R)``."""
    P = K + M
    C, c = np.empty((P, P)), np.empty(P)
    c[:K] = y[:K]
    c[K:] = -b
    C[:K, :K] = y[K : K + K * K].reshape(K, K)
    R = y[K + K * K :].reshape(K, M)
    C[:K, K:] = R
    C[K:, :K] = R.T
    C[K:, K:] = T
    return C, c


@numba.njit(cache=True)
def noise_sum(C, c, i, k):
    """``sum_pq c_p c_q I4(i, k, p, q)`` over the fields of ``C``."""
    s, P = 0.0, c.shape[0]
    for p in range(P):
        for q in range(p, P):
            w = c[p] * c[q] * (1.0 if p == q else 2.0)
            s += w * erf_i4(
                C[i, i],
                C[i, k],
                C[i, p],
                C[i, q],
                C[k, k],
                C[k, p],
                C[k, q],
                C[p, p],
                C[p, q],
                C[q, q],
            )
    return s


@numba.njit(cache=True)
def online_rhs(y, K, M, b, T, eta, noise_scale, wd, lr2, sigma2, out):
    """The erf online-ODE right-hand side at ``y`` into ``out`` (``noise_scale = eta^2 / B`` or
    0, weight decay ``wd``, second-layer rate ``lr2``, label-noise variance ``sigma2``)."""
    C, c = ode_fields(y, K, M, b, T)
    P = K + M
    H = np.zeros((K, P))  # E[g'(u_i) u_j e]
    for i in range(K):
        s = 0.0
        for p in range(P):
            s += c[p] * erf_i2(C[i, i], C[p, p], C[i, p])
            for j in range(P):
                H[i, j] += c[p] * erf_i3(C[i, i], C[i, j], C[i, p], C[j, j], C[j, p], C[p, p])
        out[i] = -eta * s
    for i in range(K):
        if wd != 0.0 or lr2 != 1.0:
            out[i] = lr2 * (out[i] - eta * wd * y[i])
        for n in range(M):
            out[K + K * K + i * M + n] = -eta * (y[i] * H[i, K + n] + wd * C[i, K + n])
        for k in range(i, K):
            v = -eta * (y[i] * H[i, k] + y[k] * H[k, i] + 2.0 * wd * C[i, k])
            if noise_scale != 0.0:
                s = noise_sum(C, c, i, k)
                if sigma2 != 0.0:  # E[g'(u_i) g'(u_k)] of erf(z / sqrt 2)
                    det = (1.0 + C[i, i]) * (1.0 + C[k, k]) - C[i, k] * C[i, k]
                    s += sigma2 * _TWO_OVER_PI / np.sqrt(det)
                v += noise_scale * y[i] * y[k] * s
            out[K + i * K + k] = v
            out[K + k * K + i] = v
    return out

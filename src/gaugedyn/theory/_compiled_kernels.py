"""The numba functions behind `._compiled_flow` (imported on first use; numba caches them on
disk): the order-parameter flow's right-hand side `flow_rhs()` and its forward-difference
Jacobian `flow_jac()` (the generated closed-form kernels compiled by `jit_generated()`),
for the kernel family ``kind`` of ``_compiled_flow.KINDS`` (0 relu,
1 erf, 2 linear, 3 ``u F_relu(c) + v F_relu(-c)``); the equations are in ``_compiled_flow``'s
docstring."""

from __future__ import annotations

import math

import numba
import numpy as np

from ._jit import jit_generated


def _generated(kind: str, name: str):
    from . import _generated_kernels as gk

    return jit_generated(getattr(gk, f"{kind}_{name}"))


_SQRT_EPS = math.sqrt(np.finfo(np.float64).eps)

pair_relu, pair_grad_relu = _generated("pair", "relu"), _generated("pair_grad", "relu")
self_relu, self_grad_relu = _generated("self", "relu"), _generated("self_grad", "relu")
pair_erf, pair_grad_erf = _generated("pair", "erf"), _generated("pair_grad", "erf")
self_erf, self_grad_erf = _generated("self", "erf"), _generated("self_grad", "erf")
pair_linear, pair_grad_linear = _generated("pair", "linear"), _generated("pair_grad", "linear")
self_linear, self_grad_linear = _generated("self", "linear"), _generated("self_grad", "linear")


@numba.njit(inline="always", cache=True)
def pair(kind, u, v, q1, q2, c):
    """``F(q1, q2, c)`` of kernel family ``kind``."""
    if kind == 0:
        return pair_relu(q1, q2, c)
    if kind == 1:
        return pair_erf(q1, q2, c)
    if kind == 2:
        return pair_linear(q1, q2, c)
    return u * pair_relu(q1, q2, c) + v * pair_relu(q1, q2, -c)


@numba.njit(inline="always", cache=True)
def pair_grad(kind, u, v, q1, q2, c):
    """``(dF/dq1, dF/dq2, dF/dc)`` of kernel family ``kind``."""
    if kind == 0:
        return pair_grad_relu(q1, q2, c)
    if kind == 1:
        return pair_grad_erf(q1, q2, c)
    if kind == 2:
        return pair_grad_linear(q1, q2, c)
    a1, a2, a3 = pair_grad_relu(q1, q2, c)
    b1, b2, b3 = pair_grad_relu(q1, q2, -c)
    return u * a1 + v * b1, u * a2 + v * b2, u * a3 - v * b3


@numba.njit(inline="always", cache=True)
def self_(kind, u, q):
    """``S(q)`` of kernel family ``kind``."""
    if kind == 0:
        return self_relu(q)
    if kind == 1:
        return self_erf(q)
    if kind == 2:
        return self_linear(q)
    return u * self_relu(q)


@numba.njit(inline="always", cache=True)
def self_grad(kind, u, q):
    """``S'(q)`` of kernel family ``kind``."""
    if kind == 0:
        return self_grad_relu(q)
    if kind == 1:
        return self_grad_erf(q)
    if kind == 2:
        return self_grad_linear(q)
    return u * self_grad_relu(q)


@numba.njit(cache=True)
def flow_rhs(y, K, M, b, T, wd, lr2, kind, u, v, out):
    """``dy/dt`` of the order-parameter flow at one state ``y`` into ``out``."""
    nq = K * (K + 1) // 2
    a = y[:K]
    Q = np.empty((K, K))
    k = K
    for i in range(K):
        for j in range(i, K):
            Q[i, j] = y[k]
            Q[j, i] = y[k]
            k += 1
    R = y[K + nq :].reshape(K, M)
    G = np.zeros((K, K))
    H = np.empty((K, M))
    for i in range(K):
        qi = Q[i, i]
        ga = self_(kind, u, qi) * a[i]
        gii = 0.5 * a[i] * a[i] * self_grad(kind, u, qi)
        for j in range(K):
            if j != i:
                fq1, _, fc = pair_grad(kind, u, v, qi, Q[j, j], Q[i, j])
                ga += pair(kind, u, v, qi, Q[j, j], Q[i, j]) * a[j]
                gii += a[i] * a[j] * fq1
                G[i, j] = 0.5 * a[i] * a[j] * fc
        for n in range(M):
            fq1, _, fc = pair_grad(kind, u, v, qi, T[n, n], R[i, n])
            ga -= pair(kind, u, v, qi, T[n, n], R[i, n]) * b[n]
            gii -= a[i] * b[n] * fq1
            H[i, n] = -a[i] * b[n] * fc
        G[i, i] = gii
        out[i] = -ga
    k = K
    for i in range(K):
        for j in range(i, K):
            s = 0.0
            for m in range(K):
                s += 2.0 * (G[i, m] * Q[m, j] + Q[i, m] * G[m, j])
            for n in range(M):
                s += H[i, n] * R[j, n] + R[i, n] * H[j, n]
            out[k] = -s
            k += 1
    for i in range(K):
        for n in range(M):
            s = 0.0
            for m in range(K):
                s += 2.0 * G[i, m] * R[m, n]
            for p in range(M):
                s += H[i, p] * T[p, n]
            out[k] = -s
            k += 1
    if wd != 0.0 or lr2 != 1.0:
        for i in range(K):
            out[i] = lr2 * out[i] - wd * lr2 * y[i]
        for j in range(K, K + nq):
            out[j] -= 2.0 * wd * y[j]
        for j in range(K + nq, y.shape[0]):
            out[j] -= wd * y[j]
    return out


@numba.njit(cache=True)
def flow_jac(y, K, M, b, T, wd, lr2, kind, u, v, out, f0, yp, J):
    """The forward-difference Jacobian of `flow_rhs()` at ``y`` into ``J`` (increments
    ``sqrt(eps) max(|y_k|, 1e-6)``, rounded so that ``y_k + h_k`` is exact); ``out``, ``f0``,
    ``yp`` are scratch vectors of the state's size."""
    n = y.shape[0]
    flow_rhs(y, K, M, b, T, wd, lr2, kind, u, v, f0)
    for k in range(n):
        h = _SQRT_EPS * max(abs(y[k]), 1e-6)
        for m in range(n):
            yp[m] = y[m]
        yp[k] = y[k] + h
        h = yp[k] - y[k]
        flow_rhs(yp, K, M, b, T, wd, lr2, kind, u, v, out)
        for m in range(n):
            J[m, k] = (out[m] - f0[m]) / h
    return J

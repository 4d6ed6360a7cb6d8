"""The compiled online ODE of any compiled activation (`online_quadrature_rhs()`; numba loads
here, on first use).

The same rules as the numpy reference `gaugedyn.training.OnlineODE`, compiled:

- the population flow through the pair kernels ``F(q1, q2, c) = E[g(x1) g(x2)]`` and the self
  kernel ``S(q) = E[g(x)^2]`` with their first derivatives, combined as
  `gaugedyn.theory.order_parameter_velocity()` combines them (``dL/da``, ``G``, ``H``). For a
  smooth ``g`` the kernels are the Hermite (Mehler) series of `gaugedyn.theory._quadrature`,
  ``F = sum_k A_k(q1) A_k(q2) rho^k``, with the coefficients ``A_k(q)`` and ``A_k'(q)`` from the
  activation's own one-dimensional Gauss-Hermite rule (its ``quadrature``: the nodes, weights and
  orthonormal basis are passed in, so the number of terms is the registry's); for a positively
  homogeneous ``g = up relu + down relu(-.)`` they are the ReLU closed forms,
  ``F = (up^2 + down^2) F_relu(c) + 2 up down F_relu(-c)``;
- the noise term ``E_ik = E[g'(u_i) g'(u_k) e^2]`` as `gaugedyn.training._online_ode.noise_term()`
  evaluates it, by the method of ``noise_method()``: for a piecewise-linear activation the exact
  orthant moments of `gaugedyn.training._orthant`; otherwise for ``C`` of rank ``r <= 4`` one ``r``-dimensional Gauss-Hermite rule on its
  eigen factor (``DIRECT_NODES[r]`` per axis; the symmetric root for a homogeneous ``g`` at full
  rank), otherwise ``sum_pq c_p c_q I4(i, k, p, q)`` with each four-point integral by the tensor
  rule with ``FOUR_POINT_NODES`` per axis on the eigen factor of its own ``4 x 4`` covariance
  (the axes of eigenvalues at most ``1e-12`` of the largest, a repeated field's, dropped: the
  symmetric rule's value moves by ``O(lambda)`` there); for the activations of
  ``SOBOL_ACTIVATIONS`` (tanh, softplus) one equal-weight rule of ``2**SOBOL_LOG2[name]``
  scrambled-Sobol nodes on the symmetric square root of ``C`` (`sobol_factor()`), ``e`` formed node by node
  (`sobol_noise()`), of the difference between the integrand and that of a mixture
  (`mixture()`: tanh's erf mixture, ``ERF_MIXTURES``, softplus's Gaussian-smoothed ReLUs,
  ``RELU_MIXTURES``), whose own expectation is added exactly (`mixture_noise()`: erf's closed
  forms; `relu_mixture_noise()`: ReLU's orthant moments with per-factor smoothing); the
  linear activation in closed form;
- label noise ``sigma^2 J_ik``, ``J = dF/dc (Q_ii, Q_kk, Q_ik)`` (Price), the options and the
  state layout of ``OnlineODE``;
- the flow's forward-difference Jacobian (`flow_jacobian()`) and the runtime check's Monte
  Carlo sums (`monte_carlo_sums()`).

**Cost of softplus's noise term per evaluation (issue 46).** At K = M = 4 the term
(`noise_expectation()`, the Sobol rule of 2^12 nodes and the control's exact term) took
3.3 ms of a 3.5 ms right-hand side: `relu_mixture_noise()` 2.5 ms, `sobol_noise()` 0.79 to
0.81 ms. Now 0.51 to 0.52 and 0.37 to 0.38 ms, the whole term 0.88 to 0.89 ms and the
right-hand side 1.02 to 1.04 ms (CPU time, medians of 20 repeats at each of the noise-free
flow's states t = 0, 10, 100, 300 and 1000, the ranges over the states; the code before and
after in alternating processes, three rounds each, the figures of the quietest round,
2026-12-08 01:32 UTC, load 1.0 on the shared two cores; the other rounds, load 0.9 to 1.0, up
to 15% slower on both sides):

- `mixture_sums()` enumerates the terms once, storing each term's smoothed covariance (its
  upper triangle), scales, weight and the multiset of its factors, and each new multiset's
  correlations (`_item_correlations()`: per factor, not per multiset); then the orthant
  probabilities of all multisets of the first smoothed rule together
  (`gaugedyn.training._orthant.plackett_batch()`), then all moments together
  (`gaugedyn.training._orthant.smoothed_moments()`), both vectorised
  (`gaugedyn.training._orthant`'s module docstring has their figures). Steps: 2.5 -> 1.45 ms
  (the two batches), -> 0.77 (the terms' data gathered while they are enumerated, no tuple
  indexed by a variable), -> 0.60 (the correlations per factor), -> 0.57 (fused
  multiply-adds), -> 0.55 (the upper triangle only), -> 0.51 (each new multiset's column of
  the batch written straight from its factors' correlations, `_item_setup()`);
- `sobol_noise()` runs the nodes in blocks of `SOBOL_BLOCK` (`sobol_block()`): the fields,
  ``e`` and the sums as loops over the block's nodes, which LLVM vectorises; a teacher's
  field evaluates ``g`` and ``h`` only. 0.78 -> 0.52 ms, -> 0.42 with fused multiply-adds
  (the field table's Horner steps), -> 0.37 with ``e`` summed field by field over the nodes.
  The field table itself stays scalar (about 0.33 ms of it for 8 x 4,096 fields): its
  interval is a gather, which LLVM does not emit for this CPU (znver4; a flattened table with
  unsigned offsets did not change that), and copying each node's 36 coefficients into a
  transposed buffer first made it 12x slower (dropped).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._online_kernels import _INV_SQRT2, _SQRT_2_OVER_PI, erf_i4, g, g_prime, g_second
from ._orthant import (
    TRIANGLE_FROM,
    piecewise_noise,
    plackett_batch,
    smoothed_moments,
    smoothed_orthant4,
    smoothed_relu_moment,
    smoothed_rule,
)

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

EIGEN_DROP = 1e-12
"""Eigenvalues at or below this fraction of the largest count as zero (`gaugedyn.theory.eigen_factor`'s
tolerance): the rank of ``C`` and the dropped axes of a four-point rule."""


@numba.njit(inline="always", cache=True)
def g_triple(act, x):
    """``(g(x), g'(x), g''(x))`` of activation code ``act``, the same values as `g()`,
    `g_prime()` and `g_second()` apart, with tanh's ``tanh(x)`` computed once (three calls of it
    were most of the flow's cost) and softplus's ``exp(-|x|)`` once (`softplus_pair()`)."""
    if act == 3:
        t = math.tanh(x)
        return t, 1.0 - t * t, -2.0 * t * (1.0 - t * t)
    if act == 4:
        gx, s = softplus_pair(x)
        return gx, s, s * (1.0 - s)
    return g(act, x), g_prime(act, x), g_second(act, x)


@numba.njit(inline="always", cache=True)
def softplus_pair(x):
    """``(g(x), g'(x))`` of softplus (code 4), the bits of `g()` and `g_prime()` apart, from one
    ``e = exp(-|x|)``: ``g = max(x, 0) + log1p(e)``, ``g' = 1 / (1 + e)`` for ``x >= 0``
    (``e = exp(-x)``) and ``e / (1 + e)`` below (``e = exp(x)``); apart, ``g`` and ``g'``
    computed ``exp(-|x|)`` and ``exp(-x)`` or ``exp(x)``, two exponentials where one is the
    other."""
    e = math.exp(-abs(x))
    return max(x, 0.0) + math.log1p(e), (1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e))


@numba.njit(inline="always", cache=True)
def g_pair(act, x):
    """``(g(x), g'(x))`` of activation code ``act`` (`g_triple()`'s first two)."""
    if act == 3:
        t = math.tanh(x)
        return t, 1.0 - t * t
    if act == 4:
        return softplus_pair(x)
    return g(act, x), g_prime(act, x)


@numba.njit(cache=True)
def hermite_coefficients(act, q, z, w, basis_t, A, row):
    """``A[row, 0, k] = A_k(q)`` and ``A[row, 1, k] = A_k'(q)`` of ``g(sqrt(q) z)`` from the rule
    ``(z, w)`` and its basis ``basis_t[j, k] = w_j He_k(z_j) / sqrt(k!)``; returns ``(S(q),
    S'(q))`` (``S' = E[g'^2 + g g'']``).

    The nodes four at a time: each coefficient adds the four nodes' terms in the nodes' order
    before it is stored again (the same additions in the same order as node by node, to the
    bit; tested), so the rows of ``A`` pass through memory a quarter as often: 0.115 -> 0.077
    ms for softplus's 8 fields at K = M = 4 (384 nodes, 97 terms; 2026-12-08 01:53 UTC, load
    1.9)."""
    n, terms = basis_t.shape
    sq = math.sqrt(q)
    a0, a1 = A[row, 0], A[row, 1]
    for k in range(terms):
        a0[k] = 0.0
        a1[k] = 0.0
    S, dS = 0.0, 0.0
    full = n - n % 4
    for j in range(0, full, 4):
        G0, P0, Q0 = g_triple(act, sq * z[j])
        G1, P1, Q1 = g_triple(act, sq * z[j + 1])
        G2, P2, Q2 = g_triple(act, sq * z[j + 2])
        G3, P3, Q3 = g_triple(act, sq * z[j + 3])
        p0, p1, p2, p3 = P0 * z[j], P1 * z[j + 1], P2 * z[j + 2], P3 * z[j + 3]
        b0, b1, b2, b3 = basis_t[j], basis_t[j + 1], basis_t[j + 2], basis_t[j + 3]
        for k in range(terms):
            a0[k] = (((a0[k] + b0[k] * G0) + b1[k] * G1) + b2[k] * G2) + b3[k] * G3
            a1[k] = (((a1[k] + b0[k] * p0) + b1[k] * p1) + b2[k] * p2) + b3[k] * p3
        S += w[j] * G0 * G0
        dS += w[j] * (P0 * P0 + G0 * Q0)
        S += w[j + 1] * G1 * G1
        dS += w[j + 1] * (P1 * P1 + G1 * Q1)
        S += w[j + 2] * G2 * G2
        dS += w[j + 2] * (P2 * P2 + G2 * Q2)
        S += w[j + 3] * G3 * G3
        dS += w[j + 3] * (P3 * P3 + G3 * Q3)
    for j in range(full, n):
        G, P, G2 = g_triple(act, sq * z[j])
        pz = P * z[j]
        for k in range(terms):
            a0[k] += basis_t[j, k] * G
            a1[k] += basis_t[j, k] * pz
        S += w[j] * G * G
        dS += w[j] * (P * P + G * G2)
    for k in range(terms):
        a1[k] /= 2.0 * sq
    return S, dS


@numba.njit(cache=True)
def mehler(A, i, p, q1, q2, c):
    """``(F, F_q1, F_q2, F_c)`` of the series ``sum_k A_k(q1) A_k(q2) rho^k`` (rows ``i``, ``p``
    of ``A``), the derivatives by the chain rule through ``rho = c / sqrt(q1 q2)``."""
    s = math.sqrt(q1 * q2)
    rho = min(max(c / s, -1.0), 1.0)
    phi, p1, p2, pr = 0.0, 0.0, 0.0, 0.0
    pw, prev = 1.0, 0.0
    for k in range(A.shape[2]):
        aa = A[i, 0, k] * A[p, 0, k]
        phi += aa * pw
        p1 += A[i, 1, k] * A[p, 0, k] * pw
        p2 += A[i, 0, k] * A[p, 1, k] * pw
        if k > 0:
            pr += k * aa * prev
        prev = pw
        pw *= rho
    return phi, p1 - pr * rho / (2.0 * q1), p2 - pr * rho / (2.0 * q2), pr / s


@numba.njit(cache=True)
def relu_pair(q1, q2, c):
    """``(F, F_q1, F_q2, F_c)`` of ReLU in closed form (``gaugedyn derive``'s ``pair_relu``,
    ``theta = arccos(c / sqrt(q1 q2))``, ``s = sqrt(q1 q2 - c^2)``)."""
    theta = math.acos(min(max(c / math.sqrt(q1 * q2), -1.0), 1.0))
    s = math.sqrt(max(q1 * q2 - c * c, 0.0))
    x1 = 0.25 * s / math.pi
    return (
        0.5 * (-c * theta + math.pi * c + s) / math.pi,
        x1 / q1,
        x1 / q2,
        -0.5 * (theta - math.pi) / math.pi,
    )


@numba.njit(cache=True)
def pair(homogeneous, u, v, A, i, p, q1, q2, c):
    """``(F, F_q1, F_q2, F_c)`` of the activation (module docstring)."""
    if not homogeneous:
        return mehler(A, i, p, q1, q2, c)
    f0, f1, f2, f3 = relu_pair(q1, q2, c)
    m0, m1, m2, m3 = relu_pair(q1, q2, -c)
    return u * f0 + v * m0, u * f1 + v * m1, u * f2 + v * m2, u * f3 - v * m3


@numba.njit(cache=True)
def direct_noise(act, a, b, A, zr, wr, n, E):
    """``E_ik += E[g'(u_i) g'(u_k) e^2]`` by the tensor rule with ``n`` nodes per axis on the
    factor ``A (P, r)``: ``u = A z``."""
    K, P, r = a.shape[0], A.shape[0], A.shape[1]
    coord, u, gp = np.empty(r), np.empty(P), np.empty(K)
    for index in range(n**r):
        wt = 1.0
        rest = index
        for m in range(r):
            j = rest % n
            coord[m] = zr[j]
            wt *= wr[j]
            rest //= n
        fields_at(A, coord, u)
        e = 0.0
        for i in range(K):
            e += a[i] * g(act, u[i])
            gp[i] = g_prime(act, u[i])
        for t in range(P - K):
            e -= b[t] * g(act, u[K + t])
        we = wt * e * e
        for i in range(K):
            for k in range(i, K):
                E[i, k] += we * gp[i] * gp[k]


@numba.njit(cache=True)
def sobol_factor(C):
    """``A = U sqrt(max(L, 0)) U^T`` (``P x P``), ``A A^T = C``: the symmetric square root, a
    continuous function of ``C`` (smooth where ``C`` is positive definite) whatever the
    eigenvectors' signs and order (`gaugedyn.training._online_ode.sobol_factor()` builds the
    same in numpy)."""
    P = C.shape[0]
    lam, U = np.linalg.eigh(C)
    A = np.zeros((P, P))
    for m in range(P):
        s = math.sqrt(max(lam[m], 0.0))
        for p in range(P):
            x = U[p, m] * s
            for q in range(P):
                A[p, q] += x * U[q, m]
    return A


@numba.njit(inline="always", cache=True)
def fields_at(A, z, u):
    """``u = A z`` (``A (P, r)``, ``z (r,)``) into ``u (P,)``: one node of a rule on the factor
    ``A`` (the direct and the Sobol rule's shared step)."""
    P, r = A.shape
    for p in range(P):
        s = 0.0
        for m in range(r):
            s += A[p, m] * z[m]
        u[p] = s


@numba.njit(inline="always", cache=True)
def mixture(control, x):
    """``(h(x), h'(x))`` of the mixture ``control (3, J)`` (rows: weights ``w``, scales ``s``,
    the family's code, `gaugedyn.training._online_ode.CONTROL_FAMILIES`): family 0 the erf
    mixture ``h(x) = sum_j w_j erf(s_j x / sqrt 2)``; family 1 the mixture of Gaussian-smoothed
    ReLUs ``h(x) = sum_j w_j S_{s_j}(x)``, ``S_s(x) = E_z[relu(x + s z)] = x Phi(x / s) + s
    phi(x / s)``, ``S_s' = Phi(x / s)``."""
    h, d = 0.0, 0.0
    for j in range(control.shape[1]):
        w, s = control[0, j], control[1, j]
        if control[2, j] == 0.0:
            y = s * x
            h += w * math.erf(y * _INV_SQRT2)
            d += w * s * (_SQRT_2_OVER_PI * math.exp(-0.5 * (y * y)))
        else:
            y = x / s
            cdf = 0.5 * math.erfc(-y * _INV_SQRT2)
            h += w * (x * cdf + s * _INV_SQRT_2PI * math.exp(-0.5 * (y * y)))
            d += w * cdf
    return h, d


FIELD_TABLE_REACH = 12.0
"""The Sobol rule's field table (`field_values()`) covers ``-FIELD_TABLE_REACH < x <
FIELD_TABLE_REACH``; a field outside it is evaluated by the functions themselves."""
FIELD_TABLE_WIDTH = 0.125
"""The width of each of the field table's intervals (``2 FIELD_TABLE_REACH / FIELD_TABLE_WIDTH
= 192`` of them)."""
FIELD_TABLE_DEGREE = 8
"""The degree of the field table's polynomial on each interval: its Chebyshev interpolant at
``FIELD_TABLE_DEGREE + 1`` points, within 3e-14 of each function on ``[-12, 12]`` (softplus,
the logistic and their smoothed-ReLU mixture; tanh, its slope and their erf mixture:
`gaugedyn.training._online_ode.field_table()`, tested)."""


@numba.njit(inline="always", cache=True)
def field_values(act, control, table, x, student):
    """``(g(x), g'(x), h(x), h'(x))`` of activation code ``act`` and the mixture ``control``
    (`mixture()`; ``h = h' = 0`` without one): from ``table (n, degree + 1, 4)``
    (`gaugedyn.training._online_ode.field_table()`: on interval ``m`` of ``FIELD_TABLE_WIDTH``
    from ``-FIELD_TABLE_REACH``, the monomial coefficients of the four functions' polynomials
    in ``v = 2 (x - x_m) / FIELD_TABLE_WIDTH - 1``, evaluated together by Horner's rule) where
    ``x`` is inside its reach and the table is not empty, else from the functions themselves
    (`g_pair()`, `mixture()`); ``g'`` and ``h'`` only for a ``student`` field (0 otherwise)."""
    n = table.shape[0]
    if n:
        y = (x + FIELD_TABLE_REACH) * (1.0 / FIELD_TABLE_WIDTH)
        if y > 0.0 and y < n:
            m = int(y)
            v = 2.0 * (y - m) - 1.0
            d = table.shape[1] - 1
            s0, s2 = table[m, d, 0], table[m, d, 2]
            if student:
                s1, s3 = table[m, d, 1], table[m, d, 3]
                for j in range(d - 1, -1, -1):
                    s0 = s0 * v + table[m, j, 0]
                    s1 = s1 * v + table[m, j, 1]
                    s2 = s2 * v + table[m, j, 2]
                    s3 = s3 * v + table[m, j, 3]
                return s0, s1, s2, s3
            for j in range(d - 1, -1, -1):
                s0 = s0 * v + table[m, j, 0]
                s2 = s2 * v + table[m, j, 2]
            return s0, 0.0, s2, 0.0
    gx, gpx = g_pair(act, x)
    h, hp = 0.0, 0.0
    if control.shape[1]:
        h, hp = mixture(control, x)
    if student:
        return gx, gpx, h, hp
    return gx, 0.0, h, 0.0


@numba.njit(cache=True)
def sobol_noise(act, a, b, A, nodes, control, table, E):
    """``E_ik += E[g'(u_i) g'(u_k) e^2]`` (``i <= k``) by the equal-weight rule of the rows of
    ``nodes (N, r)`` on the factor ``A (P, r)``, ``u = A z``, with the mixture ``control
    (3, J)`` (`mixture()`) as a control variate (``J = 0``: none): the rule's mean of the difference of the
    integrand and the mixture network's (`mixture()`), to which `noise_expectation()` adds the
    mixture's own expectation exactly (`mixture_noise()`, `relu_mixture_noise()`)
    (`gaugedyn.training._online_ode.sobol_expectation()` in numpy). Each field's ``g``,
    ``g'``, ``h`` and ``h'`` come from the field table ``table`` (`field_values()`; empty:
    from the functions themselves). The nodes are taken in blocks of `SOBOL_BLOCK`, each
    step a loop over the block's nodes without a branch (`sobol_block()`), so that LLVM runs
    it on vectors of eight."""
    K, P = a.shape[0], A.shape[0]
    N = nodes.shape[0]
    F = np.zeros((K, K))
    B = SOBOL_BLOCK
    U = np.empty((P, B))
    Z = np.empty((A.shape[1], B))
    V = np.empty((4, P, B))
    acc = np.zeros((K, K, 8))
    for start in range(0, N, B):
        n = min(B, N - start)
        for m in range(A.shape[1]):
            for x in range(n):
                Z[m, x] = nodes[start + x, m]
        sobol_block(act, a, b, A, Z, n, control, table, U, V, acc, F)
    for i in range(K):
        for k in range(i, K):
            s = 0.0
            for lane in range(8):
                s += acc[i, k, lane]
            E[i, k] += (s + F[i, k]) / N


SOBOL_BLOCK = 512
"""The nodes of one block of `sobol_noise()` (its arrays, ``(4 P + r) B`` floats, stay in the
first-level cache at P = 8)."""


@numba.njit(error_model="numpy", fastmath={"contract"}, cache=True)
def sobol_block(act, a, b, A, Z, n, control, table, U, V, acc, F):
    """One block of `sobol_noise()`: the fields ``U[:, :n] = A Z[:, :n]``, their four functions
    ``V (4, P, n)`` from the table (`field_values()`'s polynomial, the interval read as a
    gather; a node outside the table's reach redone by `field_values()` afterwards), and the
    sums ``acc[i, k, lane]`` of the node's terms over the nodes ``lane (mod 8)`` (``F[i, k]``
    the rest of a block not a multiple of 8)."""
    K, P, r = a.shape[0], A.shape[0], A.shape[1]
    for p in range(P):
        for x in range(n):
            U[p, x] = 0.0
        for m in range(r):
            w = A[p, m]
            for x in range(n):
                U[p, x] += w * Z[m, x]
    # the degree a constant, so that the Horner loop unrolls and the loop over nodes is inner
    d = FIELD_TABLE_DEGREE
    rows = table.shape[0] if table.shape[1] == d + 1 else 0
    for p in range(P):
        student = p < K
        if rows and student:
            for x in range(n):
                y = (U[p, x] + FIELD_TABLE_REACH) * (1.0 / FIELD_TABLE_WIDTH)
                yc = min(max(y, 0.0), rows)
                m = min(int(yc), rows - 1)  # a node outside the reach: redone below
                v = 2.0 * (yc - m) - 1.0
                s0, s1 = table[m, d, 0], table[m, d, 1]
                s2, s3 = table[m, d, 2], table[m, d, 3]
                for j in range(d - 1, -1, -1):
                    s0 = s0 * v + table[m, j, 0]
                    s1 = s1 * v + table[m, j, 1]
                    s2 = s2 * v + table[m, j, 2]
                    s3 = s3 * v + table[m, j, 3]
                V[0, p, x], V[1, p, x], V[2, p, x], V[3, p, x] = s0, s1, s2, s3
        elif rows:  # a teacher's field: g and h only
            for x in range(n):
                y = (U[p, x] + FIELD_TABLE_REACH) * (1.0 / FIELD_TABLE_WIDTH)
                yc = min(max(y, 0.0), rows)
                m = min(int(yc), rows - 1)  # a node outside the reach: redone below
                v = 2.0 * (yc - m) - 1.0
                s0, s2 = table[m, d, 0], table[m, d, 2]
                for j in range(d - 1, -1, -1):
                    s0 = s0 * v + table[m, j, 0]
                    s2 = s2 * v + table[m, j, 2]
                V[0, p, x], V[2, p, x] = s0, s2
        for x in range(n):
            y = (U[p, x] + FIELD_TABLE_REACH) * (1.0 / FIELD_TABLE_WIDTH)
            if not (rows and y > 0.0 and y < rows):
                g0, g1, g2, g3 = field_values(act, control, table, U[p, x], student)
                V[0, p, x], V[1, p, x], V[2, p, x], V[3, p, x] = g0, g1, g2, g3
    # e and the mixture's e, node by node, each field's term added in turn (the loops over
    # the nodes inner, so that they run on vectors)
    T = np.zeros((3, n))
    for i in range(K):
        for x in range(n):
            T[0, x] += a[i] * V[0, i, x]
            T[1, x] += a[i] * V[2, i, x]
    for t in range(P - K):
        for x in range(n):
            T[0, x] -= b[t] * V[0, K + t, x]
            T[1, x] -= b[t] * V[2, K + t, x]
    for x in range(n):
        T[0, x], T[1, x] = T[0, x] * T[0, x], T[1, x] * T[1, x]
    full = n - n % 8
    for i in range(K):
        for k in range(i, K):
            for x in range(n):
                T[2, x] = T[0, x] * V[1, i, x] * V[1, k, x] - T[1, x] * V[3, i, x] * V[3, k, x]
            for x0 in range(0, full, 8):
                for lane in range(8):
                    acc[i, k, lane] += T[2, x0 + lane]
            for x in range(full, n):
                F[i, k] += T[2, x]


@numba.njit(cache=True)
def mixture_noise(C, c, K, control, E):
    """``E_ik += E[h'(u_i) h'(u_k) (sum_p c_p h(u_p))^2]`` (``i <= k``) in closed form for the
    erf mixture ``h`` of ``control (3, J)`` (family 0, `mixture()`): the sum over the mixture's terms of
    erf's four-point integrals ``erf_i4`` (``gaugedyn derive``) on the covariance of the scaled
    fields ``beta_j u``."""
    P, J = C.shape[0], control.shape[1]
    for i in range(K):
        for k in range(i, K):
            s = 0.0
            for j1 in range(J):
                s1 = control[1, j1]
                for j2 in range(J):
                    s2 = control[1, j2]
                    w12 = control[0, j1] * s1 * control[0, j2] * s2
                    for p in range(P):
                        for q in range(p, P):
                            wpq = w12 * c[p] * c[q] * (1.0 if p == q else 2.0)
                            for j3 in range(J):
                                s3 = control[1, j3]
                                for j4 in range(J):
                                    s4 = control[1, j4]
                                    s += (
                                        wpq
                                        * control[0, j3]
                                        * control[0, j4]
                                        * erf_i4(
                                            s1 * s1 * C[i, i],
                                            s1 * s2 * C[i, k],
                                            s1 * s3 * C[i, p],
                                            s1 * s4 * C[i, q],
                                            s2 * s2 * C[k, k],
                                            s2 * s3 * C[k, p],
                                            s2 * s4 * C[k, q],
                                            s3 * s3 * C[p, p],
                                            s3 * s4 * C[p, q],
                                            s4 * s4 * C[q, q],
                                        )
                                    )
            E[i, k] += s


@numba.njit(cache=True)
def _item_correlations(C, control):
    """``(R, lam)`` over the (field, scale) factors ``x = p J + j`` of `mixture_sums()`: the
    correlations ``R[x, y] = C_pq / sqrt(D_x D_y)`` of the smoothed fields (``D_x = C_pp +
    s_j^2``; on the diagonal the correlation of a field with itself under two independent
    smoothings) and ``lam[x] = s_j^2 / D_x``: `gaugedyn.training._orthant.smoothed_correlations()`'s
    entries and bound, the same operations, once per factor instead of once per multiset."""
    P, J = C.shape[0], control.shape[1]
    n = P * J
    D, lam = np.empty(n), np.empty(n)
    for p in range(P):
        for j in range(J):
            noise = control[1, j] ** 2
            D[p * J + j] = C[p, p] + noise
            lam[p * J + j] = noise / D[p * J + j]
    R = np.empty((n, n))
    for x in range(n):
        for y in range(n):
            R[x, y] = C[x // J, y // J] / math.sqrt(D[x] * D[y])
    return R, lam


@numba.njit(inline="always", cache=True)
def _item_setup(Ritem, lam, k0, k1, k2, k3, X, col):
    """For the factors ``k0 <= k1 <= k2 <= k3``: where their rule is the first of
    ``SMOOTHED_RULES``, column ``col`` of ``X`` as
    `gaugedyn.training._orthant.plackett_setup()` writes it from their correlations (the
    pairing with the smallest cross correlations, the first of equals; the same entries, read
    from `_item_correlations()`), and its answer; False for any other rule (the caller then
    uses `smoothed_orthant4()`)."""
    low = min(1.0, min(min(lam[k0], lam[k1]), min(lam[k2], lam[k3])))
    if smoothed_rule(low) != 0:
        return False
    r01, r02, r03 = Ritem[k0, k1], Ritem[k0, k2], Ritem[k0, k3]
    r12, r13, r23 = Ritem[k1, k2], Ritem[k1, k3], Ritem[k2, k3]
    # the pairings (01|23), (02|13), (03|12): their largest cross correlation
    t0 = max(max(abs(r02), abs(r03)), max(abs(r12), abs(r13)))
    t1 = max(max(abs(r01), abs(r03)), max(abs(r12), abs(r23)))
    t2 = max(max(abs(r01), abs(r02)), max(abs(r13), abs(r23)))
    if t0 <= t1 and t0 <= t2:
        x = (r01, r02, r03, r12, r13, r23)
    elif t1 <= t2:
        x = (r02, r01, r03, r12, r23, r13)
    else:
        x = (r03, r01, r02, r13, r23, r12)
    for slot in range(6):
        X[slot, col] = x[slot]
    if abs(x[0]) > TRIANGLE_FROM:
        return False
    return x[1] != 0.0 and x[2] != 0.0 and x[3] != 0.0 and x[4] != 0.0


@numba.njit(inline="always", cache=True)
def _sorted4(k0, k1, k2, k3):
    """The four integers sorted (a sorting network of five exchanges)."""
    if k0 > k1:
        k0, k1 = k1, k0
    if k2 > k3:
        k2, k3 = k3, k2
    if k0 > k2:
        k0, k2 = k2, k0
    if k1 > k3:
        k1, k3 = k3, k1
    if k1 > k2:
        k1, k2 = k2, k1
    return k0, k1, k2, k3


@numba.njit(inline="always", cache=True)
def _sorted_index(k0, k1, k2, k3):
    """`_multiset_index()` of members already sorted."""
    b, c, d = k1 + 1, k2 + 2, k3 + 3
    return (
        k0 + b * (b - 1) // 2 + c * (c - 1) * (c - 2) // 6 + d * (d - 1) * (d - 2) * (d - 3) // 24
    )


@numba.njit(inline="always", cache=True)
def _multiset_index(k0, k1, k2, k3):
    """The combinatorial number of the multiset ``{k0, k1, k2, k3}`` (non-negative integers)
    among the multisets of four: that of the set ``{a, b + 1, c + 2, d + 3}`` of its sorted
    members ``a <= b <= c <= d``."""
    k0, k1, k2, k3 = _sorted4(k0, k1, k2, k3)
    return _sorted_index(k0, k1, k2, k3)


_UPPER_X = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3], dtype=np.int64)
_UPPER_Y = np.array([0, 1, 2, 3, 1, 2, 3, 2, 3, 3], dtype=np.int64)
"""The entries of a 4 x 4 upper triangle in the order of the rows of
`gaugedyn.training._orthant.smoothed_moments()`' columns."""

MIXTURE_STORE_LIMIT = 1 << 22
"""The most multisets of four (field, scale) factors whose orthant probabilities
`relu_mixture_noise()` stores (an array of this many floats and flags, 36 MiB at the limit: up to
P J = 98 factors, so K = M = 24 with a two-term mixture); beyond it each is computed afresh
(at K = M = 64 the store would take 1.7 GB)."""


@numba.njit(cache=True)
def relu_mixture_noise(C, c, K, control, E):
    """`mixture_sums()` storing the orthant probabilities where their multisets number at most
    `MIXTURE_STORE_LIMIT` (its docstring)."""
    items = C.shape[0] * control.shape[1]
    size = (items + 3) * (items + 2) * (items + 1) * items // 24
    mixture_sums(C, c, K, control, E, size <= MIXTURE_STORE_LIMIT)


@numba.njit(cache=True)
def mixture_sums(C, c, K, control, E, store):
    """``E_ik += E[h'(u_i) h'(u_k) (sum_p c_p h(u_p))^2]`` (``i <= k``) exactly for the mixture
    of Gaussian-smoothed ReLUs ``h = sum_j w_j S_{s_j}`` of ``control (3, J)`` (family 1,
    `mixture()`): ``S_s' = E_z[theta(x + s z)]`` and ``S_s = E_z[relu(x + s z)]``, so each term
    ``E[S'(u_i) S'(u_k) S(u_p) S(u_q)]`` is ReLU's orthant moment
    ``E[theta(v_0) theta(v_1) relu(v_2) relu(v_3)]``
    (`gaugedyn.training._orthant.smoothed_relu_moment()`) of the fields
    ``v = (u_i, u_k, u_p, u_q) + (s_1 z_1, ..., s_4 z_4)``, each factor with its own independent
    smoothing (also where two factors read one field): covariance
    ``C[(i, k, p, q)][:, (i, k, p, q)] + diag(s_1^2, ..., s_4^2)``. Two pieces of work are
    shared: where ``i = k`` the moment is symmetric in the first two factors' scales, where
    ``p = q`` in the last two, so each unordered pair of scales is evaluated once, twice
    weighted where they differ (at J = 2, 12 or 9 of the 16 terms of such a quadruple); and
    the four fields' orthant probability (`smoothed_orthant4()`, most of a moment's cost) is a
    symmetric function of its four (field, scale) factors, computed once per multiset of them
    and stored where ``store`` (at K = M = 4, J = 2: 2,586 for 4,896 moments), else afresh for
    each moment (the same bits: `smoothed_orthant4()` takes the factors in their keys' order).
    With ``store`` the work runs in three passes, so that the last two are vectorised (module
    docstring): the terms enumerated (each term's smoothed covariance, weight and multiset; each
    new multiset's correlations from `_item_correlations()`), the orthant probabilities of the
    multisets of the first smoothed rule in one `plackett_batch()` (any other by
    `smoothed_orthant4()`), the moments in one `smoothed_moments()`; each ``(i, k)``'s terms
    are summed in the same order as without ``store``."""
    P, J = C.shape[0], control.shape[1]
    key = np.empty(4, dtype=np.int64)
    Cs = np.empty((4, 4))
    R = np.empty((4, 4))
    noise = np.empty(4)
    f = np.empty(4, dtype=np.int64)
    items = P * J
    size = (items + 3) * (items + 2) * (items + 1) * items // 24 if store else 1
    cache = np.empty(size)
    known = np.zeros(size, dtype=np.bool_)
    # with store: first the terms (their factors, weights and multisets), then the orthant
    # probabilities of the distinct multisets together (`plackett_batch()`), then the moments
    terms = K * (K + 1) // 2 * (P * (P + 1) // 2) * J**4 if store else 0
    Cb, Nb = np.empty((10, terms)), np.empty((4, terms))
    slots, pair = np.empty(terms, dtype=np.int64), np.empty(terms, dtype=np.int64)
    weights = np.empty(terms)
    count = 0
    X = np.empty((6, size if store else 0))
    batch = np.empty(size if store else 0, dtype=np.int64)
    pending = 0
    Ritem, lam = _item_correlations(C, control) if store else (np.empty((0, 0)), np.empty(0))
    for i in range(K):
        for k in range(i, K):
            s = 0.0
            for p in range(P):
                for q in range(p, P):
                    f[0], f[1], f[2], f[3] = i, k, p, q
                    for x in range(4):
                        for y in range(4):
                            Cs[x, y] = C[f[x], f[y]]
                    cpq = c[p] * c[q] * (1.0 if p == q else 2.0)
                    # each unordered pair of scales once where the two factors read one field
                    for j0 in range(J):
                        noise[0], key[0] = control[1, j0] ** 2, i * J + j0
                        for j1 in range(j0 if i == k else 0, J):
                            noise[1], key[1] = control[1, j1] ** 2, k * J + j1
                            w01 = control[0, j0] * control[0, j1]
                            if i == k and j1 != j0:
                                w01 *= 2.0
                            for j2 in range(J):
                                noise[2], key[2] = control[1, j2] ** 2, p * J + j2
                                for j3 in range(j2 if p == q else 0, J):
                                    noise[3], key[3] = control[1, j3] ** 2, q * J + j3
                                    wt = cpq * w01 * control[0, j2] * control[0, j3]
                                    if p == q and j3 != j2:
                                        wt *= 2.0
                                    if not store:
                                        p4 = smoothed_orthant4(Cs, key, noise, R)
                                        s += wt * smoothed_relu_moment(Cs, noise, p4)
                                        continue
                                    k0, k1, k2, k3 = _sorted4(key[0], key[1], key[2], key[3])
                                    slot = _sorted_index(k0, k1, k2, k3)
                                    if not known[slot]:
                                        known[slot] = True
                                        if _item_setup(Ritem, lam, k0, k1, k2, k3, X, pending):
                                            batch[pending] = slot
                                            pending += 1
                                        else:
                                            cache[slot] = smoothed_orthant4(Cs, key, noise, R)
                                    for x in range(4):
                                        Nb[x, count] = noise[x]
                                    for x in range(10):
                                        Cb[x, count] = Cs[_UPPER_X[x], _UPPER_Y[x]]
                                    pair[count] = i * K + k
                                    slots[count] = slot
                                    weights[count] = wt
                                    count += 1
            if not store:
                E[i, k] += s
    if store:
        _stored_sums(K, X, pending, batch, cache, slots, Cb, Nb, weights, pair, count, E)


@numba.njit(cache=True)
def _stored_sums(K, X, pending, batch, cache, slots, Cb, Nb, weights, pair, count, E):
    """`mixture_sums()`' last two passes with ``store``: the orthant probabilities of the
    multisets in the columns of ``X[:, :pending]`` (`plackett_batch()`, into ``cache`` at the
    slots ``batch``), then the moments of the ``count`` terms (`smoothed_moments()` of their
    columns ``Cb``, ``Nb`` and probabilities ``cache[slots]``), each ``(i, k)``'s terms (``pair
    = i K + k``) summed with their ``weights`` on their own and then added to ``E[i, k]``, in
    the order and so with the bits of the sums without ``store``."""
    probability = np.empty(pending)
    plackett_batch(X, pending, probability)
    for m in range(pending):
        cache[batch[m]] = probability[m]
    P4 = np.empty(count)
    for m in range(count):
        P4[m] = cache[slots[m]]
    moment = np.empty(count)
    smoothed_moments(Cb, Nb, P4, count, moment)
    s = 0.0
    for m in range(count):
        s += weights[m] * moment[m]
        if m + 1 == count or pair[m + 1] != pair[m]:
            E[pair[m] // K, pair[m] % K] += s
            s = 0.0


@numba.njit(cache=True)
def monte_carlo_sums(act, tact, a, b, Z, A, s1, s2):
    """Over the draws ``u = A z`` of the fields (``z`` the rows of ``Z (N, r)``, ``A (P, r)``;
    students first, then the teacher's, codes ``act`` and ``tact``): ``s1_ik += sum G_i G_k
    e^2`` and ``s2_ik += sum (G_i G_k e^2)^2`` with ``G_i = a_i g'(u_i)`` and ``e`` formed draw by
    draw (`gaugedyn.training._online_ode.monte_carlo_noise()`'s sums, compiled)."""
    N = Z.shape[0]
    P, K = A.shape[0], a.shape[0]
    G, u = np.empty(K), np.empty(P)
    for n in range(N):
        fields_at(A, Z[n], u)
        e = 0.0
        for i in range(K):
            gi, gpi = g_pair(act, u[i])
            e += a[i] * gi
            G[i] = gpi * a[i]
        for t in range(P - K):
            e -= b[t] * g(tact, u[K + t])
        e2 = e * e
        for i in range(K):
            for k in range(K):
                x = G[i] * G[k] * e2
                s1[i, k] += x
                s2[i, k] += x * x


@numba.njit(cache=True)
def four_point(act, Csub, z, w, n):
    """``E[g'(x_0) g'(x_1) g(x_2) g(x_3)]`` for ``x ~ N(0, Csub)`` (``Csub (4, 4)``), by the tensor rule on its eigen factor (null axes dropped)."""
    lam, U = np.linalg.eigh(Csub)
    top = max(lam.max(), 0.0)
    keep = np.empty(4, dtype=np.int64)
    r = 0
    for m in range(4):
        if lam[m] > EIGEN_DROP * top:
            keep[r] = m
            r += 1
    F = np.empty((4, r))
    for p in range(4):
        for m in range(r):
            F[p, m] = U[p, keep[m]] * math.sqrt(lam[keep[m]])
    total = 0.0
    x = np.empty(4)
    for index in range(n**r):
        wt = 1.0
        rest = index
        for p in range(4):
            x[p] = 0.0
        for m in range(r):
            j = rest % n
            wt *= w[j]
            rest //= n
            for p in range(4):
                x[p] += F[p, m] * z[j]
        total += wt * g_prime(act, x[0]) * g_prime(act, x[1]) * g(act, x[2]) * g(act, x[3])
    return total


@numba.njit(cache=True)
def noise_expectation(
    act,
    homogeneous,
    method,
    slopes,
    a,
    b,
    C,
    c,
    grids_z,
    grids_w,
    grids_n,
    nodes,
    control,
    table,
    E,
):
    """``E_ik = E[g'(u_i) g'(u_k) e^2]`` (``i <= k``, the upper triangle), as `noise_term()`
    by ``method`` (``NOISE_METHODS``' code: 0 quadrature, 1 orthant moments with the rows
    ``(lo, jump, h0)`` of ``slopes (3, P)``, 2 closed, 3 the scrambled-Sobol rule of the rows of
    ``nodes (N, P)`` on `sobol_factor()` with the mixture ``control (3, J)`` as its control
    variate and the field table ``table`` (`field_values()`), `sobol_noise()` and, by the mixture's family, `mixture_noise()` or
    `relu_mixture_noise()`)."""
    K, P = a.shape[0], C.shape[0]
    for i in range(K):
        for k in range(K):
            E[i, k] = 0.0
    if method == 1:
        piecewise_noise(C, K, c, slopes[0], slopes[1], slopes[2], E)
        return
    if method == 3:
        sobol_noise(act, a, b, sobol_factor(C), nodes, control, table, E)
        if control.shape[1] and control[2, 0] == 0.0:
            mixture_noise(C, c, K, control, E)
        elif control.shape[1]:
            relu_mixture_noise(C, c, K, control, E)
        return
    if act == 2:  # linear: e is Gaussian and g' = 1
        e2 = 0.0
        for p in range(P):
            for q in range(P):
                e2 += c[p] * C[p, q] * c[q]
        for i in range(K):
            for k in range(i, K):
                E[i, k] = e2
        return
    lam, U = np.linalg.eigh(C)
    top = max(lam.max(), 0.0)
    r = 0
    for m in range(P):
        if lam[m] > EIGEN_DROP * top:
            r += 1
    if r <= 4:
        if homogeneous and r == P:
            A = np.zeros((P, P))
            for p in range(P):
                for q in range(P):
                    for m in range(P):
                        A[p, q] += U[p, m] * math.sqrt(lam[m]) * U[q, m]
        else:
            A = np.empty((P, r))
            col = 0
            for m in range(P):
                if lam[m] > EIGEN_DROP * top:
                    for p in range(P):
                        A[p, col] = U[p, m] * math.sqrt(lam[m])
                    col += 1
        n = grids_n[A.shape[1]]
        direct_noise(act, a, b, A, grids_z[A.shape[1]], grids_w[A.shape[1]], n, E)
        return
    n = grids_n[0]
    fields = np.empty(4, dtype=np.int64)
    Csub = np.empty((4, 4))
    for i in range(K):
        for k in range(i, K):
            s = 0.0
            for p in range(P):
                for q in range(p, P):
                    fields[0], fields[1], fields[2], fields[3] = i, k, p, q
                    for x in range(4):
                        for y in range(4):
                            Csub[x, y] = C[fields[x], fields[y]]
                    v = four_point(act, Csub, grids_z[0], grids_w[0], n)
                    s += (1.0 if p == q else 2.0) * c[p] * c[q] * v
            E[i, k] = s


@numba.njit(cache=True)
def state_gram(y, K, M, b, T):
    """``(C, c)``: the fields' Gram matrix and output weights ``c = (a, -b)`` at the state ``y``
    (``OnlineODE``'s layout), ``Q`` read from its upper triangle only (the state's two copies
    may differ)."""
    P = K + M
    C, c = np.empty((P, P)), np.empty(P)
    c[:K] = y[:K]
    c[K:] = -b
    for i in range(K):
        for j in range(i, K):
            C[i, j] = y[K + i * K + j]
            C[j, i] = C[i, j]
        for n in range(M):
            C[i, K + n] = y[K + K * K + i * M + n]
            C[K + n, i] = C[i, K + n]
    C[K:, K:] = T
    return C, c


@numba.njit(cache=True)
def field_coefficients(act, homogeneous, u, C, z, w, basis_t, A, S, dS, p):
    """Field ``p``'s self kernel ``S``, ``S'`` and (smooth ``g``) its Hermite coefficients (row
    ``p`` of ``A``, `hermite_coefficients()`): all of the flow that depends on its variance
    ``C[p, p]`` alone."""
    if homogeneous:
        S[p], dS[p] = 0.5 * u * C[p, p], 0.5 * u
    else:
        S[p], dS[p] = hermite_coefficients(act, C[p, p], z, w, basis_t, A, p)


@numba.njit(cache=True)
def teacher_coefficients(act, homogeneous, u, T, z, w, basis_t):
    """``(A, S, dS)`` of the teacher's ``M`` fields (`field_coefficients()` at the variances
    ``T[n, n]``, rows ``n``): what `quadrature_rhs()` would compute for fields ``K..K+M-1`` at
    every state, the same bits, computed once (half of the flow's coefficients at K = M)."""
    M = T.shape[0]
    A = np.empty((M, 2, basis_t.shape[1] if not homogeneous else 1))
    S, dS = np.zeros(M), np.zeros(M)
    for n in range(M):
        field_coefficients(act, homogeneous, u, T, z, w, basis_t, A, S, dS, n)
    return A, S, dS


@numba.njit(cache=True)
def quadrature_rhs(
    y,
    K,
    M,
    b,
    T,
    eta,
    noise_scale,
    wd,
    lr2,
    sigma2,
    act,
    homogeneous,
    u,
    v,
    z,
    w,
    basis_t,
    grids_z,
    grids_w,
    grids_n,
    method,
    slopes,
    nodes,
    control,
    table,
    teacher,
    out,
    part,
):
    """The online ODE's right-hand side (``OnlineODE``'s layout and options) for activation code
    ``act``; ``u = up^2 + down^2``, ``v = 2 up down`` of a homogeneous ``g``; ``(z, w,
    basis_t)`` the smooth rule's coefficient rule; ``grids_*`` the noise term's one-dimensional
    Gauss-Hermite rules (row 0: the four-point rule, row ``r``: the direct rule of rank ``r``);
    ``method``, ``slopes``, ``nodes``, ``control`` and ``table`` the noise term's
    (`noise_expectation()`); ``teacher`` the teacher's fields' coefficients
    (`teacher_coefficients()`: their variances are ``T``'s, the same at every state); ``part``
    (the size of ``out``, or empty: not asked for) receives the noise part of ``out`` apart
    (`rhs_given()`)."""
    P = K + M
    C, c = state_gram(y, K, M, b, T)
    S, dS = np.empty(P), np.empty(P)
    A = np.empty((P, 2, basis_t.shape[1] if not homogeneous else 1))
    for p in range(K):
        field_coefficients(act, homogeneous, u, C, z, w, basis_t, A, S, dS, p)
    tA, tS, tdS = teacher
    for n in range(M):
        A[K + n] = tA[n]
        S[K + n], dS[K + n] = tS[n], tdS[n]
    rhs_given(
        y,
        K,
        M,
        b,
        T,
        eta,
        noise_scale,
        wd,
        lr2,
        sigma2,
        act,
        homogeneous,
        u,
        v,
        grids_z,
        grids_w,
        grids_n,
        method,
        slopes,
        nodes,
        control,
        table,
        C,
        c,
        A,
        S,
        dS,
        out,
        part,
    )
    return out


@numba.njit(cache=True)
def flow_given(y, K, M, b, T, eta, wd, lr2, act, homogeneous, u, v, C, c, A, S, dS, out):
    """`rhs_given()` without the noise term (and so without label noise), into ``out``."""
    P = K + M
    return rhs_given(
        y,
        K,
        M,
        b,
        T,
        eta,
        0.0,
        wd,
        lr2,
        0.0,
        act,
        homogeneous,
        u,
        v,
        np.zeros((1, 1)),
        np.zeros((1, 1)),
        np.zeros(1, dtype=np.int64),
        0,
        np.zeros((3, 0)),
        np.zeros((0, P)),
        np.zeros((3, 0)),
        np.zeros((0, 1, 4)),
        C,
        c,
        A,
        S,
        dS,
        out,
        np.empty(0),
    )


@numba.njit(cache=True)
def flow_jacobian(y, K, M, b, T, eta, wd, lr2, act, homogeneous, u, v, z, w, basis_t, step, J):
    """``J``: the forward-difference Jacobian of the flow (`quadrature_rhs()` without the noise
    term) at ``y``, column ``j`` with the step ``h = step max(|y_j|, 1e-5)`` (rounded to what
    ``y_j + h`` represents): `gaugedyn.training._online_ode.flow_jacobian()`'s differences of the
    same right-hand side, to the bit. A column moves one field's variance at most, so only that
    field's coefficients (`field_coefficients()`) are recomputed: the Jacobian costs about two
    right-hand sides, not ``1 + K + K^2 + KM``."""
    P, n = K + M, y.shape[0]
    C, c = state_gram(y, K, M, b, T)
    S, dS = np.empty(P), np.empty(P)
    A = np.empty((P, 2, basis_t.shape[1] if not homogeneous else 1))
    for p in range(P):
        field_coefficients(act, homogeneous, u, C, z, w, basis_t, A, S, dS, p)
    S0, dS0, A0 = S.copy(), dS.copy(), A.copy()
    base, col = np.empty(n), np.empty(n)
    yy = y.copy()
    flow_given(yy, K, M, b, T, eta, wd, lr2, act, homogeneous, u, v, C, c, A, S, dS, base)
    for j in range(n):
        keep = yy[j]
        yy[j] = keep + step * max(abs(keep), 1e-5)
        h = yy[j] - keep
        Cj, cj = state_gram(yy, K, M, b, T)
        moved = -1
        for p in range(P):
            if Cj[p, p] != C[p, p]:
                moved = p
                field_coefficients(act, homogeneous, u, Cj, z, w, basis_t, A, S, dS, p)
        flow_given(yy, K, M, b, T, eta, wd, lr2, act, homogeneous, u, v, Cj, cj, A, S, dS, col)
        for i in range(n):
            J[i, j] = (col[i] - base[i]) / h
        if moved >= 0:
            S[moved], dS[moved] = S0[moved], dS0[moved]
            A[moved] = A0[moved]
        yy[j] = keep
    return J


@numba.njit(cache=True)
def rhs_given(
    y,
    K,
    M,
    b,
    T,
    eta,
    noise_scale,
    wd,
    lr2,
    sigma2,
    act,
    homogeneous,
    u,
    v,
    grids_z,
    grids_w,
    grids_n,
    method,
    slopes,
    nodes,
    control,
    table,
    C,
    c,
    A,
    S,
    dS,
    out,
    part,
):
    """`quadrature_rhs()` into ``out`` given the state's Gram matrix ``(C, c)`` (`state_gram()`)
    and each field's coefficients ``(A, S, dS)`` (`field_coefficients()`); where ``part`` has
    the size of ``out``, the noise part of ``out`` (``noise_scale a_i a_k (E_ik + sigma^2
    J_ik)`` in the ``Q`` entries, 0 elsewhere) into ``part`` too, so that ``out`` less ``part``
    is the flow (`flow_given()`) up to the round-off of one addition per entry."""
    P = K + M
    a = y[:K]
    F, Fq1, Fc = np.zeros((K, P)), np.zeros((K, P)), np.zeros((K, P))
    for i in range(K):
        for p in range(P):
            if p != i:
                F[i, p], Fq1[i, p], _, Fc[i, p] = pair(
                    homogeneous, u, v, A, i, p, C[i, i], C[p, p], C[i, p]
                )
    # gradients of the population loss (gaugedyn.theory.gradients): dL/da, G, H
    ga, G, H = np.empty(K), np.empty((K, K)), np.empty((K, M))
    for i in range(K):
        s = a[i] * S[i]
        d = 0.5 * a[i] * a[i] * dS[i]
        for j in range(K):
            if j != i:
                s += a[j] * F[i, j]
                d += a[i] * a[j] * Fq1[i, j]
                G[i, j] = 0.5 * a[i] * a[j] * Fc[i, j]
        for n in range(M):
            s -= b[n] * F[i, K + n]
            d -= a[i] * b[n] * Fq1[i, K + n]
            H[i, n] = -a[i] * b[n] * Fc[i, K + n]
        ga[i] = s
        G[i, i] = d
    Q, R = np.ascontiguousarray(C[:K, :K]), np.ascontiguousarray(C[:K, K:])
    GQ = G @ Q
    HRt = H @ np.ascontiguousarray(R.T)
    dQ = -(2.0 * GQ + 2.0 * GQ.T + HRt + HRt.T)
    dR = -(2.0 * (G @ R) + H @ T)
    da = -ga
    if wd != 0.0 or lr2 != 1.0:
        for i in range(K):
            da[i] = lr2 * (da[i] - wd * a[i])
        dQ -= 2.0 * wd * Q
        dR -= wd * R
    dQ *= eta
    split = part.shape[0] == out.shape[0]
    if split:
        part[:] = 0.0
    if noise_scale != 0.0:
        E = np.zeros((K, K))
        noise_expectation(
            act,
            homogeneous,
            method,
            slopes,
            a,
            b,
            C,
            c,
            grids_z,
            grids_w,
            grids_n,
            nodes,
            control,
            table,
            E,
        )
        for i in range(K):
            for k in range(i, K):
                s = E[i, k]
                if sigma2 != 0.0:
                    s += sigma2 * pair(homogeneous, u, v, A, i, k, C[i, i], C[k, k], C[i, k])[3]
                dQ[i, k] += noise_scale * a[i] * a[k] * s
                if k != i:
                    dQ[k, i] += noise_scale * a[i] * a[k] * s
                if split:
                    part[K + i * K + k] = noise_scale * a[i] * a[k] * s
                    part[K + k * K + i] = noise_scale * a[i] * a[k] * s
    for i in range(K):
        out[i] = eta * da[i]
        for j in range(K):
            out[K + i * K + j] = dQ[i, j]
        for n in range(M):
            out[K + K * K + i * M + n] = eta * dR[i, n]
    return out

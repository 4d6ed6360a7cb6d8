r"""The online ODE's noise term for piecewise-linear activations, exactly: Gaussian orthant moments.

A positively homogeneous activation of degree 1 is piecewise linear,
$g(x) = \mathit{up}\, \mathrm{relu}(x) + \mathit{down}\, \mathrm{relu}(-x) = s\, x + \delta\, x\, \theta(x)$ with
$s = -\mathit{down}$ and $\delta = \mathit{up} + \mathit{down}$ (ReLU $s = 0, \delta = 1$; leaky ReLU
$s = 0.01, \delta = 0.99$; absolute value $s = -1, \delta = 2$; linear $\delta = 0$), and
$g'(x) = s + \delta\, \theta(x)$. With $e = \sum_p c_p g_p(u_p)$ (``c = (a, -b)``, each field with
its own $s_p, \delta_p$) and $\ell = (c_p s_p)_p$,

$$
e = \ell \cdot u + \sum_p c_p \delta_p\, u_p\, \theta(u_p), \qquad
g'(u_i)\, g'(u_k) = \sum_{A \subseteq \{i, k\}} w_A \prod_{s \in A} \theta(u_s)
$$

($w_\emptyset = s_i s_k$, $w_{\{i\}} = \delta_i s_k$, $w_{\{k\}} = s_i \delta_k$,
$w_{\{i, k\}} = \delta_i \delta_k$; for $i = k$, $\theta^2 = \theta$ folds them into
$w_\emptyset = s_i^2$, $w_{\{i\}} = 2 s_i \delta_i + \delta_i^2$). So the noise term
$E_{ik} = \mathbb{E}[g'(u_i)\, g'(u_k)\, e^2]$ is a finite sum of orthant moments

$$
M(\alpha, \beta; S) = \mathbb{E}\Bigl[(\alpha \cdot u)(\beta \cdot u) \prod_{s \in S} \theta(u_s)\Bigr],
\qquad |S| \le 4,
$$

with $\alpha, \beta \in \{\ell, e_p\}$ and $S = A \cup \{p\} \cup \{q\}$:
$E_{ik} = \sum_A w_A [M(\ell, \ell; A) + 2 \sum_p c_p \delta_p M(\ell, e_p; A \cup p)
+ \sum_{p, q} c_p c_q \delta_p \delta_q M(e_p, e_q; A \cup \{p, q\})]$.

**Stein's lemma twice.** For $u \sim N(0, C)$, $\mathbb{E}[u_\alpha f(u)] = \sum_j C_{\alpha j}
\mathbb{E}[\partial_j f]$ and $\partial_s \theta(u_s) = \delta(u_s)$. Applied to
$f = u_\beta \prod_S \theta$, then again to $u_\beta$ under the law given $u_s = 0$ (whose mean is 0),

$$
M(\alpha, \beta; S) = C_{\alpha\beta}\, P_S + \sum_{s \ne t \in S} C_{\alpha s}
\Bigl(C_{\beta t} - \frac{C_{\beta s} C_{st}}{C_{ss}}\Bigr) W_{st},
\qquad
W_{st} = \frac{P(u_r > 0,\ r \in S \setminus \{s, t\} \mid u_s = u_t = 0)}{2 \pi \sqrt{C_{ss} C_{tt} - C_{st}^2}},
$$

with $P_S = P(u_s > 0,\ s \in S)$ (the conditional one has at most two fields: 1, 1/2 or
Sheppard's $1/4 + \arcsin \rho / 2\pi$ at the partial correlation). Orthant probabilities of
standardised fields with correlations $R$: $P_1 = 1/2$, $P_2 = 1/4 + \arcsin R_{12} / 2 \pi$,
$P_3 = 1/8 + (\arcsin R_{12} + \arcsin R_{13} + \arcsin R_{23}) / 4 \pi$, and for four fields, from
$\theta = (1 + \mathrm{sgn}) / 2$ and odd moments vanishing,
$P_4 = (1 + \tfrac{2}{\pi} \sum_{i<j} \arcsin R_{ij} + S_4) / 16$ with $S_4 = \mathbb{E}[\prod
\mathrm{sgn}\, u_i]$. Plackett's identity $\partial S_4 / \partial R_{ij} = 4 \varphi_2(0, 0; R_{ij})
\cdot \tfrac{2}{\pi} \arcsin \rho_{kl \mid ij}$ integrated along $R(t)$ that keeps the two within-pair
correlations of a pairing $\{i, k\}, \{j, l\}$ and scales the four cross ones by $t \in [0, 1]$ (at
$t = 0$ the pairs are independent: $S_4 = \tfrac{4}{\pi^2} \arcsin R_{ik} \arcsin R_{jl}$), with
$t R_{ij} = \sin \psi$:

$$
S_4 = \frac{4}{\pi^2}\Bigl(\arcsin R_{ik} \arcsin R_{jl}
+ \sum_{\text{cross } (i, j)} \int_0^{\arcsin R_{ij}} \arcsin \rho_{kl \mid ij}\bigl(t(\psi)\bigr)\, d\psi\Bigr),
$$

one smooth one-dimensional integral per cross pair (the pairing with the smallest cross
correlations; ``ORTHANT_NODES`` Gauss-Legendre nodes in $v$, $\psi = \psi_{\max}(1 - (1 - v)^2)$,
which absorbs the square-root endpoint of a singular $R$). The two cross pairs $(0, j)$ and
$(1, j)$ that share $j$ run on one path variable, pair $(0, j)$'s: the other's integrand is
weighted by $d\psi_1 / d\psi_0 = R_{1j} \cos\psi_0 / (R_{0j} \sqrt{1 - t^2 R_{1j}^2})$ (where
$R_{0j} = 0$ the roles swap), so that near an alignment of 0 and 1 the two are summed at one
$t$ through the spherical triangle (below). Error: round-off for condition numbers of $R$ up to
about $10^2$, about $10^{-11}$ at $10^4$; near one or two alignments ($1 - \rho$ down to
$10^{-13}$) it follows its expansion in $\sqrt{1 - \rho}$ to $10^{-10}$ (tested).

**Round-off near an alignment.** A student that meets its teacher makes two fields nearly
collinear, $1 - \rho = \epsilon$ with $\sin\vartheta = \sqrt{(1 - \rho)(1 + \rho)}$, and the
term itself is a smooth function of $C$ there (the wedge between the two orthants carries the
factor $u_s$ or $u_t$ of $g$, so it is $O(\vartheta^2)$); the covariance determines $\vartheta$
only to $\mathrm{eps}/\vartheta$, so the best error is $\mathrm{eps}/\sqrt{1 - \rho}$. Summed
one ordered pair at a time, the Stein terms are $O(1)$ each with relative error
$\mathrm{eps}/(1 - \rho)$ and cancel to $O(\vartheta)$; they are summed as follows instead.
*One pair.* With $a_1 = C_{\alpha s} / \sqrt{C_{ss}}$, $A_2 = \mathrm{Cov}(\alpha, t \mid s) /
\sqrt{C_{tt}}$ (likewise $b_1$, $B_2$ for $\beta$; $A_2, B_2 = O(\vartheta)$), writing the fields
in the orthonormal basis of their plane,

$$
\frac{C_{\alpha s} \mathrm{Cov}(\beta, t \mid s) + C_{\alpha t} \mathrm{Cov}(\beta, s \mid t)}
{\sqrt{C_{ss} C_{tt} - C_{st}^2}}
= \sin\vartheta\, (a_1 B_2 + A_2 b_1) + \cos\vartheta\, \Bigl(\sin\vartheta\, a_1 b_1
- \frac{A_2 B_2}{\sin\vartheta}\Bigr),
$$

every term $O(\sin\vartheta)$ and 0 at $\sin\vartheta = 0$ (``_pair_term``). *A field of the rest
nearly collinear with a conditioning one.* In a set of four, with $(x_0, x_1)$ the pair of
largest $|\rho|$ (sign $\varsigma$) and $t$, $l$ the other two, the pairs $(x_0, t)$ and
$(x_1, t)$ have conditional correlations $\rho_{x_1 l \mid x_0 t}$ and $\rho_{x_0 l \mid x_1 t}$
that are ratios of $O(\vartheta)$ residuals; they enter only through
$\sigma = \varsigma \arcsin \rho_{x_1 l \mid x_0 t} + \arcsin \rho_{x_0 l \mid x_1 t}$, which given
$u_t$ is $\pi - A_{x_0} - A_{x_1} = A_l - E$ for the spherical triangle of the unit fields
$x_0$, $\varsigma x_1$, $l$ (angles $A$, excess $E$): with their conditional correlations
$\cos c$ (of $x_0, \varsigma x_1$), $\cos b$ (of $x_0, l$), $\cos a$ (of $\varsigma x_1, l$) and
$\Delta = \sqrt{\det}$ of that $3 \times 3$ correlation matrix,
$A_l = \operatorname{atan2}(\Delta, \cos c - \cos a \cos b)$ and
$E = 2 \operatorname{atan2}(\Delta, 1 + \cos a + \cos b + \cos c)$ (Van Oosterom and Strackee),
both $O(\vartheta)$ without cancellation. So the two pairs add to
$(B_0 + B_1)/8\pi + \sigma \varsigma B_0 / 4\pi^2 + \arcsin\rho_{x_0 l \mid x_1 t}\,
(B_1 - \varsigma B_0) / 4\pi^2$ ($B$ the pair's bracket above; $B_1 - \varsigma B_0 =
O(\vartheta)$), an identity for any choice of the pair (the closest is taken for round-off; a
field with no variance left given $u_t$ falls back to the terms one by one). With this the
error is $\mathrm{eps}/\sqrt{1 - \rho}$ for one alignment per set of fields (tested at
$1 - \rho = 10^{-6}, 10^{-9}, 10^{-12}, 0$); a set holding two aligned pairs, the conditional
probabilities $p_{st}$ of a pair given the other and the four-field orthant probability keep
$\mathrm{eps}/(1 - \rho)$. The compiled right-hand side reads $Q$'s upper triangle only, so a
finite-difference Jacobian sees one consistent symmetric $C$.

Degenerate fields (each a limit of the formulas, which are continuous in $C$ for fields of
positive variance): a field of zero variance (``C_pp <= ZERO_VARIANCE`` times the largest) has
$g = 0$ and $\theta(0) = h_0 = (g'(0) - s) / \delta$ (the compiled $g'(0)$: 0 for ReLU and leaky
ReLU, 1/2 for the absolute value); two fields with $|\rho| \ge 1 -$ ``COLLINEAR`` share their
orthant ($\rho \to 1$) or none ($\rho \to -1$: the product is 0); a conditional partial correlation
of a field with no variance left is 0 (the average of the two sides' limits, which the sum
over $s, t$ makes exact).

**Cost: the smoothed factors in batches (issue 46).** The softplus control's exact term
(`gaugedyn.training._ode_kernels.mixture_sums()`) needs, at K = M = 4, 2,586 four-field
orthant probabilities of smoothed factors and 4,896 moments per right-hand side. One by one
(`orthant4_rule()`, `math.asin`, `math.sin`) they took 1.75 ms and 0.65 ms. Now the
probabilities of the first rule of `SMOOTHED_RULES` (the one a run uses) are computed together
(`plackett_setup()` puts each set's correlations in the pairing's order into a column,
`plackett_batch()` runs the Gauss-Legendre loop with the loop over the columns innermost and
without a branch), and so are the moments (`smoothed_moments()`, the six pairs written out): LLVM
runs both loops on vectors of eight doubles (AVX-512), which needs ``error_model="numpy"``
(numba's default raises on a division by zero, a branch in every loop) and no call to the math
library: `_asin_branchless()` is fdlibm's rational approximation with both of its ranges
computed and one selected (within 2 ulp of ``math.asin``), `_sin_branchless()` the Taylor
series to $x^{21}$, $\cos\psi = \sqrt{1 - \sin^2\psi}$. Fused multiply-adds are allowed in
the two batches (``fastmath={"contract"}``; no reassociation, so every sum keeps its order).
Measured (one process, CPU time, 2026-12-08 01:00-01:20 UTC, load 1.4-3.8 on the shared two
cores; the batch timed alone on 2,586 random sets of the first rule's reach): the
probabilities 1.75 -> 0.35 ms (0.30 with a reciprocal of ``r_0j`` per set and of ``v_j`` per
path point, 0.27 with the fused multiply-adds), the moments 0.65 -> 0.13 ms. Same rule: the
batch is `orthant4_rule()` to 5.6e-17 on those sets, one column alone gives the bits it has
in a batch, so the stored and the fresh control term still agree to the bit (tested).
Tried and dropped: the two path points' divisions shared through the reciprocal of a product
(4 divisions instead of 7: 0.30 -> 0.39 ms, the longer dependency chains cost more than the
divider saved); $\cos\psi$ by its Taylor series instead of a square root (0.30 -> 0.32 ms);
Intel's SVML (the ``intel-cmplr-lib-rt`` wheel's ``libsvml.so`` loads, but this llvmlite
(0.50) is built without SVML, ``has_svml()`` False, so ``numba.config.USING_SVML`` stays
False and a loop of ``math.asin`` stays scalar: 14.4 ns an element against 0.9 for
`_asin_branchless()`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

ORTHANT_NODES = 20
"""Gauss-Legendre nodes of each of the four one-dimensional integrals of a four-field orthant
probability (module docstring; at 20 nodes the error against 2,000 is round-off for condition
numbers up to 1e2, 1e-11 at 1e4)."""
COLLINEAR = 1e-14
r"""Two fields with $1 - |\rho| \le$ ``COLLINEAR`` count as one ($\rho > 0$) or as opposite
($\rho < 0$); closer than this the rounding of $\rho$ itself (about 1e-16, through
$\arccos$: 1e-8) exceeds what merging changes."""
TRIANGLE_FROM = 0.9
r"""Pairs of fields with $|\rho| >$ ``TRIANGLE_FROM`` have their Stein or Plackett terms summed
through the spherical triangle (module docstring); below it the two routes differ by round-off
of order $\mathrm{eps} / (1 - |\rho|) \le 10\, \mathrm{eps}$, and the direct sum is cheaper."""
ZERO_VARIANCE = 1e-30
"""A field whose variance is at or below this fraction of the largest counts as the constant 0."""


def legendre_rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``nodes``-point Gauss-Legendre rule on ``[0, 1]``: ``(V, W)``."""
    v, w = np.polynomial.legendre.leggauss(nodes)
    return 0.5 * (v + 1.0), 0.5 * w


_V, _W = legendre_rule(ORTHANT_NODES)

SMOOTHED_TOLERANCE = 2e-9
"""What `SMOOTHED_RULES` asks of a four-field orthant probability of smoothed factors: within
this of the 200-node rule at the bound of its rule. The softplus control's exact term that
reads them (`gaugedyn.training._ode_kernels.relu_mixture_noise()`) sums thousands of them
with cancellation (late in a noisy run its value is 4e-4 of its terms'), so this is chosen by
what it leaves in that term: at the states of ``bench_noise_qmc.py``'s flow and of a noisy
run (K = M = 4, t = 0 to 1000), at most 2.6e-7 of the term (1e-10 on the flow's states),
against the Sobol rule's own error of 6e-6 to 7.7e-4 there: the noise term as accurate as
with the rules of 1e-12 it replaced, at 7 nodes where those took 8 to 10."""

SMOOTHED_RULES = ((0.25, 7), (0.15, 8), (0.1, 9))
r"""``(lower bound, nodes)``: the Gauss-Legendre nodes of `orthant4_rule()` in
`smoothed_orthant4()` where the smallest eigenvalue of the four fields' correlation matrix is
known to be at least the bound (below the last bound, ``ORTHANT_NODES``). Fields each
carrying independent noise of variance $s_x^2$ (a smoothed ReLU's factor) have
$R \succeq \mathrm{diag}(s_x^2 / (C_{xx} + s_x^2))$, so
$\lambda_{\min}(R) \ge \min_x s_x^2 / (C_{xx} + s_x^2)$ without an eigen decomposition.
Chosen as the fewest nodes within `SMOOTHED_TOLERANCE` of the 200-node rule at random
correlation matrices of that form with $\lambda_{\min}$ at each bound (300 each; measured
1.3e-9, 1.1e-9 and 1.1e-9, where one node fewer gives 2.8e-8, 1.1e-8 and 2.2e-9;
``tests/test_online_orthant.py`` checks the tolerance at each bound). The softplus control's
fields along a run to t = 1000 (K = M = 4) have the bound from 0.29 to 0.8: one rule, 7
nodes, throughout (no switch between rules along the run: the right-hand side stays smooth
in the state), against the general rule's 20."""
_SMOOTHED_V = np.zeros((len(SMOOTHED_RULES) + 1, ORTHANT_NODES))
_SMOOTHED_W = np.zeros((len(SMOOTHED_RULES) + 1, ORTHANT_NODES))
for _m, _nodes in enumerate([n for _, n in SMOOTHED_RULES] + [ORTHANT_NODES]):
    _SMOOTHED_V[_m, :_nodes], _SMOOTHED_W[_m, :_nodes] = legendre_rule(_nodes)
_SMOOTHED_BOUNDS = np.array([b for b, _ in SMOOTHED_RULES])
_SMOOTHED_NODES = np.array([n for _, n in SMOOTHED_RULES] + [ORTHANT_NODES], dtype=np.int64)
_INV_2PI = 1.0 / (2.0 * math.pi)
_INV_8PI = 1.0 / (8.0 * math.pi)
_PAIRINGS = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]], dtype=np.int64)
_PAIR_SLOTS = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]], dtype=np.int64)
_UPPER = np.array([[0, 1, 2, 3], [1, 4, 5, 6], [2, 5, 7, 8], [3, 6, 8, 9]], dtype=np.int64)
"""The row of ``C[x, y]`` (``x <= y``) in `smoothed_moments()`' columns of a 4 x 4 upper triangle."""


@numba.njit(inline="always", cache=True)
def _asin(r):
    return math.asin(min(max(r, -1.0), 1.0))


@numba.njit(cache=True)
def _path_rho(X, i, j, k, l, t):
    """``rho_{kl | ij}`` on Plackett's path: the pairs ``(i, k)``, ``(j, l)`` of ``X`` kept, the
    cross correlations scaled by ``t`` (0 where a field has no variance left)."""
    rik = X[i, k]
    a = t * X[i, j]
    ril, rjk, rkl = t * X[i, l], t * X[j, k], t * X[k, l]
    rjl = X[j, l]
    vj = (1.0 - a) * (1.0 + a)
    cjk, cjl = rjk - a * rik, rjl - a * ril
    vk = (1.0 - rik) * (1.0 + rik) - cjk * cjk / vj
    vl = (1.0 - ril) * (1.0 + ril) - cjl * cjl / vj
    ckl = rkl - rik * ril - cjk * cjl / vj
    den = vk * vl
    return ckl / math.sqrt(den) if den > 0.0 else 0.0


@numba.njit(cache=True)
def _path_triangle(X, b, a, j, l, t, sgn):
    """``(sigma, usable)`` of `_triangle()` for the fields ``b``, ``a``, ``l`` given ``j`` on
    Plackett's path (`_path_rho()`): ``sigma = sgn asin rho_{al | bj} + asin rho_{bl | aj}``."""
    rbj, raj, rlj = t * X[b, j], t * X[a, j], X[l, j]
    c00 = (1.0 - rbj) * (1.0 + rbj)
    c11 = (1.0 - raj) * (1.0 + raj)
    cll = (1.0 - rlj) * (1.0 + rlj)
    tiny = COLLINEAR * COLLINEAR
    if c00 <= tiny or c11 <= tiny or cll <= tiny:
        return 0.0, False
    c01 = sgn * (X[b, a] - rbj * raj)
    c0l = t * X[b, l] - rbj * rlj
    c1l = sgn * (t * X[a, l] - raj * rlj)
    cc = max(min(c01 / math.sqrt(c00 * c11), 1.0), -1.0)
    cb = max(min(c0l / math.sqrt(c00 * cll), 1.0), -1.0)
    ca = max(min(c1l / math.sqrt(c11 * cll), 1.0), -1.0)
    det = max(1.0 - ca * ca - cb * cb - cc * cc + 2.0 * ca * cb * cc, 0.0)
    root = math.sqrt(det)
    return math.atan2(root, cc - ca * cb) - 2.0 * math.atan2(root, 1.0 + ca + cb + cc), True


@numba.njit(cache=True)
def orthant4(R):
    """``P(x > 0)`` for four standardised fields of correlations ``R (4, 4)`` (module docstring:
    the pairing with the smallest cross correlations, four Plackett integrals on two path
    variables, the pairs sharing a field summed through the spherical triangle when the first
    pair's ``|R_01| > TRIANGLE_FROM``), by the ``ORTHANT_NODES``-node rule."""
    return orthant4_rule(R, _V, _W)


@numba.njit(inline="always", cache=True)
def _pairing(R):
    """The row of ``_PAIRINGS`` whose four cross correlations of ``R (4, 4)`` have the smallest
    largest absolute value (the first such row): the pairing `orthant4_rule()` and
    `plackett_setup()` integrate along."""
    best, pick = 2.0, 0
    for m in range(3):
        a, b, c, d = _PAIRINGS[m]
        top = max(max(abs(R[a, c]), abs(R[a, d])), max(abs(R[b, c]), abs(R[b, d])))
        if top < best:
            best, pick = top, m
    return pick


@numba.njit(cache=True)
def orthant4_rule(R, V, W):
    """`orthant4()` by the Gauss-Legendre rule of nodes ``V`` and weights ``W`` on ``[0, 1]``
    (`legendre_rule()`)."""
    o = _PAIRINGS[_pairing(R)]
    X = np.empty((4, 4))
    for x in range(4):
        for y in range(4):
            X[x, y] = R[o[x], o[y]]
    s4 = _asin(X[0, 1]) * _asin(X[2, 3])
    sgn = 1.0 if X[0, 1] >= 0.0 else -1.0
    close = abs(X[0, 1]) > TRIANGLE_FROM
    for j in range(2, 4):
        l = 5 - j
        # the cross pairs (0, j) and (1, j) on one path variable, the carrier b's (field 0's
        # unless R_0j = 0: a fixed choice, so the rule does not switch between nearby inputs),
        # summed through the spherical triangle (module docstring)
        b = 0 if X[0, j] != 0.0 else 1
        a = 1 - b
        rb, ra = X[b, j], X[a, j]
        if rb == 0.0:
            continue
        top = _asin(rb)
        acc = 0.0
        for n in range(V.shape[0]):
            u = 1.0 - V[n]
            psi = top * (1.0 - u * u)
            t = math.sin(psi) / rb
            asin_b = _asin(_path_rho(X, b, j, a, l, t))
            if ra == 0.0:
                acc += W[n] * 2.0 * u * asin_b
                continue
            ratio = ra * math.cos(psi) / (rb * math.sqrt((1.0 - t * ra) * (1.0 + t * ra)))
            asin_a = _asin(_path_rho(X, a, j, b, l, t))
            sigma, usable = 0.0, False
            if close:
                sigma, usable = _path_triangle(X, b, a, j, l, t, sgn)
            if usable:
                acc += W[n] * 2.0 * u * (sgn * sigma + (ratio - sgn) * asin_a)
            else:
                acc += W[n] * 2.0 * u * (asin_b + ratio * asin_a)
        s4 += top * acc
    total = 0.0
    for x in range(4):
        for y in range(x + 1, 4):
            total += _asin(R[x, y])
    return (1.0 + 2.0 / math.pi * total + 4.0 / (math.pi * math.pi) * s4) / 16.0


@numba.njit(cache=True)
def _corr(C, p, q):
    return C[p, q] / math.sqrt(C[p, p] * C[q, q])


@numba.njit(cache=True)
def orthant(C, S, n):
    """``P(u_s > 0 for s in S[:n])``, ``n <= 4`` fields of positive variance, ``u ~ N(0, C)``."""
    if n == 0:
        return 1.0
    if n == 1:
        return 0.5
    if n == 2:
        return 0.25 + _asin(_corr(C, S[0], S[1])) * _INV_2PI
    if n == 3:
        return 0.125 + (
            _asin(_corr(C, S[0], S[1])) + _asin(_corr(C, S[0], S[2])) + _asin(_corr(C, S[1], S[2]))
        ) / (4.0 * math.pi)
    R = np.empty((4, 4))
    for x in range(4):
        for y in range(4):
            R[x, y] = 1.0 if x == y else _corr(C, S[x], S[y])
    return orthant4(R)


@numba.njit(cache=True)
def _pair_weight(C, S, n, x, y):
    """``p_st / 2 pi`` of fields ``s = S[x]``, ``t = S[y]`` of the set ``S[:n]``: the conditional
    orthant probability of the rest given ``u_s = u_t = 0`` (module docstring); 0 where the two
    are collinear (the pair's term vanishes there)."""
    s, t = S[x], S[y]
    det = C[s, s] * C[t, t] - C[s, t] * C[s, t]
    if det <= 0.0:
        return 0.0
    p = 1.0
    if n == 3:
        p = 0.5
    elif n == 4:
        rest = np.empty(2, dtype=np.int64)
        m = 0
        for z in range(4):
            if z != x and z != y:
                rest[m] = S[z]
                m += 1
        k, l = rest[0], rest[1]
        # the covariance of (k, l) given u_s = u_t = 0, conditioning one field at a time
        vt = C[t, t] - C[s, t] * C[s, t] / C[s, s]
        ctk = C[t, k] - C[s, t] * C[s, k] / C[s, s]
        ctl = C[t, l] - C[s, t] * C[s, l] / C[s, s]
        vk = C[k, k] - C[s, k] * C[s, k] / C[s, s] - ctk * ctk / vt
        vl = C[l, l] - C[s, l] * C[s, l] / C[s, s] - ctl * ctl / vt
        ckl = C[k, l] - C[s, k] * C[s, l] / C[s, s] - ctk * ctl / vt
        tiny = COLLINEAR * COLLINEAR
        rho = 0.0
        if vk > tiny * C[k, k] and vl > tiny * C[l, l]:
            rho = ckl / math.sqrt(vk * vl)
        p = 0.25 + _asin(rho) * _INV_2PI
    return p * _INV_2PI


@numba.njit(inline="always", cache=True)
def _pair_term(C, V, alpha, beta, s, t):
    r"""``(C_as Cov(b, t | s) + C_at Cov(b, s | t)) / sqrt(C_ss C_tt - C_st^2)`` without its
    cancellation (module docstring): ``sin(th) (a_1 B_2 + A_2 b_1) + cos(th) (sin(th) a_1 b_1 -
    A_2 B_2 / sin(th))``, every term ``O(sin th)``; 0 at ``sin th = 0``."""
    css, ctt, cst = C[s, s], C[t, t], C[s, t]
    sig = math.sqrt(css * ctt)
    det = css * ctt - cst * cst
    if det <= 0.0:
        return 0.0
    sn = math.sqrt(det) / sig
    cs = cst / sig
    rs, rt = math.sqrt(css), math.sqrt(ctt)
    a1, b1 = V[alpha, s] / rs, V[beta, s] / rs
    a2 = (V[alpha, t] - V[alpha, s] * cst / css) / rt
    b2 = (V[beta, t] - V[beta, s] * cst / css) / rt
    return sn * (a1 * b2 + a2 * b1) + cs * (sn * a1 * b1 - a2 * b2 / sn)


@numba.njit(cache=True)
def _set_index(S, n):
    """The combinatorial number of the sorted set ``S[:n]`` among the sets of its size."""
    index = 0
    for m in range(n):
        x = S[m]
        b = 1
        for r in range(m + 1):
            b = b * (x - r) // (r + 1)
        index += b
    return index


@numba.njit(cache=True)
def _triangle(C, S, x0, x1, t, l, tiny):
    r"""``(sigma, usable)``: ``sigma = sgn asin rho_{x1 l | x0 t} + asin rho_{x0 l | x1 t}`` for the
    fields ``S[x0]``, ``S[x1]``, ``S[l]`` given ``S[t]`` (``sgn`` the sign of their correlation),
    as the spherical triangle's ``A_L - E`` (module docstring); ``usable`` false where a field
    has no variance left given ``S[t]`` (the terms are then summed one by one)."""
    f0, f1, ft, fl = S[x0], S[x1], S[t], S[l]
    inv = 1.0 / C[ft, ft]
    c00 = C[f0, f0] - C[f0, ft] * C[f0, ft] * inv
    c11 = C[f1, f1] - C[f1, ft] * C[f1, ft] * inv
    cll = C[fl, fl] - C[fl, ft] * C[fl, ft] * inv
    if c00 <= tiny * C[f0, f0] or c11 <= tiny * C[f1, f1] or cll <= tiny * C[fl, fl]:
        return 0.0, False
    c01 = C[f0, f1] - C[f0, ft] * C[f1, ft] * inv
    c0l = C[f0, fl] - C[f0, ft] * C[fl, ft] * inv
    c1l = C[f1, fl] - C[f1, ft] * C[fl, ft] * inv
    sgn = 1.0 if c01 >= 0.0 else -1.0
    cc = min(sgn * c01 / math.sqrt(c00 * c11), 1.0)
    cb = max(min(c0l / math.sqrt(c00 * cll), 1.0), -1.0)
    ca = max(min(sgn * c1l / math.sqrt(c11 * cll), 1.0), -1.0)
    det = max(1.0 - ca * ca - cb * cb - cc * cc + 2.0 * ca * cb * cc, 0.0)
    root = math.sqrt(det)
    return math.atan2(root, cc - ca * cb) - 2.0 * math.atan2(root, 1.0 + ca + cb + cc), True


@numba.njit(cache=True)
def _set_data(C, S, n, cache, known):
    """``(P_S, p_st / 2 pi for the six slot pairs)`` of the sorted set ``S[:n]``, and for four
    fields the closest pair's slot, its sign and the two triangle sums ``sigma / 4 pi^2`` (0 and
    the flag -1 where unusable; module docstring), from ``cache[n]`` or computed once and stored
    there."""
    index = _set_index(S, n)
    if not known[n, index]:
        cache[n, index, 0] = orthant(C, S, n)
        for slot in range(6):
            x, y = _PAIR_SLOTS[slot]
            cache[n, index, 1 + slot] = _pair_weight(C, S, n, x, y) if y < n else 0.0
        if n == 4:
            best, pick = -1.0, 0
            for slot in range(6):
                x, y = _PAIR_SLOTS[slot]
                r = abs(_corr(C, S[x], S[y]))
                if r > best:
                    best, pick = r, slot
            x0, x1 = _PAIR_SLOTS[pick]
            y0, y1 = _PAIR_SLOTS[5 - pick]
            cache[n, index, 7] = pick
            cache[n, index, 8] = 1.0 if C[S[x0], S[x1]] >= 0.0 else -1.0
            for m in range(2):
                t, l = (y0, y1) if m == 0 else (y1, y0)
                sigma, usable = 0.0, False
                if best > TRIANGLE_FROM:
                    sigma, usable = _triangle(C, S, x0, x1, t, l, COLLINEAR * COLLINEAR)
                cache[n, index, 9 + m] = sigma * _INV_2PI * _INV_2PI if usable else -1.0
        known[n, index] = True
    return index


@numba.njit(cache=True)
def _reduce(fields, count, zero, h0, link, S):
    """The distinct fields of ``fields[:count]`` in ``S`` (sorted) and the factor of the
    indicators dropped: a zero-variance field contributes ``h0``, a field collinear with one
    kept shares its indicator, an opposite one makes the product 0. Returns ``(n, factor)``."""
    n = 0
    factor = 1.0
    for m in range(count):
        f = fields[m]
        if zero[f]:
            factor *= h0[f]
            continue
        keep = True
        for x in range(n):
            s = S[x]
            if s == f or link[s, f] > 0:
                keep = False
                break
            if link[s, f] < 0:
                return 0, 0.0
        if keep:
            S[n] = f
            n += 1
    for x in range(1, n):
        v = S[x]
        y = x - 1
        while y >= 0 and S[y] > v:
            S[y + 1] = S[y]
            y -= 1
        S[y + 1] = v
    return n, factor


@numba.njit(cache=True)
def _moment(C, V, G, alpha, beta, fields, count, zero, h0, link, S, cache, known):
    """``M(alpha, beta; fields)``: ``V[alpha] = C alpha`` (rows), ``G[alpha, beta] =
    alpha^T C beta`` (module docstring)."""
    n, factor = _reduce(fields, count, zero, h0, link, S)
    if factor == 0.0:
        return 0.0
    index = _set_data(C, S, n, cache, known)
    total = G[alpha, beta] * cache[n, index, 0]
    if n == 4:
        # the closest pair (x0, x1) with the pair of the other two, then for each other field
        # t the pairs (x0, t) and (x1, t) together (module docstring)
        pick = int(cache[n, index, 7])
        sgn = cache[n, index, 8]
        for slot in (pick, 5 - pick):
            w = cache[n, index, 1 + slot]
            if w != 0.0:
                x, y = _PAIR_SLOTS[slot]
                total += w * _pair_term(C, V, alpha, beta, S[x], S[y])
        x0, x1 = _PAIR_SLOTS[pick]
        y0, y1 = _PAIR_SLOTS[5 - pick]
        for m in range(2):
            t = y0 if m == 0 else y1
            w0 = cache[n, index, 1 + _slot_of(x0, t)]
            w1 = cache[n, index, 1 + _slot_of(x1, t)]
            b0 = _pair_term(C, V, alpha, beta, S[x0], S[t]) if w0 != 0.0 else 0.0
            b1 = _pair_term(C, V, alpha, beta, S[x1], S[t]) if w1 != 0.0 else 0.0
            sigma = cache[n, index, 9 + m]
            if sigma == -1.0 or w0 == 0.0 or w1 == 0.0:
                total += w0 * b0 + w1 * b1
            else:
                total += (b0 + b1) * _INV_8PI + sigma * sgn * b0 + (w1 - _INV_8PI) * (b1 - sgn * b0)
        return factor * total
    for slot in range(6):
        x, y = _PAIR_SLOTS[slot]
        if y >= n:
            continue
        w = cache[n, index, 1 + slot]
        if w != 0.0:
            total += w * _pair_term(C, V, alpha, beta, S[x], S[y])
    return factor * total


@numba.njit(inline="always", cache=True)
def _slot_of(x, y):
    """The slot of the pair of positions ``x != y`` (``_PAIR_SLOTS``' order)."""
    a, b = min(x, y), max(x, y)
    return a * (7 - a) // 2 + b - a - 1


@numba.njit(cache=True)
def _theta_e2(C, V, G, L, linear, cj, fields, na, zero, h0, link, S, cache, known):
    """``E[prod_{s in fields[:na]} theta(u_s) e^2]`` with ``e = ell . u + sum_p cj_p u_p
    theta(u_p)`` (``ell`` the row ``L`` of ``V``; module docstring)."""
    P = C.shape[0]
    s = 0.0
    if linear:
        s += _moment(C, V, G, L, L, fields, na, zero, h0, link, S, cache, known)
        for p in range(P):
            if cj[p] == 0.0:
                continue
            fields[na] = p
            s += (
                2.0
                * cj[p]
                * _moment(C, V, G, L, p, fields, na + 1, zero, h0, link, S, cache, known)
            )
    for p in range(P):
        if cj[p] == 0.0:
            continue
        fields[na] = p
        s += cj[p] * cj[p] * _moment(C, V, G, p, p, fields, na + 1, zero, h0, link, S, cache, known)
        for q in range(p + 1, P):
            if cj[q] == 0.0:
                continue
            fields[na + 1] = q
            s += (
                2.0
                * cj[p]
                * cj[q]
                * _moment(C, V, G, p, q, fields, na + 2, zero, h0, link, S, cache, known)
            )
    return s


@numba.njit(cache=True)
def _classify(C):
    """The fields of ``C (P, P)`` of zero variance (at most ``ZERO_VARIANCE`` times the largest)
    and ``link[p, q]``: 1 where two fields of positive variance are collinear, -1 where they are
    opposite (``1 - |rho| <= COLLINEAR``), else 0."""
    P = C.shape[0]
    top = 0.0
    for p in range(P):
        top = max(top, C[p, p])
    zero = np.zeros(P, dtype=np.bool_)
    for p in range(P):
        zero[p] = C[p, p] <= ZERO_VARIANCE * top
    link = np.zeros((P, P), dtype=np.int64)
    for p in range(P):
        for q in range(P):
            if p != q and not zero[p] and not zero[q]:
                r = _corr(C, p, q)
                if r >= 1.0 - COLLINEAR:
                    link[p, q] = 1
                elif r <= -1.0 + COLLINEAR:
                    link[p, q] = -1
    return zero, link


@numba.njit(cache=True)
def piecewise_noise(C, K, c, lo, jump, h0, E):
    """``E_ik = E[g'(u_i) g'(u_k) e^2]`` (``i <= k``, the upper triangle of ``E (K, K)``) for
    ``u ~ N(0, C)`` (``C (P, P)``, students first), ``e = sum_p c_p g_p(u_p)`` and the
    piecewise-linear ``g_p(x) = lo_p x + jump_p x theta(x)`` with ``theta(0) = h0_p`` on a
    field of zero variance (module docstring)."""
    P = C.shape[0]
    zero, link = _classify(C)
    ell = np.empty(P)
    for p in range(P):
        ell[p] = c[p] * lo[p] if not zero[p] else 0.0
    # rows 0..P-1: C e_p; row P: C ell
    V = np.empty((P + 1, P))
    G = np.empty((P + 1, P + 1))
    for p in range(P):
        for q in range(P):
            V[p, q] = C[p, q]
            G[p, q] = C[p, q]
    L = P
    lcl = 0.0
    for q in range(P):
        s = 0.0
        for p in range(P):
            s += ell[p] * C[p, q]
        V[L, q] = s
        G[L, q] = s
        G[q, L] = s
        lcl += s * ell[q]
    G[L, L] = lcl
    linear = lcl != 0.0
    width, b = 1, 1
    for r in range(4):
        b = b * (P - r) // (r + 1)
        width = max(width, b)
    cache = np.empty((5, width, 11))
    known = np.zeros((5, width), dtype=np.bool_)
    fields = np.empty(4, dtype=np.int64)
    S = np.empty(4, dtype=np.int64)
    cj = np.empty(P)
    for p in range(P):
        cj[p] = c[p] * jump[p] if not zero[p] else 0.0
    # T(A) = E[prod_A theta e^2] for A = {}, {i}, {i, k}: E_ik = sum_A w_A T(A)
    t0 = 0.0
    if linear:
        t0 = _theta_e2(C, V, G, L, linear, cj, fields, 0, zero, h0, link, S, cache, known)
    t1 = np.zeros(K)
    for i in range(K):
        fields[0] = i
        t1[i] = _theta_e2(C, V, G, L, linear, cj, fields, 1, zero, h0, link, S, cache, known)
    for i in range(K):
        for k in range(i, K):
            if i == k and not zero[i]:  # theta^2 = theta (not at a field of zero variance)
                E[i, i] = lo[i] * lo[i] * t0 + (2.0 * lo[i] * jump[i] + jump[i] ** 2) * t1[i]
                continue
            fields[0], fields[1] = i, k
            t2 = _theta_e2(C, V, G, L, linear, cj, fields, 2, zero, h0, link, S, cache, known)
            E[i, k] = (
                lo[i] * lo[k] * t0
                + jump[i] * lo[k] * t1[i]
                + lo[i] * jump[k] * t1[k]
                + jump[i] * jump[k] * t2
            )


@numba.njit(cache=True)
def relu_moment(C, i, j, p, q):
    """``E[theta(u_i) theta(u_j) relu(u_p) relu(u_q)] = M(e_p, e_q; {i, j, p, q})`` over
    ``u ~ N(0, C)`` (module docstring; ReLU's ``theta(0) = 0`` at a field of zero variance):
    the distinct fields of ``(i, j, p, q)``, a collinear one sharing its orthant, an opposite
    one emptying it."""
    given = np.array([i, j, p, q], dtype=np.int64)
    F = np.empty(4, dtype=np.int64)
    n = 0
    for f in given:
        seen = False
        for x in range(n):
            if F[x] == f:
                seen = True
        if not seen:
            F[n] = f
            n += 1
    Cs = np.empty((n, n))
    for x in range(n):
        for y in range(n):
            Cs[x, y] = C[F[x], F[y]]
    zero, link = _classify(Cs)
    fields = np.empty(4, dtype=np.int64)
    for m in range(4):
        for x in range(n):
            if F[x] == given[m]:
                fields[m] = x
    S = np.empty(4, dtype=np.int64)
    cache = np.empty((5, 6, 11))
    known = np.zeros((5, 6), dtype=np.bool_)
    return _moment(
        Cs, Cs, Cs, fields[2], fields[3], fields, 4, zero, np.zeros(n), link, S, cache, known
    )


@numba.njit(inline="always", cache=True)
def _rank(key, x):
    """The position of ``key[x]`` among the four keys sorted, ties in the order of ``x``."""
    r = 0
    for y in range(4):
        if key[y] < key[x] or (key[y] == key[x] and y < x):
            r += 1
    return r


@numba.njit(cache=True)
def smoothed_correlations(C, key, noise, R):
    r"""``R (4, 4)``: the correlations of ``v ~ N(0, C + diag(noise))`` with the factors in the
    order of their keys (`smoothed_orthant4()`), and the index of the smallest rule of
    `SMOOTHED_RULES` (``len(SMOOTHED_RULES)``: the general ``ORTHANT_NODES``) for the bound
    $\lambda_{\min}(R) \ge \min_x s_x^2 / (C_{xx} + s_x^2)$."""
    lam = 1.0
    for x in range(4):  # factor x at its key's rank; the variances on R's diagonal for now
        rx = _rank(key, x)
        R[rx, rx] = C[x, x] + noise[x]
        lam = min(lam, noise[x] / R[rx, rx])
    for x in range(4):
        rx = _rank(key, x)
        for y in range(x + 1, 4):
            ry = _rank(key, y)
            r = C[x, y] / math.sqrt(R[rx, rx] * R[ry, ry])
            R[rx, ry] = r
            R[ry, rx] = r
    for x in range(4):
        R[x, x] = 1.0
    return smoothed_rule(lam)


@numba.njit(inline="always", cache=True)
def smoothed_rule(lam):
    """The index of the smallest rule of `SMOOTHED_RULES` whose bound is at most ``lam`` (a
    lower bound of the smallest eigenvalue; ``len(SMOOTHED_RULES)``: the general
    ``ORTHANT_NODES``)."""
    m = 0
    while m < _SMOOTHED_BOUNDS.shape[0] and lam < _SMOOTHED_BOUNDS[m]:
        m += 1
    return m


@numba.njit(cache=True)
def smoothed_orthant4(C, key, noise, R):
    r"""``P(v > 0)`` for ``v ~ N(0, C + diag(noise))`` (``C (4, 4)`` positive semi-definite,
    every ``noise_x > 0``: each factor smoothed by its own independent noise, a smoothed ReLU's
    factor; ``R (4, 4)`` a workspace), by `orthant4_rule()` with the smallest rule of
    `SMOOTHED_RULES` for the bound $\lambda_{\min}(R) \ge \min_x s_x^2 / (C_{xx} + s_x^2)$
    (`smoothed_correlations()`); the first rule by `plackett_batch()` (one column), the others
    and the general branches by `orthant4_rule()`. ``key (4,)`` names each factor (equal keys:
    the same field with the same noise); the factors are taken in the order of their keys, so
    that any order of the same four factors gives the same bits (a caller may store the value
    by the sorted keys)."""
    m = smoothed_correlations(C, key, noise, R)
    if m == 0:
        X = np.empty((6, 1))
        if plackett_setup(R, X, 0):
            out = np.empty(1)
            plackett_batch(X, 1, out)
            return out[0]
    n = _SMOOTHED_NODES[m]
    return orthant4_rule(R, _SMOOTHED_V[m, :n], _SMOOTHED_W[m, :n])


_PIO2_HI = 1.57079632679489655800e00
_PIO2_LO = 6.12323399573676603587e-17
_PS0, _PS1, _PS2 = (
    1.66666666666666657415e-01,
    -3.25565818622400915405e-01,
    2.01212532134862925881e-01,
)
_PS3, _PS4, _PS5 = (
    -4.00555345006794114027e-02,
    7.91534994289814532176e-04,
    3.47933107596021167570e-05,
)
_QS1, _QS2 = -2.40339491173441421878e00, 2.02094576023350569471e00
_QS3, _QS4 = -6.88283971605453293030e-01, 7.70381505559019352791e-02
_SIN_C = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 11))
r"""The Taylor coefficients of $\sin x$ from $x^3$ to $x^{21}$ (`_sin_branchless()`); the
remainder on $|x| \le \pi/2$ is below $(\pi/2)^{23} / 23! \approx 1.3 \times 10^{-18}$."""
_S3, _S5, _S7, _S9, _S11, _S13, _S15, _S17, _S19, _S21 = _SIN_C


@numba.njit(inline="always", error_model="numpy", cache=True)
def _asin_branchless(x):
    r"""``asin(min(max(x, -1), 1))`` without a branch or a call, so that a loop of it vectorises
    (`plackett_batch()`): fdlibm's rational approximation of $(\arcsin x - x) / x^3$ in
    $z = x^2$ for $|x| < 1/2$ and in $z = (1 - |x|) / 2$ with $\arcsin |x| = \pi/2 - 2 \arcsin
    \sqrt z$ above (its coefficients, fdlibm ``e_asin.c``, Sun Microsystems 1993; both branches
    computed and one selected, the upper one without fdlibm's split of $\sqrt z$ in the range
    0.5 to 0.975): within 2 ulp of ``math.asin`` on a grid of 2e6 points of $[-1, 1]$ (tested)."""
    x = min(max(x, -1.0), 1.0)
    ax = abs(x)
    big = ax >= 0.5
    z = 0.5 * (1.0 - ax) if big else x * x
    p = z * (_PS0 + z * (_PS1 + z * (_PS2 + z * (_PS3 + z * (_PS4 + z * _PS5)))))
    q = 1.0 + z * (_QS1 + z * (_QS2 + z * (_QS3 + z * _QS4)))
    r = p / q
    s = math.sqrt(z)
    y = _PIO2_HI - (2.0 * (s + s * r) - _PIO2_LO) if big else ax + ax * r
    return y if x >= 0.0 else -y


@numba.njit(inline="always", error_model="numpy", cache=True)
def _sin_branchless(x):
    """``sin(x)`` for ``|x| <= pi / 2`` by its Taylor series (`_SIN_C`, Horner's rule in ``x^2``), without a branch or a call (`plackett_batch()`)."""
    z = x * x
    p = _S15 + z * (_S17 + z * (_S19 + z * _S21))
    p = _S7 + z * (_S9 + z * (_S11 + z * (_S13 + z * p)))
    return x + x * z * (_S3 + z * (_S5 + z * p))


@numba.njit(cache=True)
def plackett_setup(R, X, col):
    """Column ``col`` of ``X (6, n)``: the correlations ``R (4, 4)`` of `orthant4_rule()`'s
    pairing in its order (rows ``01, 02, 03, 12, 13, 23``), for `plackett_batch()`. False where
    that rule's general branches are needed (a cross correlation of the first pair exactly 0,
    or the first pair closer than ``TRIANGLE_FROM``): the caller then uses `orthant4_rule()`."""
    o = _PAIRINGS[_pairing(R)]
    for slot in range(6):
        x, y = _PAIR_SLOTS[slot]
        X[slot, col] = R[o[x], o[y]]
    if abs(X[0, col]) > TRIANGLE_FROM:
        return False
    return X[1, col] != 0.0 and X[2, col] != 0.0 and X[3, col] != 0.0 and X[4, col] != 0.0


@numba.njit(inline="always", error_model="numpy", cache=True)
def _path_rho_fast(rik, rij, ril, rjk, rkl, rjl, t):
    """`_path_rho()` of the correlations it reads, branch-free (0 where a field has no variance
    left)."""
    a = t * rij
    ril, rjk, rkl = t * ril, t * rjk, t * rkl
    inv = 1.0 / ((1.0 - a) * (1.0 + a))
    cjk, cjl = rjk - a * rik, rjl - a * ril
    vk = (1.0 - rik) * (1.0 + rik) - cjk * cjk * inv
    vl = (1.0 - ril) * (1.0 + ril) - cjl * cjl * inv
    ckl = rkl - rik * ril - cjk * cjl * inv
    den = vk * vl
    r = ckl / math.sqrt(max(den, 1e-300))
    return r if den > 0.0 else 0.0


@numba.njit(error_model="numpy", fastmath={"contract"}, cache=True)
def plackett_batch(X, n, out):
    r"""``out[:n]``: `orthant4_rule()` by the first rule of `SMOOTHED_RULES` for the columns of
    ``X`` (`plackett_setup()`), each a four-field orthant probability, the loops over the
    columns innermost and branch-free so that LLVM runs them on vectors of eight (AVX-512;
    `_asin_branchless()`, `_sin_branchless()`, $\cos\psi = \sqrt{1 - \sin^2\psi}$, which
    loses nothing for $|\psi| \le \arcsin(3/4)$, the first rule's reach): the same rule
    as `orthant4_rule()`, to round-off. One column gives the same bits as that column in a batch."""
    V = _SMOOTHED_V[0, : _SMOOTHED_NODES[0]]
    W = _SMOOTHED_W[0, : _SMOOTHED_NODES[0]]
    s4 = np.empty(n)
    total = np.empty(n)
    acc = np.empty(n)
    top = np.empty(n)
    inv_rb = np.empty(n)
    for m in range(n):
        a01, a23 = _asin_branchless(X[0, m]), _asin_branchless(X[5, m])
        s4[m] = a01 * a23
        total[m] = (
            a01
            + _asin_branchless(X[1, m])
            + _asin_branchless(X[2, m])
            + _asin_branchless(X[3, m])
            + _asin_branchless(X[4, m])
            + a23
        )
    for j in range(2, 4):
        # rows of r_0j, r_0l, r_1j, r_1l (l = 5 - j)
        r0j, r0l = (1, 2) if j == 2 else (2, 1)
        r1j, r1l = (3, 4) if j == 2 else (4, 3)
        for m in range(n):
            top[m] = _asin_branchless(X[r0j, m])
            inv_rb[m] = 1.0 / X[r0j, m]
            acc[m] = 0.0
        for node in range(V.shape[0]):
            u = 1.0 - V[node]
            f = 1.0 - u * u
            wu = W[node] * 2.0 * u
            for m in range(n):
                x01, x23 = X[0, m], X[5, m]
                rb, rl, ra, ral = X[r0j, m], X[r0l, m], X[r1j, m], X[r1l, m]
                sn = _sin_branchless(top[m] * f)
                t = sn * inv_rb[m]
                asin_b = _asin_branchless(_path_rho_fast(x01, rb, rl, ra, ral, x23, t))
                cs = math.sqrt((1.0 - sn) * (1.0 + sn))
                ratio = ra * cs * inv_rb[m] / math.sqrt((1.0 - t * ra) * (1.0 + t * ra))
                asin_a = _asin_branchless(_path_rho_fast(x01, ra, ral, rb, rl, x23, t))
                acc[m] += wu * (asin_b + ratio * asin_a)
        for m in range(n):
            s4[m] += top[m] * acc[m]
    for m in range(n):
        out[m] = (1.0 + 2.0 / math.pi * total[m] + 4.0 / (math.pi * math.pi) * s4[m]) / 16.0


@numba.njit(cache=True)
def smoothed_relu_moment(C, noise, p4):
    r"""``E[theta(v_0) theta(v_1) relu(v_2) relu(v_3)]`` for ``v ~ N(0, C + diag(noise))``
    (`smoothed_orthant4()`'s fields, ``p4`` their orthant probability). The fields' covariance
    is positive definite, so the module docstring's Stein sum needs none of its alignment
    cases: $M = C_{23} P_4 + \sum_{s < t} p_{st} / 2\pi \cdot (C_{2s} \mathrm{Cov}(v_3, v_t
    | v_s) + C_{2t} \mathrm{Cov}(v_3, v_s | v_t)) / \sqrt{C_{ss} C_{tt} - C_{st}^2}$. The same
    value as `relu_moment()` of the smoothed covariance to within `SMOOTHED_RULES`' error
    (`SMOOTHED_TOLERANCE` on the orthant probability). One column of `smoothed_moments()`
    (the same bits)."""
    Cb = np.empty((10, 1))
    Nb = np.empty((4, 1))
    for x in range(4):
        Nb[x, 0] = noise[x]
        for y in range(x, 4):
            Cb[_UPPER[x, y], 0] = C[x, y]
    p = np.empty(1)
    p[0] = p4
    out = np.empty(1)
    smoothed_moments(Cb, Nb, p, 1, out)
    return out[0]


@numba.njit(inline="always", error_model="numpy", cache=True)
def _moment_pair(dss, dtt, dst, dks, dkt, dls, dlt, dkk, dll, dkl, d2s, d2t, d3s, d3t):
    """The pair ``(s, t)``'s term of `smoothed_relu_moment()`, the other two fields ``k``, ``l``,
    from the smoothed covariance ``D = C + diag(noise)`` (the noise on the diagonal only)."""
    det = dss * dtt - dst * dst
    # the covariance of (k, l) given v_s = v_t = 0
    vk = dkk - (dks * dks * dtt - 2.0 * dks * dkt * dst + dkt * dkt * dss) / det
    vl = dll - (dls * dls * dtt - 2.0 * dls * dlt * dst + dlt * dlt * dss) / det
    ckl = dkl - (dks * dls * dtt - (dks * dlt + dkt * dls) * dst + dkt * dlt * dss) / det
    p = 0.25 + _asin_branchless(ckl / math.sqrt(vk * vl)) * _INV_2PI
    pair = d2s * (d3t - d3s * dst / dss) + d2t * (d3s - d3t * dst / dtt)
    return p * _INV_2PI * pair / math.sqrt(det)


@numba.njit(error_model="numpy", fastmath={"contract"}, cache=True)
def smoothed_moments(Cb, Nb, P4, n, out):
    r"""``out[:n]``: `smoothed_relu_moment()` of the columns ``m`` of ``Cb (10, n)`` (``C[x, y]``,
    ``x <= y``, in row ``_UPPER[x, y]``), ``Nb (4, n)`` (the noise) and ``P4 (n,)``, the loop over the columns
    branch-free (`_asin_branchless()`, the six pairs written out) so that LLVM runs it on
    vectors of eight."""
    for m in range(n):
        d00, d11 = Cb[0, m] + Nb[0, m], Cb[4, m] + Nb[1, m]
        d22, d33 = Cb[7, m] + Nb[2, m], Cb[9, m] + Nb[3, m]
        d01, d02, d03 = Cb[1, m], Cb[2, m], Cb[3, m]
        d12, d13, d23 = Cb[5, m], Cb[6, m], Cb[8, m]
        total = d23 * P4[m]
        # pairs (s, t) with the rest (k, l): (0, 1 | 2, 3), (0, 2 | 1, 3), (0, 3 | 1, 2),
        # (1, 2 | 0, 3), (1, 3 | 0, 2), (2, 3 | 0, 1)
        total += _moment_pair(d00, d11, d01, d02, d12, d03, d13, d22, d33, d23, d02, d12, d03, d13)
        total += _moment_pair(d00, d22, d02, d01, d12, d03, d23, d11, d33, d13, d02, d22, d03, d23)
        total += _moment_pair(d00, d33, d03, d01, d13, d02, d23, d11, d22, d12, d02, d23, d03, d33)
        total += _moment_pair(d11, d22, d12, d01, d02, d13, d23, d00, d33, d03, d12, d22, d13, d23)
        total += _moment_pair(d11, d33, d13, d01, d03, d12, d23, d00, d22, d02, d12, d23, d13, d33)
        total += _moment_pair(d22, d33, d23, d02, d03, d12, d13, d00, d11, d01, d22, d23, d23, d33)
        out[m] = total

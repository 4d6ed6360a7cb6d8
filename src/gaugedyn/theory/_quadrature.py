r"""Gaussian expectations of any activation by quadrature: the pair and self kernels the flow needs.

For $(x_1, x_2) \sim \mathcal{N}(0, C)$, ``C = [[q1, c], [c, q2]]``, $\rho = c / \sqrt{q_1 q_2}$,
$\sigma = \sqrt{1 - \rho^2}$, the kernels are

    F(q1, q2, c) = E[g(x1) g(x2)],         S(q) = E[g(x)^2],  x ~ N(0, q),

with the first derivatives from Price's theorem (``dE[h(x)]/dC_12 = E[d1 d2 h]``,
$\partial \mathbb{E}[h(x)]/\partial C_{11} = \mathbb{E}[\partial_1^2 h] / 2$),

    dF/dc = E[g'(x1) g'(x2)],   dF/dq1 = E[g''(x1) g(x2)] / 2,   dS/dq = E[g'(x)^2 + g g''(x)],

and the second derivatives by differentiating the Gaussian density of those first-derivative
integrands (the score ``d log p / dC``: $s_{q_1} = (y_1^2 - A_{11}) / 2$, $s_{q_2} = (y_2^2 - A_{22}) / 2$,
``s_c = y1 y2 - A12`` with $A = C^{-1}$, ``y = A x``), e.g. ``d2F/dc dq1 = E[g'(x1) g'(x2) s_q1]``.
Values and first derivatives stay finite for aligned pairs ($\sigma = 0$); second derivatives
divide by ``sigma`` as the ReLU closed forms do.

Two rules, vectorised over all pairs at once (every input broadcasts; the result has the
broadcast shape):

- smooth ``g`` (``homogeneous=False``): the Hermite (Mehler) expansion. With $x = \sqrt{q}\, z$
  and the orthonormal Hermite coefficients ``A_k(q) = E[g(sqrt(q) z) He_k(z)] / sqrt(k!)``,

      F(q1, q2, c) = sum_{k=0}^{N} A_k(q1) A_k(q2) rho^k,

  truncated at ``N`` terms (``HERMITE_TERMS = 96`` by default; ``nodes`` sets it). The
  coefficients and their ``q``-derivatives $A_k' = \mathbb{E}[g'(x)\, z\, \mathrm{He}_k] / (2 \sqrt{q\, k!})$,
  $A_k'' = \mathbb{E}[g''(x)\, z^2 \mathrm{He}_k] / (4 q \sqrt{k!}) - \mathbb{E}[g'(x)\, z\, \mathrm{He}_k] / (4 q^{3/2} \sqrt{k!})$ come
  from one one-dimensional Gauss-Hermite rule with ``4 N`` nodes per distinct ``q`` (so ``g``,
  ``g'``, ``g''`` are evaluated ``12 N`` times per distinct diagonal entry, not per pair: the
  ``K + M`` diagonal entries of ``Q`` and ``T`` serve all $K^2 + K M$ pairs), and every
  derivative of ``F`` in ``(q1, q2, c)`` is the chain rule through $\rho = c / \sqrt{q_1 q_2}$
  applied to the series (exact, finite at $|\rho| = 1$). By Parseval, ``sum_k A_k(q)^2 =
  S(q)``, so the truncation error of ``F`` is at most ``sqrt(tail(q1) tail(q2)) |rho|^(N+1)``
  with $\mathrm{tail}(q) = S(q) - \sum_{k \le N} A_k(q)^2$. Exact for polynomial ``g`` of degree
  ``<= N``; geometric in ``N`` for entire ``g`` (erf: 1e-15); for ``g`` analytic in a strip
  of half-width $a / \sqrt{q}$ the coefficients fall like ``exp(-a sqrt(2 k / q))`` (tanh,
  $a = \pi / 2$: about 1e-9 at $q \le 2$, 1e-6 at ``q = 9``; raise ``nodes`` for more);
- positively homogeneous ``g`` of degree 1 (``g(t x) = t g(x)`` for ``t > 0``: ReLU, leaky ReLU,
  absolute value): polar coordinates $z = r (\cos \theta, \sin \theta)$. The integrand is a
  polynomial in ``r`` (exact with a two-node Gauss-Laguerre rule in $r^2 / 2$) and, between
  the four angles where ``x1`` or ``x2`` changes sign, a smooth function of ``theta``
  (Gauss-Legendre with ``n`` nodes on each arc, ``POLAR_NODES = 16`` by default): the kinks at 0
  are never integrated across, and the rule reaches round-off (ReLU: 1e-15 against its closed
  form). ``dF/dq1`` comes from Euler's relation ``2 q1 dF/dq1 + c dF/dc = F`` (so ``g''``, a
  delta, is never needed).

`PairQuadrature.error()` is the stated error bound: the largest difference of the values and
first derivatives between the rule with ``n`` and with ``2 n`` nodes at the given configurations.
Second derivatives of nearly aligned pairs by the polar rule are evaluated at ``|rho| =
HESSIAN_RHO_MAX``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import roots_hermitenorm, roots_laguerre, roots_legendre

_RADIAL_NODES = 2
HESSIAN_RHO_MAX = 1.0 - 1e-4
r"""Second derivatives of pairs with ``|rho| > HESSIAN_RHO_MAX`` are taken at ``|rho| =
HESSIAN_RHO_MAX``: the density's score divides by $\sigma^4$, so closer to alignment its
cancellation leaves nothing (the Hessian enters only Jacobians; for smooth ``g`` the shift
changes it by ``O(1e-4)``, for ReLU-like ``g`` it is ``O(1 / sigma)`` there anyway)."""
HERMITE_TERMS = 96
r"""Default number of terms ``N`` of the smooth rule's Hermite expansion (erf: error bound 1e-15
for $q \le 2$; tanh: 1e-9, its poles at $z = i \pi / (2 \sqrt q)$ are near the real axis)."""
COEFFICIENT_NODES = 4
"""Gauss-Hermite nodes per term of the one-dimensional rule for the Hermite coefficients (``4 N``:
at tanh, ``q = 9``, the pair kernel's error is 3e-7 with ``2 N``, 7e-10 with ``4 N``; the rule
runs once per distinct diagonal entry, so its size costs next to nothing)."""
MAX_HERMITE_TERMS = 300
"""The most terms the smooth rule takes (beyond, the weights of the ``4 N``-node rule underflow
where the highest Hermite functions live)."""
POLAR_NODES = 16
"""Default Gauss-Legendre nodes per arc of the polar rule (round-off for ReLU)."""


def _flat(*xs):
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    flat = [np.broadcast_to(np.asarray(x, dtype=np.float64), shape).ravel() for x in xs]
    return shape, flat


class PairQuadrature:
    """The six kernels ``(F, dF, d2F, S, dS, d2S)`` of an activation, by quadrature.

    ``g``, ``g1``, ``g2`` are ``g``, ``g'``, ``g''`` on float64 numpy arrays (``g2`` unused when
    ``homogeneous``); ``nodes`` is ``n`` of the module docstring. The pair functions follow the
    generated kernels' contract (``pair_hess`` in the order q1q1, q1q2, q1c, q2q2, q2c, cc).
    """

    CHUNK = 64
    """Pairs evaluated per block (bounds the memory of the node arrays)."""

    def __init__(
        self,
        g: Callable,
        g1: Callable,
        g2: Callable | None,
        homogeneous: bool,
        nodes: int | None = None,
    ):
        self.g, self.g1, self.g2 = g, g1, g2
        self.homogeneous = bool(homogeneous)
        if nodes is None:
            nodes = POLAR_NODES if homogeneous else HERMITE_TERMS
        self.nodes = int(nodes)
        if self.homogeneous:
            t, w = roots_legendre(self.nodes)
            self._t, self._wt = t, w
            s, ws = roots_laguerre(_RADIAL_NODES)
            self._r, self._wr = np.sqrt(2.0 * s), ws
        else:
            if not 1 <= self.nodes <= 2 * MAX_HERMITE_TERMS:
                raise ValueError(f"nodes={self.nodes} terms; allowed 1 to {2 * MAX_HERMITE_TERMS}")
            z, w = roots_hermitenorm(COEFFICIENT_NODES * self.nodes)
            self._z1, self._w1 = z, w / np.sqrt(2.0 * np.pi)
            # rows k = 0..N: w_j He_k(z_j) / sqrt(k!), by the orthonormal recurrence on
            # sqrt(w_j) He_k(z_j) / sqrt(k!) (bounded by about 1, so nothing overflows)
            phi = np.empty((self.nodes + 1, z.size))
            phi[0] = np.sqrt(self._w1)
            if self.nodes >= 1:
                phi[1] = z * phi[0]
            for k in range(1, self.nodes):
                phi[k + 1] = (z * phi[k] - np.sqrt(k) * phi[k - 1]) / np.sqrt(k + 1)
            self._basis = phi * np.sqrt(self._w1)
            self._k = np.arange(self.nodes + 1, dtype=np.float64)
            self._coefficients: dict = {}
        self._last: tuple | None = None

    # --- the six kernels --------------------------------------------------------------------

    def pair(self, q1, q2, c):
        return self._pair(q1, q2, c, hess=False)[0]

    def pair_grad(self, q1, q2, c):
        return self._pair(q1, q2, c, hess=False)[1]

    def pair_hess(self, q1, q2, c):
        return self._pair(q1, q2, c, hess=True)[2]

    def self_(self, q):
        return self._self(q)[0]

    def self_grad(self, q):
        return self._self(q)[1]

    def self_hess(self, q):
        return self._self(q)[2]

    def kernels(self) -> tuple:
        """``(pair, pair_grad, pair_hess, self, self_grad, self_hess)`` as the generated KERNELS."""
        return (
            self.pair,
            self.pair_grad,
            self.pair_hess,
            self.self_,
            self.self_grad,
            self.self_hess,
        )

    def coefficient_rule(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""``(z, w, basis)`` of the smooth rule: the ``4 N`` Gauss-Hermite nodes, their weights
        (summing to 1) and $\mathrm{basis}_{kj} = w_j \mathrm{He}_k(z_j) / \sqrt{k!}$ (``k = 0..N``), so that
        ``A_k(q) = sum_j basis[k, j] g(sqrt(q) z_j)`` (the compiled online ODE reads them)."""
        if self.homogeneous:
            raise ValueError("the polar rule has no Hermite coefficient rule")
        return self._z1, self._w1, self._basis

    def error(self, q1, q2, c) -> np.ndarray:
        """The stated error bound at each configuration: ``max |K_n - K_2n|`` over the value and
        the three first derivatives of the pair kernel and the value and derivative of the self
        kernel at ``q1`` and ``q2`` (module docstring; ``n`` nodes per arc of the polar rule, or
        ``N`` terms of the Hermite expansion with its ``4 N``-node rule)."""
        fine_nodes = 2 * self.nodes
        if not self.homogeneous:
            fine_nodes = min(fine_nodes, 2 * MAX_HERMITE_TERMS)
        fine = PairQuadrature(self.g, self.g1, self.g2, self.homogeneous, fine_nodes)
        v0, g0, _ = self._pair(q1, q2, c, hess=False)
        v1, g1, _ = fine._pair(q1, q2, c, hess=False)
        diffs = [v0 - v1, *(a - b for a, b in zip(g0, g1))]
        for q in (q1, q2):
            diffs += [a - b for a, b in zip(self._self(q)[:2], fine._self(q)[:2])]
        return np.max(np.abs(np.stack(np.broadcast_arrays(*diffs))), axis=0)

    # --- implementation ---------------------------------------------------------------------

    def _pair(self, q1, q2, c, hess: bool):
        """``(F, (dF/dq1, dF/dq2, dF/dc), hessian or None)``. Symmetric duplicates ``(q1, q2, c)``,
        ``(q2, q1, c)`` are evaluated once, and the last call is remembered (whatever its shape),
        so the value, gradient and Hessian of one state cost one evaluation of ``g``."""
        shape, (q1, q2, c) = _flat(q1, q2, c)
        if not self.homogeneous:
            return self._series(shape, q1, q2, c, hess)
        key = (q1.tobytes(), q2.tobytes(), c.tobytes())
        if self._last is None or self._last[0] != key or (hess and self._last[1][2] is None):
            swap = q1 > q2
            rows = np.stack([np.where(swap, q2, q1), np.where(swap, q1, q2), c], axis=1)
            first: dict = {}
            inverse = np.array(
                [first.setdefault(r, len(first)) for r in map(tuple, rows.tolist())], dtype=np.intp
            )
            uniq = np.empty((len(first), 3))
            uniq[inverse] = rows
            blocks = (uniq[i : i + self.CHUNK] for i in range(0, uniq.shape[0], self.CHUNK))
            parts = [self._pair_block(b[:, 0], b[:, 1], b[:, 2], hess) for b in blocks]
            if hess:
                bound = HESSIAN_RHO_MAX * np.sqrt(uniq[:, 0] * uniq[:, 1])
                near = np.abs(uniq[:, 2]) > bound
                if np.any(near):  # the Hessian of nearly aligned pairs at |rho| = RHO_MAX
                    near_rows = uniq[near].copy()
                    near_rows[:, 2] = np.clip(near_rows[:, 2], -bound[near], bound[near])
                    h_near = self._pair_block(
                        near_rows[:, 0], near_rows[:, 1], near_rows[:, 2], True
                    )[2]
                    full = [np.concatenate([p[2][k] for p in parts]) for k in range(6)]
                    for k in range(6):
                        full[k][near] = h_near[k]
                    parts = [
                        (
                            np.concatenate([p[0] for p in parts]),
                            tuple(np.concatenate([p[1][k] for p in parts]) for k in range(3)),
                            tuple(full),
                        )
                    ]
            val = np.concatenate([p[0] for p in parts])[inverse]
            d1, d2, dc = (np.concatenate([p[1][k] for p in parts])[inverse] for k in range(3))
            grad = (np.where(swap, d2, d1), np.where(swap, d1, d2), dc)
            hs = None
            if hess:
                h11, h12, h1c, h22, h2c, hcc = (
                    np.concatenate([p[2][k] for p in parts])[inverse] for k in range(6)
                )
                hs = (
                    np.where(swap, h22, h11),
                    h12,
                    np.where(swap, h2c, h1c),
                    np.where(swap, h11, h22),
                    np.where(swap, h1c, h2c),
                    hcc,
                )
            self._last = (key, (val, grad, hs))
        val, grad, hs = self._last[1]
        return (
            val.reshape(shape),
            tuple(x.reshape(shape) for x in grad),
            None if hs is None else tuple(x.reshape(shape) for x in hs),
        )

    def _pair_block(self, q1, q2, c, hess: bool):
        """The polar rule's kernels of ``P`` pairs; node arrays are ``(P, N, 1)``."""
        sq1, sq2 = np.sqrt(q1), np.sqrt(q2)
        rho = np.clip(c / (sq1 * sq2), -1.0, 1.0)
        sigma = np.sqrt(np.maximum(1.0 - rho * rho, 0.0))
        col = (slice(None), None, None)
        z1, z2, w1, w2 = self._polar(rho, sigma)
        x1 = sq1[col] * z1
        x2 = sq2[col] * (rho[col] * z1 + sigma[col] * z2)
        G1, P1 = self.g(x1)[..., 0], self.g1(x1)[..., 0]
        G2, P2 = self.g(x2), self.g1(x2)
        G2w, P2w = G2 @ w2, P2 @ w2
        val = np.sum(w1 * G1 * G2w, axis=-1)
        dc = np.sum(w1 * P1 * P2w, axis=-1)
        d1, d2 = (val - c * dc) / (2 * q1), (val - c * dc) / (2 * q2)
        if not hess:
            return val, (d1, d2, dc)
        W = w1[..., None] * w2
        with np.errstate(divide="ignore", invalid="ignore"):
            det = q1 * q2 * sigma**2
            A11, A22, A12 = q2 / det, q1 / det, -c / det
            y1 = x1 * A11[col] + x2 * A12[col]
            y2 = x1 * A12[col] + x2 * A22[col]
            s1 = 0.5 * (y1 * y1 - A11[col])
            s2 = 0.5 * (y2 * y2 - A22[col])
            sc = y1 * y2 - A12[col]
            pp = W * P1[..., None] * P2
            h1c, h2c, hcc = (np.sum(pp * s, axis=(-2, -1)) for s in (s1, s2, sc))
            h11 = (-d1 - c * h1c) / (2 * q1)
            h12 = (d2 - c * h2c) / (2 * q1)
            h22 = (-d2 - c * h2c) / (2 * q2)
            h1c_, h2c_ = -c * hcc / (2 * q1), -c * hcc / (2 * q2)
        return val, (d1, d2, dc), (h11, h12, h1c_, h22, h2c_, hcc)

    def _polar(self, rho, sigma):
        """Polar nodes per pair, ``z1, z2 (P, N, 1)``, weights ``w1 (P, N)``, ``w2 (1,)``: the
        four sign-change angles of ``x1`` and ``x2`` split the circle into arcs."""
        phi0 = np.arctan2(sigma, rho)  # x2 = 0 at theta = phi0 +- pi/2
        P = rho.shape[0]
        breaks = np.sort(
            np.stack(
                [
                    np.zeros(P),
                    np.full(P, 0.5 * np.pi),
                    np.full(P, 1.5 * np.pi),
                    np.mod(phi0 + 0.5 * np.pi, 2 * np.pi),
                    np.mod(phi0 + 1.5 * np.pi, 2 * np.pi),
                    np.full(P, 2 * np.pi),
                ],
                axis=1,
            ),
            axis=1,
        )
        lo, hi = breaks[:, :-1, None], breaks[:, 1:, None]
        half = 0.5 * (hi - lo)
        theta = (lo + half + half * self._t).reshape(P, -1)
        wt = (half * self._wt / (2 * np.pi)).reshape(P, -1)
        r = self._r[None, None, :]
        z1 = (r * np.cos(theta)[..., None]).reshape(P, -1, 1)
        z2 = (r * np.sin(theta)[..., None]).reshape(P, -1, 1)
        w1 = (wt[..., None] * self._wr[None, None, :]).reshape(P, -1)
        return z1, z2, w1, np.ones(1)

    def _coefficients_of(self, q):
        """``(coef (len(q), 3, N + 1), self (len(q), 3))`` at each entry of the flat ``q``: the
        orthonormal Hermite coefficients ``A_k`` of ``g(sqrt(q) z)`` with their first and second
        ``q``-derivatives, and ``(S, S', S'')``, from the ``4 N``-node rule; remembered per value
        of ``q`` (a flow evaluates a handful of distinct diagonal entries many times)."""
        memo = self._coefficients
        keys = q.tolist()
        found = {v: memo[v] for v in set(keys) if v in memo}  # a local copy: thread-safe reads
        missing = sorted(set(keys) - found.keys())
        if missing:
            if len(memo) + len(missing) > 4096:
                memo.clear()
            qm = np.array(missing)
            sq = np.sqrt(qm)[:, None]
            z = self._z1
            x = sq * z
            G, P, S2 = self.g(x), self.g1(x), self.g2(x)
            Pz = P * z
            # A, int g' z He_k, int g'' z^2 He_k (rows of the basis), stacked in one product
            raw = np.stack([G, Pz, S2 * z * z], axis=1) @ self._basis.T
            coef = np.stack(
                [
                    raw[:, 0],
                    raw[:, 1] / (2.0 * sq),
                    raw[:, 2] / (4.0 * sq**2) - raw[:, 1] / (4.0 * sq**3),
                ],
                axis=1,
            )
            d = P * P + G * S2
            selfk = np.stack(
                [(G * G) @ self._w1, d @ self._w1, (d * (z**2 - 1.0) / (2.0 * sq**2)) @ self._w1],
                axis=1,
            )
            for i, v in enumerate(missing):
                found[v] = memo[v] = (coef[i], selfk[i])
        rows = [found[v] for v in keys]
        return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])

    def _series(self, shape, q1, q2, c, hess: bool):
        r"""The smooth rule (module docstring): $F = \Phi(q_1, q_2, \rho)$ with ``Phi = sum_k
        A_k(q1) A_k(q2) rho^k``; the derivatives in ``(q1, q2, c)`` by the chain rule. The last
        call is remembered, so the value, gradient and Hessian of one state cost one series."""
        key = (q1.tobytes(), q2.tobytes(), c.tobytes())
        entry = self._last  # read once: another thread may replace it
        if entry is None or entry[0] != key or (hess and entry[1][2] is None):
            entry = (key, self._series_flat(q1, q2, c, hess))
            self._last = entry
        val, grad, hs = entry[1]
        return (
            val.reshape(shape),
            tuple(x.reshape(shape) for x in grad),
            None if hs is None else tuple(x.reshape(shape) for x in hs),
        )

    def _series_flat(self, q1, q2, c, hess: bool):
        n = q1.size
        coef, _ = self._coefficients_of(np.concatenate([q1, q2]))
        return mehler(coef[:n], coef[n:], q1, q2, c, hess)

    def _self(self, q):
        shape, (q,) = _flat(q)
        if self.homogeneous:
            m = 0.5 * (self.g(np.ones(1))[0] ** 2 + self.g(-np.ones(1))[0] ** 2)
            return (q * m).reshape(shape), np.full(shape, m), np.zeros(shape)
        _, selfk = self._coefficients_of(q)
        return tuple(selfk[:, j].reshape(shape) for j in range(3))


def mehler(one, two, q1, q2, c, hess: bool):
    r"""$F(q_1, q_2, c) = \Phi(q_1, q_2, \rho) = \sum_k A_k(q_1) B_k(q_2) \rho^k$ with its gradient and
    (if ``hess``) Hessian in ``(q1, q2, c)`` by the chain rule through $\rho = c / \sqrt{q_1 q_2}$.

    ``one``, ``two`` ``(P, 3, N + 1)``: the orthonormal Hermite coefficients of the two functions
    at ``q1`` and ``q2`` and their first and second ``q``-derivatives (module docstring); the two
    functions may differ (a student's and a teacher's activation). Returns ``(F, (F_q1, F_q2,
    F_c), hessian or None)``, the Hessian in the order q1q1, q1q2, q1c, q2q2, q2c, cc.
    """
    s = np.sqrt(q1 * q2)
    rho = np.clip(c / s, -1.0, 1.0)
    k = np.arange(one.shape[-1], dtype=np.float64)
    pw = np.vander(rho, k.size, increasing=True)  # rho^k
    d = np.zeros_like(pw)  # k rho^(k-1)
    d[:, 1:] = k[1:] * pw[:, :-1]
    a1, a2 = one[:, 0], two[:, 0]
    aa = a1 * a2
    # Phi, Phi_1, Phi_2 against rho^k; Phi_r against k rho^(k-1)
    prods = [aa, one[:, 1] * a2, a1 * two[:, 1]]
    if hess:
        prods += [one[:, 2] * a2, a1 * two[:, 2], one[:, 1] * two[:, 1]]
    by_pw = np.einsum("jpk,pk->jp", np.stack(prods), pw)
    by_d = np.einsum("jpk,pk->jp", np.stack(prods[:3]), d)
    phi, p1, p2 = by_pw[:3]
    pr, p1r, p2r = by_d
    r1, r2, rc = -rho / (2 * q1), -rho / (2 * q2), 1.0 / s
    grad = (p1 + pr * r1, p2 + pr * r2, pr * rc)
    if not hess:
        return phi, grad, None
    e = np.zeros_like(pw)  # k (k-1) rho^(k-2)
    e[:, 2:] = k[2:] * (k[2:] - 1) * pw[:, :-2]
    p11, p22, p12 = by_pw[3:]
    prr = np.sum(aa * e, axis=-1)
    r11, r22, r12 = 3 * rho / (4 * q1**2), 3 * rho / (4 * q2**2), rho / (4 * q1 * q2)
    r1c, r2c = -rc / (2 * q1), -rc / (2 * q2)
    hs = (
        p11 + 2 * p1r * r1 + prr * r1 * r1 + pr * r11,
        p12 + p1r * r2 + p2r * r1 + prr * r1 * r2 + pr * r12,
        p1r * rc + prr * r1 * rc + pr * r1c,
        p22 + 2 * p2r * r2 + prr * r2 * r2 + pr * r22,
        p2r * rc + prr * r2 * rc + pr * r2c,
        prr * rc * rc,
    )
    return phi, grad, hs


def homogeneous_coefficients(up: float, down: float, q, terms: int) -> np.ndarray:
    r"""``(len(q), 3, terms + 1)``: the orthonormal Hermite coefficients of ``g(sqrt(q) z)`` for
    ``g = up relu + down relu(-.)`` and their ``q``-derivatives, exactly: ``A_k(q) = sqrt(q)
    a_k`` with $a_0 = (\mathit{up} + \mathit{down}) / \sqrt{2 \pi}$, ``a_1 = (up - down) / 2`` and ``a_k = (up +
    (-1)^k down) He_{k-2}(0) / sqrt(2 pi k!)`` for $k \ge 2$ (``E[relu(z) He_k(z)] =
    E[delta(z) He_{k-2}(z)]`` by parts twice)."""
    a = np.zeros(terms + 1)
    a[0] = (up + down) / np.sqrt(2 * np.pi)
    if terms >= 1:
        a[1] = 0.5 * (up - down)
    he = np.zeros(terms + 1)  # He_j(0) / sqrt(j!)
    he[0] = 1.0
    for j in range(2, terms + 1, 2):
        he[j] = -he[j - 2] * np.sqrt((j - 1) / j)
    for k in range(2, terms + 1):
        sign = 1.0 if k % 2 == 0 else -1.0
        # He_{k-2}(0) / sqrt(k!) = (He_{k-2}(0) / sqrt((k-2)!)) / sqrt(k (k-1))
        a[k] = (up + sign * down) * he[k - 2] / np.sqrt(2 * np.pi * k * (k - 1))
    q = np.asarray(q, dtype=np.float64)[:, None]
    sq = np.sqrt(q)
    return np.stack([sq * a, a / (2 * sq), -a / (4 * q * sq)], axis=1)


FOUR_POINT_NODES = 10
r"""Gauss-Hermite nodes per axis of `gaussian_product()` in the online ODE's four-point
integrals ($10^4$ nodes per integral). Its error on the online ODE's noise term is measured by
``benchmarks/bench_online_noise_accuracy.py``: small for softplus, large for tanh (whose
derivative's poles at distance $\pi / 2$ from the real axis slow the rule's convergence to
about $e^{-c \sqrt{n}}$), see `gaugedyn.training._online_ode`."""


def hermite_grid(d: int, nodes: int):
    r"""The tensor Gauss-Hermite rule for $N(0, I_d)$: nodes $(\text{nodes}^d, d)$ and weights.

    Parameters
    ----------
    d : int
        The dimension.
    nodes : int
        Nodes per axis (probabilists' Hermite roots).

    Returns
    -------
    tuple of numpy.ndarray
        ``(Z (nodes^d, d), W (nodes^d,))``; the weights sum to 1.
    """
    z, w = roots_hermitenorm(nodes)
    w = w / np.sqrt(2.0 * np.pi)
    Z = np.stack(np.meshgrid(*([z] * d), indexing="ij"), axis=-1).reshape(-1, d)
    W = np.prod(np.stack(np.meshgrid(*([w] * d), indexing="ij"), axis=-1).reshape(-1, d), -1)
    return Z, W


def eigen_factor(C, tol: float = 1e-12, symmetric: bool = False):
    r"""$A = U \sqrt{L}$ ``(d, r)`` with $A A^\top = C$ from the eigenvalues above ``tol`` times the
    largest (a repeated or dependent field costs no dimension).

    The tensor rule is invariant under the eigenvectors' signs and order, so its value is a
    smooth function of $C$ away from repeated eigenvalues; on principal axes it is two digits
    more accurate than on a Cholesky factor or the symmetric square root (erf noise term, 16
    nodes per axis). Near repeated eigenvalues the axes turn quickly; for an integrand with a
    kink, whose rule error is large (about 1e-3), that makes the value rough, so
    ``symmetric=True`` returns $U \sqrt{L} U^\top$ instead (smooth in $C$; positive definite
    $C$ only, else the eigen factor).

    Parameters
    ----------
    C : array_like
        A symmetric positive semidefinite ``(d, d)`` matrix.
    tol : float
        Eigenvalues at or below ``tol`` times the largest are dropped.
    symmetric : bool
        Return the symmetric square root when no eigenvalue is dropped.

    Returns
    -------
    numpy.ndarray
        ``(d, r)`` with $r$ the eigenvalues kept, or ``(d, d)`` for the symmetric root.
    """
    lam, U = np.linalg.eigh(np.asarray(C, dtype=np.float64))
    keep = lam > tol * max(lam.max(), 0.0)
    if symmetric and np.all(keep):
        return (U * np.sqrt(lam)) @ U.T
    return U[:, keep] * np.sqrt(lam[keep])


def gaussian_product(fns, C, nodes: int = FOUR_POINT_NODES, chunk: int = 16) -> np.ndarray:
    r"""$E[f_1(x_1) \cdots f_d(x_d)]$ for $x \sim N(0, C)$, ``C (..., d, d)`` positive semidefinite.

    The tensor Gauss-Hermite rule with ``nodes`` per axis on $x = U \sqrt{L} z$ (the eigen
    factor of $C$, so a singular $C$, e.g. a repeated field, is exact); vectorised over the
    leading axes of $C$ in blocks of ``chunk``. Exact for polynomial $f$ of total degree
    $\le 2\,\mathrm{nodes} - 1$; for smooth $f$ its error is estimated by the difference with
    ``nodes + 4`` (`gaussian_product_error()`; geometric convergence for entire $f$, slower for
    $f$ with poles near the real axis, such as tanh); for $f$ with a kink it converges only
    algebraically.

    Parameters
    ----------
    fns : sequence of Callable
        The $d$ factors $f_k$, each elementwise on a float64 array.
    C : array_like
        Covariances ``(..., d, d)``, positive semidefinite.
    nodes : int
        Gauss-Hermite nodes per axis ($\mathrm{nodes}^d$ per integral).
    chunk : int
        Covariances evaluated per vectorised block (memory: ``chunk * nodes^d * d`` floats).

    Returns
    -------
    numpy.ndarray
        The expectations, shape ``(...)``.
    """
    C = np.asarray(C, dtype=np.float64)
    d = C.shape[-1]
    lead = C.shape[:-2]
    flat = C.reshape(-1, d, d)
    Z, Wt = hermite_grid(d, nodes)
    out = np.empty(flat.shape[0])
    for s in range(0, flat.shape[0], chunk):
        lam, U = np.linalg.eigh(flat[s : s + chunk])
        A = U * np.sqrt(np.maximum(lam, 0.0))[..., None, :]
        X = Z @ np.swapaxes(A, -1, -2)  # (B, N, d)
        prod = np.ones(X.shape[:-1])
        for k, f in enumerate(fns):
            prod = prod * f(np.ascontiguousarray(X[..., k]))
        out[s : s + chunk] = prod @ Wt
    return out.reshape(lead)


def gaussian_product_error(fns, C, nodes: int = FOUR_POINT_NODES) -> np.ndarray:
    """The stated error of `gaussian_product()`: ``|rule(nodes) - rule(nodes + 4)|``."""
    return np.abs(gaussian_product(fns, C, nodes) - gaussian_product(fns, C, nodes + 4))

"""Gaussian expectations of any activation by quadrature: the pair and self kernels the flow needs.

For ``(x1, x2) ~ N(0, C)``, ``C = [[q1, c], [c, q2]]``, ``rho = c / sqrt(q1 q2)``,
``sigma = sqrt(1 - rho^2)``, the kernels are

    F(q1, q2, c) = E[g(x1) g(x2)],         S(q) = E[g(x)^2],  x ~ N(0, q),

with the first derivatives from Price's theorem (``dE[h(x)]/dC_12 = E[d1 d2 h]``,
``dE[h(x)]/dC_11 = E[d1^2 h] / 2``),

    dF/dc = E[g'(x1) g'(x2)],   dF/dq1 = E[g''(x1) g(x2)] / 2,   dS/dq = E[g'(x)^2 + g g''(x)],

and the second derivatives by differentiating the Gaussian density of those first-derivative
integrands (the score ``d log p / dC``: ``s_q1 = (y1^2 - A11) / 2``, ``s_q2 = (y2^2 - A22) / 2``,
``s_c = y1 y2 - A12`` with ``A = C^-1``, ``y = A x``), e.g. ``d2F/dc dq1 = E[g'(x1) g'(x2) s_q1]``.
Values and first derivatives stay finite for aligned pairs (``sigma = 0``); second derivatives
divide by ``sigma`` as the ReLU closed forms do.

Two rules, vectorised over all pairs at once (every input broadcasts; the result has the
broadcast shape):

- smooth ``g`` (``homogeneous=False``): the tensor Gauss-Hermite rule with ``n`` nodes per axis
  (``HERMITE_NODES = 40`` by default) on ``x1 = sqrt(q1) z1``, ``x2 = sqrt(q2) (rho z1 +
  sigma z2)`` (the Cholesky factor of ``C``); exact for polynomial ``g`` of degree ``<= n - 1``
  (quadratic, He2, He3; the one-variable self kernel uses ``2 n`` nodes, as cheap as ``n`` per
  pair), exponentially convergent for entire ``g`` (erf: error bound 3e-12 for ``q <= 2``),
  slower when ``g`` has poles near the real axis at the scale of ``sqrt(q)`` (tanh: about 5e-5
  for ``q <= 2``, 1e-4 at ``q = 4``; raise ``nodes`` for more);
- positively homogeneous ``g`` of degree 1 (``g(t x) = t g(x)`` for ``t > 0``: ReLU, leaky ReLU,
  absolute value): polar coordinates ``z = r (cos theta, sin theta)``. The integrand is a
  polynomial in ``r`` (exact with a two-node Gauss-Laguerre rule in ``r^2 / 2``) and, between
  the four angles where ``x1`` or ``x2`` changes sign, a smooth function of ``theta``
  (Gauss-Legendre with ``n`` nodes on each arc, ``POLAR_NODES = 16`` by default): the kinks at 0
  are never integrated across, and the rule reaches round-off (ReLU: 1e-15 against its closed
  form). ``dF/dq1`` comes from Euler's relation ``2 q1 dF/dq1 + c dF/dc = F`` (so ``g''``, a
  delta, is never needed).

:meth:`PairQuadrature.error` is the stated error bound: the largest difference of the values and
first derivatives between the rule with ``n`` and with ``2 n`` nodes at the given configurations.
Second derivatives of nearly aligned pairs are evaluated at ``|rho| = HESSIAN_RHO_MAX``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import roots_hermitenorm, roots_laguerre, roots_legendre

_RADIAL_NODES = 2
HESSIAN_RHO_MAX = 1.0 - 1e-4
"""Second derivatives of pairs with ``|rho| > HESSIAN_RHO_MAX`` are taken at ``|rho| =
HESSIAN_RHO_MAX``: the density's score divides by ``sigma^4``, so closer to alignment its
cancellation leaves nothing (the Hessian enters only Jacobians; for smooth ``g`` the shift
changes it by ``O(1e-4)``, for ReLU-like ``g`` it is ``O(1 / sigma)`` there anyway)."""
HERMITE_NODES = 40
"""Default Gauss-Hermite nodes per axis of the smooth rule (erf: error bound 3e-12 for
``q <= 2``; tanh: 5e-5, its poles at ``z = i pi / (2 sqrt q)`` are near the real axis)."""
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

    def __init__(self, g: Callable, g1: Callable, g2: Callable | None, homogeneous: bool,
                 nodes: int | None = None):
        self.g, self.g1, self.g2 = g, g1, g2
        self.homogeneous = bool(homogeneous)
        if nodes is None:
            nodes = POLAR_NODES if homogeneous else HERMITE_NODES
        self.nodes = int(nodes)
        if self.homogeneous:
            t, w = roots_legendre(self.nodes)
            self._t, self._wt = t, w
            s, ws = roots_laguerre(_RADIAL_NODES)
            self._r, self._wr = np.sqrt(2.0 * s), ws
        else:
            z, w = roots_hermitenorm(self.nodes)
            self._z, self._w = z, w / np.sqrt(2.0 * np.pi)
            z, w = roots_hermitenorm(2 * self.nodes)
            self._z1, self._w1 = z, w / np.sqrt(2.0 * np.pi)
        self._last = None

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
        return (self.pair, self.pair_grad, self.pair_hess, self.self_, self.self_grad,
                self.self_hess)

    def error(self, q1, q2, c) -> np.ndarray:
        """The stated error bound at each configuration: ``max |K_n - K_2n|`` over the value and
        the three first derivatives of the pair kernel and the value and derivative of the self
        kernel at ``q1`` and ``q2`` (module docstring)."""
        fine = PairQuadrature(self.g, self.g1, self.g2, self.homogeneous, 2 * self.nodes)
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
        key = (q1.tobytes(), q2.tobytes(), c.tobytes())
        if (self._last is None or self._last[0] != key
                or (hess and self._last[1][2] is None)):
            swap = q1 > q2
            rows = np.stack([np.where(swap, q2, q1), np.where(swap, q1, q2), c], axis=1)
            first: dict = {}
            inverse = np.array([first.setdefault(r, len(first))
                                for r in map(tuple, rows.tolist())], dtype=np.intp)
            uniq = np.empty((len(first), 3))
            uniq[inverse] = rows
            parts = [self._pair_block(*uniq[i:i + self.CHUNK].T, hess)
                     for i in range(0, uniq.shape[0], self.CHUNK)]
            if hess:
                bound = HESSIAN_RHO_MAX * np.sqrt(uniq[:, 0] * uniq[:, 1])
                near = np.abs(uniq[:, 2]) > bound
                if np.any(near):  # the Hessian of nearly aligned pairs at |rho| = RHO_MAX
                    near_rows = uniq[near].copy()
                    near_rows[:, 2] = np.clip(near_rows[:, 2], -bound[near], bound[near])
                    h_near = self._pair_block(*near_rows.T, True)[2]
                    full = [np.concatenate([p[2][k] for p in parts]) for k in range(6)]
                    for k in range(6):
                        full[k][near] = h_near[k]
                    parts = [(np.concatenate([p[0] for p in parts]),
                              tuple(np.concatenate([p[1][k] for p in parts]) for k in range(3)),
                              tuple(full))]
            val = np.concatenate([p[0] for p in parts])[inverse]
            d1, d2, dc = (np.concatenate([p[1][k] for p in parts])[inverse] for k in range(3))
            grad = (np.where(swap, d2, d1), np.where(swap, d1, d2), dc)
            hs = None
            if hess:
                h11, h12, h1c, h22, h2c, hcc = (np.concatenate([p[2][k] for p in parts])[inverse]
                                                for k in range(6))
                hs = (np.where(swap, h22, h11), h12, np.where(swap, h2c, h1c),
                      np.where(swap, h11, h22), np.where(swap, h1c, h2c), hcc)
            self._last = (key, (val, grad, hs))
        val, grad, hs = self._last[1]
        return (val.reshape(shape), tuple(x.reshape(shape) for x in grad),
                None if hs is None else tuple(x.reshape(shape) for x in hs))

    def _pair_block(self, q1, q2, c, hess: bool):
        """The kernels of ``P`` pairs; node arrays are ``(P, n, n)`` (Gauss-Hermite, ``x1``
        depending on the first axis only) or ``(P, N, 1)`` (polar)."""
        sq1, sq2 = np.sqrt(q1), np.sqrt(q2)
        rho = np.clip(c / (sq1 * sq2), -1.0, 1.0)
        sigma = np.sqrt(np.maximum(1.0 - rho * rho, 0.0))
        col = (slice(None), None, None)
        if self.homogeneous:
            z1, z2, w1, w2 = self._polar(rho, sigma)
        else:
            z1, z2 = self._z[None, :, None], self._z[None, None, :]
            w1, w2 = self._w[None, :], self._w
        x1 = sq1[col] * z1
        x2 = sq2[col] * (rho[col] * z1 + sigma[col] * z2)
        G1, P1 = self.g(x1)[..., 0], self.g1(x1)[..., 0]
        G2, P2 = self.g(x2), self.g1(x2)
        G2w, P2w = G2 @ w2, P2 @ w2
        val = np.sum(w1 * G1 * G2w, axis=-1)
        dc = np.sum(w1 * P1 * P2w, axis=-1)
        if self.homogeneous:
            d1, d2 = (val - c * dc) / (2 * q1), (val - c * dc) / (2 * q2)
        else:
            S1, S2 = self.g2(x1)[..., 0], self.g2(x2)
            d1 = 0.5 * np.sum(w1 * S1 * G2w, axis=-1)
            d2 = 0.5 * np.sum(w1 * G1 * (S2 @ w2), axis=-1)
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
            if self.homogeneous:
                h11 = (-d1 - c * h1c) / (2 * q1)
                h12 = (d2 - c * h2c) / (2 * q1)
                h22 = (-d2 - c * h2c) / (2 * q2)
                h1c_, h2c_ = -c * hcc / (2 * q1), -c * hcc / (2 * q2)
                return val, (d1, d2, dc), (h11, h12, h1c_, h22, h2c_, hcc)
            a = 0.5 * W * S1[..., None] * G2
            b = 0.5 * W * G1[..., None] * S2
            h11, h12 = np.sum(a * s1, axis=(-2, -1)), np.sum(a * s2, axis=(-2, -1))
            h22 = np.sum(b * s2, axis=(-2, -1))
        return val, (d1, d2, dc), (h11, h12, h1c, h22, h2c, hcc)

    def _polar(self, rho, sigma):
        """Polar nodes per pair, ``z1, z2 (P, N, 1)``, weights ``w1 (P, N)``, ``w2 (1,)``: the
        four sign-change angles of ``x1`` and ``x2`` split the circle into arcs."""
        phi0 = np.arctan2(sigma, rho)  # x2 = 0 at theta = phi0 +- pi/2
        P = rho.shape[0]
        breaks = np.sort(np.stack([np.zeros(P), np.full(P, 0.5 * np.pi), np.full(P, 1.5 * np.pi),
                                   np.mod(phi0 + 0.5 * np.pi, 2 * np.pi),
                                   np.mod(phi0 + 1.5 * np.pi, 2 * np.pi),
                                   np.full(P, 2 * np.pi)], axis=1), axis=1)
        lo, hi = breaks[:, :-1, None], breaks[:, 1:, None]
        half = 0.5 * (hi - lo)
        theta = (lo + half + half * self._t).reshape(P, -1)
        wt = (half * self._wt / (2 * np.pi)).reshape(P, -1)
        r = self._r[None, None, :]
        z1 = (r * np.cos(theta)[..., None]).reshape(P, -1, 1)
        z2 = (r * np.sin(theta)[..., None]).reshape(P, -1, 1)
        w1 = (wt[..., None] * self._wr[None, None, :]).reshape(P, -1)
        return z1, z2, w1, np.ones(1)

    def _self(self, q):
        shape, (q,) = _flat(q)
        if self.homogeneous:
            m = 0.5 * (self.g(np.ones(1))[0] ** 2 + self.g(-np.ones(1))[0] ** 2)
            return (q * m).reshape(shape), np.full(shape, m), np.zeros(shape)
        x = np.sqrt(q)[:, None] * self._z1
        G, P, S = self.g(x), self.g1(x), self.g2(x)
        val = G * G @ self._w1
        d = P * P + G * S
        grad = d @ self._w1
        hess = (d * (self._z1**2 - 1.0) / (2 * q[:, None])) @ self._w1
        return val.reshape(shape), grad.reshape(shape), hess.reshape(shape)


FOUR_POINT_NODES = 10
"""Gauss-Hermite nodes per axis of :func:`gaussian_product` in the online ODE's four-point
integrals (``10^4`` nodes per integral)."""


def hermite_grid(d: int, nodes: int):
    """The tensor Gauss-Hermite rule for ``N(0, I_d)``: nodes ``(nodes^d, d)`` and weights."""
    z, w = roots_hermitenorm(nodes)
    w = w / np.sqrt(2.0 * np.pi)
    Z = np.stack(np.meshgrid(*([z] * d), indexing="ij"), axis=-1).reshape(-1, d)
    W = np.prod(np.stack(np.meshgrid(*([w] * d), indexing="ij"), axis=-1).reshape(-1, d), -1)
    return Z, W


def eigen_factor(C, tol: float = 1e-12, symmetric: bool = False):
    """``A = U sqrt(L) (d, r)`` with ``A A^T = C`` from the eigenvalues above ``tol`` times the
    largest (a repeated or dependent field costs no dimension).

    The tensor rule is invariant under the eigenvectors' signs and order, so its value is a
    smooth function of ``C`` away from repeated eigenvalues; on principal axes it is two digits
    more accurate than on a Cholesky factor or the symmetric square root (erf noise term, 16
    nodes per axis). Near repeated eigenvalues the axes turn quickly; for an integrand with a
    kink, whose rule error is large (about 1e-3), that makes the value rough, so
    ``symmetric=True`` returns ``U sqrt(L) U^T`` instead (smooth in ``C``; positive definite
    ``C`` only, else the eigen factor).
    """
    lam, U = np.linalg.eigh(np.asarray(C, dtype=np.float64))
    keep = lam > tol * max(lam.max(), 0.0)
    if symmetric and np.all(keep):
        return (U * np.sqrt(lam)) @ U.T
    return U[:, keep] * np.sqrt(lam[keep])


def gaussian_product(fns, C, nodes: int = FOUR_POINT_NODES, chunk: int = 16) -> np.ndarray:
    """``E[f_1(x_1) ... f_d(x_d)]`` for ``x ~ N(0, C)``, ``C (..., d, d)`` positive semidefinite.

    The tensor Gauss-Hermite rule with ``nodes`` per axis on ``x = U sqrt(L) z`` (the eigen
    factor of ``C``, so a singular ``C``, e.g. a repeated field, is exact); vectorised over the
    leading axes of ``C`` in blocks of ``chunk``. Exact for polynomial ``f`` of total degree
    ``<= 2 nodes - 1``; for smooth ``f`` its error is what the difference with ``nodes + 4``
    shows (:func:`gaussian_product_error`); for ``f`` with a kink it converges only
    algebraically.
    """
    C = np.asarray(C, dtype=np.float64)
    d = C.shape[-1]
    lead = C.shape[:-2]
    flat = C.reshape(-1, d, d)
    Z, Wt = hermite_grid(d, nodes)
    out = np.empty(flat.shape[0])
    for s in range(0, flat.shape[0], chunk):
        lam, U = np.linalg.eigh(flat[s:s + chunk])
        A = U * np.sqrt(np.maximum(lam, 0.0))[..., None, :]
        X = Z @ np.swapaxes(A, -1, -2)  # (B, N, d)
        prod = np.ones(X.shape[:-1])
        for k, f in enumerate(fns):
            prod = prod * f(np.ascontiguousarray(X[..., k]))
        out[s:s + chunk] = prod @ Wt
    return out.reshape(lead)


def gaussian_product_error(fns, C, nodes: int = FOUR_POINT_NODES) -> np.ndarray:
    """The stated error of :func:`gaussian_product`: ``|rule(nodes) - rule(nodes + 4)|``."""
    return np.abs(gaussian_product(fns, C, nodes) - gaussian_product(fns, C, nodes + 4))

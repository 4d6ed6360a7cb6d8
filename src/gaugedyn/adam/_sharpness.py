r"""Curvature of a loss seen through Adam's preconditioner, for any torch model.

With parameters ``theta`` (the flattened ``params``), the Hessian ``H`` of a scalar loss and a
positive preconditioner ``P`` (Adam's ``sqrt(v^) + eps``, or ones):

- the preconditioned sharpness ``S = lambda_max(P^{-1/2} H P^{-1/2})``, by Lanczos on
  Hessian-vector products (:func:`lanczos_top` in torch, or ARPACK through
  ``scipy.sparse.linalg.eigsh`` over a ``LinearOperator``), warm-started from a previous
  eigenvector;
- the active curvature ``kappa_g = d^T H d / d^T P d`` with ``d = P^{-1} g``: the Rayleigh
  quotient of ``P^{-1/2} H P^{-1/2}`` along the preconditioned gradient (one product);
- heavy-ball EMA momentum on a quadratic is stable while
  ``lr S < 2 (1 + beta1) / (1 - beta1)`` (:func:`edge_threshold`).

A Hessian-vector product is ``H u = grad(grad(L) . u)`` by double backward through
``torch.autograd`` (:func:`hessian_vector_product`); :func:`dense_hessian` forms ``H`` from every
unit vector at once (the reference the Lanczos estimate is checked against).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._errors import InputError

LossFn = Callable[[], torch.Tensor]


def edge_threshold(beta1: float) -> float:
    """``2 (1 + beta1) / (1 - beta1)``: the edge of ``lr`` times the preconditioned curvature
    of heavy-ball EMA momentum (Adam with a frozen preconditioner) on a quadratic."""
    if not 0.0 <= float(beta1) < 1.0:
        raise InputError(f"beta1={beta1!r} is not allowed; use a number in [0, 1)")
    return 2.0 * (1.0 + beta1) / (1.0 - beta1)


def flat(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    """The tensors flattened and concatenated, in order."""
    return torch.cat([t.reshape(-1) for t in ts])


def hessian_vector_product(loss_fn: LossFn, params: Sequence[torch.Tensor],
                           vec: torch.Tensor) -> torch.Tensor:
    """``H vec`` (flat) of ``loss_fn()`` with respect to ``params`` (double backward)."""
    g = torch.autograd.grad(loss_fn(), list(params), create_graph=True)
    return flat(torch.autograd.grad(flat(g) @ vec, list(params))).detach()


def _grad(y: torch.Tensor, params: list[torch.Tensor], **kw) -> torch.Tensor:
    """``d y / d params`` flattened, zeros for parameters ``y`` does not use."""
    gs = torch.autograd.grad(y, params, allow_unused=True, **kw)
    return flat([torch.zeros_like(p) if g is None else g for g, p in zip(gs, params)])


class _Operator:
    """``u -> P^{-1/2} H P^{-1/2} u`` over one gradient graph (built once, kept between
    products), counting the products."""

    def __init__(self, loss_fn: LossFn, params: Sequence[torch.Tensor], P: torch.Tensor):
        self.params = list(params)
        self.loss = loss_fn()
        self.g = _grad(self.loss, self.params, create_graph=True)
        self.s = P.detach().to(self.g.dtype).rsqrt()
        self.count = 0

    def hvp(self, u: torch.Tensor) -> torch.Tensor:
        self.count += 1
        if not self.g.requires_grad:  # the loss is linear in the parameters
            return torch.zeros_like(u)
        return _grad(self.g @ u, self.params, retain_graph=True).detach()


    def __call__(self, x: np.ndarray) -> np.ndarray:
        u = torch.as_tensor(np.asarray(x).ravel(), dtype=self.g.dtype, device=self.g.device)
        return (self.s * self.hvp(self.s * u)).double().cpu().numpy()


SHARPNESS_METHODS = ("lanczos", "arpack")
"""Eigensolvers of :func:`preconditioned_sharpness`: ``"lanczos"`` (the restarted Lanczos of
:func:`lanczos_top`, in torch on the parameters' device) and ``"arpack"``
(``scipy.sparse.linalg.eigsh`` over a ``LinearOperator``, in numpy on the CPU; its per-iteration
work is far slower than a product for a million parameters)."""


def lanczos_top(matvec: Callable[[torch.Tensor], torch.Tensor], v0: torch.Tensor, *,
                tol: float = 1e-6, maxiter: int = 2000, ncv: int = 20
                ) -> tuple[float, torch.Tensor, int]:
    r"""The largest eigenvalue of a symmetric operator and its vector, by Lanczos with full
    reorthogonalisation, restarted from the best Ritz vector every ``ncv`` products.

    Converged when the Ritz residual ``|eta_j s_j| <= tol |	heta|`` (ARPACK's relative
    criterion); ``maxiter`` bounds the products. Returns ``(theta, vector, products)``; a run
    that exhausts ``maxiter`` returns its best estimate (the caller sees ``products``).
    """
    from scipy.linalg import eigh_tridiagonal

    x = v0.to(torch.float64)
    theta, count = math.nan, 0
    while count < maxiter:
        basis = [x / x.norm()]
        alpha: list[float] = []
        beta: list[float] = []
        for _ in range(min(ncv, maxiter - count)):
            q = basis[-1]
            w = matvec(q.to(v0.dtype)).to(torch.float64)
            count += 1
            alpha.append(float(q @ w))
            Q = torch.stack(basis)
            for _ in range(2):  # classical Gram-Schmidt twice: orthogonal to working precision
                w = w - Q.T @ (Q @ w)
            b = float(w.norm())
            vals, vecs = eigh_tridiagonal(np.array(alpha), np.array(beta), select="i",
                                          select_range=(len(alpha) - 1, len(alpha) - 1))
            theta, s = float(vals[0]), vecs[:, 0]
            if b * abs(s[-1]) <= tol * abs(theta) or b == 0.0:
                return theta, Q.T @ torch.as_tensor(s, dtype=torch.float64, device=Q.device), count
            beta.append(b)
            basis.append(w / b)
        x = torch.stack(basis[: len(alpha)]).T @ torch.as_tensor(s, dtype=torch.float64,
                                                                  device=x.device)
    return theta, x / x.norm(), count


def preconditioned_sharpness(loss_fn: LossFn, params: Sequence[torch.Tensor], P: torch.Tensor,
                             v0: np.ndarray | torch.Tensor | None = None, tol: float = 1e-6, *,
                             maxiter: int = 2000, ncv: int | None = None,
                             method: str = "lanczos") -> dict:
    """``lambda_max(P^{-1/2} H P^{-1/2})`` by Lanczos and, from the same gradient graph, the
    active curvature ``kappa_g`` (module doc).

    ``P``: the flat preconditioner (positive, one entry per parameter coordinate); ``v0``: a
    start vector (the previous ``eigenvector``; random when ``None``, from the global torch
    generator); ``tol``, ``maxiter``, ``ncv``: the relative accuracy, the product budget and the
    Lanczos basis size (the cost is ``products`` Hessian-vector products); ``method``: one of
    :data:`SHARPNESS_METHODS`. Returns ``{"sharpness", "active_curvature", "eigenvector", "products",
    "loss"}``; ``"arpack"``'s non-convergence (``ArpackNoConvergence``) propagates.
    """
    if method not in SHARPNESS_METHODS:
        raise InputError(f"method={method!r} is not allowed; use one of {SHARPNESS_METHODS}")
    params = list(params)
    n = sum(p.numel() for p in params)
    if P.numel() != n or not bool((P > 0).all()):
        raise InputError(f"P has {P.numel()} entries (positive required), the parameters {n}")
    op = _Operator(loss_fn, params, P)
    g = op.g.detach()
    Pd = P.detach().to(g.dtype)
    d = g / Pd
    top = d.abs().max()
    kappa = float("nan")
    if top > 0:
        d = d / top  # kappa_g is scale-free; no underflow of d^2
        kappa = float(d @ op.hvp(d) / (d @ (Pd * d)))
    if method == "arpack":
        from scipy.sparse.linalg import LinearOperator, eigsh

        v0_np = None if v0 is None else np.asarray(torch.as_tensor(v0).cpu(), dtype=float)
        lin = LinearOperator((n, n), matvec=op, dtype=np.float64)
        vals, vecs = eigsh(lin, k=1, which="LA", v0=v0_np, tol=tol, maxiter=maxiter, ncv=ncv)
        value, vector = float(vals[0]), torch.as_tensor(vecs[:, 0])
    else:
        v0_t = (torch.randn(n, dtype=torch.float64, device=g.device) if v0 is None
                else torch.as_tensor(v0, dtype=torch.float64).to(g.device))
        value, vector, _ = lanczos_top(lambda u: op.s * op.hvp(op.s * u), v0_t.to(g.dtype),
                                       tol=tol, maxiter=maxiter, ncv=ncv or 20)
    return {"sharpness": value, "active_curvature": kappa, "eigenvector": vector,
            "products": op.count, "loss": float(op.loss.detach())}


def dense_hessian(loss_fn: LossFn, params: Sequence[torch.Tensor]) -> torch.Tensor:
    """The dense Hessian (``n x n``, symmetrised) from every unit vector at once
    (``torch.autograd.grad(..., is_grads_batched=True)``): a reference for small models."""
    params = list(params)
    g = flat(torch.autograd.grad(loss_fn(), params, create_graph=True))
    n = g.numel()
    rows = torch.autograd.grad(g, params, grad_outputs=torch.eye(n, dtype=g.dtype,
                                                                  device=g.device),
                               is_grads_batched=True)
    H = torch.cat([r.reshape(n, -1) for r in rows], dim=1).detach()
    return 0.5 * (H + H.T)

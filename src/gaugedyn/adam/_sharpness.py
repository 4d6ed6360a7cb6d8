r"""The curvature an adaptive optimizer sees: Hessian-vector products and preconditioned sharpness.

For a loss :math:`L(\theta)` of any torch model (``loss_fn()`` recomputes it from the current
``params``) and a positive diagonal preconditioner :math:`P` (Adam's
:math:`\sqrt{\hat v_t} + \epsilon`, flattened over ``params`` in their order):

.. math::

    S = \lambda_{\max}\left(P^{-1/2} H P^{-1/2}\right), \qquad H = \nabla^2_\theta L,

the *preconditioned sharpness*: gradient descent preconditioned by :math:`P` with step
:math:`\eta` is linearly stable on the quadratic model while :math:`\eta S < 2` (Adam's
heavy-ball momentum moves the edge to :math:`2 (1 + \beta_1) / (1 - \beta_1)`).

- :func:`hessian_vector_product`: :math:`H u` by double backward (``torch.autograd``), never
  forming :math:`H`;
- :func:`preconditioned_sharpness`: :math:`S` and its eigenvector by Lanczos (ARPACK's
  ``eigsh``, ``which="LA"``) over a ``LinearOperator`` of products
  :math:`u \mapsto P^{-1/2} H P^{-1/2} u`, warm-startable from the previous eigenvector;
- :func:`dense_sharpness`: :math:`S` from the dense Hessian (every product with a unit vector at
  once, ``is_grads_batched=True``, then LAPACK's ``eigvalsh`` of the symmetrised matrix): the
  reference the Lanczos estimate is checked against on small models.

Everything works in the dtype of ``params`` on the CPU (the Lanczos vectors are float64 numpy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch


def _flat(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in ts])


def hessian_vector_product(
    loss_fn: Callable[[], torch.Tensor], params: Sequence[torch.Tensor], vec: torch.Tensor
) -> torch.Tensor:
    r""":math:`H u` for the flattened vector ``vec`` (:math:`u`, over ``params`` in order):
    :math:`\nabla_\theta (\nabla_\theta L \cdot u)`, detached."""
    L = loss_fn()
    g = torch.autograd.grad(L, params, create_graph=True)
    return _flat(torch.autograd.grad(_flat(g) @ vec, params)).detach()


def preconditioned_sharpness(
    loss_fn: Callable[[], torch.Tensor],
    params: Sequence[torch.Tensor],
    P: torch.Tensor,
    v0: np.ndarray | None = None,
    tol: float = 1e-6,
) -> tuple[float, np.ndarray]:
    r"""``(lambda_max, eigenvector)`` of :math:`P^{-1/2} H P^{-1/2}` by Lanczos (``eigsh``,
    ``which='LA'``, relative tolerance ``tol``); ``v0`` warm-starts it (e.g. the previous
    eigenvector)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    s = P.rsqrt()

    def mv(x):
        xt = torch.as_tensor(np.asarray(x).ravel(), dtype=torch.float64)
        return (s * hessian_vector_product(loss_fn, params, s * xt)).numpy()

    op = LinearOperator((P.numel(), P.numel()), matvec=mv, dtype=np.float64)
    vals, vecs = eigsh(op, k=1, which="LA", v0=v0, tol=tol, maxiter=2000)
    return float(vals[0]), vecs[:, 0]


def dense_sharpness(
    loss_fn: Callable[[], torch.Tensor], params: Sequence[torch.Tensor], P: torch.Tensor
) -> float:
    r""":math:`\lambda_{\max}(P^{-1/2} H P^{-1/2})` from the dense Hessian (every HVP with a
    unit vector at once, batched by ``torch.autograd.grad(..., is_grads_batched=True)``, then
    LAPACK's ``eigvalsh`` of :math:`P^{-1/2} (H + H^T)/2 \, P^{-1/2}`): the reference the Lanczos
    estimate is checked against (memory :math:`O(n^2)` for ``n`` parameters)."""
    n = P.numel()
    g = _flat(torch.autograd.grad(loss_fn(), params, create_graph=True))
    rows = torch.autograd.grad(
        g, params, grad_outputs=torch.eye(n, dtype=g.dtype), is_grads_batched=True
    )
    H = torch.cat([r.reshape(n, -1) for r in rows], dim=1).detach()
    s = P.rsqrt()
    A = (s[:, None] * (0.5 * (H + H.T)) * s[None, :]).numpy()
    return float(np.linalg.eigvalsh(A)[-1])

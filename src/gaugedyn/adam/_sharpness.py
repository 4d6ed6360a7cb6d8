r"""The curvature an adaptive optimizer sees: Hessian-vector products and preconditioned sharpness.

For a loss $L(\theta)$ of any torch model (``loss_fn()`` recomputes it from the current
``params``) and a positive diagonal preconditioner $P$ (Adam's
$\sqrt{\hat v_t} + \epsilon$, flattened over ``params`` in their order):

$$
S = \lambda_{\max}\left(P^{-1/2} H P^{-1/2}\right), \qquad H = \nabla^2_\theta L,
\qquad \kappa_g = \frac{d^\top H d}{d^\top P d}, \quad d = P^{-1} \nabla_\theta L,
$$

the *preconditioned sharpness* $S$ and the *active curvature* $\kappa_g$ (the
Rayleigh quotient of $P^{-1/2} H P^{-1/2}$ along the preconditioned gradient). Gradient
descent preconditioned by $P$ with step $\eta$ is linearly stable on the quadratic
model while $\eta S < 2$; Adam's heavy-ball EMA momentum moves the edge to
$2 (1 + \beta_1) / (1 - \beta_1)$ (`edge_threshold()`).

- `adam_preconditioner()`: Adam's $P$ for the coming step from a live optimizer;
- `hessian_vector_product()`: $H u$ by double backward (``torch.autograd``), never
  forming $H$;
- `preconditioned_sharpness()`: $S$, its eigenvector and $\kappa_g$ over one
  gradient graph, by Lanczos on the products $u \mapsto P^{-1/2} H P^{-1/2} u$,
  warm-startable from the previous eigenvector; the eigensolver is `lanczos_top()` (torch,
  on the parameters' device; the default) or ARPACK (``scipy.sparse.linalg.eigsh``,
  ``which="LA"``, over a ``LinearOperator``, float64 numpy on the CPU);
- `dense_hessian()` and `dense_sharpness()`: $H$ and $S$ from the dense
  Hessian (every product with a unit vector at once, ``is_grads_batched=True``, then LAPACK's
  ``eigvalsh`` of the symmetrised matrix): the reference the Lanczos estimates are checked
  against on small models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._errors import InputError

LossFn = Callable[[], torch.Tensor]

SHARPNESS_METHODS = ("lanczos", "arpack")
"""Eigensolvers of `preconditioned_sharpness()`: ``"lanczos"`` (`lanczos_top()`, in
torch on the parameters' device) and ``"arpack"`` (``scipy.sparse.linalg.eigsh`` over a
``LinearOperator``, in float64 numpy on the CPU; its work per iteration outside the products
grows with the parameter count and dominates at a million parameters)."""


def edge_threshold(beta1: float) -> float:
    r"""$2 (1 + \beta_1) / (1 - \beta_1)$: the edge of ``lr`` times the preconditioned
    curvature of heavy-ball EMA momentum (Adam with a frozen preconditioner) on a quadratic.

    Parameters
    ----------
    beta1 : float
        Adam's first-moment decay, in ``[0, 1)``.

    Returns
    -------
    float
        The threshold on $\eta S$.

    Raises
    ------
    InputError
        When ``beta1`` lies outside ``[0, 1)``.
    """
    if not 0.0 <= float(beta1) < 1.0:
        raise InputError(f"beta1={beta1!r} is not allowed; use a number in [0, 1)")
    return 2.0 * (1.0 + beta1) / (1.0 - beta1)


def _flat(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in ts])


@torch.no_grad()
def adam_preconditioner(
    optimizer: torch.optim.Optimizer, grads: Sequence[torch.Tensor] | None = None
) -> torch.Tensor:
    r"""Adam's $P = \sqrt{v_t / (1 - \beta_2^t)} + \epsilon$ for the coming step, flat over
    the optimizer's parameters that require gradients (group order), before ``step()``.

    $v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2$ includes this step's gradient, with coupled
    weight decay added (``Adam``'s ``weight_decay``, not ``AdamW``'s); $t$ is the step the
    optimizer is about to take. The optimizer's state is not changed.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        A ``torch.optim.Adam`` or ``torch.optim.AdamW``.
    grads : Sequence[torch.Tensor] or None
        This step's gradients, one per parameter that requires gradients, in group order;
        ``None``: each parameter's ``.grad`` (zeros where ``None``).

    Returns
    -------
    torch.Tensor
        $P$, flat over those parameters.

    Raises
    ------
    InputError
        When ``optimizer`` is not ``Adam``/``AdamW``, or ``grads`` does not hold one tensor
        per parameter that requires gradients.
    """
    if not isinstance(optimizer, torch.optim.Adam | torch.optim.AdamW):
        raise InputError(
            f"optimizer={type(optimizer).__name__} is not allowed; use torch.optim.Adam or AdamW"
        )
    params = [(p, group) for group in optimizer.param_groups for p in group["params"]]
    params = [(p, group) for p, group in params if p.requires_grad]
    if grads is not None and len(grads) != len(params):
        raise InputError(f"{len(grads)} grads given; the optimizer has {len(params)} parameters")
    out = []
    for i, (p, group) in enumerate(params):
        b2, eps = float(group["betas"][1]), float(group["eps"])
        if grads is not None:
            g = grads[i]
        else:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
        decoupled = group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW))
        if group["weight_decay"] != 0 and not decoupled:
            g = g.add(p, alpha=group["weight_decay"])
        st = optimizer.state.get(p, {})
        v = st["exp_avg_sq"] if "exp_avg_sq" in st else torch.zeros_like(p)
        t = int(st["step"]) + 1 if "step" in st else 1
        v = b2 * v + (1 - b2) * g * g
        out.append((v / (1 - b2**t)).sqrt() + eps)
    return _flat(out)


def _grad(y: torch.Tensor, params: list[torch.Tensor], **kw) -> torch.Tensor:
    """``d y / d params`` flattened, zeros for the parameters ``y`` does not use."""
    gs = torch.autograd.grad(y, params, allow_unused=True, **kw)
    return _flat([torch.zeros_like(p) if g is None else g for g, p in zip(gs, params)])


class _Graph:
    """One gradient graph of ``loss_fn()`` (built once, kept between products): ``hvp(u) = H u``
    by double backward, counting the products."""

    def __init__(self, loss_fn: LossFn, params: Sequence[torch.Tensor]):
        self.params = list(params)
        self.loss = loss_fn()
        self.g = _grad(self.loss, self.params, create_graph=True)
        self.count = 0

    def hvp(self, u: torch.Tensor) -> torch.Tensor:
        self.count += 1
        if not self.g.requires_grad:  # the loss is at most linear in the parameters
            return torch.zeros_like(u)
        return _grad(self.g @ u, self.params, retain_graph=True).detach()


def hessian_vector_product(
    loss_fn: LossFn, params: Sequence[torch.Tensor], vec: torch.Tensor
) -> torch.Tensor:
    r"""$H u = \nabla_\theta (\nabla_\theta L \cdot u)$ by double backward, never forming $H$.

    Parameters
    ----------
    loss_fn : Callable[[], torch.Tensor]
        Recomputes the scalar loss from the current ``params`` (called once).
    params : Sequence[torch.Tensor]
        The parameters differentiated, in the order of the flat vectors.
    vec : torch.Tensor
        $u$, flat over ``params`` in order.

    Returns
    -------
    torch.Tensor
        $H u$, flat and detached (zeros for parameters the loss does not use).
    """
    return _Graph(loss_fn, params).hvp(vec)


class _Arpack:
    r"""$x \mapsto P^{-1/2} H P^{-1/2} x$ in float64 numpy, the ``matvec`` of ARPACK's operator."""

    def __init__(self, graph: _Graph, s: torch.Tensor):
        self.graph, self.s = graph, s

    def __call__(self, x: np.ndarray) -> np.ndarray:
        g = self.graph.g
        u = torch.as_tensor(np.asarray(x).ravel(), dtype=g.dtype, device=g.device)
        return (self.s * self.graph.hvp(self.s * u)).double().cpu().numpy()


def lanczos_top(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    v0: torch.Tensor,
    *,
    tol: float = 1e-6,
    maxiter: int = 2000,
    ncv: int = 20,
) -> tuple[float, torch.Tensor, int]:
    r"""The largest eigenvalue of a symmetric operator and its unit vector, by Lanczos with full
    reorthogonalisation, restarted from the best Ritz vector every ``ncv`` products.

    Converged when the Ritz residual $|\beta_j s_j| \le \mathrm{tol}\,|\theta|$ (ARPACK's
    relative criterion). The basis is float64.

    Parameters
    ----------
    matvec : Callable[[torch.Tensor], torch.Tensor]
        The symmetric operator; takes and returns vectors in ``v0``'s dtype and device.
    v0 : torch.Tensor
        The start vector (nonzero; normalised here).
    tol : float
        The relative residual at which the estimate counts as converged.
    maxiter : int
        The most products spent; at least 1.
    ncv : int
        Lanczos vectors before a restart; at least 2.

    Returns
    -------
    tuple of (float, torch.Tensor, int)
        ``(theta, vector, products)``: the eigenvalue estimate, its unit vector (float64) and
        the products spent. A run that exhausts ``maxiter`` returns its best estimate (the
        caller sees ``products``), and a non-finite product (a diverged model) ends it with
        ``theta = nan``.

    Raises
    ------
    InputError
        When ``ncv < 2`` or ``maxiter < 1``.
    """
    from scipy.linalg import eigh_tridiagonal

    if int(ncv) < 2 or int(maxiter) < 1:
        raise InputError(f"ncv={ncv!r}, maxiter={maxiter!r}: allowed: ncv >= 2, maxiter >= 1")
    x = v0.to(torch.float64)
    theta, count = math.nan, 0
    while count < maxiter:
        basis = [x / x.norm()]
        alpha: list[float] = []
        beta: list[float] = []
        for _ in range(min(int(ncv), maxiter - count)):
            q = basis[-1]
            w = matvec(q.to(v0.dtype)).to(torch.float64)
            count += 1
            alpha.append(float(q @ w))
            Q = torch.stack(basis)
            for _ in range(2):  # classical Gram-Schmidt twice: orthogonal to working precision
                w = w - Q.T @ (Q @ w)
            b = float(w.norm())
            if not (math.isfinite(alpha[-1]) and math.isfinite(b)):  # a non-finite product
                return math.nan, x / x.norm(), count
            k = len(alpha) - 1
            vals, vecs = eigh_tridiagonal(
                np.array(alpha), np.array(beta), select="i", select_range=(k, k)
            )
            theta, s = float(vals[0]), vecs[:, 0]
            if b * abs(s[-1]) <= tol * abs(theta) or b == 0.0:
                return theta, Q.T @ torch.as_tensor(s, dtype=torch.float64, device=Q.device), count
            beta.append(b)
            basis.append(w / b)
        Q = torch.stack(basis[: len(alpha)])
        x = Q.T @ torch.as_tensor(s, dtype=torch.float64, device=Q.device)
    return theta, x / x.norm(), count


def _start(v0: np.ndarray | torch.Tensor | None, n: int, device: torch.device) -> torch.Tensor:
    """The Lanczos start: ``v0``, or a standard normal vector of the fixed generator seed 0
    (drawn on the CPU, so the same on every device)."""
    if v0 is None:
        v0 = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    return torch.as_tensor(v0, dtype=torch.float64).to(device)


def preconditioned_sharpness(
    loss_fn: LossFn,
    params: Sequence[torch.Tensor],
    P: torch.Tensor,
    v0: np.ndarray | torch.Tensor | None = None,
    tol: float = 1e-6,
    *,
    maxiter: int = 2000,
    ncv: int | None = None,
    method: str = "lanczos",
) -> dict:
    r"""$S$ and, from the same gradient graph, $\kappa_g$ (module doc).

    Without ``v0``, ``"lanczos"`` starts from a fixed normal vector and ``"arpack"`` from
    ARPACK's own random vector.

    Parameters
    ----------
    loss_fn : Callable[[], torch.Tensor]
        Recomputes the scalar loss from the current ``params`` (called once).
    params : Sequence[torch.Tensor]
        The parameters differentiated, in the order of the flat vectors.
    P : torch.Tensor
        The flat preconditioner, positive, one entry per coordinate of ``params``
        (`adam_preconditioner()`).
    v0 : numpy.ndarray or torch.Tensor or None
        A start vector (the previous ``eigenvector``), or ``None``.
    tol : float
        The relative accuracy of the eigenvalue.
    maxiter : int
        The product budget.
    ncv : int or None
        The Lanczos basis size (``None``: 20 for ``"lanczos"``, ARPACK's default for
        ``"arpack"``).
    method : str
        The eigensolver, one of `SHARPNESS_METHODS`.

    Returns
    -------
    dict
        ``sharpness`` ($S$), ``active_curvature`` ($\kappa_g$; ``nan`` when the gradient is
        zero), ``eigenvector`` (float64 tensor), ``products`` (Hessian-vector products spent,
        the cost) and ``loss``.

    Raises
    ------
    InputError
        When ``method`` is not one of `SHARPNESS_METHODS`, or ``P`` has the wrong number of
        entries or a non-positive one.
    scipy.sparse.linalg.ArpackNoConvergence
        When ARPACK does not converge (the torch Lanczos returns its best estimate instead).
    """
    if method not in SHARPNESS_METHODS:
        raise InputError(f"method={method!r} is not allowed; use one of {SHARPNESS_METHODS}")
    params = list(params)
    n = sum(p.numel() for p in params)
    if P.numel() != n or not bool((P > 0).all()):
        raise InputError(f"P has {P.numel()} entries (positive required), the parameters {n}")
    graph = _Graph(loss_fn, params)
    g = graph.g.detach()
    Pd = P.detach().to(g.dtype)
    s = Pd.rsqrt()
    d = g / Pd
    top = d.abs().max()
    kappa = math.nan
    if top > 0:
        d = d / top  # kappa_g is scale-free; no underflow of d^2
        kappa = float(d @ graph.hvp(d) / (d @ (Pd * d)))
    if method == "arpack":
        from scipy.sparse.linalg import LinearOperator, eigsh

        start = None if v0 is None else np.asarray(torch.as_tensor(v0).cpu(), dtype=float)
        lin = LinearOperator((n, n), matvec=_Arpack(graph, s), dtype=np.float64)
        vals, vecs = eigsh(lin, k=1, which="LA", v0=start, tol=tol, maxiter=maxiter, ncv=ncv)
        value, vector = float(vals[0]), torch.as_tensor(vecs[:, 0])
    else:
        value, vector, _ = lanczos_top(
            lambda u: s * graph.hvp(s * u),
            _start(v0, n, g.device).to(g.dtype),
            tol=tol,
            maxiter=maxiter,
            ncv=ncv or 20,
        )
    return {
        "sharpness": value,
        "active_curvature": kappa,
        "eigenvector": vector,
        "products": graph.count,
        "loss": float(graph.loss.detach()),
    }


def dense_hessian(loss_fn: LossFn, params: Sequence[torch.Tensor]) -> torch.Tensor:
    r"""The dense Hessian $(H + H^\top)/2$, every product with a unit vector at once
    (``torch.autograd.grad(..., is_grads_batched=True)``): the reference for small models.

    Parameters
    ----------
    loss_fn : Callable[[], torch.Tensor]
        Recomputes the scalar loss from the current ``params`` (called once).
    params : Sequence[torch.Tensor]
        The parameters differentiated, in the order of the flat vectors.

    Returns
    -------
    torch.Tensor
        ``(n, n)`` for ``n`` parameter coordinates (memory $O(n^2)$), detached.
    """
    params = list(params)
    g = _flat(torch.autograd.grad(loss_fn(), params, create_graph=True))
    n = g.numel()
    eye = torch.eye(n, dtype=g.dtype, device=g.device)
    rows = torch.autograd.grad(g, params, grad_outputs=eye, is_grads_batched=True)
    H = torch.cat([r.reshape(n, -1) for r in rows], dim=1).detach()
    return 0.5 * (H + H.T)


def dense_sharpness(loss_fn: LossFn, params: Sequence[torch.Tensor], P: torch.Tensor) -> float:
    r"""$\lambda_{\max}(P^{-1/2} H P^{-1/2})$ from `dense_hessian()` (LAPACK's
    ``eigvalsh`` of $P^{-1/2} (H + H^\top)/2 \, P^{-1/2}$): the reference the Lanczos
    estimate is checked against.

    Parameters
    ----------
    loss_fn : Callable[[], torch.Tensor]
        Recomputes the scalar loss from the current ``params`` (called once).
    params : Sequence[torch.Tensor]
        The parameters differentiated, in the order of the flat vectors.
    P : torch.Tensor
        The flat positive preconditioner, one entry per coordinate of ``params``.

    Returns
    -------
    float
        The preconditioned sharpness $S$.
    """
    s = P.rsqrt()
    A = (s[:, None] * dense_hessian(loss_fn, params) * s[None, :]).cpu().numpy()
    return float(np.linalg.eigvalsh(A)[-1])

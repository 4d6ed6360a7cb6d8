"""Full-batch Adam at its edge of stability: the active curvature and its companions.

At step ``t`` with gradient ``g`` and Adam's preconditioner ``P = diag(sqrt(v^_t) + eps)``
(``v^_t`` the bias-corrected second moment including ``g_t``), measured before the step:

- active curvature ``kappa_g = d^T H d / d^T P d`` with ``d = P^-1 g``: a Rayleigh quotient of
  ``P^-1/2 H P^-1/2`` (one Hessian-vector product through ``torch.autograd``);
- preconditioned sharpness ``S = lambda_max(P^-1/2 H P^-1/2)`` every ``lanczos_every`` steps
  (``scipy.sparse.linalg.eigsh``, ARPACK's Lanczos, over a ``LinearOperator`` of HVPs, warm
  started from the previous eigenvector);
- secant curvature ``dtheta^T (g_t - g_{t-1}) / dtheta^T P dtheta``, ``dtheta = theta_t - theta_{t-1}``;
- cosine between consecutive gradients;
- loss of the iterate average ``bar theta <- decay bar theta + (1 - decay) theta`` (decay 0.9).

The stability threshold of heavy-ball EMA momentum on a quadratic is
``lr * curvature = 2 (1 + beta1) / (1 - beta1)`` (:func:`threshold`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..._errors import InputError

LOSSES = ("mse", "ce")


def threshold(beta1: float) -> float:
    """``2 (1 + beta1) / (1 - beta1)``: the edge of ``lr`` times the preconditioned curvature."""
    return 2.0 * (1.0 + beta1) / (1.0 - beta1)


def _setup(loss: str, n_samples: int, seed: int):
    from ..adam_split.tasks import _digits

    if loss not in LOSSES:
        raise InputError(f"loss={loss!r} is not allowed; choose one of {list(LOSSES)}")
    X, y = _digits()
    X = torch.as_tensor(X[:n_samples], dtype=torch.float64)
    y = torch.as_tensor(y[:n_samples])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).double()
    if loss == "ce":
        return model, lambda: nn.functional.cross_entropy(model(X), y)
    onehot = nn.functional.one_hot(y, 10).double()
    return model, lambda: 0.5 * ((model(X) - onehot) ** 2).sum(-1).mean()


def _flat(ts) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in ts])


def _hvp(loss_fn, params, vec: torch.Tensor) -> torch.Tensor:
    L = loss_fn()
    g = torch.autograd.grad(L, params, create_graph=True)
    return _flat(torch.autograd.grad(_flat(g) @ vec, params)).detach()


def preconditioned_sharpness(loss_fn, params, P: torch.Tensor, v0=None, tol: float = 1e-6):
    """``(lambda_max, eigenvector)`` of ``P^-1/2 H P^-1/2`` by Lanczos (``eigsh``, ``which='LA'``)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    s = P.rsqrt()

    def mv(x):
        xt = torch.as_tensor(np.asarray(x).ravel(), dtype=torch.float64)
        return (s * _hvp(loss_fn, params, s * xt)).numpy()

    op = LinearOperator((P.numel(), P.numel()), matvec=mv, dtype=np.float64)
    vals, vecs = eigsh(op, k=1, which="LA", v0=v0, tol=tol, maxiter=2000)
    return float(vals[0]), vecs[:, 0]


def _moments(opt, params, g_list, beta2, eps):
    """``P = sqrt(v^_t) + eps`` including this step's gradient, before ``opt.step()``."""
    out = []
    for p, g in zip(params, g_list):
        st = opt.state.get(p, {})
        v_prev = st["exp_avg_sq"] if "exp_avg_sq" in st else torch.zeros_like(p)
        t = int(st["step"]) + 1 if "step" in st else 1
        v = beta2 * v_prev + (1 - beta2) * g * g
        out.append((v / (1 - beta2**t)).sqrt() + eps)
    return _flat(out)


def run_edge(loss: str, lr: float, beta1: float, beta2: float, steps: int, seed: int,
             n_samples: int = 512, lanczos_every: int = 200, eps: float = 1e-8,
             ema_decay: float = 0.9) -> dict:
    """Train with ``torch.optim.Adam`` full batch and record the module's observables per step.

    Returns arrays ``loss``, ``ema_loss``, ``kappa_g``, ``secant``, ``cosine`` (``nan`` at step
    0) and ``lanczos_step``, ``sharpness``, ``kappa_at_lanczos`` (sampled every ``lanczos_every``
    steps), plus ``threshold``.
    """
    model, loss_fn = _setup(loss, n_samples, seed)
    params = [p for p in model.parameters()]
    opt = torch.optim.Adam(params, lr=lr, betas=(beta1, beta2), eps=eps)
    rec = {k: np.full(steps, np.nan) for k in ("loss", "ema_loss", "kappa_g", "secant", "cosine")}
    lz_t, lz_s, lz_k = [], [], []
    ema = _flat(params).detach().clone()
    prev_theta = prev_g = None
    v0 = None
    for t in range(steps):
        theta = _flat(params).detach().clone()
        L = loss_fn()
        g_list = torch.autograd.grad(L, params, create_graph=True)
        g = _flat(g_list)
        P = _moments(opt, params, [x.detach() for x in g_list], beta2, eps)
        d = (g.detach() / P)
        Hd = _flat(torch.autograd.grad(g @ d, params)).detach()
        g = g.detach()
        rec["loss"][t] = float(L.detach())
        rec["kappa_g"][t] = float(d @ Hd / (d @ (P * d)))
        if prev_g is not None:
            dth = theta - prev_theta
            rec["secant"][t] = float(dth @ (g - prev_g) / (dth @ (P * dth)))
            rec["cosine"][t] = float(g @ prev_g / (g.norm() * prev_g.norm()))
        if t % lanczos_every == 0 or t == steps - 1:
            S, v0 = preconditioned_sharpness(loss_fn, params, P, v0)
            lz_t.append(t)
            lz_s.append(S)
            lz_k.append(rec["kappa_g"][t])
        for p, gi in zip(params, g_list):
            p.grad = gi.detach()
        opt.step()
        ema = ema_decay * ema + (1 - ema_decay) * _flat(params).detach()
        rec["ema_loss"][t] = _loss_at(model, loss_fn, params, ema)
        prev_theta, prev_g = theta, g
        if not np.isfinite(rec["loss"][t]):
            break
    return {**rec, "lanczos_step": np.array(lz_t), "sharpness": np.array(lz_s),
            "kappa_at_lanczos": np.array(lz_k), "threshold": threshold(beta1)}


def _loss_at(model, loss_fn, params, vec) -> float:
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(vec, params)
        value = float(loss_fn())
        for p, s in zip(params, saved):
            p.copy_(s)
    return value

"""Full-batch Adam at its edge of stability: the active curvature and its companions.

At step ``t`` with gradient ``g`` and Adam's preconditioner ``P = diag(sqrt(v^_t) + eps)``
(``v^_t`` the bias-corrected second moment including ``g_t``), measured before the step:

- active curvature ``kappa_g = d^T H d / d^T P d`` with ``d = P^-1 g``: a Rayleigh quotient of
  ``P^-1/2 H P^-1/2`` (one Hessian-vector product through ``torch.autograd``);
- preconditioned sharpness ``S = lambda_max(P^-1/2 H P^-1/2)`` every ``lanczos_every`` steps
  (``scipy.sparse.linalg.eigsh``, ARPACK's Lanczos, over a ``LinearOperator`` of HVPs, warm
  started from the previous eigenvector: `gaugedyn.adam.preconditioned_sharpness()` with
  ``method="arpack"``);
- secant curvature ``dtheta^T (g_t - g_{t-1}) / dtheta^T P dtheta``, ``dtheta = theta_t - theta_{t-1}``;
- cosine between consecutive gradients;
- loss of the iterate average ``bar theta <- decay bar theta + (1 - decay) theta`` (decay 0.9);
- the frozen-``v`` copies (``freeze_fractions``): per fraction ``f``, at the first Lanczos
  step ``t_f >= freeze_after`` with ``lr S >= f * threshold`` (before the edge for ``f`` below
  ``EDGE_FRACTION``) a copy of the run continues with the preconditioner held at its value
  ``P(t_f)`` (``m`` still updated, bias-corrected by the step count), so the negative feedback
  through ``v`` is cut; its loss every step and its preconditioned sharpness
  ``lambda_max(P(t_f)^-1/2 H P(t_f)^-1/2)`` at the same Lanczos steps.

`diagonal_quadratic()` is the exactly solvable companion (``L = sum h_i theta_i^2 / 2``,
``S = max h_i / P_i`` and ``kappa_g`` in closed form). The Hessian-vector product, the Lanczos
estimate and the dense eigensolver it is checked against are the library's
(`gaugedyn.adam.preconditioned_sharpness()`, `gaugedyn.adam.dense_sharpness()`).

The stability threshold of heavy-ball EMA momentum on a quadratic is
``lr * curvature = 2 (1 + beta1) / (1 - beta1)`` (`threshold()`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..._errors import InputError
from ...adam import (
    adam_preconditioner,
    dense_sharpness,
    edge_threshold,
    effective_exponent,
    preconditioned_sharpness,
)
from ...training import load_digits
from ._protocol import ADAM_EPS, LANCZOS_TOL

LOSSES = ("mse", "ce", "ce_noisy")
HIDDEN = {"mse": 32, "ce": 32, "ce_noisy": 4}
"""Hidden width per loss: ``ce_noisy`` is a narrow network on labels with a share
``_batched.LABEL_NOISE`` replaced, so that it cannot fit the training set (its loss stays near
1.5 where the width-32 network's falls to zero)."""


threshold = edge_threshold
"""``2 (1 + beta1) / (1 - beta1)``: the edge of ``lr`` times the preconditioned curvature
(`gaugedyn.adam.edge_threshold()`)."""


def _setup(loss: str, n_samples: int, seed: int, hidden: int | None = None):
    if loss not in LOSSES:
        raise InputError(f"loss={loss!r} is not allowed; choose one of {list(LOSSES)}")
    hidden = HIDDEN[loss] if hidden is None else hidden
    X, y = load_digits()
    X = torch.as_tensor(X[:n_samples], dtype=torch.float64)
    y = torch.as_tensor(y[:n_samples])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10)).double()
    if loss == "ce_noisy":
        from ._batched import noisy_labels

        y = noisy_labels(y)
    if loss in ("ce", "ce_noisy"):
        return model, lambda: nn.functional.cross_entropy(model(X), y)
    onehot = nn.functional.one_hot(y, 10).double()
    return model, lambda: 0.5 * ((model(X) - onehot) ** 2).sum(-1).mean()


def _sharpness(loss_fn, params, P, v0=None) -> tuple[float, torch.Tensor]:
    """``(S, eigenvector)`` by ARPACK (`preconditioned_sharpness()`, ``method="arpack"``,
    relative tolerance ``LANCZOS_TOL``), warm-started from ``v0``."""
    out = preconditioned_sharpness(loss_fn, params, P, v0, LANCZOS_TOL, method="arpack")
    return out["sharpness"], out["eigenvector"]


def _flat(ts) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in ts])


def run_edge(
    loss: str,
    lr: float,
    beta1: float,
    beta2: float,
    steps: int,
    seed: int,
    n_samples: int = 512,
    lanczos_every: int = 200,
    eps: float = ADAM_EPS,
    ema_decay: float = 0.9,
    freeze_fractions: tuple[float, ...] = (),
    freeze_after: int = 0,
    lanczos_fine: int | None = None,
    exponent_every: int = 0,
) -> dict:
    """Train with ``torch.optim.Adam`` full batch and record the module's observables per step.

    Returns arrays ``loss``, ``ema_loss``, ``kappa_g``, ``secant``, ``cosine`` (``nan`` at step
    0) and ``lanczos_step``, ``sharpness``, ``kappa_at_lanczos`` (at the Lanczos steps), plus
    ``threshold``. Lanczos runs every ``lanczos_fine`` steps (default ``lanczos_every``) until
    the adaptive run has reached the edge (``lr S >= EDGE_FRACTION thr``, at or after
    ``freeze_after``) and every copy is frozen, then every ``lanczos_every`` steps, and at the
    last step. Per ``f`` of ``freeze_fractions``, a copy continues from the first Lanczos step
    ``t >= freeze_after`` with ``lr S >= f thr`` with ``P`` held at ``P(t)``: ``freeze_step``
    and ``freeze_ratio`` (``lr S / thr`` there; ``-1`` and ``nan`` when never reached),
    ``frozen_sharpness`` ``(copies, Lanczos steps)`` with the held ``P`` (``nan`` before the
    freeze and after a divergence of the copy) and ``frozen_loss`` ``(copies, steps)``.
    """
    from ._protocol import EDGE_FRACTION

    fine = lanczos_every if lanczos_fine is None else int(lanczos_fine)
    model, loss_fn = _setup(loss, n_samples, seed)
    params = [p for p in model.parameters()]
    opt = torch.optim.Adam(params, lr=lr, betas=(beta1, beta2), eps=eps)
    thr = threshold(beta1)
    K = len(freeze_fractions)
    rec = {k: np.full(steps, np.nan) for k in ("loss", "ema_loss", "kappa_g", "secant", "cosine")}
    frozen_loss = np.full((K, steps), np.nan)
    lz: dict[str, list] = {"t": [], "S": [], "k": [], "f": []}
    ex: dict[str, list] = {"t": [], "n": [], "w": []}
    ema = _flat(params).detach().clone()
    prev: tuple | None = None
    fr: dict[str, Any] = {
        "v0": None,
        "copies": [None] * K,
        "t": np.full(K, -1, np.int64),
        "r": np.full(K, np.nan),
    }
    reached = False
    for t in range(steps):
        theta, g_list, g, P = _observe(rec, t, loss_fn, params, opt, prev)
        dense = not reached or (fr["t"] < 0).any()
        lanczos = t % (fine if dense else lanczos_every) == 0 or t == steps - 1
        if lanczos:
            ratio = _lanczos(lz, fr, t, loss_fn, params, P, lr / thr, rec["kappa_g"][t])
            reached = reached or (t >= freeze_after and ratio >= EDGE_FRACTION)
            for k, f in enumerate(freeze_fractions):
                if fr["t"][k] < 0 and t >= freeze_after and ratio >= f:
                    fr["copies"][k] = (theta.clone(), _adam_m(opt, params), P.clone(), fr["v0"])
                    fr["t"][k], fr["r"][k] = t, ratio
        for k, copy in enumerate(fr["copies"]):
            if copy is not None:
                fr["copies"][k] = _frozen_step(
                    model,
                    loss_fn,
                    params,
                    copy,
                    k,
                    (lr, beta1, t),
                    lanczos,
                    frozen_loss[k],
                    lz["f"],
                )
        if exponent_every and reached and t % exponent_every == 0:
            u = _adam_update(opt, params, g, P, lr, beta1)
            e = effective_exponent(_line(model, loss_fn, params, theta, u))
            ex["t"].append(t)
            ex["n"].append(e["exponent"])
            ex["w"].append(e["wall"])
        for p, gi in zip(params, g_list):
            p.grad = gi.detach()
        opt.step()
        ema = ema_decay * ema + (1 - ema_decay) * _flat(params).detach()
        rec["ema_loss"][t] = _loss_at(model, loss_fn, params, ema)
        prev = (theta, g)
        if not np.isfinite(rec["loss"][t]):
            break
    return {
        **rec,
        "lanczos_step": np.array(lz["t"]),
        "sharpness": np.array(lz["S"]),
        "kappa_at_lanczos": np.array(lz["k"]),
        "threshold": thr,
        "freeze_fractions": np.asarray(freeze_fractions, float),
        "freeze_step": fr["t"],
        "freeze_ratio": fr["r"],
        "frozen_sharpness": np.array(lz["f"], float).reshape(len(lz["t"]), K).T,
        "frozen_loss": frozen_loss,
        "exponent_step": np.array(ex["t"], dtype=np.int64),
        "exponent": np.array(ex["n"], float),
        "exponent_wall": np.array(ex["w"], float),
    }


def _observe(rec, t, loss_fn, params, opt, prev):
    """The step's loss, gradient and ``P`` (before the step) and its per-step observables into
    ``rec``; returns ``(theta, g_list, g, P)``."""
    theta = _flat(params).detach().clone()
    L = loss_fn()
    g_list = torch.autograd.grad(L, params, create_graph=True)
    g = _flat(g_list)
    P = adam_preconditioner(opt, [x.detach() for x in g_list])
    d = g.detach() / P
    Hd = _flat(torch.autograd.grad(g @ d, params)).detach()
    g = g.detach()
    rec["loss"][t] = float(L.detach())
    rec["kappa_g"][t] = float(d @ Hd / (d @ (P * d)))
    if prev is not None:
        prev_theta, prev_g = prev
        dth = theta - prev_theta
        rec["secant"][t] = float(dth @ (g - prev_g) / (dth @ (P * dth)))
        rec["cosine"][t] = float(g @ prev_g / (g.norm() * prev_g.norm()))
    return theta, g_list, g, P


def _lanczos(lz, fr, t, loss_fn, params, P, scale, kappa) -> float:
    """The preconditioned sharpness at step ``t`` into ``lz`` (warm started from ``fr["v0"]``,
    a row of ``nan`` for the copies); returns ``lr S / thr`` (``scale = lr / thr``)."""
    S, fr["v0"] = _sharpness(loss_fn, params, P, fr["v0"])
    lz["t"].append(t)
    lz["S"].append(S)
    lz["k"].append(kappa)
    lz["f"].append([np.nan] * len(fr["copies"]))
    return scale * S


def _adam_update(opt, params, g, P, lr, beta1) -> torch.Tensor:
    """The update ``-lr m^_t / P`` Adam is about to take (``m_t`` including ``g``)."""
    st = opt.state.get(params[0], {})
    t = int(st["step"]) + 1 if "step" in st else 1
    m = beta1 * _adam_m(opt, params) + (1 - beta1) * g
    return -lr * (m / (1 - beta1**t)) / P


def _line(model, loss_fn, params, theta, u):
    """``s -> L(theta + s u)`` (the parameters restored after each call)."""

    def f(s: float) -> float:
        return _loss_at(model, loss_fn, params, theta + s * u)

    return f


def _adam_m(opt, params) -> torch.Tensor:
    """Adam's first moment ``m`` of every parameter, flat (zeros before the first step)."""
    st = [opt.state.get(p, {}) for p in params]
    return _flat(
        [s_["exp_avg"] if "exp_avg" in s_ else torch.zeros_like(p) for s_, p in zip(st, params)]
    ).clone()


def _frozen_step(model, loss_fn, params, copy, k, step, lanczos, loss_row, lz_f):
    """One step of a frozen-``v`` copy at step ``t`` (its loss into ``loss_row[t]`` and, at a
    Lanczos step, its preconditioned sharpness with the held ``P`` into the last row of
    ``lz_f`` at the copy's column ``k``); ``step`` is ``(lr, beta1, t)``; ``None`` once the
    copy has diverged."""
    theta, m, P, vf = copy
    lr, beta1, t = step
    saved = [p.detach().clone() for p in params]
    try:
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(theta, params)
        L = loss_fn()
        g = _flat(torch.autograd.grad(L, params)).detach()
        loss_row[t] = float(L.detach())
        if lanczos:
            S, vf = _sharpness(loss_fn, params, P, vf)
            lz_f[-1][k] = S
        m = beta1 * m + (1 - beta1) * g
        theta = theta - lr * (m / (1 - beta1 ** (t + 1))) / P
    finally:
        with torch.no_grad():
            for p, s_ in zip(params, saved):
                p.copy_(s_)
    if not (np.isfinite(loss_row[t]) and torch.isfinite(theta).all()):
        return None
    return (theta, m, P, vf)


def lanczos_check(
    lr: float,
    beta1: float,
    beta2: float,
    seed: int,
    warm_steps: int = 50,
    n_samples: int = 64,
    hidden: int = 8,
    eps: float = ADAM_EPS,
) -> dict:
    """Lanczos (`preconditioned_sharpness()`) against `dense_sharpness()` on a small
    digits MLP (64-``hidden``-10, MSE) after ``warm_steps`` Adam steps, with Adam's ``P``."""
    model, loss_fn = _setup("mse", n_samples, seed, hidden)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr, betas=(beta1, beta2), eps=eps)
    for _ in range(warm_steps):
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
    g_list = torch.autograd.grad(loss_fn(), params)
    P = adam_preconditioner(opt, list(g_list))
    S, _ = _sharpness(loss_fn, params, P)
    D = dense_sharpness(loss_fn, params, P)
    return {"lanczos": S, "dense": D, "n_params": int(P.numel())}


def diagonal_quadratic(
    beta1: float,
    beta2: float,
    lr: float,
    steps: int,
    seed: int,
    dim: int = 50,
    h_range: tuple = (1.0, 100.0),
    eps: float = ADAM_EPS,
) -> dict:
    """Full-batch Adam (bias-corrected) on ``L = sum_i h_i theta_i^2 / 2``, ``h`` log-spaced
    over ``h_range``, ``theta_0 ~ N(0, 1)``. Per step, before the step: ``P = sqrt(v^) + eps``,
    the preconditioned sharpness ``S = max_i h_i / P_i`` and the active curvature
    ``kappa_g = sum_i h_i d_i^2 / sum_i P_i d_i^2`` (``d = g / P``), both exact."""
    rng = np.random.default_rng(seed)
    h = np.logspace(np.log10(h_range[0]), np.log10(h_range[1]), dim)
    th = rng.standard_normal(dim)
    m, v = np.zeros(dim), np.zeros(dim)
    out = {k: np.empty(steps) for k in ("loss", "kappa_g", "sharpness")}
    for t in range(1, steps + 1):
        g = h * th
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        P = np.sqrt(v / (1 - beta2**t)) + eps
        d = g / P
        top = np.max(np.abs(d))
        d = d / top if top > 0 else d  # kappa_g is scale-free; no underflow of d^2
        out["loss"][t - 1] = 0.5 * h @ th**2
        out["kappa_g"][t - 1] = (h @ d**2) / (P @ d**2) if top > 0 else np.nan
        out["sharpness"][t - 1] = np.max(h / P)
        th = th - lr * (m / (1 - beta1**t)) / P
    return out | {"threshold": threshold(beta1)}


def _loss_at(model, loss_fn, params, vec) -> float:
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(vec, params)
        value = float(loss_fn())
        for p, s in zip(params, saved):
            p.copy_(s)
    return value

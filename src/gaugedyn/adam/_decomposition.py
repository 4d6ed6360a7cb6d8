r"""The exact sign / lag / remainder decomposition of one Adam update.

Notation (PyTorch's ``torch.optim.Adam``, ``eps`` outside the root), $g_t$ the effective gradient
(coupled weight decay included, sign flipped under ``maximize``):

$$
\begin{aligned}
m_t &= \beta_1 m_{t-1} + (1-\beta_1) g_t, & v_t &= \beta_2 v_{t-1} + (1-\beta_2) g_t^2, &
w_t &= \beta_2 w_{t-1} + (1-\beta_2) g_t, \\
\hat m &= m_t/(1-\beta_1^t), & \hat v &= v_t/(1-\beta_2^t), & \hat w &= w_t/(1-\beta_2^t), \\
s &= \sqrt{\hat v}, & d &= s + \epsilon, & u &= \hat m / d.
\end{aligned}
$$

$w$ is the first moment taken with the second moment's memory. The split (see ``_derivation``):

$$
\begin{aligned}
\text{sign} &= \operatorname{sign}(g_t), \\
\text{lag} &= (\hat m - \hat w)/d && \text{(identically 0 when } \beta_1 = \beta_2\text{)}, \\
\text{transition} &= \operatorname{sign}(\hat w) - \operatorname{sign}(g_t)
&& \text{(0, } \pm 1 \text{ or } \pm 2\text{: a sign change inside the window)}, \\
\text{ratio} &= \hat w/s - \operatorname{sign}(\hat w)
= -\operatorname{sign}(\hat w)\bigl(1 - 1/\sqrt{1 + \sigma^2/\hat w^2}\bigr), \\
\text{eps} &= \hat w/d - \hat w/s = -\epsilon\,\hat w/(s d),
\end{aligned}
$$

and $\text{sign} + \text{lag} + \text{transition} + \text{ratio} + \text{eps} = u$ exactly in exact
arithmetic. Where $s = 0$ (an all-zero history) ratio $= 0$, transition $= -\operatorname{sign}(g_t)$
and eps $= \hat w/d$; if also $\epsilon = 0$ then $d$ is taken as 1 (PyTorch would produce 0/0
there), so everything is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError

PARTS: tuple[str, ...] = ("sign", "lag", "transition", "ratio", "eps")
RESIDUAL_PARTS: tuple[str, ...] = ("transition", "ratio", "eps")


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _check_betas(beta1: float, beta2: float, eps: float) -> None:
    for name, b in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= float(b) < 1.0:
            raise InputError(f"{name}={b!r} is not allowed; it must lie in [0, 1)")
    if not float(eps) >= 0.0:
        raise InputError(f"eps={eps!r} is not allowed; it must be >= 0")


@dataclass(frozen=True)
class AdamParts:
    r"""The five parts of an Adam update $u = \hat m/(\sqrt{\hat v}+\epsilon)$ (arrays or tensors alike).

    ``sign + lag + transition + ratio + eps == update`` to round-off; ``residual`` is
    ``transition + ratio + eps``. ``m_hat``, ``w_hat`` and ``s`` are the bias-corrected moments
    and ``sqrt(v^)`` that produced them.
    """

    sign: Any
    lag: Any
    transition: Any
    ratio: Any
    eps: Any
    update: Any
    m_hat: Any
    w_hat: Any
    s: Any

    @property
    def residual(self):
        return self.transition + self.ratio + self.eps

    def total(self):
        """Sum of the five parts (equals ``update`` to round-off)."""
        return self.sign + self.lag + self.transition + self.ratio + self.eps

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in (*PARTS, "update")}


def split_update(m_hat, w_hat, s, grad, eps: float) -> AdamParts:
    r"""Split $u = \hat m/(s + \epsilon)$ into sign, lag, transition, ratio and eps parts.

    Works on numpy arrays and torch tensors (same dtype and device throughout).
    Contract: ``sum(parts) == update`` to round-off, ``lag`` is exactly zero wherever
    ``m_hat == w_hat`` bitwise.

    Parameters
    ----------
    m_hat : array_like or torch.Tensor
        The bias-corrected first moment $\hat m$ (memory $\beta_1$).
    w_hat : array_like or torch.Tensor
        The bias-corrected first moment with the second moment's memory $\beta_2$, $\hat w$.
    s : array_like or torch.Tensor
        $\sqrt{\hat v}$.
    grad : array_like or torch.Tensor
        The current effective gradient $g_t$.
    eps : float
        Adam's $\epsilon$ (outside the root).

    Returns
    -------
    AdamParts
        The five parts, the update and the inputs ``m_hat``, ``w_hat``, ``s``.
    """
    where: Any
    zeros: Any
    sign: Any
    if _is_torch(m_hat):
        import torch

        where, zeros, sign = torch.where, torch.zeros_like, torch.sign
    else:
        where, zeros, sign = np.where, np.zeros_like, np.sign
        m_hat, w_hat, s, grad = (np.asarray(a, dtype=float) for a in (m_hat, w_hat, s, grad))
    d = s + eps
    pos = s > 0
    s_safe = where(pos, s, 1.0 + zeros(s))
    d = where(d > 0, d, 1.0 + zeros(d))
    update = m_hat / d
    lag = (m_hat - w_hat) / d
    sg = sign(grad)
    sw = sign(w_hat)
    ratio_full = w_hat / s_safe
    ratio = where(pos, ratio_full - sw, zeros(s))
    transition = where(pos, sw - sg, -sg)
    eps_part = where(pos, -eps * w_hat / (s_safe * d), w_hat / d)
    return AdamParts(sg, lag, transition, ratio, eps_part, update, m_hat, w_hat, s)


def bias_corrections(step: float, beta1: float, beta2: float) -> tuple[float, float, float]:
    r"""$(1 - \beta_1^t, 1 - \beta_2^t, \sqrt{1 - \beta_2^t})$ computed exactly as PyTorch's single-tensor path."""
    bc1 = 1 - beta1**step
    bc2 = 1 - beta2**step
    return bc1, bc2, bc2**0.5


def decompose_state(
    exp_avg, exp_avg_sq, slow_avg, grad, step: int, beta1: float, beta2: float, eps: float
) -> AdamParts:
    r"""Decompose from the streaming state $(m_t, v_t, w_t, g_t, t)$.

    $s = \sqrt{v_t}/\sqrt{1-\beta_2^t}$ and $\hat m = m_t/(1-\beta_1^t)$ as in PyTorch;
    $\hat w = w_t/(1-\beta_2^t)$.

    Parameters
    ----------
    exp_avg : array_like or torch.Tensor
        $m_t$, the optimizer's ``exp_avg``.
    exp_avg_sq : array_like or torch.Tensor
        $v_t$, the optimizer's ``exp_avg_sq``.
    slow_avg : array_like or torch.Tensor
        $w_t$, the first moment kept with memory $\beta_2$. Pass ``slow_avg=exp_avg`` (the same
        object) when ``beta1 == beta2`` (the two EMAs coincide), which makes the lag part
        exactly zero.
    grad : array_like or torch.Tensor
        The effective gradient $g_t$ of the step.
    step : int
        The step count $t$ (at least 1).
    beta1 : float
        The first moment's decay, in ``[0, 1)``.
    beta2 : float
        The second moment's decay, in ``[0, 1)``.
    eps : float
        Adam's $\epsilon$, at least 0.

    Returns
    -------
    AdamParts
        The split of the step's update (`split_update()`).

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)``, ``eps < 0`` or ``step < 1``.
    """
    _check_betas(beta1, beta2, eps)
    if step < 1:
        raise InputError(f"step={step!r} is not allowed; decompose after at least one step")
    bc1, bc2, bc2_sqrt = bias_corrections(step, beta1, beta2)
    sqrt = exp_avg_sq.sqrt() if _is_torch(exp_avg_sq) else np.sqrt(exp_avg_sq)
    m_hat = exp_avg / bc1
    w_hat = exp_avg / bc1 if slow_avg is exp_avg else slow_avg / bc2
    return split_update(m_hat, w_hat, sqrt / bc2_sqrt, grad, eps)


def adam_moments(grads, beta1: float, beta2: float) -> dict[str, np.ndarray]:
    r"""EMAs of a gradient history ``grads[t-1] = g_t``, zero initial state.

    The same arithmetic as PyTorch's single-tensor path (``lerp`` for first moments,
    ``mul``/``addcmul`` for the second).

    Parameters
    ----------
    grads : array_like
        The effective gradients, shape ``(T, ...)`` with $T \ge 1$.
    beta1 : float
        The first moment's decay.
    beta2 : float
        The second moment's decay (also the memory of ``w``).

    Returns
    -------
    dict[str, numpy.ndarray]
        ``m``, ``v`` and ``w`` (first moment with memory ``b2``), each ``(T, ...)``;
        ``w is m`` when ``beta1 == beta2``.

    Raises
    ------
    InputError
        When ``grads`` has no time axis or no step.
    """
    g = np.asarray(grads, dtype=float)
    if g.ndim < 1 or g.shape[0] < 1:
        raise InputError(
            f"grads of shape {g.shape} is not allowed; need shape (T, ...) with T >= 1"
        )
    m = np.zeros_like(g)
    v = np.zeros_like(g)
    w = m if beta1 == beta2 else np.zeros_like(g)
    mk = np.zeros(g.shape[1:])
    vk = np.zeros(g.shape[1:])
    wk = np.zeros(g.shape[1:])
    for t in range(g.shape[0]):
        mk = _lerp(mk, g[t], 1 - beta1)
        vk = vk * beta2 + (1 - beta2) * g[t] * g[t]
        m[t], v[t] = mk, vk
        if w is not m:
            wk = _lerp(wk, g[t], 1 - beta2)
            w[t] = wk
    return {"m": m, "v": v, "w": w}


def _lerp(a, b, weight: float):
    return a + weight * (b - a) if weight < 0.5 else b - (b - a) * (1 - weight)


def decompose_history(
    grads, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8
) -> AdamParts:
    """The decomposition of every update of a gradient history ``grads``.

    A pure function of the effective gradients ``g_1..g_T``, from a zero state.

    Parameters
    ----------
    grads : array_like
        The effective gradients, shape ``(T, ...)``, ``grads[t-1] = g_t``.
    beta1 : float
        The first moment's decay, in ``[0, 1)``.
    beta2 : float
        The second moment's decay, in ``[0, 1)``.
    eps : float
        Adam's eps, at least 0.

    Returns
    -------
    AdamParts
        Each field of shape ``(T, ...)``; row ``t-1`` is the split of the update at step ``t``.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)``, ``eps < 0`` or ``grads`` has no step.
    """
    _check_betas(beta1, beta2, eps)
    mom = adam_moments(grads, beta1, beta2)
    T = mom["m"].shape[0]
    steps = np.arange(1, T + 1, dtype=float).reshape((T,) + (1,) * (mom["m"].ndim - 1))
    bc1 = 1 - beta1**steps
    bc2 = 1 - beta2**steps
    m_hat = mom["m"] / bc1
    w_hat = m_hat if mom["w"] is mom["m"] else mom["w"] / bc2
    s = np.sqrt(mom["v"]) / np.sqrt(bc2)
    return split_update(m_hat, w_hat, s, np.asarray(grads, dtype=float), eps)


def part_norms(parts: AdamParts) -> dict[str, float]:
    """Euclidean norms of each part, of the residual and of the update (numpy floats).

    Parameters
    ----------
    parts : AdamParts
        A split (any shape: each part is flattened).

    Returns
    -------
    dict[str, float]
        The norm of each of `PARTS`, of ``update`` and of ``residual``.
    """
    out = {}
    for k in (*PARTS, "update"):
        out[k] = float(np.linalg.norm(np.ravel(np.asarray(getattr(parts, k)))))
    out["residual"] = float(np.linalg.norm(np.ravel(np.asarray(parts.residual))))
    return out


def shares(norms: dict, axis_parts: tuple[str, ...] = ("sign", "lag", "residual")) -> dict:
    r"""Shares of the update: $\mathrm{share}_k = |p_k| / \sum_j |p_j|$ over ``axis_parts``.

    Parts are not orthogonal, so shares are defined by norms normalised to sum to one; a zero
    denominator gives zero shares. Works elementwise on arrays of norms.

    Parameters
    ----------
    norms : dict
        Norms per part (floats or arrays), as `part_norms()` returns; must hold every key of
        ``axis_parts``.
    axis_parts : tuple[str, ...]
        The parts shared among.

    Returns
    -------
    dict
        The share of each of ``axis_parts``.
    """
    tot = sum(np.asarray(norms[k], dtype=float) for k in axis_parts)
    safe = np.where(tot > 0, tot, 1.0)
    return {k: np.where(tot > 0, np.asarray(norms[k], dtype=float) / safe, 0.0) for k in axis_parts}


def smoothness(update_norms, skip: int = 1) -> float:
    r"""Mean absolute change of the log update norm,
    $\operatorname{mean}_t \bigl|\log|u_{t+1}| - \log|u_t|\bigr|$.

    Smaller is smoother.

    Parameters
    ----------
    update_norms : array_like
        The update norms $|u_t|$ per step; zero norms are left out.
    skip : int
        The first ``skip`` steps (bias-correction start-up) are left out.

    Returns
    -------
    float
        The mean, ``nan`` with fewer than two positive norms left.
    """
    u = np.asarray(update_norms, dtype=float)[skip:]
    u = u[u > 0]
    if u.size < 2:
        return float("nan")
    return float(np.mean(np.abs(np.diff(np.log(u)))))

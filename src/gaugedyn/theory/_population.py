"""Population loss of the Gaussian teacher-student model and its gradients in order parameters.

With student ``f(x) = sum_i a_i g(w_i.x)``, teacher ``f*(x) = sum_n b_n g(v_n.x)`` and
``x ~ N(0, I_D)``, the loss depends on the weights only through ``Q = W W^T``, ``R = W V^T`` and
``T = V V^T``:

    L = 1/2 sum_ij a_i a_j F(Q_ii, Q_jj, Q_ij) - sum_in a_i b_n F(Q_ii, T_nn, R_in)
        + 1/2 sum_nm b_n b_m F(T_nn, T_mm, T_nm),

with ``F`` the Gaussian pair kernel of the activation (``F(q, q, q) = S(q)`` on the diagonal).
Every function broadcasts over leading batch axes: ``a (..., K)``, ``Q (..., K, K)``,
``R (..., K, M)``, ``b (..., M)``, ``T (..., M, M)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._generated_kernels import KERNELS

ACTIVATIONS = tuple(KERNELS)


def check_activation(activation: str) -> str:
    from .._errors import InputError

    if activation not in KERNELS:
        raise InputError(f"unknown activation {activation!r}; allowed: {', '.join(ACTIVATIONS)}")
    return activation


def _diag(x):
    return np.diagonal(x, axis1=-2, axis2=-1)


def _pair_matrix(kernel, self_kernel, Q):
    """``F(Q_ii, Q_jj, Q_ij)`` with the diagonal taken from the one-variable kernel ``S``."""
    d = _diag(Q)
    K = Q.shape[-1]
    out = kernel(d[..., :, None], d[..., None, :], Q)
    eye = np.eye(K, dtype=bool)
    return np.where(eye, self_kernel(d)[..., :, None] * np.ones(K), out)


def population_loss(a, Q, R, b, T, activation: str = "relu"):
    """``L(a, Q, R)`` in closed form (see module docstring)."""
    F, _, _, S, _, _ = KERNELS[check_activation(activation)]
    dq, dt = _diag(Q), _diag(T)
    ss = np.einsum("...i,...ij,...j->...", a, _pair_matrix(F, S, Q), a)
    st = np.einsum("...i,...in,...n->...", a, F(dq[..., :, None], dt[..., None, :], R), b)
    tt = np.einsum("...n,...nm,...m->...", b, _pair_matrix(F, S, T), b)
    return 0.5 * ss - st + 0.5 * tt


class Gradients(NamedTuple):
    """``dL/da``, the symmetric ``G`` and ``H = dL/dR`` with ``dL/dW = 2 G W + H V``."""

    loss: np.ndarray
    g_a: np.ndarray
    G: np.ndarray
    H: np.ndarray


def gradients(a, Q, R, b, T, activation: str = "relu") -> Gradients:
    """Loss and its gradients in order parameters.

    ``G`` is the symmetrised derivative of ``L`` in ``Q``: ``G_ij = 1/2 a_i a_j F_c(i, j)`` off the
    diagonal and ``G_ii = 1/2 a_i^2 S'(Q_ii) + sum_{j != i} a_i a_j F_q1(i, j)
    - sum_n a_i b_n F_q1(Q_ii, T_nn, R_in)``; ``H_in = -a_i b_n F_c(Q_ii, T_nn, R_in)``.
    The weight gradient is then ``dL/dW = 2 G W + H V`` for any realisation of ``(Q, R)``.
    """
    F, dF, _, S, dS, _ = KERNELS[check_activation(activation)]
    K = Q.shape[-1]
    eye = np.eye(K, dtype=bool)
    dq, dt = _diag(Q), _diag(T)
    q1, q2 = dq[..., :, None], dq[..., None, :]
    Fss = np.where(eye, S(dq)[..., :, None] * np.ones(K), F(q1, q2, Q))
    Fq1_ss, _, Fc_ss = dF(q1, q2, np.where(eye, 0.0, Q))
    Fq1_ss, Fc_ss = np.where(eye, 0.0, Fq1_ss), np.where(eye, 0.0, Fc_ss)
    Fst = F(dq[..., :, None], dt[..., None, :], R)
    Fq1_st, _, Fc_st = dF(dq[..., :, None], dt[..., None, :], R)

    aa = a[..., :, None] * a[..., None, :]
    ab = a[..., :, None] * b[..., None, :]
    loss = population_loss(a, Q, R, b, T, activation)
    g_a = np.einsum("...ij,...j->...i", Fss, a) - np.einsum("...in,...n->...i", Fst, b)
    G = 0.5 * aa * Fc_ss
    diag = 0.5 * a**2 * dS(dq) + (aa * Fq1_ss).sum(-1) - (ab * Fq1_st).sum(-1)
    G = np.where(eye, diag[..., :, None] * np.ones(K), G)
    H = -ab * Fc_st
    return Gradients(loss, g_a, G, H)


def order_parameter_velocity(a, Q, R, b, T, activation: str = "relu"):
    """Population gradient flow in order parameters.

    ``da/dt = -dL/da``, ``dQ/dt = -(2 G Q + 2 Q G + H R^T + R H^T)``,
    ``dR/dt = -(2 G R + H T)``; exact for any ``D`` because ``L`` depends on ``W`` only through
    ``(Q, R)`` and ``dW/dt = -(2 G W + H V)``.
    """
    gr = gradients(a, Q, R, b, T, activation)
    GQ = gr.G @ Q
    HRt = gr.H @ np.swapaxes(R, -1, -2)
    dQ = -(2 * GQ + 2 * np.swapaxes(GQ, -1, -2) + HRt + np.swapaxes(HRt, -1, -2))
    dR = -(2 * gr.G @ R + gr.H @ T)
    return -gr.g_a, dQ, dR

r"""Population loss of the Gaussian teacher-student model and its gradients in order parameters.

With student ``f(x) = sum_i a_i g(w_i.x)``, teacher $f^*(x) = \sum_n b_n\, g(v_n \cdot x)$ and
$x \sim \mathcal{N}(0, I_D)$, the loss depends on the weights only through $Q = W W^\top$,
$R = W V^\top$ and $T = V V^\top$:

    L = 1/2 sum_ij a_i a_j F(Q_ii, Q_jj, Q_ij) - sum_in a_i b_n F(Q_ii, T_nn, R_in)
        + 1/2 sum_nm b_n b_m F(T_nn, T_mm, T_nm),

with ``F`` the Gaussian pair kernel of the activation (``F(q, q, q) = S(q)`` on the diagonal);
``activation`` is a registered name or an `Activation`, whose ``kernels``
supply ``F`` and ``S`` (closed forms or quadrature). A teacher with its own activation ``g*``
(``teacher_activation``; ``None``: the student's) takes its kernels in the teacher-teacher sum
and the cross kernel ``E[g(x1) g*(x2)]`` of `cross_kernels()` in the
student-teacher sum.
Every function broadcasts over leading batch axes: ``a (..., K)``, ``Q (..., K, K)``,
``R (..., K, M)``, ``b (..., M)``, ``T (..., M, M)``.

Order parameters resolve the angle ``theta`` of two nearly aligned neurons only to about
$\sqrt{\epsilon} \approx 1.5 \times 10^{-8}$ ($\cos \theta$ rounds to 1), which for ReLU, whose
kernels are functions of ``theta``, leaves a gradient error of about ``1e-9``. Where the weights are
known,
``sines = (S_ss (..., K, K), S_st (..., K, M))`` with $S_{ij} = |w_i \wedge w_j|$ and
$S_{in} = |w_i \wedge v_n|$ (`pair_sines()`) hands the kernels ``sqrt(q1 q2 - c^2)`` to full
precision; only the positively homogeneous kernels use it (`angle_resolved()`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._activation import activation_of, cross_kernels


def _kernels(activation):
    """``(F, dF, d2F, S, dS, d2S)`` of an activation name or `Activation`."""
    return activation_of(activation).kernels


def angle_resolved(activation, teacher_activation=None) -> bool:
    """Whether the pair kernels of the student (and the student-teacher pair) are the ReLU
    closed forms, which take ``sines`` (the module docstring)."""
    s = activation_of(activation)
    if not s.homogeneous:
        return False
    return teacher_activation is None or activation_of(teacher_activation).homogeneous


def pair_sines(X, Y):
    r"""$S_{in} = |x_i \wedge y_n| = |x_i|\, |y_n - (y_n \cdot x_i / |x_i|^2)\, x_i|$ for rows
    ``X (..., K, d)``, ``Y (..., M, d)``: the projection keeps an absolute error of order
    ``eps |x_i| |y_n|`` at any angle, where ``sqrt(|x|^2 |y|^2 - (x . y)^2)`` loses half the
    digits."""
    nx2 = np.sum(X * X, axis=-1)
    coef = _matvec_rows(X, Y) / nx2[..., :, None]
    perp = Y[..., None, :, :] - coef[..., None] * X[..., :, None, :]
    return np.sqrt(nx2)[..., :, None] * np.sqrt(np.sum(perp * perp, axis=-1))


def _matvec_rows(X, Y):
    r"""$X Y^\top$ over the last axis (``(..., K, d), (..., M, d) -> (..., K, M)``)."""
    return np.sum(X[..., :, None, :] * Y[..., None, :, :], axis=-1)


def student_sines(W):
    r"""Symmetric $S_{ij} = |w_i \wedge w_j|$ of `pair_sines()` with $S_{ii} = |w_i|^2$ (the value
    the kernels expect at the zeroed diagonal ``c = 0`` of `_gradients()`)."""
    S = pair_sines(W, W)
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    K = W.shape[-2]
    return np.where(np.eye(K, dtype=bool), np.sum(W * W, axis=-1)[..., :, None], S)


def _with_sine(kernel, s):
    """``kernel`` with its ``s`` argument bound (``kernel`` itself when ``s`` is ``None``)."""
    if s is None:
        return kernel
    return lambda q1, q2, c: kernel(q1, q2, c, s)


def _teacher(activation, teacher_activation):
    """The teacher's kernels and the student-teacher ``(F, dF, d2F)``."""
    t = activation if teacher_activation is None else teacher_activation
    return _kernels(t), cross_kernels(activation, teacher_activation)


def _diag(x):
    return np.diagonal(x, axis1=-2, axis2=-1)


def _matvec(A, x):
    """``A x`` over the last axis, summed per row so that every batch member's result is the
    same bits whatever the batch it is computed in (``einsum`` may reorder the sum)."""
    return np.sum(A * x[..., None, :], axis=-1)


def _pair_matrix(kernel, self_kernel, Q):
    """``F(Q_ii, Q_jj, Q_ij)`` with the diagonal taken from the one-variable kernel ``S``."""
    d = _diag(Q)
    K = Q.shape[-1]
    out = kernel(d[..., :, None], d[..., None, :], Q)
    eye = np.eye(K, dtype=bool)
    return np.where(eye, self_kernel(d)[..., :, None] * np.ones(K), out)


def population_loss(a, Q, R, b, T, activation="relu", teacher_activation=None):
    r"""$L(a, Q, R)$ in closed form (see module docstring):

    $$L = \tfrac12 \sum_{ij} a_i a_j F(Q_{ii}, Q_{jj}, Q_{ij})
    - \sum_{in} a_i b_n F(Q_{ii}, T_{nn}, R_{in})
    + \tfrac12 \sum_{nm} b_n b_m F(T_{nn}, T_{mm}, T_{nm}).$$

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps $Q = W W^\top$, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps $R = W V^\top$, shape ``(..., K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    T : array_like
        Teacher overlaps $T = V V^\top$, shape ``(..., M, M)``.
    activation : str or Activation
        The students' activation: a registered name or an `Activation` (its ``kernels`` give
        $F$ and $S$); an unknown name raises `activation_of()`'s error.
    teacher_activation : str, Activation or None
        The teacher's activation $g^*$; ``None``: the students'.

    Returns
    -------
    numpy.ndarray
        The population loss, shape ``(...)``.
    """
    F, _, _, S, _, _ = _kernels(activation)
    tk, (Fx, _, _) = _teacher(activation, teacher_activation)
    dq, dt = _diag(Q), _diag(T)
    ss = np.einsum("...i,...ij,...j->...", a, _pair_matrix(F, S, Q), a)
    st = np.einsum("...i,...in,...n->...", a, Fx(dq[..., :, None], dt[..., None, :], R), b)
    tt = np.einsum("...n,...nm,...m->...", b, _pair_matrix(tk[0], tk[3], T), b)
    return 0.5 * ss - st + 0.5 * tt


class Gradients(NamedTuple):
    """``dL/da``, the symmetric ``G`` and ``H = dL/dR`` with ``dL/dW = 2 G W + H V``."""

    loss: np.ndarray
    g_a: np.ndarray
    G: np.ndarray
    H: np.ndarray


def gradients(a, Q, R, b, T, activation="relu", teacher_activation=None) -> Gradients:
    r"""Loss and its gradients in order parameters.

    $G$ is the symmetrised derivative of $L$ in $Q$: $G_{ij} = \tfrac12 a_i a_j F_c(i, j)$ off
    the diagonal and $G_{ii} = \tfrac12 a_i^2 S'(Q_{ii}) + \sum_{j \ne i} a_i a_j F_{q_1}(i, j)
    - \sum_n a_i b_n F_{q_1}(Q_{ii}, T_{nn}, R_{in})$; $H_{in} = -a_i b_n F_c(Q_{ii}, T_{nn},
    R_{in})$. The weight gradient is then $\partial L/\partial W = 2 G W + H
    V$ for any realisation of
    $(Q, R)$.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps $Q = W W^\top$, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps $R = W V^\top$, shape ``(..., K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    T : array_like
        Teacher overlaps $T = V V^\top$, shape ``(..., M, M)``.
    activation : str or Activation
        The students' activation: a registered name or an `Activation` (its ``kernels`` give
        $F$ and $S$); an unknown name raises `activation_of()`'s error.
    teacher_activation : str, Activation or None
        The teacher's activation $g^*$; ``None``: the students'.

    Returns
    -------
    Gradients
        ``(loss, g_a, G, H)``: the loss ``(...)``, $\partial L/\partial a$ ``(..., K)``, the
        symmetric $G$ ``(..., K, K)`` and $H = \partial L/\partial R$ ``(..., K, M)``.
    """
    return _gradients(
        a, Q, R, b, T, activation, with_loss=True, teacher_activation=teacher_activation
    )


def _gradients(
    a, Q, R, b, T, activation, with_loss: bool, teacher_activation=None, sines=None
) -> Gradients:
    F, dF, _, S, dS, _ = _kernels(activation)
    tk, (Fx, dFx, _) = _teacher(activation, teacher_activation)
    if sines is not None:
        F, dF = _with_sine(F, sines[0]), _with_sine(dF, sines[0])
        Fx, dFx = _with_sine(Fx, sines[1]), _with_sine(dFx, sines[1])
    K = Q.shape[-1]
    eye = np.eye(K, dtype=bool)
    dq, dt = _diag(Q), _diag(T)
    q1, q2 = dq[..., :, None], dq[..., None, :]
    if K == 1:  # no student pairs
        Fss = S(dq)[..., :, None]
        Fq1_ss = Fc_ss = np.zeros_like(Q)
    else:
        Qo = np.where(eye, 0.0, Q)
        Fss = np.where(eye, S(dq)[..., :, None], F(q1, q2, Qo))
        Fq1_ss, _, Fc_ss = dF(q1, q2, Qo)
        Fq1_ss, Fc_ss = np.where(eye, 0.0, Fq1_ss), np.where(eye, 0.0, Fc_ss)
    dqi = dq[..., :, None]
    Fst = Fx(dqi, dt[..., None, :], R)
    Fq1_st, _, Fc_st = dFx(dqi, dt[..., None, :], R)

    aa = a[..., :, None] * a[..., None, :]
    ab = a[..., :, None] * b[..., None, :]
    g_a = _matvec(Fss, a) - _matvec(Fst, b)
    if with_loss:
        tt = np.einsum("...n,...nm,...m->...", b, _pair_matrix(tk[0], tk[3], T), b)
        loss = (
            0.5 * np.einsum("...i,...i->...", a, g_a)
            - 0.5 * np.einsum("...i,...in,...n->...", a, Fst, b)
            + 0.5 * tt
        )
    else:
        loss = None
    G = 0.5 * aa * Fc_ss
    diag = 0.5 * a**2 * dS(dq) + (aa * Fq1_ss).sum(-1) - (ab * Fq1_st).sum(-1)
    G = np.where(eye, diag[..., :, None], G)
    H = -ab * Fc_st
    return Gradients(loss, g_a, G, H)


def order_parameter_velocity(a, Q, R, b, T, activation="relu", teacher_activation=None):
    r"""Population gradient flow in order parameters.

    $\dot a = -\partial L/\partial a$, $\dot Q = -(2 G Q + 2 Q G + H R^\top + R H^\top)$,
    $\dot R = -(2 G R + H T)$; exact for any $D$ because $L$ depends on $W$ only through
    $(Q, R)$ and $\dot W = -(2 G W + H V)$.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps $Q = W W^\top$, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps $R = W V^\top$, shape ``(..., K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    T : array_like
        Teacher overlaps $T = V V^\top$, shape ``(..., M, M)``.
    activation : str or Activation
        The students' activation: a registered name or an `Activation` (its ``kernels`` give
        $F$ and $S$); an unknown name raises `activation_of()`'s error.
    teacher_activation : str, Activation or None
        The teacher's activation $g^*$; ``None``: the students'.

    Returns
    -------
    tuple of numpy.ndarray
        $(\dot a, \dot Q, \dot R)$ of shapes ``(..., K)``, ``(..., K, K)``, ``(..., K, M)``.
    """
    gr = gradients(a, Q, R, b, T, activation, teacher_activation)
    return (-gr.g_a, *_order_parameter_velocity(gr, Q, R, T))


def _order_parameter_velocity(g: Gradients, Q, R, T):
    r"""$(dQ/dt, dR/dt) = (-(2 G Q + 2 Q G + H R^\top + R H^\top), -(2 G R + H T))$ from ``g``."""
    GQ = g.G @ Q
    HRt = g.H @ np.swapaxes(R, -1, -2)
    dQ = -(2 * GQ + 2 * np.swapaxes(GQ, -1, -2) + HRt + np.swapaxes(HRt, -1, -2))
    return dQ, -(2 * g.G @ R + g.H @ T)


def _clip_correlation(q1, q2, c, cutoff: float):
    r"""``c`` moved inside $|c| \le (1 - \mathit{cutoff}) \sqrt{q_1 q_2}$ (the kernels' Hessians are
    singular on $c^2 = q_1 q_2$ for ReLU)."""
    bound = (1.0 - cutoff) * np.sqrt(q1 * q2)
    return np.clip(c, -bound, bound)


ALIGNED_SINE = 2.0**-26
r"""Relative sine $s / \sqrt{q_1 q_2}$ below which `gradient_jvp()` with ``sines`` takes a
pair as aligned: about ``sqrt(eps)``, where the ``O(s)`` error of the aligned limit meets the
``O(eps / s)`` round-off of the kernels' ``1/s`` second derivatives."""


def _aligned_limit(h, q1, q2, s):
    """The kernels' second derivatives ``h`` set to zero on aligned pairs: there the weights move
    ``(q1, q2, c)`` only along the boundary $c^2 = q_1 q_2$ to first order, on which ReLU's
    $F = c / 2 + O((q_1 q_2 - c^2)^{3/2})$ has no curvature, so their contribution to the
    Hessian in the weights vanishes like ``s``."""
    aligned = s < ALIGNED_SINE * np.sqrt(q1 * q2)
    with np.errstate(invalid="ignore"):
        return tuple(np.where(aligned, 0.0, x) for x in h)


def gradient_jvp(
    a,
    Q,
    R,
    b,
    T,
    da,
    dQ,
    dR,
    activation="relu",
    *,
    singular_cutoff: float = 0.0,
    teacher_activation=None,
    sines=None,
):
    r"""Directional derivative of $(\partial L/\partial a, G, H)$ of `gradients()` along
    $(\delta a, \delta Q, \delta R)$.

    ``dQ`` is a symmetric direction. The state arrays broadcast against the direction arrays
    (insert an axis in the state to push many directions at once). With ``singular_cutoff > 0`` the
    pair kernels' second derivatives are evaluated at a correlation clipped to
    $|c| \le (1 - \mathrm{cutoff}) \sqrt{q_1 q_2}$: exact away from aligned pairs, finite on them
    (ReLU's second derivatives diverge like $(q_1 q_2 - c^2)^{-1/2}$). With ``sines`` (module
    docstring) nothing is clipped: the second derivatives are exact at the pair's own sine, and
    zero on pairs aligned to `ALIGNED_SINE` (`_aligned_limit()`), which is the exact
    limit of their contribution to the Hessian in the weights; ``singular_cutoff`` is unused.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps $Q = W W^\top$, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps $R = W V^\top$, shape ``(..., K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    T : array_like
        Teacher overlaps $T = V V^\top$, shape ``(..., M, M)``.
    da : array_like
        Direction in $a$, shape ``(..., K)``.
    dQ : array_like
        Symmetric direction in $Q$, shape ``(..., K, K)``.
    dR : array_like
        Direction in $R$, shape ``(..., K, M)``.
    activation : str or Activation
        The students' activation: a registered name or an `Activation` (its ``kernels`` give
        $F$ and $S$); an unknown name raises `activation_of()`'s error.
    teacher_activation : str, Activation or None
        The teacher's activation $g^*$; ``None``: the students'.
    singular_cutoff : float
        Relative distance from alignment at which the second derivatives are clipped; ``0``: no
        clipping.
    sines : tuple of array_like or None
        ``(S_ss (..., K, K), S_st (..., K, M))``, the pairs' wedge norms $|w_i \wedge w_j|$ and
        $|w_i \wedge v_n|$ (`pair_sines()`), for full-precision kernels; ``None``: from the
        order parameters.

    Returns
    -------
    tuple of numpy.ndarray
        $(\delta g_a, \delta G, \delta H)$ of shapes ``(..., K)``, ``(..., K, K)``,
        ``(..., K, M)``.
    """
    F, dF, d2F, S, dS, d2S = _kernels(activation)
    _, (_, dFx, d2Fx) = _teacher(activation, teacher_activation)
    K = Q.shape[-1]
    eye = np.eye(K, dtype=bool)
    dq, dt = _diag(Q), _diag(T)
    ddq = _diag(dQ)
    q1, q2 = dq[..., :, None], dq[..., None, :]
    tn = dt[..., None, :]
    Qo = np.where(eye, 0.0, Q)
    if singular_cutoff > 0 and sines is None:
        Qh = np.where(eye, 0.0, _clip_correlation(q1, q2, Q, singular_cutoff))
        Rh = _clip_correlation(dq[..., :, None], tn, R, singular_cutoff)
    else:
        Qh, Rh = Qo, R
    if sines is not None:
        s_ss, s_st = sines
        F, dF, dFx = _with_sine(F, s_ss), _with_sine(dF, s_ss), _with_sine(dFx, s_st)
        hess_ss, hess_st = _with_sine(d2F, s_ss), _with_sine(d2Fx, s_st)
        d2F = lambda *x: _aligned_limit(hess_ss(*x), q1, q2, s_ss)  # noqa: E731
        d2Fx = lambda *x: _aligned_limit(hess_st(*x), dq[..., :, None], tn, s_st)  # noqa: E731
    if K == 1:  # no student pairs
        Fq1_ss = Fq2_ss = Fc_ss = h11 = h12 = h1c = h2c = hcc = np.zeros_like(Q)
    else:
        Fq1_ss, Fq2_ss, Fc_ss = (np.where(eye, 0.0, x) for x in dF(q1, q2, Qo))
        h11, h12, h1c, _, h2c, hcc = (np.where(eye, 0.0, x) for x in d2F(q1, q2, Qh))
    Fq1_st, _, Fc_st = dFx(dq[..., :, None], tn, R)
    s11, _, s1c, _, _, scc = d2Fx(dq[..., :, None], tn, Rh)
    Fss_self = S(dq)

    dqi, dqj = ddq[..., :, None], ddq[..., None, :]
    dQo = np.where(eye, 0.0, dQ)
    dF_ss = np.where(eye, 0.0, Fq1_ss * dqi + Fq2_ss * dqj + Fc_ss * dQo)
    dF_st = Fq1_st * dqi + Fc_st * dR
    pair = 0.0 if K == 1 else np.where(eye, 0.0, F(q1, q2, Qo))
    Fss = np.where(eye, Fss_self[..., :, None] * np.ones(K), pair)
    dg_a = _matvec(dF_ss, a) + _matvec(Fss, da) + dS(dq) * ddq * a - _matvec(dF_st, b)

    aa = a[..., :, None] * a[..., None, :]
    daa = da[..., :, None] * a[..., None, :] + a[..., :, None] * da[..., None, :]
    ab = a[..., :, None] * b[..., None, :]
    dab = da[..., :, None] * b[..., None, :]
    dFc_ss = h1c * dqi + h2c * dqj + hcc * dQo
    dFq1_ss = h11 * dqi + h12 * dqj + h1c * dQo
    dFq1_st = s11 * dqi + s1c * dR
    dFc_st = s1c * dqi + scc * dR
    dG = 0.5 * (daa * Fc_ss + aa * dFc_ss)
    ddiag = (
        a * da * dS(dq)
        + 0.5 * a**2 * d2S(dq) * ddq
        + (daa * Fq1_ss + aa * dFq1_ss).sum(-1)
        - (dab * Fq1_st + ab * dFq1_st).sum(-1)
    )
    dG = np.where(eye, ddiag[..., :, None] * np.ones(K), dG)
    dH = -(dab * Fc_st + ab * dFc_st)
    return dg_a, dG, dH

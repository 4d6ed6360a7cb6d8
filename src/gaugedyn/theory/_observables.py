"""Observables of the teacher-student model, defined once for theory and simulation.

Every function takes order parameters ``(a, Q, R)`` (and the teacher's ``b, T``), broadcasting over
leading batch axes; trained networks reach them through `order_parameters()`. The
definitions' free parameters live in `Definitions`, which every result stores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._options import Param
from ._population import gradients, population_loss

TIE_RTOL = 1e-4
"""Relative gap below which two students' shares of a feature count as tied: well above the
accumulated integration error between identical copies (4e-7 measured with the span formulation
at rtol 1e-8), far below the difference any gauge gap produces."""


PARAMS: dict[str, Param] = {
    "threshold": Param(
        float,
        0.95,
        name="threshold",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
        help="specialization threshold",
        why="an overlap m lies in [-1, 1]",
    ),
    "prune_tol": Param(
        float,
        1e-3,
        name="prune_tol",
        lo=0,
        hi=1,
        lo_open=True,
        hi_open=True,
        help="pruned when |rho_i| < prune_tol",
        why="the owner converges to |rho| = |b| = 1, so a tolerance >= 1 would call it pruned",
    ),
}
"""The parameters of `Definitions`, declared once: checked by it and offered by the
command line."""


@dataclass(frozen=True)
class Definitions:
    r"""Parameters of the observables' definitions (recorded with every result).

    - alignment ``m_in = w_i.v_n / (|w_i| |v_n|)``;
    - coefficient $\rho_i = a_i |w_i|$; gauge $\delta_i = a_i^2 - |w_i|^2$;
    - specialization of teacher ``n``: ``s_n = max_i m_in``, or ``max_i |m_in|`` for an odd
      activation (``erf``, ``linear``), where ``(a_i, w_i)`` and ``(-a_i, -w_i)`` are the same
      function (`specialization()`); specialization time: the first ``t`` with
      ``s_n(t) >= threshold``;
    - owner of teacher ``n``: the student carrying the largest signed share
      ``sign(b_n) rho_i m_in`` of that feature; students within ``TIE_RTOL`` of the largest
      share are tied and the owner reads ``-1`` (`owners()`);
    - pruned: ``|rho_i| < prune_tol``; pruning time: first ``t`` at which that holds;
    - delta drift: $\max_i |\delta_i(t) - \delta_i(0)| / \bigl(a_i(0)^2 + |w_i(0)|^2\bigr)$;
    - dissipation: $-\dot L = \sum_i \text{reaction}_i + \text{transport}_i$ with
      $\text{reaction}_i = \mu_{R,i} (\partial \tilde L/\partial \rho_i)^2 = (\partial L/\partial a_i)^2 + (u_i \cdot \nabla_{w_i} L)^2$ and
      $\text{transport}_i = \mu_{T,i} |P_i \nabla_u \tilde L|^2 = |\nabla_{w_i} L|^2 - (u_i \cdot \nabla_{w_i} L)^2$.
    """

    threshold: float = 0.95
    prune_tol: float = 1e-3

    def __post_init__(self):
        PARAMS["threshold"].accept(self.threshold)
        PARAMS["prune_tol"].accept(self.prune_tol)

    def describe(self) -> dict:
        """The definitions as plain data, for result metadata."""
        return {
            **dataclasses.asdict(self),
            "alignment": "m_in = w_i.v_n / (|w_i| |v_n|)",
            "rho": "rho_i = a_i |w_i|",
            "delta": "delta_i = a_i^2 - |w_i|^2",
            "specialization": "s_n = max_i m_in (max_i |m_in| for odd activations: erf, linear)",
            "specialization_time": "first t with s_n(t) >= threshold",
            "owner": "argmax_i sign(b_n) rho_i m_in",
            "pruned": "|rho_i| < prune_tol",
            "delta_drift": "max_i |delta_i(t) - delta_i(0)| / (a_i(0)^2 + |w_i(0)|^2)",
            "dissipation": "reaction_i = (dL/da_i)^2 + (u_i.dL/dw_i)^2, "
            "transport_i = |dL/dw_i|^2 - (u_i.dL/dw_i)^2",
            "loss": "L = 1/2 E[(f(x) - f*(x))^2], x ~ N(0, I_D)",
        }


def order_parameters(W, V):
    r"""The order parameters $Q = W W^\top$, $R = W V^\top$, $T = V V^\top$ of student weights
    ``W (..., K, D)`` and teacher weights ``V (..., M, D)``.

    Parameters
    ----------
    W : array_like
        Student first-layer weights, shape ``(..., K, D)``.
    V : array_like
        Teacher first-layer weights, shape ``(..., M, D)``; leading axes broadcast with ``W``'s.

    Returns
    -------
    tuple of numpy.ndarray
        ``(Q, R, T)`` of shapes ``(..., K, K)``, ``(..., K, M)`` and ``(..., M, M)``.
    """
    W, V = np.asarray(W), np.asarray(V)
    Wt = np.swapaxes(W, -1, -2)
    return W @ Wt, W @ np.swapaxes(V, -1, -2), V @ np.swapaxes(V, -1, -2)


def norms(Q):
    return np.sqrt(np.diagonal(Q, axis1=-2, axis2=-1))


def rho(a, Q):
    r"""Feature coefficients $\rho_i = a_i |w_i|$.

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps $Q_{ij} = w_i \cdot w_j$, shape ``(..., K, K)``.

    Returns
    -------
    numpy.ndarray
        $\rho$, shape ``(..., K)``.
    """
    return a * norms(Q)


def delta(a, Q):
    r"""Gauge $\delta_i = a_i^2 - |w_i|^2$ (conserved by gradient flow).

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)`` (its diagonal is $|w_i|^2$).

    Returns
    -------
    numpy.ndarray
        $\delta$, shape ``(..., K)``.
    """
    return a**2 - np.diagonal(Q, axis1=-2, axis2=-1)


def alignment(Q, R, T):
    r"""Cosine $m_{in}$ between student $i$ and teacher $n$, in $[-1, 1]$ (the quotient's
    round-off, up to a few ulp past 1 for a student parallel to a teacher, is clipped).

    Parameters
    ----------
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps $R_{in} = w_i \cdot v_n$, shape ``(..., K, M)``.
    T : numpy.ndarray
        Teacher overlaps, shape ``(..., M, M)``.

    Returns
    -------
    numpy.ndarray
        $m_{in} = R_{in} / (|w_i| |v_n|)$, shape ``(..., K, M)`` (``nan`` for a zero-norm
        student).
    """
    return np.clip(R / (norms(Q)[..., :, None] * norms(T)[..., None, :]), -1.0, 1.0)


ODD_ACTIVATIONS = frozenset({"erf", "linear"})
"""Activations with ``g(-z) = -g(z)``: for them a student and its sign flip are one function."""


def specialization(Q, R, T, activation: str = "relu"):
    r"""How well teacher $n$ is learned: $s_n = \max_i m_{in}$ over students $i$; ``(..., M)``.

    For an odd activation (`ODD_ACTIVATIONS`) $a\, g(w \cdot x) = (-a)\, g(-w \cdot x)$, so a
    student at alignment $-1$ has learned the teacher as fully as one at $+1$; there
    $s_n = \max_i |m_{in}|$. Teacher $n$ is specialised when $s_n \ge$ ``threshold``. This is the
    one definition the solver's events and the trained networks' times both use.

    Parameters
    ----------
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps, shape ``(..., K, M)``.
    T : numpy.ndarray
        Teacher overlaps, shape ``(..., M, M)``.
    activation : str
        The student activation's name; ``erf`` and ``linear`` (the odd ones) take $|m_{in}|$.

    Returns
    -------
    numpy.ndarray
        $s_n$, shape ``(..., M)``.
    """
    m = alignment(Q, R, T)
    if activation in ODD_ACTIVATIONS:
        m = np.abs(m)
    return np.max(m, axis=-2)


def owner_sets(a, Q, R, T, b, tie_rtol: float = TIE_RTOL) -> np.ndarray:
    r"""Boolean ``(..., K, M)``: student $i$ is in the owner set of teacher $n$.

    The share of $i$ in feature $n$ is $\operatorname{sign}(b_n) \rho_i m_{in}$ with
    $\rho_i = a_i |w_i|$ and $m_{in}$ the cosine of $w_i$ and $v_n$; every student within
    ``tie_rtol`` (relative to the largest share's magnitude) of the largest share is an owner.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps, shape ``(..., K, K)`` (not used: the share is $a_i R_{in} / |v_n|$).
    R : array_like
        Student-teacher overlaps, shape ``(..., K, M)``.
    T : array_like
        Teacher overlaps, shape ``(..., M, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    tie_rtol : float
        Relative gap below which two shares tie (default `TIE_RTOL`, ``1e-4``).

    Returns
    -------
    numpy.ndarray
        Boolean, shape ``(..., K, M)``; a share that is ``nan`` (a zero-norm teacher) owns
        nothing unless all do.
    """
    a, Q, R, T, b = (np.asarray(x, dtype=float) for x in (a, Q, R, T, b))
    # rho_i m_in = a_i |w_i| (w_i.v_n) / (|w_i| |v_n|) = a_i R_in / |v_n|: no square root of Q
    t = np.sqrt(np.diagonal(T, axis1=-2, axis2=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.sign(b)[..., None, :] * (a[..., :, None] * R / t[..., None, :])
    share = np.nan_to_num(share, nan=-np.inf)
    best = np.max(share, axis=-2, keepdims=True)
    scale = np.max(np.abs(np.where(np.isfinite(share), share, 0.0)), axis=-2, keepdims=True)
    return share >= best - tie_rtol * scale


def owners(a, Q, R, T, b, tie_rtol: float = TIE_RTOL) -> np.ndarray:
    """Owner of each teacher feature ``(..., M)``: the student index, or ``-1`` for a tie.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(..., K, M)``.
    T : array_like
        Teacher overlaps, shape ``(..., M, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    tie_rtol : float
        Relative gap below which two shares tie (`owner_sets()`).

    Returns
    -------
    numpy.ndarray
        Integer, shape ``(..., M)``: the one student in the owner set, or ``-1`` when several
        are.
    """
    sets = owner_sets(a, Q, R, T, b, tie_rtol)
    unique = np.sum(sets, axis=-2) == 1
    return np.where(unique, np.argmax(sets, axis=-2), -1)


def owner(a, Q, R, T, b, tie_rtol: float = TIE_RTOL) -> np.ndarray:
    """The owner of each teacher feature: `owners()` (``-1`` for a tie), the one definition
    every layer uses.

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(..., K, M)``.
    T : array_like
        Teacher overlaps, shape ``(..., M, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    tie_rtol : float
        Relative gap below which two shares tie (`owner_sets()`).

    Returns
    -------
    numpy.ndarray
        Integer, shape ``(..., M)``: the owning student, or ``-1`` for a tie.
    """
    return owners(a, Q, R, T, b, tie_rtol)


def pruned(a, Q, definitions: Definitions = Definitions()):
    r"""Boolean mask of functionally pruned students $|\rho_i| <$ ``prune_tol``.

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)``.
    definitions : Definitions
        Supplies ``prune_tol`` (default ``1e-3``).

    Returns
    -------
    numpy.ndarray
        Boolean, shape ``(..., K)``.
    """
    return np.abs(rho(a, Q)) < definitions.prune_tol


def delta_drift(a, Q, a0, Q0):
    r"""$\max_i |\delta_i - \delta_i(0)| / (a_i(0)^2 + |w_i(0)|^2)$.

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights now, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps now, shape ``(..., K, K)``.
    a0 : numpy.ndarray
        Second-layer weights at the start, shape ``(K,)`` or broadcastable with ``a``.
    Q0 : numpy.ndarray
        Overlaps at the start, shape ``(K, K)`` or broadcastable with ``Q``.

    Returns
    -------
    numpy.ndarray
        The relative drift of the gauge, shape ``(...)``: zero under exact gradient flow.
    """
    d0 = delta(a0, Q0)
    scale = a0**2 + np.diagonal(Q0, axis1=-2, axis2=-1)
    return np.max(np.abs(delta(a, Q) - d0) / scale, axis=-1)


def mobilities(a_sq, w_sq):
    r"""Reaction and transport mobilities of a homogeneous unit from $|a|^2$ and $|w|^2$:
    $\mu_R = |a|^2 + |w|^2 = \sqrt{\delta^2 + 4 \rho^2}$, $\mu_T = 1/|w|^2$ (the identities the
    symbolic module's ``reaction_transport`` derivation verifies). $a$ may be a vector (a unit
    with several outputs); then $\rho = |a| |w|$.

    Parameters
    ----------
    a_sq : array_like
        $|a|^2$ per unit.
    w_sq : array_like
        $|w|^2$ per unit; broadcasts with ``a_sq``.

    Returns
    -------
    tuple of numpy.ndarray
        $(\mu_R, \mu_T)$; $\mu_T$ is ``inf`` where $|w|^2 = 0$.
    """
    a_sq, w_sq = np.asarray(a_sq), np.asarray(w_sq)
    with np.errstate(divide="ignore"):
        return a_sq + w_sq, 1.0 / w_sq


def dissipation_split(g_a_sq, g_w_sq, gw_dot_w, w_sq):
    r"""Reaction and transport parts of one unit's dissipation $|g_a|^2 + |g_w|^2$ from the
    squared gradient norms, $g_w \cdot w$ and $|w|^2$:
    $\mathrm{reaction} = |g_a|^2 + (u \cdot g_w)^2$,
    $\mathrm{transport} = |g_w|^2 - (u \cdot g_w)^2$ ($u = w/|w|$; the transport part is clipped
    at 0 against round-off). Under gradient flow
    $-\mathrm{d}L/\mathrm{d}t = \sum_i \mathrm{reaction}_i + \mathrm{transport}_i$.

    Parameters
    ----------
    g_a_sq : array_like
        $|g_a|^2$, the squared norm of the loss gradient in the unit's output weight(s).
    g_w_sq : array_like
        $|g_w|^2$, the squared norm of the gradient in its input weights.
    gw_dot_w : array_like
        $g_w \cdot w$.
    w_sq : array_like
        $|w|^2$; where it is 0 the radial part is taken as 0.

    Returns
    -------
    tuple of numpy.ndarray
        ``(reaction, transport)``, broadcast over the four inputs.
    """
    g_a_sq, g_w_sq, gw_dot_w, w_sq = (np.asarray(x) for x in (g_a_sq, g_w_sq, gw_dot_w, w_sq))
    with np.errstate(divide="ignore", invalid="ignore"):
        radial = np.where(w_sq > 0, gw_dot_w**2 / w_sq, 0.0)
    return g_a_sq + radial, np.maximum(g_w_sq - radial, 0.0)


def dissipation(a, Q, R, b, T, activation: str = "relu", teacher_activation=None):
    r"""Per-neuron reaction and transport dissipation,
    $-\mathrm{d}L/\mathrm{d}t = \sum_i (\mathrm{reaction}_i + \mathrm{transport}_i)$
    (`dissipation_split()` of the population gradient).

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps, shape ``(..., K, M)``.
    b : numpy.ndarray
        Teacher second-layer weights, shape ``(..., M)``.
    T : numpy.ndarray
        Teacher overlaps, shape ``(..., M, M)``.
    activation : str
        The student activation's registered name (`ACTIVATIONS`).
    teacher_activation : str or None
        The teacher's activation; ``None``: the student's.

    Returns
    -------
    tuple of numpy.ndarray
        ``(reaction, transport)``, each of shape ``(..., K)``.
    """
    gr = gradients(a, Q, R, b, T, activation, teacher_activation)
    G, H = gr.G, gr.H
    Rt = np.swapaxes(R, -1, -2)
    Ht = np.swapaxes(H, -1, -2)
    gw_w = np.diagonal(2 * G @ Q + H @ Rt, axis1=-2, axis2=-1)
    gw_sq = np.diagonal(
        4 * G @ Q @ G + 2 * G @ R @ Ht + 2 * H @ Rt @ G + H @ T @ Ht, axis1=-2, axis2=-1
    )
    return dissipation_split(gr.g_a**2, gw_sq, gw_w, np.diagonal(Q, axis1=-2, axis2=-1))


CLASSIFICATION_SAMPLES = 2**16
"""Default Gaussian draws of `classification_error()` (standard error <= 0.002)."""


def classification_error(
    a,
    Q,
    R,
    b,
    T,
    activation="relu",
    teacher_activation=None,
    *,
    samples: int = CLASSIFICATION_SAMPLES,
    rng=None,
):
    r"""The classification error $P(\operatorname{sign} f(x) \ne \operatorname{sign} f^*(x))$ of the
    state(s), with its Monte Carlo standard error: ``(error, se)``, each of the batch shape.

    ``sign`` as the classical codes take it (nn2pp's ``classify``: $\operatorname{sign}(0) = +1$).
    The local fields $(\lambda, \nu) \sim N(0, C)$, $C = [[Q, R], [R^\top, T]]$, are
    $U \sqrt{L} z$ (the eigen factor of $C$, so a singular $C$ is exact) for ``samples`` standard
    normal $z$ drawn once from ``rng`` (default ``numpy.random.default_rng(0)``) and shared by
    every state (common random numbers: a trajectory's error moves smoothly, not by fresh noise);
    $f = \sum_i a_i g(\lambda_i)$, $f^* = \sum_n b_n g^*(\nu_n)$ ($g^*$: ``teacher_activation``,
    default $g$). $\mathrm{se} = \sqrt{p (1 - p) / \mathrm{samples}}$. For the linear activation,
    and for odd $g$ at $K = M = 1$, the exact value is $\arccos(\operatorname{corr}(f, f^*)) / \pi$
    (tested).

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(..., K)``.
    Q : array_like
        Student overlaps, shape ``(..., K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(..., K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(..., M)``.
    T : array_like
        Teacher overlaps, shape ``(..., M, M)``.
    activation : str
        The student activation's registered name; an unknown one raises `activation_of()`'s
        error.
    teacher_activation : str or None
        The teacher's activation; ``None``: the student's.
    samples : int
        Gaussian draws shared by every state (default `CLASSIFICATION_SAMPLES`, $2^{16}$).
    rng : numpy.random.Generator or None
        Source of the draws; ``None``: ``numpy.random.default_rng(0)``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(error, se)``, each of the broadcast batch shape.
    """
    from ._activation import activation_of, on_numpy

    g = on_numpy(activation_of(activation).function)
    gt = on_numpy(
        activation_of(activation if teacher_activation is None else teacher_activation).function
    )
    a, Q, R, b, T = (np.asarray(x, dtype=np.float64) for x in (a, Q, R, b, T))
    K, M = a.shape[-1], b.shape[-1]
    lead = np.broadcast_shapes(a.shape[:-1], Q.shape[:-2], R.shape[:-2], b.shape[:-1], T.shape[:-2])
    a, b = np.broadcast_to(a, lead + (K,)), np.broadcast_to(b, lead + (M,))
    Q, R = np.broadcast_to(Q, lead + (K, K)), np.broadcast_to(R, lead + (K, M))
    T = np.broadcast_to(T, lead + (M, M))
    C = np.concatenate(
        [np.concatenate([Q, R], -1), np.concatenate([np.swapaxes(R, -1, -2), T], -1)], -2
    )
    rng = np.random.default_rng(0) if rng is None else rng
    z = rng.standard_normal((int(samples), K + M))
    flat_C, flat_a, flat_b = C.reshape(-1, K + M, K + M), a.reshape(-1, K), b.reshape(-1, M)
    err: np.ndarray = np.empty(flat_C.shape[0])
    for s in range(err.size):
        lam, U = np.linalg.eigh(flat_C[s])
        u = z @ (U * np.sqrt(np.maximum(lam, 0.0))).T
        f = g(np.ascontiguousarray(u[:, :K])) @ flat_a[s]
        fs = gt(np.ascontiguousarray(u[:, K:])) @ flat_b[s]
        err[s] = np.mean(np.where(f >= 0, 1.0, -1.0) != np.where(fs >= 0, 1.0, -1.0))
    err = err.reshape(lead)
    return err, np.sqrt(err * (1.0 - err) / int(samples))


def observe(
    a,
    Q,
    R,
    b,
    T,
    activation: str = "relu",
    definitions: Definitions = Definitions(),
    teacher_activation=None,
):
    """All instantaneous observables of a state, as a dict of arrays (``teacher_activation``:
    the teacher's, when it differs from the student's).

    Parameters
    ----------
    a : numpy.ndarray
        Student second-layer weights, shape ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps, shape ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps, shape ``(..., K, M)``.
    b : numpy.ndarray
        Teacher second-layer weights, shape ``(..., M)``.
    T : numpy.ndarray
        Teacher overlaps, shape ``(..., M, M)``.
    activation : str
        The student activation's registered name.
    definitions : Definitions
        The observables' parameters (``prune_tol`` for ``pruned``).
    teacher_activation : str or None
        The teacher's activation; ``None``: the student's.

    Returns
    -------
    dict of str to numpy.ndarray
        ``loss``, ``rho``, ``alignment``, ``delta``, ``owner``, ``pruned``, ``reaction`` and
        ``transport`` (`population_loss()`, `rho()`, ... of this module).
    """
    reaction, transport = dissipation(a, Q, R, b, T, activation, teacher_activation)
    return {
        "loss": population_loss(a, Q, R, b, T, activation, teacher_activation),
        "rho": rho(a, Q),
        "alignment": alignment(Q, R, T),
        "delta": delta(a, Q),
        "owner": owner(a, Q, R, T, b),
        "pruned": pruned(a, Q, definitions),
        "reaction": reaction,
        "transport": transport,
    }

r"""The three exact formulations of population gradient flow, their Jacobians and GD maps.

All three integrate ``da/dt = -dL/da``, ``dW/dt = -(2 G W + H V)`` (`gradients()`):

- ``order-parameters``: the state $y = (a, Q_{i \le j}, R)$, ``K + K(K+1)/2 + KM`` numbers,
  $dQ/dt = -(2GQ + 2QG + HR^\top + RH^\top)$, $dR/dt = -(2GR + HT)$; the cost does not depend on ``D``;
- ``weight-space``: ``y = (a, W)`` in ``D`` dimensions;
- ``span``: ``y = (a, C)`` with $W = C E^\top$ in an orthonormal basis ``E`` of
  ``span{w_i(0), v_n}`` ($r \le K + M$ columns); exact at any ``D`` because the flow never
  leaves that span.

The classical options (``FlowParams.weight_decay = lambda``, ``FlowParams.lr2``): the flow
$da/dt = -\mathit{lr}_2 (\partial L/\partial a + \lambda a)$,
$dW/dt = -(\partial L/\partial W + \lambda W)$, i.e. in order parameters
$dQ/dt \to dQ/dt - 2 \lambda Q$ and $dR/dt \to dR/dt - \lambda R$; ``lr2 = 0`` freezes the
second layer. Gradient descent's map becomes $W \to (1 - \eta \lambda) W - \eta\, \partial L/\partial W$.

Right-hand sides are pure functions ``rhs(t, y, params)`` vectorised over leading batch axes of
``y`` (and of the arrays in ``params``). Population gradient descent with step ``eta`` is the Euler
map of the weight-space flow, $W \to W - \eta\, \partial L/\partial W$; in order parameters it is
that map's exact image,
$Q \to Q + \eta\, dQ/dt + \eta^2 (\partial L/\partial W)(\partial L/\partial W)^\top$.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from .._errors import InputError
from .._options import Param
from ._population import (
    _gradients,
    _order_parameter_velocity,
    angle_resolved,
    gradient_jvp,
    pair_sines,
    student_sines,
)

FORMULATIONS = ("order-parameters", "weight-space", "span")

PARAMS: dict[str, Param] = {
    "formulation": Param(
        str,
        "order-parameters",
        name="formulation",
        choices=FORMULATIONS,
        help="the exact formulation integrated",
    ),
    "weight_decay": Param(
        float,
        0.0,
        name="weight_decay",
        lo=0,
        hi=1e3,
        help="weight decay lambda on both layers",
        why="a larger penalty shrinks every weight to 0 at once",
    ),
    "lr2": Param(
        float,
        1.0,
        name="lr2",
        lo=0,
        hi=1e3,
        help="second-layer rate",
        why="the second layer's rate relative to the first; 0 freezes it",
    ),
}
"""The settings of the flows (`initial_state()`), declared once: checked here and offered
by the command line."""


@dataclass(frozen=True, eq=False)
class FlowParams:
    """Everything a right-hand side needs besides the state.

    ``b (..., M)``, ``T (..., M, M)``; ``V (..., M, d)`` is the teacher in the state's coordinates
    (``d = D`` for weight-space, ``r`` for span, ``None`` for order parameters); ``basis (D, r)``
    is the span basis. ``singular_cutoff`` regularises only the Jacobian (see
    `gradient_jvp()`). ``resolve_angles`` (weight-space and span only) evaluates the ReLU
    kernels with the pair sines of the weights (`pair_sines()`),
    exact for nearly aligned neurons where the order parameters resolve angles only to
    ``sqrt(eps)``.
    """

    formulation: str
    K: int
    M: int
    activation: str
    b: np.ndarray
    T: np.ndarray
    V: np.ndarray | None = None
    basis: np.ndarray | None = None
    singular_cutoff: float = 1e-10
    weight_decay: float = 0.0
    lr2: float = 1.0
    teacher_activation: str | None = None
    resolve_angles: bool = False

    @property
    def plain(self) -> bool:
        """Whether the flow is plain gradient flow (no weight decay, equal rates)."""
        return self.weight_decay == 0.0 and self.lr2 == 1.0

    def rate(self, y) -> tuple[np.ndarray, np.ndarray]:
        r"""``(s, d)`` with the options' flow $S f - \lambda\, d \odot y$: ``s`` is ``lr2`` on the
        ``a`` components and 1 elsewhere, ``d`` is ``lr2`` on ``a``, 2 on ``Q``, 1 on ``R``,
        ``W`` and ``C`` (module docstring)."""
        n = y.shape[-1]
        s = np.ones(n)
        s[: self.K] = self.lr2
        d = np.ones(n)
        d[: self.K] = self.lr2
        if self.formulation == "order-parameters":
            d[self.K : self.K + self.K * (self.K + 1) // 2] = 2.0
        return s, d

    @property
    def coords(self) -> int:
        return 0 if self.V is None else self.V.shape[-1]

    @property
    def size(self) -> int:
        K, M = self.K, self.M
        if self.formulation == "order-parameters":
            return K + K * (K + 1) // 2 + K * M
        return K + K * self.coords

    def take(self, index) -> FlowParams:
        """Parameters of a subset of a batch (arrays with a leading batch axis)."""
        pick = {}
        for name, ndim in (("b", 1), ("T", 2), ("V", 2)):
            x = getattr(self, name)
            if x is not None and x.ndim > ndim:
                pick[name] = x[index]
        return dataclasses.replace(self, **pick)

    def component(self, index: int) -> str:
        """Name of state component ``index``."""
        K = self.K
        if index < K:
            return f"a[{index}]"
        index -= K
        if self.formulation == "order-parameters":
            nq = K * (K + 1) // 2
            if index < nq:
                iu = _triu(K)
                return f"Q[{iu[0][index]},{iu[1][index]}]"
            index -= nq
            return f"R[{index // self.M},{index % self.M}]"
        name = "W" if self.formulation == "weight-space" else "C"
        return f"{name}[{index // self.coords},{index % self.coords}]"


def _check_formulation(formulation: str) -> str:
    return PARAMS["formulation"].accept(formulation)


def span_basis(W: np.ndarray, V: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Orthonormal basis ``E (D, r)`` of ``span{w_i, v_n}`` (rank-revealing SVD)."""
    A = np.concatenate([W, V]).T
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    r = int(np.sum(s > rtol * s[0]))
    return U[:, :r]


def initial_state(
    problem,
    formulation: str = "order-parameters",
    *,
    singular_cutoff: float = 1e-10,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
):
    r"""``(y0, params)`` of a `Problem` in the chosen formulation (with the classical
    options ``weight_decay`` and ``lr2`` of `FlowParams`).

    Parameters
    ----------
    problem : Problem
        The teacher, the initial student and the activation(s).
    formulation : str
        ``order-parameters``, ``weight-space`` or ``span`` (`FORMULATIONS`).
    singular_cutoff : float
        Regularisation of the Jacobian on aligned pairs (`FlowParams`, `gradient_jvp()`).
    weight_decay : float
        Weight decay $\lambda$ on both layers, in $[0, 10^3]$.
    lr2 : float
        The second layer's rate relative to the first, in $[0, 10^3]$; 0 freezes it.

    Returns
    -------
    tuple
        ``(y0, params)``: the state ``y0 (n,)`` ($n = K + K(K+1)/2 + KM$ in order parameters,
        $K + K D$ in weight space, $K + K r$ in the span) and its `FlowParams`.

    Raises
    ------
    InputError
        For an unknown formulation or a ``weight_decay`` or ``lr2`` outside its range.
    """
    _check_formulation(formulation)
    weight_decay = PARAMS["weight_decay"].accept(weight_decay)
    lr2 = PARAMS["lr2"].accept(lr2)
    K, M = problem.K, problem.M
    a, Q, R, b, T = problem.order_parameters()
    common = dict(
        formulation=formulation,
        K=K,
        M=M,
        activation=problem.activation,
        b=b,
        singular_cutoff=singular_cutoff,
        weight_decay=weight_decay,
        lr2=lr2,
        teacher_activation=problem.teacher_activation,
    )
    if formulation == "order-parameters":
        return pack_order_parameters(a, Q, R), FlowParams(T=T, **common)
    if formulation == "weight-space":
        y0 = np.concatenate([a, problem.W.ravel()])
        return y0, FlowParams(T=T, V=problem.V, **common)
    E = span_basis(problem.W, problem.V)
    C, B = problem.W @ E, problem.V @ E
    y0 = np.concatenate([a, C.ravel()])
    return y0, FlowParams(T=B @ B.T, V=B, basis=E, **common)


@functools.lru_cache(maxsize=64)
def _triu(K: int):
    return np.triu_indices(K)


def pack_order_parameters(a, Q, R):
    K = a.shape[-1]
    iu = _triu(K)
    return np.concatenate([a, Q[..., iu[0], iu[1]], R.reshape(*R.shape[:-2], -1)], axis=-1)


@functools.lru_cache(maxsize=64)
def _sym_index(K: int) -> np.ndarray:
    idx = np.zeros((K, K), dtype=int)
    iu = _triu(K)
    idx[iu] = np.arange(len(iu[0]))
    return np.maximum(idx, idx.T) if K > 1 else idx


def unpack_order_parameters(y, K: int, M: int):
    nq = K * (K + 1) // 2
    a = y[..., :K]
    Q = y[..., K : K + nq][..., _sym_index(K)]
    R = y[..., K + nq :].reshape(*y.shape[:-1], K, M)
    return a, Q, R


def _unpack_weights(y, p: FlowParams):
    return y[..., : p.K], y[..., p.K :].reshape(*y.shape[:-1], p.K, p.coords)


def _t(x):
    return np.swapaxes(x, -1, -2)


def state_to_order_parameters(y, p: FlowParams):
    """$(a, Q, R)$ of states ``y (..., n)``.

    Parameters
    ----------
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(a (..., K), Q (..., K, K), R (..., K, M))``.
    """
    if p.formulation == "order-parameters":
        return unpack_order_parameters(y, p.K, p.M)
    a, W = _unpack_weights(y, p)
    V = _expand_params(p, y)[2]
    return a, W @ _t(W), W @ _t(V)


def weights(y, p: FlowParams):
    """$(a, W)$ in $D$ dimensions (weight-space and span formulations).

    Parameters
    ----------
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(a (..., K), W (..., K, D))``; the span's coefficients mapped back through its basis.

    Raises
    ------
    InputError
        For the order-parameter formulation, which carries no weights.
    """
    if p.formulation == "order-parameters":
        raise InputError(
            "the order-parameter formulation does not carry weights; use "
            "formulation='weight-space' or 'span'"
        )
    a, W = _unpack_weights(y, p)
    return (a, W) if p.basis is None else (a, W @ p.basis.T)


def _expand_params(p: FlowParams, y):
    """``b, T, V`` broadcastable against states ``y (..., n)``."""
    extra = y.ndim - 1 - (p.b.ndim - 1)
    shape = (slice(None),) * (p.b.ndim - 1) + (None,) * extra

    def ex(x):
        return None if x is None else x[shape]

    return ex(p.b), ex(p.T), ex(p.V)


def _flow(y, p: FlowParams, b, T, V):
    """``(rhs, gradients, state pieces)`` of one evaluation of the flow."""
    if p.formulation == "order-parameters":
        a, Q, R = unpack_order_parameters(y, p.K, p.M)
        g = _gradients(
            a, Q, R, b, T, p.activation, with_loss=False, teacher_activation=p.teacher_activation
        )
        return pack_order_parameters(-g.g_a, *_order_parameter_velocity(g, Q, R, T)), g, (a, Q, R)
    a, W = _unpack_weights(y, p)
    Q, R = W @ _t(W), W @ _t(V)
    sines = _sines(W, V, p)
    g = _gradients(
        a,
        Q,
        R,
        b,
        T,
        p.activation,
        with_loss=False,
        teacher_activation=p.teacher_activation,
        sines=sines,
    )
    dW = -(2 * g.G @ W + g.H @ V)
    f = np.concatenate([-g.g_a, dW.reshape(*dW.shape[:-2], -1)], axis=-1)
    return f, g, (a, Q, R, W, sines)


def _sines(W, V, p: FlowParams):
    """The pair sines of the weights when ``p.resolve_angles`` asks for them and the kernels
    take them, else ``None``."""
    if not (p.resolve_angles and angle_resolved(p.activation, p.teacher_activation)):
        return None
    return student_sines(W), pair_sines(W, np.broadcast_to(V, (*W.shape[:-2], *V.shape[-2:])))


def rhs(t, y, p: FlowParams):
    r"""Population gradient flow $\mathrm{d}y/\mathrm{d}t$ in the formulation of ``p`` (vectorised
    over ``y``).

    Parameters
    ----------
    t : float
        Time; unused (the flow is autonomous), kept for the integrators' signature.
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    numpy.ndarray
        $\mathrm{d}y/\mathrm{d}t$, the shape of ``y``.
    """
    f = _flow(y, p, *_expand_params(p, y))[0]
    if p.plain:
        return f
    s, d = p.rate(y)
    return s * f - p.weight_decay * d * y


def jacobian(t, y, p: FlowParams):
    r"""Exact Jacobian $\partial\, \mathrm{rhs} / \partial y$ (``(..., n, n)``), by the chain rule
    through the kernels' second derivatives (`gradient_jvp()`), regularised only on exactly
    aligned ReLU pairs.

    Parameters
    ----------
    t : float
        Time; unused (the flow is autonomous).
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    numpy.ndarray
        Shape ``(..., n, n)``.
    """
    return rhs_and_jacobian(t, y, p)[1]


DIFFERENCE_STEP = float(np.sqrt(np.finfo(np.float64).eps))
"""Relative step of `difference_jacobian()` (``sqrt(eps)``, the forward difference's
balance of truncation against rounding)."""


def difference_jacobian(t, y, p: FlowParams):
    r"""Forward-difference Jacobian of `rhs()` at one state ``y (n,)``: column ``k`` is
    ``(rhs(y + h_k e_k) - rhs(y)) / h_k`` with $h_k = \sqrt{\epsilon} \max(|y_k|, 10^{-6})$ (rounded
    so that ``y_k + h_k`` is exact), all ``n`` perturbed states in one vectorised call of the
    right-hand side.

    Where the flow is smooth it agrees with `jacobian()` to about ``sqrt(eps)``; where it
    is not (a ReLU student exactly aligned with a teacher, $R_{in}^2 = Q_{ii} T_{nn}$, the state the
    ReLU flow converges to, where the one-sided derivatives differ) it is a secant across the
    kink, on which LSODA's Newton iteration converges where the exact one-sided Jacobian made it
    fail step after step (``docs/benchmarks.md``)."""
    h = DIFFERENCE_STEP * np.maximum(np.abs(y), 1e-6)
    shifted = y + np.diag(h)
    h = np.diagonal(shifted) - y
    f0 = rhs(t, y, p)
    return _t((rhs(t, shifted, p) - f0) / h[:, None])


@functools.lru_cache(maxsize=64)
def _order_parameter_directions(n: int, K: int, M: int):
    """The unit directions ``e_k`` of the order-parameter state as ``(da, dQ, dR)`` (read-only)."""
    parts = unpack_order_parameters(np.eye(n), K, M)
    for x in parts:
        x.flags.writeable = False
    return parts


def rhs_and_jacobian(t, y, p: FlowParams):
    """``(rhs(t, y, p), jacobian(t, y, p))`` sharing one gradient evaluation.

    Parameters
    ----------
    t : float
        Time; unused (the flow is autonomous).
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(f (..., n), J (..., n, n))``.
    """
    b, T, V = _expand_params(p, y)
    f, g, state = _flow(y, p, b, T, V)
    if p.formulation == "order-parameters":
        a, Q, R = state
        sines = None
        da, dQ, dR = _order_parameter_directions(y.shape[-1], p.K, p.M)
    else:
        a, Q, R, W, sines = state
        da, dW = _unpack_weights(np.eye(y.shape[-1]), p)
        We = W[..., None, :, :]
        dQ = dW @ _t(We) + We @ _t(dW)
        dR = dW @ _t(V[..., None, :, :])

    def ex(x):
        return np.expand_dims(x, -3)

    a_, Q_, R_ = a[..., None, :], ex(Q), ex(R)
    b_, T_ = b[..., None, :], ex(T)
    sines_ = None if sines is None else (ex(sines[0]), ex(sines[1]))
    dga, dG, dH = gradient_jvp(
        a_,
        Q_,
        R_,
        b_,
        T_,
        da,
        dQ,
        dR,
        p.activation,
        singular_cutoff=p.singular_cutoff,
        teacher_activation=p.teacher_activation,
        sines=sines_,
    )
    G, H = ex(g.G), ex(g.H)
    if p.formulation == "order-parameters":
        A = dG @ Q_ + G @ dQ
        B = dH @ _t(R_) + H @ _t(dR)
        dQdot = -(2 * A + 2 * _t(A) + B + _t(B))
        dRdot = -(2 * (dG @ R_ + G @ dR) + dH @ T_)
        cols = pack_order_parameters(-dga, dQdot, dRdot)
    else:
        dWdot = -(2 * (dG @ We + G @ dW) + dH @ V[..., None, :, :])
        cols = np.concatenate([-dga, dWdot.reshape(*dWdot.shape[:-2], -1)], axis=-1)
    J = _t(cols)
    if p.plain:
        return f, J
    s, d = p.rate(y)
    return s * f - p.weight_decay * d * y, s[:, None] * J - p.weight_decay * np.diag(d)


def gd_step(y, eta: float, p: FlowParams):
    r"""One step of population gradient descent, $W \to W - \eta\, \partial L/\partial W$,
    $a \to a - \eta\, \partial L/\partial a$ (with weight decay $\lambda$:
    $W \to (1 - \eta \lambda) W - \eta\, \partial L/\partial W$, and the $a$ step times ``lr2``).

    In order parameters it is the weight-space map's exact image,
    $Q \to Q + \eta \dot Q + \eta^2 (\partial L/\partial W)(\partial L/\partial W)^\top$.

    Parameters
    ----------
    y : numpy.ndarray
        State(s) ``(..., n)`` in the formulation of ``p`` (`initial_state()`).
    eta : float
        The step size $\eta$.
    p : FlowParams
        The teacher, activation, formulation and options (`initial_state()`).

    Returns
    -------
    numpy.ndarray
        The state after one step, the shape of ``y``.
    """
    if p.formulation != "order-parameters":
        return y + eta * rhs(0.0, y, p)
    b, T, _ = _expand_params(p, y)
    a, Q, R = unpack_order_parameters(y, p.K, p.M)
    g = _gradients(
        a, Q, R, b, T, p.activation, with_loss=False, teacher_activation=p.teacher_activation
    )
    G, H = g.G, g.H
    dQ, dR = _order_parameter_velocity(g, Q, R, T)
    GRHt = G @ R @ _t(H)
    outer = 4 * (G @ Q) @ G + 2 * GRHt + 2 * _t(GRHt) + H @ T @ _t(H)
    if p.plain:
        return pack_order_parameters(a - eta * g.g_a, Q + eta * dQ + eta**2 * outer, R + eta * dR)
    keep = 1.0 - eta * p.weight_decay  # W -> keep W - eta dL/dW
    return pack_order_parameters(
        a - eta * p.lr2 * (g.g_a + p.weight_decay * a),
        keep**2 * Q + eta * keep * dQ + eta**2 * outer,
        keep * R + eta * dR,
    )

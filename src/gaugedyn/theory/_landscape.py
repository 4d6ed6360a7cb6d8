r"""Critical points of the population loss, the Hessian there, its index and its zero modes.

The population loss ``L(theta)`` of a `Problem` has the gradient $g = -\mathrm{rhs}(\theta)$ and
the Hessian $H = -\partial\, \mathrm{rhs} / \partial \theta$ of the plain gradient flow
(`rhs_and_jacobian()`, in the weight-space or span formulation: one definition of both). A critical
point solves
$g(\theta) = 0$; `fixed_point()` finds a zero of any vector field ``F`` by
Levenberg-Marquardt,

$$
(J^T J + \mu_k I)\,\delta_k = -J^T F(y_k),\qquad \mu_k = \theta_k |F(y_k)|^2,
$$

accepting ``y_k + delta_k`` when the actual decrease of $|F|^2$ is at least ``1e-4`` of the
decrease the linear model predicts (``theta_k`` shrinks by 4 above a ratio of 0.75 and grows by
4 below 0.25). With ``mu_k`` proportional to $|F|^2$ the iteration is Newton's near a
nondegenerate zero (quadratic convergence) and stays quadratic on a manifold of zeros under a
local error bound (Yamashita and Fukushima 2001), as on the gauge orbits of ReLU critical
points; it converges to zeros of every index, where minimising ``L`` would find minima only.
The step is solved through the singular value decomposition of ``J``, so a singular ``J`` needs
no special case.

At the point `critical_point()` reports the spectrum of ``H``, its index (the number of
eigenvalues below $-\mathit{zero\_tol} \max |\lambda|$), the unstable rates $\lambda_+ = -\lambda$
of the flow $d\delta/dt = -H \delta$ along them, and its null space
($|\lambda| \le \mathit{zero\_tol} \max |\lambda|$) with the zero modes the symmetries of the model predict:

- rotations of the input space that fix the teacher: ``k n - k (k + 1) / 2`` with ``n = d - M``
  (``d`` coordinates of the state) and ``k`` the rank of the students' components outside the
  teacher span;
- the rescaling gauge of a positively homogeneous activation (``gaugedyn.gauge.find_units``'
  kind ``rescale``): ``(a_i, w_i) -> (a_i / c, c w_i)``, infinitesimally ``(-a_i, w_i)``, one
  per active unit ($\rho_i \ne 0$);
- coinciding units: ``m`` active units along one direction (homogeneous ``g``) or with one
  weight vector (any ``g``) form one function of their summed coefficient, ``m - 1`` more;
  so does a dead unit along an active unit's direction (its coefficient traded with the
  active unit's: the function is unchanged, and its correlation's gradient is the active
  unit's, zero), one more per such dead unit;
- a dead unit (``rho_i = 0``): its weights move freely on ``E[(f - f*) g(w_i . x)] = 0``
  (``d - 1`` directions, ``d`` if that correlation's gradient vanishes).

The predicted count is the dimension these directions span together (they may overlap), and
each kind's directions are checked to lie in the measured null space.

In the span formulation the Hessian of the full ``D``-dimensional weight space is the span's
block plus ``2 G`` (`gradients()`) on each of the ``D - r`` directions orthogonal to the
span, where ``G`` is constant to first order; the full index and counts are reported too.
In the order-parameter formulation the linearised flow ``J`` is not symmetric. Where the map
``phi`` from weights to order parameters is onto (the students' components outside the teacher
span have full rank), ``J Dphi = -Dphi H`` makes ``-J`` similar to ``H`` on the complement of the
rotations, so the spectrum, the index and the gauge and coinciding modes carry over without the
rotations; where it is not (students in the teacher span, or coinciding), the order parameters
have directions the weights reach only at second order, with eigenvalues of their own.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._errors import InputError
from .._json import strict
from .._options import Param
from ._activation import activation_of
from ._flows import (
    FORMULATIONS,
    FlowParams,
    _sines,
    initial_state,
    pack_order_parameters,
    rhs_and_jacobian,
    state_to_order_parameters,
    weights,
)
from ._observables import ODD_ACTIVATIONS
from ._population import _gradients, pair_sines
from ._problem import Problem

SETTINGS = {
    "tol": Param(
        float,
        default=1e-11,
        name="tol",
        lo=0,
        lo_open=True,
        hi=1e-2,
        why="a critical point is a zero of the gradient",
        help="stop once the gradient norm |dL/dtheta| is at most this",
    ),
    "max_iter": Param(
        int,
        default=100,
        name="max_iter",
        lo=1,
        hi=10_000,
        why="Levenberg-Marquardt converges in tens of steps or not at all",
        help="most Levenberg-Marquardt iterations",
    ),
    "zero_tol": Param(
        float,
        default=1e-8,
        name="zero_tol",
        lo=0,
        lo_open=True,
        hi=1e-2,
        why="an eigenvalue above a percent of the largest is not a zero mode",
        help="eigenvalues with |lambda| <= zero_tol max|lambda| are zero modes",
    ),
    "coincide_tol": Param(
        float,
        default=1e-6,
        name="coincide_tol",
        lo=0,
        lo_open=True,
        hi=1e-1,
        why="units further apart are distinct features",
        help="units whose directions (homogeneous g) or weights (any g) "
        "differ by at most this, relatively, coincide",
    ),
    "snap": Param(
        float,
        default=5e-2,
        name="snap",
        lo=0,
        hi=0.2,
        why="units further apart are not a perturbed coincidence",
        help="when Newton stalls, units within this of coinciding are made to "
        "coincide and refined again (0: never)",
    ),
}
"""The settings of `critical_point()`, declared once (default, bounds and why)."""

STATUS = {
    1: "converged: |F| <= tol",
    0: "max_iter reached",
    -1: "stalled: no step decreases |F| (a minimum of |F|^2 that is not a zero, or round-off)",
}


@dataclass
class FixedPoint:
    """A zero of a vector field found by `fixed_point()` (scipy ``OptimizeResult`` style).

    ``y``: the point; ``fun``: ``F(y)``; ``jac``: ``J(y)``; ``norm``: ``|F(y)|``; ``history``:
    ``|F|`` after each accepted step (the first entry at the start); ``nit``, ``nfev``;
    ``status`` (`STATUS`), ``message``, ``success`` (``status == 1``).
    """

    y: np.ndarray
    fun: np.ndarray
    jac: np.ndarray
    norm: float
    history: list
    nit: int
    nfev: int
    status: int
    message: str

    @property
    def success(self) -> bool:
        return self.status == 1


def _fd_jacobian(fun: Callable, y: np.ndarray, f0: np.ndarray) -> np.ndarray:
    r"""Central differences with steps $\epsilon^{1/3} \max(1, |y_j|)$ (error ``~ 1e-10`` relative)."""
    J = np.empty((f0.size, y.size))
    for j in range(y.size):
        h = 6e-6 * max(1.0, abs(y[j]))
        e = np.zeros_like(y)
        e[j] = h
        J[:, j] = (np.asarray(fun(y + e)) - np.asarray(fun(y - e))) / (2 * h)
    return J


def fixed_point(
    fun: Callable,
    y0,
    *,
    jac: Callable | bool | None = None,
    tol: float = 1e-11,
    max_iter: int = 100,
) -> FixedPoint:
    r"""A zero of $F = $ ``fun(y)`` by Levenberg-Marquardt (module docstring).

    ``jac``: a callable ``J(y)``; ``True`` when ``fun`` returns ``(F, J)``; ``None`` for central
    differences. Stops at $|F| \le$ ``tol``, after ``max_iter`` iterations, or when no step
    decreases $|F|$ ($\theta$ beyond $10^{16}$).

    Parameters
    ----------
    fun : Callable
        The vector field, ``fun(y) -> F`` (or ``(F, J)`` with ``jac=True``) for a 1-D ``y``.
    y0 : array_like
        The start, finite (flattened).
    jac : Callable, bool or None
        ``J(y)``; ``True``: ``fun`` returns the Jacobian too; ``None`` or ``False``: central
        differences.
    tol : float
        Stop at $|F| \le$ ``tol``, in $(0, 10^{-2}]$.
    max_iter : int
        The most iterations, in $[1, 10^4]$.

    Returns
    -------
    FixedPoint
        The last accepted point with $F$, $J$, $|F|$, its history, counts and ``status``
        (``1`` converged, ``0`` ``max_iter`` reached, ``-1`` stalled).

    Raises
    ------
    InputError
        For ``tol`` or ``max_iter`` outside its range, or a ``y0`` that is not finite.
    """
    tol = SETTINGS["tol"].accept(tol)
    max_iter = SETTINGS["max_iter"].accept(max_iter)
    y = np.array(y0, dtype=np.float64).ravel()
    if not np.all(np.isfinite(y)):
        raise InputError("y0 must be finite")
    count = [0]

    def evaluate(x):
        count[0] += 1
        if jac is True:
            F, J = fun(x)
        else:
            F = np.asarray(fun(x), dtype=np.float64).ravel()
            J = jac(x) if callable(jac) else _fd_jacobian(fun, x, F)
        return np.asarray(F, dtype=np.float64).ravel(), np.asarray(J, dtype=np.float64)

    F, J = evaluate(y)
    norm = float(np.linalg.norm(F))
    history = [norm]
    theta, status, nit = 1.0, 0, 0
    while nit < max_iter:
        if norm <= tol:
            status = 1
            break
        if not np.isfinite(norm):
            break
        nit += 1
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        c = U.T @ F
        mu = theta * norm * norm
        step = -Vt.T @ (s * c / (s * s + mu))
        predicted = norm**2 - float(np.sum((F + J @ step) ** 2))
        y_new = y + step
        F_new, J_new = evaluate(y_new)
        norm_new = float(np.linalg.norm(F_new))
        actual = norm**2 - norm_new**2
        ratio = actual / predicted if predicted > 0 else -1.0
        if np.isfinite(norm_new) and ratio > 1e-4:
            y, F, J, norm = y_new, F_new, J_new, norm_new
            history.append(norm)
        if ratio > 0.75:
            theta = max(theta / 4.0, 1e-16)
        elif ratio < 0.25:
            theta *= 4.0
            if theta > 1e16:
                status = -1
                break
    else:
        if norm <= tol:
            status = 1
    return FixedPoint(
        y=y,
        fun=F,
        jac=J,
        norm=norm,
        history=history,
        nit=nit,
        nfev=count[0],
        status=status,
        message=STATUS[status],
    )


@dataclass
class CriticalPoint:
    r"""A critical point of the population loss, with the Hessian there (`critical_point()`).

    ``problem``: the point as a `Problem` (the teacher as given; in the start's
    coordinates, or a realisation of the order parameters); ``y``, ``params``: the state in its
    formulation; ``loss``; ``grad_norm``: ``|dL/dtheta|`` (order parameters: ``|d(a, Q, R)/dt|``);
    ``hessian``: the symmetrised ``H`` (order parameters: ``-J``) and ``asymmetry``
    $|H - H^\top| / |H|$ before symmetrising; ``eigenvalues`` (ascending, real parts for order
    parameters) and ``eigenvectors`` (columns); ``index``; ``unstable_rates``
    (``lambda_+``, largest first); ``null_space`` (orthonormal columns); ``gauge``: an
    orthonormal basis of the rescaling generators ``(-a_i, w_i)`` of the active units (order
    parameters: their image); ``modes``: the zero modes ``measured`` and those the symmetries
    predict, by kind (``rotation``, ``gauge``, ``coinciding``, ``dead``: the dimension each
    spans), ``predicted`` (the dimension they span together) and ``unexplained`` (measured
    minus predicted); ``residual``: per kind, the largest distance of its unit directions from
    the null space (zero when the symmetry's directions are zero modes); ``units``: the
    active, dead and coinciding units; ``full``: the index and zero modes in all ``D``
    coordinates (span formulation); ``nit``, ``nfev``, ``status``, ``message``, ``history``.
    """

    problem: Problem
    formulation: str
    y: np.ndarray
    params: FlowParams
    loss: float
    grad_norm: float
    hessian: np.ndarray
    asymmetry: float
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    index: int
    unstable_rates: np.ndarray
    null_space: np.ndarray
    gauge: np.ndarray
    residual: dict
    modes: dict
    units: dict
    full: dict
    nit: int
    nfev: int
    status: int
    message: str
    history: list
    settings: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status == 1

    @property
    def singular(self) -> bool:
        """Whether some unit's weights collapsed to zero (``units["collapsed"]``), where the
        model's parameterisation is singular and the Hessian is not defined."""
        return bool(self.units["collapsed"])

    @property
    def lambda_plus(self) -> float:
        """The largest unstable rate (NaN at a minimum)."""
        return float(self.unstable_rates[0]) if self.unstable_rates.size else float("nan")

    @property
    def unstable_direction(self) -> np.ndarray:
        """The unit eigenvector of the most negative eigenvalue (in the state's coordinates)."""
        return self.eigenvectors[:, 0]

    def to_dict(self) -> dict:
        """JSON-ready summary (no matrices)."""
        return strict(
            {
                "formulation": self.formulation,
                "loss": self.loss,
                "grad_norm": self.grad_norm,
                "index": self.index,
                "unstable_rates": self.unstable_rates,
                "eigenvalues": self.eigenvalues,
                "asymmetry": self.asymmetry,
                "residual": self.residual,
                "modes": self.modes,
                "units": self.units,
                "full": self.full,
                "nit": self.nit,
                "nfev": self.nfev,
                "status": self.status,
                "message": self.message,
                "history": self.history,
                "settings": self.settings,
                "problem": self.problem.describe(),
            }
        )


def _check_start(start, formulation: str, singular_cutoff: float):
    """``(y, params, problem)`` of a `Problem`, a `CriticalPoint` or a state
    ``(y, FlowParams)``, with ``resolve_angles`` on."""
    if formulation not in FORMULATIONS:
        raise InputError(
            f"formulation={formulation!r} is not allowed; choose one of {', '.join(FORMULATIONS)}"
        )
    if isinstance(start, CriticalPoint):
        start = start.problem
    if isinstance(start, Problem):
        y, p = initial_state(start, formulation, singular_cutoff=singular_cutoff)
        problem = start
    elif isinstance(start, tuple) and len(start) == 2 and isinstance(start[1], FlowParams):
        y, p = np.array(start[0], dtype=np.float64), start[1]
        if y.shape != (p.size,):
            raise InputError(
                f"state of shape {y.shape} does not match its parameters "
                f"({p.size} numbers); give one state, no batch"
            )
        problem = None
    else:
        raise InputError(
            f"start={type(start).__name__} is not allowed; allowed: a Problem, a "
            "CriticalPoint or a state (y, FlowParams) of initial_state"
        )
    if not p.plain:
        raise InputError(
            "critical points are those of the plain gradient flow; the state has "
            f"weight_decay={p.weight_decay}, lr2={p.lr2}"
        )
    if p.b.ndim != 1:
        raise InputError("give one state, not a batch")
    return y, dataclasses.replace(p, resolve_angles=True), problem


def _loss(y, p: FlowParams) -> float:
    """``L`` at ``y`` (weights: with the pair sines of the weights)."""
    a, Q, R = state_to_order_parameters(y, p)
    sines = None
    if p.formulation != "order-parameters":
        _, W, V = _coords(y, p)
        sines = _sines(W, V, p)
    return float(
        _gradients(
            a,
            Q,
            R,
            p.b,
            p.T,
            p.activation,
            with_loss=True,
            teacher_activation=p.teacher_activation,
            sines=sines,
        ).loss
    )


def realize(
    a, Q, R, b, T, activation="relu", teacher_activation=None, setup: dict | None = None
) -> Problem:
    r"""A `Problem` with order parameters $(a, Q, R)$ and teacher $(b, T)$, in $M + K$
    coordinates: $V$ the Cholesky factor of $T$, $W = [R V^{-\top}, U \sqrt{s}]$ with
    $Q - R T^{-1} R^\top = U \operatorname{diag}(s) U^\top$ (negative round-off clipped).

    Parameters
    ----------
    a : array_like
        Student second-layer weights, shape ``(K,)``.
    Q : array_like
        Student overlaps, shape ``(K, K)``.
    R : array_like
        Student-teacher overlaps, shape ``(K, M)``.
    b : array_like
        Teacher second-layer weights, shape ``(M,)``.
    T : array_like
        Teacher overlaps, shape ``(M, M)``, positive definite.
    activation : str or Activation
        The students' activation.
    teacher_activation : str, Activation or None
        The teacher's activation; ``None``: the students'.
    setup : dict or None
        Recorded as the problem's ``setup``; ``None``: ``{"name": "realized"}``.

    Returns
    -------
    Problem
        Weights in $D = M + K$ dimensions realising $(a, Q, R, b, T)$.

    Raises
    ------
    numpy.linalg.LinAlgError
        For a ``T`` that is not positive definite (the Cholesky factor).
    InputError
        As `Problem` does, e.g. for a student with $Q_{ii} = 0$.
    """
    a, Q, R, b, T = (np.asarray(x, dtype=np.float64) for x in (a, Q, R, b, T))
    K, M = a.shape[0], b.shape[0]
    L = np.linalg.cholesky(T)
    Wp = np.linalg.solve(L, R.T).T
    S = Q - Wp @ Wp.T
    s, U = np.linalg.eigh(0.5 * (S + S.T))
    Wo = U * np.sqrt(np.maximum(s, 0.0))
    W = np.concatenate([Wp, Wo], axis=1)
    V = np.concatenate([L, np.zeros((M, K))], axis=1)
    return Problem(
        a=a,
        W=W,
        b=b,
        V=V,
        activation=activation,
        teacher_activation=teacher_activation,
        setup=dict(setup or {"name": "realized"}),
    )


def _problem_at(y, p: FlowParams, start_problem: Problem | None) -> Problem:
    if p.formulation == "order-parameters":
        a, Q, R = state_to_order_parameters(y, p)
        setup = start_problem.setup if start_problem is not None else {"name": "realized"}
        return realize(a, Q, R, p.b, p.T, p.activation, p.teacher_activation, setup)
    a, W = weights(y, p)
    if start_problem is not None and W.shape[1] == start_problem.dim:
        return start_problem.replace(a=np.array(a), W=np.array(W))
    assert p.V is not None  # weight-space and span states carry the teacher
    V = p.V if p.basis is None else p.V @ p.basis.T
    return Problem(
        a=np.array(a),
        W=np.array(W),
        b=p.b,
        V=V,
        activation=p.activation,
        teacher_activation=p.teacher_activation,
        setup={"name": "critical point"},
    )


def _coords(y, p: FlowParams):
    """``(a, W, V)`` in the state's own coordinates (``D`` or the span's ``r``)."""
    a = y[: p.K]
    return a, y[p.K :].reshape(p.K, p.coords), p.V


def _parity(activation) -> int:
    """``-1`` for an odd activation (`ODD_ACTIVATIONS`: ``a g(w.x) = (-a) g(-w.x)``),
    ``0`` otherwise."""
    return -1 if activation_of(activation).name in ODD_ACTIVATIONS else 0


def _groups(a, W, b, V, activation, tol: float, near: float | None = None):
    r"""``(active, dead, collapsed, groups, sign)``: active units; dead units
    ($|\rho_i| \le \mathit{tol} \max_n |b_n| |v_n|$ for homogeneous ``g``,
    $|a_i| \le \mathit{tol} \max_n |b_n|$ otherwise); collapsed units
    ($|w_i| \le \mathit{tol} \max_n |v_n|$, where the model is singular);
    groups of active units coinciding to ``near`` (default ``tol``; one direction for
    homogeneous ``g``, one weight vector otherwise; for odd ``g`` also the opposite one) and
    each unit's sign ``sigma_i`` relative to its group's first unit (``a_i g(w_i . x) =
    sigma_i a_i |w_i| / |w_0| g(w_0 . x)``)."""
    near = tol if near is None else near
    n = np.linalg.norm(W, axis=1)
    vmax = float(np.max(np.linalg.norm(V, axis=1)))
    if activation_of(activation).homogeneous:
        size, scale = np.abs(a) * n, np.max(np.abs(b) * np.linalg.norm(V, axis=1))
    else:
        size, scale = np.abs(a), np.max(np.abs(b))
    collapsed = [i for i in range(a.size) if n[i] <= tol * vmax]
    active = [i for i in range(a.size) if size[i] > tol * scale and i not in collapsed]
    dead = [i for i in range(a.size) if i not in active and i not in collapsed]
    same, flip = _coincide(W, activation, near)
    groups: list[list[int]] = []
    sign = np.ones(a.size)
    for i in active:
        for g in groups:
            if same[i, g[0]] or flip[i, g[0]]:
                g.append(i)
                sign[i] = 1.0 if same[i, g[0]] else -1.0
                break
        else:
            groups.append([i])
    return active, dead, collapsed, [g for g in groups if len(g) > 1], sign


def _coincide(W, activation, tol: float):
    """``(same, flip)``: pairs of units with one direction (homogeneous ``g``: pair sines at
    most ``tol``) or one weight vector (relatively, to ``tol``), and, for odd ``g``, pairs with
    opposite ones."""
    odd = _parity(activation) == -1
    n = np.linalg.norm(W, axis=1)
    if activation_of(activation).homogeneous:
        sin = pair_sines(W, W) / np.maximum(np.outer(n, n), 1e-300)
        dot = W @ W.T
        return (sin <= tol) & (dot > 0), (sin <= tol) & (dot < 0) & odd
    big = tol * np.maximum.outer(n, n)
    same = np.linalg.norm(W[:, None] - W[None], axis=-1) <= big
    flip = (np.linalg.norm(W[:, None] + W[None], axis=-1) <= big) & odd
    return same, flip


def _dead_pairs(W, activation, active, dead, tol: float) -> list:
    """``[(i, j, sigma)]``: each dead unit ``i`` coinciding (`_coincide()`) with an active
    unit ``j`` (the first), with its sign relative to ``j``."""
    same, flip = _coincide(W, activation, tol)
    out = []
    for i in dead:
        for j in active:
            if same[i, j] or flip[i, j]:
                out.append((int(i), int(j), 1.0 if same[i, j] else -1.0))
                break
    return out


def _orthonormal(X, tol: float):
    """An orthonormal basis of the columns of ``X`` (rank-revealing SVD)."""
    if X.shape[1] == 0:
        return X
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    return U[:, s > tol * max(float(s[0]), 1e-300)]


def _directions(
    a, W, V, Hw, homogeneous: bool, tol: float, groups, sign, dead, collapsed, pairs=()
) -> dict:
    """Tangent vectors ``(da, dW)`` (columns, in the weights' coordinates) of the symmetries
    that leave the loss unchanged (module docstring): ``rotation``, ``gauge``, ``coinciding``
    (also a dead unit's coefficient traded with the active unit it coincides with, ``pairs``
    of `_dead_pairs()`) and ``dead`` (a unit with ``rho_i = 0``: its ``w_i`` moves freely
    within ``E[(f - f*) g(w_i . x)] = 0``, whose normal is the Hessian's ``(a_i, w_i)``
    block)."""
    K, d = W.shape

    def vec(i=None, da=0.0, dw=None, dW=None):
        out = np.zeros(K + K * d)
        if dW is not None:
            out[K:] = dW.ravel()
        if i is not None:
            out[i] = da
            if dw is not None:
                out[K + i * d : K + (i + 1) * d] = dw
        return out

    active = [i for i in range(K) if i not in dead and i not in collapsed]
    cols: dict[str, list] = {"rotation": [], "gauge": [], "coinciding": [], "dead": []}
    Uv, sv, _ = np.linalg.svd(V.T, full_matrices=True)
    P = Uv[:, int(np.sum(sv > tol * sv[0])) :]
    if P.shape[1]:
        U, sx, _ = np.linalg.svd((W @ P @ P.T).T, full_matrices=False)
        B = U[:, sx > tol * float(np.max(np.linalg.norm(W, axis=1)))]
        for e in B.T:
            for f in P.T:
                A = np.outer(e, f) - np.outer(f, e)
                cols["rotation"].append(vec(dW=W @ A))
    norms = np.linalg.norm(W, axis=1)
    if homogeneous:
        cols["gauge"] = [vec(i, -a[i], W[i]) for i in active]
    for g in groups:
        for j in g[1:]:
            v = vec(g[0], 1.0 / norms[g[0]] if homogeneous else 1.0)
            v[j] = -sign[j] / norms[j] if homogeneous else -sign[j]
            cols["coinciding"].append(v)
    for i, j, sg in pairs:
        v = vec(j, 1.0 / norms[j] if homogeneous else 1.0)
        v[i] = -sg / norms[i] if homogeneous else -sg
        cols["coinciding"].append(v)
    for i in dead:
        normal = Hw[i, K + i * d : K + (i + 1) * d]
        free = np.linalg.svd(normal[None, :], full_matrices=True)[2]
        rank = int(np.linalg.norm(normal) > tol * max(float(np.max(np.abs(Hw))), 1e-300))
        cols["dead"] += [vec(i, 0.0, t) for t in free[rank:]]
    return {k: (np.array(v).T if v else np.zeros((K + K * d, 0))) for k, v in cols.items()}


def _to_order_parameters(X, W, V):
    """Weight tangents ``(da, dW)`` (columns) pushed to ``(da, dQ, dR)`` (packed)."""
    K, d = W.shape
    out = []
    for v in X.T:
        dW = v[K:].reshape(K, d)
        dQ = dW @ W.T + W @ dW.T
        out.append(pack_order_parameters(v[:K], dQ, dW @ V.T))
    return np.array(out).T if out else np.zeros((K + K * (K + 1) // 2 + K * V.shape[0], 0))


def _modes(y, p: FlowParams, H, null, measured: int, tol: float):
    """Zero modes measured and predicted by the symmetries, with the largest distance of each
    kind's directions from the null space."""
    homogeneous = activation_of(p.activation).homogeneous
    if p.formulation == "order-parameters":
        a, Q, R = state_to_order_parameters(y, p)
        pr = realize(a, Q, R, p.b, p.T, p.activation, p.teacher_activation)
        yw, pw = initial_state(pr, "weight-space")
        pw = dataclasses.replace(pw, resolve_angles=True)
        Hw = -rhs_and_jacobian(0.0, yw, pw)[1]
        W, V = pr.W, pr.V
    else:
        a, W, V = _coords(y, p)
        Hw = H
    active, dead, collapsed, groups, sign = _groups(a, W, p.b, V, p.activation, tol)
    pairs = _dead_pairs(W, p.activation, active, dead, tol)
    dirs = _directions(a, W, V, Hw, homogeneous, tol, groups, sign, dead, collapsed, pairs)
    if p.formulation == "order-parameters":
        dirs = {k: _to_order_parameters(X, W, V) for k, X in dirs.items()}
        dirs["rotation"] = dirs["rotation"][:, :0]
    counts, residual = {}, {}
    for k, X in dirs.items():
        basis = _orthonormal(X, 1e-8)
        counts[k] = int(basis.shape[1])
        residual[k] = (
            float(np.max(np.linalg.norm(basis - null @ (null.T @ basis), axis=0)))
            if basis.shape[1]
            else 0.0
        )
    everything = _orthonormal(np.concatenate(list(dirs.values()), axis=1), 1e-8)
    predicted = int(everything.shape[1])
    modes = {
        "measured": measured,
        **counts,
        "predicted": predicted,
        "unexplained": measured - predicted,
    }
    units = {
        "active": active,
        "dead": dead,
        "collapsed": collapsed,
        "coinciding": groups,
        "dead_coinciding": [[i, j] for i, j, _ in pairs],
    }
    gauge = _orthonormal(dirs["gauge"], 1e-8)
    return modes, units, gauge, residual


def _spectrum(H: np.ndarray, symmetric: bool):
    if symmetric:
        lam, vec = np.linalg.eigh(H)
        return lam, vec
    lam, vec = np.linalg.eig(H)
    order = np.argsort(lam.real)
    return lam.real[order], vec[:, order].real


def _onto_strata(fun, fp, p, snap, coincide_tol, tol, max_iter):
    """`critical_point()`'s refinement onto exact coincidence (`_snap()`) and exact death
    (`_zero_dead()`), each kept only where it is at least as critical; returns ``(fp, snapped,
    zeroed)``."""
    snapped: list = []
    if snap > 0 and p.formulation != "order-parameters":
        y1, snapped = _snap(fp.y, p, snap, coincide_tol)
        if snapped and fp.success and np.linalg.norm(fun(y1)[0]) > fp.norm:
            snapped = []  # their exact coincidence is less critical: the units are distinct
        if snapped:
            fp1 = fixed_point(fun, y1, jac=True, tol=tol, max_iter=max_iter)
            if fp1.success or fp1.norm < fp.norm:
                fp = dataclasses.replace(
                    fp1,
                    nit=fp.nit + fp1.nit,
                    nfev=fp.nfev + fp1.nfev,
                    history=fp.history + fp1.history,
                )
            else:
                snapped = []
    zeroed: list = []
    if snap > 0 and p.formulation != "order-parameters" and fp.success:
        y2, zeroed = _zero_dead(fp.y, p, snap, coincide_tol)
        if zeroed and np.linalg.norm(fun(y2)[0]) <= fp.norm:
            fp2 = fixed_point(fun, y2, jac=True, tol=tol, max_iter=max_iter)
            fp = dataclasses.replace(
                fp2, nit=fp.nit + fp2.nit, nfev=fp.nfev + fp2.nfev, history=fp.history + fp2.history
            )
        else:
            zeroed = []
    return fp, snapped, zeroed


def critical_point(
    start,
    *,
    formulation: str = "span",
    tol: float = 1e-11,
    max_iter: int = 100,
    zero_tol: float = 1e-8,
    coincide_tol: float = 1e-6,
    snap: float = 5e-2,
    singular_cutoff: float = 1e-10,
) -> CriticalPoint:
    r"""The critical point of the population loss nearest (in Newton's sense) to ``start``.

    ``start``: a `Problem` (its student is the start), a `CriticalPoint`, or a
    state ``(y, params)`` of `initial_state()` (any formulation, plain flow). Runs
    `fixed_point()` on the gradient $-\mathrm{rhs}$ with the Hessian $-\mathrm{jacobian}$ of the
    ``formulation`` (``span``: exact at any $D$ in $r \le K + M$ coordinates;
    ``weight-space``: all $K (D + 1)$ coordinates; ``order-parameters``: the flow of
    $(a, Q, R)$), the ReLU kernels evaluated with the weights' pair sines
    (``FlowParams.resolve_angles``) so that the gradient keeps full precision at aligned units.
    ``zero_tol`` and ``coincide_tol``: see `SETTINGS` and the module docstring.
    ``singular_cutoff`` bounds the ReLU second derivatives of aligned pairs (`gradient_jvp()`).

    ``snap``: when some active units lie within ``snap`` (relatively) of coinciding, they are
    made to coincide exactly (`_snap()`: one direction, each unit's norm kept, for
    homogeneous $g$; one weight vector otherwise; both weighted by the coefficients). When
    the iteration stopped short of ``tol`` it restarts there and the better of the two results
    is kept; when it converged, the exact coincidence is kept if it is at least as critical
    ($|\partial L/\partial\theta|$ there at most the converged point's), and refined from there.
    ``settings["snapped"]`` names the groups. Likewise a converged point's units that the
    zero-mode count calls dead ($\rho_i$ or $a_i$ within ``coincide_tol`` of zero, `SETTINGS`)
    are made exactly dead when that is at least as critical (`_zero_dead()`: $a_i = 0$, and a
    unit within ``snap`` of an active unit's direction takes it and hands it its coefficient;
    ``settings["zeroed"]``), so that the spectrum is measured on the stratum the count
    assumes. Coinciding units split along directions that are flat to fourth order
    (for erf $g'' = -z g'$ makes the splitting curvature vanish at a critical point), where
    Newton's method crawls; exact coincidence is an invariant set of the flow for units of one
    coefficient, and the symmetric saddles of the plateaus lie on it. A unit of small
    coefficient $a_i$ is held to its direction only by a gradient of order $|a_i|$ times
    its misalignment, so $|\partial L/\partial\theta| \le$ ``tol`` leaves its direction uncertain
    by about ``tol`` $/ |a_i|$: Newton's method can stop with it a few $10^{-6}$ off the others'
    direction, at a point whose spectrum is neither the coincident one nor a distinct unit's,
    while the exact coincidence there is the better critical point (the landscape docs page's
    zero-mode section). ``0`` never snaps.

    Parameters
    ----------
    start : Problem, CriticalPoint or tuple
        A `Problem`, a `CriticalPoint` (its problem), or ``(y, FlowParams)`` of one plain-flow
        state.
    formulation : str
        ``span``, ``weight-space`` or ``order-parameters`` (used for a ``Problem`` start).
    tol : float
        Stop at $|\partial L/\partial\theta| \le$ ``tol``, in $(0, 10^{-2}]$.
    max_iter : int
        The most Levenberg-Marquardt iterations, in $[1, 10^4]$.
    zero_tol : float
        Eigenvalues with $|\lambda| \le$ ``zero_tol`` $\max|\lambda|$ are zero modes, in
        $(0, 10^{-2}]$.
    coincide_tol : float
        Units whose directions (homogeneous $g$) or weights differ by at most this, relatively,
        coincide, in $(0, 0.1]$.
    snap : float
        Distance within which units are made to coincide when Newton stalls, in $[0, 0.2]$;
        ``0``: never.
    singular_cutoff : float
        Bound on the ReLU second derivatives of aligned pairs (`gradient_jvp()`).

    Returns
    -------
    CriticalPoint
        The point with its Hessian spectrum, index, unstable rates, zero modes (measured and
        predicted), settings and the iteration's status.

    Raises
    ------
    InputError
        For a setting outside its range, an unknown formulation, a ``start`` of another type, a
        state that does not match its parameters or is a batch, or a flow with weight decay or
        ``lr2 != 1``.
    """
    zero_tol = SETTINGS["zero_tol"].accept(zero_tol)
    coincide_tol = SETTINGS["coincide_tol"].accept(coincide_tol)
    snap = SETTINGS["snap"].accept(snap)
    y0, p, problem = _check_start(start, formulation, singular_cutoff)

    def fun(y):
        f, J = rhs_and_jacobian(0.0, y, p)
        return -f, -J

    fp = fixed_point(fun, y0, jac=True, tol=tol, max_iter=max_iter)
    fp, snapped, zeroed = _onto_strata(fun, fp, p, snap, coincide_tol, tol, max_iter)
    y = fp.y
    H = fp.jac
    symmetric = p.formulation != "order-parameters"
    size = max(float(np.linalg.norm(H)), 1e-300)
    asym = float(np.linalg.norm(H - H.T)) / size
    if symmetric:
        H = 0.5 * (H + H.T)
    lam, vec = _spectrum(H, symmetric)
    top = max(float(np.max(np.abs(lam))), 1e-300)
    zero = np.abs(lam) <= zero_tol * top
    index = int(np.sum(lam < -zero_tol * top))
    if symmetric:
        null = vec[:, zero]
    else:
        _, sv, Vt = np.linalg.svd(H)
        null = Vt[sv <= zero_tol * top].T
    measured = int(np.sum(zero))
    modes, units, gauge, residual = _modes(y, p, H, null, measured, coincide_tol)
    full = _full_counts(y, p, problem, index, modes, zero_tol * top)
    out_problem = _problem_at(y, p, problem)
    return CriticalPoint(
        problem=out_problem,
        formulation=p.formulation,
        y=y,
        params=p,
        loss=_loss(y, p),
        grad_norm=fp.norm,
        hessian=H,
        asymmetry=asym,
        eigenvalues=lam,
        eigenvectors=vec,
        index=index,
        unstable_rates=np.sort(-lam[lam < -zero_tol * top])[::-1],
        null_space=null,
        gauge=gauge,
        residual=residual,
        modes=modes,
        units=units,
        full=full,
        nit=fp.nit,
        nfev=fp.nfev,
        status=fp.status,
        message=fp.message,
        history=fp.history,
        settings=dict(
            formulation=p.formulation,
            tol=tol,
            max_iter=max_iter,
            snap=snap,
            snapped=snapped,
            zeroed=zeroed,
            zero_tol=zero_tol,
            coincide_tol=coincide_tol,
            singular_cutoff=singular_cutoff,
        ),
    )


def _snap(y, p: FlowParams, near: float, tol: float):
    r"""``y`` with the groups of active units (`_groups()` at ``tol``) coinciding to
    ``near`` made to coincide exactly (see `critical_point()`), and the groups. Each group
    takes its units' direction (homogeneous ``g``: $\sum_i |\rho_i| \sigma_i w_i / |w_i|$, each
    norm kept) or weight vector ($\sum_i |a_i| \sigma_i w_i / \sum_i |a_i|$) weighted by
    their coefficients, so that a unit of small coefficient moves onto the others."""
    a, W, V = _coords(y, p)
    _, _, _, groups, sign = _groups(a, W, p.b, V, p.activation, tol, near)
    if not groups:
        return y, []
    W = W.copy()
    homogeneous = activation_of(p.activation).homogeneous
    norms = np.linalg.norm(W, axis=1)
    for g in groups:
        if homogeneous:
            u = sum(abs(a[i]) * sign[i] * W[i] for i in g)
            u /= np.linalg.norm(u)
            for i in g:
                W[i] = sign[i] * norms[i] * u
        else:
            w = sum(abs(a[i]) * sign[i] * W[i] for i in g) / sum(abs(a[i]) for i in g)
            for i in g:
                W[i] = sign[i] * w
    return np.concatenate([a, W.ravel()]), [list(map(int, g)) for g in groups]


def _zero_dead(y, p: FlowParams, near: float, tol: float):
    """``y`` with the units that `_groups()` at ``tol`` calls dead (``rho_i`` or ``a_i``
    within ``tol`` of zero) made exactly dead, and their indices: ``a_i = 0``, and when such a
    unit coincides to ``near`` with an active unit ``j`` (the first), its weights take ``j``'s
    direction (homogeneous ``g``, its norm kept) or weight vector and its coefficient goes to
    ``j`` (``a_j += sigma_i a_i |w_i| / |w_j|``, or ``sigma_i a_i``), so that the function is
    unchanged."""
    a, W, V = _coords(y, p)
    active, dead, _, _, _ = _groups(a, W, p.b, V, p.activation, tol)
    moved = [i for i in dead if a[i] != 0.0]
    if not moved:
        return y, []
    a, W = a.copy(), W.copy()
    homogeneous = activation_of(p.activation).homogeneous
    norms = np.linalg.norm(W, axis=1)
    for i, j, sg in _dead_pairs(W, p.activation, active, moved, near):
        if homogeneous:
            a[j] += sg * a[i] * norms[i] / norms[j]
            W[i] = sg * norms[i] / norms[j] * W[j]
        else:
            a[j] += sg * a[i]
            W[i] = sg * W[j]
    a[moved] = 0.0
    return np.concatenate([a, W.ravel()]), [int(i) for i in moved]


def _full_counts(y, p: FlowParams, problem, index: int, modes: dict, zero: float) -> dict:
    """Index and zero modes in all ``D`` weight coordinates (span formulation: the span's block
    plus ``2 G`` on each of the ``D - r`` orthogonal directions)."""
    if p.formulation != "span" or problem is None:
        return {
            "dim": None if problem is None else problem.dim,
            "index": index,
            "zero_modes": modes["measured"],
            "perpendicular_eigenvalues": [],
        }
    extra = problem.dim - p.coords
    a, Q, R = state_to_order_parameters(y, p)
    _, W, V = _coords(y, p)
    g = _gradients(
        a,
        Q,
        R,
        p.b,
        p.T,
        p.activation,
        with_loss=False,
        teacher_activation=p.teacher_activation,
        sines=_sines(W, V, p),
    )
    mu = np.linalg.eigvalsh(2.0 * g.G)
    return {
        "dim": problem.dim,
        "perpendicular_eigenvalues": mu.tolist(),
        "index": index + extra * int(np.sum(mu < -zero)),
        "zero_modes": modes["measured"] + extra * int(np.sum(np.abs(mu) <= zero)),
    }


def same_point(
    x: CriticalPoint | Problem,
    y: CriticalPoint | Problem,
    *,
    rtol: float = 1e-6,
    coincide_tol: float = 1e-6,
) -> bool:
    """Whether two points are one critical set up to permutation of the students, the gauge
    (homogeneous $g$), coinciding units and rotations fixing the teacher.

    Each point is reduced to its function's units (`function_units()`); the two are the same
    when they have as many units and some permutation matches every coefficient, every overlap
    with the teachers and every overlap between units within ``rtol`` of the largest.

    Parameters
    ----------
    x : CriticalPoint or Problem
        The first point.
    y : CriticalPoint or Problem
        The second point (the same teacher).
    rtol : float
        The largest difference of the units' descriptions, relative to the largest coefficient
        (at least 1).
    coincide_tol : float
        See `function_units()`.

    Returns
    -------
    bool
        ``True`` when the two describe one function.
    """
    return _distance(function_units(x, coincide_tol), function_units(y, coincide_tol)) <= rtol


def function_units(point: CriticalPoint | Problem, coincide_tol: float = 1e-6) -> dict:
    r"""The network function of a point as units invariant under the gauge and rotations.

    Dead and collapsed units are dropped and coinciding units merged (their coefficients
    summed with their signs). Homogeneous $g$: unit $j$ is $\rho_j g(u_j \cdot x)$ and is
    described by $\rho_j$, $u_j \cdot v_n$ and $u_j \cdot u_k$; otherwise by $a_j$,
    $w_j \cdot v_n$ and $w_j \cdot w_k$; for odd $g$ each unit is first flipped to
    $(-a_j, -w_j)$ when its coefficient is negative. Returns
    ``{"coef" (J,), "teacher" (J, M), "gram" (J, J)}``.

    Parameters
    ----------
    point : CriticalPoint or Problem
        The point (a critical point's problem, or a problem's student).
    coincide_tol : float
        Units whose directions (homogeneous $g$) or weights differ by at most this, relatively,
        coincide; units with $|\rho_i|$ (homogeneous $g$) or $|a_i|$ at most this relative to
        the teacher's largest are dead, and those with $|w_i|$ at most this relative to the
        largest $|v_n|$ collapsed.

    Returns
    -------
    dict
        ``coef (J,)``, ``teacher (J, M)`` and ``gram (J, J)`` of the $J$ units kept.
    """
    pr = point.problem if isinstance(point, CriticalPoint) else point
    homogeneous = activation_of(pr.activation).homogeneous
    active, _, _, groups, sign = _groups(pr.a, pr.W, pr.b, pr.V, pr.activation, coincide_tol)
    grouped = {g[0]: g for g in groups}
    members = set(itertools.chain.from_iterable(groups))
    units = [grouped.get(i, [i]) for i in active if i not in members or i in grouped]
    norms = np.linalg.norm(pr.W, axis=1)
    coef, vecs = [], []
    for g in units:
        i = g[0]
        weight = norms if homogeneous else np.ones_like(norms)
        c = sum(sign[j] * pr.a[j] * weight[j] for j in g)
        v = pr.W[i] / norms[i] if homogeneous else pr.W[i]
        if _parity(pr.activation) == -1 and c < 0:
            c, v = -c, -v
        coef.append(c)
        vecs.append(v)
    X = np.array(vecs).reshape(len(vecs), pr.dim)
    return {"coef": np.array(coef), "teacher": X @ pr.V.T, "gram": X @ X.T}


def _distance(u: dict, v: dict) -> float:
    """The smallest, over permutations, largest relative difference of two units' descriptions
    (``inf`` for different numbers of units)."""
    n = u["coef"].size
    if n != v["coef"].size:
        return float("inf")
    if n == 0:
        return 0.0
    scale = max(1.0, *(float(np.max(np.abs(x))) for x in (u["coef"], v["coef"])))
    best = float("inf")
    for perm in itertools.permutations(range(n)):
        pi = list(perm)
        d = max(
            float(np.max(np.abs(u["coef"] - v["coef"][pi]))) / scale,
            float(np.max(np.abs(u["teacher"] - v["teacher"][pi]))),
            float(np.max(np.abs(u["gram"] - v["gram"][np.ix_(pi, pi)]))),
        )
        best = min(best, d)
    return best

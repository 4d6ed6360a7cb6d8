"""Auxiliary learning in the teacher-student model: online SGD on a weighted joint loss, its
online ODE and its exact order-parameter chain (model declared in ``derivations/auxiliary.md``).

**The model.** Inputs ``x ~ N(0, I_D)``; a main teacher ``f*_m(x) = sum_n b_n g(v_n . x)``
(``M`` neurons) and an auxiliary teacher ``f*_a`` (``Ma`` neurons, rows ``V_a``), their overlap
set by the teachers' Gram matrix ``T``; labels ``y_m = f*_m + sigma_m xi_m``,
``y_a = f*_a + sigma_a xi_a`` (independent standard normals). The student has a first layer
``W (K, D)`` and, in the reading ``"two_heads"``, a main head ``a`` and an auxiliary head ``c``
(``f_m = sum_i a_i g(w_i . x)``, ``f_a = sum_i c_i g(w_i . x)``); in the reading
``"one_output"`` one output ``f = f_m = f_a`` is trained on both labels. Online SGD on the joint
loss

    l = (f_m - y_m)^2 / 2 + gamma (f_a - y_a)^2 / 2,

one fresh batch of ``B`` samples per step, step ``eta / D`` (the heads ``lr2 eta / D``), coupled
weight decay ``lambda``, time ``t = steps / D``. The errors are the population ones,
``eps_m = E[(f_m - f*_m)^2] / 2`` and ``eps_a = E[(f_a - f*_a)^2] / 2``.

**The ODE** (``D -> infinity``), with the fields ``u = (lambda, nu_m, nu_a) ~ N(0, C)``,
``C = [[Q, R], [R^T, T]]``, ``kappa_i = a_i e_m + gamma c_i e_a`` (``c = a`` for one output)::

    da_i/dt  = -eta lr2 (E[e_m g(lambda_i)] + lambda a_i)              (one output: e_m + gamma e_a)
    dc_i/dt  = -eta lr2 (gamma E[e_a g(lambda_i)] + lambda c_i)         (two heads)
    dR_in/dt = -eta (E[kappa_i g'(lambda_i) nu_n] + lambda R_in)
    dQ_ij/dt = -eta (E[kappa_i g'(lambda_i) lambda_j] + (i <-> j) + 2 lambda Q_ij)
               + (eta^2 / B) (E[kappa_i kappa_j g'(lambda_i) g'(lambda_j)]
                              + (a_i a_j sigma_m^2 + gamma^2 c_i c_j sigma_a^2) E[g'_i g'_j]),

the drift being the population gradient flow of ``eps_m + gamma eps_a`` (``derive`` checks it
against weight space). Kernels: closed forms for relu, erf and linear (relu's four-point
integrals on four distinct fields up to Plackett's one-dimensional integral, by Gauss-Legendre),
a direct Gauss-Hermite rule otherwise (`NODES`; exponentially accurate for smooth ``g``,
only algebraically for a kink: about 2% off for relu at rank 4, hence the closed forms there).
"""

from __future__ import annotations

import os
import time as _time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import DivergenceError, InputError
from .._meta import versions
from .._options import Param
from ..theory import activation_of, gradients, population_loss

READINGS = ("one_output", "two_heads")
"""The declared architectures (module docstring)."""

BACKENDS = ("compiled", "chain")
"""Online SGD in weight space (``compiled``) or as its exact order-parameter chain."""

NODES = {1: 96, 2: 64, 3: 40, 4: 20, 5: 12, 6: 8, 7: 6, 8: 5}
"""Gauss-Hermite nodes per axis of the quadrature, by the rank of ``C`` (``40^3 = 64000`` nodes
for ``K = 1`` and two one-neuron teachers)."""

METHODS = ("auto", "closed", "mixed", "quadrature")
"""Kernels of the ODE: ``closed`` forms (relu, erf, linear); ``mixed``: the drift from the
package's pair kernels (`gaugedyn.theory.gradients()`, so it is the gradient flow of the
errors `task_errors()` reports) and the noise term by the Gauss-Hermite rule;
``quadrature``: everything by the rule; ``auto``: ``closed`` where it exists, else ``mixed``."""

PIVOT_TOL = 1e-13

_GAMMA = Param(
    float,
    name="gamma",
    lo=0,
    hi=1e3,
    why="an auxiliary weight beyond 1e3 is the auxiliary task alone",
)
_SIGMA = Param(
    float,
    name="sigma",
    lo=0,
    hi=1e3,
    why="label noise is a standard deviation; beyond 1e3 the labels are noise",
)


@dataclass(frozen=True)
class JointLoss:
    r"""$\ell = (f_m - y_m)^2 / 2 + \gamma\, (f_a - y_a)^2 / 2$ with labels
    $y = f^* + \sigma \xi$ (``sigma_main``, ``sigma_aux``), on the architecture ``reading``."""

    gamma: float = 0.0
    sigma_main: float = 0.0
    sigma_aux: float = 0.0
    reading: str = "one_output"

    def __post_init__(self):
        object.__setattr__(self, "gamma", _GAMMA.accept(self.gamma))
        object.__setattr__(self, "sigma_main", _SIGMA.accept(self.sigma_main, "sigma_main"))
        object.__setattr__(self, "sigma_aux", _SIGMA.accept(self.sigma_aux, "sigma_aux"))
        if self.reading not in READINGS:
            raise InputError(
                f"reading={self.reading!r} is not allowed; allowed: {', '.join(READINGS)}"
            )

    @property
    def heads(self) -> int:
        return 2 if self.reading == "two_heads" else 1

    def single(self) -> JointLoss:
        r"""The single-task baseline: the same model at $\gamma = 0$."""
        return JointLoss(0.0, self.sigma_main, self.sigma_aux, self.reading)

    def describe(self) -> dict:
        return {
            "gamma": self.gamma,
            "sigma_main": self.sigma_main,
            "sigma_aux": self.sigma_aux,
            "reading": self.reading,
        }


@dataclass(frozen=True)
class AuxiliaryProblem:
    """Student ``(a, c, W)`` and teachers ``(b_main, V_main)``, ``(b_aux, V_aux)``.

    ``a (K,)`` main head, ``c (K,)`` auxiliary head (``None``: a copy of ``a``; unused by the
    one-output reading), ``W (K, D)``, ``V_main (M, D)``, ``V_aux (Ma, D)``.
    """

    a: np.ndarray
    W: np.ndarray
    b_main: np.ndarray
    V_main: np.ndarray
    b_aux: np.ndarray
    V_aux: np.ndarray
    c: np.ndarray | None = None
    activation: str = "erf"
    setup: dict = field(default_factory=dict)

    def __post_init__(self):
        act = activation_of(self.activation)
        if act.code is None:
            raise InputError(
                f"activation {act.name!r} has no compiled kernel; the auxiliary "
                "model runs with the compiled activations"
            )
        arrays = {
            k: np.asarray(getattr(self, k), dtype=np.float64)
            for k in ("a", "W", "b_main", "V_main", "b_aux", "V_aux")
        }
        arrays["c"] = arrays["a"].copy() if self.c is None else np.asarray(self.c, np.float64)
        a, W, c = arrays["a"], arrays["W"], arrays["c"]
        if a.ndim != 1 or W.ndim != 2 or W.shape[0] != a.size or c.shape != a.shape:
            raise InputError(
                f"student shapes a{a.shape}, c{c.shape}, W{W.shape} do not match; "
                "need (K,), (K,), (K, D)"
            )
        for b, V, name in (("b_main", "V_main", "main"), ("b_aux", "V_aux", "auxiliary")):
            if (
                arrays[b].ndim != 1
                or arrays[V].ndim != 2
                or arrays[V].shape != (arrays[b].size, W.shape[1])
            ):
                raise InputError(
                    f"{name} teacher shapes {arrays[b].shape}, {arrays[V].shape} "
                    f"do not match (n,), (n, D={W.shape[1]})"
                )
        if not all(np.all(np.isfinite(x)) for x in arrays.values()):
            raise InputError("problem parameters must be finite")
        for k, v in arrays.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "activation", act.name)

    @property
    def K(self) -> int:
        return self.a.size

    @property
    def M(self) -> int:
        return self.b_main.size

    @property
    def M_aux(self) -> int:
        return self.b_aux.size

    @property
    def dim(self) -> int:
        return self.W.shape[1]

    @property
    def V(self) -> np.ndarray:
        """Both teachers' rows, main first."""
        return np.concatenate([self.V_main, self.V_aux])

    def order_parameters(self):
        r"""``(a, c, Q, R, T)`` with $R = W [V_m; V_a]^\top$ and ``T`` the teachers' Gram matrix."""
        V = self.V
        return self.a, self.c, self.W @ self.W.T, self.W @ V.T, V @ V.T

    def gram(self) -> np.ndarray:
        """``C`` of the rows ``[W; V_m; V_a]``."""
        U = np.concatenate([self.W, self.V])
        return U @ U.T

    def describe(self) -> dict:
        _, _, Q, R, T = self.order_parameters()
        return {
            "activation": self.activation,
            "K": self.K,
            "M": self.M,
            "M_aux": self.M_aux,
            "dim": self.dim,
            "a0": self.a.tolist(),
            "c0": np.asarray(self.c).tolist(),
            "Q0": Q.tolist(),
            "R0": R.tolist(),
            "T": T.tolist(),
            "b_main": self.b_main.tolist(),
            "b_aux": self.b_aux.tolist(),
            "setup": self.setup,
        }


_DIM = Param(int, name="dim", lo=3, hi=10**7, why="the first layer is K dense rows of D numbers")
_RHO = Param(float, name="rho", lo=-1, hi=1, why="an overlap of unit vectors is a cosine")


def two_teachers(
    dim: int,
    rho: float,
    *,
    activation: str = "erf",
    Q=0.5,
    R_main=0.0,
    R_aux=0.0,
    a=1.0,
    c=None,
    b_main: float = 1.0,
    b_aux: float = 1.0,
) -> AuxiliaryProblem:
    r"""Unit-norm teachers $v_m = e_1$, $v_a = \rho e_1 + \sqrt{1 - \rho^2}\, e_2$ (one neuron
    each) and a student with prescribed order parameters, its rows in the first $K + 2$
    coordinates (so the order parameters are the same at every $D$).

    Parameters
    ----------
    dim : int
        The input dimension $D$, from 3 to $10^7$.
    rho : float
        The teachers' overlap $\rho = v_m \cdot v_a$, in $[-1, 1]$.
    activation : str
        The activation $g$ of students and teachers; one with a compiled kernel.
    Q : array_like
        The student overlaps $Q$ ``(K, K)`` (a scalar for $K = 1$); $K$ is read from it.
    R_main : array_like
        The overlaps $R_{i m} = w_i \cdot v_m$ ``(K,)`` (a scalar is broadcast).
    R_aux : array_like
        The overlaps $R_{i a} = w_i \cdot v_a$ ``(K,)`` (a scalar is broadcast).
    a : array_like
        The main head ``(K,)`` (a scalar is broadcast).
    c : array_like or None
        The auxiliary head ``(K,)``; ``None``: a copy of ``a``.
    b_main : float
        The main teacher's coefficient.
    b_aux : float
        The auxiliary teacher's coefficient.

    Returns
    -------
    AuxiliaryProblem
        The student and the two teachers, with ``setup`` recording ``dim`` and ``rho``.

    Raises
    ------
    InputError
        When ``dim`` or ``rho`` is out of range, ``activation`` has no compiled kernel, or
        $[[T, R^\top], [R, Q]]$ is not a Gram matrix (at $\rho = 1$ the teachers coincide and
        ``R_aux`` must equal ``R_main``).
    """
    dim, rho = _DIM.accept(dim), _RHO.accept(rho)
    Q = np.atleast_2d(np.asarray(Q, dtype=float))
    K = Q.shape[0]
    Rm = np.broadcast_to(np.asarray(R_main, dtype=float), (K,))
    Ra = np.broadcast_to(np.asarray(R_aux, dtype=float), (K,))
    a = np.broadcast_to(np.asarray(a, dtype=float), (K,)).copy()
    c = a.copy() if c is None else np.broadcast_to(np.asarray(c, dtype=float), (K,)).copy()
    T = np.array([[1.0, rho], [rho, 1.0]])
    R = np.stack([Rm, Ra], axis=1)
    C = np.block([[T, R.T], [R, Q]])
    try:
        L = np.linalg.cholesky(C + 1e-300 * np.eye(K + 2))
    except np.linalg.LinAlgError:
        L = None
    if L is None or not np.all(np.isfinite(L)):
        w, U = np.linalg.eigh(C)
        if w.min() < -1e-12:
            raise InputError(
                f"the order parameters Q={Q.tolist()}, R_main={Rm.tolist()}, "
                f"R_aux={Ra.tolist()}, rho={rho} are not a Gram matrix (at "
                "rho = 1 the teachers coincide and R_aux must equal R_main)"
            )
        L = U * np.sqrt(np.clip(w, 0, None))
    rows = np.zeros((K + 2, dim))
    rows[:, : K + 2] = L
    return AuxiliaryProblem(
        a=a,
        W=rows[2:],
        b_main=np.array([b_main]),
        V_main=rows[:1],
        b_aux=np.array([b_aux]),
        V_aux=rows[1:2],
        c=c,
        activation=activation,
        setup={"name": "two_teachers", "dim": dim, "rho": rho},
    )


# --- observables ---------------------------------------------------------------------------------


def task_errors(problem: AuxiliaryProblem, a, c, Q, R) -> tuple[np.ndarray, np.ndarray]:
    r"""$(\varepsilon_m, \varepsilon_a)$: the population errors of the main head on the main teacher
    and of the auxiliary head (the output, for one output) on the auxiliary teacher, over leading
    axes.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem (its teachers and activation).
    a : numpy.ndarray
        Main heads ``(..., K)``.
    c : numpy.ndarray
        Auxiliary heads ``(..., K)`` (for one output, ``a`` again).
    Q : numpy.ndarray
        Student overlaps ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps ``(..., K, M + Ma)``, the main teacher's columns first.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        ``eps_main`` and ``eps_aux``, each of the leading shape.
    """
    M = problem.M
    _, _, _, _, T = problem.order_parameters()
    em = population_loss(a, Q, R[..., :M], problem.b_main, T[:M, :M], problem.activation)
    ea = population_loss(c, Q, R[..., M:], problem.b_aux, T[M:, M:], problem.activation)
    return np.asarray(em), np.asarray(ea)


def error_gradients(problem: AuxiliaryProblem, a, c, Q, R):
    r"""$\partial \varepsilon / \partial (a, c, Q, R)$ of both errors at one state:
    $d\varepsilon = g_a \cdot da + g_c \cdot dc + \sum_{ij} G_{ij}\, dQ_{ij} + \sum_{in} H_{in}\, dR_{in}$
    ($H$ over both teachers' columns).

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem (its teachers and activation).
    a : numpy.ndarray
        Main heads ``(..., K)``.
    c : numpy.ndarray
        Auxiliary heads ``(..., K)``.
    Q : numpy.ndarray
        Student overlaps ``(..., K, K)``.
    R : numpy.ndarray
        Student-teacher overlaps ``(..., K, M + Ma)``.

    Returns
    -------
    dict
        ``{"main": (g_a, g_c, G, H), "aux": (g_a, g_c, G, H)}`` (the main error's ``g_c`` and the
        auxiliary error's ``g_a`` are zero).
    """
    M = problem.M
    _, _, _, _, T = problem.order_parameters()
    gm = gradients(a, Q, R[..., :M], problem.b_main, T[:M, :M], problem.activation)
    ga = gradients(c, Q, R[..., M:], problem.b_aux, T[M:, M:], problem.activation)
    zero_a = np.zeros_like(a)
    Hm = np.concatenate([gm.H, np.zeros(gm.H.shape[:-1] + (problem.M_aux,))], axis=-1)
    Ha = np.concatenate([np.zeros(ga.H.shape[:-1] + (M,)), ga.H], axis=-1)
    return {"main": (gm.g_a, zero_a, gm.G, Hm), "aux": (zero_a, ga.g_a, ga.G, Ha)}


def error_decomposition(problem: AuxiliaryProblem, run: dict) -> dict:
    r"""The change of each error along simulated trajectories, split into its drift part and its
    diffusion part, from the records of `train_auxiliary()`.

    Between records $r$ and $r + 1$ the diffusion part is $G : dQ_{\text{quad}}$
    ($G = \partial\varepsilon/\partial Q$, $dQ_{\text{quad}}$ the summed quadratic parts
    $dW\, dW^\top$ of the steps: the gradient noise) and the drift part
    $g_a \cdot da + g_c \cdot dc + G : (dQ - dQ_{\text{quad}}) + H : dR$ (the increments linear in
    the steps: the forcing), each gradient the mean of its values at the two records
    (trapezoid). ``closure`` $= \varepsilon(t) - \varepsilon(0) - \text{drift} - \text{diffusion}$ is
    the trapezoid error plus the steps' second-order terms ($O(\eta^2 / D)$ per unit time): small
    when the records are dense.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem the run trained.
    run : dict
        `train_auxiliary()`'s result: its ``a``, ``c``, ``Q``, ``R`` and ``quad`` records, arrays
        ``(S, T, ...)``.

    Returns
    -------
    dict
        ``{"main": {"drift", "diffusion", "closure"}, "aux": ...}``, cumulative from the first
        record, each ``(S, T)``.
    """
    a, c, Q, R, quad = (np.asarray(run[k], dtype=float) for k in ("a", "c", "Q", "R", "quad"))
    grads = error_gradients(problem, a, c, Q, R)
    em, ea = task_errors(problem, a, c, Q, R)
    out = {}
    for key, eps in (("main", em), ("aux", ea)):
        ga, gc, G, H = grads[key]

        def mid(x):
            return (
                0.5 * (x[..., 1:, :] + x[..., :-1, :])
                if x.ndim == a.ndim
                else 0.5 * (x[..., 1:, :, :] + x[..., :-1, :, :])
            )

        dq = np.diff(quad, axis=1)
        lin = (
            np.sum(mid(ga) * np.diff(a, axis=1), -1)
            + np.sum(mid(gc) * np.diff(c, axis=1), -1)
            + np.sum(mid(G) * (np.diff(Q, axis=1) - dq), (-2, -1))
            + np.sum(mid(H) * np.diff(R, axis=1), (-2, -1))
        )
        noise = np.sum(mid(G) * dq, (-2, -1))
        zero = np.zeros(lin.shape[:-1] + (1,))
        drift = np.concatenate([zero, np.cumsum(lin, -1)], -1)
        diffusion = np.concatenate([zero, np.cumsum(noise, -1)], -1)
        out[key] = {
            "drift": drift,
            "diffusion": diffusion,
            "closure": eps - eps[..., :1] - drift - diffusion,
        }
    return out


# --- the ODE -------------------------------------------------------------------------------------


def _kernels():
    from . import _auxiliary_kernels

    return _auxiliary_kernels


_TABLES: dict = {}


def quadrature_tables():
    """``(nodes, weights, counts)`` of `NODES` (probabilists' Gauss-Hermite, weights
    summing to one), as the compiled rule reads them."""
    if not _TABLES:
        top = max(NODES)
        width = max(NODES.values())
        nodes, weights = np.zeros((top + 1, width)), np.zeros((top + 1, width))
        counts = np.zeros(top + 1, dtype=np.int64)
        counts[0] = 1
        for r, n in NODES.items():
            z, w = np.polynomial.hermite_e.hermegauss(n)
            nodes[r, :n], weights[r, :n] = z, w / w.sum()
            counts[r] = n
        _TABLES["t"] = (nodes, weights, counts)
    return _TABLES["t"]


def _method_code(problem: AuxiliaryProblem, method: str) -> int:
    """0 closed, 1 quadrature, 2 mixed (the kernel's ``quad`` argument)."""
    if method not in METHODS:
        raise InputError(f"method={method!r} is not allowed; allowed: {', '.join(METHODS)}")
    closed = problem.activation in ("relu", "erf", "linear")
    if method == "closed" and not closed:
        raise InputError(
            f"method='closed' has no closed forms for {problem.activation!r}; "
            "closed: relu, erf, linear; use 'mixed', 'quadrature' or 'auto'"
        )
    if method == "auto":
        method = "closed" if closed else "mixed"
    return {"closed": 0, "quadrature": 1, "mixed": 2}[method]


def population_drift(problem: AuxiliaryProblem, loss: JointLoss, a, c, Q, R):
    """The population gradient flow of ``eps_m + gamma eps_a`` (the ODE's drift per unit
    ``eta``, weight decay aside): ``(da, dc, dQ, dR)`` from `gaugedyn.theory.gradients()`
    (``dL/dW = 2 G W + H V``), with the heads' rate ``lr2`` left to the caller."""
    M = problem.M
    _, _, _, _, T = problem.order_parameters()
    gm = gradients(a, Q, R[..., :M], problem.b_main, T[:M, :M], problem.activation)
    ga = gradients(c, Q, R[..., M:], problem.b_aux, T[M:, M:], problem.activation)
    gamma = loss.gamma
    G = gm.G + gamma * ga.G
    H = np.concatenate([gm.H, gamma * ga.H], axis=-1)
    GQ = G @ Q
    HR = H @ np.swapaxes(R, -1, -2)
    dQ = -(2 * GQ + 2 * np.swapaxes(GQ, -1, -2) + HR + np.swapaxes(HR, -1, -2))
    dR = -(2 * G @ R + H @ T)
    if loss.heads == 2:
        return -gm.g_a, -gamma * ga.g_a, dQ, dR
    da = -(gm.g_a + gamma * ga.g_a)
    return da, da, dQ, dR


@dataclass(frozen=True)
class AuxiliaryODE:
    """Right-hand side ``f(t, y)`` of the online ODE (module docstring), ``y = (a, [c], Q, R)``
    flattened (``c`` for two heads only; ``Q`` full ``K x K``)."""

    problem: AuxiliaryProblem
    loss: JointLoss
    eta: float
    batch: int = 1
    noise: bool = True
    weight_decay: float = 0.0
    lr2: float = 1.0
    method: str = "auto"
    _static: tuple = field(init=False, repr=False, compare=False)
    _act: int = field(init=False, repr=False, compare=False)
    _quad: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        p, lo = self.problem, self.loss
        _, _, _, _, T = p.order_parameters()
        object.__setattr__(
            self,
            "_static",
            (
                p.K,
                p.M,
                p.M_aux,
                lo.heads,
                p.b_main,
                p.b_aux,
                np.ascontiguousarray(T),
                float(lo.gamma),
                float(lo.sigma_main) ** 2,
                float(lo.sigma_aux) ** 2,
            ),
        )
        object.__setattr__(self, "_act", int(activation_of(p.activation).code or 0))
        object.__setattr__(self, "_quad", _method_code(p, self.method))

    @property
    def size(self) -> int:
        p = self.problem
        return p.K * (self.loss.heads + p.K + p.M + p.M_aux)

    def pack(self, a, c, Q, R) -> np.ndarray:
        parts = [np.ravel(a)] + ([np.ravel(c)] if self.loss.heads == 2 else [])
        return np.concatenate(parts + [np.ravel(Q), np.ravel(R)]).astype(np.float64)

    def initial(self) -> np.ndarray:
        a, c, Q, R, _ = self.problem.order_parameters()
        return self.pack(a, c, Q, R)

    def unpack(self, y):
        """``(a, c, Q, R)`` of states ``y (..., size)`` (``c`` is ``a`` for one output)."""
        p = self.problem
        K, Mt = p.K, p.M + p.M_aux
        y = np.asarray(y)
        a = y[..., :K]
        off = K
        if self.loss.heads == 2:
            c, off = y[..., K : 2 * K], 2 * K
        else:
            c = a
        Q = y[..., off : off + K * K].reshape(*y.shape[:-1], K, K)
        R = y[..., off + K * K :].reshape(*y.shape[:-1], K, Mt)
        return a, c, Q, R

    def evaluate(self, y, eta: float, noise_scale: float, out=None) -> np.ndarray:
        r"""The right-hand side at ``y`` with the drift scaled by ``eta`` and the noise term by
        ``noise_scale`` ($\eta^2 / B$ for the ODE)."""
        out = np.empty(self.size) if out is None else out
        y = np.ascontiguousarray(y, dtype=np.float64)
        out = _kernels().rhs(
            y,
            *self._static,
            float(eta),
            float(self.lr2),
            float(self.weight_decay),
            float(noise_scale),
            self._act,
            self._quad,
            *quadrature_tables(),
            out,
        )
        if self._quad == 2 and eta != 0.0:
            a, c, Q, R = self.unpack(y)
            da, dc, dQ, dR = population_drift(self.problem, self.loss, a, c, Q, R)
            out += eta * self.pack(self.lr2 * da, self.lr2 * dc, dQ, dR)
        return out

    def __call__(self, t, y):
        scale = self.eta**2 / self.batch if self.noise else 0.0
        return self.evaluate(y, self.eta, scale)

    def parts(self, y) -> tuple[np.ndarray, np.ndarray]:
        r"""``(drift, noise)`` of ``dy/dt``: the terms linear in ``eta`` and the $\eta^2 / B$
        term (zero but for ``Q``)."""
        drift = self.evaluate(y, self.eta, 0.0)
        noise = self.evaluate(y, 0.0, self.eta**2 / self.batch)
        return drift, noise


def _check_common(problem, loss, eta, batch, weight_decay, lr2):
    from ._params import PARAMS as TRAIN

    if not isinstance(problem, AuxiliaryProblem):
        raise InputError(
            f"problem={type(problem).__name__} is not allowed; allowed: an "
            "AuxiliaryProblem (gaugedyn.training.two_teachers builds one)"
        )
    if not isinstance(loss, JointLoss):
        raise InputError(f"loss={type(loss).__name__} is not allowed; allowed: a JointLoss")
    eta, batch = TRAIN["lr"].accept(eta, "eta"), TRAIN["batch"].accept(batch)
    for name, v in (("weight_decay", weight_decay), ("lr2", lr2)):
        if not (
            isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v) and v >= 0
        ):
            raise InputError(f"{name}={v!r} is not allowed; allowed: a finite number >= 0")
    return float(eta), int(batch)


def _check_times(times) -> np.ndarray:
    try:
        t = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            "times is not allowed; allowed: an increasing 1-D array of times >= 0"
        ) from None
    if (
        t.ndim != 1
        or t.size == 0
        or not np.all(np.isfinite(t))
        or t[0] < 0
        or np.any(np.diff(t) <= 0)
    ):
        raise InputError(
            f"times (shape {t.shape}) is not allowed; allowed: a non-empty, "
            "strictly increasing 1-D array of finite times >= 0"
        )
    return t


def auxiliary_ode(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    eta: float,
    times,
    *,
    batch: int = 1,
    noise: bool = True,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    method: str = "auto",
    y0=None,
) -> dict:
    r"""Integrate the online ODE (module docstring) from the problem's order parameters (or
    ``y0``) at ``times`` ($t = \text{steps} / D$) with DOP853.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem; its order parameters start the integration.
    loss : JointLoss
        The joint loss: $\gamma$, the label noises and the reading.
    eta : float
        The step size $\eta$ (the step is $\eta / D$), in the trainer's ``lr`` range.
    times : array_like
        Record times: a non-empty, strictly increasing 1-D array of finite times $\ge 0$.
    batch : int
        Samples per step $B$: the noise term enters as $\eta^2 / B$.
    noise : bool
        Include the gradient-noise term (``False``: the population flow alone).
    weight_decay : float
        The coupled weight decay $\lambda \ge 0$.
    lr2 : float
        The heads' rate relative to the first layer, $\ge 0$.
    rtol : float
        DOP853's relative tolerance.
    atol : float
        DOP853's absolute tolerance.
    method : str
        The kernels, one of ``METHODS``: ``"auto"``, ``"closed"`` (relu, erf, linear),
        ``"mixed"`` or ``"quadrature"``.
    y0 : array_like or None
        A flattened state $(a, c, Q, R)$ to start from instead of the problem's.

    Returns
    -------
    dict
        ``{"t", "a", "c", "Q", "R", "eps_main", "eps_aux", "y"}`` (arrays over ``t``; ``c``
        equals ``a`` for one output) and ``"nfev"``.

    Raises
    ------
    InputError
        When ``problem`` or ``loss`` is of the wrong type, ``eta``, ``batch``, ``weight_decay``,
        ``lr2`` or ``times`` is out of range, ``noise`` is not a bool, or ``method`` is not one of
        ``METHODS`` (or ``"closed"`` for an activation without closed forms).
    RuntimeError
        When the integrator fails.
    """
    from scipy.integrate import solve_ivp

    eta, batch = _check_common(problem, loss, eta, batch, weight_decay, lr2)
    times = _check_times(times)
    if not isinstance(noise, bool | np.bool_):
        raise InputError(f"noise={noise!r} is not allowed; allowed: True or False")
    f = AuxiliaryODE(
        problem, loss, eta, batch, bool(noise), float(weight_decay), float(lr2), method
    )
    start = f.initial() if y0 is None else np.asarray(y0, dtype=np.float64)
    sol = solve_ivp(
        f, (0.0, float(times[-1])), start, method="DOP853", t_eval=times, rtol=rtol, atol=atol
    )
    if not sol.success:
        raise RuntimeError(f"auxiliary ODE failed: {sol.message}")
    y = sol.y.T
    a, c, Q, R = f.unpack(y)
    em, ea = task_errors(problem, a, c, Q, R)
    return {
        "t": sol.t,
        "a": a,
        "c": c,
        "Q": Q,
        "R": R,
        "eps_main": em,
        "eps_aux": ea,
        "y": y,
        "nfev": int(sol.nfev),
    }


def error_rates(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    eta: float,
    y,
    *,
    batch: int = 1,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    method: str = "auto",
) -> dict:
    r"""The rates of the two errors along states ``y`` of the ODE, split into their drift part (the
    terms linear in $\eta$: the forcing) and their diffusion part (the $\eta^2 / B$ term of
    $\dot Q$ contracted with $\partial \varepsilon / \partial Q$: the gradient noise).

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem.
    loss : JointLoss
        The joint loss.
    eta : float
        The step size $\eta$.
    y : array_like
        States ``(n, size)`` of the ODE (``auxiliary_ode(...)["y"]``), or one state.
    batch : int
        Samples per step $B$.
    weight_decay : float
        The coupled weight decay $\lambda$.
    lr2 : float
        The heads' rate relative to the first layer.
    method : str
        The kernels, one of ``METHODS``.

    Returns
    -------
    dict
        ``{"main": (drift, diffusion), "aux": (drift, diffusion)}``, arrays ``(n,)``.

    Raises
    ------
    InputError
        When ``method`` is not one of ``METHODS`` (or ``"closed"`` for an activation without
        closed forms).
    """
    f = AuxiliaryODE(
        problem, loss, float(eta), int(batch), True, float(weight_decay), float(lr2), method
    )
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    out = {
        "main": (np.empty(len(y)), np.empty(len(y))),
        "aux": (np.empty(len(y)), np.empty(len(y))),
    }
    for n, yn in enumerate(y):
        drift, noise = f.parts(yn)
        a, c, Q, R = f.unpack(yn)
        da, dc, dQ, dR = f.unpack(drift)
        _, _, nQ, _ = f.unpack(noise)
        if loss.heads == 1:
            dc = da
        for key, (ga, gc, G, H) in error_gradients(problem, a, c, Q, R).items():
            out[key][0][n] = ga @ da + gc @ dc + np.sum(G * dQ) + np.sum(H * dR)
            out[key][1][n] = np.sum(G * nQ)
    return out


# --- online SGD ----------------------------------------------------------------------------------


def _threads(threads) -> int:
    if threads is not None:
        return int(threads)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _check_config(config):
    from ._trainer import TrainConfig

    if not isinstance(config, TrainConfig):
        raise InputError(
            f"config={type(config).__name__} is not allowed; allowed: a "
            "gaugedyn.training.TrainConfig"
        )
    if not (config.optimizer == "sgd" and config.samples is None):
        raise InputError(
            "the auxiliary model trains by online SGD: TrainConfig(optimizer='sgd', "
            "samples=None, ...)"
        )
    if config.label_noise:
        raise InputError(
            f"label_noise={config.label_noise!r} is not allowed here; the two "
            "tasks' label noises are JointLoss(sigma_main=..., sigma_aux=...)"
        )


_RECORDS = ("a", "c", "Q", "R", "quad", "emp_main", "emp_aux", "flow")
"""What a seed's run records at each grid point, in the kernels' argument order."""


def _records(n: int, K: int, Mt: int) -> dict[str, Any]:
    shapes = {"a": (K,), "c": (K,), "Q": (K, K), "R": (K, Mt), "quad": (K, K)}
    return {key: np.full((n, *shapes.get(key, ())), np.nan) for key in _RECORDS}


def _randomness(config, B: int, gen, given: bool, noise):
    """The generator and the label noises a kernel reads: drawn (``gen``; an empty noise
    array) or given (a typed placeholder generator, never drawn from, and the noises: zeros when
    the given samples come without)."""
    from ._online_fast import BIT_GENERATOR

    if given:
        if noise is None:
            noise = np.zeros((int(config.steps), B, 2))
        return np.random.Generator(BIT_GENERATOR(0)), np.ascontiguousarray(noise, np.float64)
    if gen is None:
        raise ValueError("run_seed needs the seed's generator or the samples")
    return gen, np.empty((0, 1, 2))


def run_seed(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    config,
    grid,
    backend: str,
    gen=None,
    samples=None,
    noise=None,
    fields=None,
    sample_gram=None,
) -> dict:
    """One seed of online SGD (``backend`` in `BACKENDS`) from the problem's weights (or
    their Gram matrix), randomness from ``gen`` or given: weight space reads ``samples (steps,
    B, D)``, the chain ``fields (steps, B, P)`` and ``sample_gram (steps, B, B)``; both read the
    label noises ``noise (steps, B, 2)`` when given. Returns the records and ``failed_at``."""
    from ._online_fast import SCHEDULE_CODES

    k = _kernels()
    K, Mt, B = problem.K, problem.M + problem.M_aux, int(config.batch_size)
    P = K + Mt
    out = _records(len(grid), K, Mt)
    gen, noise = _randomness(config, B, gen, samples is not None or fields is not None, noise)
    a = problem.a.copy()
    # one output: the auxiliary head is the main head (the same array)
    c = np.array(problem.c, dtype=np.float64) if loss.heads == 2 else a
    code = activation_of(problem.activation).code
    if code is None:  # AuxiliaryProblem refuses such activations; kept for the type checker
        raise InputError(f"activation {problem.activation!r} has no compiled kernel")
    schedule = (SCHEDULE_CODES[config.schedule], float(config.lr), float(config.lr_min))
    common = (*schedule, float(config.decay), int(config.steps), np.asarray(grid, np.int64), B)
    tail: list[Any] = [float(loss.gamma), float(loss.sigma_main), float(loss.sigma_aux)]
    tail += [float(config.weight_decay), float(config.lr2), *(out[key] for key in _RECORDS)]
    args: list[Any]
    if backend == "compiled":
        X = np.empty((0, 1, 1)) if samples is None else np.ascontiguousarray(samples, np.float64)
        args = [a, c, problem.W.copy(), problem.V_main, problem.V_aux, problem.b_main]
        args += [problem.b_aux, loss.heads, int(code), *common, gen, X, noise]
        status = k.run(*args, *tail)
    else:
        F = np.empty((0, B, P)) if fields is None else np.ascontiguousarray(fields, np.float64)
        S = np.empty((0, B, B)) if sample_gram is None else np.ascontiguousarray(sample_gram, float)
        args = [a, c, problem.gram(), problem.b_main, problem.b_aux, K, problem.dim]
        args += [loss.heads, int(code), *common, gen, F, S, noise, PIVOT_TOL]
        status = k.chain_run(*args, *tail)
    out["failed_at"] = None if status < 0 else int(status)
    return out


def train_auxiliary(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    config,
    seeds: int = 1,
    root_seed: int = 0,
    *,
    backend: str = "chain",
    seed_indices: Sequence[int] | None = None,
    threads: int | None = None,
) -> dict:
    r"""Online SGD of the auxiliary model for $S$ seeds (``backend``: weight space
    ``"compiled"`` or the exact order-parameter chain ``"chain"``, the same law at every $D$).

    Seed ``i`` draws from its own generator (``gaugedyn.training._online_fast.seed_generator``);
    seeds do not depend on how many share the run.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem; its weights (or their Gram matrix, for the chain) start every seed.
    loss : JointLoss
        The joint loss: $\gamma$, the label noises and the reading.
    config : TrainConfig
        Online SGD only (``optimizer="sgd"``, ``samples=None``), without ``label_noise`` (the
        tasks' label noises are ``loss``'s).
    seeds : int
        The number of seeds when ``seed_indices`` is not given.
    root_seed : int
        The run's root seed: seed ``i`` draws from ``task_seed(root_seed, i)``.
    backend : str
        ``"chain"`` or ``"compiled"`` (`BACKENDS`).
    seed_indices : Sequence[int] or None
        The seeds' indices; ``None``: ``range(seeds)``.
    threads : int or None
        Threads the seeds run on; ``None``: the CPUs this process may use.

    Returns
    -------
    dict
        ``{"t" (T,), "steps", "flow_time", "a", "c" (S, T, K), "Q", "quad" (S, T, K, K), "R"
        (S, T, K, M + Ma), "eps_main", "eps_aux" (S, T), "emp_main", "emp_aux", "seeds",
        "settings", "diagnostics"}``; ``quad`` is the cumulative quadratic (diffusion) part of
        $Q$'s increments.

    Raises
    ------
    InputError
        When ``problem``, ``loss`` or ``config`` is of the wrong type, ``config`` is not online
        SGD or sets ``label_noise``, its step size is out of range, or ``backend`` is not one of
        `BACKENDS`.
    DivergenceError
        When a seed's values become non-finite.
    """
    from ._online_fast import seed_generator

    started = _time.perf_counter()
    _check_common(problem, loss, config.lr if hasattr(config, "lr") else 1.0, 1, 0.0, 1.0)
    _check_config(config)
    if backend not in BACKENDS:
        raise InputError(f"backend={backend!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    if seed_indices is None:
        seed_indices = list(range(int(seeds)))
    seed_indices = [int(i) for i in seed_indices]
    grid = config.grid()
    D = problem.dim

    def one(index):
        return run_seed(problem, loss, config, grid, backend, gen=seed_generator(root_seed, index))

    _kernels()
    nthreads = _threads(threads)
    if nthreads > 1 and len(seed_indices) > 1:
        with ThreadPoolExecutor(max_workers=min(nthreads, len(seed_indices))) as pool:
            outs = list(pool.map(one, seed_indices))
    else:
        outs = [one(i) for i in seed_indices]
    for i, o in zip(seed_indices, outs):
        if o["failed_at"] is not None:
            r = o["failed_at"]
            good = {"a": o["a"][r - 1], "Q": o["Q"][r - 1], "step": int(grid[r - 1])} if r else None
            raise DivergenceError(f"a, c, Q or R of seed {i}", grid[r] / D, int(grid[r]), good)
    res: dict[str, Any] = {
        key: np.stack([o[key] for o in outs])
        for key in ("a", "c", "Q", "R", "quad", "emp_main", "emp_aux")
    }
    res["eps_main"], res["eps_aux"] = task_errors(problem, res["a"], res["c"], res["Q"], res["R"])
    res |= {
        "t": np.asarray(grid, dtype=float) / D,
        "steps": np.asarray(grid, np.int64),
        "flow_time": outs[0]["flow"].copy(),
        "seeds": seed_indices,
    }
    res["settings"] = {
        "config": config.describe(),
        "problem": problem.describe(),
        "loss": loss.describe(),
        "backend": backend,
        "threads": nthreads,
        "root_seed": int(root_seed),
        "time": "t = steps / D (online SGD, step eta/D)",
        "seed_derivation": "numpy SFC64 per seed from gaugedyn._meta.task_seed(root_seed, i)",
    }
    res["diagnostics"] = {"wall_time_s": _time.perf_counter() - started, "versions": versions()}
    return res

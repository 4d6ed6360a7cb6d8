r"""The stationary state of the auxiliary model's online ODE and its fluctuation-dissipation
relation (derivation and assumptions: ``derivations/auxiliary.md``).

**FDT.** Let ``theta*`` minimise the joint population loss ``L_J = eps_m + gamma eps_a`` and
``N_ij = E[kappa_i kappa_j g'_i g'_j] + (a_i a_j sigma_m^2 + gamma^2 c_i c_j sigma_a^2)
E[g'_i g'_j]`` be the gradient-noise matrix of the ODE's $\eta^2 / B$ term. In the stationary
state of online SGD at small ``eta``, the first layer fluctuates in the ``D - P`` bulk
directions with the Gram matrix ``Q_perp`` solving ``2 (G_J Q_perp + Q_perp G_J) = eta N / B``
(dissipation by the bulk Hessian ``2 G_J``, ``G_J = dL_J/dQ``, against the noise), so

    eps_m + gamma eps_a = L_J(theta*) + (eta / 4B) Tr N(theta*) + O(eta^2),

whatever ``G_J`` is. With ``N`` split into the teachers' misfit part and the label noise, the
label-noise part is the single-task errors' ``eps_s(sigma) = (eta / 4B) sigma^2 sum_n b_n^2
E[g'(nu_n)^2] + O(eta^2)`` rescaled by the optimum's ``chi = sum_i a_i^2 E[g'(lambda*_i)^2] /
sum_n b_n^2 E[g'(nu_n)^2]``:

    eps_m + gamma eps_a = L_J* + (eta / 4B) M_J + chi_m eps_m^s + gamma^2 chi_a eps_a^s,

the relation linking the two errors to the single-task ones; where the joint optimum fits both
teachers (identical teachers, ``rho = 1``) ``L_J* = M_J = 0``, ``chi = 1`` and
``(1 + gamma) eps_m = eps_m^s + gamma^2 eps_a^s``.
"""

from __future__ import annotations

import numpy as np

from .._errors import InputError
from ..theory import activation_of
from ._auxiliary import AuxiliaryODE, AuxiliaryProblem, JointLoss, auxiliary_ode, task_errors

RESIDUAL_TOL = 1e-10
"""The largest ``|dy/dt| / eta`` a stationary state of the noisy ODE may leave (after the
polish): the state is then off by at most this over the slowest rate per unit ``eta``, along
directions (the slow ones lie in the teachers' span) that move ``L_J`` at second order."""

POLISH_FROM = 1e-2
"""``|dy/dt| / eta`` below which the polish is tried; it is kept when it reaches the tolerance
within `POLISH_STEP` of the flow's state (the fixed point that close is the one the flow
reaches); otherwise the integration goes on."""

POLISH_STEP = 0.05
"""The largest change of any order parameter (relative to ``1 + |y|``) a polish may make."""

CHUNK_RTOL = 1e-8
"""The integrator's relative tolerance over a chunk: it only has to bring the state near the
fixed point; the polish (or the residual test) decides."""

MAX_CHUNKS = 20
"""Integration chunks of ``settle`` flow time each before the polish takes over."""

OPTIMUM_TOL = 1e-6
"""The same for the noise-free flow's fixed point (the joint optimum): where it fits a teacher
exactly the flow approaches it slowly along the alignment (and a Hermite-series pair kernel is
least accurate at correlation one); the relation needs ``L_J`` and ``Tr N`` there only to well
below ``eta Tr N / 4B``."""


def stationary_state(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    eta: float,
    *,
    batch: int = 1,
    weight_decay: float = 0.0,
    lr2: float = 1.0,
    noise: bool = True,
    method: str = "auto",
    settle: float = 10.0,
    y0=None,
    tol: float = RESIDUAL_TOL,
) -> dict:
    r"""The fixed point the online ODE reaches from the problem's order parameters (or ``y0``):
    the ODE integrated (DOP853) in chunks of flow time $\eta t$ equal to ``settle`` (at most
    `MAX_CHUNKS`) until $\lvert \dot y \rvert / \eta$ is below ``tol``, or below
    `POLISH_FROM` and a Levenberg-Marquardt polish on $\dot y / \eta$ brings it below
    ``tol`` (a direction the flow conserves, such as $R_m - R_a$ for identical teachers, keeps its
    integrated value).

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem; its order parameters start the flow unless ``y0`` is given.
    loss : JointLoss
        The joint loss: $\gamma$, the label noises and the reading.
    eta : float
        The step size $\eta$, positive.
    batch : int
        Samples per step $B$.
    weight_decay : float
        The coupled weight decay $\lambda \ge 0$.
    lr2 : float
        The heads' rate relative to the first layer (0 keeps them fixed).
    noise : bool
        Include the gradient-noise term (``False``: the gradient flow's fixed point).
    method : str
        The kernels, one of ``METHODS``.
    settle : float
        The flow time $\eta t$ of one integration chunk.
    y0 : array_like or None
        A flattened state $(a, c, Q, R)$ to start from instead of the problem's.
    tol : float
        The largest $\max \lvert \dot y \rvert / \eta$ accepted.

    Returns
    -------
    dict
        ``{"y", "a", "c", "Q", "R", "eps_main", "eps_aux", "residual", "t"}``: the state, its
        errors, its residual $\max \lvert \dot y \rvert / \eta$ and the time integrated.

    Raises
    ------
    RuntimeError
        When neither the chunks nor the polish reach ``tol``.
    InputError
        When ``method`` is not one of ``METHODS``, or an argument of the chunks' `auxiliary_ode()`
        is out of range.
    """
    from scipy.optimize import least_squares

    f = AuxiliaryODE(
        problem, loss, float(eta), int(batch), bool(noise), float(weight_decay), float(lr2), method
    )
    y = f.initial() if y0 is None else np.asarray(y0, dtype=np.float64)

    def scaled(v):
        return f(0.0, v) / eta

    def polish(v):
        # move only in the Jacobian's column space: a quantity the flow conserves (a frozen
        # head, lr2 = 0; R_m - R_a for identical teachers) is a left null vector of J and keeps
        # its value
        n = v.size
        J = np.empty((n, n))
        for k in range(n):
            h = 1e-7 * (1 + abs(v[k]))
            e = np.zeros(n)
            e[k] = h
            J[:, k] = (scaled(v + e) - scaled(v - e)) / (2 * h)
        U, sv, _ = np.linalg.svd(J)
        B = U[:, sv > 1e-9 * sv[0]]
        sol = least_squares(
            lambda z: scaled(v + B @ z),
            np.zeros(B.shape[1]),
            method="lm",
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
            max_nfev=200 * n,
        )
        return v + B @ sol.x, float(np.max(np.abs(sol.fun)))

    chunk, t = float(settle) / float(eta), 0.0
    res = float(np.max(np.abs(scaled(y))))
    for _ in range(MAX_CHUNKS):
        if res <= tol:
            break
        if res < POLISH_FROM:
            v, r = polish(y)
            if r <= tol and np.all(np.abs(v - y) <= POLISH_STEP * (1 + np.abs(y))):
                y, res = v, r
                break
        o = auxiliary_ode(
            problem,
            loss,
            eta,
            [0.0, chunk],
            batch=batch,
            noise=noise,
            weight_decay=weight_decay,
            lr2=lr2,
            method=method,
            y0=y,
            rtol=CHUNK_RTOL,
            atol=CHUNK_RTOL * 1e-2,
        )
        y, t = o["y"][-1], t + chunk
        res = float(np.max(np.abs(scaled(y))))
    if res > tol:
        raise RuntimeError(
            f"the stationary state of the auxiliary ODE was not reached: "
            f"|dy/dt| / eta = {res:.2e} after t = {t:g} and the polish"
        )
    a, c, Q, R = f.unpack(y)
    em, ea = task_errors(problem, a, c, Q, R)
    return {
        "y": y,
        "a": a,
        "c": c,
        "Q": Q,
        "R": R,
        "eps_main": float(em),
        "eps_aux": float(ea),
        "residual": res,
        "t": t,
    }


def joint_optimum(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    *,
    lr2: float = 1.0,
    method: str = "auto",
    settle: float = 20.0,
) -> dict:
    r"""The minimiser of $\varepsilon_m + \gamma \varepsilon_a$ that gradient flow reaches from the
    problem's order parameters: the noise-free ODE's fixed point (`stationary_state()` with
    ``noise=False`` at $\eta = 1$, tolerance `OPTIMUM_TOL`); a fixed head (``lr2 = 0``)
    stays fixed.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem; its order parameters start the flow.
    loss : JointLoss
        The joint loss (its $\gamma$ weighs the auxiliary error).
    lr2 : float
        The heads' rate relative to the first layer (0 keeps them fixed).
    method : str
        The kernels, one of ``METHODS``.
    settle : float
        The flow time of one integration chunk.

    Returns
    -------
    dict
        `stationary_state()`'s result at the optimum.
    """
    return stationary_state(
        problem, loss, 1.0, noise=False, lr2=lr2, method=method, settle=settle, tol=OPTIMUM_TOL
    )


def relaxation_rate(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    eta: float,
    y,
    *,
    batch: int = 1,
    lr2: float = 1.0,
    method: str = "auto",
) -> float:
    """The slowest decay rate of the online ODE near the state ``y``: the smallest ``-Re mu``
    over the eigenvalues ``mu`` of its Jacobian (central differences) that are not zero (to
    ``1e-8`` of the largest; a conserved direction, as ``R_m - R_a`` for identical teachers,
    has a zero eigenvalue). A fixed head's zero rows are left out the same way."""
    f = AuxiliaryODE(problem, loss, float(eta), int(batch), True, 0.0, float(lr2), method)
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    J = np.empty((n, n))
    for k in range(n):
        h = 1e-6 * max(1.0, abs(y[k]))
        e = np.zeros(n)
        e[k] = h
        J[:, k] = (f(0.0, y + e) - f(0.0, y - e)) / (2 * h)
    mu = np.linalg.eigvals(J)
    decay = -mu.real
    top = np.max(np.abs(mu))
    live = decay[np.abs(mu) > 1e-8 * top]
    if live.size == 0 or np.any(live <= 0):
        raise RuntimeError(
            "the ODE is not contracting near this state (an eigenvalue with "
            "non-negative real part): no relaxation rate"
        )
    return float(live.min())


def noise_matrix(
    problem: AuxiliaryProblem, loss: JointLoss, y, *, method: str = "auto"
) -> np.ndarray:
    r"""``N (K, K)`` at the state ``y``: the coefficient of $\eta^2 / B$ in ``dQ/dt``."""
    f = AuxiliaryODE(problem, loss, 1.0, 1, True, 0.0, 1.0, method)
    return f.unpack(f.evaluate(y, 0.0, 1.0))[2].copy()


def _derivative_moments(problem: AuxiliaryProblem, Q) -> tuple[np.ndarray, np.ndarray]:
    """``E[g'(lambda_i)^2]`` of the students at ``Q`` and ``E[g'(nu_n)^2]`` of the teachers,
    by Price's theorem ``E[g'(x)^2] = dF/dc (q, q, q)`` on the activation's pair kernel."""
    dF = activation_of(problem.activation).kernels[1]
    _, _, _, _, T = problem.order_parameters()
    q, t = np.diag(Q), np.diag(T)
    return np.asarray(dF(q, q, q)[2], float), np.asarray(dF(t, t, t)[2], float)


def fdt_relation(
    problem: AuxiliaryProblem,
    loss: JointLoss,
    eta: float,
    *,
    batch: int = 1,
    lr2: float = 1.0,
    method: str = "auto",
    settle: float = 10.0,
    optimum: dict | None = None,
    start=None,
) -> dict:
    r"""The fluctuation-dissipation relation (module docstring) at learning rate ``eta``:
    $\varepsilon_J = L_J^* + (\eta / 4B)\, \operatorname{Tr} N^* + O(\eta^2)$.

    Parameters
    ----------
    problem : AuxiliaryProblem
        The problem.
    loss : JointLoss
        The joint loss: $\gamma$ and the label noises $\sigma_m$, $\sigma_a$.
    eta : float
        The learning rate $\eta$, positive.
    batch : int
        Samples per step $B$.
    lr2 : float
        The heads' rate relative to the first layer.
    method : str
        The kernels, one of ``METHODS``.
    settle : float
        The flow time of one integration chunk of the stationary state.
    optimum : dict or None
        The noise-free fixed point (`joint_optimum()`'s result); ``None``: computed here.
    start : array_like or None
        A state to seek the stationary state from (such as the stationary state at a
        neighbouring ``eta``); ``None``: the optimum.

    Returns
    -------
    dict
        The stationary errors ``eps_main``, ``eps_aux``, ``eps_joint`` and the relation's parts:
        ``E_star`` ($L_J$ at the optimum), ``trace`` ($\operatorname{Tr} N$ there), ``predicted``
        ($L_J^* + \eta \operatorname{Tr} N / 4B$), ``ratio``
        ($(\varepsilon_J - L_J^*) / (\eta \operatorname{Tr} N / 4B)$, $1 + O(\eta)$), the split
        ``misfit`` / ``label`` of $\operatorname{Tr} N$, ``chi_main`` / ``chi_aux``, the single-task
        errors ``eps_single_main`` / ``eps_single_aux`` to first order, ``residual``, and the
        ``stationary`` and ``optimum`` states.

    Raises
    ------
    RuntimeError
        When the optimum or the stationary state is not reached (`stationary_state()`).
    """
    if optimum is None:
        optimum = joint_optimum(problem, loss, lr2=lr2, method=method)
    stat = stationary_state(
        problem,
        loss,
        eta,
        batch=batch,
        lr2=lr2,
        method=method,
        settle=settle,
        y0=optimum["y"] if start is None else start,
    )
    gamma = loss.gamma
    E_star = optimum["eps_main"] + gamma * optimum["eps_aux"]
    N = noise_matrix(problem, loss, optimum["y"], method=method)
    trace = float(np.trace(N))
    student, teachers = _derivative_moments(problem, optimum["Q"])
    a, c = optimum["a"], optimum["c"]
    label = float(
        np.sum((a**2 * loss.sigma_main**2 + gamma**2 * c**2 * loss.sigma_aux**2) * student)
    )
    M = problem.M
    ref_m = float(np.sum(problem.b_main**2 * teachers[:M]))
    ref_a = float(np.sum(problem.b_aux**2 * teachers[M:]))
    eps_J = stat["eps_main"] + gamma * stat["eps_aux"]
    scale = eta / (4.0 * batch)
    return {
        "eta": float(eta),
        "eps_main": stat["eps_main"],
        "eps_aux": stat["eps_aux"],
        "eps_joint": eps_J,
        "E_star": E_star,
        "trace": trace,
        "misfit": trace - label,
        "label": label,
        "predicted": E_star + scale * trace,
        "ratio": (eps_J - E_star) / (scale * trace) if trace > 0 else float("nan"),
        "chi_main": float(np.sum(a**2 * student)) / ref_m,
        "chi_aux": float(np.sum(c**2 * student)) / ref_a,
        "eps_single_main": scale * loss.sigma_main**2 * ref_m,
        "eps_single_aux": scale * loss.sigma_aux**2 * ref_a,
        "residual": max(stat["residual"], optimum["residual"]),
        "stationary": stat,
        "optimum": optimum,
    }


def check_eta_grid(etas) -> np.ndarray:
    """Learning rates of an order fit: at least four distinct positive values, increasing."""
    e = np.asarray(etas, dtype=float)
    if e.ndim != 1 or e.size < 4 or np.any(e <= 0) or np.any(np.diff(e) <= 0):
        raise InputError(
            f"etas={list(np.ravel(e))} is not allowed; allowed: at least four "
            "increasing learning rates > 0"
        )
    return e

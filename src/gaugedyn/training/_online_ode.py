"""The classical online-SGD ODE (Saad & Solla 1995; Goldt et al. 2019) in this package's scaling.

Online SGD with a fresh batch of ``B`` samples per step, step ``eta / D`` on the batch loss and
time ``t = steps / D`` has, as ``D -> infinity``, deterministic order parameters obeying

    da_i/dt  = eta * (-dL/da_i),
    dR_in/dt = eta * (-(2 G R + H T))_in,
    dQ_ij/dt = eta * (-(2 G Q + 2 Q G + H R^T + R H^T))_ij
               + (eta^2 / B) a_i a_j E[g'(lambda_i) g'(lambda_j) e^2],

with ``e = sum_k a_k g(lambda_k) - sum_n b_n g(nu_n)``; the ``eta`` terms are the population flow
(:func:`gaugedyn.theory.order_parameter_velocity`) and the ``eta^2`` term is the gradient noise
(``|x|^2 ~ D`` makes it survive the limit). The noise term expands into the four-point integrals
``I4(i, j, k, l) = E[g'(u_i) g'(u_j) g(u_k) g(u_l)]`` over the jointly Gaussian local fields with
covariance ``C = [[Q, R], [R^T, T]]``. For ``g(z) = erf(z / sqrt 2)`` the symbolic module's
``erf_i4`` (``gaugedyn derive``, ``derivations/gaussian_erf.md``) gives them in closed form; for
the linear activation ``I4 = C34``. ReLU has no such closed form: its online
SGD is compared with the population flow at small ``eta``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InputError
from ..theory import Problem, order_parameter_velocity
from ..theory._generated_kernels import erf_i4


def noise_term(a, Q, R, b, T, activation: str):
    """``N_ij = a_i a_j E[g'(lambda_i) g'(lambda_j) e^2]`` (``K x K``)."""
    K = a.shape[0]
    C = np.block([[Q, R], [R.T, T]])
    c = np.concatenate([a, -b])
    if activation == "linear":
        e2 = c @ C @ c
        return np.outer(a, a) * e2
    if activation != "erf":
        raise InputError(f"the online-SGD noise term has a closed form for erf and linear, not "
                         f"{activation!r}; use eta -> 0 (the population flow) for relu")
    d = np.diag(C)
    i = np.arange(K)[:, None, None, None]
    j = np.arange(K)[None, :, None, None]
    k = np.arange(C.shape[0])[None, None, :, None]
    l = np.arange(C.shape[0])[None, None, None, :]
    I4 = erf_i4(d[i], C[i, j], C[i, k], C[i, l], d[j], C[j, k], C[j, l], d[k], C[k, l], d[l])
    E = np.einsum("ijkl,k,l->ij", I4, c, c)
    return np.outer(a, a) * E


@dataclass(frozen=True)
class OnlineODE:
    """Right-hand side ``f(t, y, params)`` of the online ODE with ``y = (a, Q, R)`` flattened."""

    K: int
    M: int
    b: np.ndarray
    T: np.ndarray
    activation: str
    eta: float
    batch: int = 1
    noise: bool = True

    def unpack(self, y):
        """``(a, Q, R)`` of states ``y (..., K + K^2 + K M)``."""
        K, M = self.K, self.M
        a = y[..., :K]
        Q = y[..., K:K + K * K].reshape(*y.shape[:-1], K, K)
        R = y[..., K + K * K:].reshape(*y.shape[:-1], K, M)
        return a, Q, R

    def __call__(self, t, y):
        a, Q, R = self.unpack(y)
        da, dQ, dR = order_parameter_velocity(a, Q, R, self.b, self.T, self.activation)
        dQ = self.eta * dQ
        if self.noise:
            dQ = dQ + (self.eta**2 / self.batch) * noise_term(a, Q, R, self.b, self.T,
                                                              self.activation)
        return np.concatenate([self.eta * da, dQ.ravel(), self.eta * dR.ravel()])


ODE_METHODS = ("auto", "compiled", "reference")


def _check_args(problem, eta, batch, noise, rtol, atol, times):
    """``online_ode``'s arguments checked against the command line's declarations (``lr`` and
    ``batch`` of ``gaugedyn train``, ``rtol``/``atol`` of ``gaugedyn solve``), or InputError."""
    from ..theory._cli import OPTIONS as SOLVE
    from ._cli import OPTIONS as TRAIN

    if not isinstance(problem, Problem):
        raise InputError(f"problem={type(problem).__name__} is not allowed; allowed: a "
                         "gaugedyn.theory.Problem")
    if not isinstance(noise, bool | np.bool_):
        raise InputError(f"noise={noise!r} is not allowed; allowed: True or False")
    eta, batch = TRAIN["lr"].accept(eta, "eta"), TRAIN["batch"].accept(batch)
    rtol, atol = SOLVE["rtol"].accept(rtol), SOLVE["atol"].accept(atol)
    try:
        t = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("times is not allowed; allowed: an increasing 1-D array of times "
                         ">= 0") from None
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or t[0] < 0 \
            or np.any(np.diff(t) <= 0):
        raise InputError(f"times (shape {t.shape}) is not allowed; allowed: a non-empty, "
                         "strictly increasing 1-D array of finite times >= 0")
    return eta, batch, rtol, atol, t


def online_ode(problem: Problem, eta: float, times, batch: int = 1, noise: bool = True,
               rtol: float = 1e-9, atol: float = 1e-11, method: str = "auto") -> dict:
    """Solve the online ODE from ``problem``'s order parameters at ``times`` (``t = steps / D``).

    ``method="compiled"`` (the default for erf under ``"auto"``) integrates the numba-compiled
    classical form (:func:`gaugedyn.training._online_fast.compiled_online_rhs`) with LSODA
    (``scipy.integrate.odeint``); ``"reference"`` integrates :class:`OnlineODE` (numpy, through
    the population velocity) with DOP853. The two right-hand sides agree to round-off (tested).
    Returns ``{"t", "a" (T, K), "Q" (T, K, K), "R" (T, K, M)}``.
    """
    from scipy.integrate import odeint, solve_ivp

    if method not in ODE_METHODS:
        raise InputError(f"method={method!r} is not allowed; allowed: {', '.join(ODE_METHODS)}")
    eta, batch, rtol, atol, times = _check_args(problem, eta, batch, noise, rtol, atol, times)
    a0, Q0, R0, b, T = problem.order_parameters()
    rhs = OnlineODE(problem.K, problem.M, b, T, problem.activation, float(eta), int(batch), noise)
    y0 = np.concatenate([a0, Q0.ravel(), R0.ravel()])
    if method == "auto":
        method = "compiled" if problem.activation == "erf" else "reference"
    if method == "compiled":
        if problem.activation != "erf":
            raise InputError(f"method='compiled' integrates the erf online ODE, not "
                             f"{problem.activation!r}; use method='reference'")
        from ._online_fast import compiled_online_rhs

        f = compiled_online_rhs(problem.K, problem.M, b, T, float(eta), int(batch), noise)
        grid = times if times[0] == 0.0 else np.concatenate([[0.0], times])
        Y, info = odeint(f, y0, grid, tfirst=True, rtol=rtol, atol=atol, mxstep=1_000_000,
                         full_output=True)
        if info["message"] != "Integration successful.":
            raise RuntimeError(f"online ODE failed: {info['message']}")
        Y = Y if times[0] == 0.0 else Y[1:]
        a, Q, R = rhs.unpack(Y)
        return {"t": times, "a": a, "Q": Q, "R": R}
    sol = solve_ivp(rhs, (0.0, float(times[-1])), y0, method="DOP853", t_eval=times,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"online ODE failed: {sol.message}")
    a, Q, R = rhs.unpack(sol.y.T)
    return {"t": sol.t, "a": a, "Q": Q, "R": R}

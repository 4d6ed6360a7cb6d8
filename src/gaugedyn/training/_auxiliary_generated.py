"""Kernels and closed forms of the auxiliary-learning model, generated from the symbolic
derivation (``gaugedyn.symbolic._auxiliary``, document ``derivations/auxiliary.md``).

GENERATED FILE, do not edit: written by ``gaugedyn derive`` and kept current by
``gaugedyn derive --check``.

Scalar kernels (``math`` arithmetic, compiled by numba in ``gaugedyn.training._auxiliary_kernels``):

- ``pair_<act>(q1, q2, c)`` = E[g(x1) g(x2)] over (x1, x2) ~ N(0, [[q1, c], [c, q2]]), with
  ``pair_dq1_<act>`` and ``pair_dc_<act>`` its partial derivatives, for act in relu, erf (g(z) =
  erf(z / sqrt 2)), linear; ReLU's square root and arccos arguments are clipped to their domain;
- ``erf_i4(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44)`` = E[g'(x1) g'(x2) g(x3) g(x4)];
- ``relu_a2(cxx, cxy, cyy)`` = E[theta(x) relu(y)^2] and ``relu_a3(cxx, cxy, cxz, cyy, cyz, czz)``
  = E[theta(x) relu(y) relu(z)] (Stein's lemma; conditional deviations and correlations clipped).

Numpy functions of the one-output linear student (head fixed at 1; teachers of unit norm with
overlap rho; G = 1 + gamma), broadcasting over their arguments:

- ``linear_error(t, ...)``: the main-task error eps_m(t), exact solution of the online ODE;
- ``linear_error_leading(tau, ...)``: its expansion to first order in eta at tau = eta t;
- ``linear_error_stationary`` / ``linear_error_stationary_leading``: t -> infinity;
- ``linear_benefit``: eps_m(gamma = 0) - eps_m(gamma), stationary, first order in eta;
- ``linear_boundary``: the rho where that benefit changes sign;
- ``linear_diffusion(t, ...)``: the diffusion (eta^2) part of eps_m(t) - eps_m(0);
- ``linear_optimal_gamma_cubic``: coefficients (c0, c1, c2, c3) of the cubic in gamma whose
  positive root minimises the stationary leading-order error.
"""

import math

import numpy as np


def _args(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in xs))


def pair_relu(q1, q2, c):
    s = math.sqrt(max(q1 * q2 - c * c, 0.0))
    theta = math.acos(min(max(c / math.sqrt(q1 * q2), -1.0), 1.0))
    return (1/2)*(-c*theta + math.pi*c + s)/math.pi


def pair_dq1_relu(q1, q2, c):
    s = math.sqrt(max(q1 * q2 - c * c, 0.0))
    return (1/4)*s/(math.pi*q1)


def pair_dc_relu(q1, q2, c):
    theta = math.acos(min(max(c / math.sqrt(q1 * q2), -1.0), 1.0))
    return -1/2*(theta - math.pi)/math.pi


def pair_erf(q1, q2, c):
    return 2*math.asin(c/(math.sqrt(q1 + 1)*math.sqrt(q2 + 1)))/math.pi


def pair_dq1_erf(q1, q2, c):
    x0 = q1 + 1
    return -c/(math.pi*x0*math.sqrt(-c**2 + x0*(q2 + 1)))


def pair_dc_erf(q1, q2, c):
    return 2/(math.pi*math.sqrt(-c**2 + (q1 + 1)*(q2 + 1)))


def pair_linear(q1, q2, c):
    return c


def pair_dq1_linear(q1, q2, c):
    return 0.0


def pair_dc_linear(q1, q2, c):
    return 1.0


def erf_i4(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44):
    x0 = c11 + 1
    x1 = c22 + 1
    x2 = c12**2 - x0*x1
    x3 = c12*c13
    x4 = c12*c14
    return -4*math.asin((c13*c14*x1 + c23*c24*x0 - c23*x4 - c24*x3 + c34*x2)/math.sqrt((c13**2*x1 + c23**2*x0 - 2*c23*x3 + x2*(c33 + 1))*(c14**2*x1 + c24**2*x0 - 2*c24*x4 + x2*(c44 + 1))))/(math.pi**2*math.sqrt(-x2))


def relu_a2(cxx, cxy, cyy):
    sy_x = math.sqrt(max(cyy - cxy * cxy / cxx, 1e-300))
    r_xy = min(max(cxy / math.sqrt(cxx * cyy), -1.0), 1.0)
    x0 = 0.6366197723675814
    return (1/4)*cyy*(x0*math.asin(r_xy) + 1) + (1/4)*cxy*sy_x*x0/math.sqrt(cxx)


def relu_a3(cxx, cxy, cxz, cyy, cyz, czz):
    sz_x = math.sqrt(max(czz - cxz * cxz / cxx, 0.0))
    sy_x = math.sqrt(max(cyy - cxy * cxy / cxx, 1e-300))
    sz_y = math.sqrt(max(czz - cyz * cyz / cyy, 0.0))
    sx_y = math.sqrt(max(cxx - cxy * cxy / cyy, 1e-300))
    r_xy = min(max(cxy / math.sqrt(cxx * cyy), -1.0), 1.0)
    r_xz = min(max(cxz / math.sqrt(cxx * czz), -1.0), 1.0)
    r_yz = min(max(cyz / math.sqrt(cyy * czz), -1.0), 1.0)
    x0 = 0.6366197723675814
    return (1/8)*math.sqrt(cyy)*x0*(sz_y - (cxy*cyz/cyy - cxz)/sx_y) + (1/8)*cyz*(x0*(math.asin(r_xy) + math.asin(r_xz) + math.asin(r_yz)) + 1) + (1/8)*cxy*x0*(sz_x + (cyz - cxy*cxz/cxx)/sy_x)/math.sqrt(cxx)


def linear_error(t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0):
    t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0 = _args(t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0)
    x0 = gamma**2
    x1 = gamma + 1
    x2 = x1**(-2.0)
    x3 = B**(-1.0)
    x4 = x1**(-1.0)
    x5 = sigma_a**2*x0 + sigma_m**2
    x6 = eta*x1
    x7 = -x3*x6 + 2
    x8 = x7**(-1.0)
    x9 = t*x6
    x10 = x4*(Ra0*gamma + Rm0)
    x11 = gamma*rho
    x12 = x2*(x0 + 2*x11 + 1)
    return (1/2)*eta*x3*x4*x5*x8 - x0*x2*(rho - 1) + (1/2)*(Q0 - eta*x3*x4*x5*x8 - 2*x10 + x12)*np.exp(-x7*x9) - (Rm0 - x10 + x12 - x4*(x11 + 1))*np.exp(-x9)


def linear_error_leading(tau, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0):
    tau, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0 = _args(tau, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0)
    x0 = gamma**2
    x1 = gamma + 1
    x2 = x1**2
    x3 = x2**(-1.0)
    x4 = x1**(-1.0)
    x5 = eta/B
    x6 = x4*x5*(sigma_a**2*x0 + sigma_m**2)
    x7 = tau*x1
    x8 = np.exp(-2*x7)
    x9 = x4*(Ra0*gamma + Rm0)
    x10 = gamma*rho
    x11 = x3*(x0 + 2*x10 + 1)
    return (1/2)*tau*x2*x5*x8*(Q0 + x11 - 2*x9) - x0*x3*(rho - 1) + (1/4)*x6 + (1/4)*x8*(2*Q0 + 2*x11 - x6 - 4*x9) - (Rm0 + x11 - x4*(x10 + 1) - x9)*np.exp(-x7)


def linear_error_stationary(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    x0 = gamma + 1
    x1 = x0**(-1.0)
    x2 = gamma**2
    x3 = B**(-1.0)
    return x1*((1/2)*eta*x3*(sigma_a**2*x2 + sigma_m**2)/(-eta*x0*x3 + 2) - x1*x2*(rho - 1))


def linear_error_stationary_leading(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    x0 = (gamma + 1)**(-1.0)
    x1 = gamma**2
    return x0*(-x0*x1*(rho - 1) + (1/4)*eta*(sigma_a**2*x1 + sigma_m**2)/B)


def linear_benefit(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    x0 = 4*B*gamma
    x1 = eta*sigma_m**2
    x2 = eta*sigma_a**2
    return (1/4)*gamma*(-gamma**2*x2 + gamma*x1 - gamma*x2 + rho*x0 - x0 + x1)/(B*(gamma + 1)**2)


def linear_boundary(eta, gamma, sigma_m, sigma_a, B):
    eta, gamma, sigma_m, sigma_a, B = _args(eta, gamma, sigma_m, sigma_a, B)
    x0 = sigma_m**2
    x1 = sigma_a**2
    return (1/4)*(4*B*gamma + eta*gamma*(gamma*x1 - x0 + x1) - eta*x0)/(B*gamma)


def linear_diffusion(t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0):
    t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0 = _args(t, eta, gamma, rho, sigma_m, sigma_a, B, Q0, Rm0, Ra0)
    x0 = B**(-1.0)
    x1 = gamma + 1
    x2 = gamma**2
    x3 = sigma_a**2*x2 + sigma_m**2
    x4 = x1**(-1.0)
    x5 = eta*x0
    x6 = -x1*x5 + 2
    x7 = x6**(-1.0)
    x8 = x5*x7
    return (1/2)*eta**2*x0*x1*(t*x3*(x4 + x8) - x7*(-1 + np.exp(-eta*t*x1*x6))*(Q0 - x3*x4*x8 - 2*x4*(Ra0*gamma + Rm0) + (2*gamma*rho + x2 + 1)/x1**2)/eta)


def _cubic_0(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    return -eta*sigma_m**2


def _cubic_1(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    return -8*B*rho + 8*B + 2*eta*sigma_a**2 - eta*sigma_m**2


def _cubic_2(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    return 3*eta*sigma_a**2


def _cubic_3(eta, gamma, rho, sigma_m, sigma_a, B):
    eta, gamma, rho, sigma_m, sigma_a, B = _args(eta, gamma, rho, sigma_m, sigma_a, B)
    return eta*sigma_a**2


def linear_optimal_gamma_cubic(eta, gamma_unused, rho, sigma_m, sigma_a, B):
    """Coefficients ``(c0, c1, c2, c3)`` of the cubic in gamma (``gamma_unused`` is ignored)."""
    return tuple(f(eta, 0.0, rho, sigma_m, sigma_a, B) for f in (_cubic_0, _cubic_1, _cubic_2,
                                                               _cubic_3))

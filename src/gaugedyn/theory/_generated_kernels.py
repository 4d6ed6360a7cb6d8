"""Gaussian kernels of each activation, generated from the symbolic derivations.

GENERATED FILE, do not edit: written by ``gaugedyn derive`` (gaugedyn.symbolic._codegen) and
kept current by ``gaugedyn derive --check``.

For act in relu, erf, linear (g(z) = erf(z / sqrt 2) for erf), elementwise with numpy
broadcasting, float64:

- ``pair_<act>(q1, q2, c, s=None)`` = E[g(x1) g(x2)], (x1, x2) ~ N(0, [[q1, c], [c, q2]]);
- ``pair_grad_<act>`` -> (dF/dq1, dF/dq2, dF/dc);
- ``pair_hess_<act>`` -> (q1q1, q1q2, q1c, q2q2, q2c, cc) second partials;
- ``self_<act>(q)`` = E[g(x)^2], x ~ N(0, q), with ``self_grad_<act>``, ``self_hess_<act>``.

ReLU: the square root argument q1 q2 - c^2 is clipped at 0 and the arccos argument to [-1, 1],
so values and first derivatives are finite for aligned neurons (c^2 = q1 q2); second derivatives
contain 1/sqrt(q1 q2 - c^2) and are inf (or nan) there. ``s``, when given, is sqrt(q1 q2 - c^2)
known more precisely than from q1 q2 - c^2 (the norm |w1 ^ w2| of the weights): ReLU then takes
theta = arctan2(s, c), exact for nearly aligned neurons; the other forms do not use it.

Online-SGD integrals for erf (Saad & Solla 1995, Goldt et al. 2019), plain expectations over
x ~ N(0, C): ``erf_i3`` = E[g'(x1) x2 g(x3)], ``erf_i4`` = E[g'(x1) g'(x2) g(x3) g(x4)] (the 10
upper-triangular entries of C in row order), ``erf_j2`` = E[g'(x1) g'(x2)].
"""

import numpy as np


def _args(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in xs))


def _relu_theta(q1, q2, c, s):
    if s is None:
        return np.arccos(np.clip(c / np.sqrt(q1 * q2), -1.0, 1.0))
    return np.arctan2(s, c)


def _relu_s(q1, q2, c, s):
    if s is None:
        return np.sqrt(np.maximum(q1 * q2 - c**2, 0.0))
    return np.broadcast_to(np.asarray(s, dtype=np.float64), c.shape)


def pair_relu(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    theta = _relu_theta(q1, q2, c, s)
    s = _relu_s(q1, q2, c, s)
    return (1/2)*(-c*theta + np.pi*c + s)/np.pi


def pair_grad_relu(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    theta = _relu_theta(q1, q2, c, s)
    s = _relu_s(q1, q2, c, s)
    x0 = 0.3183098861837907
    x1 = (1/4)*s*x0
    return (
        x1/q1,
        x1/q2,
        -1/2*x0*(theta - np.pi),
    )


def pair_hess_relu(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = _relu_s(q1, q2, c, s)
        x0 = 1/(np.pi*s)
        x1 = (1/8)*x0
        x2 = x1*(2*c**2 - q1*q2)
        x3 = (1/4)*c*x0
        return (
            x2/q1**2,
            np.array(x1),
            -x3/q1,
            x2/q2**2,
            -x3/q2,
            (1/2)*x0,
        )


def self_relu(q):
    q, = _args(q)
    return (1/2)*q


def self_grad_relu(q):
    q, = _args(q)
    return np.full(q.shape, 0.5)


def self_hess_relu(q):
    q, = _args(q)
    return np.full(q.shape, 0.0)


def pair_erf(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    return 2*np.arcsin(c/(np.sqrt(q1 + 1)*np.sqrt(q2 + 1)))/np.pi


def pair_grad_erf(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    x0 = q1 + 1
    x1 = q2 + 1
    x2 = 1/(np.pi*np.sqrt(-c**2 + x0*x1))
    x3 = c*x2
    return (
        -x3/x0,
        -x3/x1,
        2*x2,
    )


def pair_hess_erf(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    x0 = q1 + 1
    x1 = c**2
    x2 = q2 + 1
    x3 = 1/(np.pi*(x0*x2 - x1)**(3/2))
    x4 = c*x3
    x5 = (1/2)*x4
    x6 = x5*(-3*x0*x2 + 2*x1)
    return (
        -x6/x0**2,
        np.array(x5),
        -x2*x3,
        -x6/x2**2,
        -x0*x3,
        2*x4,
    )


def self_erf(q):
    q, = _args(q)
    return 2*np.arcsin(q/(q + 1))/np.pi


def self_grad_erf(q):
    q, = _args(q)
    return 2/(np.pi*(q + 1)*np.sqrt(2*q + 1))


def self_hess_erf(q):
    q, = _args(q)
    return -2*(3*q + 2)/(np.pi*np.sqrt(2*q + 1)*(2*q**3 + 5*q**2 + 4*q + 1))


def pair_linear(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    return np.array(c)


def pair_grad_linear(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    return (
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 1.0),
    )


def pair_hess_linear(q1, q2, c, s=None):
    q1, q2, c = _args(q1, q2, c)
    return (
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
        np.full(q1.shape, 0.0),
    )


def self_linear(q):
    q, = _args(q)
    return np.array(q)


def self_grad_linear(q):
    q, = _args(q)
    return np.full(q.shape, 1.0)


def self_hess_linear(q):
    q, = _args(q)
    return np.full(q.shape, 0.0)


def erf_i3(c11, c12, c13, c22, c23, c33):
    c11, c12, c13, c22, c23, c33 = _args(c11, c12, c13, c22, c23, c33)
    x0 = c11 + 1
    return -2*(c12*c13 - c23*x0)/(np.pi*x0*np.sqrt(-c13**2 + x0*(c33 + 1)))


def erf_i4(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44):
    c11, c12, c13, c14, c22, c23, c24, c33, c34, c44 = _args(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44)
    x0 = c11 + 1
    x1 = c22 + 1
    x2 = c12**2 - x0*x1
    x3 = c12*c13
    x4 = c12*c14
    return -4*np.arcsin((c13*c14*x1 + c23*c24*x0 - c23*x4 - c24*x3 + c34*x2)/np.sqrt((c13**2*x1 + c23**2*x0 - 2*c23*x3 + x2*(c33 + 1))*(c14**2*x1 + c24**2*x0 - 2*c24*x4 + x2*(c44 + 1))))/(np.pi**2*np.sqrt(-x2))


def erf_j2(c11, c12, c22):
    c11, c12, c22 = _args(c11, c12, c22)
    return 2/(np.pi*np.sqrt(c11*c22 + c11 - c12**2 + c22 + 1))


KERNELS = {
    "relu": (pair_relu, pair_grad_relu, pair_hess_relu, self_relu, self_grad_relu, self_hess_relu),
    "erf": (pair_erf, pair_grad_erf, pair_hess_erf, self_erf, self_grad_erf, self_hess_erf),
    "linear": (pair_linear, pair_grad_linear, pair_hess_linear, self_linear, self_grad_linear, self_hess_linear),
}

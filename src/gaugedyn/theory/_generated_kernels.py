"""Gaussian pair kernels F(q1, q2, c) = E[g(x1) g(x2)], (x1, x2) ~ N(0, [[q1, c], [c, q2]]).

First hand-written version; ``gaugedyn derive`` regenerates this file from the symbolic module.
"""

import numpy as np

_PI = np.pi


def _relu_parts(q1, q2, c):
    det = np.maximum(q1 * q2 - c * c, 0.0)
    r = np.clip(c / np.sqrt(q1 * q2), -1.0, 1.0)
    return det, r


def pair_relu(q1, q2, c):
    det, r = _relu_parts(q1, q2, c)
    return (np.sqrt(det) + (_PI - np.arccos(r)) * c) / (2 * _PI)


def pair_grad_relu(q1, q2, c):
    det, r = _relu_parts(q1, q2, c)
    s = np.sqrt(det)
    return s / (4 * _PI * q1), s / (4 * _PI * q2), (_PI - np.arccos(r)) / (2 * _PI)


def pair_hess_relu(q1, q2, c):
    det, r = _relu_parts(q1, q2, c)
    s = np.sqrt(det)
    with np.errstate(divide="ignore"):
        inv = 1.0 / s
    q1q1 = q2 * inv / (8 * _PI * q1) - s / (4 * _PI * q1**2)
    q1q2 = inv / (8 * _PI)
    q1c = -c * inv / (4 * _PI * q1)
    q2q2 = q1 * inv / (8 * _PI * q2) - s / (4 * _PI * q2**2)
    q2c = -c * inv / (4 * _PI * q2)
    cc = inv / (2 * _PI)
    return q1q1, q1q2, q1c, q2q2, q2c, cc


def self_relu(q):
    return 0.5 * q


def self_grad_relu(q):
    return 0.5 * np.ones_like(q)


def self_hess_relu(q):
    return np.zeros_like(q)


def pair_erf(q1, q2, c):
    return (2 / _PI) * np.arcsin(c / np.sqrt((1 + q1) * (1 + q2)))


def pair_grad_erf(q1, q2, c):
    root = np.sqrt((1 + q1) * (1 + q2) - c * c)
    return -c / (_PI * (1 + q1) * root), -c / (_PI * (1 + q2) * root), (2 / _PI) / root


def pair_hess_erf(q1, q2, c):
    p1, p2 = 1 + q1, 1 + q2
    d = p1 * p2 - c * c
    root = np.sqrt(d)
    q1q1 = c / (_PI * p1**2 * root) + c * p2 / (2 * _PI * p1 * d * root)
    q1q2 = c / (2 * _PI * d * root)
    q1c = -1 / (_PI * p1 * root) - c * c / (_PI * p1 * d * root)
    q2q2 = c / (_PI * p2**2 * root) + c * p1 / (2 * _PI * p2 * d * root)
    q2c = -1 / (_PI * p2 * root) - c * c / (_PI * p2 * d * root)
    cc = (2 / _PI) * c / (d * root)
    return q1q1, q1q2, q1c, q2q2, q2c, cc


def self_erf(q):
    return (2 / _PI) * np.arcsin(q / (1 + q))


def self_grad_erf(q):
    return (2 / _PI) / ((1 + q) * np.sqrt(1 + 2 * q))


def self_hess_erf(q):
    return -(2 / _PI) * (3 * q + 2) / ((1 + q) ** 2 * (1 + 2 * q) ** 1.5)


def pair_linear(q1, q2, c):
    return c + 0.0 * (q1 + q2)


def pair_grad_linear(q1, q2, c):
    z = 0.0 * (q1 + q2 + c)
    return z, z, z + 1.0


def pair_hess_linear(q1, q2, c):
    z = 0.0 * (q1 + q2 + c)
    return z, z, z, z, z, z


def self_linear(q):
    return q + 0.0


def self_grad_linear(q):
    return np.ones_like(q)


def self_hess_linear(q):
    return np.zeros_like(q)


KERNELS = {
    "relu": (pair_relu, pair_grad_relu, pair_hess_relu, self_relu, self_grad_relu, self_hess_relu),
    "erf": (pair_erf, pair_grad_erf, pair_hess_erf, self_erf, self_grad_erf, self_hess_erf),
    "linear": (
        pair_linear,
        pair_grad_linear,
        pair_hess_linear,
        self_linear,
        self_grad_linear,
        self_hess_linear,
    ),
}

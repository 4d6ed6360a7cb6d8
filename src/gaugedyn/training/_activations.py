"""Activations ``g`` and their derivatives ``g'`` in torch, by name.

``relu(z) = max(z, 0)``; ``erf(z) = erf(z / sqrt 2)`` (Saad & Solla's normalisation, so that
``E[g(u.x) g(v.x)] = (2/pi) arcsin(C_uv / sqrt((1 + C_uu)(1 + C_vv)))`` as in the theory kernels);
``linear(z) = z``. Every operation is elementwise and exactly reproducible slice by slice.
"""

from __future__ import annotations

import math

import torch

from .._errors import InputError

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _relu(z):
    return torch.relu(z)


def _relu_prime(z):
    return (z > 0).to(z.dtype)


def _erf(z):
    return torch.erf(z * _INV_SQRT2)


def _erf_prime(z):
    return _SQRT_2_OVER_PI * torch.exp(-0.5 * (z * z))


def _linear(z):
    return z


def _linear_prime(z):
    return torch.ones_like(z)


ACTIVATIONS = {
    "relu": (_relu, _relu_prime),
    "erf": (_erf, _erf_prime),
    "linear": (_linear, _linear_prime),
}


def activation(name: str):
    """``(g, g')`` for an activation name."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise InputError(
            f"unknown activation {name!r}; allowed: {', '.join(ACTIVATIONS)}"
        ) from None

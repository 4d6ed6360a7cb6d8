"""Activations ``g`` and their derivatives ``g'`` in torch, read from the one
`gaugedyn.theory.Activation` of each name (``gaugedyn.theory.ACTIVATIONS``).

``relu(z) = max(z, 0)``; ``erf(z) = erf(z / sqrt 2)`` (Saad & Solla's normalisation, so that
``E[g(u.x) g(v.x)] = (2/pi) arcsin(C_uv / sqrt((1 + C_uu)(1 + C_vv)))`` as in the theory kernels);
``linear(z) = z``; the rest as listed by ``gaugedyn.theory.ACTIVATIONS``. Every built-in operation
is elementwise and exactly reproducible slice by slice.
"""

from __future__ import annotations

from ..theory import ACTIVATIONS as ACTIVATIONS
from ..theory import Activation, activation_of


def activation(name: str | Activation):
    """``(g, g')`` for an activation name or object."""
    act = activation_of(name)
    return act.function, act.derivative

"""What the compiled online-SGD kernels take besides the arrays: the codes of activations and
schedules, the bit generator of the input draws and the classical options (shared by the
kernels of ``_online_fast`` and the order-parameter chain of ``_online_chain``)."""

from __future__ import annotations

import numpy as np

from .._errors import InputError
from ..theory import ACTIVATIONS, activation_of

ACTIVATION_CODES = {name: act.code for name, act in ACTIVATIONS.items() if act.code is not None}
"""The compiled kernels' code of each built-in activation (``Activation.code``)."""


def activation_code(activation) -> int:
    """The compiled code of an activation name or object; an activation without one (a user's
    torch function) is an `InputError` that points to ``backend="torch"``."""
    act = activation_of(activation)
    if act.code is None:
        raise InputError(
            f"activation {act.name!r} has no compiled kernel; compiled: "
            f"{', '.join(ACTIVATION_CODES)}; use backend='torch' for online SGD"
        )
    return int(act.code)


SCHEDULE_CODES = {"constant": 0, "cosine": 1, "inverse": 2}
BIT_GENERATOR = np.random.SFC64
"""The bit generator of every seed's input draws (module docstring)."""


def options(config) -> tuple[float, float, float]:
    """``(weight_decay, lr2, label_noise)`` of ``config``, as the kernels take them."""
    return float(config.weight_decay), float(config.lr2), float(config.label_noise)


def given_noise(noise, given: bool, config) -> np.ndarray:
    """The label noises ``(steps, batch)`` a kernel reads when its samples are given (an empty
    array when they are drawn, or when there is no label noise)."""
    if not given or not config.label_noise:
        return np.empty((0, 1))
    if noise is None:
        raise ValueError("label noise with given samples needs the noises (noise)")
    return np.ascontiguousarray(noise, dtype=np.float64)

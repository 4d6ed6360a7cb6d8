"""Step-size schedules and the batched update rules (pure functions of state and gradient).

Schedules (``k`` the 0-based step, ``N`` the number of steps, ``eta`` the base step):

- ``constant``: ``eta_k = eta``;
- ``cosine``: ``eta_k = eta_min + (eta - eta_min) (1 + cos(pi k / N)) / 2``;
- ``inverse``: ``eta_k = eta / (1 + k / decay)``.

Updates, each elementwise with separately rounded operations (so a seed's arithmetic does not
depend on how many seeds share the tensors):

- SGD / GD: ``theta <- theta - eta_k g``;
- Adam (as ``torch.optim.Adam``, ``eps`` outside the root, no weight decay):
  ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``,
  ``theta <- theta - eta_k (m / (1 - b1^k)) / (sqrt(v / (1 - b2^k)) + eps)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .._errors import InputError

SCHEDULES = ("constant", "cosine", "inverse")
OPTIMIZERS = ("gd", "sgd", "adam")


def step_size(schedule: str, lr: float, k: int, steps: int, lr_min: float = 0.0,
              decay: float = 1000.0) -> float:
    """``eta_k`` of a named schedule (see module docstring)."""
    if schedule == "constant":
        return lr
    if schedule == "cosine":
        return lr_min + (lr - lr_min) * 0.5 * (1.0 + math.cos(math.pi * k / max(steps, 1)))
    if schedule == "inverse":
        return lr / (1.0 + k / decay)
    raise InputError(f"unknown schedule {schedule!r}; allowed: {', '.join(SCHEDULES)}")


def sgd_update(params, grads, lr: float):
    return tuple(p - lr * g for p, g in zip(params, grads))


class AdamState(NamedTuple):
    """Adam's state after ``k`` steps: first and second moments ``m``, ``v``, one tensor per
    parameter (a snapshot of the references, read-only)."""

    m: tuple
    v: tuple
    k: int


def adam_state(params):
    return {"m": [p * 0 for p in params], "v": [p * 0 for p in params], "k": 0}


def adam_view(state) -> AdamState:
    """The :class:`AdamState` of the mutable state that :func:`adam_update` advances."""
    return AdamState(m=tuple(state["m"]), v=tuple(state["v"]), k=int(state["k"]))


def adam_update(params, grads, state, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """One Adam step on a tuple of tensors; returns the new parameters (``state`` is updated)."""
    b1, b2 = betas
    state["k"] += 1
    k = state["k"]
    c1, c2 = 1.0 - b1**k, 1.0 - b2**k
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        m = b1 * state["m"][i] + (1.0 - b1) * g
        v = b2 * state["v"][i] + (1.0 - b2) * (g * g)
        state["m"][i], state["v"][i] = m, v
        out.append(p - lr * (m / c1) / (
            (v / c2).sqrt() + eps))
    return tuple(out)

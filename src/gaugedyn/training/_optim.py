r"""Step-size schedules and the batched update rules (pure functions of state and gradient).

Schedules (``k`` the 0-based step, ``N`` the number of steps, ``eta`` the base step):

- ``constant``: $\eta_k = \eta$;
- ``cosine``: $\eta_k = \eta_{min} + (\eta - \eta_{min}) (1 + \cos(\pi k / N)) / 2$;
- ``inverse``: $\eta_k = \eta / (1 + k / \mathit{decay})$.

Updates, each elementwise with separately rounded operations (so a seed's arithmetic does not
depend on how many seeds share the tensors):

- SGD / GD: $\theta \leftarrow \theta - \eta_k g$;
- Adam (as ``torch.optim.Adam``, ``eps`` outside the root, no weight decay):
  ``m <- b1 m + (1 - b1) g``, $v \leftarrow \beta_2 v + (1 - \beta_2) g^2$,
  $\theta \leftarrow \theta - \eta_k (m / (1 - \beta_1^k)) / (\sqrt{v / (1 - \beta_2^k)} + \epsilon)$.

Adam's factors may differ per copy (axis 0 of every tensor): each copy's ``b1``, ``1 - b1``,
$1 - \beta_1^k$ (and the same for ``b2``) is computed in Python double exactly as the one-pair path
computes its scalars, then enters the elementwise update as a column, so a copy's arithmetic is the
one-pair run's operation for operation (the same bits; checked by the tests in float64 and
float32). The update is the library's batched Adam, `gaugedyn.adam.batched_adam_step()`,
in its ``"textbook"`` operation order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from .._errors import InputError

SCHEDULES = ("constant", "cosine", "inverse")
OPTIMIZERS = ("gd", "sgd", "adam")


def step_size(
    schedule: str, lr: float, k: int, steps: int, lr_min: float = 0.0, decay: float = 1000.0
) -> float:
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
    """The `AdamState` of the mutable state that `adam_update()` advances."""
    return AdamState(m=tuple(state["m"]), v=tuple(state["v"]), k=int(state["k"]))


def adam_update(params, grads, state, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """One Adam step on a tuple of tensors; returns the new parameters (``state`` is updated).

    ``betas``: ``(b1, b2)``, or a sequence of such pairs, one per copy (axis 0 of every tensor;
    see the module docstring). The step is `gaugedyn.adam.batched_adam_step()` in its
    ``"textbook"`` operation order, on new tensors (the previous ones stay as they were)."""
    from ..adam import adam_factors, batched_adam_step

    state["k"] += 1
    if "factors" in state:  # the constants once; the step's bias corrections and lr anew
        factors = state["factors"].next(lr)
    else:
        if isinstance(betas[0], Sequence):
            betas = (tuple(float(p[0]) for p in betas), tuple(float(p[1]) for p in betas))
        factors = adam_factors(state["k"], lr=lr, betas=betas, op_order="textbook", like=params[0])
    state["factors"] = factors
    step = batched_adam_step(params, grads, state["m"], state["v"], factors, eps=eps, inplace=False)
    state["m"], state["v"] = list(step.exp_avgs), list(step.exp_avg_sqs)
    return tuple(step.params)

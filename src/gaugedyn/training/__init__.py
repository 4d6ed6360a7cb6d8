"""Finite-sample training matched to the theory: batched torch networks with explicit ``(a, W)``.

Public names load lazily, so ``import gaugedyn.training`` does not import torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Network": "._network",
    "TrainConfig": "._trainer",
    "train": "._trainer",
    "StepRecord": "._trainer",
    "AdamState": "._optim",
    "TrainResult": "._result",
    "crossing_time": "._result",
    "OnlineODE": "._online_ode",
    "online_ode": "._online_ode",
    "noise_term": "._online_ode",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

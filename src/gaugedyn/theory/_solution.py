"""Results of the population theory: trajectories in order parameters, observables, events and
diagnostics, for one trajectory (`Solution`) or a batch (`BatchSolution`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._json import nulled
from ._observables import Definitions


@dataclass
class _Trajectories:
    """The fields a single trajectory and a batch of them share (see `Solution`)."""

    t: np.ndarray
    a: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    observables: dict
    specialization_time: np.ndarray
    pruning_time: np.ndarray
    owner: np.ndarray


@dataclass
class Solution(_Trajectories):
    """One trajectory of the population dynamics.

    ``t (T,)``; ``a (T, K)``, ``Q (T, K, K)``, ``R (T, K, M)`` whatever the formulation (``W
    (T, K, D)`` too if the weights were kept); ``observables``: ``loss (T,)``, ``rho`` (T, K),
    ``alignment (T, K, M)``, ``delta`` (T, K), ``reaction (T, K)``, ``transport (T, K)``, ``owner``
    and ``pruned`` over time; ``specialization_time (M,)`` and ``pruning_time (K,)`` (NaN: never,
    within ``[0, t_final]``); ``owner (M,)`` at the final time; ``delta_drift`` the largest drift of
    the gauge over the output times; ``diagnostics`` the integrator's counters and settings.
    """

    delta_drift: float
    diagnostics: dict
    definitions: Definitions
    problem: dict
    W: np.ndarray | None = None
    settings: dict = field(default_factory=dict)

    def final(self) -> dict:
        """Observables at the last output time."""
        return {k: v[-1] for k, v in self.observables.items()}

    def to_dict(self) -> dict:
        """JSON-ready summary: events, final observables, definitions, settings, diagnostics;
        strict JSON, a value that is not a finite number (a time not reached) ``null``, with
        `NULL` beside it."""
        fin = self.final()
        return nulled_report(
            {
                "specialization_time": self.specialization_time,
                "pruning_time": self.pruning_time,
                "owner": self.owner,
                "t_final": self.t[-1],
                "rho": fin["rho"],
                "alignment": fin["alignment"],
                "loss": np.maximum(fin["loss"], 0.0),  # L >= 0; the closed form's round-off is not
                "delta": fin["delta"],
                "delta_drift": self.delta_drift,
                "pruned": fin["pruned"],
                "definitions": self.definitions.describe(),
                "problem": self.problem,
                "settings": self.settings,
                "diagnostics": self.diagnostics,
            }
        )


@dataclass
class BatchSolution(_Trajectories):
    """Many trajectories on shared output times: every field of `Solution` with a leading
    batch axis (NaN after a trajectory stopped), per-trajectory ``diagnostics`` (a list) and the
    batch's ``wall_time``. ``errors[i]`` is the `DivergenceError` of a
    trajectory that stopped being finite (``None`` for the others, which ran on unaffected);
    a failed trajectory keeps its outputs up to the failure, NaN after it."""

    delta_drift: np.ndarray
    diagnostics: list
    definitions: Definitions
    problems: list
    wall_time: float = 0.0
    settings: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)

    @property
    def failed(self) -> np.ndarray:
        """``(B,)``: which trajectories diverged (their messages are in ``diagnostics``)."""
        return np.array([e is not None for e in self.errors] or [False] * len(self), dtype=bool)

    def raise_failures(self) -> None:
        """Raise the first trajectory's `DivergenceError`, if any failed."""
        for err in self.errors:
            if err is not None:
                raise err

    def __len__(self) -> int:
        return self.a.shape[0]

    def __getitem__(self, i: int) -> Solution:
        keep = np.isfinite(self.a[i, :, 0])
        return Solution(
            t=self.t[keep],
            a=self.a[i, keep],
            Q=self.Q[i, keep],
            R=self.R[i, keep],
            observables={k: v[i, keep] for k, v in self.observables.items()},
            specialization_time=self.specialization_time[i],
            pruning_time=self.pruning_time[i],
            owner=self.owner[i],
            delta_drift=float(self.delta_drift[i]),
            diagnostics=self.diagnostics[i],
            definitions=self.definitions,
            problem=self.problems[i],
            settings=self.settings,
        )

    def to_dict(self) -> dict:
        """JSON-ready summary of every trajectory (strict JSON, as `Solution.to_dict()`)."""
        return nulled_report(
            {
                "trajectories": [self[i].to_dict() for i in range(len(self))],
                "failed": self.failed,
                "wall_time": self.wall_time,
                "definitions": self.definitions.describe(),
            }
        )


NULL = (
    "null: a value that is not a finite number: a time not reached before t_max "
    "(specialization_time, pruning_time), or an observable of a trajectory that stopped"
)
"""What ``null`` means in `Solution.to_dict()`."""


def nulled_report(x: dict) -> dict:
    out, nulls = nulled(x)
    if nulls:
        out["null"] = NULL
    return out

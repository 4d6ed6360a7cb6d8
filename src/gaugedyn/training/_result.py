r"""Training results: order parameters on the record grid and the observables computed from them.

All observables go through `gaugedyn.theory`'s definitions, applied to the order parameters
$Q = W W^\top$, $R = W V^\top$ of the trained weights (obtained with
`gaugedyn.theory.order_parameters()`), so theory and simulation differ only in dynamics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np

from .. import theory
from .._errors import InputError
from ..theory import Activation, Definitions


def crossing_time(times: np.ndarray, values: np.ndarray, threshold: float) -> np.ndarray:
    r"""First time a recorded curve reaches ``threshold``, by linear interpolation.

    With $j$ the first record where $v_j \ge \theta$, the time is
    $t_{j-1} + (\theta - v_{j-1})\,(t_j - t_{j-1}) / (v_j - v_{j-1})$ ($t_0$ if $j = 0$;
    ``nan`` if the threshold is never reached).

    Parameters
    ----------
    times : numpy.ndarray
        The record times ``(T,)``: finite, non-decreasing, at least one.
    values : numpy.ndarray
        The curves ``(..., T)``, one value per time on the last axis.
    threshold : float
        The level $\theta$, a finite number.

    Returns
    -------
    numpy.ndarray
        The crossing times, of shape ``values.shape[:-1]``.

    Raises
    ------
    InputError
        When ``times`` or ``values`` is not numeric, ``times`` is not a non-empty finite
        non-decreasing 1-D array, ``values``' last axis does not match it, or ``threshold`` is not
        a finite number.
    """
    try:
        values = np.asarray(values, dtype=np.float64)
        times = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("times and values must be arrays of numbers") from None
    if times.ndim != 1 or times.size == 0:
        raise InputError(
            f"times (shape {times.shape}) is not allowed; allowed: a non-empty 1-D array"
        )
    if values.ndim == 0 or values.shape[-1] != times.size:
        raise InputError(
            f"values (shape {values.shape}) is not allowed; allowed: shape "
            f"(..., {times.size}), one value per time"
        )
    if not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0):
        raise InputError("times is not allowed; allowed: finite, non-decreasing times")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float | np.floating)
        or not np.isfinite(threshold)
    ):
        raise InputError(f"threshold={threshold!r} is not allowed; allowed: a finite number")
    hit = values >= threshold
    any_hit = hit.any(axis=-1)
    j = np.argmax(hit, axis=-1)
    jm = np.maximum(j - 1, 0)
    v1 = np.take_along_axis(values, j[..., None], -1)[..., 0]
    v0 = np.take_along_axis(values, jm[..., None], -1)[..., 0]
    t1, t0 = times[j], times[jm]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(v1 > v0, (threshold - v0) / (v1 - v0), 1.0)
    out = np.where(j == 0, t1, t0 + np.clip(frac, 0.0, 1.0) * (t1 - t0))
    return np.where(any_hit, out, np.nan)


@dataclass
class TrainResult:
    """Recorded training trajectories of ``S`` seeds.

    Arrays: ``steps (T,)``, ``time (T,)`` (theory units), ``flow_time (T,)`` (sum of the step
    sizes applied to the mean gradient), ``lr (T,)`` (schedule at the record), ``a (S, T, K)``,
    ``Q (S, T, K, K)``, ``R (S, T, K, M)``, teacher ``b (M,)``, ``T (M, M)``, ``loss (S, T)`` (the
    population loss in closed form) and ``loss_empirical (S, T)`` (the training-set loss; for
    online training the mean per-sample loss of the steps since the previous record).
    ``root_seed``: the run's root seed, or one per seed when the run was given one per seed.
    """

    steps: np.ndarray
    time: np.ndarray
    flow_time: np.ndarray
    lr: np.ndarray
    a: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    b: np.ndarray
    T: np.ndarray
    loss: np.ndarray
    loss_empirical: np.ndarray
    activation: str | Activation
    seeds: list
    root_seed: int | list[int]
    settings: dict = field(default_factory=dict)
    definitions: Definitions = field(default_factory=Definitions)
    diagnostics: dict = field(default_factory=dict)
    teacher_activation: str | Activation | None = None
    """The teacher's activation when it differs from the student's (``None``: the same)."""

    def alignment(self):
        """``m_in (S, T, K, M)``."""
        return theory.alignment(self.Q, self.R, self.T)

    def rho(self):
        return theory.rho(self.a, self.Q)

    def delta(self):
        return theory.delta(self.a, self.Q)

    def owner(self):
        """``(S, T, M)`` index of the owning student of each teacher feature."""
        return theory.owner(self.a, self.Q, self.R, self.T, self.b)

    def pruned(self):
        return theory.pruned(self.a, self.Q, self.definitions)

    def delta_drift(self):
        r"""``(S, T)``: $\max_i |\delta_i(t) - \delta_i(0)| / \bigl(a_i(0)^2 + |w_i(0)|^2\bigr)$."""
        return theory.delta_drift(self.a, self.Q, self.a[:, :1], self.Q[:, :1])

    def dissipation(self):
        return theory.dissipation(
            self.a, self.Q, self.R, self.b, self.T, self.activation, self.teacher_activation
        )

    def classification_error(self, samples: int = theory.CLASSIFICATION_SAMPLES, rng=None):
        """``(error (S, T), se (S, T))``: the classification error ``P(sign f != sign f*)`` of
        every record, beside the mean-squared ``loss``
        (`gaugedyn.theory.classification_error()`, common random numbers from ``rng``)."""
        return theory.classification_error(
            self.a,
            self.Q,
            self.R,
            self.b,
            self.T,
            self.activation,
            self.teacher_activation,
            samples=samples,
            rng=rng,
        )

    def specialization_time(self, threshold: float | None = None) -> np.ndarray:
        r"""``(S, M)``: first ``t`` with specialization $s_n \ge \mathit{threshold}$
        (`gaugedyn.theory.specialization()`, sign-invariant for odd activations;
        `crossing_time()`)."""
        thr = self.definitions.threshold if threshold is None else threshold
        # passed as given, as before (theory.specialization is annotated for a name only)
        best = theory.specialization(self.Q, self.R, self.T, cast(str, self.activation))
        return crossing_time(self.time, np.moveaxis(best, 1, -1), thr)

    def pruning_time(self) -> np.ndarray:
        """``(S, K)``: first ``t`` with ``|rho_i| < prune_tol`` (``nan`` if never)."""
        small = -np.abs(self.rho())
        return crossing_time(self.time, np.moveaxis(small, 1, -1), -self.definitions.prune_tol)

    def final(self) -> dict:
        """Observables at the last record, per seed."""
        return {
            "loss": self.loss[:, -1],
            "loss_empirical": self.loss_empirical[:, -1],
            "rho": self.rho()[:, -1],
            "alignment": self.alignment()[:, -1],
            "delta": self.delta()[:, -1],
            "owner": self.owner()[:, -1],
            "pruned": self.pruned()[:, -1],
            "delta_drift": self.delta_drift()[:, -1],
        }

    def arrays(self) -> dict:
        """The stored arrays (everything else derives from them)."""
        return {
            k: getattr(self, k)
            for k in (
                "steps",
                "time",
                "flow_time",
                "lr",
                "a",
                "Q",
                "R",
                "b",
                "T",
                "loss",
                "loss_empirical",
            )
        }

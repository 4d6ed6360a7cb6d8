"""Population trajectories of the gauge experiments as plain arrays.

Trajectories come from the population engine (`gaugedyn.theory.solve()` and
`gaugedyn.theory.solve_batch()`, order-parameter formulation) with its observables, so the
experiments never define an observable themselves. The pruning time stored here means "pruned
from then on" (`gaugedyn.theory.pruned_since()`), not a transient zero crossing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...theory import Definitions, Problem, pruning_time
from ...theory import mobilities as theory_mobilities

GAUGES = ("w-heavy", "a-heavy")
"""The two gauges of the ``single`` set-up compared at the same initial function."""

GAUGE_STYLES = (("w_heavy", "w-heavy", "C0"), ("a_heavy", "a-heavy", "C1"))
"""Per gauge: the key suffix of its stored arrays, its label and its colour in figures."""

TRAJECTORY_KEYS = ("t", "a", "Q", "R", "loss", "rho", "alignment", "reaction", "transport", "delta")

_DEFAULT = Definitions()


def time_grid(t_max: float, n: int, t_min: float | None = None) -> np.ndarray:
    """``0`` followed by ``n`` log-spaced times from ``t_min`` (default ``1e-7 t_max``) to ``t_max``."""
    t_min = 1e-7 * t_max if t_min is None else t_min
    return np.concatenate([[0.0], np.logspace(np.log10(t_min), np.log10(t_max), n)])


def as_arrays(sol, definitions: Definitions = _DEFAULT) -> dict:
    """A `gaugedyn.theory.Solution` as plain arrays.

    Keys: `TRAJECTORY_KEYS` (time axis first), ``specialization_time`` (the earliest over
    teacher features; ``nan`` if one never specializes), ``pruning_time (K,)`` (pruned from then
    on; ``nan``: not pruned at the end), ``owner (M,)`` at the last time and ``diagnostics``.
    """
    obs = sol.observables
    spec = np.atleast_1d(np.asarray(sol.specialization_time, dtype=float))
    rho = np.asarray(obs["rho"])
    return {
        "t": np.asarray(sol.t, dtype=float),
        "a": sol.a,
        "Q": sol.Q,
        "R": sol.R,
        **{k: np.asarray(obs[k]) for k in TRAJECTORY_KEYS[4:]},
        "specialization_time": float(np.min(spec)) if np.all(np.isfinite(spec)) else math.nan,
        "pruning_time": pruning_time(sol.t, rho, definitions.prune_tol, sol.pruning_time),
        "owner": np.asarray(sol.owner),
        "diagnostics": dict(sol.diagnostics or {}),
    }


def trajectory(
    problem: Problem,
    t_eval: np.ndarray,
    *,
    dynamics: str = "flow",
    eta: float | None = None,
    definitions: Definitions = _DEFAULT,
    stop_at_specialization: bool = False,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> dict:
    """One population trajectory (order-parameter formulation) as plain arrays (`as_arrays()`)."""
    from ...theory import solve

    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve(
        problem,
        formulation="order-parameters",
        dynamics=dynamics,
        eta=eta,
        t_max=float(t_eval[-1]),
        rtol=rtol,
        atol=atol,
        definitions=definitions,
        t_eval=t_eval,
        stop_at_specialization=stop_at_specialization,
    )
    return as_arrays(sol, definitions)


def trajectories(
    problems: Sequence[Problem],
    t_eval: np.ndarray,
    *,
    definitions: Definitions = _DEFAULT,
    rtol: float = 1e-8,
    atol: float = 1e-11,
    failed_as_none: bool = False,
) -> list:
    """Many flow trajectories through the batched integrator (`gaugedyn.theory.solve_batch()`).

    A trajectory that diverges raises its `DivergenceError`, or with
    ``failed_as_none`` comes back as ``None`` (the others are unaffected either way).
    """
    from ...theory import solve_batch

    batch = solve_batch(
        list(problems),
        formulation="order-parameters",
        t_max=float(t_eval[-1]),
        t_eval=np.asarray(t_eval, dtype=float),
        rtol=rtol,
        atol=atol,
        definitions=definitions,
    )
    if not failed_as_none:
        batch.raise_failures()
    return [
        None if batch.failed[i] else as_arrays(batch[i], definitions) for i in range(len(batch))
    ]


def trajectories_or_none(problems: Sequence[Problem], t_eval: np.ndarray, **kwargs) -> list:
    """`trajectories()`, with ``None`` in place of each trajectory that diverges.

    A `DivergenceError` (e.g. a perturbation that sends ``|w_i|`` to zero) is
    marked on its own trajectory by the batched solver; the others run on exactly as alone.
    Floating-point warnings are silenced here because the engine's finiteness check reports them.
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return trajectories(problems, t_eval, failed_as_none=True, **kwargs)


def mobilities(a: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reaction and transport mobilities ``mu_R = a^2 + |w|^2``, ``mu_T = 1/|w|^2``."""
    return theory_mobilities(a**2, np.diagonal(Q, axis1=-2, axis2=-1))


def diagnostics(traj: dict, prefix: str = "diag_") -> dict:
    """The numeric diagnostics of a trajectory as flat scalars (storable with the results)."""
    out = {}
    for key, value in (traj.get("diagnostics") or {}).items():
        if isinstance(value, bool | int | float | np.integer | np.floating):
            out[prefix + key] = float(value)
    return out


def wall_times(results: Sequence[dict]) -> np.ndarray:
    """Each task's ``wall_time_s`` (``nan`` where a result lacks it)."""
    return np.array([float(r.get("wall_time_s", np.nan)) for r in results])

"""Shared pieces of the gauge experiments: configuration keys, trajectories as plain arrays, fits,
path distances, figures.

Trajectories come from the population engine (:func:`gaugedyn.theory.solve` and
:func:`gaugedyn.theory.solve_batch`, order-parameter formulation) with its observables, so the
experiments never define an observable themselves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..theory import Definitions, Problem, population_loss
from ._protocol import Param

GAUGES = ("w-heavy", "a-heavy")
"""The two gauges of the ``single`` set-up compared at the same initial function."""

GAUGE_STYLES = (("w_heavy", "w-heavy", "C0"), ("a_heavy", "a-heavy", "C1"))
"""Per gauge: the key suffix of its stored arrays, its label and its colour in figures."""

TEACHER_NORM = math.sqrt(0.5)
"""``||relu(v.x)||_{L2(N(0, I))}`` of the teacher (``|v| = 1``, ``b = 1``)."""

TRAJECTORY_KEYS = ("t", "a", "Q", "R", "loss", "rho", "alignment", "reaction", "transport", "delta")


def time_grid(t_max: float, n: int, t_min: float | None = None) -> np.ndarray:
    """``0`` followed by ``n`` log-spaced times from ``t_min`` (default ``1e-7 t_max``) to ``t_max``."""
    t_min = 1e-7 * t_max if t_min is None else t_min
    return np.concatenate([[0.0], np.logspace(np.log10(t_min), np.log10(t_max), n)])


# --- trajectories from the engine ----------------------------------------------------------

_DEFAULT = Definitions()


def as_arrays(sol) -> dict:
    """A :class:`gaugedyn.theory.Solution` as plain arrays.

    Keys: :data:`TRAJECTORY_KEYS` (time axis first), ``specialization_time`` (the earliest over
    teacher features; ``nan`` if one never specializes), ``pruning_time (K,)`` (``nan``: never),
    ``owner (M,)`` at the last time and ``diagnostics``.
    """
    obs = sol.observables
    spec = np.atleast_1d(np.asarray(sol.specialization_time, dtype=float))
    return {"t": np.asarray(sol.t, dtype=float), "a": sol.a, "Q": sol.Q, "R": sol.R,
            **{k: np.asarray(obs[k]) for k in TRAJECTORY_KEYS[4:]},
            "specialization_time": float(np.min(spec)) if np.all(np.isfinite(spec)) else math.nan,
            "pruning_time": np.asarray(sol.pruning_time, dtype=float),
            "owner": np.asarray(sol.owner), "diagnostics": dict(sol.diagnostics or {})}


def trajectory(problem: Problem, t_eval: np.ndarray, *, dynamics: str = "flow",
               eta: float | None = None, definitions: Definitions = _DEFAULT,
               stop_at_specialization: bool = False, rtol: float = 1e-9,
               atol: float = 1e-12) -> dict:
    """One population trajectory (order-parameter formulation) as plain arrays (:func:`as_arrays`)."""
    from ..theory import solve

    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve(problem, formulation="order-parameters", dynamics=dynamics, eta=eta,
                t_max=float(t_eval[-1]), rtol=rtol, atol=atol, definitions=definitions,
                t_eval=t_eval, stop_at_specialization=stop_at_specialization)
    return as_arrays(sol)


def trajectories(problems: Sequence[Problem], t_eval: np.ndarray, *,
                 definitions: Definitions = _DEFAULT, rtol: float = 1e-8,
                 atol: float = 1e-11, failed_as_none: bool = False) -> list:
    """Many flow trajectories through the batched integrator (:func:`gaugedyn.theory.solve_batch`).

    A trajectory that diverges raises its :class:`~gaugedyn.DivergenceError`, or with
    ``failed_as_none`` comes back as ``None`` (the others are unaffected either way).
    """
    from ..theory import solve_batch

    batch = solve_batch(list(problems), formulation="order-parameters",
                        t_max=float(t_eval[-1]), t_eval=np.asarray(t_eval, dtype=float),
                        rtol=rtol, atol=atol, definitions=definitions)
    if not failed_as_none:
        batch.raise_failures()
    return [None if batch.failed[i] else as_arrays(batch[i]) for i in range(len(batch))]


def trajectories_or_none(problems: Sequence[Problem], t_eval: np.ndarray, **kwargs) -> list:
    """:func:`trajectories`, with ``None`` in place of each trajectory that diverges.

    A :class:`~gaugedyn.DivergenceError` (e.g. a perturbation that sends ``|w_i|`` to zero) is
    marked on its own trajectory by the batched solver; the others run on exactly as alone.
    Floating-point warnings are silenced here because the engine's finiteness check reports them.
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return trajectories(problems, t_eval, failed_as_none=True, **kwargs)


# --- derived quantities ---------------------------------------------------------------------


def mobilities(a: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reaction and transport mobilities ``mu_R = a^2 + |w|^2``, ``mu_T = 1/|w|^2``."""
    w2 = np.diagonal(Q, axis1=-2, axis2=-1)
    return a**2 + w2, 1.0 / w2


def function_norm(a: np.ndarray, Q: np.ndarray, activation: str = "relu") -> float:
    """``||sum_i a_i g(w_i.x)||_{L2(N(0, I))}`` of the students given (no teacher)."""
    K = a.shape[-1]
    zero_b, T = np.zeros(1), np.ones((1, 1))
    R = np.zeros((K, 1))
    return float(np.sqrt(2.0 * max(population_loss(a, Q, R, zero_b, T, activation), 0.0)))


def remaining_contribution(a: np.ndarray, Q: np.ndarray, owner: int) -> float:
    """``||sum_{i != owner} a_i relu(w_i.x)|| / ||f*||`` at one time (``a (K,)``, ``Q (K, K)``)."""
    others = np.arange(a.shape[-1]) != owner
    return function_norm(a[others], Q[np.ix_(others, others)]) / TEACHER_NORM


def integrate_log(t: np.ndarray, f: np.ndarray) -> float:
    """``int_0^{t_end} f dt`` on a grid ``0, t_1 < ... (log-spaced)``: Simpson in ``log t``.

    The piece ``[0, t_1]`` is taken by the trapezoid rule (it is ``O(t_1)``).
    """
    from scipy.integrate import simpson

    t, f = np.asarray(t, dtype=float), np.asarray(f, dtype=float)
    head = 0.5 * (f[0] + f[1]) * (t[1] - t[0]) if t[0] == 0.0 else 0.0
    tt, ff = (t[1:], f[1:]) if t[0] == 0.0 else (t, f)
    return float(head + simpson(ff * tt, x=np.log(tt)))


def cumulative(t: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Running trapezoid integral of ``f`` over ``t`` (for figures)."""
    steps = 0.5 * (f[1:] + f[:-1]) * np.diff(t)
    return np.concatenate([[0.0], np.cumsum(steps)])


def loglog_fit(x, y, level: float = 0.95) -> dict:
    """Least-squares fit ``log y = intercept + slope log x`` with a ``level`` confidence interval.

    The interval is ``slope +- t_{n-2} se(slope)`` (Student t with ``n - 2`` degrees of freedom);
    it needs at least three points (with two the interval is infinite).
    """
    from scipy import stats

    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    n = lx.size
    if n < 2 or not (np.all(np.isfinite(lx)) and np.all(np.isfinite(ly))):
        return {"slope": math.nan, "intercept": math.nan, "se": math.nan,
                "ci": [math.nan, math.nan], "n": int(n)}
    A = np.stack([np.ones(n), lx], axis=1)
    coef, *_ = np.linalg.lstsq(A, ly, rcond=None)
    if n > 2:
        resid = ly - A @ coef
        s2 = float(resid @ resid) / (n - 2)
        se = math.sqrt(s2 / float(np.sum((lx - lx.mean()) ** 2)))
        half = float(stats.t.ppf(0.5 + level / 2, n - 2)) * se
    else:
        se, half = math.inf, math.inf
    return {"slope": float(coef[1]), "intercept": float(coef[0]), "se": se,
            "ci": [float(coef[1] - half), float(coef[1] + half)], "n": int(n)}


def fit_row(fit: dict) -> np.ndarray:
    """A :func:`loglog_fit` as the stored row ``[slope, intercept, ci_low, ci_high]``."""
    return np.array([fit["slope"], fit["intercept"], *fit["ci"]])


def wall_times(results: Sequence[dict]) -> np.ndarray:
    """Each task's ``wall_time_s`` (``nan`` where a result lacks it)."""
    return np.array([float(r.get("wall_time_s", np.nan)) for r in results])


def resample_path(x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """``n`` points equally spaced in arc length along the polyline ``(x, y)``."""
    P = np.stack([x, y], axis=1)
    seg = np.linalg.norm(np.diff(P, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] == 0.0:
        return np.repeat(P[:1], n, axis=0)
    u = np.linspace(0.0, s[-1], n)
    return np.stack([np.interp(u, s, P[:, 0]), np.interp(u, s, P[:, 1])], axis=1)


def hausdorff(P: np.ndarray, Q: np.ndarray) -> float:
    """Hausdorff distance between two point sets (rows)."""
    from scipy.spatial.distance import directed_hausdorff

    return float(max(directed_hausdorff(P, Q)[0], directed_hausdorff(Q, P)[0]))


def frechet(P: np.ndarray, Q: np.ndarray) -> float:
    """Discrete Frechet distance between two polylines (rows in order)."""
    d = np.linalg.norm(P[:, None, :] - Q[None, :, :], axis=-1)
    ca = np.empty_like(d)
    ca[0] = np.maximum.accumulate(d[0])
    for i in range(1, d.shape[0]):
        prev = ca[i - 1]
        row = np.empty(d.shape[1])
        row[0] = max(prev[0], d[i, 0])
        best_prev = np.minimum(prev[1:], prev[:-1])
        for j in range(1, d.shape[1]):
            row[j] = max(d[i, j], min(best_prev[j - 1], row[j - 1]))
        ca[i] = row
    return float(ca[-1, -1])


# --- figures --------------------------------------------------------------------------------


def caption(arrays: dict, name: str) -> str:
    """The caption stored with the arrays under ``caption_<name>``."""
    value = arrays.get(f"caption_{name}", "")
    return str(np.asarray(value).item()) if np.size(value) else ""


def save(fig, outdir, name: str, arrays: dict, legends=()) -> tuple[str, str]:
    """Write ``name.png`` and ``name.pdf`` (shared style); return ``(name, caption)``.

    Each axis in ``legends`` gets its legend (font size 7) first.
    """
    from ..plotting import save_figure

    for ax in legends:
        ax.legend(fontsize=7)
    return save_figure(fig, outdir, name, caption=caption(arrays, name))


def bounded(check, allowed: str):
    """A ``Param`` check that never raises (a wrong element type is just "not allowed")."""

    def _check(value):
        try:
            return bool(check(value))
        except (TypeError, ValueError):
            return False

    _check.__doc__ = allowed
    return _check


def positive_list(kind=(int, float), minimum: float = 0.0, min_len: int = 1):
    """A ``Param`` check: a list of at least ``min_len`` numbers of type ``kind``, all ``> minimum``."""

    def check(value):
        return (isinstance(value, list) and len(value) >= min_len
                and all(isinstance(v, kind) and not isinstance(v, bool) and v > minimum
                        for v in value))

    return bounded(check, f"a list of at least {min_len} numbers > {minimum}")


def int_list(min_len: int, low: int, high: float = math.inf, distinct: bool = True):
    """A ``Param`` check: a list of at least ``min_len`` integers in ``[low, high]``, without
    repeats when ``distinct``."""

    def check(value):
        return (isinstance(value, list) and len(value) >= min_len
                and all(isinstance(x, int) and not isinstance(x, bool) and low <= x <= high
                        for x in value)
                and (not distinct or len(set(value)) == len(value)))

    return bounded(check, f"a list of at least {min_len} integers in [{low}, {high}]")


# --- configuration keys shared by several experiments ---------------------------------------

THRESHOLD = Param(float, 0.95, check=lambda v: 0 < v < 1, allowed="a number in (0, 1)",
                  help="alignment that defines specialization")

T_MAX_BOTH = Param((int, float), 1e5, quick=2e4, check=lambda v: v > 0,
                   allowed="a number > 0", help="end of both trajectories")


def dim_param(default: int = 100, help: str = "input dimension D (also the gauge strength)") -> Param:
    """The input dimension ``D >= 4`` of the population experiments."""
    return Param(int, default, check=lambda v: v >= 4, allowed="an integer >= 4", help=help)


def scale_param(help: str = "initial coefficient rho0 = s") -> Param:
    """The initial coefficient ``rho0 = s > 0``."""
    return Param((int, float), 1.0, check=lambda v: v > 0, allowed="a number > 0", help=help)


def rtol_param(default: float, help: str = "relative tolerance of the batched integrator") -> Param:
    """The integrator's relative tolerance, in ``(0, 1e-3)``."""
    return Param(float, default, check=lambda v: 0 < v < 1e-3, allowed="a number in (0, 1e-3)",
                 help=help)


def diagnostics(traj: dict, prefix: str = "diag_") -> dict:
    """The numeric diagnostics of a trajectory as flat scalars (storable with the results)."""
    out = {}
    for key, value in (traj.get("diagnostics") or {}).items():
        if isinstance(value, bool | int | float | np.integer | np.floating):
            out[prefix + key] = float(value)
    return out


def run_inline(experiment, config: dict, root_seed: int = 0):
    """Tasks, analysis and claims of an experiment in this process (tests and notebooks)."""
    from .._meta import task_seed

    tasks = experiment.tasks(config)
    results = [experiment.run_task(t, task_seed(root_seed, experiment.name, t)) for t in tasks]
    return (tasks, results, *experiment.analyse(config, tasks, results))


def config_of(experiment, quick: bool = True, **overrides) -> dict:
    """The default (or quick) configuration of an experiment, with overrides."""
    cfg = {k: (p.quick if quick and p.quick is not None else p.default)
           for k, p in experiment.params.items()}
    cfg.update(overrides)
    return cfg

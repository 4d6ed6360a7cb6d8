r"""Plateaus of a trajectory: where the loss is nearly flat, the critical point there, the time
spent near it, and the escape time from a saddle.

A stretch of a loss curve is **flat** where it is flat on log-log axes,

$$
\left|\frac{d\ln L}{d\ln t}\right| = \frac{t}{L}\,\left|\frac{dL}{dt}\right|
\le \text{flatness},
$$

with ``-dL/dt`` the flow's dissipation (exact in a `Solution`: the sum of its
``reaction`` and ``transport``) or a finite difference of the curve: scale-free in time and in
loss, so a plateau at ``L = 1e-3`` is found as one at ``L = 1``, and a loss converging
exponentially to zero is not flat. Samples at $L \le \mathit{converged} \cdot \max L$ (round-off) count as
flat. Every curve is flat as ``t -> 0``, so a maximal flat run that starts at the first sample
is ``initial``, one that reaches the last sample ``final``, and the others, which must last
``min_span`` e-folds (``ln(t_end / t_start)``), are ``interior`` plateaus.

`plateaus()` refines each stretch to its critical point (`critical_point()` from the
stretch's slowest sample) and measures the **time spent** there: the time the loss stays
within ``band L_p`` of the plateau's level ``L_p`` (the loss at the slowest sample), from
entering the band to leaving it downward. A trajectory may plateau below the saddle's loss
``L*`` (on its unstable manifold, when ``lambda_+`` is small), so the band is the
trajectory's own level; from a start at the saddle the level is ``L*``. Near a saddle with unstable rate ``lambda_+`` a trajectory starting ``eps`` from
its stable manifold leaves it as $L^* - L \approx (\lambda_+ / 2)\, \epsilon^2 e^{2 \lambda_+ t}$, so the
time spent is ``ln(1/eps) / lambda_+`` plus a constant independent of ``eps``;
`escape_times()` integrates such starts and fits that slope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InputError
from .._json import strict
from .._options import Param
from ._landscape import CriticalPoint, critical_point, realize
from ._problem import Problem

SETTINGS = {
    "flatness": Param(
        float,
        default=0.05,
        name="flatness",
        lo=0,
        lo_open=True,
        hi=1.0,
        why="a loss that falls like 1/t is not flat",
        help="flat where |d ln L / d ln t| <= flatness",
    ),
    "min_span": Param(
        float,
        default=0.5,
        name="min_span",
        lo=0,
        hi=50.0,
        why="no trajectory output spans more than 50 e-folds of time",
        help="an interior plateau lasts at least this many e-folds of time",
    ),
    "band": Param(
        float,
        default=0.02,
        name="band",
        lo=0,
        lo_open=True,
        hi=0.5,
        why="a band of half the loss no longer locates a level",
        help="time spent: the loss within band L_p of the plateau's level L_p",
    ),
}

CONVERGED = 1e-12
"""Relative loss ``L / max L`` at or below which a sample counts as converged (flat)."""
"""The settings of `flat_stretches()`, `plateaus()` and `escape_times()`."""

RANGES = {"flatness": (0.02, 0.1), "min_span": (0.25, 1.0), "band": (0.005, 0.05)}
"""Plausible ranges of `SETTINGS` (the defaults inside): a log-log slope of a fiftieth to
a tenth, a quarter to one e-fold of span, a quarter to 2.5 times the band."""


@dataclass(frozen=True)
class Stretch:
    """A maximal flat run of samples ``i_start .. i_end`` (inclusive): times, loss at its
    slowest sample ``i_slow`` and ``kind`` (``initial``, ``interior`` or ``final``)."""

    i_start: int
    i_end: int
    i_slow: int
    t_start: float
    t_end: float
    t_slow: float
    level: float
    kind: str


def _rate(t, loss, rate):
    if rate is not None:
        r = np.abs(np.asarray(rate, dtype=np.float64))
        if r.shape != t.shape:
            raise InputError(f"rate has shape {r.shape}; it needs one value per time {t.shape}")
        return r
    return np.abs(np.gradient(loss, t))


def flat_stretches(
    t, loss, rate=None, *, flatness: float = 0.05, min_span: float = 0.5
) -> list[Stretch]:
    r"""The flat stretches of a loss curve (module docstring).

    ``t`` strictly increasing ($t_0 \ge 0$), ``loss`` of the same length, ``rate``
    $|\mathrm{d}L/\mathrm{d}t|$ at each time (``None``: a second-order finite difference of ``loss``).

    Parameters
    ----------
    t : array_like
        Times, 1-D, finite, ``>= 0`` and strictly increasing, at least 3.
    loss : array_like
        The loss at those times, finite, with a positive maximum.
    rate : array_like or None
        $|\mathrm{d}L/\mathrm{d}t|$ per time (its absolute value is taken); ``None``: ``numpy.gradient``.
    flatness : float
        Flat where $|\mathrm{d} \ln L / \mathrm{d} \ln t| \le$ ``flatness``, in $(0, 1]$.
    min_span : float
        The e-folds of time an interior stretch must last, in $[0, 50]$.

    Returns
    -------
    list of Stretch
        The maximal flat runs in time order, each ``initial``, ``interior`` or ``final``.

    Raises
    ------
    InputError
        For a setting outside its range, ``t`` and ``loss`` not 1-D of one length $\ge 3$,
        times not finite, negative or not increasing, a loss not finite or never positive, or a
        ``rate`` of another shape.
    """
    flatness = SETTINGS["flatness"].accept(flatness)
    min_span = SETTINGS["min_span"].accept(min_span)
    t = np.asarray(t, dtype=np.float64)
    loss = np.asarray(loss, dtype=np.float64)
    if t.ndim != 1 or t.shape != loss.shape or t.size < 3:
        raise InputError(f"t {t.shape} and loss {loss.shape} must be 1-D of one length >= 3")
    if (
        not (np.all(np.isfinite(t)) and np.all(np.isfinite(loss)))
        or t[0] < 0
        or np.any(np.diff(t) <= 0)
    ):
        raise InputError("t must be finite, >= 0 and strictly increasing, loss finite")
    r = _rate(t, loss, rate)
    top = float(np.max(loss))
    if not top > 0:
        raise InputError(f"the loss curve has no positive value (max {top!r}); a loss is >= 0")
    floor = CONVERGED * top
    flat = (t * r <= flatness * loss) | (loss <= floor)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flat.astype(np.int8), [0]])))
    out = []
    for i0, i1 in zip(edges[::2], edges[1::2] - 1):
        kind = "initial" if i0 == 0 else "final" if i1 == t.size - 1 else "interior"
        if kind == "interior" and np.log(t[i1] / t[i0]) < min_span:
            continue
        slow = int(i0 + np.argmin(r[i0 : i1 + 1]))
        out.append(
            Stretch(
                int(i0),
                int(i1),
                slow,
                float(t[i0]),
                float(t[i1]),
                float(t[slow]),
                float(loss[slow]),
                kind,
            )
        )
    return out


def time_spent(t, loss, level: float, width: float) -> tuple[float, float]:
    """``(entry, exit)``: the first time the curve is within ``width`` of ``level`` and the first
    time after that it leaves the band for good downward (linear interpolation between samples;
    ``exit = nan`` if it never leaves, ``entry = nan`` if it never enters).

    Parameters
    ----------
    t : array_like
        Times, increasing.
    loss : array_like
        The loss at those times.
    level : float
        The band's centre (a plateau's level $L_p$).
    width : float
        The band's half-width (`plateaus()`: ``band`` $|L_p|$).

    Returns
    -------
    tuple of float
        ``(entry, exit)``, either ``nan`` as above.
    """
    t = np.asarray(t, dtype=np.float64)
    loss = np.asarray(loss, dtype=np.float64)
    inside = np.abs(loss - level) <= width
    if not inside.any():
        return float("nan"), float("nan")
    first = int(np.argmax(inside))
    entry = float(t[0]) if first == 0 else _cross(t, loss, first - 1, level + width)
    below = np.flatnonzero(loss < level - width)
    below = below[below > first]
    if below.size == 0:
        return entry, float("nan")
    j = int(below[0])
    return entry, _cross(t, loss, j - 1, level - width)


def _cross(t, loss, i: int, value: float) -> float:
    """Where the segment ``i, i + 1`` of the curve crosses ``value`` (linear)."""
    l0, l1 = loss[i], loss[i + 1]
    if l1 == l0:
        return float(t[i + 1])
    f = (value - l0) / (l1 - l0)
    return float(t[i] + min(max(f, 0.0), 1.0) * (t[i + 1] - t[i]))


@dataclass
class Plateau:
    """A flat stretch of a trajectory with its critical point (`plateaus()`).

    ``stretch``; ``point``: the `CriticalPoint` refined from the slowest sample;
    ``entry``, ``exit`` and ``time_spent = exit - entry`` within the band around the level;
    ``distance``: ``|(a, Q, R)(t_slow) - (a, Q, R)*| / |(a, Q, R)*|``, how close the
    trajectory came.
    """

    stretch: Stretch
    point: CriticalPoint
    entry: float
    exit: float
    distance: float

    @property
    def time_spent(self) -> float:
        return self.exit - self.entry

    @property
    def kind(self) -> str:
        return self.stretch.kind

    @property
    def loss(self) -> float:
        return self.point.loss

    @property
    def index(self) -> int:
        return self.point.index

    @property
    def lambda_plus(self) -> float:
        return self.point.lambda_plus

    def to_dict(self) -> dict:
        s = self.stretch
        return strict(
            {
                "kind": s.kind,
                "t_start": s.t_start,
                "t_end": s.t_end,
                "t_slow": s.t_slow,
                "level": s.level,
                "loss": self.loss,
                "index": self.index,
                "unstable_rates": self.point.unstable_rates,
                "grad_norm": self.point.grad_norm,
                "status": self.point.status,
                "entry": self.entry,
                "exit": self.exit,
                "time_spent": self.time_spent,
                "distance": self.distance,
                "modes": self.point.modes,
            }
        )


def _check_solution(solution, problem):
    from ._solution import Solution

    if not isinstance(solution, Solution):
        raise InputError(
            f"solution={type(solution).__name__} is not allowed; allowed: a "
            "Solution of gaugedyn.theory.solve"
        )
    if not isinstance(problem, Problem):
        raise InputError(
            f"problem={type(problem).__name__} is not allowed; allowed: the "
            "Problem the solution was solved from (its teacher is needed)"
        )
    if solution.a.shape[1] != problem.K or solution.R.shape[2] != problem.M:
        raise InputError(
            f"solution has K={solution.a.shape[1]}, M={solution.R.shape[2]}; the "
            f"problem has K={problem.K}, M={problem.M}"
        )


def plateaus(
    solution,
    problem: Problem,
    *,
    flatness: float = 0.05,
    min_span: float = 0.5,
    band: float = 0.02,
    kinds=("initial", "interior", "final"),
    **refine,
) -> list[Plateau]:
    """The flat stretches of ``solution``'s loss (`flat_stretches()` on its exact
    dissipation), each refined to its critical point with the time spent there.

    ``problem``: the `Problem` the solution was solved from (its teacher ``b``, ``V``).
    ``kinds``: which stretches to refine. ``refine``: keyword arguments of
    `critical_point()` (default formulation ``span``: the state $(a, Q, R)$ realised in
    $K + M$ coordinates by `realize()`).

    Parameters
    ----------
    solution : Solution
        A trajectory of `solve()` with its ``loss``, ``reaction`` and ``transport``.
    problem : Problem
        The problem it was solved from (same $K$ and $M$).
    flatness : float
        See `flat_stretches()`, in $(0, 1]$.
    min_span : float
        See `flat_stretches()`, in $[0, 50]$.
    band : float
        The time spent is within ``band`` $|L_p|$ of the level $L_p$, in $(0, 0.5]$.
    kinds : tuple of str
        The stretch kinds refined: any of ``initial``, ``interior``, ``final``.
    **refine : dict
        Keyword arguments of `critical_point()`.

    Returns
    -------
    list of Plateau
        One per refined stretch, in time order.

    Raises
    ------
    InputError
        For a ``solution`` that is not a `Solution`, a ``problem`` that is not a `Problem` or
        does not match its $K$, $M$, or a setting outside its range.
    """
    _check_solution(solution, problem)
    band = SETTINGS["band"].accept(band)
    loss = solution.observables["loss"]
    rate = np.sum(solution.observables["reaction"] + solution.observables["transport"], axis=-1)
    stretches = flat_stretches(solution.t, loss, rate, flatness=flatness, min_span=min_span)
    T = problem.V @ problem.V.T
    out = []
    for s in stretches:
        if s.kind not in kinds:
            continue
        k = s.i_slow
        start = realize(
            solution.a[k],
            solution.Q[k],
            solution.R[k],
            problem.b,
            T,
            problem.activation,
            problem.teacher_activation,
            problem.setup,
        )
        point = critical_point(start, **refine)
        entry, exit_ = time_spent(solution.t, loss, s.level, band * abs(s.level))
        out.append(Plateau(s, point, entry, exit_, _distance(solution, k, point)))
    return out


def _distance(solution, k: int, point: CriticalPoint) -> float:
    a, Q, R, _, _ = point.problem.order_parameters()
    here = np.concatenate([solution.a[k], solution.Q[k].ravel(), solution.R[k].ravel()])
    there = np.concatenate([a, Q.ravel(), R.ravel()])
    return float(np.linalg.norm(here - there)) / max(float(np.linalg.norm(there)), 1e-300)


def perturbed(point: CriticalPoint, eps: float, direction=None) -> Problem:
    """The `Problem` at ``y* + eps v`` (``v``: the unit unstable eigenvector, or
    ``direction``) in the point's weight coordinates (span or weight space)."""
    if point.formulation == "order-parameters":
        raise InputError(
            "perturb a weight-space or span critical point (the order parameters "
            "have no Euclidean weight metric)"
        )
    v = point.unstable_direction if direction is None else np.asarray(direction, float)
    v = v / np.linalg.norm(v)
    y = point.y + eps * v
    p = point.params
    K = p.K
    C = y[K:].reshape(K, p.coords)
    W = C if p.basis is None else C @ p.basis.T
    return point.problem.replace(
        a=y[:K].copy(), W=W, setup={**point.problem.setup, "perturbation": float(eps)}
    )


def escape_times(
    point: CriticalPoint,
    eps,
    *,
    band: float = 0.02,
    t_max: float | None = None,
    direction=None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> dict:
    r"""Time spent at ``point`` from starts ``eps`` along its unstable direction.

    For each ``eps`` the flow starts at $y^* + \epsilon v$ (`escape_time()`); the time spent is
    the time the loss takes to leave the band $L^* (1 - \mathrm{band})$ (`time_spent()`'s exit
    with the level $L^*$, the loss at the trajectory's slowest point, its start; located by the
    integrator's root finding). Returns ``eps``, ``time_spent``, ``lambda_plus`` and the
    least-squares slope of time against $\ln(1/\epsilon)$ (`scipy.stats.linregress()`:
    ``slope``, ``stderr``, ``intercept``), to compare with $1 / \lambda_+$.

    Parameters
    ----------
    point : CriticalPoint
        A saddle found by `critical_point()` in weight-space or span coordinates, with
        $\lambda_+ > 0$.
    eps : array_like
        At least two perturbation sizes, each in $(0, 1)$.
    band : float
        The escape level: the loss below $L^* (1 - \mathrm{band})$.
    t_max : float or None
        The horizon; ``None``: $(3 \ln(1/\epsilon) + 50) / \lambda_+$.
    direction : array_like or None
        The perturbation direction in the point coordinates (normalised here); ``None``: the
        unit unstable eigenvector.
    rtol : float
        The relative tolerance of LSODA.
    atol : float
        The absolute tolerance of LSODA.

    Returns
    -------
    dict
        Strict-JSON data: ``eps``, ``time_spent``, ``lambda_plus``, ``band``, ``slope``,
        ``stderr``, ``intercept`` (``None`` with fewer than three finite times) and
        ``predicted_slope`` $= 1/\lambda_+$.

    Raises
    ------
    InputError
        For ``band`` outside $(0, 0.5]$, fewer than two ``eps`` or one outside $(0, 1)$, and as
        `escape_time()`.
    RuntimeError
        As `escape_time()`.
    """
    from scipy.stats import linregress

    band = SETTINGS["band"].accept(band)
    eps = np.asarray(eps, dtype=np.float64).ravel()
    if eps.size < 2 or not np.all((eps > 0) & (eps < 1)):
        raise InputError(
            f"eps={eps.tolist()} is not allowed; allowed: at least two perturbations in (0, 1)"
        )
    lam = point.lambda_plus
    spent = np.array(
        [
            escape_time(
                point, float(e), band=band, t_max=t_max, direction=direction, rtol=rtol, atol=atol
            )
            for e in eps
        ]
    )
    x = np.log(1.0 / eps)
    ok = np.isfinite(spent)
    fit = linregress(x[ok], spent[ok]) if ok.sum() >= 3 else None
    return strict(
        {
            "eps": eps,
            "time_spent": spent,
            "lambda_plus": lam,
            "band": band,
            "slope": None if fit is None else fit.slope,
            "stderr": None if fit is None else fit.stderr,
            "intercept": None if fit is None else fit.intercept,
            "predicted_slope": 1.0 / lam,
        }
    )


def escape_time(
    point: CriticalPoint,
    eps: float,
    *,
    band: float = 0.02,
    t_max: float | None = None,
    direction=None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> float:
    r"""The first time the flow from $y^* + \epsilon v$ ($v$: the unit unstable eigenvector, or
    ``direction``) has $L < L^* (1 - \mathrm{band})$ (``nan`` if not before ``t_max``, default
    $(3 \ln(1/\epsilon) + 50) / \lambda_+$): the point's own formulation and coordinates with the
    weights' pair sines (`rhs()` with ``resolve_angles``), LSODA at ``rtol``, ``atol``.

    Parameters
    ----------
    point : CriticalPoint
        A saddle found by `critical_point()` in weight-space or span coordinates, with
        $\lambda_+ > 0$.
    eps : float
        The perturbation's size.
    band : float
        The escape level: the loss below $L^* (1 - \mathrm{band})$.
    t_max : float or None
        The horizon; ``None``: $(3 \ln(1/\epsilon) + 50) / \lambda_+$.
    direction : array_like or None
        The perturbation direction in the point coordinates (normalised here); ``None``: the
        unit unstable eigenvector.
    rtol : float
        The relative tolerance of LSODA.
    atol : float
        The absolute tolerance of LSODA.

    Returns
    -------
    float
        The escape time, or ``nan``.

    Raises
    ------
    InputError
        For a point in the order-parameter formulation or one with no unstable direction.
    RuntimeError
        When LSODA fails on the escape trajectory.
    """
    from scipy.integrate import solve_ivp

    from ._flows import jacobian, rhs
    from ._landscape import _loss

    if point.formulation == "order-parameters":
        raise InputError(
            "escape from a weight-space or span critical point (the order "
            "parameters have no Euclidean weight metric)"
        )
    lam = point.lambda_plus
    if not lam > 0:
        raise InputError(
            f"the point has index {point.index}: no unstable direction to escape along"
        )
    if t_max is None:
        t_max = (3.0 * np.log(1.0 / eps) + 50.0) / lam
    v = point.unstable_direction if direction is None else np.asarray(direction, float)
    y0 = point.y + eps * v / np.linalg.norm(v)
    p = point.params
    target = point.loss - band * abs(point.loss)

    def leaves(t, y):
        return _loss(y, p) - target

    leaves.terminal = True  # type: ignore[attr-defined]  # scipy's event attributes
    leaves.direction = -1  # type: ignore[attr-defined]
    sol = solve_ivp(
        lambda t, y: rhs(t, y, p),
        (0.0, float(t_max)),
        y0,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        jac=lambda t, y: jacobian(t, y, p),
        events=leaves,
    )
    if sol.status < 0:
        raise RuntimeError(f"escape trajectory failed: {sol.message}")
    hit = sol.t_events[0]
    return float(hit[0]) if hit.size else float("nan")

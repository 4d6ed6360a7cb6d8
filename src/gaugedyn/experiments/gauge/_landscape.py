"""The population landscape of the gauge system: plateau ends refined to critical points, their
Hessians, escape times, the gauge's effect on a saddle, the catalogue of fixed points and the
online ODE's fixed points (the computations of the ``landscape`` experiment).

Every function is a pure function of its arguments (a task), returns plain data, and names
its set-up the same way the protocol does.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json

import numpy as np

from ...theory import (
    Problem,
    catalogue,
    critical_point,
    escape_time,
    escape_times,
    flat_stretches,
    plateaus,
    random_problem,
    same_point,
    single,
    solve,
    with_gauge,
)
from . import _protocol as gp

SOURCE_KINDS = ("random", "symmetric", "single")


def source_problem(source: dict) -> Problem:
    """The problem of a plateau source.

    ``random``: `random_problem()` ``(dim, K, K, default_rng(seed), scale)``;
    ``symmetric``: orthonormal teachers ``v_n = e_n`` with ``b = 1`` (Saad and Solla's set-up),
    students ``w_i ~ width N(0, I/D)``, ``a_i = 1 + 0.01 N(0, 1)``; ``single``: the gauge
    paper's `single()` ``(dim, gauge)``.
    """
    kind, act = source["kind"], source["activation"]
    if kind == "random":
        return random_problem(
            source["dim"],
            source["K"],
            source["K"],
            np.random.default_rng(source["seed"]),
            activation=act,
            scale=source["scale"],
        )
    if kind == "symmetric":
        K, D = source["K"], source["dim"]
        rng = np.random.default_rng(source["seed"])
        W = rng.normal(size=(K, D)) * source["width"] / np.sqrt(D)
        a = 1.0 + 0.01 * rng.normal(size=K)
        return Problem(
            a=a,
            W=W,
            b=np.ones(K),
            V=np.eye(D)[:K],
            activation=act,
            setup={"name": "symmetric", "K": K, "dim": D, "seed": source["seed"]},
        )
    return single(source["dim"], source["gauge"], activation=act)


def _point_record(point, check_hessian: bool = True) -> dict:
    from ._reference import reference_hessian

    rec = {
        "loss": point.loss,
        "grad_norm": point.grad_norm,
        "status": point.status,
        "index": point.index,
        "unstable_rates": point.unstable_rates.tolist(),
        "modes": point.modes,
        "units": point.units,
        "residual": point.residual,
        "snapped": point.settings.get("snapped", []),
        "nit": point.nit,
        "singular": point.singular,
    }
    if not point.singular and point.success and not _homogeneous(point):
        rec["rescaling_residual"] = _rescaling_residual(point)
    if check_hessian and point.success and not point.singular:
        H, how = reference_hessian(point)
        rec["hessian_error"] = float(np.linalg.norm(point.hessian - H) / np.linalg.norm(H))
        rec["hessian_reference"] = how
    return rec


def _homogeneous(point) -> bool:
    from ...theory import activation_of

    return activation_of(point.params.activation).homogeneous


def _rescaling_residual(point) -> float:
    """The smallest distance from the null space of the active units' normalised rescaling
    generators ``(-a_i, w_i)``: zero for a gauge zero mode."""
    p = point.params
    K, d = p.K, p.coords
    N = point.null_space
    out = []
    for i in point.units["active"]:
        v = np.zeros_like(point.y)
        v[i] = -point.y[i]
        v[K + i * d : K + (i + 1) * d] = point.y[K + i * d : K + (i + 1) * d]
        v /= np.linalg.norm(v)
        out.append(float(np.linalg.norm(v - N @ (N.T @ v))))
    return min(out) if out else float("nan")


def plateau_point(source: dict, t_max: float, flatness: float, min_span: float, which: int):
    """The critical point of a source's ``which``-th refined plateau (initial or interior).

    Kept for the last few arguments (`_plateau_point()`): the gauge task of each gauge strength
    of a multiverse refines the same plateau; the point is read, never changed."""
    return _plateau_point(
        json.dumps(source, sort_keys=True), t_max, float(flatness), float(min_span), which
    )


@functools.lru_cache(maxsize=4)
def _plateau_point(text: str, t_max: float | None, flatness: float, min_span: float, which: int):
    pr = source_problem(json.loads(text))
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    pls = plateaus(sol, pr, flatness=flatness, min_span=min_span, kinds=("initial", "interior"))
    return pls[which].point


def escape_task(point, eps, band: float) -> dict:
    """Time spent from ``y* +- eps v`` (both signs of the unstable direction: two readings)."""
    v = point.unstable_direction
    times = {
        sign: [escape_time(point, float(e), band=band, direction=s * v) for e in eps]
        for sign, s in (("plus", 1.0), ("minus", -1.0))
    }
    return {
        "eps": list(map(float, eps)),
        "lambda_plus": point.lambda_plus,
        "loss": point.loss,
        "index": point.index,
        **times,
    }


def gauge_task(point, strength: float, eps, band: float, common_eps: float) -> dict:
    """One ReLU saddle in three gauges (``balanced``, ``a-heavy``, ``w-heavy`` at
    ``strength``): whether they are one critical point, the unstable rate of each, the escape
    times from ``eps`` along each one's own unstable direction, and, from one common initial
    function (the balanced saddle moved ``common_eps`` along its unstable direction, then
    gauge-transformed), the time spent and the start's distance along each copy's unstable
    direction."""
    eps = tuple(map(float, eps))
    base = with_gauge(point.problem, names=["balanced"] * point.problem.K)
    bal, start, balanced = _balanced(_problem_key(base), base, eps, float(band), float(common_eps))
    gauges: dict = {"balanced": copy.deepcopy(balanced)}
    for g in ("a-heavy", "w-heavy"):
        cp = critical_point(with_gauge(base, names=[g] * base.K, strength=strength))
        gauges[g] = _gauge_record(cp, bal, start, eps, band)
    return {"strength": strength, "eps": list(eps), "gauges": gauges}


def _gauge_record(cp, bal, start: Problem, eps, band: float) -> dict:
    """`gauge_task()`'s record of the copy ``cp`` of the balanced saddle ``bal``."""
    from ...theory import escape_time as _escape

    rec = {
        "loss": cp.loss,
        "grad_norm": cp.grad_norm,
        "index": cp.index,
        "lambda_plus": cp.lambda_plus,
        "same_as_balanced": bool(same_point(cp, bal)),
        "delta": cp.problem.delta.tolist(),
    }
    rec["escape"] = [_escape(cp, float(e), band=band) for e in eps]
    gauged = with_gauge(start, delta=cp.problem.delta)
    y0 = _state_in(cp, gauged)
    d = float(abs(cp.unstable_direction @ (y0 - cp.y)))
    rec["common_distance"] = d
    rec["common_time"] = _escape(
        cp, float(np.linalg.norm(y0 - cp.y)), band=band, direction=y0 - cp.y
    )
    return rec


def _problem_key(problem: Problem) -> tuple | None:
    """Every field of ``problem`` as hashable data (arrays as their bytes); ``None`` for an
    activation given as an object (not kept)."""
    if not isinstance(problem.activation, str) or not isinstance(
        problem.teacher_activation, (str, type(None))
    ):
        return None
    arrays = tuple((x.shape, x.tobytes()) for x in (problem.a, problem.W, problem.b, problem.V))
    return arrays, problem.activation, problem.teacher_activation, repr(problem.setup)


def _balanced(key: tuple | None, base: Problem, eps: tuple, band: float, common_eps: float):
    """The balanced saddle refined from ``base``, the common start (moved ``common_eps`` along
    its unstable direction) and its `_gauge_record()`: the same at every gauge strength, so
    kept for the last few ``key`` (`_problem_key()` of ``base``) and settings."""
    if key is None:
        return _balanced_computed(base, eps, band, common_eps)
    return _balanced_kept(_Keyed(key, base), eps, band, common_eps)


@dataclasses.dataclass(frozen=True)
class _Keyed:
    """``problem`` hashed and compared by ``key`` alone (a `Problem` holds arrays, not hashable),
    so `functools.lru_cache` can keep results by the problem's data."""

    key: tuple
    problem: Problem = dataclasses.field(compare=False)


@functools.lru_cache(maxsize=4)
def _balanced_kept(base: _Keyed, eps: tuple, band: float, common_eps: float):
    return _balanced_computed(base.problem, eps, band, common_eps)


def _balanced_computed(base: Problem, eps: tuple, band: float, common_eps: float):
    bal = critical_point(with_gauge(base, names=["balanced"] * base.K))
    K = bal.params.K
    moved = bal.y + common_eps * bal.unstable_direction
    y_bal = bal.params
    C = moved[K:].reshape(K, y_bal.coords)
    start = bal.problem.replace(
        a=moved[:K].copy(), W=C if y_bal.basis is None else C @ y_bal.basis.T
    )
    return bal, start, _gauge_record(bal, bal, start, eps, band)


def _state_in(point, problem: Problem) -> np.ndarray:
    """``problem``'s student in ``point``'s state coordinates (span basis or weights)."""
    p = point.params
    W = problem.W if p.basis is None else problem.W @ p.basis
    return np.concatenate([problem.a, W.ravel()])


def catalogue_task(
    activation: str,
    K: int,
    dim: int,
    teacher_seed: int,
    starts: int,
    seed: int,
    t_max: float,
    flatness: float,
    min_span: float,
) -> dict:
    """The catalogue of one teacher: ``K`` unit-norm teachers drawn from ``teacher_seed`` in
    ``dim`` dimensions, ``b = 1``, students from ``seed``."""
    rng = np.random.default_rng(teacher_seed)
    V = rng.normal(size=(K, dim))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    teacher = Problem(
        a=np.ones(K),
        W=V.copy(),
        b=np.ones(K),
        V=V,
        activation=activation,
        setup={"name": "catalogue teacher", "seed": teacher_seed},
    )
    cat = catalogue(
        teacher, starts=starts, seed=seed, t_max=t_max, flatness=flatness, min_span=min_span
    )
    rows = []
    for e in cat.entries:
        rec = _point_record(e.point)
        rec |= {"basin": cat.basin(e), "visits": len(set(e.visits)), "newton": len(e.newton)}
        rows.append(rec)
    return {
        "entries": rows,
        "unresolved": cat.unresolved,
        "singular": cat.singular,
        "starts": starts,
        "points": [_order_parameters(e.point) for e in cat.entries],
    }


def _order_parameters(point) -> dict:
    a, Q, R, b, T = point.problem.order_parameters()
    return {"a": a.tolist(), "Q": Q.tolist(), "R": R.tolist(), "b": b.tolist(), "T": T.tolist()}


def online_fixed_points(points: list, activation: str, etas, tol: float = 1e-11) -> list:
    """The online-SGD ODE's fixed points continued from population critical points
    (``points``: order parameters) through the learning rates ``etas`` in turn:
    Levenberg-Marquardt on the ODE's right-hand side in the packed coordinates ``(a,
    Q_{i<=j}, R)`` (central-difference Jacobian), the number of eigenvalues of that Jacobian
    with positive real part, the largest, and the distance from the population point."""
    from ...theory import fixed_point
    from ...training import OnlineODE

    out = []
    for i, pt in enumerate(points):
        a, Q, R, b, T = (np.asarray(pt[k], float) for k in ("a", "Q", "R", "b", "T"))
        K, M = a.size, b.size
        iu = np.triu_indices(K)

        def full(y, K=K, M=M, iu=iu):
            Qs = np.zeros((K, K))
            Qs[iu] = y[K : K + len(iu[0])]
            Qs = Qs + np.triu(Qs, 1).T
            return np.concatenate([y[:K], Qs.ravel(), y[K + len(iu[0]) :]])

        def packed(z, K=K, iu=iu):
            return np.concatenate([z[:K], z[K : K + K * K].reshape(K, K)[iu], z[K + K * K :]])

        y0 = np.concatenate([a, Q[iu], R.ravel()])
        y = y0
        for eta in etas:
            ode = OnlineODE(K, M, b, T, activation, float(eta))
            fp = fixed_point(lambda x, ode=ode: packed(ode(0.0, full(x))), y, tol=tol, max_iter=60)
            lam = np.linalg.eigvals(fp.jac).real
            top = max(float(np.max(np.abs(lam))), 1e-300)
            out.append(
                {
                    "point": i,
                    "eta": float(eta),
                    "residual": fp.norm,
                    "status": fp.status,
                    "unstable": int(np.sum(lam > 1e-8 * top)),
                    "largest_rate": float(lam.max()),
                    "distance": float(np.linalg.norm(fp.y - y0) / np.linalg.norm(y0)),
                }
            )
            y = fp.y if fp.success else y
    return out


def single_task(
    activation: str,
    gauge: str,
    dim: int,
    t_max: float | None,
    flatness: float,
    min_span: float,
    band: float,
) -> dict:
    """The gauge paper's ``single`` set-up: its specialization time, the critical point its
    first plateau refines to, the distance of the trajectory from it and its unstable rate."""
    pr = single(dim, gauge, activation=activation)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    pls = plateaus(
        sol, pr, flatness=flatness, min_span=min_span, band=band, kinds=("initial", "interior")
    )
    first = pls[0]
    return {
        "activation": activation,
        "gauge": gauge,
        "dim": dim,
        "specialization_time": float(sol.specialization_time[0]),
        "kind": first.kind,
        "t_end": first.stretch.t_end,
        "time_spent": first.time_spent,
        "distance": first.distance,
        **_point_record(first.point, check_hessian=False),
    }


# --- one task per plateau source ---------------------------------------------------------------


def source_task(
    source: dict, t_max: float, flatness: float, min_span: float, band: float, eps, near: float
) -> dict:
    """`plateau_task()`, and the escape times (`escape_task()`) from every plateau end
    that converged below `gp.LANDSCAPE_CONVERGED` with index >= 1 and that the trajectory came within
    ``near`` of."""
    pr = source_problem(source)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    records = []
    for pl in plateaus(
        sol, pr, flatness=flatness, min_span=min_span, band=band, kinds=("initial", "interior")
    ):
        s = pl.stretch
        rec = {
            "kind": s.kind,
            "t_start": s.t_start,
            "t_end": s.t_end,
            "level": s.level,
            "time_spent": pl.time_spent,
            "distance": pl.distance,
            **_point_record(pl.point),
        }
        if qualifies(rec, near):
            rec["escape"] = escape_task(pl.point, eps, band)
        records.append(rec)
    return {"source": source, "plateaus": records, "t": sol.t, "loss": sol.observables["loss"]}


# --- known-answer controls ---------------------------------------------------------------------


def _two_drops(t):
    return 0.01 + 0.3 / (1 + (t / 10.0) ** 4) + 0.6 / (1 + (t / 1000.0) ** 4)


def finder_present(flatness: float = 0.05, min_span: float = 0.5):
    """The plateau finder on the two-drop curve: one interior stretch whose ends lie within one
    sample of the roots of ``|d ln L / d ln t| = flatness`` (closed form)."""
    from scipy.optimize import brentq

    t = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 321)])
    found = flat_stretches(t, _two_drops(t), flatness=flatness, min_span=min_span)

    def slope(x):
        """``|d ln L / d ln t|`` of the two-drop curve, in closed form."""
        u, v = (x / 10.0) ** 4, (x / 1000.0) ** 4
        return (1.2 * u / (1 + u) ** 2 + 2.4 * v / (1 + v) ** 2) / _two_drops(x)

    lo = brentq(lambda x: slope(x) - flatness, 12.0, 100.0)
    hi = brentq(lambda x: slope(x) - flatness, 100.0, 900.0)
    step = t[2] / t[1]
    interior = [[s.t_start, s.t_end] for s in found if s.kind == "interior"]
    ok = (
        len(interior) == 1
        and lo / step <= interior[0][0] <= lo * step
        and hi / step <= interior[0][1] <= hi * step
    )
    return {"found": interior, "roots": [lo, hi]}, bool(ok)


def finder_absent(flatness: float = 0.05, min_span: float = 0.5):
    """The plateau finder on a power law, an exponential decay and a steady drop: no interior
    stretch."""
    tt = np.concatenate([[0.0], np.geomspace(1e-3, 30.0, 200)])
    kinds = [
        [s.kind for s in flat_stretches(tt, curve, flatness=flatness, min_span=min_span)]
        for curve in ((1 + tt) ** -0.5, np.exp(-tt), 1.0 - 0.03 * tt)
    ]
    return kinds, all("interior" not in k for k in kinds)


def refiner_minimum():
    """The refiner started at the teacher (ReLU and erf, ``K = M = 3``, ``D = 7``): a minimum,
    ``|grad| < 1e-12``, loss below ``1e-12``, index 0."""
    out, ok = [], True
    for act in ("relu", "erf"):
        pr = random_problem(7, 3, 3, np.random.default_rng(0), activation=act)
        cp = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
        out.append([cp.grad_norm, cp.loss, cp.index])
        ok &= bool(cp.grad_norm < 1e-12 and abs(cp.loss) < 1e-12 and cp.index == 0)
    return out, ok


def refiner_saddle():
    """The refiner at the erf ``single`` saddle (`closed_form_saddle()`): loss 1/6, index 1,
    ``lambda_+`` equal to its closed form to 1e-8."""
    saddle, lam = closed_form_saddle()
    ok = (
        saddle.grad_norm < 1e-12
        and abs(saddle.loss - 1 / 6) < 1e-12
        and saddle.index == 1
        and abs(saddle.lambda_plus - lam) <= 1e-8 * lam
    )
    return [saddle.loss, saddle.index, saddle.lambda_plus, lam], bool(ok)


def refiner_absent():
    """One iteration from a point that is not critical (an erf teacher moved off) is not
    reported as a critical point."""
    pr = random_problem(7, 2, 2, np.random.default_rng(0), activation="erf")
    far = critical_point(pr.replace(a=pr.b + 0.3, W=pr.V * 1.3), max_iter=1)
    return [far.status, far.grad_norm], bool(not far.success)


def escape_present(band: float = 0.02):
    """The escape instrument on the closed-form saddle: the slope of ``T`` on ``ln(1/eps)``
    times ``lambda_+`` is 1 within 1%."""
    saddle, lam = closed_form_saddle()
    esc = escape_times(saddle, [1e-2, 1e-3, 1e-4, 1e-5], band=band)
    ratio = float(esc["slope"] * lam)
    return ratio, bool(abs(ratio - 1.0) < 0.01)


def escape_absent(band: float = 0.02):
    """The escape instrument refuses a minimum (no unstable direction)."""
    from ..._errors import InputError

    pr = random_problem(7, 2, 2, np.random.default_rng(0), activation="erf")
    try:
        escape_times(critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy())), [1e-2, 1e-3])
    except InputError as err:
        return f"refused: {err}", True
    return "accepted", False


def _dedup_point():
    relu = random_problem(7, 2, 2, np.random.default_rng(2), activation="relu")
    return relu, critical_point(relu.replace(a=relu.b.copy(), W=relu.V.copy()))


def dedup_present():
    """Permuted and gauge-transformed copies of a ReLU point are one entry."""
    _, point = _dedup_point()
    copies = [
        with_gauge(point.problem, c=[0.5, 3.0]),
        point.problem.replace(a=point.problem.a[::-1], W=point.problem.W[::-1]),
    ]
    same = [bool(same_point(point, c)) for c in copies]
    return same, all(same)


def dedup_absent():
    """Two different critical points (the teacher and a start with the teachers swapped and
    shrunk, refined: fewer units) are two entries, and so are the teacher point and a copy with
    one coefficient 10% larger (as many units, another function)."""
    relu, point = _dedup_point()
    other = critical_point(relu.replace(a=0.3 * relu.b, W=relu.V[::-1].copy()))
    moved = point.problem.replace(a=point.problem.a * np.array([1.1, 1.0]))
    same = [bool(same_point(point, other)), bool(same_point(point, moved))]
    return same, not any(same)


CASES = {
    "finder_present": finder_present,
    "finder_absent": finder_absent,
    "refiner_minimum": refiner_minimum,
    "refiner_saddle": refiner_saddle,
    "refiner_absent": refiner_absent,
    "escape_present": escape_present,
    "escape_absent": escape_absent,
    "dedup_present": dedup_present,
    "dedup_absent": dedup_absent,
}
"""The known-answer cases of the landscape's instruments, by the check's name: each returns
``(measured, passed)``. The run judges them all as checks (`controls_task()`) and the
experiment declares them as controls (`._controls.landscape()`)."""

SETTINGS_OF = {
    "finder_present": ("flatness", "min_span"),
    "finder_absent": ("flatness", "min_span"),
    "escape_present": ("band",),
    "escape_absent": ("band",),
}
"""The settings of the run each case reads (the others read none)."""


def controls_task(band: float, flatness: float = 0.05, min_span: float = 0.5) -> dict:
    """The instruments on cases with known answers (`CASES`) at the run's settings."""
    given = {"band": band, "flatness": flatness, "min_span": min_span}
    out: dict = {}
    for name, case in CASES.items():
        measured, passed = case(**{k: given[k] for k in SETTINGS_OF.get(name, ())})
        out[name] = bool(passed)
        if name == "escape_present":
            out["escape_slope_ratio"] = measured
    return out


def closed_form_saddle():
    """The erf ``single`` saddle ``a = 0``, ``w . v = 0`` refined from a nearby start, and its
    unstable rate in closed form: ``(sqrt(S^2 + 4 F_c^2) - S) / 2`` with ``S = (2/pi)
    arcsin(q / (1 + q))``, ``F_c = (2/pi) / sqrt(2 (1 + q))`` at the point's ``q = |w|^2``."""
    pr = single(10, "w-heavy", activation="erf")
    w = np.array(pr.W)
    q = float(w[0] @ w[0])
    w[0, 0] = 0.0
    w *= np.sqrt(q) / np.linalg.norm(w)
    saddle = critical_point(pr.replace(a=np.array([0.01]), W=w + 1e-3 * pr.V))
    qs = float(saddle.problem.W[0] @ saddle.problem.W[0])
    S = 2 / np.pi * np.arcsin(qs / (1 + qs))
    Fc = 2 / np.pi / np.sqrt(2 * (1 + qs))
    return saddle, 0.5 * (np.sqrt(S * S + 4 * Fc * Fc) - S)


def qualifies(rec: dict, near: float) -> bool:
    """A plateau end refined below `gp.LANDSCAPE_CONVERGED`, of index >= 1, not singular, that the
    trajectory came within ``near`` of."""
    return bool(
        rec["grad_norm"] <= gp.LANDSCAPE_CONVERGED
        and rec["index"] >= 1
        and not rec["singular"]
        and rec["distance"] <= near
    )

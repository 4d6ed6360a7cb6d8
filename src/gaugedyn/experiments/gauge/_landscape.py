"""The population landscape of the gauge system: plateau ends refined to critical points, their
Hessians, escape times, the gauge's effect on a saddle, the catalogue of fixed points and the
online ODE's fixed points (the computations of the ``landscape`` experiment).

Every function is a pure function of its arguments (a task), returns plain data, and names
its set-up the same way the protocol does.
"""

from __future__ import annotations

import numpy as np

from ...theory import (
    Problem,
    catalogue,
    critical_point,
    escape_time,
    plateaus,
    random_problem,
    realize,
    same_point,
    single,
    solve,
    with_gauge,
)

SOURCE_KINDS = ("random", "symmetric", "single")


def source_problem(source: dict) -> Problem:
    """The problem of a plateau source.

    ``random``: :func:`random_problem` ``(dim, K, K, default_rng(seed), scale)``;
    ``symmetric``: orthonormal teachers ``v_n = e_n`` with ``b = 1`` (Saad and Solla's set-up),
    students ``w_i ~ width N(0, I/D)``, ``a_i = 1 + 0.01 N(0, 1)``; ``single``: the gauge
    paper's :func:`single` ``(dim, gauge)``.
    """
    kind, act = source["kind"], source["activation"]
    if kind == "random":
        return random_problem(source["dim"], source["K"], source["K"],
                              np.random.default_rng(source["seed"]), activation=act,
                              scale=source["scale"])
    if kind == "symmetric":
        K, D = source["K"], source["dim"]
        rng = np.random.default_rng(source["seed"])
        W = rng.normal(size=(K, D)) * source["width"] / np.sqrt(D)
        a = 1.0 + 0.01 * rng.normal(size=K)
        return Problem(a=a, W=W, b=np.ones(K), V=np.eye(D)[:K], activation=act,
                       setup={"name": "symmetric", "K": K, "dim": D, "seed": source["seed"]})
    return single(source["dim"], source["gauge"], activation=act)


def _point_record(point, check_hessian: bool = True) -> dict:
    from ._reference import reference_hessian

    rec = {
        "loss": point.loss, "grad_norm": point.grad_norm, "status": point.status,
        "index": point.index, "unstable_rates": point.unstable_rates.tolist(),
        "modes": point.modes, "units": point.units,
        "residual": point.residual, "snapped": point.settings.get("snapped", []),
        "nit": point.nit, "singular": point.singular,
    }
    if check_hessian and point.success and not point.singular:
        H, how = reference_hessian(point)
        rec["hessian_error"] = float(np.linalg.norm(point.hessian - H) / np.linalg.norm(H))
        rec["hessian_reference"] = how
    return rec


def plateau_task(source: dict, t_max: float, flatness: float, min_span: float,
                 band: float) -> dict:
    """The plateaus of one source's trajectory (initial and interior stretches), each refined
    to its critical point, with the Hessian against the independent reference."""
    pr = source_problem(source)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    out = []
    for pl in plateaus(sol, pr, flatness=flatness, min_span=min_span, band=band,
                       kinds=("initial", "interior")):
        s = pl.stretch
        out.append({"kind": s.kind, "t_start": s.t_start, "t_end": s.t_end, "level": s.level,
                    "time_spent": pl.time_spent, "distance": pl.distance,
                    **_point_record(pl.point)})
    return {"source": source, "plateaus": out, "t": sol.t, "loss": sol.observables["loss"],
            "specialization_time": sol.specialization_time.tolist()}


def plateau_point(source: dict, t_max: float, flatness: float, min_span: float,
                  which: int):
    """The critical point of a source's ``which``-th refined plateau (initial or interior)."""
    pr = source_problem(source)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    pls = plateaus(sol, pr, flatness=flatness, min_span=min_span, kinds=("initial", "interior"))
    return pls[which].point


def escape_task(point, eps, band: float) -> dict:
    """Time spent from ``y* +- eps v`` (both signs of the unstable direction: two readings)."""
    v = point.unstable_direction
    times = {sign: [escape_time(point, float(e), band=band, direction=s * v) for e in eps]
             for sign, s in (("plus", 1.0), ("minus", -1.0))}
    return {"eps": list(map(float, eps)), "lambda_plus": point.lambda_plus,
            "loss": point.loss, "index": point.index, **times}


def gauge_task(point, strength: float, eps, band: float, common_eps: float) -> dict:
    """One ReLU saddle in three gauges (``balanced``, ``a-heavy``, ``w-heavy`` at
    ``strength``): whether they are one critical point, the unstable rate of each, the escape
    times from ``eps`` along each one's own unstable direction, and, from one common initial
    function (the balanced saddle moved ``common_eps`` along its unstable direction, then
    gauge-transformed), the time spent and the start's distance along each copy's unstable
    direction."""
    from ...theory._plateaus import escape_time as _escape

    base = with_gauge(point.problem, names=["balanced"] * point.problem.K)
    copies = {g: critical_point(with_gauge(base, names=[g] * base.K, strength=strength))
              for g in ("balanced", "a-heavy", "w-heavy")}
    bal = copies["balanced"]
    K = bal.params.K
    moved = bal.y + common_eps * bal.unstable_direction
    y_bal = bal.params
    C = moved[K:].reshape(K, y_bal.coords)
    start = bal.problem.replace(a=moved[:K].copy(),
                                W=C if y_bal.basis is None else C @ y_bal.basis.T)
    out = {"strength": strength, "eps": list(map(float, eps)), "gauges": {}}
    for g, cp in copies.items():
        rec = {"loss": cp.loss, "grad_norm": cp.grad_norm, "index": cp.index,
               "lambda_plus": cp.lambda_plus, "same_as_balanced": bool(same_point(cp, bal)),
               "delta": cp.problem.delta.tolist()}
        rec["escape"] = [_escape(cp, float(e), band=band) for e in eps]
        gauged = with_gauge(start, delta=cp.problem.delta)
        y0 = _state_in(cp, gauged)
        d = float(abs(cp.unstable_direction @ (y0 - cp.y)))
        rec["common_distance"] = d
        rec["common_time"] = _escape(cp, 1.0, band=band, direction=y0 - cp.y) \
            if d > 0 else float("nan")
        out["gauges"][g] = rec
    return out


def _state_in(point, problem: Problem) -> np.ndarray:
    """``problem``'s student in ``point``'s state coordinates (span basis or weights)."""
    p = point.params
    W = problem.W if p.basis is None else problem.W @ p.basis
    return np.concatenate([problem.a, W.ravel()])


def catalogue_task(activation: str, K: int, dim: int, teacher_seed: int, starts: int,
                   seed: int, t_max: float, flatness: float, min_span: float) -> dict:
    """The catalogue of one teacher: ``K`` unit-norm teachers drawn from ``teacher_seed`` in
    ``dim`` dimensions, ``b = 1``, students from ``seed``."""
    rng = np.random.default_rng(teacher_seed)
    V = rng.normal(size=(K, dim))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    teacher = Problem(a=np.ones(K), W=V.copy(), b=np.ones(K), V=V, activation=activation,
                      setup={"name": "catalogue teacher", "seed": teacher_seed})
    cat = catalogue(teacher, starts=starts, seed=seed, t_max=t_max, flatness=flatness,
                    min_span=min_span)
    rows = []
    for e in cat.entries:
        rec = _point_record(e.point)
        rec |= {"basin": cat.basin(e), "visits": len(set(e.visits)), "newton": len(e.newton)}
        rows.append(rec)
    return {"entries": rows, "unresolved": cat.unresolved, "singular": cat.singular,
            "starts": starts, "points": [_order_parameters(e.point) for e in cat.entries]}


def _order_parameters(point) -> dict:
    a, Q, R, b, T = point.problem.order_parameters()
    return {"a": a.tolist(), "Q": Q.tolist(), "R": R.tolist(), "b": b.tolist(),
            "T": T.tolist()}


def online_fixed_points(points: list, activation: str, etas, tol: float = 1e-11) -> list:
    """The online-SGD ODE's fixed points continued from population critical points
    (``points``: order parameters) at each learning rate: Levenberg-Marquardt on the ODE's
    right-hand side (central-difference Jacobian), the real parts of its eigenvalues, and the
    distance from the population point."""
    from ...theory import fixed_point
    from ...training import OnlineODE

    out = []
    for i, pt in enumerate(points):
        a, Q, R, b, T = (np.asarray(pt[k], float) for k in ("a", "Q", "R", "b", "T"))
        K, M = a.size, b.size
        y = np.concatenate([a, Q.ravel(), R.ravel()])
        for eta in etas:
            ode = OnlineODE(K, M, b, T, activation, float(eta))
            fp = fixed_point(lambda x, ode=ode: ode(0.0, x), y, tol=tol, max_iter=60)
            lam = np.linalg.eigvals(fp.jac).real
            top = max(float(np.max(np.abs(lam))), 1e-300)
            sym = 0.5 * np.abs(fp.y[K:K + K * K].reshape(K, K) - fp.y[K:K + K * K].reshape(K, K).T)
            out.append({"point": i, "eta": float(eta), "residual": fp.norm,
                        "status": fp.status, "unstable": int(np.sum(lam > 1e-8 * top)),
                        "largest_rate": float(lam.max()),
                        "distance": float(np.linalg.norm(fp.y - y) / np.linalg.norm(y)),
                        "asymmetry": float(sym.max())})
            y = fp.y if fp.success else y
    return out


def single_task(activation: str, gauge: str, dim: int, t_max: float | None,
                flatness: float, min_span: float, band: float) -> dict:
    """The gauge paper's ``single`` set-up: its specialization time, the critical point its
    first plateau refines to, the distance of the trajectory from it and its unstable rate."""
    pr = single(dim, gauge, activation=activation)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    pls = plateaus(sol, pr, flatness=flatness, min_span=min_span, band=band,
                   kinds=("initial", "interior"))
    first = pls[0]
    return {"activation": activation, "gauge": gauge, "dim": dim,
            "specialization_time": float(sol.specialization_time[0]),
            "kind": first.kind, "t_end": first.stretch.t_end, "time_spent": first.time_spent,
            "distance": first.distance, **_point_record(first.point, check_hessian=False)}


def escape_point(source: dict, t_max, flatness, min_span, which: int):
    """:func:`plateau_point` (the name the escape and gauge tasks use)."""
    return plateau_point(source, t_max, flatness, min_span, which)


def realised(record: dict, teacher: Problem):
    """A :class:`Problem` at stored order parameters (for reruns of a stored point)."""
    return realize(record["a"], record["Q"], record["R"], teacher.b, teacher.V @ teacher.V.T,
                   teacher.activation)

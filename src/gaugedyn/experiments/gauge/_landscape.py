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
        v[K + i * d:K + (i + 1) * d] = point.y[K + i * d:K + (i + 1) * d]
        v /= np.linalg.norm(v)
        out.append(float(np.linalg.norm(v - N @ (N.T @ v))))
    return min(out) if out else float("nan")


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
    gauges: dict = {}
    out = {"strength": strength, "eps": list(map(float, eps)), "gauges": gauges}
    for g, cp in copies.items():
        rec = {"loss": cp.loss, "grad_norm": cp.grad_norm, "index": cp.index,
               "lambda_plus": cp.lambda_plus, "same_as_balanced": bool(same_point(cp, bal)),
               "delta": cp.problem.delta.tolist()}
        rec["escape"] = [_escape(cp, float(e), band=band) for e in eps]
        gauged = with_gauge(start, delta=cp.problem.delta)
        y0 = _state_in(cp, gauged)
        d = float(abs(cp.unstable_direction @ (y0 - cp.y)))
        rec["common_distance"] = d
        rec["common_time"] = _escape(cp, float(np.linalg.norm(y0 - cp.y)), band=band,
                                     direction=y0 - cp.y)
        gauges[g] = rec
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
            Qs[iu] = y[K:K + len(iu[0])]
            Qs = Qs + np.triu(Qs, 1).T
            return np.concatenate([y[:K], Qs.ravel(), y[K + len(iu[0]):]])

        def packed(z, K=K, iu=iu):
            return np.concatenate([z[:K], z[K:K + K * K].reshape(K, K)[iu], z[K + K * K:]])

        y0 = np.concatenate([a, Q[iu], R.ravel()])
        y = y0
        for eta in etas:
            ode = OnlineODE(K, M, b, T, activation, float(eta))
            fp = fixed_point(lambda x, ode=ode: packed(ode(0.0, full(x))), y, tol=tol,
                             max_iter=60)
            lam = np.linalg.eigvals(fp.jac).real
            top = max(float(np.max(np.abs(lam))), 1e-300)
            out.append({"point": i, "eta": float(eta), "residual": fp.norm,
                        "status": fp.status, "unstable": int(np.sum(lam > 1e-8 * top)),
                        "largest_rate": float(lam.max()),
                        "distance": float(np.linalg.norm(fp.y - y0) / np.linalg.norm(y0))})
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


# --- one task per plateau source ---------------------------------------------------------------

CONVERGED = 1e-10
"""Gradient norm below which a refined point counts as converged (the issue's target)."""


def source_task(source: dict, t_max: float, flatness: float, min_span: float, band: float,
                eps, near: float) -> dict:
    """:func:`plateau_task`, and the escape times (:func:`escape_task`) from every plateau end
    that converged below :data:`CONVERGED` with index >= 1 and that the trajectory came within
    ``near`` of."""
    pr = source_problem(source)
    sol = solve(pr, formulation="order-parameters", t_max=t_max)
    records = []
    for pl in plateaus(sol, pr, flatness=flatness, min_span=min_span, band=band,
                       kinds=("initial", "interior")):
        s = pl.stretch
        rec = {"kind": s.kind, "t_start": s.t_start, "t_end": s.t_end, "level": s.level,
               "time_spent": pl.time_spent, "distance": pl.distance,
               **_point_record(pl.point)}
        if _qualifies(rec, near):
            rec["escape"] = escape_task(pl.point, eps, band)
        records.append(rec)
    return {"source": source, "plateaus": records, "t": sol.t,
            "loss": sol.observables["loss"]}


# --- known-answer controls ---------------------------------------------------------------------


def _two_drops(t):
    return 0.01 + 0.3 / (1 + (t / 10.0) ** 4) + 0.6 / (1 + (t / 1000.0) ** 4)


def controls_task(band: float) -> dict:
    """The instruments on cases with known answers (the module ``landscape``'s protocol)."""
    from scipy.optimize import brentq

    from ..._errors import InputError
    from ...theory import escape_times, flat_stretches

    out: dict = {}
    t = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 321)])
    L = _two_drops(t)
    found = flat_stretches(t, L)
    slope = lambda x: x * abs(np.gradient(_two_drops(np.array([x * 0.999, x, x * 1.001])),  # noqa: E731
                                          np.array([x * 0.999, x, x * 1.001]))[1]) / _two_drops(x)
    lo = brentq(lambda x: slope(x) - 0.05, 12.0, 100.0)
    hi = brentq(lambda x: slope(x) - 0.05, 100.0, 900.0)
    step = t[2] / t[1]
    interior = [s for s in found if s.kind == "interior"]
    out["finder_present"] = bool(len(interior) == 1 and lo / step <= interior[0].t_start
                                 <= lo * step and hi / step <= interior[0].t_end <= hi * step)
    tt = np.concatenate([[0.0], np.geomspace(1e-3, 30.0, 200)])
    out["finder_absent"] = bool(all(
        "interior" not in [s.kind for s in flat_stretches(tt, curve)]
        for curve in ((1 + tt) ** -0.5, np.exp(-tt), 1.0 - 0.03 * tt)))
    teachers = []
    for act in ("relu", "erf"):
        pr = random_problem(7, 3, 3, np.random.default_rng(0), activation=act)
        cp = critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy()))
        teachers.append(cp.grad_norm < 1e-12 and abs(cp.loss) < 1e-12 and cp.index == 0)
    out["refiner_minimum"] = bool(all(teachers))
    saddle, lam = closed_form_saddle()
    out["refiner_saddle"] = bool(saddle.grad_norm < 1e-12 and abs(saddle.loss - 1 / 6) < 1e-12
                                 and saddle.index == 1
                                 and abs(saddle.lambda_plus - lam) <= 1e-8 * lam)
    pr = random_problem(7, 2, 2, np.random.default_rng(0), activation="erf")
    far = critical_point(pr.replace(a=pr.b + 0.3, W=pr.V * 1.3), max_iter=1)
    out["refiner_absent"] = bool(not far.success)
    esc = escape_times(saddle, [1e-2, 1e-3, 1e-4, 1e-5], band=band)
    out["escape_slope_ratio"] = float(esc["slope"] * lam)
    out["escape_present"] = bool(abs(esc["slope"] * lam - 1.0) < 0.01)
    try:
        escape_times(critical_point(pr.replace(a=pr.b.copy(), W=pr.V.copy())), [1e-2, 1e-3])
        out["escape_absent"] = False
    except InputError:
        out["escape_absent"] = True
    relu = random_problem(7, 2, 2, np.random.default_rng(2), activation="relu")
    point = critical_point(relu.replace(a=relu.b.copy(), W=relu.V.copy()))
    copies = [with_gauge(point.problem, c=[0.5, 3.0]),
              point.problem.replace(a=point.problem.a[::-1], W=point.problem.W[::-1])]
    out["dedup_present"] = bool(all(same_point(point, c) for c in copies))
    other = critical_point(relu.replace(a=0.3 * relu.b, W=relu.V[::-1].copy()))
    out["dedup_absent"] = bool(not same_point(point, other))
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


# --- analysis -------------------------------------------------------------------------------------


def _ends(sources):
    """``(source, plateau record)`` of every refined plateau end."""
    return [(r["source"], p) for _, r in sources for p in r["plateaus"]]


def control_checks(controls: dict) -> list:
    from ...harness import Claim

    words = {
        "finder_present": "the plateau finder locates the known interior flat stretch of a "
                          "two-drop curve (its ends within one sample of the roots of "
                          "|d ln L / d ln t| = flatness)",
        "finder_absent": "the plateau finder finds no interior plateau on a power law, an "
                         "exponential decay and a steady drop",
        "refiner_minimum": "the refiner keeps the teacher (ReLU and erf) as a minimum: "
                           "|grad| < 1e-12, loss < 1e-12, index 0",
        "refiner_saddle": "the refiner finds the erf single saddle a = 0, w.v = 0: loss 1/6, "
                          "index 1, lambda_+ equal to its closed form to 1e-8",
        "refiner_absent": "one iteration from a point that is not critical is not reported as "
                          "a critical point",
        "escape_present": "the escape instrument's slope on the closed-form saddle is "
                          "1/lambda_+ within 1%",
        "escape_absent": "the escape instrument refuses a minimum (no unstable direction)",
        "dedup_present": "permuted and gauge-transformed copies of a point are one entry",
        "dedup_absent": "two different critical points are two entries",
    }
    return [Claim(id=f"landscape.control.{k}", statement=w, measured=bool(controls[k]),
                  expected=True, tolerance=None, passed=bool(controls[k]))
            for k, w in words.items()]


def _qualifies(rec: dict, near: float) -> bool:
    """A plateau end refined below :data:`CONVERGED`, of index >= 1, not singular, that the
    trajectory came within ``near`` of."""
    return bool(rec["grad_norm"] <= CONVERGED and rec["index"] >= 1 and not rec["singular"]
                and rec["distance"] <= near)


def plateau_checks(sources, config: dict) -> list:
    from ...harness import Claim

    ends = [p for _, p in _ends(sources) if "hessian_error" in p]
    worst = max((p["hessian_error"] for p in ends), default=float("nan"))
    good = [(s, p) for s, p in _ends(sources) if _qualifies(p, config["near"])]
    acts = sorted({s["activation"] for s, _ in good})
    need = config["min_plateau_ends"]
    return [
        Claim(id="landscape.hessian_matches_reference",
              statement=(f"at every converged plateau end ({len(ends)}) the Hessian matches the "
                         "independent reference (autograd, or central differences of Tian's "
                         "gradient at aligned ReLU pairs) to 1e-6 relative (Frobenius); "
                         f"largest error {worst:.2e}"),
              measured=worst, expected="<= 1e-6", tolerance=1e-6,
              passed=bool(ends) and worst <= 1e-6),
        Claim(id="landscape.plateau_ends_refined",
              statement=("plateau ends the trajectory came within relative distance "
                         f"{config['near']:g} of, refined below 1e-10 with index >= 1: "
                         f"{len(good)} ({', '.join(acts) or 'none'}; "
                         + "; ".join(f"{s['activation']} K={s['K']} {s['kind']} {s['seed']}: "
                                     f"L*={p['loss']:.5g}, index {p['index']}"
                                     for s, p in good) + ")"),
              measured=len(good), expected=f">= {need}" + (" from ReLU and erf"
                                                            if need >= 2 else ""),
              tolerance=None,
              passed=len(good) >= need and (need < 2 or acts == ["erf", "relu"])),
    ]


def escape_finding(sources):
    from ...harness import judged

    readings = {}
    for src, p in _ends(sources):
        if "escape" not in p:
            continue
        e = p["escape"]
        x = np.log(1.0 / np.asarray(e["eps"]))
        for sign in ("plus", "minus"):
            y = e["lambda_plus"] * np.asarray(e[sign])
            name = (f"{src['kind']} {src['activation']} K={src['K']} seed {src['seed']}, "
                    f"{p['kind']} plateau L*={p['loss']:.5g}, {sign} v_+")
            readings[name] = judge_slope(x, y)
    first = next(iter(readings.values()))
    return judged("landscape.escape_slope",
                  ("the time spent at a saddle from a start eps along its unstable direction "
                   "grows as ln(1/eps) / lambda_+: slope of lambda_+ T on ln(1/eps) in "
                   f"[0.95, 1.05], every converged plateau end of index >= 1 ({len(readings)} "
                   "readings: saddle and sign)"),
                  first, readings=readings, expected="slope in [0.95, 1.05]")


def _mode_mismatch(p, strict: bool) -> bool:
    m = p["modes"]
    if strict:
        return m["measured"] - m["rotation"] != m["gauge"] + m["coinciding"]
    return m["measured"] != m["predicted"]


def zero_mode_claims(sources, catalogues) -> list:
    from ...harness import Claim, judged
    from ...stats import judge

    points = [p for s, p in _ends(sources) if s["activation"] == "relu"]
    points += [e for t, r in catalogues if t["activation"] == "relu" for e in r["entries"]]
    points = [p for p in points if p["grad_norm"] <= CONVERGED and not p["singular"]]
    plain = [p for p in points if not p["units"]["dead"] and not p["units"]["collapsed"]]
    a = sum(_mode_mismatch(p, True) for p in plain)
    b = sum(_mode_mismatch(p, False) for p in points)
    ja = judge("deterministic", [float(a)], threshold=0.5, direction="<")
    jb = judge("deterministic", [float(b)], threshold=0.5, direction="<")
    erf = [p for s, p in _ends(sources) if s["activation"] == "erf"]
    erf += [e for t, r in catalogues if t["activation"] == "erf" for e in r["entries"]]
    erf = [p for p in erf if p["grad_norm"] <= CONVERGED
           and np.isfinite(p.get("rescaling_residual", np.nan))]  # nan: no active unit
    low = min((p["rescaling_residual"] for p in erf), default=float("nan"))
    return [
        judged("landscape.zero_modes",
               ("ReLU: at every converged point without dead units the zero eigenvalues "
                "(below 1e-8 of the largest) less the rotations fixing the teacher number the "
                "active units plus the redistributions of coinciding units; value: the number "
                f"of points where they differ, of {len(plain)}"),
               ja, readings={"points without dead units": ja,
                             f"all {len(points)} points, dead units' free weights predicted": jb},
               expected="0 points differ"),
        Claim(id="landscape.erf_no_gauge_modes",
              statement=(f"erf: at every converged point ({len(erf)}) the rescaling generators "
                         "(-a_i, w_i) are not zero modes (smallest distance of a unit "
                         f"generator from the null space {low:.2e}, above 1e-3)"),
              measured=low, expected="> 1e-3", tolerance=1e-3,
              passed=bool(erf) and low > 1e-3),
    ]


def gauge_claims(res: dict, config: dict) -> list:
    from ...harness import Claim, judged
    from ...stats import judge

    g = res["gauges"]
    same = all(g[k]["same_as_balanced"] for k in g)
    la, lw = g["a-heavy"]["lambda_plus"], g["w-heavy"]["lambda_plus"]
    rate = judge("deterministic", [abs(float(np.log(la / lw)))], threshold=float(np.log(1.1)),
                 direction=">")
    clock_a = la * g["a-heavy"]["common_time"]
    clock_w = lw * g["w-heavy"]["common_time"]
    clock = judge("deterministic", [abs(float(np.log(clock_a / clock_w)))],
                  threshold=float(np.log(1.05)), direction="<")
    s = config["gauge_strength"]
    return [
        Claim(id="landscape.gauge_same_saddle",
              statement=(f"the ReLU saddle in the balanced, a-heavy and w-heavy gauges (strength "
                         f"{s:g}) is one critical point (same_point) and each copy is critical "
                         "below 1e-10"),
              measured=bool(same), expected=True, tolerance=None,
              passed=bool(same and all(g[k]["grad_norm"] <= CONVERGED for k in g))),
        judged("landscape.gauge_rate",
               (f"a-heavy and w-heavy copies of one ReLU saddle (strength {s:g}) have different "
                f"unstable rates: |ln(lambda_a / lambda_w)| > ln 1.1 (lambda_a = {la:.4g}, "
                f"lambda_w = {lw:.4g})"), rate, expected="> ln 1.1"),
        judged("landscape.gauge_clock",
               ("from one initial function near the saddle, the time spent scales as "
                "1/lambda_+ across gauges: |ln(lambda_a T_a / (lambda_w T_w))| < ln 1.05 "
                f"(lambda T = {clock_a:.4g} a-heavy, {clock_w:.4g} w-heavy; the distances "
                f"along each copy's unstable direction {g['a-heavy']['common_distance']:.3g}, "
                f"{g['w-heavy']['common_distance']:.3g})"), clock, expected="< ln 1.05"),
    ]


def catalogue_checks(catalogues) -> list:
    from ...harness import Claim

    worst = max((e["grad_norm"] for _, r in catalogues for e in r["entries"]),
                default=float("nan"))
    n = sum(len(r["entries"]) for _, r in catalogues)
    return [Claim(id="landscape.catalogue_refined",
                  statement=(f"every catalogue entry ({n}, ReLU and erf, K = M in "
                             f"{sorted({t['K'] for t, _ in catalogues})}) is refined below "
                             f"1e-10 (largest {worst:.1e})"),
                  measured=worst, expected="<= 1e-10", tolerance=CONVERGED,
                  passed=bool(n) and worst <= CONVERGED)]


def catalogue_table(catalogues) -> list:
    rows = []
    for t, r in catalogues:
        for e in r["entries"]:
            b = e["basin"]
            rows.append({"activation": t["activation"], "K": t["K"], "loss": e["loss"],
                         "grad_norm": e["grad_norm"], "index": e["index"],
                         "lambda_plus": e["unstable_rates"][0] if len(e["unstable_rates"]) else None,
                         "zero_modes": e["modes"]["measured"],
                         "predicted": e["modes"]["predicted"],
                         "basin": [b["count"], b["share"], b["low"], b["high"]],
                         "visits": e["visits"], "newton": e["newton"]})
        rows.append({"activation": t["activation"], "K": t["K"],
                     "unresolved": len(r["unresolved"]), "singular": r["singular"],
                     "starts": r["starts"]})
    return rows


def judge_slope(x, y):
    """The escape finding's judgement of one reading: slope of ``lambda_+ T`` on ``ln(1/eps)``
    in ``[0.95, 1.05]`` (rule ``slope_band``)."""
    from ...stats import judge

    return judge("slope_band", np.asarray(x, float), np.asarray(y, float),
                 threshold=(0.95, 1.05))


def arrays_of(by: dict) -> dict:
    """The stored arrays the figures are drawn from."""
    arrays: dict = {}
    for t, r in by["catalogue"]:
        key = f"{t['activation']}_K{t['K']}"
        rows = [[e["loss"], e["index"], e["basin"]["share"], e["basin"]["low"],
                 e["basin"]["high"], e["visits"], e["newton"]] for e in r["entries"]]
        arrays[f"catalogue_{key}"] = np.array(rows, dtype=float).reshape(-1, 7)
    k = 0
    labels = []
    for src, p in _ends(by["source"]):
        if "escape" not in p:
            continue
        e = p["escape"]
        arrays[f"escape_{k}"] = np.stack([np.log(1 / np.asarray(e["eps"])),
                                          e["lambda_plus"] * np.asarray(e["plus"]),
                                          e["lambda_plus"] * np.asarray(e["minus"])])
        labels.append(f"{src['activation']} K={src['K']} ({src['kind']} {src['seed']}), "
                      f"lambda_+ = {e['lambda_plus']:.3g}")
        k += 1
    arrays["escape_labels"] = np.array(labels)
    slopes = []
    for j in range(k):
        x, plus, minus = arrays[f"escape_{j}"]
        for y in (plus, minus):
            b = judge_slope(x, y)
            slopes.append([b.estimate, b.low, b.high])
    arrays["escape_slopes"] = np.array(slopes, dtype=float).reshape(-1, 3)
    g = by["gauge"][0][1]["gauges"]
    arrays["gauge"] = np.array([[g[n]["lambda_plus"], g[n]["common_time"],
                                 g[n]["common_distance"]] for n in ("a-heavy", "balanced",
                                                                    "w-heavy")])
    single = [r for _, r in by["single"]]
    arrays["single"] = np.array([[r["activation"] == "erf", r["gauge"] == "w-heavy", r["dim"],
                                  r["specialization_time"], r["distance"], r["loss"],
                                  r["index"], r["unstable_rates"][0] if len(r["unstable_rates"])
                                  else np.nan, r["grad_norm"]] for r in single], dtype=float)
    arrays["caption_landscape_catalogue"] = np.array(
        "Critical points found from random starts (flow ends, plateaus, Newton), merged up to "
        "permutation, gauge, sign flips and rotations: loss against entry, colour by index "
        "(0: minimum), bars: share of starts whose flow ends there with its 95% "
        "Clopper-Pearson interval.")
    arrays["caption_landscape_escape"] = np.array(
        "Time spent at each refined plateau saddle, times its lambda_+, against ln(1/eps) for "
        "starts eps along the unstable direction (both signs); the theory's slope is 1.")
    arrays["caption_landscape_gauge"] = np.array(
        "One ReLU saddle in three gauges: the unstable rate lambda_+, and from one initial "
        "function the time spent T and lambda_+ T.")
    return arrays

"""The online ODE of every activation: the compiled right-hand side against the numpy reference.

For each activation (``--activations``; K = M = 4 from ``random_problem(50, ...)``, fields of
full rank 8, eta = 1, batch 1):

1. one right-hand side at the initial state, the compiled one (`compiled_rhs`) and the
   numpy reference (`OnlineODE`), timed in interleaved rounds (CPU and wall seconds, medians),
   with their largest relative difference (the same rules: round-off) and the noise term's
   method (``noise_method()``: orthant moments for the piecewise-linear activations, the
   scrambled-Sobol rule for tanh and softplus, four-point quadrature for the other smooth ones);
2. the same with weight decay 0.1, ``lr2`` 0.5 and label noise 0.3 (the classical options);
3. ``online_ode(..., method="compiled")`` to ``--t-max`` (default 1000) at ``--rtol`` (default
   ``online_ode``'s, 1e-9; ``atol = rtol / 100``), once, plain and with the options: CPU
   seconds, the right-hand sides LSODA asked for, the noise terms evaluated among them (fewer
   where the noise term is held once per time point, `_online_ode.NOISE_LAG`; the rule is
   recorded), the flow's Jacobians
   (`compiled_flow_jacobian`, counted) and any right-hand sides of the flow alone, without the
   noise term, evaluated apart, and the ratio of each to the plain compiled
   erf run (measured in the same process, same tolerances); a run is stopped, and marked
   unfinished, after ``--budget`` right-hand sides (default 5000); with ``--runs N`` each run is made N
   times and the run of median CPU time is reported, every run's CPU seconds beside it.

    .venv/bin/python benchmarks/bench_online_ode.py [--rounds 3] [--t-max 1000] [--rtol 1e-9]
        [--budget 5000] [--runs 1]
        [--activations tanh,softplus,leaky_relu] [--json benchmarks/results/online_ode.json]

It prints the machine (CPU model, cores, load); ``--json`` writes the figures as a benchmark
record (``benchmarks/_record.py``), each finished measurement stored at once in
``PATH.partial``: a killed run resumes there when rerun with the same options.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gaugedyn.theory import random_problem
from gaugedyn.training import OnlineODE, _online_ode, online_ode

OPTIONS = {"weight_decay": 0.1, "lr2": 0.5, "label_noise": 0.3}


def _timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - t0, out


def _problem(name):
    return random_problem(50, 4, 4, np.random.default_rng(0), activation=name)


def rhs_rounds(name: str, options: dict, rounds: int) -> dict:
    """Section 1 or 2 for one activation: medians of interleaved rounds and the agreement."""
    problem = _problem(name)
    a, Q, R, b, T = problem.order_parameters()
    y = np.concatenate([a, Q.ravel(), R.ravel()])
    opts = {"weight_decay": 0.0, "lr2": 1.0, "label_noise": 0.0} | options
    fast = _online_ode.compiled_rhs(4, 4, b, T, 1.0, 1, True, activation=name, **opts)
    ref = OnlineODE(4, 4, b, T, name, 1.0, 1, True, **opts)
    fast(0.0, y)  # compile outside the timing
    times: dict = {"compiled": ([], []), "reference": ([], [])}
    for _ in range(rounds):
        for label, fn in (("reference", ref), ("compiled", fast)):
            cpu, wall, out = _timed(lambda fn=fn: fn(0.0, y))
            times[label][0].append(cpu)
            times[label][1].append(wall)
    r, f = ref(0.0, y), fast(0.0, y)
    med = {
        k: {"cpu": statistics.median(v[0]), "wall": statistics.median(v[1])}
        for k, v in times.items()
    }
    return {
        **med,
        "ratio_cpu": med["reference"]["cpu"] / med["compiled"]["cpu"],
        "rel_diff": float(np.abs(f - r).max() / np.abs(r).max()),
        "noise_method": _online_ode.noise_method(name),
    }


class _Budget(Exception):
    """A run stopped at its budget of right-hand sides."""


def trajectory(name: str, options: dict, t_max: float, rtol: float | None, budget: int) -> dict:
    """Section 3: one compiled run to ``t_max``, its CPU and wall seconds and its right-hand
    sides (counted by wrapping the integration's `_online_ode.NoiseRule`: those LSODA asked
    for; and the compiled right-hand side: the whole ones, each one noise term, and apart the
    flow's without the noise term); stopped, and marked unfinished, after ``budget``
    right-hand sides."""
    count, flow, jacobians, limit, calls, rules = [0], [0], [0], [None], [0], []
    original = _online_ode.compiled_rhs
    original_jac = _online_ode.compiled_flow_jacobian
    original_rule = _online_ode.NoiseRule

    class Counted(original_rule):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            rules.append(self.rule)

        def __call__(self, t, y):
            calls[0] += 1
            if limit[0] is not None and calls[0] > limit[0]:
                raise _Budget
            return super().__call__(t, y)

    def counting(*args, **kw):
        f = original(*args, **kw)
        noise = args[6] if len(args) > 6 else kw.get("noise", True)
        if not noise:

            def g0(t, y):
                flow[0] += 1
                return f(t, y)

            return g0

        def g(t, y):
            count[0] += 1
            return f(t, y)

        return g

    def counting_jac(*args, **kw):
        jac = original_jac(*args, **kw)

        def j(t, y):
            jacobians[0] += 1
            return jac(t, y)

        return j

    problem = _problem(name)
    times = np.linspace(0.0, t_max, 101)
    tol = {} if rtol is None else {"rtol": rtol, "atol": rtol / 100}
    _online_ode.compiled_rhs = counting
    _online_ode.compiled_flow_jacobian = counting_jac
    _online_ode.NoiseRule = Counted
    try:
        calls[0], limit[0] = 0, budget
        try:  # compile, at the run's tolerances and budget (a stalled warm-up is bounded too)
            online_ode(problem, 1.0, times[:2], method="compiled", **tol, **options)
        except _Budget:
            pass
        if name != "erf":  # the flow's Jacobian too (a short run may stay in Adams mode)
            a0, Q0, R0, b, T = problem.order_parameters()
            y0 = np.concatenate([a0, Q0.ravel(), R0.ravel()])
            wd, lr2 = options.get("weight_decay", 0.0), options.get("lr2", 1.0)
            original_jac(name, 4, 4, b, T, 1.0, wd, lr2)(0.0, y0)
        count[0] = flow[0] = jacobians[0] = calls[0] = 0
        rules.clear()
        c0, t0 = time.process_time(), time.perf_counter()
        finished = True
        try:
            online_ode(problem, 1.0, times, method="compiled", **tol, **options)
        except _Budget:
            finished = False
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    finally:
        _online_ode.compiled_rhs = original
        _online_ode.compiled_flow_jacobian = original_jac
        _online_ode.NoiseRule = original_rule
    n = min(calls[0], budget)
    return {
        "cpu": cpu,
        "wall": wall,
        "rhs": n,
        "noise_terms": count[0],
        "noise_rule": rules[-1] if rules else None,
        "flow_rhs": flow[0],
        "jacobians": jacobians[0],
        "ms_per_rhs": 1e3 * cpu / max(n, 1),
        "finished": finished,
    }


def repeated(name: str, options: dict, t_max: float, rtol: float | None, budget: int, runs: int):
    """`trajectory()` ``runs`` times in one process: the run of median CPU time, with every
    run's CPU seconds (``cpu_runs``) beside it where there are several. One run on a shared
    machine varies by several percent; a figure compared with a bar is the median of a few."""
    out = [trajectory(name, options, t_max, rtol, budget) for _ in range(runs)]
    if runs == 1:
        return out[0]
    cpus = [t["cpu"] for t in out]
    middle = sorted(range(runs), key=lambda i: cpus[i])[(runs - 1) // 2]
    return dict(out[middle], cpu_runs=cpus)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--t-max", type=float, default=1000.0)
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--budget", type=int, default=5000, help="right-hand sides per run, at most")
    p.add_argument("--activations", default="tanh,softplus,leaky_relu")
    p.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs to t-max of each activation and variant; the median CPU run is reported",
    )
    p.add_argument("--json", default=None, help="write the figures as a benchmark record")
    p.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="with --json: start no measurement after this many wall seconds (exit 3; rerun resumes)",
    )
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs {args.runs}: at least 1 run is needed")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _record import Progress, describe_machine

    print(describe_machine())
    names = [n for n in args.activations.split(",") if n]
    config = {
        "t_max": args.t_max,
        "rtol": args.rtol,
        "budget": args.budget,
        "rounds": args.rounds,
        "runs": args.runs,
        "K": 4,
        "M": 4,
    }
    progress = (
        Progress(args.json, "bench_online_ode.py", config, argv, args.stop_after)
        if args.json
        else None
    )

    def unit(key, compute):
        return progress.unit(key, compute) if progress else compute()

    variants = (("plain", {}), ("options", OPTIONS))
    erf = {
        k: unit(
            f"erf/run/{k}", lambda o=o: trajectory("erf", o, args.t_max, args.rtol, args.budget)
        )
        for k, o in variants
    }
    print(
        f"erf, compiled, to t = {args.t_max:g}: plain {erf['plain']['cpu']:.3f} CPU s "
        f"({erf['plain']['rhs']} right-hand sides, {erf['plain'].get('noise_terms', '?')} noise "
        f"terms), options {erf['options']['cpu']:.3f} CPU s",
        flush=True,
    )
    rows = {}
    for name in names:
        row: dict = {"rhs": {}, "run": {}}
        for k, o in variants:
            row["rhs"][k] = unit(
                f"{name}/rhs/{k}", lambda o=o, name=name: rhs_rounds(name, o, args.rounds)
            )
            row["run"][k] = t = dict(
                unit(
                    f"{name}/run/{k}",
                    lambda o=o, name=name: repeated(
                        name, o, args.t_max, args.rtol, args.budget, args.runs
                    ),
                )
            )
            r = row["rhs"][k]
            t["to_erf_plain"] = t["cpu"] / erf["plain"]["cpu"]
            print(
                f"{name:11s} {k:8s} one rhs: compiled {1e3 * r['compiled']['cpu']:.1f} ms, "
                f"reference {1e3 * r['reference']['cpu']:.1f} ms CPU ({r['ratio_cpu']:.1f}x), "
                f"rel. diff {r['rel_diff']:.1e}; to t = {args.t_max:g}: {t['cpu']:.1f} CPU s "
                f"({t['rhs']} rhs, {t.get('noise_terms', t['rhs'])} noise terms"
                f"{', ' + t['noise_rule'] if t.get('noise_rule') else ''}, "
                f"{t.get('jacobians', 0)} compiled flow Jacobians and "
                f"{t.get('flow_rhs', 0)} rhs of the flow alone, "
                f"{t['ms_per_rhs']:.2f} ms per rhs; {t['to_erf_plain']:.0f}x erf)"
                + ("" if t["finished"] else f"; unfinished at the budget of {args.budget} rhs"),
                flush=True,
            )
        rows[name] = row
    if progress:
        progress.finish(
            {
                "t_max": args.t_max,
                "rtol": args.rtol or 1e-9,
                "K": 4,
                "M": 4,
                "erf": erf,
                "activations": rows,
            }
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmarks of the population-theory solvers, measured side by side in one run.

    .venv/bin/python benchmarks/bench_theory.py [--batch 1024] [--loop 32] [--loop-all]

1. the batched Rodas4 integrator on ``--batch`` initial conditions (``single`` set-ups, random
   D in [10, 300], gauge and scale) against a loop of ``solve_ivp`` calls on the same problems at
   the same tolerance, each run to its specialization time; the loop is timed on ``--loop`` of them
   (all with ``--loop-all``) and its per-trajectory cost scaled to the batch; the largest
   disagreements are printed;
2. the order-parameter flow at D = 1e6 against D = 10 for the same initial order parameters, and
   the weight-space / span flows' cost as D grows;
3. the w-heavy ``single`` set-up to its specialization time at D = 10 ... 1e5, with the
   specialization time checked against a tighter solve;
4. one trajectory, ReLU K = M = 4 to t = 1000 at rtol 1e-8: ``solve`` (method ``auto``)
   against ``solve_ivp(LSODA)`` on the package's right-hand side and exact Jacobian, CPU and
   wall time of interleaved repeats, and the largest disagreement of the outputs;
5. wide students: one trajectory to t = 1000 at K = M = 4 ... ``--k-max``, ``solve`` against
   LSODA at K = 32, and the fitted exponent of cost against K;
6. tight tolerance: the D = 1000 a-heavy ``single`` set-up at rtol 1e-10 and 1e-11, steps and
   CPU time of ``solve`` against ``solve_ivp(LSODA)``;
7. the call a user would write first: one trajectory, random ReLU K = M (D = max(50, 2(K + M)),
   seed 0) to t = 1000 on 241 log-spaced output times, at K = 2, 4, 8, 16, 32, 64: the default
   ``solve`` against ``scipy.integrate.solve_ivp(rhs, method="LSODA")`` without a Jacobian and
   with the exact one, all at rtol 1e-8, atol 1e-10, CPU and wall time of interleaved repeats;
   each one's largest error over the outputs against a tight reference (`USER_CALL`: LSODA on
   the compiled right-hand side at rtol 1e-11; DOP853 is held to short steps by the flow's
   stiffness, t = 247 of 1000 in 861 s at K = 4); each call is made once on a short horizon
   before the timing (numba's load, the first calls); where the default is the less accurate, it
   is rerun at a tenth of its tolerance until it is not (matched accuracy). ``--json PATH``
   writes the rows as a benchmark record (``benchmarks/results/``).

    .venv/bin/python benchmarks/bench_theory.py --only 4,5,6   # the integrator cases alone
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gaugedyn.theory import Problem, random_problem, single, solve, solve_batch


def _best(fn, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def batched_vs_loop(n_batch: int, n_loop: int, loop_all: bool, rtol=1e-8, atol=1e-10):
    rng = np.random.default_rng(2024)
    dims = np.exp(rng.uniform(np.log(10), np.log(300), n_batch)).astype(int)
    gauges = rng.choice(["w-heavy", "a-heavy"], n_batch)
    scales = rng.uniform(0.5, 2.0, n_batch)
    problems = [single(int(d), str(g), float(s)) for d, g, s in zip(dims, gauges, scales)]
    t_max = 1e5
    t_eval = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 161)])
    kw = dict(t_max=t_max, t_eval=t_eval, stop_at_specialization=True)
    t0 = time.perf_counter()
    batch = solve_batch(problems, rtol=rtol, atol=atol, **kw)
    t_batch = time.perf_counter() - t0
    ref = solve_batch(problems, rtol=1e-11, atol=1e-13, **kw)
    err_batch = np.abs(batch.specialization_time / ref.specialization_time - 1)
    idx = np.arange(n_batch) if loop_all else np.sort(rng.choice(n_batch, n_loop, replace=False))
    sub = [problems[i] for i in idx]
    print(
        f"[1] batched Rodas4 vs a loop of solve_ivp calls: {n_batch} single set-ups (D in "
        f"[10, 300], random gauge and scale), each to its specialization time"
    )
    print(
        f"    batched rodas rtol={rtol:g}: {t_batch:6.2f} s for {n_batch} "
        f"({1e3 * t_batch / n_batch:.2f} ms/trajectory, mean steps "
        f"{np.mean([d['nsteps'] for d in batch.diagnostics]):.0f}); spec-time error vs "
        f"rtol=1e-11: max {err_batch.max():.1e} (all), {err_batch[idx].max():.1e} (loop subset)"
    )
    note = "measured on all" if loop_all else f"timed on {len(sub)}, scaled to {n_batch}"
    ratios = {}
    for method in ("Radau", "LSODA"):
        for loop_rtol in (rtol, rtol / 10, rtol / 100):
            t0 = time.perf_counter()
            loop = solve_batch(
                sub, method=method, rtol=loop_rtol, atol=loop_rtol * atol / rtol, **kw
            )
            per = (time.perf_counter() - t0) / len(sub)
            err = np.abs(loop.specialization_time / ref.specialization_time[idx] - 1).max()
            d_spec = np.abs(loop.specialization_time / batch.specialization_time[idx] - 1).max()
            both = np.isfinite(batch.observables["rho"][idx]) & np.isfinite(loop.observables["rho"])
            d_rho = np.abs(batch.observables["rho"][idx] - loop.observables["rho"])[both].max()
            est = per * n_batch
            matched = err <= err_batch[idx].max()
            print(
                f"    loop {method:5s} rtol={loop_rtol:.0e}: {1e3 * per:6.1f} ms/trajectory "
                f"({est:6.1f} s for {n_batch}, {note}); speed-up x{est / t_batch:4.0f}; "
                f"spec-time error {err:.1e}{' (matched)' if matched else ''}; max disagreement "
                f"with batch: spec time {d_spec:.1e} rel, rho {d_rho:.1e}"
            )
            if loop_rtol == rtol:
                ratios[(method, "same tolerance")] = est / t_batch
            if matched:
                ratios[(method, "matched accuracy")] = est / t_batch
                break
    for key, value in ratios.items():
        print(f"    speed-up vs {key[0]} at {key[1]}: x{value:.0f}")
    return ratios


def order_parameter_cost():
    base = random_problem(10, 3, 2, np.random.default_rng(7))
    D = 10**6
    W = np.zeros((3, D))
    V = np.zeros((2, D))
    W[:, :10], V[:, :10] = base.W, base.V
    big = Problem(a=base.a, W=W, b=base.b, V=V, activation=base.activation)
    kw = dict(t_max=100.0, rtol=1e-8, atol=1e-10, method="rodas")
    t_small, s_small = _best(lambda: solve(base, **kw), repeat=5)
    t_big, s_big = _best(lambda: solve(big, **kw), repeat=5)
    diff = np.max(np.abs(s_small.observables["loss"] - s_big.observables["loss"]))
    print(
        "[2] order-parameter flow (K=3, M=2, relu, rodas, t_max=100), same initial order "
        "parameters embedded in D dimensions (best of 5; the solve computes Q, R from W, V)"
    )
    print(
        f"    D=10: {t_small:.3f} s   D=1e6: {t_big:.3f} s   ratio {t_big / t_small:.2f} "
        f"(target <= 1.2); loss trajectories differ by {diff:.1e}"
    )
    print(
        "    the three formulations as D grows (random K=3, M=2, relu, t_max=10, DOP853 "
        "rtol=1e-8 for all three, best of 3)"
    )
    for D in (10, 100, 1000, 10_000, 100_000, 1_000_000):
        pr = random_problem(D, 3, 2, np.random.default_rng(8))
        line = f"    D={D:>8d}:"
        for form in ("weight-space", "span", "order-parameters"):
            if form == "weight-space" and D > 100_000:
                line += f" {form} (skipped: {3 * D}-dimensional state)"
                continue
            t, _ = _best(
                lambda pr=pr, form=form: solve(pr, formulation=form, method="DOP853", t_max=10.0)
            )
            line += f" {form} {t:7.3f} s "
        print(line)
    return t_big / t_small


def w_heavy_scaling():
    print(
        "[3] w-heavy single set-up (s=1) to its specialization time, rodas rtol=1e-8 "
        "(best of 3); reference: rtol=1e-11"
    )
    out = {}
    for D in (10, 100, 1000, 10_000, 100_000):
        pr = single(D, "w-heavy")
        t, sol = _best(lambda pr=pr: solve(pr, method="rodas", stop_at_specialization=True))
        ref = solve(pr, method="rodas", rtol=1e-11, atol=1e-13, stop_at_specialization=True)
        err = abs(sol.specialization_time[0] / ref.specialization_time[0] - 1)
        out[D] = (t, err)
        print(
            f"    D={D:>7d}: {t:6.3f} s  steps {sol.diagnostics['nsteps']:4d}  "
            f"t_spec={sol.specialization_time[0]:.8e} (t_spec/(sD)={sol.specialization_time[0] / D:.4f})"
            f"  rel. error vs tighter solve {err:.1e}"
        )
    print(f"    cost ratio D=1e5 / D=10: {out[100_000][0] / out[10][0]:.2f} (target <= 3)")
    return out


def _timed(fn):
    """``(cpu seconds, wall seconds, result)`` of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def _interleaved(fns: dict, repeat: int):
    """Medians of CPU and wall time of each of ``fns``, run in turn ``repeat`` times."""
    cpu = {k: [] for k in fns}
    wall = {k: [] for k in fns}
    out = {}
    for _ in range(repeat):
        for k, fn in fns.items():
            c, w, out[k] = _timed(fn)
            cpu[k].append(c)
            wall[k].append(w)
    return (
        {k: float(np.median(v)) for k, v in cpu.items()},
        {k: float(np.median(v)) for k, v in wall.items()},
        out,
    )


def _scipy_lsoda(problem, t_max, t_eval, rtol, atol):
    from scipy.integrate import solve_ivp

    from gaugedyn.theory import initial_state, jacobian, rhs

    y0, p = initial_state(problem)
    return solve_ivp(
        lambda t, y: rhs(t, y, p),
        (0.0, t_max),
        y0,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        jac=lambda t, y: jacobian(t, y, p),
        t_eval=t_eval,
    )


def _state(sol):
    from gaugedyn.theory._flows import pack_order_parameters

    return pack_order_parameters(sol.a, sol.Q, sol.R)


def single_trajectory(repeat: int = 3, rtol=1e-8, atol=1e-10):
    pr = random_problem(50, 4, 4, np.random.default_rng(0))
    t_eval = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 241)])
    kw = dict(t_max=1e3, t_eval=t_eval, rtol=rtol, atol=atol)
    cpu, wall, out = _interleaved(
        {
            "solve": lambda: solve(pr, method="auto", **kw),
            "LSODA": lambda: _scipy_lsoda(pr, 1e3, t_eval, rtol, atol),
        },
        repeat,
    )
    diff = np.max(np.abs(_state(out["solve"]) - out["LSODA"].y.T))
    d = out["solve"].diagnostics
    print(
        f"[4] one trajectory, random ReLU K=M=4 (D=50, seed 0) to t=1000, rtol={rtol:g}, "
        f"median of {repeat} interleaved runs"
    )
    print(
        f"    solve (method {d['method']}): cpu {cpu['solve']:.2f} s, wall {wall['solve']:.2f} s"
        f", {d['nsteps']} steps, {d['nfev']} f, {d['njev']} J"
    )
    print(
        f"    solve_ivp(LSODA, exact J): cpu {cpu['LSODA']:.2f} s, wall {wall['LSODA']:.2f} s, "
        f"{len(out['LSODA'].t)} outputs, {out['LSODA'].nfev} f, {out['LSODA'].njev} J"
    )
    print(
        f"    ratio solve / LSODA: cpu {cpu['solve'] / cpu['LSODA']:.2f}, wall "
        f"{wall['solve'] / wall['LSODA']:.2f}; largest disagreement of the state {diff:.1e}"
    )
    return cpu["solve"] / cpu["LSODA"], diff


def wide_students(k_max: int = 64):
    print(
        f"[5] one trajectory to t=1000, random ReLU K=M (D=100, seed 0), rtol=1e-8, K up to "
        f"{k_max}; solve (auto) CPU time"
    )
    ks, cpus = [], []
    for K in (4, 8, 16, 32, 64):
        if K > k_max:
            break
        pr = random_problem(100, K, K, np.random.default_rng(0))
        c, w, sol = _timed(lambda pr=pr: solve(pr, t_max=1e3, t_eval=[0.0, 1e3], method="auto"))
        d = sol.diagnostics
        ks.append(K)
        cpus.append(c)
        print(
            f"    K={K:3d} (n={sol.a.shape[1] + K * (K + 1) // 2 + K * K:5d}): cpu {c:7.2f} s, "
            f"wall {w:7.2f} s, method {d['method']}, {d['nsteps']} steps, {d['nfev']} f"
        )
        if K == 32:
            cl, wl, ref = _timed(lambda pr=pr: _scipy_lsoda(pr, 1e3, [0.0, 1e3], 1e-8, 1e-10))
            diff = np.max(np.abs(_state(sol)[-1] - ref.y[:, -1]))
            print(
                f"    K= 32 solve_ivp(LSODA, exact J): cpu {cl:.2f} s, wall {wl:.2f} s; ratio "
                f"solve / LSODA cpu {c / cl:.2f}, wall {w / wl:.2f}; final states differ by "
                f"{diff:.1e}"
            )
    if len(ks) >= 3:
        slope = np.polyfit(np.log(ks[1:]), np.log(cpus[1:]), 1)[0]
        print(f"    cost against K (K >= 8): exponent {slope:.2f} (target <= 3)")


def tight_tolerance():
    from scipy.integrate import solve_ivp

    from gaugedyn.theory import initial_state, jacobian, rhs

    pr = single(1000, "a-heavy")
    y0, p = initial_state(pr)
    print("[6] D=1000 a-heavy single set-up to its default t_max (100), steps and CPU time")
    for rtol in (1e-10, 1e-11):
        kw = dict(rtol=rtol, atol=1e-2 * rtol)
        cpu, wall, out = _interleaved(
            {
                "solve": lambda kw=kw: solve(pr, method="auto", **kw),
                "LSODA": lambda kw=kw: solve_ivp(
                    lambda t, y: rhs(t, y, p),
                    (0.0, 100.0),
                    y0,
                    method="LSODA",
                    jac=lambda t, y: jacobian(t, y, p),
                    **kw,
                ),
            },
            3,
        )
        steps = out["solve"].diagnostics["nsteps"], len(out["LSODA"].t) - 1
        print(
            f"    rtol={rtol:g}: solve ({out['solve'].diagnostics['method']}) {steps[0]} steps, "
            f"cpu {cpu['solve']:.2f} s; solve_ivp(LSODA) {steps[1]} steps, cpu "
            f"{cpu['LSODA']:.2f} s; steps ratio {steps[0] / steps[1]:.2f}, cpu ratio "
            f"{cpu['solve'] / cpu['LSODA']:.2f}, wall ratio {wall['solve'] / wall['LSODA']:.2f}"
        )


def _errors(y, ref) -> float:
    return float(np.max(np.abs(y - ref)))


class _Budget:
    """A terminal event of ``solve_ivp`` that ends the run once it has used ``cpu`` CPU seconds
    or ``wall`` wall seconds (``None``: no limit): from the first step that ends past the budget
    (at ``t_stop``) it is -1 at ``t >= t_stop`` and +1 before, so the event's root is that step's
    end and the outputs up to it are kept. The run's CPU time when stopped is a lower bound of
    its cost."""

    terminal = True

    def __init__(self, cpu: float | None, wall: float | None):
        self.cpu, self.wall = cpu, wall
        self.c0, self.w0 = time.process_time(), time.perf_counter()
        self.t_stop = np.inf

    def __call__(self, t, y) -> float:
        if self.t_stop == np.inf and (
            (self.cpu is not None and time.process_time() - self.c0 > self.cpu)
            or (self.wall is not None and time.perf_counter() - self.w0 > self.wall)
        ):
            self.t_stop = t
        return 1.0 if t < self.t_stop else -1.0


def _user_lsoda(problem, t_eval, rtol, atol, exact: bool, budget=None):
    """``solve_ivp(rhs, method="LSODA")`` as a user writes it, with or without ``jac``;
    ``budget`` (``(cpu s, wall s)``) stops it there (`_Budget`: ``sol.status == 1``)."""
    from scipy.integrate import solve_ivp

    from gaugedyn.theory import initial_state, jacobian, rhs

    y0, p = initial_state(problem)
    kw = {"jac": lambda t, y: jacobian(t, y, p)} if exact else {}
    if budget is not None:
        kw["events"] = _Budget(*budget)
    return solve_ivp(
        lambda t, y: rhs(t, y, p),
        (0.0, float(t_eval[-1])),
        y0,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        t_eval=t_eval,
        **kw,
    )


USER_CALL = {
    "t_max": 1e3,
    "rtol": 1e-8,
    "atol": 1e-10,
    "outputs": 241,
    "ref_method": "lsoda-compiled",
    "ref_rtol": 1e-11,
}
"""Section 7's shared configuration (a stored partial run resumes only under the same). The
reference: LSODA on the compiled right-hand side at rtol 1e-11 (atol rtol / 100; from K =
`BIG_K` on `BIG_CALL`'s instead). At 1e-12
no LSODA variant finishes (the ReLU flow's kink at alignment; `TIGHT_RTOL`'s docstring), and
the compiled one stops there with "excess work"; at K = M = 4 (2026-12-06) the 1e-11 run
took 4.4 CPU s (63,305 Jacobians) and agreed with ``method="rodas"`` at rtol 1e-11 to 3.3e-10
over the outputs rodas reached (t <= 433, its 50,000 steps), while the default's errors at
rtol 1e-8 are about 5e-9."""


def user_call(
    ks=(2, 4, 8, 16, 32, 64), repeat: int = 3, big_repeat: int = 1, unit=None, scratch=None
):
    """Section 7 (module docstring): rows of CPU and wall medians, errors and ratios; each K's
    row through ``unit(key, compute)`` (a `_record.Progress`: stored at once, resumable). From
    K = `BIG_K` on (one run of each call, nothing to interleave) each call of a row is a unit of
    its own (the reference, each LSODA call, the default at each tolerance tried), so a chunked
    run (``--stop-after``) can stop between them; the reference's outputs wait for the calls
    they check in ``scratch`` (a folder; the stored record holds only its cost)."""
    t_max = USER_CALL["t_max"]
    t_eval = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 241)])
    print(
        "[7] one trajectory, random ReLU K = M (D = max(50, 2(K+M)), seed 0) to t = 1000, "
        "241 outputs, rtol 1e-8: default solve against solve_ivp(LSODA) without and with the "
        "exact Jacobian (CPU / wall medians of interleaved repeats; errors against a tight "
        "reference)"
    )
    step = unit or (lambda key, f: f())
    rows = []
    for K in ks:
        if K >= BIG_K:
            row = step(
                f"K={K}", lambda K=K: _user_call_row_big(K, t_eval, big_repeat, step, scratch)
            )
        else:
            row = step(f"K={K}", lambda K=K: _user_call_row(K, t_eval, repeat, big_repeat))
        rows.append(row)
        cpu, wall, err, d_rtol = row["cpu_s"], row["wall_s"], row["error"], row["default_rtol"]
        print(
            f"    K={K:3d} n={row['n']:5d} default ({row['integrator']}, rtol {d_rtol:g}): "
            f"cpu {cpu['default']:7.2f} s wall {wall['default']:7.2f} s err {err['default']:.1e}"
            f" | LSODA: cpu {cpu['lsoda']:7.2f} s err {err['lsoda']:.1e} | LSODA + exact J: "
            f"cpu {cpu['lsoda_jac']:7.2f} s err {err['lsoda_jac']:.1e} | faster of the two / "
            f"default: cpu {row['ratio_cpu']:.2f}x, wall {row['ratio_wall']:.2f}x",
            flush=True,
        )
    return rows


BIG_K = 64
"""From this K on a row's calls are measured one unit each (`user_call`): at K = 32 the
reference alone took 95 CPU s and the row about 500; at K = 64 a row is tens of minutes."""

BIG_CALL = {
    "ref_method": "DOP853",
    "ref_rtol": 1e-12,
    "lsoda_cpu_s": 300.0,
    "lsoda_wall_s": 450.0,
}
"""From K = `BIG_K` on: the reference and the LSODA calls' budget (its own configuration,
beside `USER_CALL`'s). At K = M = 64 (n = 6240; measured on the shared two-core AMD EPYC,
2026-12-07, load about 3) one right-hand side costs 0.55 CPU ms (numpy; the compiled one 1.3
ms), the exact Jacobian 5.7 CPU s and one dense LU, as LSODA forms one after each Jacobian, about
5 CPU s; LSODA without a Jacobian differences ``n`` right-hand sides per Jacobian (about 4 s).
At K = 32 LSODA formed 91 to 99 Jacobians, so at K = 64 each LSODA call is about 10 s per
Jacobian, 20 minutes or more for the row's horizon, and the LSODA reference at rtol 1e-11 ran
803 CPU s without finishing (forward differences of the compiled right-hand side, about 8 s a
Jacobian, and many more of them at that tolerance). So from `BIG_K` on the reference is DOP853
at rtol 1e-12 (atol rtol / 100: explicit, no Jacobian and no LU; DOP853 is what the default
runs there, at rtol 1e-8 to 1e-10, two to four orders looser; checked against the LSODA
reference on this problem at K = 8 and 16, 2026-12-07, load 2.8: largest differences over the
outputs 4.2e-11 and 2.2e-11, where the calls' errors are about 5e-9; at K = 64 it took 166 CPU
s), and each LSODA call stops after
``lsoda_cpu_s`` CPU or ``lsoda_wall_s`` wall seconds (`_Budget`): a stopped call's CPU time is
a lower bound of its cost, so the row's ratio is a lower bound, and its error is the largest
over the outputs it reached, against which the default's error over the same outputs is
matched (`_matched`)."""


def _user_call_problem(K: int):
    return random_problem(max(50, 2 * (K + K)), K, K, np.random.default_rng(0))


def _user_calls(pr, t_eval):
    """The three calls of a row, by name: ``default`` takes its rtol."""
    t_max, rtol, atol = USER_CALL["t_max"], USER_CALL["rtol"], USER_CALL["atol"]
    return {
        "default": lambda r: solve(pr, t_eval=t_eval, t_max=t_max, rtol=r, atol=r * atol / rtol),
        "lsoda": lambda: _user_lsoda(pr, t_eval, rtol, atol, exact=False),
        "lsoda_jac": lambda: _user_lsoda(pr, t_eval, rtol, atol, exact=True),
    }


def _reference(pr, t_eval, big: bool = False):
    """``(cpu seconds, outputs)`` of the tight reference (`USER_CALL`; ``big``: `BIG_CALL`)."""
    conf = BIG_CALL if big else USER_CALL
    ref_rtol = conf["ref_rtol"]
    ref_cpu, _, ref_sol = _timed(
        lambda: solve(
            pr,
            t_eval=t_eval,
            t_max=USER_CALL["t_max"],
            method=conf["ref_method"],
            rtol=ref_rtol,
            atol=ref_rtol / 100,
        )
    )
    return ref_cpu, _state(ref_sol)


def _warm_up(pr, t_eval) -> None:
    """Each call once on a short horizon, outside the timing (numba's load, first calls)."""
    rtol, atol = USER_CALL["rtol"], USER_CALL["atol"]
    solve(pr, t_eval=t_eval[:3], t_max=float(t_eval[2]))
    _user_lsoda(pr, t_eval[:3], rtol, atol, exact=False)
    _user_lsoda(pr, t_eval[:3], rtol, atol, exact=True)


def _row(K, n, d_rtol, cpu, wall, err, out_evals, integrator, ref_cpu, reached=None) -> dict:
    """One row; ``reached`` (from K = `BIG_K`): each call's ``[outputs reached, t reached,
    finished]``; where an LSODA call stopped, its CPU and wall times are lower bounds, and so
    are the ratios (``"ratio_bound": "lower"``)."""
    extra = {}
    if reached is not None:
        stopped = not all(reached[k][2] for k in ("lsoda", "lsoda_jac"))
        extra = {"reached": reached, "ratio_bound": "lower" if stopped else None}
    return extra | {
        "K": K,
        "n": n,
        "integrator": integrator,
        "default_rtol": d_rtol,
        "cpu_s": cpu,
        "wall_s": wall,
        "error": err,
        "ratio_cpu": min(cpu["lsoda"], cpu["lsoda_jac"]) / cpu["default"],
        "ratio_wall": min(wall["lsoda"], wall["lsoda_jac"]) / wall["default"],
        "evaluations": out_evals,
        "reference_cpu_s": ref_cpu,
    }


def _evaluations(name: str, sol) -> list[int]:
    if name == "default":
        d = sol.diagnostics
        return [int(d.get("nfev", -1)), int(d.get("njev", -1))]
    return [int(sol.nfev), int(sol.njev)]


def _matched(err: dict, default_by_output=None, reached=None) -> bool:
    """The default is at least as accurate as the better LSODA call (up to 1.5x). With
    ``default_by_output`` (the default's largest error at each output) and ``reached`` (each
    LSODA call's outputs reached, where a budget stopped it): against each LSODA call over the
    outputs that call reached."""
    if reached is None:
        return err["default"] <= 1.5 * min(err["lsoda"], err["lsoda_jac"])
    return all(max(default_by_output[: reached[k]]) <= 1.5 * err[k] for k in ("lsoda", "lsoda_jac"))


def _user_call_row(K: int, t_eval, repeat: int, big_repeat: int) -> dict:
    rtol = USER_CALL["rtol"]
    pr = _user_call_problem(K)
    ref_cpu, ref = _reference(pr, t_eval)
    _warm_up(pr, t_eval)
    calls = _user_calls(pr, t_eval)
    d_rtol = rtol
    while True:
        cpu, wall, out = _interleaved(
            {
                "default": lambda r=d_rtol: calls["default"](r),
                "lsoda": calls["lsoda"],
                "lsoda_jac": calls["lsoda_jac"],
            },
            big_repeat if K >= 32 else repeat,
        )
        err = {
            "default": _errors(_state(out["default"])[: t_eval.size], ref),
            "lsoda": _errors(out["lsoda"].y.T, ref),
            "lsoda_jac": _errors(out["lsoda_jac"].y.T, ref),
        }
        if _matched(err) or d_rtol < rtol / 50:
            break
        d_rtol /= 10
    evals = {k: _evaluations(k, v) for k, v in out.items()}
    integrator = out["default"].diagnostics["integrator"]
    return _row(K, int(ref.shape[1]), d_rtol, cpu, wall, err, evals, integrator, ref_cpu)


def _user_call_row_big(K: int, t_eval, big_repeat: int, step, scratch) -> dict:
    """`_user_call_row` for K >= `BIG_K`, each call a unit of ``step``: the reference (its
    outputs kept in ``scratch`` until the row is done), the default at rtol 1e-8, LSODA without
    and with the Jacobian once, then the default at a tenth of its rtol until it is as accurate
    (the LSODA calls do not depend on the default's tolerance, so they are not rerun with
    it)."""
    import tempfile
    from pathlib import Path

    rtol = USER_CALL["rtol"]
    pr = _user_call_problem(K)
    folder = Path(scratch) if scratch is not None else Path(tempfile.mkdtemp())
    ref_file = folder / f"K={K}.reference.npy"
    state: dict = {}

    def reference():
        if "ref" not in state:
            if not ref_file.exists():
                cpu, ref = _reference(pr, t_eval, big=True)
                folder.mkdir(parents=True, exist_ok=True)
                np.save(ref_file, ref)
                state["cpu"] = cpu
            state["ref"] = np.load(ref_file)
        return state["ref"]

    def measured(name: str, *args):
        def compute():
            ref = reference()
            if not state.get("warm"):
                _warm_up(pr, t_eval)
                state["warm"] = True
            if name == "default":
                call = lambda: _user_calls(pr, t_eval)[name](*args)  # noqa: E731
            else:
                budget = (BIG_CALL["lsoda_cpu_s"], BIG_CALL["lsoda_wall_s"])
                call = lambda: _user_lsoda(  # noqa: E731
                    pr, t_eval, rtol, USER_CALL["atol"], name == "lsoda_jac", budget
                )
            runs = [_timed(call) for _ in range(big_repeat)]
            sol = runs[-1][2]
            y = _state(sol)[: t_eval.size] if name == "default" else sol.y.T
            by_output = np.max(np.abs(y - ref[: len(y)]), axis=1)
            out = {
                "cpu": float(np.median([r[0] for r in runs])),
                "wall": float(np.median([r[1] for r in runs])),
                "error": float(np.max(by_output)),
                "evaluations": _evaluations(name, sol),
            }
            if name == "default":
                out["integrator"] = sol.diagnostics["integrator"]
                out["error_by_output"] = [float(x) for x in by_output]
            else:
                out["reached"] = [len(y), float(sol.t[-1]), bool(sol.status == 0)]
                out["message"] = str(sol.message)
            return out

        return compute

    def ref_unit():
        if ref_file.exists():  # a stored reference whose unit was not recorded: run it again
            ref_file.unlink()
        reference()
        return {"cpu": state["cpu"], "n": int(state["ref"].shape[1])}

    ref_info = step(f"K={K} reference", ref_unit)
    # the default at rtol first (the cheapest call, so a chunk that ends after it has a row's
    # denominator), then the LSODA calls; the loop below finds its unit stored
    step(f"K={K} default rtol={rtol:g}", measured("default", rtol))
    got = {k: step(f"K={K} {k}", measured(k)) for k in ("lsoda", "lsoda_jac")}
    reached = {k: got[k]["reached"][0] for k in ("lsoda", "lsoda_jac")}
    d_rtol = rtol
    while True:
        got["default"] = step(f"K={K} default rtol={d_rtol:g}", measured("default", d_rtol))
        err = {k: v["error"] for k, v in got.items()}
        if _matched(err, got["default"]["error_by_output"], reached) or d_rtol < rtol / 50:
            break
        d_rtol /= 10
    ref_file.unlink(missing_ok=True)
    names = ("default", "lsoda", "lsoda_jac")
    n_out = t_eval.size
    return _row(
        K,
        ref_info["n"],
        d_rtol,
        {k: got[k]["cpu"] for k in names},
        {k: got[k]["wall"] for k in names},
        {k: got[k]["error"] for k in names},
        {k: got[k]["evaluations"] for k in names},
        got["default"]["integrator"],
        ref_info["cpu"],
        {"default": [n_out, float(t_eval[-1]), True]}
        | {k: got[k]["reached"] for k in ("lsoda", "lsoda_jac")},
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--loop", type=int, default=32)
    parser.add_argument("--loop-all", action="store_true")
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--only", default="1,2,3,4,5,6,7", help="comma-separated sections")
    parser.add_argument("--k-max", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ks", default="2,4,8,16,32,64", help="the K of section 7")
    parser.add_argument("--json", default=None, help="write section 7 as a benchmark record")
    parser.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="with --json: start no K (from K = 64 no call) after this many wall seconds (exit 3; rerun resumes)",
    )
    args = parser.parse_args()
    only = {int(x) for x in args.only.split(",")}
    if 1 in only and not args.skip_batch:
        batched_vs_loop(args.batch, args.loop, args.loop_all)
    if 2 in only:
        order_parameter_cost()
    if 3 in only:
        w_heavy_scaling()
    if 4 in only:
        single_trajectory(args.repeat)
    if 5 in only:
        wide_students(args.k_max)
    if 6 in only:
        tight_tolerance()
    if 7 in only:
        from _record import Progress, describe_machine

        print(describe_machine())
        config = dict(USER_CALL, repeat=args.repeat, big_repeat=1)
        if max(int(k) for k in args.ks.split(",")) >= BIG_K:
            config["big"] = BIG_CALL
        progress = (
            Progress(args.json, "bench_theory.py", config, stop_after=args.stop_after)
            if args.json
            else None
        )
        ks = tuple(int(k) for k in args.ks.split(","))
        scratch = progress.partial.with_name(progress.partial.name + ".d") if progress else None
        rows = user_call(ks, args.repeat, unit=progress.unit if progress else None, scratch=scratch)
        if progress:
            progress.finish({"user_call": rows})
            if scratch is not None and scratch.is_dir() and not any(scratch.iterdir()):
                scratch.rmdir()


if __name__ == "__main__":
    main()

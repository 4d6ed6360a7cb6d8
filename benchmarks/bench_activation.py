"""The order-parameter flow with quadrature kernels against the closed-form kernels, side by side.

    .venv/bin/python benchmarks/bench_activation.py [--repeat 3] [--t-max 100]

One trajectory of the order-parameter flow at K = M = 4 (``random_problem``, D = 100, LSODA at
rtol 1e-8, ``solve``'s default method) for

- erf through its sympy closed forms (the reference path),
- erf through the numerical rule (the same activation with ``closed_form=None``: the Hermite
  expansion, 96 terms), so the two runs differ only in how the kernels are computed,
- tanh, which has only the Hermite expansion,
- leaky ReLU through its reduction to the ReLU closed forms (the flow's path for every
  positively homogeneous activation) and through the polar quadrature (the numerical rule that
  checks it),

repeated ``--repeat`` times, interleaved; the best wall and CPU time of each, the number of
right-hand sides, the ratio to the closed-form path (the issue's target: at most 10x) and the
largest difference of the erf trajectories (quadrature error carried along the flow).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

from gaugedyn.theory import ACTIVATIONS, random_problem, solve


def _cases():
    numerical_erf = dataclasses.replace(
        ACTIVATIONS["erf"], name="erf (Hermite expansion)", closed_form=None
    )
    leaky = ACTIVATIONS["leaky_relu"]
    polar = dataclasses.replace(
        leaky, name="leaky_relu (polar quadrature)", closed_form=leaky.quadrature.kernels()
    )
    return {
        "erf (closed form)": "erf",
        "erf (Hermite expansion)": numerical_erf,
        "tanh (Hermite expansion)": "tanh",
        "leaky_relu (ReLU reduction)": "leaky_relu",
        "leaky_relu (polar quadrature)": polar,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--t-max", type=float, default=100.0)
    args = ap.parse_args(argv)
    cases = _cases()
    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, args.t_max, 40)])
    problems = {
        k: random_problem(100, 4, 4, np.random.default_rng(1), activation=a)
        for k, a in cases.items()
    }
    for p in problems.values():  # warm-up: imports, torch, first allocations
        solve(p, t_max=1.0)
    wall = {k: np.inf for k in cases}
    cpu = {k: np.inf for k in cases}
    sols = {}
    for _ in range(args.repeat):
        for k, p in problems.items():
            w0, c0 = time.perf_counter(), time.process_time()
            sols[k] = solve(p, t_max=args.t_max, t_eval=t_eval)
            wall[k] = min(wall[k], time.perf_counter() - w0)
            cpu[k] = min(cpu[k], time.process_time() - c0)
    ref = "erf (closed form)"
    print(
        f"order-parameter flow, K = M = 4, D = 100, t_max = {args.t_max:g}, LSODA rtol 1e-8; "
        f"best of {args.repeat} interleaved repeats"
    )
    print(
        f"{'kernels':32s} {'wall s':>9s} {'cpu s':>9s} {'nfev':>7s} {'wall ratio':>11s} "
        f"{'cpu ratio':>10s} {'ms/rhs':>8s}"
    )
    for k in cases:
        nfev = sols[k].diagnostics.get("nfev", 0) or 0
        per = 1e3 * wall[k] / nfev if nfev else float("nan")
        print(
            f"{k:32s} {wall[k]:9.3f} {cpu[k]:9.3f} {nfev:7d} {wall[k] / wall[ref]:11.2f} "
            f"{cpu[k] / cpu[ref]:10.2f} {per:8.3f}"
        )
    diff = max(
        np.abs(getattr(sols["erf (Hermite expansion)"], x) - getattr(sols[ref], x)).max()
        for x in ("a", "Q", "R")
    )
    print(f"largest |erf Hermite expansion - erf closed form| along the trajectory: {diff:.2e}")
    load = os.getloadavg()
    print(f"load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()

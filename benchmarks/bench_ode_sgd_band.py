"""The online ODE inside the compiled online SGD's seed band at D = 10^4, K = M = 4.

The protocol (declared before its first run; issue 46's Must-show "agreeing ... with the compiled
SGD's band at D = 1e4"), for each activation of ``--activations`` (default erf, relu,
leaky_relu):

1. the problem ``random_problem(10_000, 4, 4, np.random.default_rng(0), activation=name)``
   (fields of full rank 8, the online-ODE benchmark's shape at D = 10^4);
2. ``--seeds`` (default 10) seeds of online SGD with the compiled weight-space backend
   (``train(..., backend="compiled")``: lr 1, batch 1, ``--t-max`` (default 20) times D steps,
   4 records per decade, root seed 5);
3. the online ODE (``online_ode``, compiled, rtol 1e-8, atol 1e-10) at the records' times;
4. the rule of ``tests/test_activations_online.py`` (the chain's band check there): at least 90%
   of the recorded entries of ``a``, ``Q`` and ``R`` from t = 0.5 on lie inside the seeds'
   10-90% band (per entry and record).

Known-answer controls, on the same seeds: erf, whose online ODE has closed-form expectations
(effect absent: it must pass), and for every activation the ODE at a learning rate 0.8 instead
of 1 (effect present: it must fail). The verdict per activation is printed with the fractions.

    .venv/bin/python benchmarks/bench_ode_sgd_band.py [--seeds 10] [--t-max 20]
        [--activations erf,relu,leaky_relu] [--json benchmarks/results/ode_sgd_band.json]
        [--stop-after SECONDS]

It prints the machine (CPU model, cores, load); ``--json`` writes a benchmark record
(``benchmarks/_record.py``), one unit per activation, resumable.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gaugedyn.theory import random_problem
from gaugedyn.training import TrainConfig, online_ode, train

D = 10_000
LATE = 0.5
BAND = (0.1, 0.9)
PASS = 0.9
CONTROL_ETA = 0.8


def inside(res, ode) -> float:
    """The fraction of recorded entries of a, Q, R from t = LATE on inside the seeds' band."""
    late = res.time >= LATE
    hits = []
    for key in ("a", "Q", "R"):
        lo, hi = np.quantile(getattr(res, key)[:, late], BAND, axis=0)
        y = ode[key][late]
        hits.append(((y >= lo) & (y <= hi)).ravel())
    return float(np.concatenate(hits).mean())


def band(name: str, seeds: int, t_max: float) -> dict:
    problem = random_problem(D, 4, 4, np.random.default_rng(0), activation=name)
    cfg = TrainConfig(
        optimizer="sgd", lr=1.0, steps=int(t_max * D), samples=None, points_per_decade=4
    )
    c0, w0 = time.process_time(), time.perf_counter()
    res = train(problem, cfg, seeds=seeds, root_seed=5, backend="compiled")
    sgd_cpu, sgd_wall = time.process_time() - c0, time.perf_counter() - w0
    c0 = time.process_time()
    ode = online_ode(problem, 1.0, res.time, rtol=1e-8, atol=1e-10)
    ode_cpu = time.process_time() - c0
    control = online_ode(problem, CONTROL_ETA, res.time, rtol=1e-8, atol=1e-10)
    frac, frac_control = inside(res, ode), inside(res, control)
    return {
        "records": int((res.time >= LATE).sum()),
        "t_last": float(res.time[-1]),
        "inside": frac,
        "inside_control": frac_control,
        "passes": frac >= PASS,
        "control_fails": frac_control < PASS,
        "sgd_cpu": sgd_cpu,
        "sgd_wall": sgd_wall,
        "ode_cpu": ode_cpu,
        "loss_first_last": [float(res.loss[:, 0].mean()), float(res.loss[:, -1].mean())],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--t-max", type=float, default=20.0)
    p.add_argument("--activations", default="erf,relu,leaky_relu")
    p.add_argument("--json", default=None, help="write the figures as a benchmark record")
    p.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="with --json: start no activation after this many wall seconds (exit 3; rerun resumes)",
    )
    args = p.parse_args(argv)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _record import Progress, describe_machine

    print(describe_machine())
    names = [n for n in args.activations.split(",") if n]
    config = {"D": D, "K": 4, "M": 4, "seeds": args.seeds, "t_max": args.t_max}
    progress = (
        Progress(args.json, "bench_ode_sgd_band.py", config, argv, args.stop_after)
        if args.json
        else None
    )
    rows = {}
    for name in names:
        compute = lambda name=name: band(name, args.seeds, args.t_max)  # noqa: E731
        r = progress.unit(name, compute) if progress else compute()
        rows[name] = r
        print(
            f"{name:11s} ODE inside the {args.seeds} seeds' 10-90% band at {r['inside']:.1%} of "
            f"{r['records']} records' entries ({'passes' if r['passes'] else 'FAILS'} the 90% rule); "
            f"control (eta {CONTROL_ETA}) {r['inside_control']:.1%} "
            f"({'fails, as it must' if r['control_fails'] else 'PASSES: the check is blind'}); "
            f"SGD {r['sgd_cpu']:.0f} CPU s, ODE {r['ode_cpu']:.2f} CPU s",
            flush=True,
        )
    if progress:
        progress.finish(
            {
                "D": D,
                "K": 4,
                "M": 4,
                "seeds": args.seeds,
                "t_max": args.t_max,
                "late": LATE,
                "band": list(BAND),
                "pass": PASS,
                "control_eta": CONTROL_ETA,
                "activations": rows,
            }
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The online ODE's runtime check of a quadrature noise term: what it finds along a run and what
it costs.

For each activation of ``--activations`` (default tanh, softplus) the online ODE of
``bench_online_noise_accuracy.py``'s problem (``random_problem(50, 4, 4, default_rng(0))``,
K = M = 4, fields of full rank; eta = 1, batch 1, ``noise=True``) runs to ``--t-max`` (default
1) at ``--rtol`` and ``--atol`` (default 1e-6 and 1e-8, ``bench_online_ode.py``'s published run)
with ``noise_check="warn"`` and records at ``--times``. (A tanh run to t = 1000 at the package's
default tolerances did not finish in 9.6 CPU minutes: at about 90 ms a right-hand side it takes
tens of thousands of them.) It prints each check the run made
(``gaugedyn.training._online_ode.NOISE_CHECK``: its time and the relative disagreement of the
noise term with Monte Carlo, and Monte Carlo's standard error), the warning's time if one fired,
the population loss at the record times (where the plateau is), the right-hand sides and the CPU
seconds of the run and of its checks (the check's own record).

    .venv/bin/python benchmarks/bench_noise_check.py [--activations tanh,softplus]
        [--t-max 1] [--times 0,0.25,0.5,1] [--rtol 1e-6] [--atol 1e-8]
        [--json benchmarks/results/noise_check.json [--stop-after S]]

It prints the machine (CPU model, cores, load) first; ``--json`` writes a benchmark record
(``benchmarks/_record.py``; one unit per activation, each stored at once in ``PATH.partial``),
which ``tools/bench_page.py`` shows on ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from gaugedyn import NoiseTermWarning
from gaugedyn.theory import population_loss, random_problem
from gaugedyn.training import online_ode


def run(name: str, times: np.ndarray, rtol: float, atol: float) -> dict:
    """One run: the check's record, the warning's time, losses and CPU seconds."""
    problem = random_problem(50, 4, 4, np.random.default_rng(0), activation=name)
    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NoiseTermWarning)
        sol = online_ode(problem, 1.0, times, rtol=rtol, atol=atol)
    cpu = time.process_time() - c0
    fired = [w.message for w in caught if isinstance(w.message, NoiseTermWarning)]
    b, T = problem.b, problem.V @ problem.V.T
    loss = [
        float(population_loss(sol["a"][i], sol["Q"][i], sol["R"][i], b, T, name))
        for i in range(len(times))
    ]
    return {
        "record": sol["noise_check"],
        "warned_at": fired[0].time if fired else None,
        "loss": loss,
        "cpu": cpu,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--activations", default="tanh,softplus")
    p.add_argument("--t-max", type=float, default=1.0)
    p.add_argument("--times", default="0,0.25,0.5,1")
    p.add_argument("--rtol", type=float, default=1e-6)
    p.add_argument("--atol", type=float, default=1e-8)
    p.add_argument("--json", default=None)
    p.add_argument("--stop-after", type=float, default=None)
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from _record import Progress, describe_machine

    print(describe_machine(), flush=True)
    times = np.array([t for t in (float(x) for x in args.times.split(",")) if t <= args.t_max])
    if times[-1] < args.t_max:
        times = np.append(times, args.t_max)
    names = [x for x in args.activations.split(",") if x]
    config = {
        "t_max": args.t_max,
        "times": times.tolist(),
        "activations": names,
        "rtol": args.rtol,
        "atol": args.atol,
    }
    progress = (
        Progress(args.json, "bench_noise_check.py", config, argv, args.stop_after)
        if args.json
        else None
    )
    out = {}
    for name in names:
        u = (
            progress.unit(name, lambda name=name: run(name, times, args.rtol, args.atol))
            if progress
            else run(name, times, args.rtol, args.atol)
        )
        out[name] = u
        rec = u["record"]
        print(
            f"{name}: {rec['rhs']} right-hand sides ({rec['rhs_cpu']:.1f} CPU s), run "
            f"{u['cpu']:.1f} CPU s; {len(rec['checks'])} checks {rec['check_cpu']:.1f} CPU s "
            f"({100 * rec['check_cpu'] / u['cpu']:.1f}% of the run); warned at "
            + ("never" if u["warned_at"] is None else f"t = {u['warned_at']:.4g}")
        )
        print(
            "  checks (t: disagreement): "
            + ", ".join(
                f"{c['t']:.4g}: {c['disagreement']:.2e} (SE {c['standard_error']:.1e})"
                for c in rec["checks"]
            )
        )
        print(
            "  loss at t: "
            + ", ".join(f"{t:g}: {v:.3e}" for t, v in zip(times, u["loss"], strict=True)),
            flush=True,
        )
    if progress:
        progress.finish(
            {
                "K": 4,
                "M": 4,
                "times": times.tolist(),
                "rtol": args.rtol,
                "atol": args.atol,
                "activations": out,
            }
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

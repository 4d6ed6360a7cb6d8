"""Online SGD and the online ODE against their peers, measured side by side in one run.

Cases (erf teacher and student, K = M = 4, batch 1, eta = 1, as in Goldt et al. 2019):

1. one seed of online SGD at N = 500 and N = 5000: gaugedyn's compiled backend (weight space) and
   its exact order-parameter chain (``backend="chain"``, the same process in law at a cost
   independent of N) against the torch backend and, with ``--nn2pp PATH``, the reference C++
   simulator of Goldt et al. (nn2pp, built separately: ``g++ -std=c++11 -O3 -fopenmp nn2pp.cpp
   -larmadillo -o nn2pp.exe``);
2. seeds batched at N = 500: the summed rate of the compiled backend and of the chain on one and
   on all threads, against the torch backend's batched seeds, and the floor the input draws set
   for weight space: the rate of a compiled loop that only draws the N normals of each step from
   the same generator (no arithmetic), times the thread count;
3. the erf online ODE to t = 1000: the compiled right-hand side under LSODA against the numpy one
   under DOP853, both at rtol 1e-9, and both against a DOP853 reference at rtol 1e-13.

Every measurement is repeated in interleaved rounds (peer, gaugedyn, peer, ...) and the medians are
reported, in CPU time and in wall time, because the machine is shared and noisy.

Usage: python benchmarks/bench_online.py [--rounds 3] [--nn2pp PATH] [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

import numba
import numpy as np
import torch

from gaugedyn.theory import random_problem
from gaugedyn.training import TrainConfig, train
from gaugedyn.training._online_ode import OnlineODE, online_ode


def _measure(fn):
    """(wall s, cpu s of this process and its children, result)."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(
        getattr(r1, f) - getattr(r0, f) + getattr(c1, f) - getattr(c0, f)
        for f in ("ru_utime", "ru_stime")
    )
    return wall, cpu, out


def interleaved(cases: dict, rounds: int) -> dict:
    """Run every case once per round, in turn; medians of wall and CPU seconds."""
    times = {name: ([], []) for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            wall, cpu, _ = _measure(fn)
            times[name][0].append(wall)
            times[name][1].append(cpu)
    return {name: (statistics.median(w), statistics.median(c)) for name, (w, c) in times.items()}


def _problem(N):
    return random_problem(N, 4, 4, np.random.default_rng(0), activation="erf")


def nn2pp_argv(nn2pp: str, N: int, steps: int) -> list[str]:
    """nn2pp's command line for the single-seed race: erf student and teacher, M = K = 4,
    learning rate 1, both layers trained, seed 1 (``--seed``: nn2pp's ``-s`` is the teacher's
    output noise, not a seed)."""
    size = ["-N", str(N), "-M", "4", "-K", "4", "--lr", "1", "--steps", str(steps / N)]
    return [nn2pp, "--g1", "1", "--g2", "1", *size, "--both", "--quiet", "--seed", "1"]


def single_seed(N, steps, rounds, nn2pp, scratch):
    problem = _problem(N)
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=steps, samples=None, points_per_decade=5)
    torch_cfg = TrainConfig(
        optimizer="sgd", lr=1.0, steps=max(steps // 20, 1000), samples=None, points_per_decade=5
    )
    train(
        problem,
        TrainConfig(optimizer="sgd", lr=1.0, steps=10, samples=None),
        seeds=1,
        backend="compiled",
    )  # compile outside the timing
    train(
        problem,
        TrainConfig(optimizer="sgd", lr=1.0, steps=10, samples=None),
        seeds=1,
        backend="chain",
    )
    cases = {
        "gaugedyn compiled": (lambda: train(problem, cfg, seeds=1, backend="compiled"), steps),
        "gaugedyn chain": (lambda: train(problem, cfg, seeds=1, backend="chain"), steps),
        "gaugedyn torch": (lambda: train(problem, torch_cfg, seeds=1), torch_cfg.steps),
    }
    if nn2pp:

        def run_nn2pp():  # it writes its output files into the working folder: a scratch one
            subprocess.run(
                nn2pp_argv(nn2pp, N, steps),
                check=True,
                stdout=subprocess.DEVNULL,
                cwd=scratch,
            )

        cases["nn2pp (C++)"] = (run_nn2pp, steps)
    med = interleaved({k: v[0] for k, v in cases.items()}, rounds)
    rates = {k: (cases[k][1] / med[k][0], cases[k][1] / med[k][1]) for k in cases}
    print(
        f"\n1. one seed, online SGD, erf K = M = 4, N = {N}, {steps} steps (torch: "
        f"{torch_cfg.steps}); steps/s (wall | cpu), median of {rounds} interleaved rounds"
    )
    for k, (rw, rc) in rates.items():
        print(f"   {k:20s} {rw:12,.0f} | {rc:12,.0f}")
    mine = ("gaugedyn compiled", "gaugedyn chain")
    for name in mine:
        ours = rates[name]
        for k in cases:
            if k not in mine:
                print(
                    f"   ratio {name.removeprefix('gaugedyn ')} / {k}: "
                    f"{ours[0] / rates[k][0]:.2f}x wall, {ours[1] / rates[k][1]:.2f}x cpu"
                )
    return rates


@numba.njit(nogil=True)
def _draws(gen, steps, N):
    """``steps * N`` normals from ``gen``: a step's input draws, nothing else."""
    s = 0.0
    for _ in range(steps):
        for _ in range(N):
            s += gen.standard_normal()
    return s


def batched(N, seeds, steps, rounds):
    from gaugedyn.training._online_fast import seed_generator

    problem = _problem(N)
    _draws(seed_generator(0, 0), 1, N)  # compile outside the timing
    cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=steps, samples=None, points_per_decade=5)
    tcfg = TrainConfig(
        optimizer="sgd", lr=1.0, steps=max(steps // 10, 500), samples=None, points_per_decade=5
    )
    from gaugedyn.training._online_fast import train_online, train_online_compiled

    train(problem, TrainConfig(optimizer="sgd", lr=1.0, steps=10, samples=None), backend="chain")

    threads = len(os.sched_getaffinity(0))
    cases = {
        "compiled, 1 thread": (
            lambda: train_online_compiled(problem, cfg, seeds=seeds, threads=1),
            seeds * steps,
        ),
        f"compiled, {threads} threads": (
            lambda: train_online_compiled(problem, cfg, seeds=seeds, threads=threads),
            seeds * steps,
        ),
        "chain, 1 thread": (
            lambda: train_online(problem, cfg, seeds, 0, None, None, 1, "chain"),
            seeds * steps,
        ),
        f"chain, {threads} threads": (
            lambda: train_online(problem, cfg, seeds, 0, None, None, threads, "chain"),
            seeds * steps,
        ),
        "torch, batched seeds": (lambda: train(problem, tcfg, seeds=seeds), seeds * tcfg.steps),
        "draws only, 1 thread": (lambda: _draws(seed_generator(0, 0), steps, N), steps),
    }
    med = interleaved({k: v[0] for k, v in cases.items()}, rounds)
    print(f"\n2. {seeds} seeds, N = {N}: summed steps/s (wall | cpu), median of {rounds} rounds")
    rates = {}
    for k in cases:
        rates[k] = (cases[k][1] / med[k][0], cases[k][1] / med[k][1])
        print(f"   {k:22s} {rates[k][0]:12,.0f} | {rates[k][1]:12,.0f}")
    best = max(rates[k][0] for k in rates if k.startswith("compiled"))
    print(
        f"   ratio best compiled / torch batched: {best / rates['torch, batched seeds'][0]:.1f}x"
        " wall"
    )
    chain = max(rates[k][0] for k in rates if k.startswith("chain"))
    print(f"   ratio best chain / best compiled: {chain / best:.1f}x wall")
    floor = rates["draws only, 1 thread"][1]
    print(
        f"   the input draws alone allow at most {floor:,.0f} steps/s per thread "
        f"({1e9 / (floor * N):.1f} ns per normal), {threads * floor:,.0f} summed on {threads} "
        f"threads; compiled on 1 thread reaches {rates['compiled, 1 thread'][1] / floor:.0%} "
        "of it (cpu); the chain draws P normals and one chi-square per step instead"
    )
    return rates


def ode(rounds):
    from scipy.integrate import solve_ivp

    problem = _problem(500)
    t = np.linspace(0.0, 1000.0, 201)
    online_ode(problem, 1.0, t[:3])  # compile outside the timing
    a0, Q0, R0, b, T = problem.order_parameters()
    rhs = OnlineODE(4, 4, b, T, "erf", 1.0)
    y0 = np.concatenate([a0, Q0.ravel(), R0.ravel()])
    ref = solve_ivp(rhs, (0, 1000), y0, method="DOP853", t_eval=t, rtol=1e-13, atol=1e-15).y.T
    cases = {
        "compiled + LSODA": lambda: online_ode(problem, 1.0, t, method="compiled"),
        "numpy + DOP853": lambda: online_ode(problem, 1.0, t, method="reference"),
    }
    med = interleaved(cases, rounds)
    print(f"\n3. erf online ODE, K = M = 4, to t = 1000, rtol 1e-9 (median of {rounds} rounds)")
    for k, fn in cases.items():
        o = fn()
        y = np.concatenate([o["a"], o["Q"].reshape(len(t), -1), o["R"].reshape(len(t), -1)], 1)
        print(
            f"   {k:18s} {med[k][0]:.4f} s wall, {med[k][1]:.4f} s cpu; max |y - ref| = "
            f"{np.abs(y - ref).max():.2e}"
        )
    r = med["numpy + DOP853"][1] / med["compiled + LSODA"][1]
    print(f"   ratio numpy+DOP853 / compiled+LSODA: {r:.1f}x cpu")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nn2pp", metavar="PATH", help="the nn2pp.exe of Goldt et al., built here")
    p.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    args = p.parse_args()
    torch.set_num_threads(1)
    scale = 10 if args.quick else 1
    print(
        f"bench_online.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch "
        f"{torch.__version__}, {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as scratch:
        single_seed(500, 500_000 // scale, args.rounds, args.nn2pp, scratch)
        single_seed(5000, 100_000 // scale, args.rounds, args.nn2pp, scratch)
    batched(500, 16, 100_000 // scale, args.rounds)
    ode(args.rounds)


if __name__ == "__main__":
    main()

"""Trainer benchmarks: 40 seeds batched against a loop of 40 single-seed runs, and throughput at a
large D as a fraction of this machine's measured matrix-multiply rate.

Usage: python benchmarks/bench_training.py [--threads N] [--device cpu|cuda]
Prints one line per measurement and the ratios, all measured side by side in this run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from gaugedyn.theory import duplicates, random_problem, with_gauge
from gaugedyn.training import TrainConfig, train


def _time(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def seeds_vs_loop(device, S=40):
    gauges = ["a-heavy", "w-heavy"]
    problem = with_gauge(duplicates(32, gauges), names=gauges, strength=2.0)
    cases = {
        "full-batch GD, n=256, D=32, 300 steps": TrainConfig(lr=0.02, steps=300, samples=256),
        "online SGD, B=1, D=32, 1000 steps": TrainConfig(
            optimizer="sgd", lr=0.5, steps=1000, samples=None
        ),
    }
    for name, cfg in cases.items():
        t_batch, res = _time(
            lambda c=cfg: train(problem, c, seeds=S, root_seed=0, device=device), 2
        )
        t_loop, alone = _time(
            lambda c=cfg: [
                train(problem, c, seed_indices=[i], root_seed=0, device=device) for i in range(S)
            ],
            1,
        )
        same = all(np.array_equal(alone[i].Q[0], res.Q[i]) for i in range(S))
        print(
            f"{name}: {S} seeds batched {t_batch:.3f} s, loop of {S} single-seed runs "
            f"{t_loop:.3f} s, ratio {t_loop / t_batch:.1f}x (per-seed results identical: {same})"
        )


def matmul_rate(device, dtype, n=2048):
    A = torch.randn(n, n, dtype=dtype, device=device)
    B = torch.randn(n, n, dtype=dtype, device=device)
    torch.mm(A, B)
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.mm(A, B)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - t0)


def throughput(device, dtype, D=4096, n=4096, K=2, S=4, steps=20):
    rng = np.random.default_rng(0)
    problem = random_problem(D, K, 1, rng)
    cfg = TrainConfig(lr=0.01, steps=steps, samples=n, record_steps=(steps,))
    t, _ = _time(lambda: train(problem, cfg, seeds=S, device=device, dtype=dtype), 2)
    # per step: Z = W X^T and g_W = back X, 2 S K n D flops each; data draw and setup included
    flops = 4 * S * K * n * D * steps
    return flops / t, t


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}")
    seeds_vs_loop(device)
    for dtype in ("float64", "float32"):
        tdt = getattr(torch, dtype)
        peak = matmul_rate(device, tdt)
        for K, S in ((2, 4), (64, 4)):
            rate, t = throughput(device, dtype, K=K, S=S)
            print(
                f"{dtype}: matmul 2048^3 {peak / 1e9:.1f} GFLOP/s; trainer GD D=4096 n=4096 "
                f"K={K} S={S}: {rate / 1e9:.2f} GFLOP/s = {rate / peak:.1%} of matmul ({t:.2f} s)"
            )


if __name__ == "__main__":
    main()

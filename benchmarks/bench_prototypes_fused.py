"""The prototypes experiment's training step: the compiled float64 kernel against the torch paths.

For each width ``N`` one task's batch (every loss combination, coverage reading, ``tau`` of the
sweep and ``lambda`` reading of ``--seeds`` seeds, built by the experiment itself) is trained for
``--steps`` full-batch Adam steps by

- ``old``: ``train_chunked`` in float32 through torch (the experiment's path before the kernel),
- ``torch64``: the same in float64 (the like-for-like reference of the kernel's arithmetic),
- ``new``: ``train_fused``, the compiled float64 kernel (the experiment's path now),

interleaved over ``--rounds`` rounds (old, torch64, new, old, ...), single-threaded. It prints the
median CPU and wall time per run-step of each, the ratios old/new and torch64/new (CPU and
wall), and the full configuration's CPU time extrapolated from ``new`` (every run to the cap,
both initialisations; runs that settle earlier stop, so this is an upper bound). Timings on a
shared machine move with its load: the ratios, measured side by side, are the result.

Run: ``python benchmarks/bench_prototypes_fused.py [--sizes 20 50 100] [--seeds 4] [--steps 20]
[--rounds 3]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from gaugedyn.experiments.prototypes import _model as model
from gaugedyn.experiments.prototypes import prototypes as ex
from gaugedyn.training._support import single_thread


def _time(fn) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    cfg = {k: q.default for k, q in ex.Prototypes.params.items()} | {"seeds": args.seeds}
    full = {k: q.default for k, q in ex.Prototypes.params.items()}
    kw = {"steps": args.steps, "lr": 1e-2, "weight": 0.1}
    total = 0.0
    print(
        f"{'N':>4} {'runs':>5} | CPU us per run-step: {'old':>7} {'torch64':>8} {'new':>7} | "
        f"old/new CPU (wall) | torch64/new CPU (wall)"
    )
    for n in args.sizes:
        runs = ex._runs(cfg, n, "inside", np.random.SeedSequence(1))
        paths = {
            "old": lambda r=runs: model.train_chunked(r, dtype=torch.float32, **kw),
            "torch64": lambda r=runs: model.train_chunked(r, dtype=torch.float64, **kw),
            "new": lambda r=runs: model.train_fused(r, **kw),
        }
        got = {k: [] for k in paths}
        with single_thread():
            model.train_fused(runs, steps=1, lr=1e-2, weight=0.1)  # compile / load the cache
            for _ in range(args.rounds):
                for name, fn in paths.items():
                    got[name].append(_time(fn))
        per = {k: np.median(v, axis=0) / (args.steps * runs.w.shape[0]) for k, v in got.items()}
        cpu = {k: v[0] * 1e6 for k, v in per.items()}
        r_old, r_64 = per["old"] / per["new"], per["torch64"] / per["new"]
        print(
            f"{n:4d} {runs.w.shape[0]:5d} | {'':21}{cpu['old']:7.2f} {cpu['torch64']:8.2f} "
            f"{cpu['new']:7.2f} | {r_old[0]:5.2f}x ({r_old[1]:.2f}x) | "
            f"{r_64[0]:5.2f}x ({r_64[1]:.2f}x)",
            flush=True,
        )
        task_runs = len(ex.variants(full)) * int(full["seeds"])
        total += per["new"][0] * task_runs * int(full["cap"]) * len(full["inits"])
    print(
        f"full configuration, sizes {args.sizes} only, every run to the cap ({full['cap']} "
        f"steps), both initialisations, at the new path's rate: {total / 60:.1f} CPU-minutes "
        f"({total / 120:.1f} min on two free cores)"
    )


if __name__ == "__main__":
    main()

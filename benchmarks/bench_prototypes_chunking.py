"""Training the prototypes experiment's batch in cache-sized slices against the whole batch.

One task of the full configuration (40 seeds x 28 runs = 1,120 runs of width N) is trained for a
few full-batch Adam steps both ways, interleaved, and the script prints CPU and wall time per
step and their ratio, per N; it also prints the full configuration's extrapolated cost (every run
trained to the cap, both initialisations) on this path. It times the float32 torch path
(``dtype="float32"``); the experiment's default float64 path is the compiled kernel, timed against
this one by ``benchmarks/bench_prototypes_fused.py``. Run:
``python benchmarks/bench_prototypes_chunking.py``.
"""

from __future__ import annotations

import time

import numpy as np

from gaugedyn.experiments.prototypes import _model as model
from gaugedyn.experiments.prototypes import prototypes as ex
from gaugedyn.training._support import single_thread


def _time(fn, steps):
    t0, w0 = time.process_time(), time.perf_counter()
    fn(steps)
    return (time.process_time() - t0) / steps, (time.perf_counter() - w0) / steps


def main(sizes=(3, 5, 10, 20, 50, 100), steps=10, rounds=3):
    cfg = {k: p.default for k, p in ex.Prototypes.params.items()}
    total = 0.0
    for n in sizes:
        runs = ex._runs(cfg, n, "inside", np.random.SeedSequence(1))
        whole = lambda s, r=runs: model.train(r, steps=s, lr=1e-2, weight=0.1)  # noqa: E731
        sliced = lambda s, r=runs: model.train_chunked(  # noqa: E731
            r, steps=s, lr=1e-2, weight=0.1
        )
        got = {"whole": [], "sliced": []}
        with single_thread():
            sliced(2)
            for _ in range(rounds):
                got["whole"].append(_time(whole, steps))
                got["sliced"].append(_time(sliced, steps))
        w = np.median(got["whole"], axis=0)
        c = np.median(got["sliced"], axis=0)
        cost = 2 * c[0] * cfg["cap"]
        total += cost
        print(
            f"N={n:4d} B={runs.w.shape[0]}: whole {w[0] * 1e3:7.1f} ms CPU/step "
            f"({w[1] * 1e3:7.1f} wall), sliced {c[0] * 1e3:7.1f} ms CPU/step "
            f"({c[1] * 1e3:7.1f} wall); CPU ratio whole/sliced {w[0] / c[0]:.2f}, "
            f"two tasks to the cap {cost / 60:.1f} CPU-min",
            flush=True,
        )
    print(
        f"sizes {list(sizes)}: {total / 60:.1f} CPU-min to the cap "
        f"({cfg['cap']} steps), {total / 120:.1f} min on two free cores"
    )


if __name__ == "__main__":
    main()

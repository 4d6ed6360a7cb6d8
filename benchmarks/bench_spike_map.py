"""The compiled 1-D Adam map (``simulate_blocks``, numba, the spike detector's block statistics
accumulated at every step) against the numpy map (``simulate_losses``) on the same runs,
interleaved.

Both see the same per-step log10 losses (the compiled blocks equal the detector's blocks of the
numpy map to the last bit at ``n = 2``, tested in ``tests/test_spike_boundary.py``). Each round times one block of each, in rotating order; the
median over rounds of the per-round ratio numpy / numba is printed with its quartiles, in wall
time and in process CPU time (less sensitive to a loaded machine).

    .venv/bin/python benchmarks/bench_spike_map.py [--rounds 7] [--steps 20000] [--rows 8]
        [--seeds 4] [--stationary]

``--stationary`` times the numba map without bias correction (the orbit start's map) beside.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gaugedyn.adam._stability import simulate_blocks, simulate_losses


def _quartiles(x: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
    return q[0], statistics.median(x), q[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--stationary", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a = np.logspace(-2, np.log10(0.5), args.rows)
    c = np.full(args.rows, 1e-3)
    x0 = 1e-3 * 10 ** rng.uniform(-1, 1, (args.rows, args.seeds))
    record, size = args.steps // 100, 24

    variants = {
        "numpy (simulate_losses)": lambda: simulate_losses(
            x0, a[:, None], c[:, None], 2.0, 1e-2, 0.0, args.steps, record=record
        ),
        "numba (simulate_blocks)": lambda: simulate_blocks(
            x0, 0, 0, a, c, 2.0, 1e-2, 0.0, args.steps, size, True
        ),
    }
    if args.stationary:
        variants["numba, stationary map"] = lambda: simulate_blocks(
            x0, 0, 0, a, c, 2.0, 1e-2, 0.0, args.steps, size, False
        )
    for fn in variants.values():  # compile and warm up
        fn()
    names = list(variants)
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    for r in range(args.rounds):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            variants[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    ref = names[0]
    runs = args.rows * args.seeds * args.steps
    print(f"{args.rows} rows x {args.seeds} seeds x {args.steps} steps, {args.rounds} rounds")
    for k in names:
        rw = _quartiles([wall[ref][i] / wall[k][i] for i in range(args.rounds)])
        rc = _quartiles([cpu[ref][i] / cpu[k][i] for i in range(args.rounds)])
        ns = 1e9 * statistics.median(cpu[k]) / runs
        print(
            f"{k:28s} speed-up over numpy: wall {rw[1]:6.2f} [{rw[0]:.2f}, {rw[2]:.2f}], "
            f"CPU {rc[1]:6.2f} [{rc[0]:.2f}, {rc[2]:.2f}]; {ns:6.1f} CPU ns per run-step"
        )


if __name__ == "__main__":
    main()

"""Cost of the result store and of the sweep machinery, measured side by side.

    .venv/bin/python benchmarks/bench_store.py [--records 200]

Prints, for results of several sizes, the time to store (atomic npz + json, fsync) and to read
back (checksum verified) one task record, and the per-task overhead of a serial sweep through
the store against calling ``run_task`` in a plain loop.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from toy_experiments import TOY  # noqa: E402

from gaugedyn._meta import task_seed  # noqa: E402
from gaugedyn.experiments import ResultStore, make_config  # noqa: E402
from gaugedyn.harness._executor import SerialExecutor  # noqa: E402
from gaugedyn.harness._sweep import sweep  # noqa: E402


def store_costs(n_records: int) -> None:
    print(f"{'result size':>12}  {'save ms':>8}  {'load ms':>8}  {'MB/s save':>9}")
    for size in (10, 10_000, 1_000_000):
        result = {"x": np.random.default_rng(0).standard_normal(size), "t": 1.5, "tag": "w"}
        with tempfile.TemporaryDirectory() as tmp:
            store = ResultStore(tmp)
            keys = [f"{i:064x}" for i in range(n_records if size < 10**6 else 10)]
            start = time.perf_counter()
            for key in keys:
                store.save(key, result, {"task": {"i": 0}})
            save = (time.perf_counter() - start) / len(keys)
            start = time.perf_counter()
            for key in keys:
                assert store.load(key) is not None
            load = (time.perf_counter() - start) / len(keys)
        print(f"{size:>12}  {save * 1e3:8.2f}  {load * 1e3:8.2f}  {8 * size / save / 1e6:9.1f}")


def sweep_overhead(n_tasks: int) -> None:
    cfg = make_config({"experiment": TOY, "seed": 0, "params": {"n_tasks": n_tasks, "size": 100}})
    start = time.perf_counter()
    for task in cfg.tasks:
        TOY.run_task(task, task_seed(cfg.seed, cfg.name, task))
    plain = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp)
        start = time.perf_counter()
        sweep(cfg, store, SerialExecutor())
        first = time.perf_counter() - start
        start = time.perf_counter()
        sweep(cfg, store, SerialExecutor())
        resumed = time.perf_counter() - start
    print(
        f"\n{n_tasks} toy tasks: plain loop {plain * 1e3:.1f} ms, sweep into the store "
        f"{first * 1e3:.1f} ms (overhead {(first - plain) / n_tasks * 1e3:.2f} ms/task), "
        f"rerun from the store {resumed * 1e3:.1f} ms ({resumed / n_tasks * 1e3:.2f} ms/task)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200)
    args = parser.parse_args()
    store_costs(args.records)
    sweep_overhead(args.records)

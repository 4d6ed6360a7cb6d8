"""The full ``prototypes`` configuration's cost, task by task, at a fraction of its seeds.

Every task of the full configuration (each size, initialisation and step size) is run in this
process, one after another, through the experiment's own task function at ``--seeds`` seeds
instead of the configuration's (a task's cost is linear in its seeds: each seed adds the same
runs), with ``--set``-style overrides (``--cap``). It prints each task's CPU time (training and
measures) and the share of its runs that settled, and the total scaled to the configuration's
seeds: the configuration's CPU time, and its wall time on two cores when its tasks are shared
evenly. Timings on a shared machine move with its load: print ``uptime`` beside them.

Run: ``python benchmarks/bench_prototypes_tasks.py [--seeds 4] [--cap 6000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gaugedyn._meta import task_seed
from gaugedyn.experiments.prototypes import prototypes as ex


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--cap", type=int, default=None)
    args = p.parse_args(argv)
    full = {k: q.default for k, q in ex.Prototypes.params.items()}
    cfg = full | {"seeds": args.seeds} | ({"cap": args.cap} if args.cap else {})
    total = 0.0
    for task in ex.Prototypes().tasks(cfg):
        start = time.process_time()
        result = ex._run_task(task, task_seed(13, "prototypes", task))
        cpu = time.process_time() - start
        total += cpu
        settled = float(np.mean(np.asarray(result["settled_at"]) >= 0))
        print(
            f"N={task['n']:4d} {task['init']:6s} lr={task['lr']:g}: {cpu:7.1f} CPU-s, "
            f"{settled:.0%} settled",
            flush=True,
        )
    scale = int(full["seeds"]) / args.seeds
    print(
        f"total {total:.0f} CPU-s at {args.seeds} seeds (cap {cfg['cap']}); at "
        f"{full['seeds']} seeds: {total * scale / 60:.1f} CPU-minutes, "
        f"{total * scale / 120:.1f} minutes on two cores"
    )


if __name__ == "__main__":
    main()

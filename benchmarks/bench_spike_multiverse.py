"""The ``spike_boundary`` multiverse's cost against one run: the shared pass, task by task.

The multiverse's specifications (`gaugedyn.harness._space.specifications()`: the primary, every
end, ``--samples`` joint draws) differ only in the spike detector's sampling, so their tasks are
one shared task each (`gaugedyn.harness._multiverse.shared_config()`): every trajectory simulated
once, every sampling judged on it, each bisecting on its own. Every task of the configuration
(the check left out: no constant changes it, so the store computes it once either way) is run
in this process twice, one after the other: as the primary alone (one run) and as the shared
task of the whole multiverse. It prints each task's CPU time both ways and the cells and steps
simulated, the totals' ratio, and the multiverse's wall estimate on two cores: the published
full run's wall (``results-data/spike_boundary/summary.json``) times the ratio, against one
specification a task (each specification a full run). ``--rows`` keeps every k-th row of each
1-D map and ``--seeds`` sets the seeds per cell (a fraction of the full cost; the ratio is
the figure that carries over). Timings on a shared machine move with its load: the load and
the CPU model are printed beside them.

Run: ``python benchmarks/bench_spike_multiverse.py [--quick] [--rows 4] [--seeds 2]
[--samples 8] [--kinds 1d,task] [--set KEY=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from _record import cpu_model

from gaugedyn._meta import task_seed
from gaugedyn.harness import load_config
from gaugedyn.harness._multiverse import SAMPLES, shared_config
from gaugedyn.harness._space import specifications

ROOT = Path(__file__).resolve().parents[1]


def _overrides(cfg, rows: int, seeds: int | None) -> list[str]:
    out = []
    if rows > 1:
        for key in ("one_minus_beta1", "rows_above_2"):
            out.append(f"{key}={cfg.params[key][::rows]}")
    if seeds is not None:
        out += [f"seeds={seeds}", f"seeds_above_2={seeds}", f"task_seeds={seeds}"]
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rows", type=int, default=1)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--kinds", default="1d,task")
    p.add_argument("--set", action="append", default=[], help="a further override, KEY=VALUE")
    args = p.parse_args(argv)
    path = ROOT / "simulations/spike_boundary.toml"
    cfg = load_config(path, quick=args.quick)
    more = _overrides(cfg, args.rows, args.seeds) + args.set
    cfg = load_config(path, quick=args.quick, overrides=more)
    specs = specifications(cfg.space, cfg.experiment.params, cfg.params, args.samples, cfg.seed)
    shared = shared_config(cfg, specs)
    print(f"CPU: {cpu_model()}; load at start {os.getloadavg()}")
    print(
        f"{len(specs)} specifications, {len(shared.params['spike_shared'])} samplings: "
        f"{shared.params['spike_shared']}"
    )
    kinds = set(args.kinds.split(","))
    exp = cfg.experiment
    totals = [0.0, 0.0]
    for plain, task in zip(cfg.tasks, shared.tasks):
        if plain["kind"] not in kinds:
            continue
        seconds, results = [], []
        for t in (plain, task):
            seed = task_seed(cfg.seed, cfg.name, exp.seed_coordinates(t))
            c0 = time.process_time()
            results.append(exp.run_task(t, seed))
            seconds.append(time.process_time() - c0)
        totals = [totals[0] + seconds[0], totals[1] + seconds[1]]
        label = f"{plain['kind']} {plain.get('n', plain.get('task'))} {plain['start']}"
        print(
            f"{label:24s} primary alone {seconds[0]:8.1f} CPU-s, shared {seconds[1]:8.1f} "
            f"CPU-s (x{seconds[1] / seconds[0]:.2f}); cells {results[0].get('cells_run', '-')}"
            f" -> {results[1].get('cells_run', '-')}, steps {results[0]['steps_run']:.3g} -> "
            f"{results[1]['steps_run']:.3g}",
            flush=True,
        )
    ratio = totals[1] / totals[0]
    summary = json.loads((ROOT / "results-data/spike_boundary/summary.json").read_text())
    wall = float(summary["diagnostics"]["wall_seconds"])
    print(
        f"total: primary alone {totals[0]:.1f} CPU-s, shared {totals[1]:.1f} CPU-s, "
        f"ratio {ratio:.2f}"
    )
    print(
        f"full multiverse estimate on two cores: {ratio:.2f} x {wall:.0f} s (the published "
        f"full run) = {ratio * wall / 60:.1f} min; one specification a task: {len(specs)} x "
        f"{wall:.0f} s = {len(specs) * wall / 60:.0f} min"
    )
    print(f"load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()

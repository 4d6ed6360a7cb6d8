"""The full ``prototypes`` configuration's cost on two cores, from a declared share of its seeds.

The share: seeds ``0 .. K-1`` (``--seeds K``, default 4, a tenth of the configuration's 40) of
every one of its 24 tasks (six sizes x two initialisations x two step sizes), each run through
the experiment's own task function in this process, one after another, with the task seed the
full run gives it: the share's runs are exactly the full run's runs of those seeds. A seed adds
the same 35 runs to every task, so a task's cost at 40 seeds is estimated as its cost at ``K``
seeds times ``40 / K`` (seeds differ in how many of their runs settle before the cap: the share
is a sample of them, and the estimate carries that sampling error).

With ``--before REV`` each task is also run with the prototypes kernel of commit ``REV``
(``git show REV:src/gaugedyn/experiments/prototypes/_kernels.py``, imported in place of the
current one), interleaved task by task (before, then after), and every array the task returns
(each measure per seed and run at every budget reading, the prototypes, the settling steps, the
fit and outside-fraction histories) is compared bit for bit: the cut must leave every per-seed
value where it was.

Then the analysis and the figures of a full run (``gaugedyn run``'s, through the harness), on
the share's results tiled to 40 seeds (their cost follows the arrays' sizes, not their values),
timed once. The estimate on two cores is the harness's schedule: a pool of two workers takes
the tasks in the configuration's order, each worker the next task when it is free, so the
estimate is that schedule's makespan over the scaled task CPU times, plus the analysis and
figures (one process). CPU times are ``time.process_time()``; a shared machine's load moves them:
the CPU model and the load at the start and end are printed and stored. Long: it stores each
task as it finishes in ``PATH.partial`` and its arrays in ``PATH.partial.d/`` (``--json PATH``) and ``--stop-after S`` ends a chunk
after ``S`` seconds of wall; the same command resumes.

Run: ``python benchmarks/bench_prototypes_full.py [--seeds 4] [--before REV] [--json PATH]
[--stop-after S]``.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _record import Progress, describe_machine

from gaugedyn._meta import task_seed
from gaugedyn.harness import load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "simulations" / "prototypes.toml"
KERNEL = "src/gaugedyn/experiments/prototypes/_kernels.py"
PACKAGE = "gaugedyn.experiments.prototypes"
SEED_AXIS = {"fit_history": 1, "outside_history": 1, "record": None, "checkpoints": None}
"""The seed axis of each array a task returns (``None``: no seed axis); 0 for the others."""


def _kernel_of(rev: str, folder: Path):
    """The prototypes kernel module of commit ``rev``, imported from a copy in ``folder``."""
    text = subprocess.run(
        ["git", "show", f"{rev}:{KERNEL}"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    (folder / f"_kernels_{rev}.py").write_text(text)
    sys.path.insert(0, str(folder))  # an importable name: numba's cache reloads by it
    return importlib.import_module(f"_kernels_{rev}")


def _use(kernel) -> None:
    """Make ``kernel`` the module `train_fused()` imports as ``._kernels``."""
    import gaugedyn.experiments.prototypes as pkg

    sys.modules[f"{PACKAGE}._kernels"] = kernel
    pkg._kernels = kernel


def _timed(experiment, task, seed) -> tuple[dict, float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    result = experiment.run_task(task, seed)
    return result, time.process_time() - c0, time.perf_counter() - w0


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True) for k in a
    )


def _tile(result: dict, seeds: int) -> dict:
    """A task's result with its seeds repeated to ``seeds`` along each array's seed axis."""
    out = {}
    for key, value in result.items():
        value = np.asarray(value)
        axis = SEED_AXIS.get(key, 0)
        if axis is None:
            out[key] = value
            continue
        reps = -(-seeds // value.shape[axis])
        out[key] = np.take(np.concatenate([value] * reps, axis=axis), np.arange(seeds), axis=axis)
    return out


def two_workers(seconds: list[float]) -> float:
    """The makespan of tasks taken in order by two workers, each the next when it is free."""
    free = [0.0, 0.0]
    for s in seconds:
        i = int(np.argmin(free))
        free[i] += s
    return max(free)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--before", default=None, help="a commit whose kernel is the 'before'")
    p.add_argument("--json", default=None, help="store the record here (resumable)")
    p.add_argument("--stop-after", type=float, default=None)
    args = p.parse_args(argv)
    full = load_config(CONFIG)
    seeds_full = int(full.params["seeds"])
    experiment = full.experiment
    tasks = [{**task, "seeds": args.seeds} for task in full.tasks]
    print(describe_machine(), flush=True)
    print(
        f"{len(tasks)} tasks at seeds 0..{args.seeds - 1} of {seeds_full} "
        f"(scale x{seeds_full / args.seeds:g})",
        flush=True,
    )
    state = Progress(
        args.json or Path(tempfile.mkdtemp()) / "record.json",
        "bench_prototypes_full.py",
        {"seeds": args.seeds, "before": args.before, "config": str(CONFIG.relative_to(ROOT))},
        argv,
        stop_after=args.stop_after,
    )
    folder = (
        Path(args.json).with_name(Path(args.json).name + ".partial.d")
        if args.json
        else Path(tempfile.mkdtemp())
    )
    folder.mkdir(parents=True, exist_ok=True)
    after = importlib.import_module(f"{PACKAGE}._kernels")
    before = _kernel_of(args.before, folder) if args.before else None
    for kernel in (before, after):  # compiled (or loaded from numba's cache) before timing
        if kernel is not None:
            _use(kernel)
            experiment.run_task({**tasks[0], "seeds": 1}, np.random.SeedSequence(0))
    results = []
    rows = []
    for task, whole in zip(tasks, full.tasks, strict=True):
        # the full run's task seed: the share's runs are the full run's runs of its seeds
        seed = task_seed(full.seed, full.name, experiment.seed_coordinates(whole))
        label = f"N={task['n']} {task['init']} lr={task['lr']:g}"

        def unit(task=task, seed=seed):
            row = {"n": task["n"], "init": task["init"], "lr": task["lr"]}
            if before is not None:
                _use(before)
                old, row["cpu_before"], row["wall_before"] = _timed(experiment, task, seed)
            _use(after)
            new, row["cpu"], row["wall"] = _timed(experiment, task, seed)
            if before is not None:
                row["identical"] = _same(old, new)
            settled = np.asarray(new["settled_at"])
            row["settled_share"] = float(np.mean(settled >= 0))
            steps = np.where(settled >= 0, np.maximum(settled, max(task["budgets"])), task["cap"])
            row["run_steps"] = int(steps.sum())
            np.savez(folder / f"{len(rows)}.npz", **new)
            return row

        row = state.unit(label, unit)
        rows.append(row)
        path = folder / f"{len(rows) - 1}.npz"
        if path.exists():
            with np.load(path) as f:
                results.append({k: f[k] for k in f.files})
        line = f"{label:24s} {row['cpu']:7.1f} CPU-s ({row['wall']:.1f} s wall)"
        if "cpu_before" in row:
            line += (
                f", before {row['cpu_before']:7.1f} CPU-s (x{row['cpu_before'] / row['cpu']:.2f})"
                f", identical: {row['identical']}"
            )
        print(line + f", {row['settled_share']:.0%} settled", flush=True)

    def conclude():
        from gaugedyn.harness._drawing import draw
        from gaugedyn.harness._summary import analyse

        if len(results) != len(tasks):
            raise SystemExit(
                f"the tasks' results of an earlier chunk are gone from {folder}: delete the "
                ".partial record and run again"
            )
        tiled = [_tile(r, seeds_full) for r in results]
        c0 = time.process_time()
        arrays, _, _ = analyse(full, tiled)
        c1 = time.process_time()
        draw(full.experiment, arrays, full.params, folder / "figures")
        return {"analyse_cpu": c1 - c0, "plot_cpu": time.process_time() - c1}

    tail = state.unit("analysis and figures at 40 seeds", conclude)
    scale = seeds_full / args.seeds
    data: dict = {"seeds": args.seeds, "scale": scale, "tasks": rows, **tail}
    for key, name in (("cpu", "after"), ("cpu_before", "before")):
        if key not in rows[0]:
            continue
        per_task = [r[key] * scale for r in rows]
        serial = tail["analyse_cpu"] + tail["plot_cpu"]
        data[name] = {
            "task_cpu": sum(per_task),
            "two_core_wall": two_workers(per_task) + serial,
            "by_size": {
                str(n): sum(t for t, r in zip(per_task, rows) if r["n"] == n)
                for n in sorted({r["n"] for r in rows})
            },
        }
        print(
            f"{name}: tasks {sum(per_task) / 60:.1f} CPU-min at {seeds_full} seeds; analysis "
            f"{tail['analyse_cpu']:.1f} + figures {tail['plot_cpu']:.1f} CPU-s; on two cores "
            f"(the pool's schedule) {data[name]['two_core_wall'] / 60:.1f} min",
            flush=True,
        )
    if before is not None:
        data["identical"] = all(r["identical"] for r in rows)
        print(f"every task's arrays bit for bit the before kernel's: {data['identical']}")
    state.finish(data)
    for path in folder.glob("*.npz"):
        path.unlink()
    print(describe_machine())


if __name__ == "__main__":
    main()

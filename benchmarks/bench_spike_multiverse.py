"""The ``spike_boundary`` multiverse's cost against one run: the shared pass, task by task.

The multiverse's specifications (`gaugedyn.harness._space.specifications()`: the primary, every
end, ``--samples`` joint draws) differ only in the spike detector's sampling, so their tasks are
one shared task each (`gaugedyn.harness._multiverse.shared_config()`): every trajectory simulated
once, every sampling judged on it, each bisecting on its own. Every task of the configuration
(the check left out: no constant changes it, so the store computes it once either way) is run
in this process twice, one after the other: as the primary alone (one run) and as the shared
task of the whole multiverse. It prints each task's CPU time both ways and the cells and steps
simulated, the totals' ratio, and, while the published run is a single run, the multiverse's
wall estimate on two cores: that run's wall (``results-data/spike_boundary/summary.json``) times
the ratio (it holds where this code's primary alone costs what the published run's code did),
against one specification a task (each specification a full run); and the full multiverse as
measured (``benchmarks/results/spike_multiverse.json``) where it has been. ``--rows`` keeps every k-th row of each
1-D map and ``--seeds`` sets the seeds per cell (a fraction of the full cost; the ratio is
the figure that carries over). Timings on a shared machine move with its load: the load and
the CPU model are printed beside them.

``--full-run DIR`` times the full multiverse itself instead: ``gaugedyn multiverse
simulations/spike_boundary.toml --workers 2 --out DIR`` (``--samples``) in a subprocess, its
wall time, and its CPU time as the user plus system time of its process tree (the main process,
the executor's forkserver and workers), sampled every ``POLL`` seconds (`psutil`) and checked
against the reaped children's resource usage; with ``--json PATH`` the record (command, date, CPU
model, load at the start and the end, commit; the multiverse's specifications, samplings and
tasks, from ``DIR/summary.json``; the records in its store before and after; the published
single run's wall, where the published run is one) is stored for ``tools/bench_page.py``.
Rerun on a folder that holds part of a run, it times the rest (the record says how many records
the store held at the start).

Run: ``python benchmarks/bench_spike_multiverse.py [--quick] [--rows 4] [--seeds 2]
[--samples 8] [--kinds 1d,task] [--set KEY=VALUE ...]`` or ``python
benchmarks/bench_spike_multiverse.py --full-run results/spike-mv [--json
benchmarks/results/spike_multiverse.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _record import cpu_model, describe_machine, start_record, write_record

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


POLL = 2.0
"""Seconds between samples of the process tree's CPU time in ``--full-run``."""


def tree_cpu(pid: int, seen: dict) -> None:
    """Record into ``seen`` (``(pid, start time) -> user + system seconds``) the CPU time of
    process ``pid`` and every descendant now alive."""
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        try:
            with proc.oneshot():
                t = proc.cpu_times()
                seen[(proc.pid, proc.create_time())] = t.user + t.system
        except psutil.NoSuchProcess:
            continue


def _stored(out: str) -> int:
    """Records in the store of the multiverse folder ``out`` (tasks and specifications)."""
    from gaugedyn.harness._folders import TASKS
    from gaugedyn.harness._store import ResultStore

    folder = Path(out) / TASKS
    return len(list(ResultStore(folder).keys())) if folder.exists() else 0


def _single_wall() -> float | None:
    """The published run's wall seconds while it is a single run (``None`` once a multiverse
    is published)."""
    summary = json.loads((ROOT / "results-data/spike_boundary/summary.json").read_text())
    if summary.get("command", {}).get("command", "run") != "run":
        return None
    return float(summary["diagnostics"]["wall_seconds"])


def full_run(
    out: str, samples: int, workers: int, json_path: str | None, argv, quick: bool = False
) -> dict:
    """Run and time the full multiverse into ``out`` (module doc); return the record's data."""
    record = start_record("bench_spike_multiverse.py", argv)
    print(describe_machine(), flush=True)
    cmd = [
        sys.executable,
        "-m",
        "gaugedyn",
        "multiverse",
        "simulations/spike_boundary.toml",  # relative to ROOT (the cwd): the recorded command
        "--workers",
        str(workers),
        "--samples",
        str(samples),
        "--out",
        out,
    ] + (["--quick"] if quick else [])
    stored_before = _stored(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen: dict = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    while proc.poll() is None:
        tree_cpu(proc.pid, seen)
        time.sleep(POLL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sampled = sum(seen.values())
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
    summary = json.loads((Path(out) / "summary.json").read_text())
    mv = summary.get("multiverse", {})
    stored_after = _stored(out)
    data = {
        "wall_s": wall,
        "cpu_s": max(sampled, reaped),
        "cpu_sampled_s": sampled,
        "cpu_reaped_s": reaped,
        "processes": len(seen),
        "workers": workers,
        "samples": samples,
        "quick": quick,
        "specifications": len(mv.get("specifications", [])),
        "samplings": 1 + max(len(t.get("also", ())) for t in summary["tasks"]),
        "tasks": len(summary["tasks"]),
        "stored_before": stored_before,
        "stored_after": stored_after,
        "run_wall_seconds": summary["diagnostics"].get("wall_seconds"),
        "published_single_wall_s": _single_wall(),
    }
    print(
        f"full multiverse: {data['specifications']} specifications, {data['samplings']} "
        f"samplings, {data['tasks']} tasks; records in the store {stored_before} -> "
        f"{stored_after} (tasks and specifications): wall "
        f"{wall / 60:.1f} min, CPU {data['cpu_s'] / 60:.1f} min (sampled {sampled:.0f} s over "
        f"{len(seen)} processes, reaped {reaped:.0f} s); load at end {os.getloadavg()}"
    )
    if json_path:
        write_record(json_path, record, data)
    return data


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rows", type=int, default=1)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--kinds", default="1d,task")
    p.add_argument("--set", action="append", default=[], help="a further override, KEY=VALUE")
    p.add_argument("--full-run", default=None, help="time the full multiverse into this folder")
    p.add_argument("--workers", type=int, default=2, help="with --full-run: its workers")
    p.add_argument("--json", default=None, help="with --full-run: write the benchmark record")
    args = p.parse_args(argv)
    if args.full_run:
        full_run(args.full_run, args.samples, args.workers, args.json, argv, args.quick)
        return
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
    print(
        f"total: primary alone {totals[0]:.1f} CPU-s, shared {totals[1]:.1f} CPU-s, "
        f"ratio {ratio:.2f}"
    )
    summary = json.loads((ROOT / "results-data/spike_boundary/summary.json").read_text())
    wall = float(summary["diagnostics"]["wall_seconds"])
    commit = summary.get("published", {}).get("code_version", {}).get("commit", "?")[:10]
    if summary.get("command", {}).get("command", "run") == "run":
        print(
            f"full multiverse estimate on two cores: {ratio:.2f} x {wall:.0f} s (the published "
            f"full run, code of commit {commit}) = {ratio * wall / 60:.1f} min, where this "
            "code's primary alone costs what that code's did (to compare code, run this "
            f"benchmark at both commits, interleaved); one specification a task: {len(specs)} x "
            f"{wall:.0f} s = {len(specs) * wall / 60:.0f} min"
        )
    record = ROOT / "benchmarks/results/spike_multiverse.json"
    if record.exists():
        r = json.loads(record.read_text())
        print(
            f"the full multiverse as measured ({record.relative_to(ROOT)}): wall "
            f"{r['data']['wall_s'] / 60:.1f} min, CPU {r['data']['cpu_s'] / 60:.1f} min, "
            f"{r['date']}, load {r['load_start'][0]:.2f} at the start, commit {r['commit']}"
        )
    print(f"load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()

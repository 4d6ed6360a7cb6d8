"""The whole reproduction, timed: every experiment's configuration run as ``gaugedyn reproduce``
runs it, one row per experiment.

Each experiment of ``simulations/*.toml`` is loaded (:func:`gaugedyn.experiments.load_config`)
and run (:func:`gaugedyn.experiments.execute`, figures on the Agg backend) into a fresh temporary
folder, so every task is computed, none reused. Each experiment opens its own executor (so its
workers have ended, and their CPU time is counted, when its row is written), where ``gaugedyn
reproduce`` shares one: each row carries its pool's start-up. Per experiment it prints

- ``tasks``: the configuration's tasks (``diagnostics.tasks.tasks`` of ``summary.json``);
- ``wall s``: wall time around :func:`execute` (``time.perf_counter``);
- ``CPU s``: CPU time of this process and every process under it over that interval, user +
  system. With psutil (installed with the ``test`` extra, through ``dask[distributed]``) it is
  ``getrusage(RUSAGE_SELF) + getrusage(RUSAGE_CHILDREN)`` plus, for each live descendant (the
  forkserver that starts the pool's workers and reaps them), its own and its reaped children's
  times; without psutil only the first two, which miss workers reaped by the forkserver (the
  column is then marked ``*``);
- ``CPU/wall``: the cores kept busy on average;
- the shares of the run's own ``diagnostics.wall_seconds`` spent in the sweep over tasks
  (training; the remainder after analysis and figures, so it includes opening the store),
  in analysis (``analyse_seconds``: the experiment's ``analyse`` and writing ``arrays.npz``)
  and in figures (``plot_seconds``);
- ``task s``: the tasks' summed compute time (``compute_seconds``, each task's wall time inside
  its worker), and the run's status.

A total row sums the times and tasks; its shares are weighted by each run's wall time.

There is no peer for the whole reproduction, so no ratio for the table. One experiment runs
copies batched where a loop of single runs is the peer: the stability scan (``spike_boundary``)
trains all its cells and seeds of a task as one batched program (``adam_stability._batched``).
Unless ``--no-ratio``, its batched-against-loop ratio is measured side by side on a small
subset: ``B`` copies of ``teacher_mse`` with per-copy betas trained as one batch, against the
same ``B`` copies trained one at a time by the same code, interleaved over rounds in rotating
order, median and quartiles of the per-round ratio in wall and in CPU time. ``beta_grid``
trains every cell and seed of a task as one program (``adam_split._batched``): unless
``--no-ratio``, ``benchmarks/bench_beta_grid.py``'s ratio against today's per-run tasks on the
same copies is printed beside it (``--grid-steps``, ``--grid-rounds``; 2 x 2 cells x 2 seeds of
every task), with the loss trajectories compared and the findings judged from both. ``gauge_under_adam``
(every beta pair and seed of a ``D``), ``prototypes`` (every run of a task, one compiled call)
and ``shared_representation`` (a cohort of seeds x variants) are batched too: unless
``--no-ratio``, ``benchmarks/bench_batched_grids.py`` measures each against a loop of one-copy
runs on a small subset (interleaved rounds, wall and CPU, median and range, the largest
difference of the outputs).

    .venv/bin/python benchmarks/bench_reproduce.py --quick
        [--only a,b] [--full] [--executor process|thread|serial] [--workers N]
        [--no-ratio] [--grid-steps 100] [--grid-rounds 2]
        [--markdown PATH]

One of ``--quick`` (the reduced configurations) or ``--full`` must be given. ``--markdown PATH``
writes the table as a docs page with the command, date and machine: the full run's page is
``docs/benchmarks-reproduce-full.md``, which ``tools/bench_page.py`` sums into
``docs/benchmarks.md``; the quick run's timings are printed, not kept in the docs.
``--json PATH`` stores the rows as a benchmark record (command, date, machine, commit, load at
the start and the end, and each row's own 1-minute load before and after its run) for
``tools/bench_page.py``: ``benchmarks/results/full_runs_<experiment>.json`` with ``--only
<experiment>`` times one experiment's full run (issue 42: full ``spike_boundary`` and full
``adam_edge`` each under 15 minutes on two cores), rendered with the two-core estimate (CPU
time / 2) beside the wall time. ``--set KEY=VALUE`` (repeatable) sets a setting of every
configuration run, as ``gaugedyn run --set`` does: a declared extension, such as the
``prototypes`` headline configuration (issue 44), its row named with its settings.

    .venv/bin/python benchmarks/bench_reproduce.py --full --only spike_boundary --workers 2
        --no-ratio --json benchmarks/results/full_runs_spike_boundary.json
    .venv/bin/python benchmarks/bench_reproduce.py --full --only prototypes --set design=headline
        --workers 2 --no-ratio --json benchmarks/results/full_runs_prototypes_headline.json
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COLUMNS = (
    "experiment",
    "tasks",
    "wall s",
    "CPU s",
    "CPU/wall",
    "sweep %",
    "analysis %",
    "figures %",
    "task s",
    "status",
)


def cpu_seconds() -> tuple[float, bool]:
    """CPU seconds (user + system) of this process and everything under it so far, and whether
    the live descendants were counted (psutil present)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    try:
        import psutil
    except ImportError:
        return total, False
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:  # exited between the listing and the reading
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total, True


def row_from_summary(
    name: str, summary: dict, wall: float, cpu: float, complete_cpu: bool = True
) -> dict:
    """One table row from a run's ``summary.json`` and the times measured around it."""
    diag = summary.get("diagnostics", {})
    counts = diag.get("tasks", {})
    run_wall = float(diag.get("wall_seconds", wall))
    analyse = float(diag.get("analyse_seconds", 0.0))
    plot = float(diag.get("plot_seconds", 0.0))
    return {
        "experiment": name,
        "tasks": int(counts.get("tasks", 0)),
        "reused": int(counts.get("reused", 0)),
        "wall": wall,
        "cpu": cpu,
        "complete_cpu": complete_cpu,
        "run_wall": run_wall,
        "sweep": max(run_wall - analyse - plot, 0.0),
        "analyse": analyse,
        "plot": plot,
        "task_seconds": float(counts.get("compute_seconds", 0.0)),
        "status": str(summary.get("status", "?")),
    }


def error_row(name: str, wall: float, cpu: float, err: BaseException) -> dict:
    """A row for a run that raised before writing its summary."""
    row = row_from_summary(name, {}, wall, cpu)
    row.update(run_wall=0.0, sweep=0.0, status=f"error: {type(err).__name__}")
    return row


def total_row(rows: list[dict]) -> dict:
    """Sums over ``rows``; the shares (computed in :func:`table`) are wall-weighted."""
    keys = (
        "tasks",
        "reused",
        "wall",
        "cpu",
        "run_wall",
        "sweep",
        "analyse",
        "plot",
        "task_seconds",
    )
    total = {k: sum(r[k] for r in rows) for k in keys}
    ok = sum(r["status"] == "passed" for r in rows)
    total.update(
        experiment="total",
        complete_cpu=all(r["complete_cpu"] for r in rows),
        status=f"{ok}/{len(rows)} passed",
    )
    return total


def _cells(row: dict) -> list[str]:
    share = (
        (lambda x: f"{100 * x / row['run_wall']:.0f}") if row["run_wall"] > 0 else (lambda x: "-")
    )
    cpu = f"{row['cpu']:.1f}" + ("" if row["complete_cpu"] else "*")
    ratio = f"{row['cpu'] / row['wall']:.2f}" if row["wall"] > 0 else "-"
    return [
        row["experiment"],
        str(row["tasks"]),
        f"{row['wall']:.1f}",
        cpu,
        ratio,
        share(row["sweep"]),
        share(row["analyse"]),
        share(row["plot"]),
        f"{row['task_seconds']:.1f}",
        row["status"],
    ]


def table(rows: list[dict], markdown: bool = False) -> str:
    """The table of ``rows`` and their total, as plain text or as a Markdown table."""
    body = [_cells(r) for r in rows] + [_cells(total_row(rows))]
    if markdown:
        lines = [
            "| " + " | ".join(COLUMNS) + " |",
            "|"
            + "|".join(
                ":---" if i in (0, len(COLUMNS) - 1) else "---:" for i in range(len(COLUMNS))
            )
            + "|",
        ]
        lines += ["| " + " | ".join(c) + " |" for c in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(COLUMNS, *body)]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i in (0, len(cells) - 1) else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths))
    )
    rule = "-" * len(fmt(list(COLUMNS)))
    return "\n".join([fmt(list(COLUMNS)), rule, *map(fmt, body[:-1]), rule, fmt(body[-1])])


def _quartiles(x: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(x, n=4, method="inclusive") if len(x) > 1 else [x[0]] * 3
    return q[0], statistics.median(x), q[2]


BLOCK = 24
"""Steps per block of the spike detector in :func:`batched_ratio`."""


def _medians(blocks):
    """The block medians of each copy of ``adam_steps``, one column per copy."""
    import numpy as np

    return np.stack([b.median for b in blocks], axis=1)


def batched_ratio(copies: int = 16, steps: int = 300, rounds: int = 5) -> dict:
    """The stability scan's batched copies against a loop of single copies, side by side.

    ``copies`` teacher-student copies (``teacher_mse``, 256 samples, float64, one torch thread as
    ``spike_boundary`` runs them) with per-copy betas, ``steps`` full-batch Adam steps; returns
    the quartiles of loop / batched per round in wall and CPU time, and the largest difference of
    the recorded log10 losses (their block medians) between the two (the same arithmetic per
    copy)."""
    import numpy as np
    import torch

    from gaugedyn.experiments.adam_stability._batched import BatchedMLP, adam_steps

    if steps < 2 * BLOCK:
        raise InputError(
            f"steps={steps} is not allowed; allowed: at least {2 * BLOCK} (two of the spike "
            f"detector's blocks of {BLOCK} steps, whose medians are compared)"
        )
    rng = np.random.default_rng(0)
    b1 = 1 - 10 ** rng.uniform(-2, -0.5, copies)
    b2 = 1 - 10 ** rng.uniform(-4, -2, copies)
    seeds = np.arange(copies)

    def batched():
        model = BatchedMLP("teacher_mse", copies, seeds, 256, dtype=torch.float64)
        return _medians(adam_steps(model, 1e-2, b1, b2, steps, BLOCK)[0])

    def loop():
        return np.concatenate(
            [
                _medians(
                    adam_steps(
                        BatchedMLP("teacher_mse", 1, seeds[k : k + 1], 256, dtype=torch.float64),
                        1e-2,
                        b1[k : k + 1],
                        b2[k : k + 1],
                        steps,
                        BLOCK,
                    )[0]
                )
                for k in range(copies)
            ],
            axis=1,
        )

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        diff = float(np.nanmax(np.abs(batched() - loop())))  # warm up, and compare
        variants = {"loop": loop, "batched": batched}
        names = list(variants)
        wall = {k: [] for k in names}
        cpu = {k: [] for k in names}
        for r in range(rounds):
            for k in names[r % 2 :] + names[: r % 2]:
                t0, c0 = time.perf_counter(), time.process_time()
                variants[k]()
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
    finally:
        torch.set_num_threads(before)
    return {
        "copies": copies,
        "steps": steps,
        "rounds": rounds,
        "max_abs_diff": diff,
        "wall": _quartiles([a / b for a, b in zip(wall["loop"], wall["batched"])]),
        "cpu": _quartiles([a / b for a, b in zip(cpu["loop"], cpu["batched"])]),
    }


def ratio_text(r: dict) -> str:
    w, c = r["wall"], r["cpu"]
    return (
        f"spike_boundary's batched copies against a loop of single copies ({r['copies']} "
        f"teacher_mse copies x {r['steps']} Adam steps, {r['rounds']} rounds interleaved): "
        f"loop / batched wall {w[1]:.1f}x [{w[0]:.1f}, {w[2]:.1f}], "
        f"CPU {c[1]:.1f}x [{c[0]:.1f}, {c[2]:.1f}]; "
        f"largest |difference| of the recorded log10 losses {r['max_abs_diff']:.1e}"
    )


def grid_ratio(steps: int = 100, rounds: int = 2, tasks=None) -> dict:
    """``benchmarks/bench_beta_grid.py``'s batched-against-per-run ratio (its defaults: 2 x 2
    cells x 2 seeds of every task, or of ``tasks``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_beta_grid", Path(__file__).resolve().parent / "bench_beta_grid.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.beta_grid_ratio(tasks, steps=steps, rounds=rounds)
    result["text"] = module.ratio_text(result)
    return result


def batched_grids(rounds: int = 3) -> list[dict]:
    """``benchmarks/bench_batched_grids.py``'s measurements (gauge_under_adam, prototypes,
    shared_representation: batched against a loop of one-copy runs), each with its ``text``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_batched_grids", Path(__file__).resolve().parent / "bench_batched_grids.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure_all(rounds=rounds)


def run_experiment(
    path: Path, quick: bool, spec, out: Path, overrides: tuple[str, ...] = ()
) -> dict:
    """Run one configuration (with ``--set`` ``overrides``) into ``out`` and return its row,
    named by the configuration's stem and the overrides."""
    from gaugedyn.experiments import execute, load_config

    cfg = load_config(path, quick=quick, overrides=overrides)
    name = " ".join([path.stem, *(f"--set {o}" for o in overrides)])
    c0, complete = cpu_seconds()
    t0 = time.perf_counter()
    try:
        outcome = execute(cfg, out, executor=spec, progress=None, backend="Agg")
    except Exception as err:  # one experiment's failure is a row, not the end of the benchmark
        c1, complete = cpu_seconds()
        return error_row(name, time.perf_counter() - t0, c1 - c0, err)
    wall = time.perf_counter() - t0
    c1, complete = cpu_seconds()
    return row_from_summary(name, outcome.summary, wall, c1 - c0, complete)


def load_note(load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    """A warning when the machine was busy: a 1-minute load average above the core count (the
    run's own workers, one per core, bring the load to about the core count by themselves)."""
    cores = os.cpu_count() or 1
    peak = max(load[0][0], load[1][0])
    if peak <= cores:
        return ""
    return (
        f"The machine was shared with other work during the run (1-minute load average up "
        f"to {peak:.1f} on {cores} cores): wall times are inflated by the contention, and "
        "CPU/wall below the worker count shows it; CPU s is the steadier figure."
    )


def markdown_page(
    rows: list[dict],
    command: str,
    ratio: dict | None,
    quick: bool,
    executor: str,
    load: tuple[tuple[float, ...], tuple[float, ...]],
    grid: dict | None = None,
    grids: list[dict] | None = None,
) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    kind = "quick" if quick else "full"
    lines = [
        f"# Benchmark of the whole reproduction ({kind} configurations)",
        "",
        "Generated by `benchmarks/bench_reproduce.py --markdown`; do not edit by hand. Rerun:",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Date: {now}. Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; executor: {executor}. "
        "Load average before and after the run: "
        + " / ".join(", ".join(f"{x:.2f}" for x in avg) for avg in load)
        + " (1, 5, 15 min).",
        "",
        *([load_note(load), ""] if load_note(load) else []),
        "Each experiment runs into a fresh folder (no task reused). *wall s* and *CPU s* are "
        "measured around the run (CPU: this process and every process under it); the shares "
        "are of the run's own `diagnostics.wall_seconds`: the sweep over tasks (training), the "
        "analysis (with writing `arrays.npz`) and the figures; *task s* is the tasks' summed "
        "compute time. See the script's docstring for the definitions.",
        "",
        table(rows, markdown=True),
        "",
    ]
    if ratio is not None:
        lines += [ratio_text(ratio) + ".", ""]
    if grid is not None:
        lines += [grid["text"] + ".", ""]
    for r in grids or []:
        lines += [r["text"] + ".", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="the reduced configurations")
    mode.add_argument("--full", action="store_true", help="the full configurations")
    ap.add_argument("--only", metavar="NAME,...", help="run only these experiments")
    ap.add_argument("--simulations", default=str(REPO / "simulations"), metavar="DIR")
    ap.add_argument("--executor", choices=("process", "thread", "serial"), default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--no-ratio", action="store_true", help="skip the batched-against-loop ratio")
    ap.add_argument(
        "--grid-steps",
        type=int,
        default=100,
        metavar="N",
        help="steps of the beta_grid ratio's copies",
    )
    ap.add_argument(
        "--grid-rounds",
        type=int,
        default=2,
        metavar="N",
        help="interleaved rounds of the beta_grid ratio",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of every configuration run (as gaugedyn run --set; a declared "
        "extension, such as prototypes' --set design=headline)",
    )
    ap.add_argument("--markdown", metavar="PATH", help="also write the table as a docs page")
    ap.add_argument("--json", metavar="PATH", help="also store the rows as a benchmark record")
    args = ap.parse_args(argv)

    from gaugedyn import InputError
    from gaugedyn.experiments import ExecutorSpec

    if args.grid_steps < 3 or args.grid_rounds < 1:
        raise InputError(
            f"--grid-steps {args.grid_steps} / --grid-rounds {args.grid_rounds} "
            "are not allowed; use steps >= 3 and rounds >= 1"
        )

    files = sorted(Path(args.simulations).glob("*.toml"))
    names = [f.stem for f in files]
    if args.only is not None:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if not wanted or unknown:
            raise InputError(
                f"--only {args.only!r}: unknown experiment "
                f"{', '.join(unknown) or '(none given)'}; allowed: {', '.join(names)}"
            )
        files = [f for f in files if f.stem in wanted]
    if not files:
        raise InputError(f"--simulations {args.simulations!r}: no .toml files")
    spec = ExecutorSpec(args.executor, args.workers).validate()
    executor = f"{spec.kind}" + (f" x{spec.workers}" if spec.workers else " (one worker per core)")

    record = None
    if args.json:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import start_record

        record = start_record("bench_reproduce.py", argv)
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        for f in files:
            before = round(os.getloadavg()[0], 2)
            row = run_experiment(f, args.quick, spec, Path(tmp) / f.stem, tuple(args.set))
            row |= {"load_before": before, "load_after": round(os.getloadavg()[0], 2)}
            rows.append(row)
            print(
                f"{row['experiment']}: {row['wall']:.1f} s wall, {row['status']}",
                file=sys.stderr,
                flush=True,
            )
    load = (load_before, os.getloadavg())
    ratio = None if args.no_ratio else batched_ratio()
    grid = None if args.no_ratio else grid_ratio(args.grid_steps, args.grid_rounds)
    grids = [] if args.no_ratio else batched_grids()

    print(
        f"{'quick' if args.quick else 'full'} configurations, executor {executor}, "
        f"{os.cpu_count()} cores, load average before {load_before[0]:.2f}"
    )
    print(table(rows))
    if any(not r["complete_cpu"] for r in rows):
        print("* psutil missing: CPU of pool workers reaped by the forkserver not counted")
    if any(r["reused"] for r in rows):
        print("note: some tasks were reused from a store; their time is not in the table")
    if ratio is not None:
        print(ratio_text(ratio))
    if grid is not None:
        print(grid["text"])
    for r in grids:
        print(r["text"])
    if load_note(load):
        print(load_note(load))
    if args.markdown:
        command = ".venv/bin/python benchmarks/bench_reproduce.py " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:])
        )
        Path(args.markdown).write_text(
            markdown_page(rows, command.strip(), ratio, args.quick, executor, load, grid, grids)
        )
        print(f"wrote {args.markdown}")
    if record is not None:
        from _record import write_record

        data = {
            "rows": rows,
            "executor": executor,
            "quick": bool(args.quick),
            "cores": os.cpu_count(),
        }
        write_record(args.json, record, data)
    return 0


if __name__ == "__main__":
    from gaugedyn import InputError

    try:
        sys.exit(main())
    except InputError as err:  # bad input: one line, exit 2, nothing run
        print(f"bench_reproduce.py: error: {err}", file=sys.stderr)
        sys.exit(2)

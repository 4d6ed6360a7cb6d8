"""The stored pilot of the network tasks' third design (issue 42; `_protocol.SCAN_DESIGN`).

Each task of ``_calibration.TASKS`` is run on the design's rows, one row at a time, by the
program of ``spike_boundary``'s network tasks (`_scan._run_task` with the design's
``bracket_stride``: the downward scan on the half-decade columns and bisection on the
quarter-decade ones, 8 seeds a cell), the task's seed ``SeedSequence([SEED, task index])``
(one teacher per task; a row run alone gives what it gives in a full pass,
`_scan.copy_seeds`). Per row it stores the evaluated cells' status codes under every reading
(windows x rise thresholds), the CPU seconds, the steps run and the load; `row_edges()` reads
each reading's edge from them with `_bisect.row_edge`. ``python -m
gaugedyn.experiments.adam_stability._task_pilot --task NAME [--task NAME] [--row A]
[--skip-stored] [--until HH:MM]`` merges rows into ``task_pilot.json``; with ``--groups 2``
each task runs as ``spike_boundary`` runs it (``ROW_GROUPS`` row groups, the rows of a group
batched at each column) on two processes, and the CPU seconds are stored per group.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ._protocol import SCAN_DESIGN

SEED = 20261209
"""Root of the pilot's seeds."""
STORED = Path(__file__).with_name("task_pilot.json")


def design_task(name: str, rows=None) -> dict[str, Any]:
    """Task ``name`` of ``_calibration.TASKS`` on `SCAN_DESIGN` as a ``spike_boundary``
    network task (its default detector sampling), restricted to ``rows`` (indices) if given."""
    from ...adam import SPIKE_SAMPLING
    from ._calibration import TASKS

    cal = TASKS[name]
    out: dict[str, Any] = {
        "kind": "task",
        "task": name,
        "start": "init",
        "a": list(SCAN_DESIGN["one_minus_beta1"]),
        "c": sorted(SCAN_DESIGN["one_minus_beta2"]),
        "seeds": int(SCAN_DESIGN["seeds"]),
        "lr": float(cal["lr"]),
        "n_samples": int(cal["n_samples"]),
        "hidden": int(cal["hidden"]),
        "spikes": list(SPIKE_SAMPLING[:3]),
        "bracket_stride": int(SCAN_DESIGN["bracket_stride"]),
    }
    if rows is not None:
        out["rows"] = [int(i) for i in rows]
    return out


def run_row(name: str, i: int) -> dict[str, Any]:
    """Row ``i`` of the design for task ``name``: its evaluated cells (column, status codes
    ``(seeds, windows, rises)``, settled median ``log10`` loss per seed), the rises, steps
    and CPU seconds."""
    from ._calibration import TASKS
    from ._scan import _run_task

    k = list(TASKS).index(name)
    t0 = time.process_time()
    r = _run_task(design_task(name, [i]), np.random.SeedSequence([SEED, k]))
    cpu = time.process_time() - t0
    c = np.asarray(r["c"], float)
    st = np.asarray(r["status_rises"])[0]
    cells = []
    for j in range(c.size):
        if np.all(st[j] == 5):
            continue
        cells.append(
            {
                "c": float(c[j]),
                "status": st[j].tolist(),
                "settled_median_log10_loss": np.round(
                    np.asarray(r["settled_median_log10_loss"])[0, j], 2
                ).tolist(),
            }
        )
    return {
        "row": float(SCAN_DESIGN["one_minus_beta1"][i]),
        "rises": np.asarray(r["rises"]).tolist(),
        "cells": cells,
        "steps": int(r["steps_run"]),
        "cpu_seconds": round(cpu, 1),
    }


def _entries(r: dict[str, Any], rows: list[int]) -> list[dict[str, Any]]:
    """Per row of a task result on ``rows``, its stored entry (evaluated cells, rises)."""
    c = np.asarray(r["c"], float)
    out = []
    for k, i in enumerate(rows):
        st = np.asarray(r["status_rises"])[k]
        cells = [
            {
                "c": float(c[j]),
                "status": st[j].tolist(),
                "settled_median_log10_loss": np.round(
                    np.asarray(r["settled_median_log10_loss"])[k, j], 2
                ).tolist(),
            }
            for j in range(c.size)
            if not np.all(st[j] == 5)
        ]
        out.append(
            {
                "row": float(SCAN_DESIGN["one_minus_beta1"][i]),
                "rises": np.asarray(r["rises"]).tolist(),
                "cells": cells,
            }
        )
    return out


def run_group(job: tuple[str, int, int]) -> dict[str, Any]:
    """Row group ``g`` of ``groups`` (every ``groups``-th row from ``g``) of task ``name``,
    run as ``spike_boundary`` runs it (one task, its rows batched at each column): the rows'
    entries, with the group's steps and CPU seconds."""
    from ._calibration import TASKS
    from ._scan import _run_task

    name, g, groups = job
    rows = list(range(len(SCAN_DESIGN["one_minus_beta1"])))[g::groups]
    k = list(TASKS).index(name)
    t0 = time.process_time()
    r = _run_task(design_task(name, rows), np.random.SeedSequence([SEED, k]))
    cpu = time.process_time() - t0
    return {
        "task": name,
        "rows": _entries(r, rows),
        "steps": int(r["steps_run"]),
        "cpu_seconds": round(cpu, 1),
    }


def row_edges(entry: dict[str, Any]) -> dict[str, list[float]]:
    """A stored row's ``(edge, low, high)`` under each reading ``"<window> rise <h>"``
    (`_bisect.row_edge` of its evaluated cells)."""
    from ._bisect import row_edge
    from ._protocol import WINDOWS

    c = np.array([z["c"] for z in entry["cells"]], float)
    st = np.array([z["status"] for z in entry["cells"]])  # (cells, seeds, windows, rises)
    out = {}
    for w, window in enumerate(WINDOWS):
        for q, h in enumerate(entry["rises"]):
            e = row_edge(c, st[:, :, w, q]) if c.size else (math.nan,) * 3
            out[f"{window} rise {h:g}"] = [float(v) for v in e]
    return out


def rows_with_edge(rows: list[dict[str, Any]], reading: str) -> tuple[int, int]:
    """Of stored rows, those with an edge under ``reading`` and those of them at or below
    ``1 - beta1 = 0.05`` (issue 42's Must show: at least six, some at or below 0.05)."""
    has = [r["row"] for r in rows if math.isfinite(row_edges(r)[reading][0])]
    return len(has), sum(a <= 0.05 for a in has)


def _fmt(e: list[float]) -> str:
    def one(v: float) -> str:
        return "-" if not math.isfinite(v) else f"{v:.3g}"

    return "-" if not math.isfinite(e[0]) else f"{one(e[0])} [{one(e[1])}, {one(e[2])}]"


def pilot_markdown() -> list[str]:
    """Markdown lines of the stored pilot: per task a table of its rows (per column the settled
    window's spiky seeds / seeds spiky or quiet at rise 2 decades, ``.`` not evaluated), each
    row's settled edge with its interval at rises 2, 1.5 and 2.5, the steps, CPU seconds and
    load, then the rows with an edge per reading and the CPU seconds in all."""
    pilot = stored()
    if not pilot["tasks"]:
        return ["No pilot of the third task design is stored (`task_pilot.json`)."]
    design = pilot.get("design", SCAN_DESIGN)  # the design the pilot ran
    cols = sorted(design["one_minus_beta2"])
    out = [
        "The stored pilot of the third task design (`_protocol.SCAN_DESIGN` as it then "
        f"was, rows {', '.join(f'{a:g}' for a in design['one_minus_beta1'])}; "
        f"`{pilot['command']}`; {design['seeds']} seeds a cell, {pilot['machine']}; a "
        "cell: spiky seeds / seeds spiky or quiet under the settled window at rise 2 decades, "
        "`.` not evaluated; the edge where the spike probability falls through 1/2, with the "
        "interval from the significantly spiky to the significantly quiet cell, `-` open):",
    ]
    for name, task in pilot["tasks"].items():
        rows = task["rows"]
        out += [
            "",
            f"`{name}`:",
            "",
            "| $1 - \\beta_1$ \\ $1 - \\beta_2$ | "
            + " | ".join(f"{c:.3g}" for c in cols)
            + " | settled edge, rise 2 | rise 1.5 | rise 2.5 | steps | CPU s | load |",
            "|---" * (len(cols) + 7) + "|",
        ]
        for r in rows:
            got = {z["c"]: np.asarray(z["status"]) for z in r["cells"]}
            q = r["rises"].index(2.0)
            cells = []
            for c in cols:
                st = got.get(c)
                if st is None:
                    cells.append(".")
                    continue
                sp = int((st[:, 0, q] == 1).sum())
                cells.append(f"{sp}/{int(((st[:, 0, q] == 1) | (st[:, 0, q] == 0)).sum())}")
            e = row_edges(r)
            own = [f"{r[k]:,}" if k in r else "-" for k in ("steps", "cpu_seconds", "load")]
            out.append(
                f"| {r['row']:g} | "
                + " | ".join(cells)
                + f" | {_fmt(e['settled rise 2'])} | {_fmt(e['settled rise 1.5'])} | "
                f"{_fmt(e['settled rise 2.5'])} | " + " | ".join(own) + " |"
            )
        counts = []
        for h in ("1.5", "2", "2.5"):
            n, low = rows_with_edge(rows, f"settled rise {h}")
            counts.append(f"{n} at rise {h} ({low} at or below 0.05)")
        groups = task.get("groups", [])
        cpu = sum(r.get("cpu_seconds", 0) for r in rows) + sum(g["cpu_seconds"] for g in groups)
        steps = sum(r.get("steps", 0) for r in rows) + sum(g["steps"] for g in groups)
        out += [""] + [
            f"- row group {g['rows']} (one task, its rows batched at each column; two "
            f"processes): {g['cpu_seconds']:,.0f} CPU-s, {g['steps']:,} copy-steps, done "
            f"{g['finished_after_s']:,.0f} s after the start (load {g['load_at_start']:g} at "
            f"the start, {g['date']})"
            for g in groups
        ]
        out += [
            "",
            f"{len(rows)} of {len(design['one_minus_beta1'])} rows run; rows with a settled "
            f"edge: {', '.join(counts)}; {cpu:,.0f} CPU-s in all, {steps:,} copy-steps.",
        ]
    return out


def expected_copy_steps(design: dict[str, Any], C: float, stride: int, draws: int = 20) -> float:
    """The median over ``draws`` of the copy-steps (`_protocol.run_steps` summed over the
    evaluated cells' copies) a task on ``design`` costs when its boundary is ``c_b = C (1 -
    beta1)`` (the design check's synthetic seeds, `_detector_controls.oracle`, 0.05 decades
    wide): every cell when ``stride`` is 0, else the scan of `_scan._scan_task`."""
    from ._bisect import scan_rows
    from ._detector_controls import oracle
    from ._protocol import run_steps
    from ._scan import bracket_grid

    a = np.asarray(design["one_minus_beta1"], float)
    c = np.sort(np.asarray(design["one_minus_beta2"], float))
    S = int(design["seeds"])
    if not stride:
        aa, cc = np.meshgrid(a, c, indexing="ij")
        return float(run_steps(aa, cc).sum() * S)
    step = float(np.max(np.diff(np.log10(c))))
    totals = []
    for d in range(draws):
        seeds = oracle(a, C, 1.0, S, 0.05, seed=d)
        steps = [0]

        def evaluate(rows, cs, seeds=seeds, steps=steps):
            steps[0] += int(run_steps(a[rows], np.asarray(cs, float)).sum()) * S
            return seeds(rows, cs)

        scan_rows(a, c[bracket_grid(c, stride)], evaluate, 1.5 * step)
        totals.append(steps[0])
    return float(np.median(totals))


def cost_lines() -> list[str]:
    """The expected copy-steps of one task under the second and third designs, every cell and
    scanned, at the ``C`` of the design check and of the second design's pilot and below."""
    from ._protocol import DESIGN_C, TASK_DESIGN

    out = []
    for C in (DESIGN_C, 0.034, 0.015, 0.005):
        parts = [
            f"{label} {expected_copy_steps(d, C, k) / 1e6:.2f}e6"
            for label, d, k in (
                ("second, every cell", TASK_DESIGN, 0),
                ("second, scanned", TASK_DESIGN | {"bracket_stride": 2}, 2),
                ("third, every cell", SCAN_DESIGN, 0),
                ("third, scanned", SCAN_DESIGN, 2),
            )
        ]
        out.append(f"C = {C:g}: " + "; ".join(parts))
    return out


def stored() -> dict[str, Any]:
    """The stored pilot (empty when none)."""
    return json.loads(STORED.read_text()) if STORED.exists() else {"tasks": {}}


def main(argv: list[str] | None = None) -> None:
    """Run rows of tasks (``--task NAME`` repeatable, ``--row A`` repeatable; every row when
    none, the largest ``1 - beta1`` first, each row for every task before the next row) and
    merge each into ``task_pilot.json`` as it finishes; ``--skip-stored`` leaves out rows
    already stored; with ``--until HH:MM`` (UTC) no row starts after that time."""
    import argparse
    import os

    from ..._json import strict
    from ..._meta import cpu_model
    from ._calibration import TASKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=list(TASKS), action="append")
    parser.add_argument("--cost", action="store_true", help="print cost_lines() and stop")
    parser.add_argument("--row", type=float, action="append")
    parser.add_argument("--skip-stored", action="store_true")
    parser.add_argument(
        "--groups",
        type=int,
        default=0,
        help="run each task as this many row groups on two processes, as spike_boundary does",
    )
    parser.add_argument("--until", help="UTC HH:MM after which no row starts")
    args = parser.parse_args(argv)
    if args.cost:
        print("\n".join(cost_lines()))
        return
    if not args.task:
        raise SystemExit("give --task NAME (one of the calibrated tasks) or --cost")
    if args.groups:
        _run_groups(args.task, args.groups)
        return
    rows = list(SCAN_DESIGN["one_minus_beta1"])
    chosen = rows if not args.row else args.row
    bad = [a for a in chosen if a not in rows]
    if bad:
        raise SystemExit(f"--row {bad[0]!r} is not allowed; the design's rows are {rows}")
    for a in chosen:
        for name in args.task:
            old = stored()
            mine = {r["row"]: r for r in old["tasks"].get(name, {}).get("rows", [])}
            if args.skip_stored and a in mine:
                continue
            if args.until and time.strftime("%H:%M", time.gmtime()) >= args.until:
                print(f"stopped before {name} row {a}: past {args.until} UTC", flush=True)
                return
            load = os.getloadavg()[0]
            entry = run_row(name, rows.index(a))
            entry["load"] = round(load, 2)
            entry["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            old = stored()
            mine = {r["row"]: r for r in old["tasks"].get(name, {}).get("rows", [])}
            mine[a] = entry
            old["tasks"][name] = {"rows": [mine[x] for x in rows if x in mine]}
            out = {
                "command": "python -m gaugedyn.experiments.adam_stability._task_pilot --task "
                "NAME [--task NAME] [--row A] [--skip-stored] [--until HH:MM]",
                "machine": cpu_model(),
                "design": SCAN_DESIGN,
                "seed": SEED,
                "tasks": {n: old["tasks"][n] for n in TASKS if n in old["tasks"]},
            }
            STORED.write_text(json.dumps(strict(out), indent=1) + "\n")
            edges = row_edges(entry)["settled rise 2"]
            print(
                f"{name} row {a}: {len(entry['cells'])} cells, {entry['cpu_seconds']} CPU-s, "
                f"load {entry['load']}, settled edge (rise 2) {edges}",
                flush=True,
            )


def _store(name: str, entries: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    from ..._json import strict
    from ..._meta import cpu_model
    from ._calibration import TASKS

    rows = list(SCAN_DESIGN["one_minus_beta1"])
    old = stored()
    mine = {r["row"]: r for r in old["tasks"].get(name, {}).get("rows", [])}
    for e in entries:
        mine[e["row"]] = e
    kept = {k: v for k, v in old["tasks"].get(name, {}).items() if k != "rows"}
    old["tasks"][name] = {"rows": [mine[x] for x in rows if x in mine]} | kept
    for k, v in extra.items():
        old["tasks"][name].setdefault(k, []).append(v)
    out = {
        "command": "python -m gaugedyn.experiments.adam_stability._task_pilot --task NAME "
        "[--task NAME] [--groups 2] [--row A] [--skip-stored] [--until HH:MM]",
        "machine": cpu_model(),
        "design": SCAN_DESIGN,
        "seed": SEED,
        "tasks": {n: old["tasks"][n] for n in TASKS if n in old["tasks"]},
    }
    STORED.write_text(json.dumps(strict(out), indent=1) + "\n")


def _run_groups(names: list[str], groups: int) -> None:
    """Every task of ``names`` as ``groups`` row groups on a pool of two processes (the
    cheaper task's groups first), each stored as it finishes with its wall and CPU seconds,
    steps and the load at the start (a group's rows share its batches: CPU is stored per
    group, not per row)."""
    import multiprocessing as mp
    import os

    jobs = [(n, g, groups) for n in names for g in range(groups)]
    start, load = time.time(), os.getloadavg()[0]
    with mp.get_context("fork").Pool(2) as pool:
        for res in pool.imap_unordered(run_group, jobs):
            stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            for e in res["rows"]:
                e |= {"date": stamp, "group_of": groups}
            _store(
                res["task"],
                res["rows"],
                {
                    "groups": {
                        "rows": [e["row"] for e in res["rows"]],
                        "steps": res["steps"],
                        "cpu_seconds": res["cpu_seconds"],
                        "finished_after_s": round(time.time() - start, 1),
                        "load_at_start": round(load, 2),
                        "date": stamp,
                    }
                },
            )
            print(
                f"{res['task']} rows {[e['row'] for e in res['rows']]}: {res['cpu_seconds']} "
                f"CPU-s, {res['steps']:,} copy-steps, {time.time() - start:.0f} s since start, "
                f"load now {os.getloadavg()[0]:.2f}; settled edges (rise 2) "
                f"{[row_edges(e)['settled rise 2'][0] for e in res['rows']]}",
                flush=True,
            )


if __name__ == "__main__":
    main()

"""The batched beta grid against today's per-run tasks, side by side on the same cells.

Peer: the per-run path the experiment used before issue 33, one ``train_task`` per cell and
seed (``torch.optim.Adam`` with the ``AdamRecorder`` attached, sampled coordinates, and every
step split by the float64 reference), one torch thread, as ``run_task`` ran it. Batched: one
:func:`gaugedyn.experiments.adam_split._batched.train_copies` per task over all its cells and
seeds, the float64 reference on the declared ``corners`` copies only, on its default forward
path (``stacked``: one pass over every copy where ``_stacked.STACKED`` has the task; ``loop``
otherwise); and, for the tasks with a stacked pass, the same batched program on its ``loop``
path (each copy's own module in turn). All train the same copies (the same integer seeds): the
per-run and batched-loop trajectories are the same bit for bit on the CPU, the stacked ones
equal them to round-off.

Every path is warmed up first (imports, data); rounds are interleaved (the order rotates); per
task and in total the script prints the median over rounds of wall time
(``time.perf_counter``) and CPU time (``time.process_time``, this process: every path runs in
it), the ratio per-run / batched (median, and the smallest and largest per-round ratio), the
ratio batched-loop / batched (the stacked pass's own gain), and the totals over the tasks with a
stacked pass alone. It then judges the protocol's findings from the per-run and the batched
results (per-run: the reference sums of every step; batched: the streaming sums) and prints how
many verdicts agree (every reading), the largest difference of the per-seed values behind them,
and the largest relative difference of the minibatch losses.

``--roofline`` adds, from the same run, how far the arithmetic itself lets the ratio go. Per task:
the floating-point operations of one copy-step's forward and backward pass, counted by
``torch.utils.flop_counter.FlopCounterMode`` (matrix products, convolutions and attention;
elementwise work and gathers are not counted) twice: on one copy's own module, and on the stacked
pass over one copy (which may do less: the GRU's input projections go through a per-copy table of
the vocabulary; one copy, because the counter counts a grouped convolution's backward as if
ungrouped); the stacked forward and backward pass alone on the same copies (CPU time, median of
``--roofline-reps``); and this core's single-precision matrix-product rate (a 1024 x 1024
``torch.mm``, one thread, measured in the same run, interleaved with the passes). From these: the
ratio's target time per copy-step (per-run / 10), the time the smaller of the two counts takes at
the matrix-product rate (the floor of an implementation doing that arithmetic), and the share of
that rate the arithmetic would need to meet the target if every other part of the step (the Adam
update, the split sums, the minibatches, the evaluations) cost nothing. A share above 1 means the
target is out of reach on this core without less arithmetic.

    .venv/bin/python benchmarks/bench_beta_grid.py [--tasks a,b] [--betas 0.9,0.99]
        [--seeds 2] [--steps 40] [--rounds 3] [--device cpu] [--roofline] [--roofline-reps 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_BETAS = (0.9, 0.99)


ANALYSIS_SEED = 0
"""The analysis seed of the compared findings (the randomised median rules' draws)."""


def _cells(betas, seeds: int) -> list[tuple[float, float, int]]:
    return [
        (b1, b2, 1000 + 97 * i + k)
        for i, (b1, b2) in enumerate((a, b) for a in betas for b in betas)
        for k in range(seeds)
    ]


def run_batched(
    task: str, cells, steps: int, device: str = "cpu", forward: str | None = None
) -> dict:
    from gaugedyn.experiments.adam_split._batched import train_copies
    from gaugedyn.experiments.adam_split.beta_grid import reference_copies
    from gaugedyn.experiments.adam_split.tasks import DEFAULTS

    betas = sorted({c[0] for c in cells})
    seeds = len(cells) // len(betas) ** 2
    spec = {"beta1s": betas, "beta2s": betas, "seeds": seeds, "reference": "corners"}
    return train_copies(
        task,
        cells,
        steps,
        DEFAULTS[task]["lr"],
        reference=reference_copies(spec),
        device=device,
        forward=forward,
    )


def run_loop(task: str, cells, steps: int) -> dict:
    """Today's per-run tasks: one ``train_task`` per copy (recorder, 16 sampled coordinates,
    the float64 reference every step), stacked like :func:`run_batched`'s arrays."""
    from gaugedyn.experiments.adam_split.tasks import DEFAULTS, train_task

    outs = [
        train_task(task, b1, b2, seed=s, steps=steps, lr=DEFAULTS[task]["lr"], sample=16, threads=1)
        for b1, b2, s in cells
    ]
    return {
        "loss": np.stack([o["loss"] for o in outs]),
        "sums": np.stack([o["reference"] for o in outs]),
        "final_loss": np.array([o["final_loss"] for o in outs]),
        "initial_loss": np.array([o["initial_loss"] for o in outs]),
        "nonfinite_step": np.array([o["nonfinite_step"] for o in outs]),
    }


def findings(task: str, cells, out: dict) -> dict:
    """``{finding id: (verdict, {reading: (verdict, per-seed values)})}`` of one path's run."""
    from gaugedyn.experiments.adam_split._grid import (
        cell_table,
        diverged_cells,
        protocol_statistics,
    )
    from gaugedyn.experiments.adam_split._grid_analysis import findings_of

    betas = sorted({c[0] for c in cells})
    seeds = len(cells) // len(betas) ** 2
    runs = [
        {"task": task, "beta1": b1, "beta2": b2, "seed": i % seeds}
        for i, (b1, b2, _) in enumerate(cells)
    ]
    per = [
        {
            "sums": out["sums"][i],
            "final_loss": out["final_loss"][i],
            "initial_loss": out["initial_loss"][i],
            "nonfinite_step": out["nonfinite_step"][i],
        }
        for i in range(len(cells))
    ]
    table = cell_table(per, runs, 0.1)
    # one analysis seed for both paths: the median rules' draws are then the same
    stats = protocol_statistics(table, task)
    found = findings_of(task, stats, "", diverged_cells(table, task), ANALYSIS_SEED)
    return {
        c.id: (
            c.verdict,
            {k: (v["verdict"], v["per_seed"]) for k, v in c.tolerance["reading_detail"].items()},
        )
        for c in found
    }


def compare(a: dict, b: dict) -> tuple[int, int, float]:
    """(verdicts that agree, verdicts compared, largest |per-seed difference|) over every
    reading of every finding."""
    agree, total, diff = 0, 0, 0.0
    for fid, (verdict, readings) in a.items():
        other_verdict, other = b[fid]
        agree += verdict == other_verdict
        total += 1
        for k, (v, x) in readings.items():
            agree += v == other[k][0]
            total += 1
            d = np.abs(np.asarray(x, float) - np.asarray(other[k][1], float))
            d = d[np.isfinite(d)]
            diff = max(diff, float(d.max()) if d.size else 0.0)
    return agree, total, diff


def _spread(x: list[float]) -> tuple[float, float, float]:
    return min(x), statistics.median(x), max(x)


PATHS = ("per-run", "batched", "batched-loop")


def _run(path: str, task: str, cells, steps: int, device: str) -> dict:
    if path == "per-run":
        return run_loop(task, cells, steps)
    return run_batched(task, cells, steps, device, "loop" if path == "batched-loop" else None)


def _ratio(times: dict, tasks: list, a: str, b: str, rounds: int) -> dict:
    """Per-round ``sum_tasks a / sum_tasks b``, ``(smallest, median, largest)``, wall and CPU."""
    return {
        m: _spread(
            [
                sum(times[a][t][m][r] for t in tasks) / sum(times[b][t][m][r] for t in tasks)
                for r in range(rounds)
            ]
        )
        for m in ("wall", "cpu")
    }


def beta_grid_ratio(
    tasks=None,
    betas=DEFAULT_BETAS,
    seeds: int = 2,
    steps: int = 40,
    rounds: int = 3,
    device: str = "cpu",
) -> dict:
    """Time every path on the same copies, interleaved; compare their findings."""
    import torch

    from gaugedyn.experiments.adam_split._batched import forward_of
    from gaugedyn.experiments.adam_split.tasks import TASKS

    tasks = list(tasks or TASKS)
    stacked = [t for t in tasks if forward_of(t) == "stacked"]
    cells = _cells([float(b) for b in betas], int(seeds))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    times = {k: {t: {"wall": [], "cpu": []} for t in tasks} for k in PATHS}
    agree = total = 0
    diff = loss_diff = 0.0
    try:
        for task in tasks:  # warm up: imports (torch.optim pulls in torch._dynamo), data, caches
            for k in PATHS:
                _run(k, task, cells[:1], 3, device)
        findings(tasks[0], cells, run_batched(tasks[0], cells, 3, device))
        for r in range(rounds):
            for task in tasks:
                outs = {}
                order = PATHS[r % 3 :] + PATHS[: r % 3]
                for k in order:
                    if k == "batched-loop" and task not in stacked:
                        continue  # the same program as "batched"
                    t0, c0 = time.perf_counter(), time.process_time()
                    outs[k] = _run(k, task, cells, steps, device)
                    times[k][task]["wall"].append(time.perf_counter() - t0)
                    times[k][task]["cpu"].append(time.process_time() - c0)
                if task not in stacked:
                    times["batched-loop"][task]["wall"].append(times["batched"][task]["wall"][-1])
                    times["batched-loop"][task]["cpu"].append(times["batched"][task]["cpu"][-1])
                if r == 0:
                    a, n, d = compare(
                        findings(task, cells, outs["per-run"]),
                        findings(task, cells, outs["batched"]),
                    )
                    agree, total, diff = agree + a, total + n, max(diff, d)
                    x, y = outs["batched"]["loss"], outs["per-run"]["loss"]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        rel = np.abs(x - y) / np.abs(y)
                    rel = rel[np.isfinite(rel)]
                    loss_diff = max(loss_diff, float(rel.max()) if rel.size else 0.0)
    finally:
        torch.set_num_threads(before)
    rows = {}
    for task in tasks:
        rows[task] = {
            m: {k: statistics.median(times[k][task][m]) for k in times} for m in ("wall", "cpu")
        }
    ratio = {
        "all": _ratio(times, tasks, "per-run", "batched", rounds),
        "stacked": _ratio(times, stacked, "per-run", "batched", rounds) if stacked else None,
        "stacked_gain": (
            _ratio(times, stacked, "batched-loop", "batched", rounds) if stacked else None
        ),
    }
    return {
        "tasks": tasks,
        "stacked_tasks": stacked,
        "copies": len(cells),
        "betas": list(betas),
        "seeds": seeds,
        "steps": steps,
        "rounds": rounds,
        "device": device,
        "rows": rows,
        "ratio": ratio,
        "agree": agree,
        "compared": total,
        "max_diff": diff,
        "max_loss_diff": loss_diff,
    }


def _counted(run) -> float:
    """Floating-point operations ``run()`` performs, as ``FlopCounterMode`` counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return float(counter.get_total_flops())


def _copy_flops(task: str) -> float:
    """Counted floating-point operations of one copy-step's forward and backward pass (the
    task's own module on its own minibatch, float32)."""
    import torch

    from gaugedyn.experiments.adam_split._batched import _build

    model, gen, batch, loss_fn, _ = _build(task, 1000, torch.float32, "cpu")
    x, y = batch(gen)
    return _counted(lambda: loss_fn(model(x), y).backward())


def _stacked_pass(task: str, cells, device: str, matmul: str = "float32"):
    """A closure that runs one stacked forward and backward pass over every copy of
    ``cells`` (in :data:`STACK_BLOCK` blocks), each on its own first minibatch, at precision
    ``matmul`` (`gaugedyn.experiments.adam_split._batched.stacked_losses`; also
    ``bench_beta_grid_bf16.py``'s pass)."""
    import torch

    from gaugedyn.experiments.adam_split._batched import STACK_BLOCK, _build, stacked_losses

    built = [_build(task, s, torch.float32, device) for _, _, s in cells]
    per_copy = [list(b[0].parameters()) for b in built]
    params = [
        torch.stack([ps[j].detach() for ps in per_copy]).requires_grad_(True)
        for j in range(len(per_copy[0]))
    ]
    draws = [b[2](b[1]) for b in built]
    x = torch.stack([d[0] for d in draws])
    y = torch.stack([d[1] for d in draws])
    n = STACK_BLOCK.get(task) or len(cells)

    def run():
        for lo in range(0, len(cells), n):
            block = [p[lo : lo + n] for p in params]
            loss = stacked_losses(task, built[0][0], block, x[lo : lo + n], y[lo : lo + n], matmul)
            torch.autograd.grad(loss.sum(), block)

    return run


def _mm_rate(size: int = 1024) -> float:
    """This core's float32 matrix-product rate, FLOP per CPU second (one ``torch.mm``)."""
    import torch

    a = torch.randn(size, size, generator=torch.Generator().manual_seed(0))
    c0 = time.process_time()
    a @ a
    return 2.0 * size**3 / max(time.process_time() - c0, 1e-9)


def roofline(r: dict, reps: int = 5) -> dict:
    """The arithmetic bound on the ratio (module docstring, ``--roofline``), from the timings of
    :func:`beta_grid_ratio`'s result ``r`` and passes measured here on the same copies."""
    import torch

    from gaugedyn.experiments.adam_split._batched import forward_of

    cells = _cells([float(b) for b in r["betas"]], int(r["seeds"]))
    per_step = len(cells) * r["steps"]
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        passes = {
            t: _stacked_pass(t, cells, r["device"])
            for t in r["tasks"]
            if forward_of(t) == "stacked"
        }
        for run in passes.values():
            run()  # warm up
        _mm_rate()
        pass_cpu = {t: [] for t in passes}
        rates = []
        for _ in range(int(reps)):  # interleaved: the rate beside every task's pass
            rates.append(_mm_rate())
            for t, run in passes.items():
                c0 = time.process_time()
                run()
                pass_cpu[t].append(time.process_time() - c0)
        flops = {t: _copy_flops(t) for t in r["tasks"]}
        # counted on a pass over one copy: FlopCounterMode (torch 2.13) counts a grouped
        # convolution's backward as if ungrouped, ``groups`` times too many
        pass_flops = {t: _counted(_stacked_pass(t, cells[:1], r["device"])) for t in passes}
    finally:
        torch.set_num_threads(before)
    rate = statistics.median(rates)
    rows = {}
    for t in r["tasks"]:
        per_run = r["rows"][t]["cpu"]["per-run"] / per_step
        target = per_run / 10
        least = min(flops[t], pass_flops.get(t, flops[t]))
        row = {
            "mflop": flops[t] / 1e6,
            "pass_mflop": pass_flops.get(t, math.nan) / 1e6,
            "per_run_ms": 1e3 * per_run,
            "batched_ms": 1e3 * r["rows"][t]["cpu"]["batched"] / per_step,
            "target_ms": 1e3 * target,
            "floor_ms": 1e3 * least / rate,
            "share_needed": least / target / rate,
            "pass_ms": None,
            "pass_share": None,
        }
        if t in pass_cpu:
            p = statistics.median(pass_cpu[t]) / len(cells)
            row["pass_ms"], row["pass_share"] = 1e3 * p, pass_flops[t] / p / rate
        rows[t] = row
    total = {
        k: sum(x[k] for x in rows.values())
        for k in ("mflop", "per_run_ms", "batched_ms", "target_ms", "floor_ms")
    }
    total["pass_mflop"] = math.nan
    total["share_needed"] = total["floor_ms"] / total["target_ms"]
    return {"rate": rate, "rates": rates, "rows": rows, "total": total}


def roofline_text(q: dict) -> str:
    head = (
        f"{'task':17s} {'MFLOP':>7s} {'stacked':>7s} {'per-run':>8s} {'batched':>8s} {'target':>7s} "
        f"{'floor':>6s} {'needed':>7s} {'pass':>6s} {'pass at':>7s}"
    )
    lines = [
        f"the arithmetic bound (ms of CPU time per copy-step; this core's float32 "
        f"matrix-product rate {q['rate'] / 1e9:.1f} GFLOP/s, median of "
        f"{len(q['rates'])}: range {min(q['rates']) / 1e9:.1f}-{max(q['rates']) / 1e9:.1f}); "
        "MFLOP per copy-step counted on a copy's own module and on the stacked pass; "
        "target = per-run / 10, floor = the smaller count at that rate, needed = the share of "
        "the rate the arithmetic needs to meet the target with the rest of the step free, "
        "pass = the stacked forward and backward pass alone, pass at = its share of the "
        "rate",
        head,
        "-" * len(head),
    ]
    for t, x in list(q["rows"].items()) + [("all tasks", q["total"])]:
        pa = (
            f"{x['pass_ms']:6.3f} {x['pass_share']:7.0%}"
            if x.get("pass_ms") is not None
            else f"{'-':>6s} {'-':>7s}"
        )
        st = f"{x['pass_mflop']:7.2f}" if math.isfinite(x["pass_mflop"]) else f"{'-':>7s}"
        lines.append(
            f"{t:17s} {x['mflop']:7.2f} {st} {x['per_run_ms']:8.3f} {x['batched_ms']:8.3f} "
            f"{x['target_ms']:7.3f} {x['floor_ms']:6.3f} {x['share_needed']:7.0%} {pa}"
        )
    return "\n".join(lines)


def _fmt(x) -> str:
    return f"{x[1]:.1f}x [{x[0]:.1f}, {x[2]:.1f}]"


def ratio_text(r: dict) -> str:
    all_, st, gain = r["ratio"]["all"], r["ratio"]["stacked"], r["ratio"]["stacked_gain"]
    lines = [
        f"beta_grid's batched program against today's per-run tasks ({r['copies']} copies "
        f"per task: {len(r['betas'])}x{len(r['betas'])} cells x {r['seeds']} seeds, "
        f"{len(r['tasks'])} tasks, {r['steps']} steps, {r['rounds']} rounds interleaved, "
        f"{r['device']}): per-run / batched over all {len(r['tasks'])} tasks: wall "
        f"{_fmt(all_['wall'])}, CPU {_fmt(all_['cpu'])}"
    ]
    if st is not None:
        lines.append(
            f"over the {len(r['stacked_tasks'])} tasks with a stacked pass "
            f"({', '.join(r['stacked_tasks'])}): per-run / batched wall "
            f"{_fmt(st['wall'])}, CPU {_fmt(st['cpu'])}; batched loop / batched "
            f"stacked wall {_fmt(gain['wall'])}, CPU {_fmt(gain['cpu'])}"
        )
    lines.append(
        f"verdicts that agree, per-run against batched (every finding and reading): "
        f"{r['agree']}/{r['compared']}; largest |per-seed difference| "
        f"{r['max_diff']:.1e}; largest relative minibatch-loss difference "
        f"{r['max_loss_diff']:.1e} (0: bitwise)"
    )
    return "\n".join(lines)


def table(r: dict) -> str:
    head = (
        f"{'task':17s} {'forward':7s} {'per-run':>8s} {'batched':>8s} {'b-loop':>8s} "
        f"{'ratio':>6s} {'gain':>5s} | {'per-run':>8s} {'batched':>8s} {'b-loop':>8s} "
        f"{'ratio':>6s} {'gain':>5s}"
    )
    lines = [
        "wall seconds (left) and CPU seconds (right), medians over rounds; ratio = per-run"
        " / batched, gain = batched loop / batched",
        head,
        "-" * len(head),
    ]
    for task, row in r["rows"].items():
        cells = []
        for m in ("wall", "cpu"):
            x = row[m]
            cells.append(
                f"{x['per-run']:8.2f} {x['batched']:8.2f} {x['batched-loop']:8.2f} "
                f"{x['per-run'] / x['batched']:6.1f} "
                f"{x['batched-loop'] / x['batched']:5.1f}"
            )
        fw = "stacked" if task in r["stacked_tasks"] else "loop"
        lines.append(f"{task:17s} {fw:7s} {cells[0]} | {cells[1]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None, metavar="A,B", help="tasks (default: all seven)")
    ap.add_argument("--betas", default=",".join(map(str, DEFAULT_BETAS)), metavar="B,...")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--roofline",
        action="store_true",
        help="add the arithmetic bound on the ratio (module docstring)",
    )
    ap.add_argument("--roofline-reps", type=int, default=5, metavar="N")
    args = ap.parse_args(argv)

    from gaugedyn import InputError

    sys.path.insert(0, str(Path(__file__).parent))
    from _record import check_at_least, grid_tasks

    tasks = grid_tasks(args.tasks)
    try:
        betas = [float(b) for b in args.betas.split(",")]
    except ValueError:
        raise InputError(
            f"--betas {args.betas!r} is not allowed; give numbers in [0, 1) separated by commas"
        ) from None
    if not betas or not all(0 <= b < 1 for b in betas) or len(set(betas)) != len(betas):
        raise InputError(f"--betas {args.betas!r} is not allowed; give distinct numbers in [0, 1)")
    check_at_least(
        ("seeds", args.seeds, 2),
        ("steps", args.steps, 3),
        ("rounds", args.rounds, 1),
        ("roofline-reps", args.roofline_reps, 1),
    )
    if args.roofline and args.device != "cpu":
        raise InputError(
            f"--roofline with --device {args.device!r} is not allowed: the bound "
            "compares CPU time with this core's matrix-product rate; use "
            "--device cpu"
        )
    r = beta_grid_ratio(tasks, betas, args.seeds, args.steps, args.rounds, args.device)
    print(table(r))
    print(ratio_text(r))
    if args.roofline:
        print(roofline_text(roofline(r, args.roofline_reps)))
    return 0


if __name__ == "__main__":
    from gaugedyn import InputError

    try:
        sys.exit(main())
    except InputError as err:
        print(f"bench_beta_grid.py: error: {err}", file=sys.stderr)
        sys.exit(2)

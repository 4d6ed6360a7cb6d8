"""The beta grid's stacked pass in float32 against the same pass with its matrix products in
bfloat16 (issue 46, Build 6), at the grid's own sizes.

bfloat16 here is torch's CPU autocast (`gaugedyn.experiments.adam_split._batched.stacked_losses`,
``matmul="bfloat16"``; `gaugedyn.experiments.adam_split._protocol.MATMUL` says what it covers):
the stacked forward pass runs under ``torch.autocast("cpu", dtype=torch.bfloat16)``, so every
matrix product and convolution of every task (``bmm``, ``baddbmm``, the grouped convolutions, the
GRU's recurrence products) takes bfloat16 operands and accumulates in float32 in oneDNN's
kernels (the ``avx512_bf16`` dot-product instruction ``vdpbf16ps`` on this EPYC, AMX where a CPU
has it), without a second copy of any stacked pass; the parameters, their gradients, Adam's
update and the split sums stay float32. Chosen over explicit bfloat16 weights with float32
accumulation and output because torch 2.13 has no CPU batched product with a float32 output
from bfloat16 operands (``torch.bmm(..., out_dtype=)`` is CUDA-only), so the explicit form
would round every product's output to bfloat16 too, as autocast does, and need a branch in
every builder. The transformer's attention stays in float32 under autocast (its bfloat16 CPU
kernel measured 13x slower; `_stacked_text.build_transformer`).

Two measurements, each per task, the two precisions alternating in every round (the order
swaps from round to round), one torch thread, as the grid runs:

- **pass**: one stacked forward and backward pass over all copies of the grid (``--betas`` x
  ``--betas`` cells x ``--seeds``; the full configuration's 160), in the task's blocks
  (``STACK_BLOCK``), each copy on its own first minibatch: the part of a step the precision
  changes;
- **program**: `train_copies` over the same copies for ``--steps`` steps with the declared
  reference copies, as ``beta_grid`` runs a task: the whole step (the float32 update and split
  sums, the minibatches, the reference, and two evaluations per copy), so its ratio is what a
  grid run would gain. Also its largest relative minibatch-loss difference between the two
  precisions (bfloat16 is a different arithmetic, not round-off of the same one).

Printed: the CPU model, the noted flags and the load (start and end); per task and over all
tasks the median CPU and wall time over rounds and the ratio float32 / bfloat16 (median of the
per-round ratios, with the smallest and largest). ``--json PATH`` stores the run as a benchmark
record (`benchmarks/_record.py`) that ``tools/bench_page.py`` shows.

    .venv/bin/python benchmarks/bench_beta_grid_bf16.py [--tasks a,b] [--seeds 10]
        [--steps 20] [--rounds 3] [--pass-rounds 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _record import check_at_least, describe_machine, grid_tasks, start_record, write_record
from bench_beta_grid import _stacked_pass

BETAS = (0.8, 0.9, 0.99, 0.999)
"""The full configuration's grid (both axes)."""
PRECISIONS = ("float32", "bfloat16")


def _cells(seeds: int) -> list[tuple[float, float, int]]:
    return [
        (b1, b2, 1000 + 97 * i + k)
        for i, (b1, b2) in enumerate((a, b) for a in BETAS for b in BETAS)
        for k in range(seeds)
    ]


def _pass(task: str, cells, matmul: str):
    """A closure: one stacked forward and backward pass over every copy of ``cells`` (in the
    task's ``STACK_BLOCK`` blocks), each on its own first minibatch, at precision ``matmul``
    (``bench_beta_grid.py``'s pass, on the CPU)."""
    return _stacked_pass(task, cells, "cpu", matmul)


def _program(task: str, cells, steps: int, matmul: str) -> dict:
    from gaugedyn.experiments.adam_split._batched import train_copies
    from gaugedyn.experiments.adam_split.beta_grid import reference_copies
    from gaugedyn.experiments.adam_split.tasks import DEFAULTS

    spec = {"beta1s": list(BETAS), "beta2s": list(BETAS), "seeds": len(cells) // 16}
    return train_copies(
        task,
        cells,
        steps,
        DEFAULTS[task]["lr"],
        reference=reference_copies({**spec, "reference": "corners"}),
        matmul=matmul,
    )


def _timed(fn, *args) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return time.perf_counter() - t0, time.process_time() - c0, out


def _spread(x: list[float]) -> list[float]:
    return [min(x), statistics.median(x), max(x)]


def _ratios(times: dict, tasks: list[str], m: str) -> list[float]:
    """Per-round ``sum_tasks float32 / sum_tasks bfloat16`` of measure ``m``, as a spread."""
    rounds = len(times[tasks[0]]["float32"][m])
    return _spread(
        [
            sum(times[t]["float32"][m][r] for t in tasks)
            / sum(times[t]["bfloat16"][m][r] for t in tasks)
            for r in range(rounds)
        ]
    )


def _summary(times: dict, tasks: list[str]) -> dict:
    rows = {
        t: {p: {m: statistics.median(times[t][p][m]) for m in ("wall", "cpu")} for p in PRECISIONS}
        | {"ratio": {m: _ratios(times, [t], m) for m in ("wall", "cpu")}}
        for t in tasks
    }
    total = {p: {m: sum(rows[t][p][m] for t in tasks) for m in ("wall", "cpu")} for p in PRECISIONS}
    total["ratio"] = {m: _ratios(times, tasks, m) for m in ("wall", "cpu")}
    return {"rows": rows, "total": total, "times": times}


def measure(tasks: list[str], seeds: int, steps: int, rounds: int, pass_rounds: int) -> dict:
    import torch

    cells = _cells(seeds)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        passes = {t: {p: _pass(t, cells, p) for p in PRECISIONS} for t in tasks}
        for t in tasks:  # warm up: oneDNN's kernels for these shapes, imports, data
            for p in PRECISIONS:
                passes[t][p]()
                _program(t, cells[:16:4], 2, p)
        ptimes = {t: {p: {"wall": [], "cpu": []} for p in PRECISIONS} for t in tasks}
        for r in range(pass_rounds):
            for t in tasks:
                for p in PRECISIONS[:: 1 if r % 2 == 0 else -1]:
                    wall, cpu, _ = _timed(passes[t][p])
                    ptimes[t][p]["wall"].append(wall)
                    ptimes[t][p]["cpu"].append(cpu)
        gtimes = {t: {p: {"wall": [], "cpu": []} for p in PRECISIONS} for t in tasks}
        loss_diff = {}
        for r in range(rounds):
            for t in tasks:
                outs = {}
                for p in PRECISIONS[:: 1 if r % 2 == 0 else -1]:
                    wall, cpu, outs[p] = _timed(_program, t, cells, steps, p)
                    gtimes[t][p]["wall"].append(wall)
                    gtimes[t][p]["cpu"].append(cpu)
                if r == 0:
                    a, b = outs["float32"]["loss"], outs["bfloat16"]["loss"]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        rel = np.abs(b - a) / np.abs(a)
                    rel = rel[np.isfinite(rel)]
                    loss_diff[t] = float(rel.max()) if rel.size else 0.0
    finally:
        torch.set_num_threads(before)
    return {
        "tasks": tasks,
        "copies": len(cells),
        "betas": list(BETAS),
        "seeds": seeds,
        "steps": steps,
        "rounds": rounds,
        "pass_rounds": pass_rounds,
        "threads": 1,
        "bfloat16": "torch.autocast('cpu', dtype=torch.bfloat16) around the stacked forward "
        "pass (attention in float32), outputs cast to float32 before the losses",
        "pass": _summary(ptimes, tasks),
        "program": _summary(gtimes, tasks),
        "loss_rel_diff": loss_diff,
    }


def faster(data: dict) -> bool:
    """Whether bfloat16 is faster where it counts: the whole program's CPU time over every
    task, in every round (the smallest per-round ratio float32 / bfloat16 above 1)."""
    return data["program"]["total"]["ratio"]["cpu"][0] > 1.0


def _r(x: list[float]) -> str:
    return f"{x[1]:.2f}x [{x[0]:.2f}, {x[2]:.2f}]"


def report(data: dict) -> str:
    head = (
        f"{'task':17s} | {'pass f32':>9s} {'bf16':>7s} {'ratio (CPU)':>22s} | "
        f"{'prog f32':>9s} {'bf16':>7s} {'ratio (CPU)':>22s} | {'loss diff':>9s}"
    )
    lines = [
        f"{data['copies']} copies per task (the grid {len(data['betas'])} x "
        f"{len(data['betas'])} cells x {data['seeds']} seeds), one thread; pass: one stacked "
        f"forward and backward pass, CPU ms, median of {data['pass_rounds']} rounds; program: "
        f"train_copies for {data['steps']} steps, CPU s, median of {data['rounds']} rounds; "
        "ratio = float32 / bfloat16 (median [smallest, largest] per-round ratio)",
        head,
        "-" * len(head),
    ]
    P, G = data["pass"], data["program"]
    for t in data["tasks"]:
        p, g = P["rows"][t], G["rows"][t]
        lines.append(
            f"{t:17s} | {1e3 * p['float32']['cpu']:9.1f} {1e3 * p['bfloat16']['cpu']:7.1f} "
            f"{_r(p['ratio']['cpu']):>22s} | {g['float32']['cpu']:9.2f} "
            f"{g['bfloat16']['cpu']:7.2f} {_r(g['ratio']['cpu']):>22s} | "
            f"{data['loss_rel_diff'][t]:9.1e}"
        )
    p, g = P["total"], G["total"]
    lines.append(
        f"{'all tasks':17s} | {1e3 * p['float32']['cpu']:9.1f} {1e3 * p['bfloat16']['cpu']:7.1f} "
        f"{_r(p['ratio']['cpu']):>22s} | {g['float32']['cpu']:9.2f} {g['bfloat16']['cpu']:7.2f} "
        f"{_r(g['ratio']['cpu']):>22s} |"
    )
    lines.append(
        f"wall ratio over all tasks: pass {_r(p['ratio']['wall'])}, program "
        f"{_r(g['ratio']['wall'])}"
    )
    lines.append(
        "bfloat16 is "
        + ("FASTER" if data["faster"] else "NOT FASTER")
        + " than float32 over the whole program in every round (CPU time, all tasks)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None, metavar="A,B", help="tasks (default: all seven)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per cell (full: 10)")
    ap.add_argument("--steps", type=int, default=20, help="steps of each program run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the program runs")
    ap.add_argument("--pass-rounds", type=int, default=7, help="rounds of the passes")
    ap.add_argument("--json", default=None, metavar="PATH", help="store the run as a record")
    args = ap.parse_args(argv)

    tasks = grid_tasks(args.tasks)
    check_at_least(
        ("seeds", args.seeds, 1),
        ("steps", args.steps, 1),
        ("rounds", args.rounds, 1),
        ("pass-rounds", args.pass_rounds, 1),
    )
    record = start_record("bench_beta_grid_bf16.py", argv)
    print(describe_machine(), flush=True)
    data = measure(tasks, args.seeds, args.steps, args.rounds, args.pass_rounds)
    data["faster"] = faster(data)
    print(report(data))
    print(describe_machine())
    if args.json:
        write_record(args.json, record, data)
    return 0


if __name__ == "__main__":
    from gaugedyn import InputError

    try:
        sys.exit(main())
    except InputError as err:
        print(f"bench_beta_grid_bf16.py: error: {err}", file=sys.stderr)
        sys.exit(2)

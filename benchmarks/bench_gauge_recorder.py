"""GaugeRecorder overhead on a training step of a ~1M-parameter ReLU MLP, against the plain step.

Identical copies of the model (784-1024-256-10, two rescaling groups of 1024 and 256 units)
train on the same batch: plain, with the recorder at every step (``every=1``) and at every 10th
step (``every=10``). Blocks of steps are interleaved in rotating order; each round gives one
paired ratio per variant (its block time over the plain block of the same round); the median
ratio over rounds is printed with its distribution-free 95% interval (order statistics,
``scipy.stats.quantile_test``) and the rounds' quartiles, in wall time and in process CPU time
(less sensitive to a loaded machine). ``--optimizer sgd`` (default: plain SGD, the recorder predicts
the GD change), ``momentum`` (SGD with momentum and weight decay: the recursion runs every step,
even with ``every=10``) or ``adam`` (measured only). ``--torch-reductions`` adds a third
recorder at every step that reads the tensors with torch's reductions instead of the fused
kernel (the path of other devices and layouts), side by side.

    .venv/bin/python benchmarks/bench_gauge_recorder.py [--repeats 15] [--steps 5]
        [--batch 128] [--threads 1] [--optimizer sgd|momentum|adam] [--torch-reductions]
        [--malloc default|fixed] [--json benchmarks/results/gauge_recorder_sgd.json]

``--threads 0`` keeps torch's default thread count. It prints the machine (CPU model, cores, load)
and the recorder's passes over parameter memory per recorded step
(:meth:`gaugedyn.gauge.GaugeRecorder.passes`); ``--json`` writes the figures as a benchmark
record (``benchmarks/_record.py``). It prints each variant's minor page faults per step: with
glibc's default allocator a step's parameter-sized temporaries come back as fresh pages in some
phases of a run and not in others, a cost of the allocator that lands on the variants unevenly;
``--malloc fixed`` pins its thresholds for the whole run, every variant alike
(``_record.set_malloc()``), and leaves the recorder's own work in the ratios.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import statistics
import time

import torch
from scipy import stats

from gaugedyn.gauge import GaugeRecorder

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=1e-2),
    "momentum": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=1e-4),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
}


def _summary(x: list[float]) -> str:
    """``median [95% interval of the median] (quartiles q1-q3)`` of paired ratios."""
    if len(x) < 2:
        return f"{x[0]:.3f}"
    q = statistics.quantiles(x, n=4)
    ci = stats.quantile_test(x, q=statistics.median(x), p=0.5).confidence_interval(0.95)
    interval = (
        f"[{ci.low:.3f}, {ci.high:.3f}]"
        if math.isfinite(ci.low + ci.high)
        else "[too few rounds for a 95% interval]"
    )
    return f"{statistics.median(x):.3f} {interval} (quartiles {q[0]:.3f}-{q[2]:.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    ap.add_argument("--json", default=None, help="write the figures as a benchmark record")
    ap.add_argument(
        "--malloc",
        default="default",
        help="glibc's allocator for the whole run: default or fixed (_record.set_malloc)",
    )
    ap.add_argument(
        "--torch-reductions",
        action="store_true",
        help="also a recorder reading with torch's reductions (no fused kernel)",
    )
    args = ap.parse_args()
    from _record import describe_machine, minor_faults, set_malloc, start_record, write_record

    malloc = set_malloc(args.malloc)
    record = start_record("bench_gauge_recorder.py")
    print(describe_machine())
    print(f"allocator: {malloc}")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = torch.nn.Sequential(
        torch.nn.Linear(784, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    )
    n = sum(p.numel() for p in base.parameters())
    variants = {"every=1": 1, "every=10": 10}
    if args.torch_reductions:
        variants["torch=1"] = 1
    models = {"plain": base, **{k: copy.deepcopy(base) for k in variants}}
    opts = {k: OPTIMIZERS[args.optimizer](m.parameters()) for k, m in models.items()}
    recs = {k: GaugeRecorder(models[k], opts[k], every=e) for k, e in variants.items()}
    if args.torch_reductions:
        recs["torch=1"]._fuse = False  # the torch-reduction path (what a GPU model takes)
    x = torch.randn(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))

    def block(k: str) -> tuple[float, float, float]:
        m, o = models[k], opts[k]
        t0, c0, f0 = time.perf_counter(), time.process_time(), minor_faults()
        for _ in range(args.steps):
            o.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            o.step()
        n_ = args.steps
        return (
            (time.perf_counter() - t0) / n_,
            (time.process_time() - c0) / n_,
            (minor_faults() - f0) / n_,
        )

    load0 = os.getloadavg()[0]
    for k in models:  # warm-up
        block(k)
    times: dict[str, list] = {k: [] for k in models}
    keys = list(models)
    for r in range(args.repeats):
        for i in range(len(keys)):
            k = keys[(i + r) % len(keys)]
            times[k].append(block(k))
    rec = recs["every=1"]
    print(
        f"model: MLP 784-1024-256-10, {n} parameters, {len(rec.groups)} gauge groups "
        f"({', '.join(f'{g.name}: {g.n_units} units' for g in rec.groups)}), batch "
        f"{args.batch}, threads {torch.get_num_threads()}, optimizer {args.optimizer}; "
        f"{args.repeats} interleaved rounds of {args.steps} steps per variant; load average "
        f"{load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} "
        "CPUs)"
    )
    wall = statistics.median(t[0] for t in times["plain"])
    cpu = statistics.median(t[1] for t in times["plain"])
    faults = {k: statistics.mean(t[2] for t in times[k]) for k in models}
    print(
        f"plain step: median {1e3 * wall:.2f} ms wall, {1e3 * cpu:.2f} ms CPU; minor page "
        "faults per step (mean over the rounds): "
        + ", ".join(f"{k} {v:.0f}" for k, v in faults.items())
    )
    print(
        "overhead ratio = recorder / plain, paired per round: median [95% interval of the "
        "median] (quartiles of the rounds)"
    )
    passes = rec.passes()
    print(
        "passes over parameter memory per recorded step: "
        + ", ".join(f"{k} {v:.2f}" for k, v in passes.items())
    )
    rows = {}
    for k, r in recs.items():
        rw = [a[0] / b[0] for a, b in zip(times[k], times["plain"])]
        rc = [a[1] / b[1] for a, b in zip(times[k], times["plain"])]
        print(
            f"  recorder {k:<9} ({len(r)} recorded steps): wall {_summary(rw)}  CPU {_summary(rc)}"
        )
        rows[k] = {"wall": _numbers(rw), "cpu": _numbers(rc), "recorded": len(r)}
    if args.json:
        write_record(
            args.json,
            record,
            {
                "optimizer": args.optimizer,
                "malloc": malloc,
                "faults_per_step": faults,
                "rounds": args.repeats,
                "threads": torch.get_num_threads(),
                "parameters": n,
                "plain_ms": {"wall": 1e3 * wall, "cpu": 1e3 * cpu},
                "passes": passes,
                "ratios": rows,
            },
        )


def _numbers(x: list[float]) -> dict:
    """The median, its 95% interval and the quartiles of paired ratios (as :func:`_summary`)."""
    q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
    ci = stats.quantile_test(x, q=statistics.median(x), p=0.5).confidence_interval(0.95)
    return {
        "median": statistics.median(x),
        "low": ci.low if math.isfinite(ci.low) else None,
        "high": ci.high if math.isfinite(ci.high) else None,
        "q1": q[0],
        "q3": q[2],
    }


if __name__ == "__main__":
    main()

"""Recorder overhead on a training step of a ~1M-parameter MLP, against plain torch.optim.Adam.

Identical copies of the model train on the same batch with plain Adam and with Adam + recorder:
per-step aggregates (``every=1``) with the default backend (the native single-pass C++ kernel,
built once per machine) and with ``backend="eager"``; every 10th step (default backend); and, with
``--compile``, the recorder's fused ``torch.compile`` kernel; with ``--per-tensor``, the native
kernel called once per parameter (the recorder's fast path, one call per parameter group, turned
off: what the fast path saves, side by side). Blocks of steps are interleaved in
rotating order; each round gives one paired ratio per variant (its block time over the plain
block of the same round), and the median ratio over rounds is reported with its quartiles, in
wall time and in process CPU time (less sensitive to a loaded machine).

Two denominators, both printed: **full step** (forward, backward and ``opt.step()``, the cost a
training run sees) and **opt.step() alone** (the optimizer call, whose hooks the recorder runs
in; the same added time is a much larger fraction of it).

    .venv/bin/python benchmarks/bench_adam.py [--repeats 21] [--steps 5] [--batch 128]
        [--threads 1] [--foreach] [--compile] [--per-tensor] [--malloc default|fixed]

``--threads 0`` keeps torch's default thread count. It prints the machine (CPU model, cores, load)
and each recorder's passes over parameter memory per recorded step
(:meth:`gaugedyn.adam.AdamRecorder.passes`); ``--json PATH`` writes the figures as a benchmark
record (``benchmarks/_record.py``). It prints each variant's minor page faults per step (torch's
Adam allocates two parameter-sized temporaries per parameter; with glibc's default allocator they
come back as fresh pages in some phases of a run and not in others); ``--malloc fixed`` pins the
allocator's thresholds for the whole run, every variant alike (``_record.set_malloc()``).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from gaugedyn.adam import AdamRecorder


def _quartiles(x: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
    return q[0], statistics.median(x), q[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--foreach", action="store_true", help="use the foreach path")
    ap.add_argument(
        "--compile",
        action="store_true",
        help="also time the recorder's torch.compile'd fused reduction",
    )
    ap.add_argument(
        "--per-tensor",
        action="store_true",
        help="also time the native kernel called once per parameter (the group fast path off)",
    )
    ap.add_argument("--json", default=None, help="write the figures as a benchmark record")
    ap.add_argument(
        "--malloc",
        default="default",
        help="glibc's allocator for the whole run: default or fixed (_record.set_malloc)",
    )
    args = ap.parse_args()
    from _record import describe_machine, minor_faults, set_malloc, start_record, write_record

    malloc = set_malloc(args.malloc)
    record = start_record("bench_adam.py")
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
    from gaugedyn.adam import _native

    if not _native.available():
        print(f"native kernel unavailable ({_native._ERROR}); the default backend is eager here")
    variants = {
        "every=1": {},
        "every=1, fused step": {"fuse_step": True},
        "every=1, eager": {"backend": "eager"},
        "every=10": {"every": 10},
    }
    if args.compile:
        variants["every=1, compile"] = {"compile": True}
    if args.per_tensor:
        variants["every=1, per tensor"] = {}
    models = {"plain": base, **{k: copy.deepcopy(base) for k in variants}}
    opts = {
        k: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.99), foreach=args.foreach)
        for k, m in models.items()
    }
    recs = {k: AdamRecorder(opts[k], **kw) for k, kw in variants.items()}
    if args.per_tensor:  # the group fast path declined every time: the per-tensor kernel calls
        recs["every=1, per tensor"]._sweep_group = lambda *a: False
    x = torch.randn(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))

    def block(k: str) -> tuple[float, float, float, float, float]:
        m, o = models[k], opts[k]
        t0, c0, f0 = time.perf_counter(), time.process_time(), minor_faults()
        sw = sc = 0.0
        for _ in range(args.steps):
            o.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            s0, s1 = time.perf_counter(), time.process_time()
            o.step()
            sw, sc = sw + time.perf_counter() - s0, sc + time.process_time() - s1
        n_ = args.steps
        return (
            (time.perf_counter() - t0) / n_,
            (time.process_time() - c0) / n_,
            sw / n_,
            sc / n_,
            (minor_faults() - f0) / n_,
        )

    for k in models:  # warm-up (and compilation)
        block(k)
    for k in ("every=1", "every=1, fused step", "every=1, compile", "every=1, per tensor"):
        if k in recs:
            eager, other = recs["every=1, eager"].norms()[-1], recs[k].norms()[-1]
            print(
                f"{recs[k].metadata()['backend']} vs eager norms, max relative difference: "
                f"{float(abs(other - eager).max() / abs(eager).max()):.2e}"
            )
    times = {k: [] for k in models}
    keys = list(models)
    for r in range(args.repeats):
        for i in range(len(keys)):
            k = keys[(i + r) % len(keys)]
            times[k].append(block(k))
    print(
        f"model: MLP 784-1024-256-10, {n} parameters, batch {args.batch}, "
        f"threads {torch.get_num_threads()}, {'foreach' if args.foreach else 'default'} Adam "
        f"path; {args.repeats} interleaved rounds of {args.steps} steps per variant"
    )
    rows = report(times, recs)
    faults = {k: statistics.mean(t[4] for t in times[k]) for k in models}
    print(
        "minor page faults per step (mean over the rounds): "
        + ", ".join(f"{k} {v:.0f}" for k, v in faults.items())
    )
    if args.json:
        write_record(
            args.json,
            record,
            {
                "rounds": args.repeats,
                "threads": torch.get_num_threads(),
                "parameters": n,
                "foreach": bool(args.foreach),
                "malloc": malloc,
                "faults_per_step": faults,
                "ratios": rows,
            },
        )


def report(times: dict, recs: dict) -> dict:
    """Print the paired ratios against both denominators (see module docstring)."""
    col = {name: i for i, name in enumerate(("wall", "cpu", "step_wall", "step_cpu"))}

    def med(k, c):
        return 1e3 * statistics.median(t[col[c]] for t in times[k])

    print(
        f"plain Adam full step: median {med('plain', 'wall'):.2f} ms wall, "
        f"{med('plain', 'cpu'):.2f} ms CPU; opt.step() alone: {med('plain', 'step_wall'):.2f} "
        f"ms wall, {med('plain', 'step_cpu'):.2f} ms CPU"
    )
    print("overhead ratio = recorder / plain, paired per round: median [quartiles]")
    rows: dict = {}
    for denominator, (w, c) in (
        ("full step (forward + backward + opt.step())", ("wall", "cpu")),
        ("opt.step() alone", ("step_wall", "step_cpu")),
    ):
        print(f" against the {denominator}:")
        for k, rec in recs.items():
            rw = [a[col[w]] / b[col[w]] for a, b in zip(times[k], times["plain"])]
            rc = [a[col[c]] / b[col[c]] for a, b in zip(times[k], times["plain"])]
            lo, mid, hi = _quartiles(rw)
            clo, cmid, chi = _quartiles(rc)
            passes = rec.passes()["total"]
            print(
                f"  recorder {k:<16} {rec.metadata()['backend']:<8} ({len(rec)} recorded "
                f"steps, {passes:.0f} passes over parameter memory per recorded step): wall "
                f"{mid:.3f} [{lo:.3f}, {hi:.3f}]  CPU {cmid:.3f} [{clo:.3f}, "
                f"{chi:.3f}]  ({100 * (mid - 1):+.1f}% wall)"
            )
            rows.setdefault(k, {"backend": rec.metadata()["backend"], "passes": passes})[
                "full_step" if w == "wall" else "step_alone"
            ] = {"wall": [lo, mid, hi], "cpu": [clo, cmid, chi]}
    return rows


if __name__ == "__main__":
    main()

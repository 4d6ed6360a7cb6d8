"""Recorder overhead on a training step of a ~1M-parameter MLP, against plain torch.optim.Adam.

Identical copies of the model train on the same batch with plain Adam and with Adam + recorder:
per-step aggregates (``every=1``) with the default backend (the native single-pass C++ kernel,
built once per machine) and with ``backend="eager"``; every 10th step (default backend); and, with
``--compile``, the recorder's fused ``torch.compile`` kernel. Blocks of steps are interleaved in
rotating order; each round gives one paired ratio per variant (its block time over the plain
block of the same round), and the median ratio over rounds is reported with its quartiles, in
wall time and in process CPU time (less sensitive to a loaded machine).

    .venv/bin/python benchmarks/bench_adam.py [--repeats 21] [--steps 5] [--batch 128]
        [--threads 1] [--foreach] [--compile]

``--threads 0`` keeps torch's default thread count.
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
    ap.add_argument("--compile", action="store_true",
                    help="also time the recorder's torch.compile'd fused reduction")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    n = sum(p.numel() for p in base.parameters())
    from gaugedyn.adam import _native

    if not _native.available():
        print(f"native kernel unavailable ({_native._ERROR}); the default backend is eager here")
    variants = {"every=1": {}, "every=1, eager": {"backend": "eager"}, "every=10": {"every": 10}}
    if args.compile:
        variants["every=1, compile"] = {"compile": True}
    models = {"plain": base, **{k: copy.deepcopy(base) for k in variants}}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.99),
                                foreach=args.foreach) for k, m in models.items()}
    recs = {k: AdamRecorder(opts[k], **kw) for k, kw in variants.items()}
    x = torch.randn(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))

    def block(k: str) -> tuple[float, float]:
        m, o = models[k], opts[k]
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            o.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            o.step()
        return (time.perf_counter() - t0) / args.steps, (time.process_time() - c0) / args.steps

    for k in models:  # warm-up (and compilation)
        block(k)
    for k in ("every=1", "every=1, compile"):  # must agree with the eager sums
        if k in recs:
            eager, other = recs["every=1, eager"].norms()[-1], recs[k].norms()[-1]
            print(f"{recs[k].metadata()['backend']} vs eager norms, max relative difference: "
                  f"{float(abs(other - eager).max() / abs(eager).max()):.2e}")
    wall = {k: [] for k in models}
    cpu = {k: [] for k in models}
    keys = list(models)
    for r in range(args.repeats):
        for i in range(len(keys)):
            k = keys[(i + r) % len(keys)]
            w, c = block(k)
            wall[k].append(w)
            cpu[k].append(c)
    print(f"model: MLP 784-1024-256-10, {n} parameters, batch {args.batch}, "
          f"threads {torch.get_num_threads()}, {'foreach' if args.foreach else 'default'} Adam "
          f"path; {args.repeats} interleaved rounds of {args.steps} steps per variant")
    print(f"plain Adam step: median {1e3 * statistics.median(wall['plain']):.2f} ms wall, "
          f"{1e3 * statistics.median(cpu['plain']):.2f} ms CPU")
    print("overhead ratio = recorder step / plain step, paired per round: median [quartiles]")
    for k, rec in recs.items():
        rw = [a / b for a, b in zip(wall[k], wall["plain"])]
        rc = [a / b for a, b in zip(cpu[k], cpu["plain"])]
        lo, med, hi = _quartiles(rw)
        clo, cmed, chi = _quartiles(rc)
        print(f"  recorder {k:<16} {rec.metadata()['backend']:<8} ({len(rec)} recorded steps): "
              f"wall {med:.3f} [{lo:.3f}, {hi:.3f}]  CPU {cmed:.3f} [{clo:.3f}, {chi:.3f}]  "
              f"({100 * (med - 1):+.1f}% wall; target < 1.15)")


if __name__ == "__main__":
    main()

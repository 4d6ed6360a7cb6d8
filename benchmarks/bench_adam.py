"""Recorder overhead on a training step of a ~1M-parameter MLP, against plain torch.optim.Adam.

Identical copies of the model train on the same batch with plain Adam, Adam + recorder computing
the per-step aggregates (``every=1``) and Adam + recorder computing them every 10th step; blocks of
steps are interleaved (rotating order) and the median time per step of each is compared.

    .venv/bin/python benchmarks/bench_adam.py [--repeats 15] [--steps 10] [--batch 128] [--threads 1] [--compile]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from gaugedyn.adam import AdamRecorder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--foreach", action="store_true", help="use the foreach path")
    ap.add_argument("--compile", action="store_true",
                    help="also time the recorder's torch.compile'd fused reduction")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    n = sum(p.numel() for p in base.parameters())
    variants = {"every=1": {}, "every=10": {"every": 10}}
    if args.compile:
        variants["every=1, compile"] = {"compile": True}
    models = {"plain": base, **{k: copy.deepcopy(base) for k in variants}}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.99),
                                foreach=args.foreach) for k, m in models.items()}
    recs = {k: AdamRecorder(opts[k], **kw) for k, kw in variants.items()}
    x = torch.randn(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))

    def block(k: str) -> float:
        m, o = models[k], opts[k]
        t0 = time.perf_counter()
        for _ in range(args.steps):
            o.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            o.step()
        return (time.perf_counter() - t0) / args.steps

    for k in models:  # warm-up (and compilation)
        block(k)
    if args.compile:  # the fused kernel must agree with the eager one
        eager, fused = recs["every=1"].norms()[-1], recs["every=1, compile"].norms()[-1]
        print(f"compiled vs eager norms, max relative difference: "
              f"{float(abs(fused - eager).max() / abs(eager).max()):.2e}")
    times = {k: [] for k in models}
    keys = list(models)
    for r in range(args.repeats):
        for i in range(len(keys)):
            k = keys[(i + r) % len(keys)]
            times[k].append(block(k))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"model: MLP 784-1024-256-10, {n} parameters, batch {args.batch}, "
          f"threads {args.threads}, {'foreach' if args.foreach else 'default'} Adam path, "
          f"{args.repeats} interleaved repeats of {args.steps} steps")
    print(f"median step: plain {1e3 * med['plain']:.2f} ms")
    for k, rec in recs.items():
        ratio = med[k] / med["plain"]
        print(f"recorder ({k}, {len(rec)} recorded steps): {1e3 * med[k]:.2f} ms, "
              f"overhead ratio {ratio:.3f} ({100 * (ratio - 1):+.1f}%); target < 1.15")


if __name__ == "__main__":
    main()

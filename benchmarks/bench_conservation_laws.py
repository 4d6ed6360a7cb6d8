"""The cost of ``gaugedyn.gauge.conservation_laws`` against the parameter count.

Per architecture (square two-layer linear networks of width ``K``, where brackets are needed,
and two-head attention of embedding ``E``, where they are needed at depth 2 and checked at
depth 3) and one generic point: the parameter count ``D``, the count, the bracket depth, the
number of brackets drawn and the process CPU time of the point. The Jacobian costs one
backward pass per output row; a bracket of depth ``k`` costs about ``3^k`` gradients, and each
depth draws ``D - dim`` of them, so the brackets dominate where many symmetry directions are
silent (attention).

    .venv/bin/python benchmarks/bench_conservation_laws.py [--threads 1] [--factor 4]
"""

from __future__ import annotations

import argparse
import time

import torch

from gaugedyn.gauge import conservation_laws


class _MHA(torch.nn.Module):
    def __init__(self, embed: int):
        super().__init__()
        self.att = torch.nn.MultiheadAttention(embed, 2, bias=False, batch_first=True)

    def forward(self, x):
        return self.att(x, x, x, need_weights=False)[0]


def _linear(p, x):
    return x @ p["W"].T @ p["A"].T


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: its default)")
    ap.add_argument("--factor", type=float, default=4.0, help="Jacobian rows per parameter")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    conservation_laws(_linear, (8, 2), params={"W": (2, 2), "A": (2, 2)}, points=1)  # warm-up
    print(
        f"{'architecture':24s} {'D':>5s} {'laws':>5s} {'depth':>5s} {'brackets':>8s} {'CPU s':>7s}"
    )
    cases = [
        (f"linear K={K}", _linear, {"W": (K, K), "A": (K, K)}, (int(args.factor * K), K))
        for K in (4, 8, 12)
    ]
    cases += [
        (
            f"attention E={E}, 2 heads",
            _MHA(E),
            None,
            (int(args.factor * 4 * E * E / (3 * E)) + 1, 3, E),
        )
        for E in (4, 8, 12, 16)
    ]
    for name, model, params, shape in cases:
        t0 = time.process_time()
        r = conservation_laws(model, shape, params=params, points=1)
        cpu = time.process_time() - t0
        decisions = r.points[0]["decisions"]
        drawn = sum(d["rows"] - prev["rank"] for prev, d in zip(decisions, decisions[1:]))
        print(f"{name:24s} {r.dimension:5d} {r.laws:5d} {r.depth:5d} {drawn:8d} {cpu:7.2f}")


if __name__ == "__main__":
    main()

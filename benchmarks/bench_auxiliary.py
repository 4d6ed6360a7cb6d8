"""The auxiliary-learning engine's costs, measured in one run (K = 1, one-neuron teachers).

1. Online SGD per step: the exact order-parameter chain (its cost does not depend on D) and the
   weight-space kernel at D = 1000 and 10000, both readings, erf;
2. the ODE's right-hand side per call: closed forms (erf, relu, linear) and the compiled
   Gauss-Hermite rule with the package's drift (tanh), both readings;
3. the full experiment's largest parts are these (``gaugedyn run simulations/auxiliary.toml``
   reports its own wall time).

Medians over ``--rounds`` interleaved rounds, CPU and wall seconds (the machine is shared).

Usage: python benchmarks/bench_auxiliary.py [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gaugedyn.training import AuxiliaryODE, JointLoss, TrainConfig, train_auxiliary, two_teachers


def _time(fn, rounds: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
    return statistics.median(walls), statistics.median(cpus)


def simulations(rounds: int, quick: bool) -> None:
    steps_chain = 20_000 if quick else 200_000
    for reading in ("one_output", "two_heads"):
        loss = JointLoss(0.5, 0.5, 0.5, reading)
        for backend, dim, steps in (
            ("chain", 1000, steps_chain),
            ("compiled", 1000, 5_000),
            ("compiled", 10_000, 500 if quick else 2_000),
        ):
            p = two_teachers(dim, 0.5, activation="erf", Q=0.5, R_main=0.1, R_aux=0.1, a=0.8)
            cfg = TrainConfig(
                optimizer="sgd", samples=None, lr=0.4, steps=steps, points_per_decade=2
            )
            train_auxiliary(
                p,
                loss,
                TrainConfig(optimizer="sgd", samples=None, steps=10),
                1,
                backend=backend,
                threads=1,
            )  # compile

            def run(p=p, loss=loss, cfg=cfg, backend=backend):
                train_auxiliary(p, loss, cfg, 1, backend=backend, threads=1)

            wall, cpu = _time(run, rounds)
            print(
                f"{reading:10s} {backend:8s} D = {dim:6d}: {cpu / steps * 1e6:8.2f} us CPU "
                f"per step ({wall / steps * 1e6:8.2f} wall)"
            )


def right_hand_sides(rounds: int) -> None:
    calls = 50
    for act in ("erf", "relu", "linear", "tanh"):
        p = two_teachers(1000, 0.5, activation=act, Q=0.5, R_main=0.1, R_aux=0.1, a=0.8)
        for reading in ("one_output", "two_heads"):
            f = AuxiliaryODE(p, JointLoss(0.5, 0.5, 0.5, reading), 0.4)
            y = f.initial()
            f(0.0, y)

            def many(f=f, y=y):
                for _ in range(calls):
                    f(0.0, y)

            wall, cpu = _time(many, rounds)
            print(
                f"ODE right-hand side {act:6s} {reading:10s} ({f._quad and 'rule' or 'closed'})"
                f": {cpu / calls * 1e6:9.1f} us CPU per call ({wall / calls * 1e6:9.1f} wall)"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    simulations(args.rounds, args.quick)
    right_hand_sides(args.rounds)


if __name__ == "__main__":
    main()

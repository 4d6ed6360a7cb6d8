"""The batched grids against a loop of one-copy runs, side by side on a small subset.

Three experiments train many copies (seeds, cells, variants) as one program; the peer of each is
the same code run once per copy (or per cell), on the same copies with the same data:

- ``gauge_under_adam``: one task's every ``(beta1, beta2)`` and seed as one program (one Adam
  pair and one root per copy, :func:`gaugedyn.experiments.adam_split.gauge_under_adam._run`:
  the single set-up in both gauges and the duplicates, each step split by the probe) against the
  same task run once per beta pair (the experiment's path before issue 33, one program per cell);
- ``prototypes``: one task's runs (every loss combination, coverage, ``tau`` and ``lambda``
  reading of ``seeds`` seeds, built by the experiment) through the compiled kernel
  (``_model.train_fused``) in one call, against one call per run;
- ``shared_representation``: a formation stage, ``S`` seeds x ``R`` route directions as one
  cohort (``_model.replicate`` then ``_model.train`` with the formation record: per-task
  gradients, projection where a route asks for it, one ``torch.optim.Adam`` over the batch),
  against one cohort of one seed and one direction per copy, each replaying the batched run's
  draws of its seed (so the data are the same; the draws are made once, outside the timing).

Every measurement runs on one torch thread (as the tasks run in the harness), warmed up once
(imports, compilation) and compared: the largest absolute difference of every output of the
batched program against the loop's (``nan`` where both are ``nan`` counts as equal; 0 means bit
for bit). Rounds are interleaved in alternating order; per round the ratio loop / batched of
wall time (``time.perf_counter``) and of CPU time (``time.process_time``, this process: both
run in it); printed as the median and the range (smallest, largest) over rounds.

    .venv/bin/python benchmarks/bench_batched_grids.py [--only a,b] [--rounds 3]

``benchmarks/bench_reproduce.py`` calls :func:`measure_all` and prints its lines beside its table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

NAMES = ("gauge_under_adam", "prototypes", "shared_representation")


def side_by_side(variants: dict, rounds: int) -> dict:
    """Wall and CPU seconds of each callable per round, interleaved (the order alternates)."""
    names = list(variants)
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    for r in range(rounds):
        for k in names if r % 2 == 0 else names[::-1]:
            t0, c0 = time.perf_counter(), time.process_time()
            variants[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return {"wall": wall, "cpu": cpu}


def _spread(values: list[float]) -> tuple[float, float, float]:
    """``(median, smallest, largest)``."""
    return statistics.median(values), min(values), max(values)


def summarise(times: dict) -> dict:
    """Per-round ratio loop / batched, wall and CPU, as ``(median, smallest, largest)``, and the
    median seconds of each path."""
    out = {}
    for kind in ("wall", "cpu"):
        t = times[kind]
        out[kind] = _spread([a / b for a, b in zip(t["loop"], t["batched"])])
        out[f"{kind}_seconds"] = {k: statistics.median(v) for k, v in t.items()}
    return out


def max_difference(a, b) -> float:
    """Largest ``|a - b|`` over the arrays (``nan`` against ``nan`` is no difference, ``nan``
    against a number is ``inf``); shapes must agree."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    both = np.isnan(a) & np.isnan(b)
    d = np.where(both, 0.0, np.abs(a - b))
    return float(np.nan_to_num(d, nan=np.inf).max(initial=0.0))


def _one_thread():
    from gaugedyn.training._support import single_thread

    return single_thread()


# ---------------------------------------------------------------------------- gauge_under_adam


def gauge_under_adam_ratio(dim: int = 16, seeds: int = 4, steps: int = 64, rounds: int = 3) -> dict:
    """One task of ``gauge_under_adam`` (the declared five beta pairs at ``dim``, ``seeds``
    seeds, ``steps`` steps) as one program against one program per beta pair."""
    from gaugedyn.experiments import make_config
    from gaugedyn.experiments.adam_split import gauge_under_adam as ga

    cfg = make_config(
        {
            "experiment": ga.EXPERIMENT.name,
            "seed": 0,
            "params": {"dims": [dim], "seeds": seeds, "steps": steps, "pairs_per_task": 12},
        }
    )
    (task,) = cfg.tasks
    seed = np.random.SeedSequence(0)  # the per-cell seeds derive from its entropy (cell_seed)

    def batched():
        return ga._run(task, seed)

    def loop():
        return [ga._run({**task, "betas": [p]}, seed) for p in task["betas"]]

    with _one_thread():
        big, alone = batched(), loop()
        diff = max(
            max_difference(
                big[k], v if k == "time" else np.concatenate([np.asarray(o[k]) for o in alone])
            )
            for k, v in alone[0].items()
        )
        times = side_by_side({"loop": loop, "batched": batched}, rounds)
    P = len(task["betas"])
    return {
        "name": "gauge_under_adam",
        "rounds": rounds,
        "max_abs_diff": diff,
        "subset": f"D = {dim}, {P} beta pairs x {seeds} seeds x 3 set-ups, {steps} Adam "
        f"steps; loop: one program per beta pair",
        **summarise(times),
    }


# ---------------------------------------------------------------------------- prototypes


def prototypes_ratio(n: int = 10, seeds: int = 2, steps: int = 1000, rounds: int = 3) -> dict:
    """One task's runs of ``prototypes`` (width ``n``, ``seeds`` seeds, every variant) through
    the compiled kernel in one call against one call per run."""
    from gaugedyn.experiments.prototypes import _model as model
    from gaugedyn.experiments.prototypes import prototypes as ex

    cfg = {k: q.default for k, q in ex.Prototypes.params.items()} | {"seeds": seeds}
    runs = ex._runs(cfg, n, "inside", np.random.SeedSequence(1))
    B = runs.w.shape[0]
    kw = {
        "steps": steps,
        "lr": float(cfg["lr"]),
        "weight": float(cfg["weight"]),
        "record": (0, steps // 2, steps),
    }
    fields = ("x", "y", "w", "b", "a", "c", "mask", "chamfer", "tau", "weight")
    ones = [model.Runs(**{f: getattr(runs, f)[i : i + 1] for f in fields}) for i in range(B)]

    def batched():
        return model.train_fused(runs, **kw)

    def loop():
        return [model.train_fused(one, **kw) for one in ones]

    with _one_thread():
        big, alone = batched(), loop()
        diff = max(
            max_difference(
                big[k], np.concatenate([o[k] for o in alone], axis=1 if k == "fit_history" else 0)
            )
            for k in ("w", "b", "a", "c", "fit_history")
        )
        times = side_by_side({"loop": loop, "batched": batched}, rounds)
    return {
        "name": "prototypes",
        "rounds": rounds,
        "max_abs_diff": diff,
        "subset": f"N = {n}, {B} runs ({seeds} seeds x {B // seeds} variants), {steps} Adam "
        "steps through the compiled kernel; loop: one call per run",
        **summarise(times),
    }


# ---------------------------------------------------------------------------- shared_representation


def _replay_world(world, draws: list, rows: slice):
    """A world of the seeds ``rows`` whose batches are the recorded ``draws`` of the whole
    world (the same data as the batched run, without drawing)."""
    from gaugedyn.experiments.adam_state import _model as sm

    class Replay(sm.World):
        def __init__(self):
            super().__init__(world.mixing[rows], world.chol, world.sigma)
            self.step = 0

        def sample(self, gen, n):
            z, xi = draws[self.step]
            self.step += 1
            return z[rows], xi[rows]

    return Replay()


def shared_representation_ratio(seeds: int = 2, steps: int = 20, rounds: int = 3) -> dict:
    """A formation stage of ``shared_representation`` (the declared defaults, acquisition by
    gain, ``d_Z = 3``, the four routes x ``K`` directions) for ``seeds`` seeds as one cohort
    against one cohort per seed and direction, on the same data."""
    import torch

    from gaugedyn.experiments.adam_state import _model as sm
    from gaugedyn.experiments.adam_state import _pulses as sp
    from gaugedyn.experiments.adam_state.shared_representation import SharedRepresentation

    hp = {k: q.default for k, q in SharedRepresentation.params.items()}
    hp |= {"acquisition": "gain", "bottleneck": 3, "lr": 0.01}
    K, batch, every = hp["targets"], hp["batch"], hp["record_every"]
    gen = torch.Generator().manual_seed(7)
    world = sm.World.draw(gen, seeds, hp["dim"], K, hp["rho"], hp["sigma"])
    anc = sm.init_cohort(gen, seeds, hp, sm.Variant("ancestor", 0, (1.0,) * K, sp.equal(K)))
    variants = [
        v
        for role in ("acquisition", "update", "variable", "projected")
        for v in sp.route_variants(role, hp, 0.8)
    ]
    R = len(variants)
    draws = [world.sample(gen, batch) for _ in range(steps)]

    def batched():
        c = sm.replicate(anc, variants)
        record = sm.FormationRecord(every)
        sm.train(c, _replay_world(world, draws, slice(None)), gen, steps, batch, record)
        return c, record

    def loop():
        out = []
        for s in range(seeds):
            for v in variants:
                c = sm.replicate(anc, [v], torch.tensor([[s]]))
                record = sm.FormationRecord(every)
                sm.train(c, _replay_world(world, draws, slice(s, s + 1)), gen, steps, batch, record)
                out.append((c, record))
        return out

    def outputs(c, record) -> list[np.ndarray]:
        params = [p.detach().double().numpy() for p in c.net.parameters()]
        return [*params, record.cancellation(), np.stack(record.v_mean)]

    with _one_thread():
        (c, record), alone = batched(), loop()
        ours = outputs(c, record)
        theirs = [outputs(*pair) for pair in alone]
        diff = max(
            max_difference(
                x, np.concatenate([t[i] for t in theirs], axis=2 if i == len(ours) - 1 else 0)
            )
            for i, x in enumerate(ours)
        )
        times = side_by_side({"loop": loop, "batched": batched}, rounds)
    return {
        "name": "shared_representation",
        "rounds": rounds,
        "max_abs_diff": diff,
        "subset": f"formation stage, {seeds} seeds x {R} route directions, {steps} Adam "
        f"steps of batch {batch}; loop: one cohort per seed and direction",
        **summarise(times),
    }


# ---------------------------------------------------------------------------- all


MEASURES = {
    "gauge_under_adam": gauge_under_adam_ratio,
    "prototypes": prototypes_ratio,
    "shared_representation": shared_representation_ratio,
}


def ratio_text(r: dict) -> str:
    w, c = r["wall"], r["cpu"]
    return (
        f"{r['name']}'s batched program against a loop of one-copy runs ({r['subset']}; "
        f"{r['rounds']} rounds interleaved): loop / batched wall {w[0]:.1f}x "
        f"[{w[1]:.1f}, {w[2]:.1f}], CPU {c[0]:.1f}x [{c[1]:.1f}, {c[2]:.1f}] "
        f"(batched {r['wall_seconds']['batched']:.2f} s wall); largest |difference| of the "
        f"outputs {r['max_abs_diff']:.1e}"
    )


def measure_all(names=NAMES, rounds: int = 3) -> list[dict]:
    """Every measurement of ``names``, each dict with its ``text`` line."""
    out = []
    for name in names:
        r = MEASURES[name](rounds=rounds)
        r["text"] = ratio_text(r)
        out.append(r)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="NAME,...", help=f"a subset of {', '.join(NAMES)}")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (>= 1)")
    args = ap.parse_args(argv)
    from gaugedyn import InputError

    names = (
        NAMES if args.only is None else tuple(n.strip() for n in args.only.split(",") if n.strip())
    )
    unknown = [n for n in names if n not in MEASURES]
    if not names or unknown:
        raise InputError(
            f"--only {args.only!r}: unknown {', '.join(unknown) or '(none given)'}; "
            f"allowed: {', '.join(NAMES)}"
        )
    if args.rounds < 1:
        raise InputError(f"--rounds {args.rounds} is not allowed; allowed: an integer >= 1")
    for r in measure_all(names, args.rounds):
        print(r["text"], flush=True)
    return 0


if __name__ == "__main__":
    from gaugedyn import InputError

    try:
        sys.exit(main())
    except InputError as err:  # bad input: one line, exit 2, nothing run
        print(f"bench_batched_grids.py: error: {err}", file=sys.stderr)
        sys.exit(2)

"""The pilot that fixes the seed count of ``prototypes``' headline, ``coverage_lowest_error``.

``train`` trains a pilot independent of the experiment's runs (its own seeds, ``SeedSequence([4444,
N, init index])``): the eight loss combinations (coverage ones per coverage reading) at the
reference ``lambda = 0.1``, ``tau = 0.05``, every size of the full configuration, both
initialisations and both step sizes of ``lrs``, for the fixed budget of 4,000 steps, and writes
the headline's per-seed paired log ratios ``log(err_k / err_cov)`` (cells: (plain, sep, ov) x N,
as the finding lays them out) to a JSON file. ``power`` reads it and writes, per
initialisation, coverage reading and step size, the power of the finding's rule at each
candidate seed count at the declared smallest difference (``_protocol.LOG_RATIO_EFFECT``) and
the smallest count that reaches ``_protocol.POWER_TARGET`` (``_power.seeds_for_power``).

Run: ``python tools/prototypes_pilot.py train --seeds 16 --out results-data/prototypes/pilot.json``
then ``python tools/prototypes_pilot.py power results-data/prototypes/pilot.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from gaugedyn import stats
from gaugedyn.experiments.prototypes import _measures as pm
from gaugedyn.experiments.prototypes import _model as model
from gaugedyn.experiments.prototypes import _power as pw
from gaugedyn.experiments.prototypes import _protocol as pp
from gaugedyn.experiments.prototypes import prototypes as ex

SIZES = ex.Prototypes.params["sizes"].default
LRS = ex.Prototypes.params["lrs"].default
STEPS = 4000
CANDIDATES = (20, 40, 60, 80, 100, 120, 160, 200, 300, 400, 600, 800, 1000)
"""The seed counts tried, smallest first (the abstract ran 10 per cell; the first full run 40)."""
VARIANTS = [(m, c) for m in pp.COMBINATIONS for c in (pp.COVERAGES if m[0] else (None,))]


def _runs(n: int, init: str, seeds: int) -> model.Runs:
    seed = np.random.SeedSequence([4444, n, pp.INITS.index(init)])
    rows = []
    for s in range(seeds):
        x, y = model.training_data(stats.generator(seed, "data", s), n, "sin")
        p0 = model.initial_parameters(stats.generator(seed, "init", s), n, init)
        rows += [(x, y, p0, v) for v in VARIANTS]

    def stack(k):
        return np.stack([r[2][k] for r in rows])

    return model.Runs(
        x=np.stack([r[0] for r in rows]),
        y=np.stack([r[1] for r in rows]),
        w=stack("w"),
        b=stack("b"),
        a=stack("a"),
        c=np.zeros(len(rows)),
        mask=np.array([r[3][0] for r in rows], float),
        chamfer=np.array([r[3][1] == "chamfer" for r in rows], float),
        tau=np.full(len(rows), pp.REFERENCE_TAU),
        weight=np.full(len(rows), pp.REFERENCE_WEIGHT),
    )


def log_ratios(err: np.ndarray, cov: str) -> np.ndarray:
    """``(S, 3 n_sizes)`` per seed ``log(err_k / err_cov)`` from ``err`` ``(n_sizes, S, V)``."""
    j = {v: i for i, v in enumerate(VARIANTS)}
    c = j[(pp.COV, cov)]
    blocks = [np.log(err[:, :, j[(k, None)]] / err[:, :, c]).T for k in (pp.PLAIN, pp.SEP, pp.OV)]
    return np.hstack(blocks)


def train(seeds: int, out: Path) -> None:
    start = time.process_time()
    err = {}
    for init in pp.INITS:
        for n in SIZES:
            runs = _runs(n, init, seeds)
            for lr in LRS:
                o = model.train_fused(runs, steps=STEPS, lr=lr, weight=pp.REFERENCE_WEIGHT)
                got = pm.measure_runs(runs.x, runs.y, o["w"], o["b"], o["a"], o["c"])
                err.setdefault((init, lr), []).append(
                    got["reconstruction_error"].reshape(seeds, -1)
                )
            print(init, n, f"{time.process_time() - start:.0f} CPU-s", flush=True)
    data = {
        "what": "per-seed paired log ratios log(err_k / err_cov) of the pilot (tools/"
        "prototypes_pilot.py): cells (plain, sep, ov) x sizes",
        "seeds": seeds,
        "sizes": SIZES,
        "steps": STEPS,
        "weight": pp.REFERENCE_WEIGHT,
        "tau": pp.REFERENCE_TAU,
        "cpu_seconds": time.process_time() - start,
        "log_ratios": {
            f"{init}|{lr:g}|{cov}": log_ratios(np.stack(err[(init, lr)]), cov).tolist()
            for (init, lr) in err
            for cov in pp.COVERAGES
        },
    }
    out.write_text(json.dumps(data, indent=1) + "\n")


def power(path: Path, reps: int) -> dict:
    data = json.loads(path.read_text())
    out = {}
    for key, values in data["log_ratios"].items():
        n, powers = pw.seeds_for_power(
            np.asarray(values, float),
            pp.LOG_RATIO_EFFECT,
            target=pp.POWER_TARGET,
            candidates=CANDIDATES,
            reps=reps,
        )
        out[key] = {"seeds": n, "power": {str(k): v for k, v in powers.items()}}
        print(key, n, {k: round(v, 3) for k, v in powers.items()}, flush=True)
    data["power"] = {"effect": pp.LOG_RATIO_EFFECT, "target": pp.POWER_TARGET, "reps": reps}
    data["power"]["by_reading"] = out
    path.write_text(json.dumps(data, indent=1) + "\n")
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--seeds", type=int, default=16)
    t.add_argument("--out", type=Path, required=True)
    q = sub.add_parser("power")
    q.add_argument("pilot", type=Path)
    q.add_argument("--reps", type=int, default=1000)
    args = p.parse_args(argv)
    if args.command == "train":
        train(args.seeds, args.out)
    else:
        power(args.pilot, args.reps)


if __name__ == "__main__":
    main()

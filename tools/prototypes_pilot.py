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

``allocate`` (issue 44, after no uniform count reached the target under the primary reading)
reads the same pilot and chooses a seed count per size for the headline configuration: per size,
the power of the rule on that size's three cells at each of `SIZE_CANDIDATES` under the primary
reading (the sizes are
independent tasks, so the every-cell rule's power is the product over sizes,
`_power.cheapest_counts`), the CPU cost of one seed at each size measured from the kernel (the
headline's four runs per seed, `_headline.VARIANTS`, 4,000 steps), and the counts of least total
cost whose joint power reaches the target under the primary reading (``inside|0.01|one-sided``),
checked on independent resamples (`_power.joint_power`, its own streams): the check passes when
the checked joint power less twice its Monte Carlo standard error (`_power.product_se`) reaches
the target; when it falls short, the target of the choice is raised by 0.01 until it passes. It writes ``per_size`` into
the pilot file: the primary reading's curves, the costs, the counts, its joint power and every
reading's joint power at those counts (the other readings' are reported, not required).

``stage-2`` (issue 44, after stage 1's own values gave it less power than its design) chooses
stage 2's counts by the same procedure (`choose`) at ``_protocol.HEADLINE_STAGE_2_TARGET``, on
the pilot's primary-reading log ratios and the published stage 1's pooled (`_power.pooled`), at
the per-seed costs stored by ``allocate``; it writes ``stage_2`` into the pilot file.

Run: ``python tools/prototypes_pilot.py train --seeds 16 --out results-data/prototypes/pilot.json``
then ``python tools/prototypes_pilot.py power results-data/prototypes/pilot.json`` and
``python tools/prototypes_pilot.py allocate results-data/prototypes/pilot.json``; stage 2:
``python tools/prototypes_pilot.py stage-2 results-data/prototypes/pilot.json
results-data/prototypes/extensions/headline/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

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
SIZE_CANDIDATES = (
    20, 40, 60, 80, 100, 120, 160, 200, 240, 320, 400, 480, 640, 800, 960, 1280, 1600, 2000,
    2560, 3200, 4000,
)  # fmt: skip
"""The seed counts tried at each size by ``allocate``."""
PRIMARY = "inside|0.01|one-sided"
"""The primary reading of the pilot's keys (initialisation, step size, coverage reading)."""
VARIANTS = [(m, c) for m in pp.COMBINATIONS for c in (pp.COVERAGES if m[0] else (None,))]


def _runs(n: int, init: str, seeds: int) -> model.Runs:
    seed = np.random.SeedSequence([4444, n, pp.INITS.index(init)])
    variants = [
        {"mask": m, "coverage": c, "tau": pp.REFERENCE_TAU, "weight": pp.REFERENCE_WEIGHT}
        for m, c in VARIANTS
    ]
    return model.seeded_runs(seed, n, seeds, init, "sin", variants)


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


def seed_costs(seeds: int = 8) -> list[float]:
    """CPU seconds of one seed of the headline at each size (its four runs, 4,000 steps, and
    their measures), measured on ``seeds`` seeds of a stream used by nothing else
    (``SeedSequence([999, N])``), after one short call that compiles the kernel."""
    from gaugedyn.experiments.prototypes import _headline as hl

    def runs(n: int) -> model.Runs:
        return hl.headline_runs(n, seeds, np.random.SeedSequence([999, n]))

    model.train_fused(runs(3), steps=10, lr=1e-2, weight=pp.REFERENCE_WEIGHT)
    out = []
    for n in SIZES:
        r = runs(n)
        start = time.process_time()
        o = model.train_fused(r, steps=STEPS, lr=1e-2, weight=pp.REFERENCE_WEIGHT)
        pm.measure_runs(r.x, r.y, o["w"], o["b"], o["a"], o["c"])
        out.append((time.process_time() - start) / seeds)
        print(f"N = {n}: {out[-1]:.4f} CPU-s per seed", flush=True)
    return out


def choose(
    values: np.ndarray, costs: list[float], target: float, reps: int, check_reps: int
) -> tuple[np.ndarray, list[int], float, list[float], float, float]:
    """The per-size counts of least cost whose joint power at the declared difference reaches
    ``target`` on resamples of ``values`` (``(S, 3 n_sizes)``, ``nan`` where a size has no
    value in a row), checked on independent resamples: the curves, the counts, the checked joint
    power, per size, its Monte Carlo standard error and the aim that passed (module doc)."""
    effect = pp.LOG_RATIO_EFFECT
    curves = pw.power_curves(values, len(SIZES), SIZE_CANDIDATES, effect, reps=reps)
    aim = target
    while True:
        got = pw.cheapest_counts(curves, SIZE_CANDIDATES, costs, aim)
        if got is None:
            raise SystemExit(f"no counts up to {SIZE_CANDIDATES[-1]} reach {aim:.2f}")
        counts, _ = got
        checked, per = pw.joint_power(values, counts, effect, reps=check_reps)
        se = pw.product_se(per, check_reps)
        print(f"aim {aim:.2f}: counts {counts}, checked {checked:.3f} +- {se:.3f}", flush=True)
        if checked - 2 * se >= target:
            return curves, counts, checked, per, se, aim
        aim = round(aim + 0.01, 2)


def allocate(path: Path, reps: int, check_reps: int) -> dict:
    data = json.loads(path.read_text())
    effect, target = pp.LOG_RATIO_EFFECT, pp.POWER_TARGET
    costs = seed_costs()
    values = np.asarray(data["log_ratios"][PRIMARY], float)
    curves, counts, checked, per, se, aim = choose(values, costs, target, reps, check_reps)
    others = {
        key: pw.joint_power(np.asarray(values, float), counts, effect, reps=check_reps)[0]
        for key, values in data["log_ratios"].items()
    }
    data["per_size"] = {
        "what": "a seed count per size for the headline configuration (issue 44): per size, the "
        "power of every_cell_median on its three cells at each candidate under the primary "
        "reading (the curves), the "
        "CPU cost of one seed, the cheapest counts whose joint power (the product over sizes) "
        "reaches the target under the primary reading, checked on independent resamples",
        "primary": PRIMARY,
        "effect": effect,
        "target": target,
        "aim": aim,
        "reps": reps,
        "check_reps": check_reps,
        "candidates": list(SIZE_CANDIDATES),
        "cpu_seconds_per_seed": dict(zip(map(str, SIZES), costs)),
        "counts": dict(zip(map(str, SIZES), counts)),
        "cpu_seconds": float(np.dot(costs, counts)),
        "power_by_size": dict(zip(map(str, SIZES), per)),
        "joint_power": checked,
        "joint_power_se": se,
        "joint_power_by_reading": others,
        "curves": curves.tolist(),
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data["per_size"]


def stage_1_values(summary: Path) -> np.ndarray:
    """The published stage 1's per-seed log ratios (``(max S, 3 n_sizes)``, ``nan`` beyond a
    size's count), from its summary's claim `_headline.FINDING`."""
    from gaugedyn.experiments.prototypes import _headline as hl

    claims = json.loads(summary.read_text())["claims"]
    (claim,) = [c for c in claims if c["id"] == hl.FINDING]
    return np.asarray(claim["per_seed"], dtype=float)


def stage_2(path: Path, summary: Path, reps: int, check_reps: int) -> dict:
    """Stage 2's counts (``_protocol.HEADLINE_STAGE_2_TARGET``): `choose` on the pooled log
    ratios of the pilot (primary reading) and the published stage 1 (`_power.pooled`), at the
    CPU costs per seed ``per_size`` stored (measured for stage 1). Writes ``stage_2`` into the
    pilot file."""
    data = json.loads(path.read_text())
    pilot = np.asarray(data["log_ratios"][PRIMARY], float)
    stage1 = stage_1_values(summary)
    values = pw.pooled(pilot, stage1)
    stored = data["per_size"]["cpu_seconds_per_seed"]
    costs = [float(stored[str(n)]) for n in SIZES]
    target = pp.HEADLINE_STAGE_2_TARGET
    curves, counts, checked, per, se, aim = choose(values, costs, target, reps, check_reps)
    rows = [
        int(np.all(np.isfinite(values[:, pw.size_cells(len(SIZES), i)]), axis=1).sum())
        for i in range(len(SIZES))
    ]
    data["stage_2"] = {
        "what": "stage 2 of the headline configuration (issue 44): per size, the power of "
        "every_cell_median on its three cells at each candidate, on resamples of the pooled "
        "per-seed log ratios of the pilot (primary reading) and the published stage 1, the "
        "cheapest counts whose joint power reaches the target, checked on independent resamples",
        "primary": PRIMARY,
        "stage_1": str(summary),
        "stage_1_published": json.loads(summary.read_text())["published"]["date"],
        "pooled_rows_by_size": dict(zip(map(str, SIZES), rows)),
        "effect": pp.LOG_RATIO_EFFECT,
        "target": target,
        "aim": aim,
        "reps": reps,
        "check_reps": check_reps,
        "candidates": list(SIZE_CANDIDATES),
        "cpu_seconds_per_seed": dict(zip(map(str, SIZES), costs)),
        "counts": dict(zip(map(str, SIZES), counts)),
        "cpu_seconds": float(np.dot(costs, counts)),
        "power_by_size": dict(zip(map(str, SIZES), per)),
        "joint_power": checked,
        "joint_power_se": se,
        "curves": curves.tolist(),
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data["stage_2"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--seeds", type=int, default=16)
    t.add_argument("--out", type=Path, required=True)
    q = sub.add_parser("power")
    q.add_argument("pilot", type=Path)
    q.add_argument("--reps", type=int, default=1000)
    a = sub.add_parser("allocate")
    a.add_argument("pilot", type=Path)
    a.add_argument("--reps", type=int, default=2000)
    a.add_argument("--check-reps", type=int, default=4000)
    b = sub.add_parser("stage-2")
    b.add_argument("pilot", type=Path)
    b.add_argument("stage_1", type=Path, help="the published stage 1's summary.json")
    b.add_argument("--reps", type=int, default=2000)
    b.add_argument("--check-reps", type=int, default=4000)
    args = p.parse_args(argv)
    if args.command == "train":
        train(args.seeds, args.out)
    elif args.command == "power":
        power(args.pilot, args.reps)
    elif args.command == "allocate":
        allocate(args.pilot, args.reps, args.check_reps)
    else:
        stage_2(args.pilot, args.stage_1, args.reps, args.check_reps)


if __name__ == "__main__":
    main()

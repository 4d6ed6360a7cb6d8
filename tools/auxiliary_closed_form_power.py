"""Power of ``auxiliary``'s ``closed_form.simulation`` against its seed count: a post-hoc design
computation, written after the 16-seed full run judged the finding UNRESOLVED (so it changed
nothing in that run); the 48 seeds it gave were declared in the protocol before the next run
(``PROTOCOL.md``, section 2). It reads whichever run ``results-data/auxiliary`` holds.

The finding judges 60 (rho, sigma, record) cells of per-seed deviations ``d = eps / closed
form - 1`` as two one-sided tests each (``0.02 - d > 0`` and ``0.02 + d > 0``), 120 columns
judged by ``every_cell_median`` (Holm over the 120). Its declared measure's smallest effect is
0.01 (half the 2% margin) and the paper's value 0.02 (the closed form exact). As
:func:`gaugedyn.stats.power_at` does for the run, every column's median is put at the value
and the stored per-seed rows are resampled (:class:`gaugedyn.stats._resample.Resampler`, a
seed's row of columns kept together), here with ``N`` rows drawn per simulated experiment
instead of the run's own count. Run from the repository root::

    .venv/bin/python tools/auxiliary_closed_form_power.py [--reps 1000]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gaugedyn import stats
from gaugedyn.stats._resample import Resampler

ROOT = Path(__file__).resolve().parents[1]
FINDING = "closed_form.simulation"
SEEDS = (16, 24, 32, 48, 64, 96)


def power(r: Resampler, n: int, value: float, reps: int, seed: int) -> stats.Rate:
    rng = np.random.default_rng([seed, n, int(1e6 * value)])
    rule = stats.RULES["every_cell_median"]
    held = 0
    for start in range(0, reps, 100):
        k = min(100, reps - start)
        rows = rng.integers(0, r.n, size=(k, n))
        x = value + r.points[rows] + r.h * rng.standard_normal((k, n, r.cells))
        held += int(np.sum(rule.evaluate((x,), 0.0, ">", rng=rng)["code"] == 1))
    return stats.Rate.of(held, reps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    args = parser.parse_args(argv)
    summary = json.loads((ROOT / "results-data/auxiliary/summary.json").read_text())
    claim = next(c for c in summary["claims"] if c["id"] == FINDING)
    measure = claim["tolerance"]["measure"]
    r = Resampler(stats.RULES["every_cell_median"], claim["per_seed"])
    print(f"{FINDING}: {r.n} seeds x {r.cells} columns stored; stored power {claim['power']}")
    values = {"smallest effect": float(measure["effect"]), "paper": float(measure["paper"])}
    print("| seeds | " + " | ".join(f"power at {k} ({v:g})" for k, v in values.items()) + " |")
    print("|---|" + "---|" * len(values))
    for n in SEEDS:
        cells = [stats.rate_percent(power(r, n, v, args.reps, 49)) for v in values.values()]
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

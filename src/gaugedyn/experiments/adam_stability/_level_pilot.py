"""Does the quadratic's settled edge follow the detector's rise threshold? A stored pilot.

``spike_boundary``'s measurement ``edge_level`` (``PROTOCOL.md`` section 1) reads the linear
theory's growth per slow turn ``2 pi delta/omega`` on the measured edge of the quadratic's rows:
about 3 on the rows at or below 0.1, and no derivation says why (issue 42, Build 3). If the edge
were only where the settled modulation first reaches the detector's rise threshold, the level
would move with that threshold; if it is where the settled dynamics change abruptly, it would
not. This pilot measures it: the package's own scan of the quadratic (`_scan.run`, orbit start,
the full configuration's seeds, coarse grid, bisection width, lr and eps) on `ROWS` at each rise
threshold of `RISES` (the declared set-up range 1.5-2.5 decades, its default 2, and 1 and 5
beyond it), each ``(rise, row)`` cell from its own seed ``SeedSequence([SEED, rise index, row
index])``. Its result is stored in ``level_pilot.json`` (`main()` writes it, one rise threshold at
a time if asked; about 20 CPU-seconds a threshold on the session's EPYC)
and drawn into ``docs/adam-stability.md`` by ``tools/pilot_tables.py`` (`pilot_markdown()`).

The rows are the full configuration's quadratic rows from 0.01 to 0.1 (six of its eight rows at or
below 0.1): the two below 0.01 have edges near ``2e-6`` and ``7e-6``, whose settled runs last
``1.5e7`` and ``4.3e7`` steps a seed, against ``4.6e6`` for the row 0.0108.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..._meta import cpu_model

ROWS = (0.01, 0.1)
"""The pilot's rows: the full configuration's ``one_minus_beta1`` inside this range."""
RISES = (1.0, 1.5, 2.0, 2.5, 5.0)
"""Rise thresholds (decades) the pilot judges at."""
SEED = 20261207
"""Root of the pilot's seeds."""
STORED = Path(__file__).with_name("level_pilot.json")


def pilot_rows() -> list[float]:
    """The full configuration's quadratic rows inside `ROWS`."""
    from .spike_boundary import EXPERIMENT

    a = EXPERIMENT.params["one_minus_beta1"].default
    return [float(x) for x in a if ROWS[0] <= x <= ROWS[1]]


def edge_at(a: float, rise: float, seed: np.random.SeedSequence) -> list[float]:
    """``[edge, low, high]`` of the quadratic's settled orbit-start edge of row ``a`` at the
    rise threshold ``rise`` (`_bisect.row_edge`; ``nan`` for an open side), the full
    configuration's scan otherwise."""
    from ._bisect import row_edges
    from ._scan import run
    from .spike_boundary import EXPERIMENT

    p = {k: v.default for k, v in EXPERIMENT.params.items()}
    task = {
        "kind": "1d",
        "n": 2.0,
        "start": "orbit",
        "a": [float(a)],
        "c": sorted(float(c) for c in p["one_minus_beta2"]),
        "seeds": int(p["seeds"]),
        "bisect_decades": float(p["bisect_decades"]),
        "eps": float(p["eps"]),
        "spikes": [float(rise), int(p["spike_block_min"]), int(p["spike_blocks_per_horizon"])],
        "lr": float(p["lr"]),
    }
    r = run(task, seed)
    e = row_edges(r["c"], np.asarray(r["status"]), np.asarray(r["bisect_c"], float),
                  np.asarray(r["bisect_status"]), 0)[0]  # fmt: skip
    return [float(v) for v in e]


def level_pilot(rises=RISES, index: int | None = None) -> dict[str, Any]:
    """Run the pilot: per rise threshold, each row's edge and interval, its level
    ``2 pi delta/omega`` (`_spike_analysis.turn_growth`) and the level over the rows
    (`_spike_analysis.level_interval`: geometric mean and Student t interval). The seeds of
    the ``i``-th rise are ``SeedSequence([SEED, index + i, row])`` (``index`` 0 unless given:
    the position of the first rise in `RISES` when run one at a time)."""
    from ._spike_analysis import level_interval, turn_growth

    rows = pilot_rows()
    out: dict[str, Any] = {"rows": rows, "rises": [float(h) for h in rises], "by_rise": []}
    for i, h in enumerate(rises):
        e = np.array([edge_at(a, h, np.random.SeedSequence([SEED, (index or 0) + i, j])) for j, a in
                      enumerate(rows)])  # fmt: skip
        out["by_rise"].append(
            {
                "rise": float(h),
                "edge": e[:, 0].tolist(),
                "low": e[:, 1].tolist(),
                "high": e[:, 2].tolist(),
                "level": turn_growth(np.array(rows), e[:, 0]).tolist(),
                "level_over_rows": level_interval(np.array(rows), e[:, 0]),
            }
        )
    return out


def stored() -> dict[str, Any]:
    """The stored pilot (``level_pilot.json``; ``nan`` read back from ``"nan"``)."""
    raw = json.loads(STORED.read_text())

    def back(v):
        if isinstance(v, list):
            return [back(x) for x in v]
        if isinstance(v, dict):
            return {k: back(x) for k, x in v.items()}
        return float(v) if v in ("nan", "inf", "-inf") else v

    return back(raw)


def ridge(a: float) -> tuple[float, float]:
    """``(c, level)`` of the maximum over ``c`` of the linear theory's growth per slow turn
    ``2 pi delta/omega`` on the quadratic's row ``a`` (eps = 0), on the branch where the leading
    multiplier is complex (``c`` from ``a^3 / 10`` up to where it turns real): a log grid of 801
    points refined by a bounded scalar search around its largest finite value."""
    from scipy.optimize import minimize_scalar

    from ._spike_analysis import turn_growth

    lc = np.linspace(math.log(a**3 / 10), math.log(min(a, 0.99)), 801)
    lv = turn_growth(a, np.exp(lc))
    k = int(np.nanargmax(np.where(np.isfinite(lv), lv, -np.inf)))
    lo, hi = lc[max(k - 1, 0)], lc[min(k + 1, lc.size - 1)]
    best = minimize_scalar(
        lambda x: -float(turn_growth(a, math.exp(x))), bounds=(lo, hi), method="bounded"
    )
    return math.exp(best.x), -float(best.fun)


def pilot_markdown(pilot: dict[str, Any] | None = None) -> list[str]:
    """Markdown lines of the pilot (the stored one unless given): per rise threshold, the level
    ``2 pi delta/omega`` on each row's edge and over the rows, then each row's edge."""
    p = stored() if pilot is None else pilot
    rows = p["rows"]
    head = " | ".join(f"{a:.3g}" for a in rows)
    lines = [
        f"The stored pilot of the edge level against the rise threshold ({p['date']}, "
        f"`{p['command']}`; quadratic, orbit start, settled window, {p['seeds']} seeds a cell, "
        f"bisection to {p['bisect_decades']:g} decades; a row's level is "
        "$2\\pi\\delta/\\omega$ on its edge, the last column their geometric mean with its 95% "
        "Student t interval):",
        "",
        f"| rise (decades) \\ $1 - \\beta_1$ | {head} | over the rows |",
        "|---" * (len(rows) + 2) + "|",
    ]
    for r in p["by_rise"]:
        lv = r["level_over_rows"]
        cells = " | ".join("-" if not math.isfinite(v) else f"{v:.3f}" for v in r["level"])
        lines.append(f"| {r['rise']:g} | {cells} | {lv[0]:.3f} [{lv[1]:.3f}, {lv[2]:.3f}] |")
    lines += ["", "Each row's edge $1 - \\beta_2$ (the same pilot):", ""]
    lines += [f"| rise (decades) \\ $1 - \\beta_1$ | {head} |", "|---" * (len(rows) + 1) + "|"]
    for r in p["by_rise"]:
        cells = " | ".join("-" if not math.isfinite(v) else f"{v:.3g}" for v in r["edge"])
        lines.append(f"| {r['rise']:g} | {cells} |")
    primary = next(r for r in p["by_rise"] if r["rise"] == 2.0)
    lines += [
        "",
        "Where the edge lies on the theory's level surface (computed from the theory, `ridge()`,"
        " and the 2-decade row above): per row, the largest $2\\pi\\delta/\\omega$ over "
        "$1 - \\beta_2$ (the ridge, while the leading multiplier is complex) and where it "
        "lies, against the level and $c_b / (1 - \\beta_1)^3$ on the edge:",
        "",
        "| $1 - \\beta_1$ | ridge level | ridge $c / (1 - \\beta_1)^3$ | edge level | "
        "edge $c_b / (1 - \\beta_1)^3$ |",
        "|---|---|---|---|---|",
    ]
    for a, e, lv in zip(rows, primary["edge"], primary["level"]):
        rc, rl = ridge(a)
        lines.append(f"| {a:.3g} | {rl:.3f} | {rc / a**3:.3g} | {lv:.3f} | {e / a**3:.3g} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run the pilot at the rise thresholds given (``--rise H``, repeatable; all of `RISES`
    when none) and merge them into ``level_pilot.json`` (a rise run again replaces its stored
    entry), with the date, command, the scan's constants, the machine, its load and the CPU
    time of each rise."""
    import argparse
    import os

    from ...harness import write_strict_json
    from .spike_boundary import EXPERIMENT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rise", type=float, action="append", help="a rise threshold of RISES")
    args = parser.parse_args(argv)
    rises = RISES if not args.rise else tuple(args.rise)
    bad = [h for h in rises if h not in RISES]
    if bad:
        raise SystemExit(f"--rise {bad[0]!r} is not allowed; the declared rises are {RISES}")
    p = {k: v.default for k, v in EXPERIMENT.params.items()}
    old = stored() if STORED.exists() else {"by_rise": []}
    entries = {r["rise"]: r for r in old["by_rise"]}
    for h in rises:
        t0, load = time.process_time(), os.getloadavg()[0]
        entry = level_pilot((h,), index=RISES.index(h))["by_rise"][0]
        entry["cpu_seconds"] = round(time.process_time() - t0, 1)
        entry["load"] = round(load, 2)
        entry["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        entries[h] = entry
    out = {
        "date": max(e["date"] for e in entries.values())[:10],
        "command": "python -m gaugedyn.experiments.adam_stability._level_pilot [--rise H]",
        "seeds": int(p["seeds"]),
        "bisect_decades": float(p["bisect_decades"]),
        "machine": cpu_model(),
        "rows": pilot_rows(),
        "rises": [h for h in RISES if h in entries],
        "by_rise": [entries[h] for h in RISES if h in entries],
    }
    write_strict_json(STORED, out)
    print(f"wrote {STORED}: rises {out['rises']}")


if __name__ == "__main__":
    main()

"""The spiky region of ``|x|^n`` (``n > 2``) on a fine grid: a stored pilot for the maps' design.

``spike_boundary``'s slopes of ``n = 4, 6`` came out wider than issue 42 asks (95% widths 0.56
and 0.48 against 0.4). This pilot measures what sets them: every cell of `rows()` (the
configuration's rows of ``n > 2`` at or below 0.1) x `GRID` (a thirty-second of a decade apart,
from ``10^-2.5`` to ``10^-0.25``) simulated with `SEEDS` seeds from both starts, judged under both
windows by the run's own detector (`_scan.Trajectories`, its declared sampling), no scan and no
bisection: the spike probability everywhere. From it (`reading()`): per row the edge as the run
reads it (`_bisect.row_edge` on the fine grid) and the lower end of the spiky band (the lowest
cell with probability >= 1/2), and over the rows the edges' log-log slope, their residual
scatter ``s`` about the line and the band's lower end ``c_low / a``. The design check
(`_detector_controls.map_design_verdicts`) takes its synthetic boundaries' scatter and lower end
from here, never a slope's verdict. Stored in ``map_pilot.json`` (`main()`; about 50 CPU-seconds
on the session's EPYC).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..._meta import cpu_model
from ...harness import atomic_write

GRID = tuple(float(v) for v in 10 ** np.arange(-2.5, -0.25 + 1e-9, 1 / 32))
"""The pilot's ``1 - beta2``: a thirty-second of a decade apart, ``10^-2.5`` to ``10^-0.25`` (the
spiky band of every row at or above 0.005 lies inside: it starts near ``c = 1 - beta1``)."""
SEEDS = 16
"""Seeds per cell (the published design's ``seeds_above_2``)."""
NS = (3.0, 4.0, 6.0)
"""The exponents piloted."""
STARTS = ("orbit", "generic")
SEED = 20261208
"""Root of the pilot's seeds: ``(n, start)`` draws from ``SeedSequence([SEED, n, start index])``."""
STORED = Path(__file__).with_name("map_pilot.json")


def rows() -> list[float]:
    """The 12 rows of ``n > 2`` at or below 0.1 of the published design (0.005 to 0.1, evenly
    in ``log``)."""
    return [float(v) for v in np.logspace(math.log10(0.005), -1, 12)]


def pilot_map(n: float, start: str, seed) -> dict[str, Any]:
    """Spiky and judged (spiky or quiet) seeds of every cell of `rows()` x `GRID` under the
    settled (0) and transient (1) window: ``spiky``, ``judged`` ``(window, row, cell)``."""
    from ._protocol import CODES
    from ._scan import Trajectories
    from .spike_boundary import EXPERIMENT

    p = {k: v.default for k, v in EXPERIMENT.params.items()}
    a_rows = rows()
    task: dict[str, Any] = {
        "kind": "1d",
        "n": float(n),
        "start": start,
        "a": a_rows,
        "c": list(GRID),
        "seeds": SEEDS,
        "lr": float(p["lr"]),
        "eps": float(p["eps"]),
        "spikes": [float(p["spike_rise"]), int(p["spike_block_min"]),
                   int(p["spike_blocks_per_horizon"])],
    }  # fmt: skip
    runs = Trajectories(task, seed)
    spiky = np.zeros((2, len(a_rows), len(GRID)), dtype=np.int64)
    judged = np.zeros_like(spiky)
    for i, a in enumerate(a_rows):
        st = runs.evaluate(0, np.full(len(GRID), a), np.array(GRID))  # (cells, seeds, windows)
        s = (st == CODES["spiky"]).sum(axis=1)
        spiky[:, i] = s.T
        judged[:, i] = (s + (st == CODES["quiet"]).sum(axis=1)).T
    return {"spiky": spiky.tolist(), "judged": judged.tolist()}


def _status(spiky: int, judged: int) -> np.ndarray:
    from ._protocol import CODES

    return np.array(
        [CODES["spiky"]] * spiky + [CODES["quiet"]] * (judged - spiky)
        + [CODES["undetermined"]] * (SEEDS - judged),
        dtype=np.int8,
    )  # fmt: skip


def reading(entry: dict[str, Any], window: int = 0) -> dict[str, Any]:
    """What the pilot says of one ``(n, start)`` under ``window``: per row the edge (``edge``,
    `_bisect.row_edge` on the fine grid, ``nan`` without one), the band's lower end ``low``
    (the lowest cell with probability >= 1/2); over the rows with an edge the least-squares
    ``slope`` of ``log c_b`` on ``log a``, its residual scatter ``s`` (natural log, ``k - 2``
    degrees of freedom), ``rows_with_edge``, and ``low_ratio``: the median of ``low / a``."""
    from ._bisect import row_edge

    a = np.array(rows())
    sp, ju = np.asarray(entry["spiky"])[window], np.asarray(entry["judged"])[window]
    c = np.array(GRID)
    edge, low = [], []
    for i in range(a.size):
        st = np.stack([_status(int(x), int(y)) for x, y in zip(sp[i], ju[i])])
        edge.append(row_edge(c, st)[0])
        p = np.where(ju[i] > 0, sp[i] / np.maximum(ju[i], 1), 0.0)
        hit = np.flatnonzero(p >= 0.5)
        low.append(float(c[hit[0]]) if hit.size else math.nan)
    e = np.array(edge)
    ok = np.isfinite(e)
    x, y = np.log(a[ok]), np.log(e[ok])
    fit = np.polyfit(x, y, 1)
    s = float(np.sqrt(np.sum((y - np.polyval(fit, x)) ** 2) / (ok.sum() - 2)))
    lows = np.array(low)
    return {
        "edge": e.tolist(),
        "low": lows.tolist(),
        "slope": float(fit[0]),
        "intercept": float(fit[1]),
        "s": s,
        "rows_with_edge": int(ok.sum()),
        "low_ratio": float(np.nanmedian(lows / a)),
    }


def map_pilot(ns=NS, starts=STARTS) -> dict[str, Any]:
    """Run the pilot for ``ns`` x ``starts`` (module doc)."""
    out: dict[str, Any] = {}
    for n in ns:
        for start in starts:
            seed = np.random.SeedSequence([SEED, int(n), STARTS.index(start)])
            t0 = time.process_time()
            entry = pilot_map(n, start, seed)
            entry["cpu_seconds"] = round(time.process_time() - t0, 1)
            out[f"n{n:g}_{start}"] = entry
    return out


DESIGN_DRAWS = 6
"""Draws per design and reading of the stored design check."""


def designs() -> dict[str, dict[str, Any]]:
    """The designs of the maps of ``n > 2`` the design check compares: the published run's
    (12 rows at or below 0.1, an eighth-decade grid from 1e-4), the same rows on the full
    configuration's grid, and the full configuration's (its rows, grid, seeds, bisection)."""
    from .spike_boundary import EXPERIMENT

    p = {k: v.default for k, v in EXPERIMENT.params.items()}
    grid = [v for v in p["c_above_2"] if v >= p["c_min_above_2"]]
    above = [v for v in p["rows_above_2"] if v > 0.1 + 1e-12]
    common = {"seeds": int(p["seeds_above_2"]), "bisect_decades": float(p["bisect_decades"])}
    return {
        "published (12 rows, 1/8 decade)": common
        | {"rows": rows() + above, "c": [float(v) for v in np.logspace(-4, -0.25, 31)]},
        "12 rows, the full grid": common | {"rows": rows() + above, "c": grid},
        "the full configuration": common | {"rows": list(p["rows_above_2"]), "c": grid},
    }


def design_check(pilot: dict[str, Any], draws: int = DESIGN_DRAWS) -> list[dict[str, Any]]:
    """`_detector_controls.map_design_verdicts` of every design of `designs()` on the pilot's
    readings of n = 4 and 6 (orbit start, both windows), ``draws`` draws each."""
    from ._detector_controls import map_design_verdicts

    out = []
    for n in ("4", "6"):
        for w, window in enumerate(("settled", "transient")):
            r = reading(pilot["maps"][f"n{n}_orbit"], w)
            for name, d in designs().items():
                v = map_design_verdicts(d, r, draws=draws)
                out.append({"n": int(n), "window": window, "design": name} | v)
    return out


def stored() -> dict[str, Any]:
    """The stored pilot (``map_pilot.json``)."""
    return json.loads(STORED.read_text())


def pilot_markdown(pilot: dict[str, Any] | None = None) -> list[str]:
    """Markdown lines of the pilot (the stored one unless given): per ``n``, start and window
    what `reading()` says, then the stored design check (`design_check()`)."""
    p = stored() if pilot is None else pilot
    lines = [
        f"The stored pilot of the maps of $n > 2$ ({p['date']}, `{p['command']}`; every cell of "
        f"the {len(p['rows'])} rows from {p['rows'][0]:g} to {p['rows'][-1]:g} x "
        f"{len(p['grid'])} values of $1 - \\beta_2$ a thirty-second of a decade apart from "
        f"{p['grid'][0]:.3g} to {p['grid'][-1]:.3g}, {p['seeds']} seeds a cell; the edge of a row "
        "as the run reads it on this grid; *band's lower end*: the median over the rows of the "
        "lowest $1 - \\beta_2$ with spike probability >= 0.5, over $1 - \\beta_1$; the slope and "
        "the residual scatter $s$ (natural log) of the edges about the line):",
        "",
        "| $n$ | start | window | rows with an edge | slope | $s$ | band's lower end / $(1 - \\beta_1)$ |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, entry in p["maps"].items():
        n, start = key[1:].split("_")
        for w, window in enumerate(("settled", "transient")):
            r = reading(entry, w)
            lines.append(
                f"| {n} | {start} | {window} | {r['rows_with_edge']} | {r['slope']:.3f} | "
                f"{r['s']:.3f} | {r['low_ratio']:.2f} |"
            )
    if "design_check" in p:
        lines += [
            "",
            f"The design check (`{p['design_check_command']}`; "
            "`_detector_controls.map_design_verdicts`, "
            f"{DESIGN_DRAWS} draws a design and reading, synthetic bands with the pilot's orbit-start "
            "slope, lower end and scatter; *width*: the median 95% width of the slope over the rows "
            "at or below 0.1; *under 0.4*: the share of draws; *runs a row*: seed-runs evaluated a row):",
            "",
            "| $n$ | window | design | width | under 0.4 | rows with an edge | runs a row |",
            "|---|---|---|---|---|---|---|",
        ]
        for d in p["design_check"]:
            lines.append(
                f"| {d['n']} | {d['window']} | {d['design']} | {d['width']:.3f} | "
                f"{d['narrow']:.2f} | {d['rows_with_edge']:g} | {d['runs_per_row']:.0f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run the whole pilot and write ``map_pilot.json`` with the date, command, grid, rows,
    seeds, machine and load; with ``--design``, rerun only the design check on the stored pilot
    and store it beside (``design_check``)."""
    import argparse
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--design", action="store_true", help="rerun only the design check")
    args = parser.parse_args(argv)
    if args.design:
        old = stored()
        t0 = time.process_time()
        old["design_check"] = design_check(old)
        old["design_check_cpu_seconds"] = round(time.process_time() - t0, 1)
        old["design_check_command"] = (
            "python -m gaugedyn.experiments.adam_stability._map_pilot --design"
        )
        atomic_write(STORED, (_compact(json.dumps(old, indent=1)) + "\n").encode())
        print(f"wrote the design check into {STORED}")
        return
    load = os.getloadavg()[0]
    maps = map_pilot()
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python -m gaugedyn.experiments.adam_stability._map_pilot",
        "machine": cpu_model(),
        "load": round(load, 2),
        "seeds": SEEDS,
        "rows": rows(),
        "grid": list(GRID),
        "maps": maps,
    }
    text = json.dumps(out, indent=1)
    # one row of counts a line: the file stays readable and small
    text = _compact(text)
    atomic_write(STORED, (text + "\n").encode())
    print(f"wrote {STORED}")


def _compact(text: str) -> str:
    import re

    return re.sub(r"\[\s+([-0-9.e,\s]+?)\s+\]", lambda m: "[" + ",".join(
        v.strip() for v in m.group(1).split(",")) + "]", text)  # fmt: skip


if __name__ == "__main__":
    main()

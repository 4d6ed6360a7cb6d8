"""Known-answer controls of ``spike_boundary``'s instruments (``PROTOCOL.md`` section 1).

**The spike detector**, run through the very path of the experiment: a synthetic per-step
``log10`` loss goes through the block reduction of the compiled 1-D map
(`gaugedyn.adam.series_blocks()`) or of the batched training tasks
(``_batched.BlockStatistics``), then through `._protocol.judge_run()` (the settled window)
at the run's sampling, at cells of the configuration's own grids (the quadratic's and the one
of ``n > 2``, each): the shortest memory of the 1-D grid (blocks of ``block_min`` steps), the cell whose run holds the most blocks of
``block_min`` steps (the most chances for noise to fake a rise), a long memory where the blocks
are ``H / blocks_per_horizon`` steps, and the training grid's longest run. The cases and their
known answers:

- isolated spikes (plateaus ``rise + 1`` decades high, 2, 5 and 20 blocks wide, at known steps
  of the settled window): spiky, three spikes, the first at its step; the same ``rise - 0.7``
  high: quiet;
- a settled cycle that sits low and jumps back ``CYCLE_DECADES`` every ``0.04 / (1 - beta2)``
  steps (shorter than the published detector's envelope stride ``0.077 / (1 - beta2)``): spiky;
  the same cycle one decade deep: quiet;
- stationary white log-noise of one decade (three draws): quiet; an upward drift of one decade
  per horizon: quiet;
- exact zeros in 30% of the steps: quiet; in 70%: undetermined (never spiky);
- a loss that grows to ``+inf``, or turns ``nan``, at a known step: diverged; a single ``+inf``:
  diverged.

**The boundary finder and the slope fit** (the bisection `._bisect.scan_rows()` with
`._bisect.row_edges()`, and `._spike_analysis.slope_judgement()`): at the
configuration's rows, coarse grid, seeds and bisection width, seeds drawn spiky with a
probability logistic in ``log c`` around a known boundary ``c_b = C a^3`` (edges found within
the bisection width and 0.05 decades, each covered by its interval) and around a flat boundary;
seeds never, and always, spiky give no edge. The slope fit is judged as the findings are (the
slope rule of ``spike_boundary.cubic_quadratic``'s declared measure) on bisected edges of rows
(at least `SLOPE_ROWS`, the rule's fewest) spread over the part of the configuration's
``a`` range where the boundary lies one cell inside the grid: the fit must resolve (HELD in a
band wide enough to hold any slope) and recover slope 3, or 0, within 0.1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...adam import (
    SpikeSampling,
    loss_floor,
    series_blocks,
    spike_block_size,
    spike_horizon,
    spike_level_blocks,
)
from ...harness import Control
from ._protocol import judge_run, run_steps, settle_steps

LEVEL = -8.0
"""The settled level of the synthetic curves (decades)."""
NOISE = 0.3
"""White log-noise (decades) on the synthetic curves other than the noise case."""
CYCLE_DECADES = 10.0
BOUNDARY_WIDTH = 0.05
"""Width (decades of ``c``) of the synthetic boundary's logistic in the finder's controls."""
CYCLE_PERIOD = 0.04
"""The settled cycle: every ``CYCLE_PERIOD / (1 - beta2)`` steps."""
Reduce = Callable[..., object]


def _series(a: float, c: float, spikes: SpikeSampling, rng) -> tuple[np.ndarray, int, int, int]:
    """A quiet curve at the cell's sampling: the run's length, or long enough to hold three
    plateaus of up to `WIDTHS` blocks, each after a whole level window."""
    settle = int(settle_steps(a, c))
    b = int(spike_block_size(1 - a, 1 - c, spikes))
    m = spike_level_blocks(1 - a, 1 - c, spikes)
    first = settle + (math.ceil(spike_horizon(1 - a, 1 - c) / b) + m + 2) * b
    T = max(int(run_steps(a, c, spikes)), first + 3 * (m + max(WIDTHS) + 4) * b)
    return LEVEL + NOISE * rng.standard_normal(T), settle, b, first


WIDTHS = (2, 3, 6)
"""Widths of the planted plateaus, in blocks."""


def _plateaus(base, first, b, height) -> tuple[np.ndarray, list[int]]:
    """Three plateaus `WIDTHS` blocks wide, evenly spread over the judged blocks."""
    out = base.copy()
    span = (base.size - first) // 3
    starts = []
    for k, width in enumerate(WIDTHS):
        t0 = first + k * span + span // 2 - width * b // 2
        out[t0 : t0 + width * b] += height
        starts.append(t0)
    return out, starts


def _cycle(base, b, c, depth) -> tuple[np.ndarray, int]:
    period = max(int(round(CYCLE_PERIOD / c)), 3 * b)
    t = np.arange(base.size)
    return base - depth * (t % period) / period, period


def detector_cases(a: float, c: float, spikes: SpikeSampling, seed: int = 0) -> list[tuple]:
    """``(case id, aspect, kind, words, curve, check, plateau starts)`` of the module doc at the
    cell ``(a, c)``: ``aspect`` is ``"spike"`` or ``"divergence"`` (what the case controls),
    ``check(settled verdict, plateau starts)`` its known answer."""
    rng = np.random.default_rng(seed)
    base, settle, b, first = _series(a, c, spikes, rng)
    high, starts = _plateaus(base, first, b, spikes.rise + 1.0)
    cases = [
        ("spike", *case)
        for case in _spike_cases(base, a, c, b, first, spikes, rng, starts, high)
        + _cycle_cases(base, c, b)
    ]
    cases += [("divergence", *case) for case in _divergence_cases(base, settle, high)]
    return [
        (cid, aspect, kind, words, curve, check, starts)
        for aspect, cid, kind, words, curve, check in cases
    ]


def _status(word):
    return lambda d, _s: str(d["status"]) == word


def _spike_cases(base, a, c, b, first, spikes, rng, starts, high) -> list[tuple]:
    T = base.size
    low, _ = _plateaus(base, first, b, spikes.rise - 0.7)
    slow = max(int(spike_horizon(1 - a, 1 - c)), (spike_level_blocks(1 - a, 1 - c, spikes) + 1) * b)
    zeros = base.copy()
    zeros[rng.random(T) < 0.3] = -np.inf
    under = base.copy()
    under[rng.random(T) < 0.7] = -np.inf

    def found(d, s):
        t1 = int(d["first_spike"])
        return d["status"] == "spiky" and int(d["n_spikes"]) == 3 and s[0] - b <= t1 <= s[0] + 2 * b

    widths = ", ".join(map(str, WIDTHS))
    return [
        (
            "isolated_spikes",
            "positive",
            f"three plateaus {spikes.rise + 1:g} decades high, "
            f"{widths} blocks of {b} steps wide: spiky, 3 spikes, the first at its step",
            high,
            found,
        ),
        (
            "small_spikes",
            "negative",
            f"the same plateaus {spikes.rise - 0.7:g} decades high: quiet",
            low,
            _status("quiet"),
        ),
        (
            "noise",
            "negative",
            "white log-noise of 1 decade: quiet",
            LEVEL + rng.standard_normal(T),
            _status("quiet"),
        ),
        (
            "drift",
            "negative",
            f"an upward drift of 1 decade per {slow} steps (a horizon, or the "
            "level's window and a block if longer): quiet",
            base + np.arange(T) / slow,
            _status("quiet"),
        ),
        ("zeros", "negative", "exact zeros in 30% of the steps: quiet", zeros, _status("quiet")),
        (
            "underflow",
            "negative",
            "exact zeros in 70% of the steps: undetermined, never spiky",
            under,
            _status("undetermined"),
        ),
        (
            "quantised",
            "negative",
            "the loss rounded to 0.25-decade levels: quiet",
            np.round(base * 4) / 4,
            _status("quiet"),
        ),
    ]


def _cycle_cases(base, c, b) -> list[tuple]:
    cycle, period = _cycle(base, b, c, CYCLE_DECADES)
    return [
        (
            "cycle",
            "positive",
            f"a settled cycle {CYCLE_DECADES:g} decades deep every {period} "
            f"steps (max({CYCLE_PERIOD:g}/(1-beta2), 3 blocks); the published envelope's stride "
            f"was {0.077 / c:.3g}): spiky",
            cycle,
            _status("spiky"),
        ),
        (
            "shallow_cycle",
            "negative",
            "the same cycle 1 decade deep: quiet",
            _cycle(base, b, c, 1.0)[0],
            _status("quiet"),
        ),
    ]


def _divergence_cases(base, settle, high) -> list[tuple]:
    T = base.size
    grow, nan, one_inf = base.copy(), base.copy(), base.copy()
    grow[settle + (T - settle) // 2 :] = np.inf
    nan[settle + (T - settle) // 3 :] = np.nan
    one_inf[settle + (T - settle) // 2] = np.inf
    return [
        (
            "inf",
            "positive",
            "the loss +inf from the middle of the window on: diverged",
            grow,
            _status("diverged"),
        ),
        (
            "nan",
            "positive",
            "the loss nan from a third of the window on: diverged",
            nan,
            _status("diverged"),
        ),
        ("one_inf", "positive", "a single +inf step: diverged", one_inf, _status("diverged")),
        (
            "finite_spikes",
            "negative",
            "finite spikes (the isolated plateaus): not diverged",
            high,
            lambda d, _s: str(d["status"]) != "diverged",
        ),
    ]


def _map_reduce(curve, b, floor):
    return series_blocks(curve, b, floor)


def _task_reduce(curves: np.ndarray, b: int, floor: float) -> list:
    """Every curve (columns) through the training tasks' in-loop reduction."""
    import torch

    from ._batched import BlockStatistics

    acc = BlockStatistics(np.full(curves.shape[1], b), "cpu", floor)
    acc.ceiling = torch.full((curves.shape[1],), math.inf, dtype=torch.float64)
    for row in torch.as_tensor(curves):
        acc.push(row)
    return acc.blocks()


def _map_cells(config: dict) -> list[tuple[float, float]]:
    """The 1-D grids' cells the detector is controlled at (module doc): the quadratic's grid's
    and, where the configuration has ``n > 2``, their own grid's."""
    grids = [("one_minus_beta1", "one_minus_beta2")]
    if any(float(n) > 2 for n in config.get("ns", [])) and "rows_above_2" in config:
        grids.append(("rows_above_2", "c_above_2"))
    cells: list[tuple[float, float]] = []
    for rows, cols in grids:
        cells += _grid_cells(config, config[rows], config[cols])
    return list(dict.fromkeys(cells))


def _grid_cells(config: dict, rows, cols) -> list[tuple[float, float]]:
    from ._protocol import sampling

    spikes = sampling(config)
    a = np.array(rows, float)
    c = np.array(sorted(cols), float)
    cells = [(float(a.max()), float(c.max()))]
    aa, cc = np.meshgrid(a, c, indexing="ij")
    b = spike_block_size(1 - aa, 1 - cc, spikes)
    at_min = b == spikes.block_min
    if at_min.any():
        n = np.where(at_min, run_steps(aa, cc, spikes) / b, 0)
        i, j = np.unravel_index(np.argmax(n), n.shape)
        cells.append((float(aa[i, j]), float(cc[i, j])))
    long = c[c >= 1e-4]
    if long.size:
        cells.append((float(a.min()), float(long.min())))
    return list(dict.fromkeys(cells))


def detector_controls(
    config: dict, reduce: Reduce = _map_reduce, task_reduce: Reduce = _task_reduce
) -> list[Control]:
    """The spike detector's controls at the configuration's sampling (module doc); ``reduce``
    and ``task_reduce`` are the block reductions of the map and of the tasks (arguments, so a
    test can hand a broken one)."""
    from ._protocol import sampling

    spikes = sampling(config)
    out = []
    floor = loss_floor(2.0)
    for a, c in _map_cells(config):
        for cid, aspect, kind, words, curve, check, starts in detector_cases(a, c, spikes):
            out.append(
                _one(
                    f"detector.map.a={a:.3g}.c={c:.3g}.{cid}",
                    _instrument("1-D map blocks", aspect),
                    kind,
                    f"(1 - beta1, 1 - beta2) = ({a:.3g}, {c:.3g}): {words}",
                    lambda curve=curve, a=a, c=c, check=check, starts=starts: _judge_map(
                        reduce, curve, a, c, spikes, floor, check, starts
                    ),
                )
            )
    if config["tasks"]:
        out += _task_controls(config, spikes, task_reduce)
    return out


def _judge_map(reduce, curve, a, c, spikes, floor, check, starts):
    b = int(spike_block_size(1 - a, 1 - c, spikes))
    d, _ = judge_run(reduce(curve, b, floor), a, c, floor, int(settle_steps(a, c)), spikes)
    return _reading(d), bool(check(d, starts))


def _reading(d: dict) -> dict:
    return {
        "status": str(d["status"]),
        "n_spikes": int(d["n_spikes"]),
        "max_rise": float(d["max_rise"]),
        "first_spike": int(d["first_spike"]),
    }


def _task_controls(config, spikes, task_reduce) -> list[Control]:
    from ...adam import FLOAT64_FLOOR

    a = float(max(config["task_one_minus_beta1"]))
    c = float(min(config["task_one_minus_beta2"]))
    cases = detector_cases(a, c, spikes, seed=1)
    b = int(spike_block_size(1 - a, 1 - c, spikes))
    cache: dict = {}

    def judged(k: int):
        if "blocks" not in cache:
            curves = np.stack([case[4] for case in cases], axis=1)
            cache["blocks"] = task_reduce(curves, b, FLOAT64_FLOOR)
        d, _ = judge_run(cache["blocks"][k], a, c, FLOAT64_FLOOR, int(settle_steps(a, c)), spikes)
        return _reading(d), bool(cases[k][5](d, cases[k][6]))

    return [
        _one(
            f"detector.task.a={a:.3g}.c={c:.3g}.{cid}",
            _instrument("training-task blocks", aspect),
            kind,
            f"(1 - beta1, 1 - beta2) = ({a:.3g}, {c:.3g}): {words}",
            lambda k=k: judged(k),
        )
        for k, (cid, aspect, kind, words, *_rest) in enumerate(cases)
    ]


def _instrument(path: str, aspect: str) -> str:
    return f"spike detector, {path}" + (": divergence" if aspect == "divergence" else "")


def _one(cid, instrument, kind, case, run) -> Control:
    proves = {
        "positive": "the detector finds the effect where it is, at the run's sampling",
        "negative": "the detector reads no effect where there is none, at the run's sampling",
    }[kind]
    if instrument.endswith("divergence"):
        proves = "divergence is classified apart from spikes"
    return Control(cid, instrument, kind, case, proves, run)


def boundary_map(a, c, C: float, slope: float, width: float = 0.05) -> np.ndarray:
    """A spike-probability map: ``1 / (1 + exp((log10 c - log10 c_b) / width))`` with
    ``c_b = C a^slope`` (rows ``a``, ascending columns ``c``)."""
    la, lc = np.log10(np.asarray(a, float)), np.log10(np.asarray(c, float))
    z = (lc[None, :] - (math.log10(C) + slope * la[:, None])) / width
    return 1.0 / (1.0 + np.exp(np.clip(z, -50, 50)))


SLOPE_ROWS = 6
"""The fewest rows of the slope controls' maps: the slope rule's minimum (4 residual degrees of
freedom and a lack-of-fit test)."""


def slope_rows(a, c, C: float, slope: float) -> np.ndarray:
    """Rows for a slope control: ``max(len(a), SLOPE_ROWS)`` values of ``a``, evenly spaced in
    ``log a`` over the part of ``[min a, max a]`` where ``c_b = C a^slope`` lies between the
    second and the second-to-last ``c`` (so every row's edge is inside the grid)."""
    a, c = np.sort(np.asarray(a, float)), np.sort(np.asarray(c, float))
    lo, hi = math.log10(a[0]), math.log10(a[-1])
    if slope != 0:
        ends = sorted((math.log10(v) - math.log10(C)) / slope for v in (c[1], c[-2]))
        lo, hi = max(lo, ends[0]), min(hi, ends[1])
    return np.logspace(lo, hi, max(a.size, SLOPE_ROWS))


def oracle(a, C: float, slope: float, seeds: int, width: float, seed: int = 0):
    """An ``evaluate`` for :func:`._bisect.scan_rows`: each seed of a cell ``(a[row], c)`` is
    spiky with probability ``1 / (1 + exp((log10 c - log10 c_b) / width))``, ``c_b = C
    a^slope``, else quiet (both windows alike)."""
    from ._protocol import CODES

    rng = np.random.default_rng(seed)
    a = np.asarray(a, float)

    def evaluate(rows, cs):
        p = boundary_map(a[rows], np.asarray(cs, float)[:, None], C, slope, width)
        p = np.diagonal(p) if p.ndim == 2 else p
        hit = rng.random((len(rows), seeds)) < np.asarray(p).reshape(-1, 1)
        st = np.where(hit, CODES["spiky"], CODES["quiet"]).astype(np.int8)
        return np.repeat(st[..., None], 2, axis=-1)

    return evaluate


def boundary_controls(config: dict, finder=None, fit=None) -> list[Control]:
    """The bisection edge finder's and the slope fit's controls on synthetic probability maps
    at the configuration's rows, coarse grid, seeds and bisection width (module doc)."""
    from ._bisect import row_edges, scan_rows
    from ._spike_analysis import slope_judgement

    fit = slope_judgement if fit is None else fit
    finder = row_edges if finder is None else finder
    a = np.array(config["one_minus_beta1"], float)
    c = np.array(sorted(config["one_minus_beta2"]), float)
    seeds, decades = int(config["seeds"]), float(config["bisect_decades"])
    lc = np.log10(c)
    mid_a, mid_c = math.sqrt(a.min() * a.max()), 0.5 * (lc[0] + lc[-1])

    def edges_of(C, slope, width=BOUNDARY_WIDTH, rows=a):
        r = scan_rows(rows, c, oracle(rows, C, slope, seeds, width), decades)
        return np.asarray(finder(c, r["status"], r["bisect_c"], r["bisect_status"], 0), float)

    def boundary(slope):
        C = 10 ** (mid_c - slope * math.log10(mid_a))
        return edges_of(C, slope), C * a**slope

    def known_edges():
        e, known = boundary(3.0)
        inside = (known > c[0]) & (known < c[-1])
        err = np.abs(np.log10(e[inside, 0] / known[inside]))
        lo, hi = np.nan_to_num(e[inside, 1], nan=0.0), np.nan_to_num(e[inside, 2], nan=np.inf)
        covered = (lo <= known[inside]) & (known[inside] <= hi)  # an open side covers
        ok = inside.sum() >= 2 and np.all(err <= decades + 0.05) and np.all(covered)
        return {"worst_decades": float(np.max(err)), "covered": int(covered.sum())}, bool(ok)

    def fitted(s):
        C = 10 ** (mid_c - s * math.log10(mid_a))
        rows = slope_rows(a, c, C, s)
        e = edges_of(C, s, rows=rows)[:, 0]
        j = fit(rows, e, (-100.0, 100.0), "spike_boundary.cubic_quadratic")
        ok = j.verdict == "HELD" and abs(float(j.estimate) - s) <= 0.1
        return f"{float(j.estimate):.4g} ({j.verdict}{': ' + j.reason if j.reason else ''})", ok

    def no_edge(p):
        e = edges_of(1.0, 0.0, width=1e-9) if p == 1.0 else edges_of(1e-30, 0.0, width=1e-9)
        return int(np.isfinite(e[:, 0]).sum()), not np.isfinite(e[:, 0]).any()

    grid = (
        f"the configuration's rows, coarse grid, {seeds} seeds a cell, bisection to "
        f"{decades:g} decades"
    )
    return _boundary_list(grid, decades, known_edges, no_edge, fitted)


def _boundary_list(grid, decades, known_edges, no_edge, fitted) -> list[Control]:
    return [
        Control(
            "boundary.known_edges",
            "boundary finder (bisection, row_edge)",
            "positive",
            f"on {grid}: seeds spiky with a probability logistic in log c around c_b = C a^3 "
            f"(width {BOUNDARY_WIDTH:g} decades): each row's edge inside the grid within "
            f"{decades:g} + 0.05 decades of c_b, and c_b inside its interval",
            "the finder reads the edge where it is, and its interval covers it",
            known_edges,
        ),
        Control(
            "boundary.never_spiky",
            "boundary finder (bisection, row_edge)",
            "negative",
            f"on {grid}: seeds never spiky: no edge in any row",
            "no edge is read where there is none",
            lambda: no_edge(0.0),
        ),
        Control(
            "boundary.always_spiky",
            "boundary finder (bisection, row_edge)",
            "negative",
            f"on {grid}: seeds spiky everywhere: no edge (spiky at the top)",
            "a row spiky up to the grid's top has no edge",
            lambda: no_edge(1.0),
        ),
        Control(
            "boundary.slope",
            "boundary slope fit (slope_band)",
            "positive",
            f"on {grid}, the bisected edges of a cubic boundary in at least {SLOPE_ROWS} rows "
            "inside it: the fit resolves, slope within 0.1 of 3",
            "the fit recovers a known slope",
            lambda: fitted(3.0),
        ),
        Control(
            "boundary.flat",
            "boundary slope fit (slope_band)",
            "negative",
            f"on {grid}, the bisected edges of a flat boundary in at least {SLOPE_ROWS} rows "
            "inside it: the fit resolves, slope within 0.1 of 0",
            "a boundary that does not move reads no slope",
            lambda: fitted(0.0),
        ),
    ]


def task_design_verdicts(
    config: dict,
    C: float,
    draws: int = 40,
    width: float = BOUNDARY_WIDTH,
    seed: int = 0,
    slope: float = 1.0,
) -> dict[str, float]:
    """What the network tasks' design can resolve where the answer is known: the share of each
    verdict of ``linear_on_tasks``' slope rule (its band) on synthetic boundaries
    ``c_b = C a^slope`` (default exactly linear; the finder controls' `oracle`, logistic of
    ``width`` decades), read as the
    tasks read theirs: every cell of the configuration's task rows x columns evaluated with
    ``task_seeds`` seeds, no bisection (`_bisect.row_edge`), or, with ``task_bracket_stride``,
    the scan of `_scan._scan_task` (`_scanned_edges()`); ``draws`` draws from ``seed``.
    Returns the shares under ``HELD``, ``NOT HELD``, ``UNRESOLVED``, the median number of
    rows with an edge (``rows_with_edge``) and the share of those edges whose interval from the
    seeds has a closed side (``closed_intervals``)."""
    from ._bisect import row_edge
    from ._protocol import BANDS
    from ._spike_analysis import slope_judgement

    a = np.asarray(config["task_one_minus_beta1"], float)
    c = np.sort(np.asarray(config["task_one_minus_beta2"], float))
    seeds = int(config["task_seeds"])
    stride = int(config.get("task_bracket_stride", 0))
    verdicts, rows, closed = [], [], []
    for d in range(draws):
        ev = oracle(a, C, slope, seeds, width, seed=seed + d)
        if stride:
            e = _scanned_edges(a, c, stride, ev)
        else:
            e = np.array([row_edge(c, ev([i] * c.size, c)[..., 0]) for i in range(a.size)])
        j = slope_judgement(a, e[:, 0], BANDS["linear"], "spike_boundary.linear_on_tasks:t")
        verdicts.append(j.verdict)
        has = np.isfinite(e[:, 0])
        rows.append(int(has.sum()))
        closed += np.isfinite(e[has, 1:]).any(axis=1).tolist()
    v = np.array(verdicts)
    out = {k: float(np.mean(v == k)) for k in ("HELD", "NOT HELD", "UNRESOLVED")}
    return out | {
        "rows_with_edge": float(np.median(rows)),
        "closed_intervals": float(np.mean(closed)) if closed else math.nan,
    }


def _scanned_edges(a, c, stride: int, evaluate) -> np.ndarray:
    """``(rows, 3)`` edges of the settled window as a scanned network task reads them
    (`_scan._scan_task`): `_bisect.scan_rows` on every ``stride``-th column from the top, then
    bisection until the bracket is two neighbouring columns of ``c``."""
    from ._bisect import row_edges, scan_rows
    from ._scan import bracket_grid

    coarse = c[bracket_grid(c, stride)]
    step = float(np.max(np.diff(np.log10(c))))
    r = scan_rows(a, coarse, evaluate, 1.5 * step)
    return row_edges(coarse, r["status"], r["bisect_c"], r["bisect_status"], 0)


_DESIGN_CACHE: dict[tuple, dict[str, float]] = {}


def _cached_design_verdicts(config: dict, C: float, slope: float) -> dict[str, float]:
    """`task_design_verdicts()` (its default draws and seed) kept per task design, ``C`` and
    slope: the design controls read nothing of a run, so a multiverse's specifications, which
    differ only in the detector's sampling, share them (each computed once per process)."""
    key = (
        tuple(float(x) for x in config["task_one_minus_beta1"]),
        tuple(sorted(float(x) for x in config["task_one_minus_beta2"])),
        int(config["task_seeds"]),
        int(config.get("task_bracket_stride", 0)),
        float(C),
        float(slope),
    )
    if key not in _DESIGN_CACHE:
        _DESIGN_CACHE[key] = task_design_verdicts(config, C, slope=slope)
    return dict(_DESIGN_CACHE[key])


def design_controls(config: dict, verdicts=None) -> list[Control]:
    """The network tasks' design check as run controls (``PROTOCOL.md``): at the
    configuration's task rows, columns and seeds, a boundary known to be linear at
    ``_protocol.DESIGN_C`` is judged HELD in at least ``DESIGN_POWER`` of the draws with at
    least ``DESIGN_ROWS`` rows holding an edge (positive); a flat boundary (``c_b`` at the
    columns' geometric middle) is judged NOT HELD as often (negative). Declared where the
    configuration runs tasks with seeds enough for an edge interval
    (`._spike_analysis.min_edge_seeds()`); with fewer (a preview, e.g. the quick
    configuration) no task finding can resolve, and its claims say so. ``verdicts``: the
    design check (an argument, so a test can hand a broken one)."""
    from ._protocol import DESIGN_C, DESIGN_POWER, DESIGN_ROWS
    from ._spike_analysis import min_edge_seeds

    if not config.get("tasks") or int(config["task_seeds"]) < min_edge_seeds():
        return []
    verdicts = _cached_design_verdicts if verdicts is None else verdicts
    lc = np.log10(np.asarray(config["task_one_minus_beta2"], float))
    flat = float(10 ** (0.5 * (lc.min() + lc.max())))

    def judged(C: float, slope: float, want: str):
        v = verdicts(config, C, slope=slope)
        ok = v[want] >= DESIGN_POWER and (want != "HELD" or v["rows_with_edge"] >= DESIGN_ROWS)
        return {k: round(float(x), 3) for k, x in v.items()}, bool(ok)

    grid = (
        f"the configuration's task rows ({len(config['task_one_minus_beta1'])}), columns "
        f"({len(config['task_one_minus_beta2'])}) and {int(config['task_seeds'])} seeds a cell, "
        + (
            f"scanned from the top on one column in {int(config['task_bracket_stride'])} and "
            "bisected on the columns between (as the tasks read theirs)"
            if int(config.get("task_bracket_stride", 0))
            else "every cell evaluated, no bisection (as the tasks read theirs)"
        )
    )
    instrument = "network task design (task_design_verdicts: edge finder and slope rule)"
    return [
        Control(
            "task_design.linear",
            instrument,
            "positive",
            f"on {grid}: seeds spiky with a probability logistic in log c around c_b = "
            f"{DESIGN_C:g} (1 - beta1) (teacher_mse's published C): linear_on_tasks' rule says "
            f"HELD in at least {DESIGN_POWER:g} of the draws, with at least {DESIGN_ROWS} rows "
            "holding an edge",
            "the task design can resolve the linear finding where the boundary is linear",
            lambda: judged(DESIGN_C, 1.0, "HELD"),
        ),
        Control(
            "task_design.flat",
            instrument,
            "negative",
            f"on {grid}: a flat boundary at c_b = {flat:.3g}: linear_on_tasks' rule says NOT "
            f"HELD in at least {DESIGN_POWER:g} of the draws",
            "the task design does not call a boundary that does not move linear",
            lambda: judged(flat, 0.0, "NOT HELD"),
        ),
    ]


BAND_LOW_WIDTH = 0.01
"""Width (decades of ``c``) of the logistic of a synthetic band's lower end: the pilot's bands
(`_map_pilot`) rise from no spiky seed to 14-16 of 16 within one cell of a thirty-second of a
decade (0.031 decades: a logistic of width 0.01 goes from 0.1 to 0.9 over 0.044)."""


def band_oracle(a, C: float, slope: float, low_ratio: float, scatter, seeds: int, width: float,
                seed: int = 0):  # fmt: skip
    """An ``evaluate`` for :func:`._bisect.scan_rows` on a spiky *band*, the shape of the maps
    of ``n > 2`` (`_map_pilot`): each seed of a cell ``(a[row], c)`` is spiky with probability
    ``sigma((log10 c - log10 c_low) / BAND_LOW_WIDTH) sigma((log10 c_b - log10 c) / width)``,
    ``c_low =
    low_ratio a`` (the band's lower end) and ``c_b = C a^slope e^(scatter[row])`` (its upper end,
    the edge; ``scatter``: one natural-log offset per row), else quiet (both windows alike)."""
    from ._protocol import CODES

    rng = np.random.default_rng(seed)
    a = np.asarray(a, float)
    lb = np.log10(C * a**slope) + np.asarray(scatter, float) / math.log(10)
    ll = np.log10(low_ratio * a)

    def evaluate(rows, cs):
        lc = np.log10(np.asarray(cs, float))
        z_hi = np.clip((lc - lb[rows]) / width, -50, 50)
        z_lo = np.clip((ll[rows] - lc) / BAND_LOW_WIDTH, -50, 50)
        p = 1.0 / ((1.0 + np.exp(z_hi)) * (1.0 + np.exp(z_lo)))
        hit = rng.random((len(rows), seeds)) < p.reshape(-1, 1)
        st = np.where(hit, CODES["spiky"], CODES["quiet"]).astype(np.int8)
        return np.repeat(st[..., None], 2, axis=-1)

    return evaluate


DESIGN_WIDTH = 0.4
"""The 95% width issue 42 asks of each ``|x|^n`` slope."""


def map_design_verdicts(
    design: dict,
    pilot: dict,
    draws: int = 40,
    width: float = BOUNDARY_WIDTH,
    seed: int = 0,
) -> dict[str, float]:
    """What a design of the maps of ``n > 2`` can resolve on synthetic band boundaries shaped
    as a pilot saw them (`_map_pilot.reading`: its ``slope``, ``intercept``, residual scatter
    ``s`` and band lower end ``low_ratio``; never a published verdict): per draw each row's
    upper edge ``c_b = e^intercept a^slope`` moved by a normal offset of standard deviation
    ``s`` (natural log), the band from ``low_ratio a`` to it (`band_oracle`), scanned as the run
    scans (`_bisect.scan_rows` over the design's ascending ``c`` from the top, bisection to
    ``bisect_decades``, ``seeds`` a cell), read by `_bisect.row_edges` and fitted by the slope
    rule over the design's ``rows`` at or below 0.1 (the primary reading's rows). ``design``:
    ``rows``, ``c``, ``seeds``, ``bisect_decades``. The pilot's ``s`` already holds its own
    seeds' and grid's share, so the check is conservative. Returns the median 95% width of the
    slope's interval (``width``), the share of draws under `DESIGN_WIDTH` (``narrow``), the median
    rows with an edge (``rows_with_edge``), the median fitted slope (``slope``, against the
    pilot's) and the mean seeds-runs evaluated per row (``runs_per_row``: the cost)."""
    from ._bisect import row_edges, scan_rows
    from ._protocol import BANDS, NOT_SIMULATED
    from ._spike_analysis import slope_judgement

    a = np.array([v for v in design["rows"] if v <= 0.1 + 1e-12], float)
    c = np.sort(np.asarray(design["c"], float))
    seeds, decades = int(design["seeds"]), float(design["bisect_decades"])
    C = math.exp(float(pilot["intercept"]))
    rng = np.random.default_rng(seed)
    widths, rows, slopes, runs = [], [], [], []
    for d in range(draws):
        scatter = rng.normal(0.0, float(pilot["s"]), a.size)
        ev = band_oracle(a, C, float(pilot["slope"]), float(pilot["low_ratio"]), scatter,
                         seeds, width, seed=seed + 1 + d)  # fmt: skip
        r = scan_rows(a, c, ev, decades)
        e = row_edges(c, r["status"], r["bisect_c"], r["bisect_status"], 0)[:, 0]
        j = slope_judgement(a, e, BANDS["linear"], "spike_boundary.near_linear:n")
        span = float(j.high) - float(j.low)
        widths.append(span if np.isfinite(span) else math.inf)
        rows.append(int(np.isfinite(e).sum()))
        slopes.append(float(j.estimate))
        evaluated = (r["status"][..., 0, 0] != NOT_SIMULATED).sum()
        evaluated += np.isfinite(r["bisect_c"]).sum()
        runs.append(float(evaluated) * seeds / a.size)
    spans = np.array(widths)
    return {
        "width": float(np.median(spans)),
        "narrow": float(np.mean(spans < DESIGN_WIDTH)),
        "rows_with_edge": float(np.median(rows)),
        "slope": float(np.nanmedian(slopes)),
        "runs_per_row": float(np.mean(runs)),
    }

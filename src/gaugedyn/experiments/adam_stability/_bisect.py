"""A row's spike edge by bisection on the spike probability, with its interval from the seeds.

For a row ``1 - beta1 = a`` the *edge* is the upper edge of the spiky region in ``c = 1 - beta2``:
going up in ``c`` from the highest cell whose spike probability ``p`` (the share of its seeds
judged spiky among those spiky or quiet) is at least 1/2, the ``c`` at which ``p`` falls through
1/2, log-interpolated between that cell and the next evaluated cell above it. It is found in two
phases (`scan_rows()`):

- **bracket**: the declared coarse grid is evaluated from its largest ``c`` downwards and a row
  stops after the first cell with ``p >= 1/2`` under every window (cells below it are not
  evaluated and do not enter the edge);
- **bisection**: while a window's bracket (the highest cell with ``p >= 1/2`` and the evaluated
  cell above it) is wider than ``decades`` in ``log10 c``, its geometric midpoint is evaluated
  with fresh seeds (one cell a round per window and row; the windows share a cell when their
  brackets share a midpoint).

The edge's **interval** (`row_edge()`) is read from the seeds of the evaluated cells: from
the largest evaluated ``c`` at or below the bracket whose exact (Clopper-Pearson) 95% interval of
``p`` lies above 1/2 (significantly spiky) to the smallest at or above it whose interval lies
below 1/2 (significantly quiet); a side with no such cell is open (``nan``). With 8 seeds a cell
is significant only when its seeds agree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy import stats as sps

from ._protocol import CODES, NOT_SIMULATED, probability

EDGE_CONFIDENCE = 0.95
"""Confidence of a cell's spike-probability interval in an edge's interval."""
MAX_ROUNDS = 12
"""Most bisection rounds of a row (a guard: a half-decade bracket reaches 0.04 decades in 4)."""

Evaluate = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``evaluate(rows, c) -> status``: status codes ``(len(rows), seeds, windows)`` of one fresh set
of seeds per ``(a[rows[k]], c[k])`` cell."""


def _known(status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spiky seeds and seeds judged spiky or quiet, over the last axis."""
    spiky = (status == CODES["spiky"]).sum(axis=-1)
    return spiky, spiky + (status == CODES["quiet"]).sum(axis=-1)


def significance(status: np.ndarray, confidence: float = EDGE_CONFIDENCE) -> np.ndarray:
    """Per cell (last axis: seeds): ``+1`` when the exact interval of ``p`` lies above 1/2,
    ``-1`` when below, ``0`` otherwise (and for a cell with no seed spiky or quiet)."""
    st = np.asarray(status)
    spiky, known = _known(st)
    out = np.zeros(spiky.shape, dtype=np.int8)
    for idx in np.ndindex(spiky.shape):
        if known[idx] == 0:
            continue
        out[idx] = _side(int(spiky[idx]), int(known[idx]), float(confidence))
    return out


@functools.lru_cache(maxsize=4096)
def _side(spiky: int, known: int, confidence: float) -> int:
    """`significance` of one cell, by its counts: the exact interval depends on nothing else, and
    the pilots' tables and edges ask for the same few counts thousands of times."""
    ci = sps.binomtest(spiky, known).proportion_ci(confidence_level=confidence, method="exact")
    return 1 if ci.low > 0.5 else (-1 if ci.high < 0.5 else 0)


def _sorted_cells(c: np.ndarray, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated cells of one row with a probability, by ascending ``c``."""
    c = np.asarray(c, float)
    st = np.asarray(status)
    ok = np.isfinite(c) & np.all(st != NOT_SIMULATED, axis=-1)
    ok &= np.isfinite(probability(st))
    order = np.argsort(c[ok])
    return c[ok][order], st[ok][order]


def bracket(c: np.ndarray, status: np.ndarray) -> tuple[float, float] | None:
    """``(c_spiky, c_above)`` of one row and window (``status`` ``(cells, seeds)``), or ``None``
    when the row has no edge among its evaluated cells (never spiky, or spiky at the top)."""
    cs, st = _sorted_cells(c, status)
    hits = np.flatnonzero(probability(st) >= 0.5)
    if hits.size == 0 or hits[-1] == cs.size - 1:
        return None
    j = int(hits[-1])
    return float(cs[j]), float(cs[j + 1])


def row_edge(
    c: np.ndarray, status: np.ndarray, confidence: float = EDGE_CONFIDENCE
) -> tuple[float, float, float]:
    """``(edge, low, high)`` of one row and window from its evaluated cells (module doc);
    all ``nan`` when the row has no edge, ``low``/``high`` ``nan`` when that side is open."""
    cs, st = _sorted_cells(c, status)
    p = probability(st)
    hits = np.flatnonzero(p >= 0.5)
    if hits.size == 0 or hits[-1] == cs.size - 1:
        return math.nan, math.nan, math.nan
    j = int(hits[-1])
    frac = (p[j] - 0.5) / (p[j] - p[j + 1])
    lc = np.log(cs)
    edge = float(np.exp(lc[j] + frac * (lc[j + 1] - lc[j])))
    sig = significance(st, confidence)
    below = np.flatnonzero(sig[: j + 1] == 1)
    above = np.flatnonzero(sig[j + 1 :] == -1)
    low = float(cs[below[-1]]) if below.size else math.nan
    high = float(cs[j + 1 + above[0]]) if above.size else math.nan
    return edge, low, high


def scan_rows(
    a: np.ndarray,
    c_grid: np.ndarray,
    evaluate: Evaluate,
    decades: float,
    windows: int = 2,
    max_rounds: int = MAX_ROUNDS,
    on_round: Callable[[int], None] | None = None,
) -> dict:
    """Both phases (module doc) for every row of ``a`` over the ascending coarse grid
    ``c_grid``. Returns ``status`` ``(rows, cols, seeds, windows)`` of the coarse cells
    (`_protocol.NOT_SIMULATED` below a row's first spiky cell), ``bisect_c``
    ``(rows, R)`` and ``bisect_status`` ``(rows, R, seeds, windows)`` of the bisection's cells
    (``nan`` / ``NOT_SIMULATED`` padded), and ``rounds``."""
    a = np.asarray(a, float)
    c = np.asarray(c_grid, float)
    status: np.ndarray | None = None
    active = np.ones(a.size, dtype=bool)
    for j in range(c.size - 1, -1, -1):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        got = np.asarray(evaluate(rows, np.full(rows.size, c[j])))
        if status is None:
            status = np.full((a.size, c.size) + got.shape[1:], NOT_SIMULATED, dtype=np.int8)
        status[rows, j] = got
        hit = probability(got.transpose(0, 2, 1)) >= 0.5  # (rows, windows)
        active[rows[hit.all(axis=1)]] = False
    assert status is not None
    extra_c: list[list[float]] = [[] for _ in range(a.size)]
    extra_st: list[list[np.ndarray]] = [[] for _ in range(a.size)]
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        rows_, cs_ = _midpoints(c, status, extra_c, extra_st, decades, windows)
        if not rows_:
            rounds -= 1
            break
        got = np.asarray(evaluate(np.array(rows_), np.array(cs_)))
        for k, (i, ci) in enumerate(zip(rows_, cs_)):
            extra_c[i].append(ci)
            extra_st[i].append(got[k])
        if on_round is not None:
            on_round(rounds)
    R = max([len(x) for x in extra_c] + [1])
    bc = np.full((a.size, R), np.nan)
    bs = np.full((a.size, R) + status.shape[2:], NOT_SIMULATED, dtype=np.int8)
    for i in range(a.size):
        if extra_c[i]:
            bc[i, : len(extra_c[i])] = extra_c[i]
            bs[i, : len(extra_c[i])] = np.stack(extra_st[i])
    return {"status": status, "bisect_c": bc, "bisect_status": bs, "rounds": rounds}


def cells_of_row(c_grid, status, bisect_c, bisect_status, i: int, w: int):
    """``(c, status (cells, seeds))`` of row ``i`` and window ``w``: the coarse and bisection
    cells together."""
    c = np.concatenate([np.asarray(c_grid, float), np.asarray(bisect_c, float)[i]])
    st = np.concatenate([np.asarray(status)[i, ..., w], np.asarray(bisect_status)[i, ..., w]])
    return c, st


def _midpoints(c, status, extra_c, extra_st, decades, windows) -> tuple[list[int], list[float]]:
    rows_, cs_ = [], []
    for i in range(status.shape[0]):
        cc = np.concatenate([c, np.asarray(extra_c[i], float)])
        mine = set()
        for w in range(windows):
            ex = [s[..., w] for s in extra_st[i]]
            st = np.concatenate([status[i, ..., w]] + ([np.stack(ex)] if ex else []))
            br = bracket(cc, st)
            if br is None or math.log10(br[1] / br[0]) <= decades:
                continue
            mid = math.sqrt(br[0] * br[1])
            if not np.any(np.isclose(cc, mid, rtol=1e-9)):
                mine.add(mid)
        for mid in sorted(mine):
            rows_.append(i)
            cs_.append(mid)
    return rows_, cs_


def row_edges(c_grid, status, bisect_c, bisect_status, w: int) -> np.ndarray:
    """``(rows, 3)``: `row_edge()` of every row under window ``w``."""
    return np.array(
        [
            row_edge(*cells_of_row(c_grid, status, bisect_c, bisect_status, i, w))
            for i in range(np.asarray(status).shape[0])
        ]
    ).reshape(-1, 3)

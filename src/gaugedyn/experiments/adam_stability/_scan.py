"""The runs of ``spike_boundary`` (``PROTOCOL.md`` section 1): the check's bisections, the
downward scan of the compiled 1-D maps, and the batched full-batch training tasks."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np

from ... import stats
from ..._errors import InputError
from ..._meta import integer_seed
from ...adam import (
    FLOAT64_FLOOR,
    SpikeBlocks,
    SpikeSampling,
    loss_floor,
    oscillating_state,
    simulate_block_sets,
    simulated_boundary,
    spike_block_rises,
    spike_block_size,
    spike_level_blocks,
    theory_boundary,
)
from ._bisect import scan_rows
from ._protocol import (
    ADAM_EPS,
    CODES,
    NOT_SIMULATED,
    RISE_RANGE,
    TRAINED_DECADES,
    judge_run,
    run_steps,
    settle_steps,
)


def start_state(start: str, a, n: float, lr: float, eps: float, rng):
    """``(x0, m0, v0, bias)`` of the protocol's ``orbit`` or ``generic`` start for rows ``a``
    (any shape; one draw per element)."""
    a = np.asarray(a, float)
    st = oscillating_state(a, n, lr, eps)
    sign = rng.choice([-1.0, 1.0], a.shape)
    if start == "generic":
        return st["A"] * 10 ** rng.uniform(-1, 1, a.shape) * sign, 0.0 * a, 0.0 * a, True
    kick = 10 ** rng.uniform(-4, -2, a.shape) * rng.choice([-1.0, 1.0], a.shape)
    return sign * st["A"] * (1 + kick), sign * st["M"], st["V"] + 0.0 * a, False


def run(task, seed) -> dict:
    """One task of ``spike_boundary``: a check, a 1-D scan or a training task."""
    if task["kind"] == "check":
        a, r = (np.array(v) for v in zip(*task["cells"]))
        eps = r * task["lr"] * a / (2 * (2 - a))
        th = theory_boundary(a, 2, r, 1e-2, 1.0)
        sim = simulated_boundary(a, 2, task["lr"], eps, 1e-2, 1.0, steps=task["steps"])
        return {"a": a, "r": r, "c_theory": th, "c_sim": sim}
    if task["kind"] == "task":
        return _run_task(task, seed)
    return _run_1d(task, seed)


def task_sampling(task: dict) -> SpikeSampling:
    """The detector's constants a task carries (``spikes``: rise, block_min, blocks per
    horizon)."""
    rise, block_min, per_horizon = task["spikes"]
    return SpikeSampling(float(rise), int(block_min), int(per_horizon))


def task_samplings(task: dict) -> list[SpikeSampling]:
    """Every detector sampling a task judges its runs by: ``spikes`` (the primary, whose
    results the task returns under the plain names) and then each of ``also`` (the shared pass
    of a multiverse: their results under ``also<q>__<name>``, `ALSO_FIELDS`)."""
    return [task_sampling(task)] + [task_sampling({"spikes": z}) for z in task.get("also", ())]


ALSO_FIELDS = {
    "1d": ("status", "bisect_c", "bisect_status", "rounds"),
    "task": (
        "status",
        "status_rises",
        "rises",
        "max_rise",
        "final_log10_loss",
        "settled_median_log10_loss",
    ),
}
"""The results that depend on the detector's sampling, per task kind: what a shared task returns
once per sampling of ``also``."""


def also_results(out: dict, per_sampling: list[dict], kind: str) -> dict:
    """``out`` with the detector-dependent results of the samplings after the first
    (``per_sampling[1:]``) under ``also<q>__<name>`` (``q`` from 1)."""
    for q, res in enumerate(per_sampling[1:], start=1):
        out |= {f"also{q}__{k}": res[k] for k in ALSO_FIELDS[kind]}
    return out


def select_sampling(task: dict, result: dict, spikes: SpikeSampling) -> dict:
    """The results of ``task`` as judged by the sampling ``spikes``: the plain ones when it is
    the task's primary, else its ``also`` entry's (`ALSO_FIELDS`) in their place.

    Raises
    ------
    ValueError
        When ``spikes`` is none of the task's samplings.
    """
    if task["kind"] not in ALSO_FIELDS:
        return result
    for q, z in enumerate(task_samplings(task)):
        if tuple(z) == tuple(spikes):
            if q == 0:
                return result
            return result | {k: result[f"also{q}__{k}"] for k in ALSO_FIELDS[task["kind"]]}
    raise ValueError(f"{spikes} is not among the task's samplings {task_samplings(task)}")


def _run_task(task, seed, watch=None) -> dict:
    """Every cell and seed of a training task as one copy of a batched full-batch program, run
    once and judged by each of the task's samplings (`task_samplings()`): each copy runs the
    longest settled run any sampling needs at its own cell (`run_steps()`; the batch shrinks as
    the shorter runs end, `_batched.adam_step_sets()`), its losses are reduced once per
    distinct block size, and each sampling judges the blocks of the copy's own run length at
    that sampling (those of the task run with it alone). ``steps_run``: the steps run, summed
    over the copies; ``steps_longest``: the longest copy's. ``watch = (steps, call)``:
    ``call(t, model, before)`` after each of those steps, with the batched model and its
    parameters before the step (`_batched.adam_step_sets`).

    A task with ``bracket_stride`` is scanned instead (`_scan_task()`)."""
    if task.get("bracket_stride"):
        if watch is not None:
            raise InputError("watch is not allowed on a scanned task (bracket_stride); run cells")
        return _scan_task(task, seed)
    a, c = np.array(task["a"]), np.array(task["c"])
    cells = [(i, j) for i in range(a.size) for j in range(c.size)]
    per, steps = _run_cells(task, seed, cells, watch)
    shape = (a.size, c.size)
    per = [
        {k: np.reshape(v, shape + np.shape(v)[1:]) if k in ROW_FIELDS else v for k, v in z.items()}
        for z in per
    ]
    out = per[0] | {"a": a, "c": c} | steps
    return also_results(out, per, "task")


def copy_seeds(base: int, cells, columns: int, seeds: int) -> np.ndarray:
    """The initialisation seeds of the copies of ``cells`` (``(row, column)`` indices of a grid
    of ``columns`` columns), ``seeds`` a cell: copy ``s`` of cell ``(i, j)`` is seeded
    ``base + (i columns + j) seeds + s``, its place in the whole grid (rows, columns, seeds), so
    a cell's copies are the same whichever other cells run beside them (a scan's cells are
    those of the whole grid)."""
    ij = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    first = (ij[:, 0] * int(columns) + ij[:, 1]) * int(seeds)
    return (int(base) + first[:, None] + np.arange(int(seeds))).ravel()


def _run_cells(task, seed, cells, watch=None) -> tuple[list[dict], dict]:
    """The copies of ``cells`` (``(row, column)`` indices into the task's ``a`` and ``c``;
    ``seeds`` copies each, `copy_seeds()`; the teacher's data from the task's seed) as one
    batched program (`_run_task()`'s run), judged by every sampling of the task: per sampling
    the results of `_judge_task()` with a leading cell axis, and ``steps_run`` /
    ``steps_longest``."""
    import torch

    from ._batched import adam_step_sets, task_model

    a, c, S = np.array(task["a"]), np.array(task["c"]), int(task["seeds"])
    ij = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    ac, cc = a[ij[:, 0]], c[ij[:, 1]]
    samplings = task_samplings(task)
    aa, cc3 = np.repeat(ac, S), np.repeat(cc, S)
    own = [run_steps(aa, cc3, z).ravel() for z in samplings]
    longest = np.max(own, axis=0)
    sizes = [spike_block_size(1 - aa, 1 - cc3, z) for z in samplings]
    base = integer_seed(seed)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # every copy its own initialisation (cells independent): a shared one put whole rows on
        # the same plateau in a pilot (docs/adam-stability.md)
        model = task_model(
            task["task"],
            aa.size,
            copy_seeds(base, ij, c.size, S),
            task["n_samples"],
            dtype=torch.float64,
            data_seed=base,
            hidden=task["hidden"],
        )
        distinct = list(dict.fromkeys(tuple(int(b) for b in z) for z in sizes))
        hook = None if watch is None else (watch[0], lambda t, b: watch[1](t, model, b))
        reduced, first = adam_step_sets(
            model,
            task["lr"],
            1 - aa,
            1 - cc3,
            longest,
            distinct,
            eps=float(task.get("eps", ADAM_EPS)),
            watch=hook,
            weight_decay=float(task.get("weight_decay", 0.0)),
        )
    finally:
        torch.set_num_threads(before)
    sets = [reduced[distinct.index(tuple(int(b) for b in z))] for z in sizes]
    per = [
        _judge_task(ac, cc, (len(ij), S), first, blocks, T, size, z)
        for blocks, T, size, z in zip(sets, own, sizes, samplings)
    ]
    steps = {"steps_run": int(longest.sum()), "steps_longest": int(longest.max(initial=0))}
    return per, steps


def _judge_task(ac, cc, shape, first, blocks, T, size, spikes) -> dict:
    """One sampling's verdicts on a training task's copies (``shape``: ``(cells, seeds)``, cell
    ``k`` at ``(ac[k], cc[k])``): each copy's blocks of its own ``T[k]`` steps (``T[k] //
    size[k]`` blocks) judged as `judge_run()` judges them, at the sampling's rise and the
    declared range's ends (`rise_readings()`)."""
    rises = rise_readings(spikes.rise)
    T = np.broadcast_to(np.asarray(T, dtype=np.int64), (int(np.prod(shape)),))
    status = np.full(shape + (2, len(rises)), NOT_SIMULATED, dtype=np.int8)
    rise = np.full(shape + (2,), np.nan)
    settled_median = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    for k, idx in enumerate(np.ndindex(shape)):
        a, c = float(ac[idx[0]]), float(cc[idx[0]])
        settle = int(settle_steps(a, c))
        mine = SpikeBlocks(*(np.asarray(z)[: int(T[k]) // int(size[k])] for z in blocks[k]))
        # the readings differ only in the rise threshold: one set of rises serves them all
        shared = spike_block_rises(mine.median, 1 - a, 1 - c, spikes, FLOAT64_FLOOR)
        for q, h in enumerate(rises):
            sq = spikes._replace(rise=h)
            verdicts = judge_run(mine, a, c, FLOAT64_FLOOR, settle, sq, shared)
            for w, d in enumerate(verdicts):
                status[idx + (w, q)] = CODES[str(d["status"])]
                if q == 0:
                    rise[idx + (w,)] = d["max_rise"]
        settled_median[idx] = trained_level(mine, settle, int(size[k]))
        if not settled_median[idx] <= first[k] - TRAINED_DECADES and np.all(
            status[idx] != CODES["diverged"]
        ):
            status[idx] = CODES["untrained"]
        final[idx] = mine.median[-1]
    return {
        "status": status[..., 0],
        "status_rises": status,
        "rises": np.array(rises),
        "max_rise": rise,
        "final_log10_loss": final,
        "settled_median_log10_loss": settled_median,
    }


ROW_FIELDS = (
    "status",
    "status_rises",
    "max_rise",
    "final_log10_loss",
    "settled_median_log10_loss",
)
"""A task result's fields with a leading row axis (a cell's fields, ``(rows, columns, ...)``)."""


def bracket_grid(c, stride: int) -> np.ndarray:
    """The indices of a scanned task's bracket columns: every ``stride``-th of the ascending
    columns ``c``, from the largest down, which must reach the smallest.

    Raises
    ------
    InputError
        When ``stride`` is not a positive integer or the bracket columns miss the smallest.
    """
    n = len(c)
    if int(stride) != stride or stride < 1 or (n - 1) % int(stride):
        raise InputError(
            f"bracket_stride={stride!r} is not allowed for {n} columns; give a positive integer "
            f"that divides {n - 1}, so every stride-th column from the largest reaches the smallest"
        )
    return np.arange(0, n, int(stride))


def _scan_task(task, seed) -> dict:
    """A training task scanned row by row (``PROTOCOL.md``, the network tasks' scan): per row
    of ``rows`` (all when absent; indices into ``a``) the columns of `bracket_grid()` from the
    largest ``1 - beta2`` down, stopping after the first cell with spike probability at least
    1/2 under every reading (each sampling's windows and rise thresholds), then bisection on
    the columns between (`_bisect.scan_rows`: the bracket's middle column, until the bracket
    is two neighbouring columns). Every cell is the whole grid's (`copy_seeds()`, the teacher
    from the task's seed); the rows a round evaluates at one column run as one batch. Returns
    the fields of `_run_task()` on the grid of ``rows`` x ``c``, the cells not evaluated
    ``NOT_SIMULATED`` (``nan``), and ``cells_run``."""
    a, c, S = np.array(task["a"]), np.array(task["c"]), int(task["seeds"])
    if np.any(np.diff(c) <= 0):
        raise InputError(f"c={task['c']!r} is not allowed; give ascending columns")
    rows = np.array(task.get("rows", range(a.size)), dtype=np.int64)
    coarse = bracket_grid(c, task["bracket_stride"])
    samplings = task_samplings(task)
    store: dict[tuple[int, int], list[dict]] = {}
    counts = {"steps_run": 0, "steps_longest": 0, "cells_run": 0}
    lc = np.log(c)

    def evaluate(local: np.ndarray, cs: np.ndarray) -> np.ndarray:
        cells = [
            (int(rows[r]), int(np.argmin(np.abs(lc - math.log(x))))) for r, x in zip(local, cs)
        ]
        assert not any(k in store for k in cells), "a scan evaluates each cell once"
        per, steps = _run_cells(task, seed, cells)
        counts["steps_run"] += steps["steps_run"]
        counts["steps_longest"] = max(counts["steps_longest"], steps["steps_longest"])
        counts["cells_run"] += len(cells)
        for k, cell in enumerate(cells):
            store[cell] = [{f: np.asarray(z[f])[k] for f in ROW_FIELDS} for z in per]
        # every reading of every sampling as a "window" of the scan: (cells, seeds, readings)
        st = np.concatenate([z["status_rises"].reshape(len(cells), S, -1) for z in per], -1)
        return st

    readings = sum(2 * len(rise_readings(z.rise)) for z in samplings)
    # bisection stops when the bracket is two neighbouring columns: wider than one step of the
    # grid, narrower than two
    step = float(np.max(np.diff(np.log10(c)))) if c.size > 1 else 1.0
    scan_rows(a[rows], c[coarse], evaluate, 1.5 * step, windows=readings)
    out_per = []
    for q, z in enumerate(samplings):
        R = len(rise_readings(z.rise))
        grid: dict[str, np.ndarray] = {
            "status_rises": np.full((rows.size, c.size, S, 2, R), NOT_SIMULATED, np.int8),
            "max_rise": np.full((rows.size, c.size, S, 2), np.nan),
            "final_log10_loss": np.full((rows.size, c.size, S), np.nan),
            "settled_median_log10_loss": np.full((rows.size, c.size, S), np.nan),
        }
        for (i, j), per in store.items():
            r = int(np.flatnonzero(rows == i)[0])
            for f in grid:
                grid[f][r, j] = per[q][f]
        grid["status"] = grid["status_rises"][..., 0]
        out_per.append(grid | {"rises": np.array(rise_readings(z.rise))})
    out = out_per[0] | {"a": a[rows], "c": c} | counts
    return also_results(out, out_per, "task")


def merge_rows(tasks: list[dict], results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The tasks and results of a run with each network task split by rows (``rows``: indices
    into its ``a``) joined back into one task and result per network task, its rows in the
    order of ``a`` (the fields of `ROW_FIELDS` and their ``also`` copies stacked, the steps and
    cells summed, the longest run the longest); other tasks as they are, in their order.

    Raises
    ------
    ValueError
        When a split task's rows do not cover its ``a`` exactly once.
    """
    out_t: list[dict] = []
    out_r: list[dict] = []
    groups: dict[str, int] = {}
    parts: dict[int, list[tuple[dict, dict]]] = {}
    for t, r in zip(tasks, results):
        if t.get("kind") != "task" or "rows" not in t:
            out_t.append(t)
            out_r.append(r)
            continue
        key = json.dumps({k: v for k, v in t.items() if k != "rows"}, sort_keys=True, default=str)
        if key not in groups:
            groups[key] = len(out_t)
            out_t.append({k: v for k, v in t.items() if k != "rows"})
            out_r.append({})
        parts.setdefault(groups[key], []).append((t, r))
    for g, members in parts.items():
        rows = np.concatenate([np.asarray(t["rows"], dtype=np.int64) for t, _ in members])
        n = len(out_t[g]["a"])
        if sorted(rows.tolist()) != list(range(n)):
            raise ValueError(
                f"task {out_t[g]['task']!r}: rows {rows.tolist()} do not cover 0..{n - 1}"
            )
        order = np.argsort(rows, kind="stable")
        first = members[0][1]
        merged = dict(first)
        for f in first:
            name = f.split("__", 1)[1] if f.startswith("also") and "__" in f else f
            if name in ROW_FIELDS or f == "a":
                merged[f] = np.concatenate([np.asarray(r[f]) for _, r in members])[order]
        for f in ("steps_run", "cells_run"):
            if f in first:
                merged[f] = int(sum(int(r[f]) for _, r in members))
        merged["steps_longest"] = int(max(int(r["steps_longest"]) for _, r in members))
        out_r[g] = merged
    return out_t, out_r


def rise_readings(rise: float) -> list[float]:
    """The rise thresholds a task's copies are judged at: the configured one (primary), then
    the declared range's ends (``_protocol.RISE_RANGE``) when they differ from it."""
    return [float(rise)] + [float(h) for h in RISE_RANGE if not np.isclose(h, rise)]


def trained_level(blocks, settle: int, b: int) -> float:
    """Median of the block medians of the clipped ``log10`` loss over the settled window (the
    blocks from step ``settle`` on; non-finite steps count as the float's floor, as in the
    detector)."""
    w = np.asarray(blocks.since(-(-int(settle) // int(b))).median, float)
    return float(np.median(w)) if w.size else math.nan


class Trajectories:
    """The runs of one 1-D task (one system and start), each cell ``(a, c)`` simulated once
    and judged at once by every sampling of the task (`task_samplings()`), so that each
    sampling's scan reads the verdicts of the same trajectories.

    A cell's runs are defined by the task (``n``, start, ``lr``, ``eps``, seeds), its ``(a, c)``
    and its start states; the store is keyed by ``(a, c)`` alone, never by a sampling. The
    primary sampling's scan draws the start states of its cells from the task's generator in
    its order of evaluation (as the task run alone draws them); a cell that only another
    sampling's scan evaluates draws its own from a generator of the cell
    (`cell_generator()`), so its runs do not depend on the order of the scans. Each run lasts
    the longest any sampling needs (`run_steps()`), its steps reduced at every sampling's block
    size in the one pass (`gaugedyn.adam.simulate_block_sets()`), and each sampling judges the
    blocks of its own run length: those of the task run with that sampling alone.
    """

    def __init__(self, task: dict, seed):
        self.task, self.seed = task, seed
        self.samplings = task_samplings(task)
        self.n, self.S = float(task["n"]), int(task["seeds"])
        self.floor = loss_floor(self.n)
        self.rng = stats.generator(seed, "start", task["start"])
        self.cells: dict[tuple[float, float], np.ndarray] = {}
        self.starts: dict[tuple[float, float], tuple] = {}
        self.steps_run = 0
        self.cells_run = 0

    def cell_generator(self, a: float, c: float):
        """The generator of the start states of a cell no primary scan evaluated."""
        return stats.generator(self.seed, "start", self.task["start"], "cell", a, c)

    def evaluate(self, q: int, ar: np.ndarray, cs: np.ndarray) -> np.ndarray:
        """Sampling ``q``'s status codes ``(cells, seeds, windows)`` of the cells ``(ar, cs)``,
        simulating those not yet run (with the task's generator when ``q`` is the primary)."""
        keys = [(float(x), float(y)) for x, y in zip(ar, cs)]
        new = np.array([k not in self.cells for k in keys])
        if q == 0:
            assert new.all(), "the primary scan evaluates each cell once"
            self._simulate(ar, cs, self._draw(ar, self.rng))
        elif new.any():
            starts = [
                self._draw(ar[k : k + 1], self.cell_generator(*keys[k]))
                for k in np.flatnonzero(new)
            ]
            self._simulate(ar[new], cs[new], tuple(np.concatenate(z) for z in zip(*starts)))
        return np.stack([self.cells[k][q] for k in keys])

    def _draw(self, ar: np.ndarray, rng) -> tuple:
        aa = np.repeat(ar[:, None], self.S, axis=1)
        t = self.task
        x0, m0, v0, _ = start_state(t["start"], aa, self.n, t["lr"], t["eps"], rng)
        return tuple(np.broadcast_to(z, aa.shape) for z in (x0, m0, v0))

    def _simulate(self, ar: np.ndarray, cs: np.ndarray, starts: tuple) -> None:
        """Run the cells ``(ar, cs)`` from ``starts`` (``(x0, m0, v0)``, each ``(cells,
        seeds)``), one cell at a time at the distinct block sizes of its samplings, and store
        every sampling's verdicts."""
        t, S = self.task, self.S
        own = np.stack([run_steps(ar, cs, z) for z in self.samplings])
        sizes = np.stack([spike_block_size(1 - ar, 1 - cs, z) for z in self.samplings], axis=1)
        x0, m0, v0 = starts
        for k in range(ar.size):
            distinct, which = np.unique(sizes[k], return_inverse=True)
            sets = simulate_block_sets(
                x0[k : k + 1],
                m0[k : k + 1],
                v0[k : k + 1],
                ar[k : k + 1],
                cs[k : k + 1],
                self.n,
                t["lr"],
                t["eps"],
                own[:, k].max(),
                distinct[None, :],
                t["start"] == "generic",
            )
            self.steps_run += int(own[:, k].max()) * S
            self.cells_run += 1
            settle = int(settle_steps(ar[k], cs[k]))
            out = np.empty((len(self.samplings), S, 2), dtype=np.int8)
            shared: dict[tuple[int, int, int], tuple] = {}
            for q, z in enumerate(self.samplings):
                blocks = sets[int(which[q])][0]
                kept = int(own[q, k] // sizes[k, q])
                mine = SpikeBlocks(*(b[:kept, 0, :] for b in blocks))  # every seed at once
                # samplings of one block size, window and run length differ at most in their
                # rise threshold: their rises are computed once
                key = (int(sizes[k, q]), spike_level_blocks(1 - ar[k], 1 - cs[k], z), kept)
                if key not in shared:
                    shared[key] = spike_block_rises(
                        mine.median, 1 - ar[k], 1 - cs[k], z, self.floor
                    )
                verdicts = judge_run(
                    mine, float(ar[k]), float(cs[k]), self.floor, settle, z, shared[key]
                )
                for w, d in enumerate(verdicts):
                    out[q, :, w] = [CODES[str(v)] for v in np.asarray(d["status"])]
            self.cells[(float(ar[k]), float(cs[k]))] = out
            self.starts[(float(ar[k]), float(cs[k]))] = (x0[k], m0[k], v0[k])


def shared_scans(task: dict, runs: Trajectories) -> list[dict]:
    """`_bisect.scan_rows()` of every sampling of ``task`` on the shared ``runs``, the primary
    first."""
    a, c = np.array(task["a"]), np.array(task["c"])

    def evaluate(q: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        return lambda rows, cs: runs.evaluate(q, a[rows], np.asarray(cs, float))

    decades = float(task.get("bisect_decades", math.inf))
    return [scan_rows(a, c, evaluate(q), decades) for q in range(len(runs.samplings))]


def _run_1d(task, seed) -> dict:
    """The protocol's scan of one 1-D system and start (``_bisect.scan_rows``), once per
    sampling of the task on the shared `Trajectories` (`shared_scans()`): the coarse
    grid's ``status`` ``(rows, cols, seeds, window)`` and the bisection's cells of the primary
    sampling, those of the others under ``also<q>__`` (`ALSO_FIELDS`); ``steps_run``: the
    steps simulated, ``cells_run``: the cells simulated (each once)."""
    runs = Trajectories(task, seed)
    per = shared_scans(task, runs)
    out = per[0] | {
        "a": np.array(task["a"]),
        "c": np.array(task["c"]),
        "steps_run": runs.steps_run,
        "cells_run": runs.cells_run,
    }
    return also_results(out, per, "1d")

"""The runs of ``spike_boundary`` (``PROTOCOL.md`` section 1): the check's bisections, the
downward scan of the compiled 1-D maps, and the batched full-batch training tasks."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import stats
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
    parameters before the step (`_batched.adam_step_sets`)."""
    import torch

    from ._batched import BatchedMLP, adam_step_sets

    a, c, S = np.array(task["a"]), np.array(task["c"]), task["seeds"]
    samplings = task_samplings(task)
    aa, cc, _ = np.meshgrid(a, c, np.arange(S), indexing="ij")
    own = [run_steps(aa, cc, z).ravel() for z in samplings]
    longest = np.max(own, axis=0)
    sizes = [spike_block_size(1 - aa.ravel(), 1 - cc.ravel(), z) for z in samplings]
    base = integer_seed(seed)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # every copy its own initialisation (cells independent): a shared one put whole rows on
        # the same plateau in a pilot (docs/adam-stability.md)
        model = BatchedMLP(
            task["task"],
            aa.size,
            base + np.arange(aa.size),
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
            1 - aa.ravel(),
            1 - cc.ravel(),
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
        _judge_task(a, c, aa.shape, first, blocks, T, size, z)
        for blocks, T, size, z in zip(sets, own, sizes, samplings)
    ]
    out = per[0] | {
        "a": a,
        "c": c,
        "steps_run": int(longest.sum()),
        "steps_longest": int(longest.max()),
    }
    return also_results(out, per, "task")


def _judge_task(a, c, shape, first, blocks, T, size, spikes) -> dict:
    """One sampling's verdicts on a training task's copies: each copy's blocks of its own
    ``T[k]`` steps (``T[k] // size[k]`` blocks) judged as `judge_run()` judges them, at the
    sampling's rise and the declared range's ends (`rise_readings()`)."""
    rises = rise_readings(spikes.rise)
    T = np.broadcast_to(np.asarray(T, dtype=np.int64), (int(np.prod(shape)),))
    status = np.full(shape + (2, len(rises)), NOT_SIMULATED, dtype=np.int8)
    rise = np.full(shape + (2,), np.nan)
    settled_median = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    for k, idx in enumerate(np.ndindex(shape)):
        i, j, _ = idx
        settle = int(settle_steps(a[i], c[j]))
        mine = SpikeBlocks(*(np.asarray(z)[: int(T[k]) // int(size[k])] for z in blocks[k]))
        # the readings differ only in the rise threshold: one set of rises serves them all
        shared = spike_block_rises(mine.median, 1 - a[i], 1 - c[j], spikes, FLOAT64_FLOOR)
        for q, h in enumerate(rises):
            sq = spikes._replace(rise=h)
            verdicts = judge_run(mine, float(a[i]), float(c[j]), FLOAT64_FLOOR, settle, sq, shared)
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

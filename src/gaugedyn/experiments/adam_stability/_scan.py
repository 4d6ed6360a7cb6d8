"""The runs of ``spike_boundary`` (``PROTOCOL.md`` section 1): the check's bisections, the
downward scan of the compiled 1-D maps, and the batched full-batch training tasks."""

from __future__ import annotations

import math

import numpy as np

from ... import stats
from ..._meta import integer_seed
from ...adam import (
    FLOAT64_FLOOR,
    SpikeBlocks,
    SpikeSampling,
    loss_floor,
    oscillating_state,
    simulate_blocks,
    simulated_boundary,
    spike_block_size,
    theory_boundary,
)
from ._bisect import scan_rows
from ._protocol import (
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


def _run_task(task, seed) -> dict:
    """Every cell and seed of a training task as one copy of a batched full-batch program."""
    import torch

    from ._batched import BatchedMLP, adam_steps

    a, c, S = np.array(task["a"]), np.array(task["c"]), task["seeds"]
    spikes = task_sampling(task)
    aa, cc, _ = np.meshgrid(a, c, np.arange(S), indexing="ij")
    T = int(run_steps(aa, cc, spikes).max())
    size = spike_block_size(1 - aa.ravel(), 1 - cc.ravel(), spikes)
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
        blocks, first = adam_steps(model, task["lr"], 1 - aa.ravel(), 1 - cc.ravel(), T, size)
    finally:
        torch.set_num_threads(before)
    rises = rise_readings(spikes.rise)
    status = np.full(aa.shape + (2, len(rises)), NOT_SIMULATED, dtype=np.int8)
    rise = np.full(aa.shape + (2,), np.nan)
    settled_median = np.full(aa.shape, np.nan)
    for k, idx in enumerate(np.ndindex(aa.shape)):
        i, j, _ = idx
        settle = int(settle_steps(a[i], c[j]))
        mine = blocks[k]
        for q, h in enumerate(rises):
            sq = spikes._replace(rise=h)
            verdicts = judge_run(mine, float(a[i]), float(c[j]), FLOAT64_FLOOR, settle, sq)
            for w, d in enumerate(verdicts):
                status[idx + (w, q)] = CODES[str(d["status"])]
                if q == 0:
                    rise[idx + (w,)] = d["max_rise"]
        settled_median[idx] = trained_level(mine, settle, int(size[k]))
        if not settled_median[idx] <= first[k] - TRAINED_DECADES and np.all(
            status[idx] != CODES["diverged"]
        ):
            status[idx] = CODES["untrained"]
    final = np.array([blocks[k].median[-1] for k in range(aa.size)]).reshape(aa.shape)
    return {
        "status": status[..., 0],
        "status_rises": status,
        "rises": np.array(rises),
        "max_rise": rise,
        "a": a,
        "c": c,
        "steps_run": T * aa.size,
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


def _run_1d(task, seed) -> dict:
    """The protocol's scan of one 1-D system and start (``_bisect.scan_rows``): the coarse
    grid's ``status`` ``(rows, cols, seeds, window)`` and the bisection's cells."""
    a, c, S, n = np.array(task["a"]), np.array(task["c"]), task["seeds"], task["n"]
    spikes = task_sampling(task)
    rng = stats.generator(seed, "start", task["start"])
    floor = loss_floor(n)
    steps_run = 0

    def evaluate(rows: np.ndarray, cs: np.ndarray) -> np.ndarray:
        nonlocal steps_run
        ar = a[rows]
        aa = np.repeat(ar[:, None], S, axis=1)
        x0, m0, v0, bias = start_state(task["start"], aa, n, task["lr"], task["eps"], rng)
        steps = run_steps(ar, cs, spikes)
        size = spike_block_size(1 - ar, 1 - cs, spikes)
        blocks, used = simulate_blocks(
            x0, m0, v0, ar, cs, n, task["lr"], task["eps"], steps, size, bias
        )
        steps_run += int(steps.sum()) * S
        out = np.empty((rows.size, S, 2), dtype=np.int8)
        for k in range(rows.size):
            settle = int(settle_steps(ar[k], cs[k]))
            for s_ in range(S):
                mine = SpikeBlocks(*(z[: used[k], k, s_] for z in blocks))
                verdicts = judge_run(mine, float(ar[k]), float(cs[k]), floor, settle, spikes)
                for w, d in enumerate(verdicts):
                    out[k, s_, w] = CODES[str(d["status"])]
        return out

    r = scan_rows(a, c, evaluate, float(task.get("bisect_decades", math.inf)))
    return r | {"a": a, "c": c, "steps_run": steps_run}

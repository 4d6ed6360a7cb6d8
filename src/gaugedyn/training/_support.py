"""Pieces shared by the experiments that train networks (finite_sample, online_sgd,
gauge_in_training, gauge_under_adam): thread control, per-seed root seeds, seed bands and theory
matching."""

from __future__ import annotations

import contextlib

import numpy as np


@contextlib.contextmanager
def single_thread():
    """Run torch on one intra-op thread (tasks run side by side; oversubscription is slow)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def root_of(seed: np.random.SeedSequence) -> int:
    """The trainer's root seed for a task (seed ``i`` then derives from ``task_seed(root, i)``)."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def band(x: np.ndarray, axis: int = 0, q: tuple[float, float] = (0.1, 0.9)) -> np.ndarray:
    """``(lower quantile, median, upper quantile)`` over seeds, stacked on a new first axis."""
    lo, hi = np.nanquantile(x, q, axis=axis)
    return np.stack([lo, np.nanmedian(x, axis=axis), hi])


def bootstrap_median(x: np.ndarray, rng: np.random.Generator, n_boot: int = 2000,
                     level: float = 0.9) -> list[float]:
    """Percentile bootstrap interval of the median of ``x`` over seeds."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return [float("nan"), float("nan")]
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    meds = np.median(x[idx], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return [float(lo), float(hi)]


def match_times(t_sim: np.ndarray, t_ref: np.ndarray) -> np.ndarray:
    """Indices into ``t_ref`` of the sim's record times (exact up to round-off)."""
    idx = np.clip(np.searchsorted(t_ref, t_sim - 1e-9 * np.maximum(1.0, t_sim)), 0, len(t_ref) - 1)
    if not np.allclose(t_ref[idx], t_sim, rtol=1e-9, atol=1e-12):
        raise RuntimeError("theory and simulation record times do not match")
    return idx

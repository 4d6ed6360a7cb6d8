"""Pieces shared by the experiments that train networks (finite_sample, online_sgd,
gauge_in_training, gauge_under_adam): thread control, per-seed root seeds and theory matching.
Seed bands and intervals come from :mod:`gaugedyn.stats` (``band`` is re-exported here)."""

from __future__ import annotations

import contextlib

import numpy as np

from ..stats import band as band
from ..stats import bootstrap_ci


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


def bootstrap_median(x: np.ndarray, rng: np.random.Generator, level: float = 0.9) -> list[float]:
    """Bootstrap interval (``level``) of the median of ``x`` over seeds, through
    :func:`gaugedyn.stats.bootstrap_ci`; ``rng`` must derive from the run's seed."""
    iv = bootstrap_ci(x, np.median, rng=rng, confidence=level)
    return [iv.low, iv.high]


def match_times(t_sim: np.ndarray, t_ref: np.ndarray) -> np.ndarray:
    """Indices into ``t_ref`` of the sim's record times (exact up to round-off)."""
    idx = np.clip(np.searchsorted(t_ref, t_sim - 1e-9 * np.maximum(1.0, t_sim)), 0, len(t_ref) - 1)
    if not np.allclose(t_ref[idx], t_sim, rtol=1e-9, atol=1e-12):
        raise RuntimeError("theory and simulation record times do not match")
    return idx

"""Pieces shared by the experiments that train networks (finite_sample, online_sgd,
gauge_in_training, gauge_under_adam): thread control, per-seed root seeds and theory matching.
Seed bands and intervals come from `gaugedyn.stats` (``band`` is re-exported here)."""

from __future__ import annotations

import numpy as np

from ..stats import band as band


def single_thread():
    """Run torch on one intra-op thread (tasks run side by side; oversubscription is slow): the
    trainer's own context manager (which skips the change when torch already runs one thread and
    locks against concurrent callers)."""
    from ._network import _one_thread

    return _one_thread()


def match_times(t_sim: np.ndarray, t_ref: np.ndarray) -> np.ndarray:
    r"""Indices into ``t_ref`` of the sim's record times (exact up to round-off).

    Parameters
    ----------
    t_sim : numpy.ndarray
        The simulation's record times.
    t_ref : numpy.ndarray
        The theory's record times, sorted ascending, containing every time of ``t_sim``.

    Returns
    -------
    numpy.ndarray
        ``idx`` with ``t_ref[idx] == t_sim`` (relative tolerance $10^{-9}$).

    Raises
    ------
    RuntimeError
        When a time of ``t_sim`` is not among ``t_ref``.
    """
    idx = np.clip(np.searchsorted(t_ref, t_sim - 1e-9 * np.maximum(1.0, t_sim)), 0, len(t_ref) - 1)
    if not np.allclose(t_ref[idx], t_sim, rtol=1e-9, atol=1e-12):
        raise RuntimeError("theory and simulation record times do not match")
    return idx

"""The loss-spike detector, defined once for the 1-D maps and the training tasks.

A loss curve ``L_t`` (any positive series, one value per step or per ``stride`` steps) is cut
into consecutive blocks of ``H`` steps, the horizon, after a warm-up of one horizon. With
``ell = log10 L``, block ``k`` (k >= 1 after the warm-up) holds a spike when

    max_{t in block k} ell_t  -  median_{t in block k-1} ell_t  >=  RISE_DECADES,

i.e. the loss climbs a factor ``10^RISE_DECADES`` above where it typically sat one horizon
before. The horizon is long enough for the slowest memory to forget:

    H = ceil(HORIZON_MEMORIES * max(1 / (1 - beta1), 1 / (1 - beta2)))

(``HORIZON_MEMORIES = 3``: three e-folds of the slower moment, 95% forgotten). A run is spiky
when any post-warm-up block holds a spike; the run must last at least ``MIN_BLOCKS`` blocks
after the warm-up (:func:`steps_needed`). The median (not the minimum) as baseline ignores deep
momentary dips, the block maximum catches a spike of any width below one horizon, and a slow
drift of the loss moves the median with it.
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import InputError

RISE_DECADES = 2.0
"""A spike is a rise of at least a factor 100 over the previous block's median."""
HORIZON_MEMORIES = 3.0
"""Horizon in units of the slower memory time ``max(1/(1 - beta1), 1/(1 - beta2))``."""
MIN_BLOCKS = 4
"""Post-warm-up blocks a run must contain for the detector to judge it."""

DEFINITION = (
    f"ell = log10(loss); horizon H = ceil({HORIZON_MEMORIES:g} max(1/(1-beta1), 1/(1-beta2))) "
    f"steps; warm-up of one horizon left out; the rest cut into blocks of H steps; block k >= 1 "
    f"holds a spike when max(ell over block k) - median(ell over block k-1) >= {RISE_DECADES:g}; "
    f"a run is spiky when any block holds one; it needs >= {MIN_BLOCKS} blocks after the warm-up")


def horizon(beta1, beta2) -> np.ndarray:
    """``ceil(HORIZON_MEMORIES * max(1/(1 - beta1), 1/(1 - beta2)))`` steps (broadcast)."""
    b1, b2 = np.asarray(beta1, dtype=float), np.asarray(beta2, dtype=float)
    if np.any((b1 < 0) | (b1 >= 1) | (b2 < 0) | (b2 >= 1)):
        raise InputError(f"beta1={beta1}, beta2={beta2}: allowed: numbers in [0, 1)")
    tau = np.maximum(1.0 / (1.0 - b1), 1.0 / (1.0 - b2))
    return np.ceil(HORIZON_MEMORIES * tau - 1e-9).astype(np.int64)


def steps_needed(beta1, beta2) -> int:
    """Steps for every cell of ``(beta1, beta2)`` to hold the warm-up and ``MIN_BLOCKS`` blocks."""
    return int(np.max(horizon(beta1, beta2))) * (MIN_BLOCKS + 1)


def block_rises(log_loss, H: int, stride: int = 1) -> np.ndarray:
    """Per post-warm-up block ``k >= 1``: ``max(block k) - median(block k-1)`` of ``log_loss``.

    ``log_loss`` has shape ``(T, ...)``, sampled every ``stride`` steps (the horizon ``H`` is
    in steps; a block is ``max(1, round(H / stride))`` samples). Non-finite values count as
    ``-inf`` (an exact zero loss) except ``nan``/``+inf``, which mean divergence and count as
    ``+inf``. Returns ``(n_blocks - 1, ...)``; empty along axis 0 when the run is too short.
    """
    ell = np.asarray(log_loss, dtype=float)
    if ell.ndim < 1:
        raise InputError("log_loss must have a time axis")
    if H < 1 or stride < 1:
        raise InputError(f"H={H}, stride={stride}: allowed: integers >= 1")
    ell = np.where(np.isnan(ell) | (ell == np.inf), np.inf, ell)
    b = max(1, int(round(H / stride)))
    nb = ell.shape[0] // b - 1  # blocks after the warm-up block
    if nb < 2:
        return np.empty((0,) + ell.shape[1:])
    blocks = ell[b:b * (nb + 1)].reshape((nb, b) + ell.shape[1:])
    peak = blocks.max(axis=1)
    with np.errstate(invalid="ignore"):
        base = np.median(blocks, axis=1)
        rise = peak[1:] - base[:-1]
    return np.where(np.isnan(rise), np.inf, rise)


def detect(log_loss, beta1: float, beta2: float, stride: int = 1) -> dict:
    """Judge one run (or a batch sharing ``beta1, beta2``) with the detector of the module doc.

    Returns ``spiky`` (bool array over the batch shape), ``n_spikes`` (blocks holding a spike),
    ``max_rise`` (decades), ``judged`` (False where the run holds fewer than ``MIN_BLOCKS``
    post-warm-up blocks; ``spiky`` is then False and should not be counted) and ``horizon``.
    """
    H = int(horizon(beta1, beta2))
    rises = block_rises(log_loss, H, stride)
    shape = np.asarray(log_loss).shape[1:]
    b = max(1, int(round(H / stride)))
    judged = np.asarray(log_loss).shape[0] // b - 1 >= MIN_BLOCKS
    if rises.shape[0] == 0:
        z = np.zeros(shape, dtype=bool)
        return {"spiky": z, "n_spikes": np.zeros(shape, int), "max_rise": np.full(shape, -math.inf),
                "judged": np.broadcast_to(judged, shape).copy(), "horizon": H}
    hits = rises >= RISE_DECADES
    return {"spiky": hits.any(axis=0) & judged, "n_spikes": hits.sum(axis=0),
            "max_rise": rises.max(axis=0), "judged": np.broadcast_to(judged, shape).copy(),
            "horizon": H}

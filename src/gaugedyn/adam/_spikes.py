"""The loss-spike detector, defined once for the 1-D maps and the training tasks.

A loss curve ``L_t`` (any positive series, one value per step or per ``stride`` steps) is cut
into consecutive blocks of ``H`` steps, the horizon, after a warm-up of one horizon. With
``ell = max(log10 L, floor)`` (the log loss clipped at the float's floor: the log10 of the
smallest loss the computation resolves; an exact zero is *below resolution*, not ``-inf``
decades), block ``k`` (k >= 1 after the warm-up) holds a spike when

    max_{t in block k} ell_t  -  median_{t in block k-1} ell_t  >=  RISE_DECADES

and its baseline block ``k - 1`` is *resolved*: fewer than half of its samples lie at the floor
(otherwise the median is the floor, a bound and not a level, and the rise is unknown). The
horizon is long enough for the slowest memory to forget:

    H = ceil(HORIZON_MEMORIES * max(1 / (1 - beta1), 1 / (1 - beta2)))

(``HORIZON_MEMORIES = 3``: three e-folds of the slower moment, 95% forgotten). Each run gets one
status, in this order:

- *not judged*: fewer than ``MIN_BLOCKS`` blocks after the warm-up (:func:`steps_needed`);
- *diverged*: some sample is ``nan`` or ``+inf``, or lies above ``ceiling`` (the initial loss
  for a training task): divergence is classified apart from spikes, never counted as one;
- *spiky*: some block holds a spike over a resolved baseline;
- *undetermined*: no spike, but some baseline block is unresolved (the loss underflowed):
  whether the climb out of the underflow is a spike cannot be told, so never spiky;
- *quiet*: otherwise.

The median (not the minimum) as baseline ignores deep momentary dips (a loss flickering to zero
in fewer than half the steps included), the block maximum catches a spike of any width below one
horizon, and a slow drift of the loss moves the median with it.
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
UNRESOLVED_SHARE = 0.5
"""A block whose share of samples at the floor is at least this has no resolved baseline."""
FLOAT64_FLOOR = math.log10(np.finfo(np.float64).tiny)
"""log10 of the smallest normal float64 (-307.65): the default floor of a loss in float64."""
FLOAT32_FLOOR = math.log10(np.finfo(np.float32).tiny)
"""log10 of the smallest normal float32 (-37.93)."""
STATUSES = ("quiet", "spiky", "undetermined", "diverged", "not judged")

DEFINITION = (
    f"ell = max(log10(loss), floor) (floor: log10 of the smallest loss the float resolves); "
    f"horizon H = ceil({HORIZON_MEMORIES:g} max(1/(1-beta1), 1/(1-beta2))) steps; warm-up of "
    f"one horizon left out; the rest cut into blocks of H steps; block k >= 1 holds a spike when "
    f"max(ell over block k) - median(ell over block k-1) >= {RISE_DECADES:g} and fewer than "
    f"{UNRESOLVED_SHARE:.0%} of block k-1 lies at the floor; status per run: diverged (nan, "
    f"+inf or above the ceiling: the initial loss for tasks) apart from spikes; spiky (some "
    f"spike); undetermined (no spike but an underflowed baseline block: never spiky); quiet; a "
    f"run needs >= {MIN_BLOCKS} blocks after the warm-up to be judged"
)


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


def _blocks(ell: np.ndarray, H: int, stride: int):
    if H < 1 or stride < 1:
        raise InputError(f"H={H}, stride={stride}: allowed: integers >= 1")
    b = block_size(H, stride)
    nb = ell.shape[0] // b - 1  # blocks after the warm-up block
    if nb < 2:
        return None
    return ell[b : b * (nb + 1)].reshape((nb, b) + ell.shape[1:])


def block_stats(blocks: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per block of clipped log losses (shape ``(n_blocks, b, ...)``): its maximum, its median
    and whether it is a resolved baseline (fewer than ``UNRESOLVED_SHARE`` of it at the
    floor). The one reduction of a block, shared by :func:`block_rises` and
    :class:`OnlineSpikeDetector`."""
    return (
        blocks.max(axis=1),
        np.median(blocks, axis=1),
        (blocks <= floor).mean(axis=1) < UNRESOLVED_SHARE,
    )


def rises_of(
    peak: np.ndarray, base: np.ndarray, resolved: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(rise, resolved)`` of blocks ``1, 2, ...`` of consecutive :func:`block_stats`:
    ``rise_k = max_k - median_{k-1}``, judged over the baseline block ``k - 1``."""
    return peak[1:] - base[:-1], resolved[:-1]


def clip(log_loss, floor: float = FLOAT64_FLOOR) -> np.ndarray:
    """The detector's ``ell``: ``log_loss`` clipped at ``floor``; ``-inf`` (an exact zero),
    ``nan`` and ``+inf`` count as the floor (divergence is judged apart, by :func:`detect`)."""
    ell = np.asarray(log_loss, dtype=float)
    return np.where(np.isfinite(ell), np.maximum(ell, floor), floor)


def block_rises(log_loss, H: int, stride: int = 1, floor: float = FLOAT64_FLOOR):
    """Per post-warm-up block ``k >= 1``: ``(rise, resolved)`` where ``rise = max(block k) -
    median(block k-1)`` of the clipped log loss and ``resolved`` says whether block ``k - 1`` is
    a resolved baseline (module doc).

    ``log_loss`` has shape ``(T, ...)``, sampled every ``stride`` steps (the horizon ``H`` is
    in steps; a block is ``max(1, round(H / stride))`` samples). ``-inf`` (an exact zero loss)
    and anything below ``floor`` count as the floor; ``nan`` and ``+inf`` (divergence, judged
    by :func:`detect`) count as the floor here too, so they never make a rise. Returns two
    arrays of shape ``(n_blocks - 1, ...)``; empty along axis 0 when the run is too short.
    """
    if np.ndim(log_loss) < 1:
        raise InputError("log_loss must have a time axis")
    ell = clip(log_loss, floor)
    blocks = _blocks(ell, H, stride)
    if blocks is None:
        empty = np.empty((0,) + ell.shape[1:])
        return empty, empty.astype(bool)
    return rises_of(*block_stats(blocks, floor))


def block_size(H: int, stride: int) -> int:
    """Samples per block: ``max(1, round(H / stride))``."""
    return max(1, int(round(H / stride)))


def detect(
    log_loss,
    beta1: float | np.ndarray,
    beta2: float | np.ndarray,
    stride: int = 1,
    floor: float = FLOAT64_FLOOR,
    ceiling: float = math.inf,
) -> dict:
    """Judge one run (or a batch sharing ``beta1, beta2``) with the detector of the module doc.

    ``floor`` is the log10 of the smallest resolved loss (:data:`FLOAT64_FLOOR`,
    :data:`FLOAT32_FLOOR`, or the caller's own), ``ceiling`` the log10 loss above which a run
    counts as diverged. Returns boolean arrays over the batch shape, one true per run at most:
    ``spiky``, ``undetermined``, ``diverged``, ``quiet``, and ``judged`` (False: too short; all
    the others are then False), plus ``status`` (strings of :data:`STATUSES`), ``n_spikes``
    (blocks holding a spike), ``max_rise`` (decades, over resolved baselines; ``-inf`` when
    none) and ``horizon``.
    """
    if not floor < ceiling:
        raise InputError(f"floor={floor}, ceiling={ceiling}: allowed: floor < ceiling")
    ell = np.asarray(log_loss, dtype=float)
    H = int(horizon(beta1, beta2))
    rises, resolved = block_rises(ell, H, stride, floor)
    judged = ell.shape[0] // block_size(H, stride) - 1 >= MIN_BLOCKS
    with np.errstate(invalid="ignore"):
        bad = (np.isnan(ell) | (ell > ceiling)).any(axis=0)
    return judge_blocks(rises, resolved, judged, bad, ell.shape[1:]) | {"horizon": H}


def judge_blocks(rises: np.ndarray, resolved: np.ndarray, judged, bad, shape: tuple) -> dict:
    """The run's status from its blocks' ``(rise, resolved)`` (:func:`rises_of`), whether it
    holds enough blocks (``judged``) and whether any sample diverged (``bad``): the verdict
    of :func:`detect` and of :meth:`OnlineSpikeDetector.verdict` alike."""
    judged = np.broadcast_to(judged, shape).copy()
    diverged = np.asarray(bad, dtype=bool) & judged
    if rises.shape[0] == 0:
        hits = np.zeros((1,) + shape, dtype=bool)
        rise = np.full(shape, -math.inf)
        unresolved = np.zeros(shape, dtype=bool)
    else:
        hits = (rises >= RISE_DECADES) & resolved
        rise = np.where(resolved, rises, -math.inf).max(axis=0)
        unresolved = np.asarray((~resolved).any(axis=0))
    spiky = hits.any(axis=0) & judged & ~diverged
    undetermined = unresolved & judged & ~diverged & ~spiky
    quiet = judged & ~diverged & ~spiky & ~undetermined
    status = np.select(
        [~judged, diverged, spiky, undetermined],
        ["not judged", "diverged", "spiky", "undetermined"],
        default="quiet",
    )
    return {
        "spiky": spiky,
        "undetermined": undetermined,
        "diverged": diverged,
        "quiet": quiet,
        "judged": judged,
        "status": status,
        "n_spikes": hits.sum(axis=0),
        "max_rise": rise,
    }


class OnlineSpikeDetector:
    """The detector of the module doc fed one sample at a time (a training loop's loss).

    ``update(log10_loss)`` takes the next sample (every ``stride`` steps); when it completes a
    block, the block is reduced by :func:`block_stats` and its rise against the previous block
    formed by :func:`rises_of`, the reductions :func:`detect` applies to the whole series, and
    :meth:`update` returns ``{"block", "sample", "rise", "resolved", "spike"}`` (``None``
    otherwise). :meth:`verdict` combines the blocks so far with :func:`judge_blocks`, so fed a
    whole series it returns what :func:`detect` returns on it (tests). Memory: one block of
    samples and one ``(rise, resolved)`` pair per block. A spike is known when its block closes,
    at most one horizon after it.
    """

    def __init__(
        self,
        beta1: float,
        beta2: float,
        *,
        stride: int = 1,
        floor: float = FLOAT64_FLOOR,
        ceiling: float = math.inf,
    ):
        if not floor < ceiling:
            raise InputError(f"floor={floor}, ceiling={ceiling}: allowed: floor < ceiling")
        if int(stride) != stride or stride < 1:
            raise InputError(f"stride={stride!r} is not allowed; use an integer >= 1")
        self.beta1, self.beta2 = float(beta1), float(beta2)
        self.horizon = int(horizon(beta1, beta2))
        self.stride, self.floor, self.ceiling = int(stride), float(floor), float(ceiling)
        self.block = block_size(self.horizon, self.stride)
        self.samples = 0
        self.bad = False
        self._buf = np.empty(self.block)
        self._prev: tuple | None = None
        self._rises: list[float] = []
        self._resolved: list[bool] = []

    def update(self, log10_loss: float) -> dict | None:
        """Take one sample; the closed block's record when this sample closes one."""
        x = float(log10_loss)
        self.bad |= bool(math.isnan(x) or x > self.ceiling)
        i = self.samples % self.block
        self._buf[i] = clip(x, self.floor)
        self.samples += 1
        k = self.samples // self.block - 1  # the block just closed (0: the warm-up)
        if i != self.block - 1 or k == 0:
            return None
        peak, base, res = block_stats(self._buf[None, :, None], self.floor)
        prev, self._prev = self._prev, (peak[0, 0], base[0, 0], res[0, 0])
        if prev is None:
            return None
        rise, resolved = rises_of(*(np.array([a, b]) for a, b in zip(prev, self._prev)))
        self._rises.append(float(rise[0]))
        self._resolved.append(bool(resolved[0]))
        return {
            "block": k,
            "sample": self.samples - 1,
            "rise": float(rise[0]),
            "resolved": bool(resolved[0]),
            "spike": bool(resolved[0] and rise[0] >= RISE_DECADES),
        }

    def verdict(self) -> dict:
        """:func:`detect`'s result on the samples so far (scalars)."""
        judged = self.samples // self.block - 1 >= MIN_BLOCKS
        out = judge_blocks(
            np.array(self._rises, dtype=float),
            np.array(self._resolved, dtype=bool),
            judged,
            self.bad,
            (),
        )
        return {
            k: (v.item() if isinstance(v, np.ndarray | np.generic) else v) for k, v in out.items()
        } | {"horizon": self.horizon}

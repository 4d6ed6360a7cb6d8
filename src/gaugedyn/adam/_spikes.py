r"""The loss-spike detector, defined once for the 1-D maps, the training tasks and any loss curve.

The detector reads a loss at full resolution: every step enters, through statistics of blocks of
consecutive steps accumulated as the loss is computed (in the compiled 1-D map, in the batched
training loop, or here from a stored curve); nothing is sampled. With ``ell_t = log10 L_t``
clipped at the float's floor (the log10 of the smallest loss the computation resolves; an exact
zero is *below resolution*, not ``-inf`` decades):

- **horizon** $H = \lceil \mathtt{HORIZON\_MEMORIES} \cdot \max(1/(1 - \beta_1), 1/(1 - \beta_2)) \rceil$ steps: three
  e-folds of the slower moment;
- **sampling**: blocks of ``b = max(block_min, ceil(H / blocks_per_horizon))`` consecutive steps
  (`block_size()`); per block its median (the lower median, the ``ceil(b/2)``-th smallest
  value, so it commutes with any increasing map of the loss), maximum and minimum, and whether
  any step diverged (``nan``, ``+inf`` or above ``ceiling``) (`block_statistics()`);
- **settled level** before block ``k``: the upper median (the ``(floor(m/2) + 1)``-th smallest,
  a value of the window itself) of the block medians of the ``m`` blocks before it,
  ``m = max(LEVEL_MIN_BLOCKS, ceil(level_horizons * H / b))`` (the *window*, about
  ``level_horizons`` horizons);
- **rise** of block ``k``: its median minus the level before it. Block ``k`` holds a spike when
  the rise is at least ``rise`` decades (`RISE_DECADES`): the loss rose that far within
  the window and stayed there for at least half a block.

The median of a block ignores momentary dips (a loss flickering towards zero in fewer than half
its steps) and momentary outliers (white log-noise of one decade reads quiet: the median of ``b``
steps moves by about ``1.25 / sqrt(b)`` of the noise), so a spike is a *rise of the level*, not
spread within a block; a slow drift moves the level with it. A rise narrower than half a block is
not resolved. The first horizon is a warm-up and is left out, and a block is judged once its
whole window lies after the warm-up. Each run gets one status, in this order:

- *not judged*: fewer than ``MIN_HORIZONS`` horizons after the warm-up (`steps_needed()`);
- *diverged*: some step is ``nan`` or ``+inf``, or lies above ``ceiling`` (the initial loss for a
  training task): divergence is classified apart from spikes, never counted as one;
- *spiky*: some judged block holds a spike over a *resolved* level (one above the floor);
- *undetermined*: no spike, but some judged block's level lies at the floor (the loss
  underflowed for most of the window): the level is a bound, not a level, and a loss
  flickering between zero and a value would make its median jump by hundreds of decades, so
  whether a rise out of the underflow is a spike cannot be told; never spiky;
- *quiet*: otherwise.

The constants of the sampling and the rise threshold are arguments of every function here
(``rise``, ``block_min``, ``blocks_per_horizon``, ``level_horizons``), with the declared
defaults below, so an experiment can declare them as set-up constants and judge its findings
over their range.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._errors import InputError

RISE_DECADES = 2.0
"""A spike is a rise of the level by at least a factor 100."""
HORIZON_MEMORIES = 3.0
"""Horizon in units of the slower memory time ``max(1/(1 - beta1), 1/(1 - beta2))``."""
BLOCK_MIN = 24
"""Fewest steps in a block: white log-noise of one decade moves a block's median by about
0.26 decades, so its largest rise over 10^6 steps stays near one decade, below any threshold of
1.5 decades or more."""
BLOCKS_PER_HORIZON = 200
"""Blocks per horizon where the horizon is long (``H > BLOCK_MIN * BLOCKS_PER_HORIZON``): the
settled cycle of the 1-D map at small ``1 - beta1`` repeats every few hundredths of ``1/(1 -
beta2)`` steps, so a block is at most ``0.015 / (1 - beta2)`` steps."""
LEVEL_HORIZONS = 0.25
"""The window of the settled level, in horizons."""
LEVEL_MIN_BLOCKS = 9
"""Fewest blocks in the window of the settled level: a loss at an exact zero in 30% of its steps
puts a block's median at the floor now and then (4% of blocks of 24 steps), and a level over
nine blocks stays resolved."""
MIN_HORIZONS = 4
"""Horizons after the warm-up a run must contain for the detector to judge it."""
FLOAT64_FLOOR = math.log10(np.finfo(np.float64).tiny)
"""log10 of the smallest normal float64 (-307.65): the default floor of a loss in float64."""
FLOAT32_FLOOR = math.log10(np.finfo(np.float32).tiny)
"""log10 of the smallest normal float32 (-37.93)."""
STATUSES = ("quiet", "spiky", "undetermined", "diverged", "not judged")

DEFINITION = (
    "ell = max(log10(loss), floor) at every step (floor: log10 of the smallest loss the float "
    f"resolves); horizon H = ceil({HORIZON_MEMORIES:g} max(1/(1-beta1), 1/(1-beta2))) steps; "
    f"blocks of b = max(block_min, ceil(H / blocks_per_horizon)) steps (defaults {BLOCK_MIN}, "
    f"{BLOCKS_PER_HORIZON}), each reduced in the loop to its lower median, maximum and minimum; "
    "the settled level before block k is the upper median of the block medians of the m = "
    f"max({LEVEL_MIN_BLOCKS}, ceil(level_horizons H / b)) blocks before it (default "
    f"level_horizons {LEVEL_HORIZONS:g}); block k holds a spike when its median minus that "
    f"level is at least the rise threshold (default {RISE_DECADES:g} decades); warm-up of one "
    "horizon left out; status per run: diverged (nan, +inf or above the ceiling: the initial "
    "loss for tasks) apart from spikes; spiky (some spike); undetermined (no spike but a level "
    f"at the floor: never spiky); quiet; a run needs >= {MIN_HORIZONS} horizons after the "
    "warm-up to be judged"
)


class Sampling(NamedTuple):
    """The detector's set-up constants (module doc): the rise threshold in decades, the fewest
    steps in a block, blocks per horizon and the level's window in horizons."""

    rise: float = RISE_DECADES
    block_min: int = BLOCK_MIN
    blocks_per_horizon: int = BLOCKS_PER_HORIZON
    level_horizons: float = LEVEL_HORIZONS

    def checked(self) -> Sampling:
        ok = (
            math.isfinite(self.rise)
            and self.rise > 0
            and int(self.block_min) == self.block_min >= 1
            and int(self.blocks_per_horizon) == self.blocks_per_horizon >= 1
            and math.isfinite(self.level_horizons)
            and self.level_horizons > 0
        )
        if not ok:
            raise InputError(
                f"spike detector {self}: allowed: rise > 0 decades, block_min and "
                "blocks_per_horizon integers >= 1, level_horizons > 0"
            )
        return self


DEFAULT = Sampling()
"""The declared sampling and rise threshold."""


def horizon(beta1, beta2) -> np.ndarray:
    """``ceil(HORIZON_MEMORIES * max(1/(1 - beta1), 1/(1 - beta2)))`` steps (broadcast).

    Parameters
    ----------
    beta1 : array_like
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : array_like
        Adam's second-moment decay, in ``[0, 1)``; broadcast with ``beta1``.

    Returns
    -------
    numpy.ndarray
        The horizon ``H`` in steps (int64), of the broadcast shape.

    Raises
    ------
    InputError
        When some ``beta1`` or ``beta2`` lies outside ``[0, 1)``.
    """
    b1, b2 = np.asarray(beta1, dtype=float), np.asarray(beta2, dtype=float)
    if np.any((b1 < 0) | (b1 >= 1) | (b2 < 0) | (b2 >= 1)):
        raise InputError(f"beta1={beta1}, beta2={beta2}: allowed: numbers in [0, 1)")
    tau = np.maximum(1.0 / (1.0 - b1), 1.0 / (1.0 - b2))
    return np.ceil(HORIZON_MEMORIES * tau - 1e-9).astype(np.int64)


def block_size(beta1, beta2, sampling: Sampling = DEFAULT) -> np.ndarray:
    """Steps per block, ``max(block_min, ceil(H / blocks_per_horizon))`` (broadcast).

    Parameters
    ----------
    beta1 : array_like
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : array_like
        Adam's second-moment decay, in ``[0, 1)``; broadcast with ``beta1``.
    sampling : Sampling
        The detector's set-up constants (`DEFAULT`: the declared ones).

    Returns
    -------
    numpy.ndarray
        Steps per block ``b`` (int64), of the broadcast shape.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)`` or ``sampling`` holds a value outside its range
        (`Sampling.checked()`).
    """
    s = sampling.checked()
    H = horizon(beta1, beta2)
    return np.maximum(int(s.block_min), -(-H // int(s.blocks_per_horizon))).astype(np.int64)


def level_blocks(beta1: float, beta2: float, sampling: Sampling = DEFAULT) -> int:
    """Blocks in the window of the settled level,
    ``max(LEVEL_MIN_BLOCKS, ceil(level_horizons H / b))``.

    Parameters
    ----------
    beta1 : float
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : float
        Adam's second-moment decay, in ``[0, 1)``.
    sampling : Sampling
        The detector's set-up constants (`DEFAULT`: the declared ones).

    Returns
    -------
    int
        The window ``m`` in blocks.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)`` or ``sampling`` is out of range.
    """
    H = int(horizon(beta1, beta2))
    b = int(block_size(beta1, beta2, sampling))
    return max(LEVEL_MIN_BLOCKS, math.ceil(sampling.level_horizons * H / b - 1e-9))


def steps_needed(beta1, beta2, sampling: Sampling = DEFAULT) -> int:
    r"""Steps for every cell of $(\beta_1, \beta_2)$ to be judged: `judged_blocks()` whole
    blocks.

    Parameters
    ----------
    beta1 : array_like
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : array_like
        Adam's second-moment decay, in ``[0, 1)``; broadcast with ``beta1``.
    sampling : Sampling
        The detector's set-up constants (`DEFAULT`: the declared ones).

    Returns
    -------
    int
        The most steps any cell needs.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)`` or ``sampling`` is out of range.
    """
    b1, b2 = np.broadcast_arrays(np.asarray(beta1, float), np.asarray(beta2, float))
    return max(
        judged_blocks(float(x), float(y), sampling) * int(block_size(x, y, sampling))
        for x, y in zip(b1.ravel(), b2.ravel())
    )


class Blocks(NamedTuple):
    """Statistics of consecutive blocks of ``b`` steps of clipped log losses, shape
    ``(n_blocks, ...)``: lower ``median``, ``maximum``, ``minimum`` and ``bad`` (some step of
    the block was ``nan``, ``+inf`` or above the ceiling)."""

    median: np.ndarray
    maximum: np.ndarray
    minimum: np.ndarray
    bad: np.ndarray

    def since(self, k: int) -> Blocks:
        """The blocks from block ``k`` on (a window that starts later in the run)."""
        return Blocks(*(np.asarray(a)[int(k) :] for a in self))


def clip(log_loss, floor: float = FLOAT64_FLOOR) -> np.ndarray:
    """The detector's ``ell``: ``log_loss`` clipped at ``floor``; ``-inf`` (an exact zero) reads
    as the floor, and so do ``nan`` and ``+inf`` (divergence is judged apart)."""
    ell = np.asarray(log_loss, dtype=float)
    return np.where(np.isfinite(ell), np.maximum(ell, floor), floor)


def lower_median(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """The ``ceil(n/2)``-th smallest value along ``axis`` (the lower median)."""
    n = values.shape[axis]
    return np.take(np.partition(values, (n - 1) // 2, axis=axis), (n - 1) // 2, axis=axis)


def block_statistics(
    log_loss, b: int, floor: float = FLOAT64_FLOOR, ceiling: float = math.inf
) -> Blocks:
    """`Blocks` of a stored per-step curve ``log_loss``, the same statistics the compiled map
    and the batched tasks accumulate in their loops; a last partial block is left out.

    Parameters
    ----------
    log_loss : array_like
        The per-step ``log10`` loss, shape ``(T, ...)`` (time first).
    b : int
        Steps per block; an integer at least 1.
    floor : float
        The log10 of the smallest resolved loss: values below it, ``-inf``, ``nan`` and
        ``+inf`` read as the floor (`clip()`).
    ceiling : float
        The log10 loss above which a step counts as diverged (``bad``).

    Returns
    -------
    Blocks
        The ``T // b`` blocks' lower median, maximum, minimum and ``bad``, shape
        ``(T // b, ...)``.

    Raises
    ------
    InputError
        When ``log_loss`` has no time axis or ``b`` is not an integer at least 1.
    """
    ell = np.asarray(log_loss, dtype=float)
    if ell.ndim < 1 or int(b) != b or b < 1:
        raise InputError(f"log_loss needs a time axis and b={b!r} an integer >= 1")
    b = int(b)
    n = ell.shape[0] // b
    raw = ell[: n * b].reshape((n, b) + ell.shape[1:])
    with np.errstate(invalid="ignore"):
        bad = np.asarray((~(raw < np.inf) | (raw > ceiling)).any(axis=1))
    x = clip(raw, floor)
    return Blocks(lower_median(x, axis=1), x.max(axis=1), x.min(axis=1), bad)


def rises(median: np.ndarray, m: int, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Per block ``k >= m`` of the block medians (axis 0): ``(rise, resolved)``, the median minus
    the upper median of the ``m`` block medians before it (the level), and whether that level
    lies above the floor. Shape ``(n_blocks - m, ...)``; empty along axis 0 when there are too
    few blocks."""
    med = np.asarray(median, dtype=float)
    if med.shape[0] <= m:
        empty = np.empty((0,) + med.shape[1:])
        return empty, empty.astype(bool)
    windows = np.lib.stride_tricks.sliding_window_view(med[:-1], m, axis=0)
    level = np.partition(windows, m // 2, axis=-1)[..., m // 2]
    return med[m:] - level, level > floor


def _events(hits: np.ndarray) -> np.ndarray:
    """Spikes counted once each: blocks that hold a spike and follow one that does not."""
    before = np.concatenate([np.zeros((1,) + hits.shape[1:], dtype=bool), hits[:-1]], axis=0)
    return hits & ~before


def judged_blocks(beta1: float, beta2: float, sampling: Sampling = DEFAULT) -> int:
    """Blocks a run must hold for the detector to judge it: the warm-up horizon, the level's
    window and ``MIN_HORIZONS`` horizons of judged blocks (at least one)."""
    H = int(horizon(beta1, beta2))
    b = int(block_size(beta1, beta2, sampling))
    warm = math.ceil(H / b - 1e-9)
    return warm + level_blocks(beta1, beta2, sampling) + max(1, math.ceil(MIN_HORIZONS * H / b))


def _frame(beta1: float, beta2: float, sampling: Sampling) -> tuple[Sampling, int, int, int]:
    """The checked ``sampling``, the horizon ``H``, the block size ``b`` and the warm-up in
    blocks (the first horizon, ``ceil(H / b)``) of a run at ``(beta1, beta2)``: what
    `block_rises()` and `detect_blocks()` both read the blocks by."""
    s = sampling.checked()
    H = int(horizon(beta1, beta2))
    b = int(block_size(beta1, beta2, s))
    return s, H, b, math.ceil(H / b - 1e-9)


def block_rises(
    median, beta1: float, beta2: float, sampling: Sampling = DEFAULT, floor: float = FLOAT64_FLOOR
) -> tuple[np.ndarray, np.ndarray]:
    """The rises `detect_blocks()` compares with the rise threshold: `rises()` of the block
    medians after the warm-up horizon over the sampling's window, ``-inf`` where the level lies
    at the floor, and whether it is resolved, shape ``(n_blocks - warm - m, ...)``.

    They depend on the sampling only through its block size and window (`block_size()`,
    `level_blocks()`), not on its rise threshold, so samplings that share those share them; and
    the rise of block ``k`` reads only blocks ``k - m .. k``, so those of the blocks from ``k0``
    on (a window that starts later, `Blocks.since()`) are these from index ``k0`` on.

    Parameters
    ----------
    median : array_like
        The block medians (`Blocks.median`), shape ``(n_blocks, ...)``.
    beta1, beta2, sampling, floor
        As in `detect_blocks()`.

    Returns
    -------
    tuple of numpy.ndarray
        ``(rise, resolved)``.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)`` or ``sampling`` is out of range.
    """
    s, _, b, warm = _frame(beta1, beta2, sampling)
    r, resolved = rises(
        np.asarray(median, dtype=float)[warm:], level_blocks(beta1, beta2, s), floor
    )
    return np.where(resolved, r, -math.inf), resolved


def detect_blocks(
    blocks: Blocks,
    beta1: float,
    beta2: float,
    sampling: Sampling = DEFAULT,
    floor: float = FLOAT64_FLOOR,
    start: int = 0,
    shared: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    """Judge runs from their `Blocks`.

    Parameters
    ----------
    blocks : Blocks
        Blocks of `block_size()` steps from the start of the window judged, shape
        ``(n_blocks, ...)``.
    beta1 : float
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : float
        Adam's second-moment decay, in ``[0, 1)``.
    sampling : Sampling
        The detector's set-up constants (`DEFAULT`: the declared ones).
    floor : float
        The log10 of the smallest resolved loss: a level at or below it is not resolved.
    start : int
        The run's step at which the first block begins (for ``first_spike``).
    shared : tuple of numpy.ndarray, optional
        `block_rises()` of ``blocks`` at a sampling of the same block size and window, when the
        caller has them (several rise thresholds or windows judged on one run); computed here
        when ``None``.

    Returns
    -------
    dict
        Arrays over the batch shape: ``spiky``, ``undetermined``, ``diverged``, ``quiet``,
        ``judged`` (False: fewer than `judged_blocks()` blocks; the others then False),
        ``status`` (`STATUSES`), ``n_spikes`` (spike events: runs of consecutive blocks
        holding a spike), ``max_rise`` (decades, over resolved levels; ``-inf`` when none),
        ``first_spike`` (the run's step where the first spike's block begins, ``-1`` when
        none), and the scalars ``horizon``, ``block`` and ``level_blocks``.

    Raises
    ------
    InputError
        When a beta lies outside ``[0, 1)`` or ``sampling`` is out of range.
    """
    s, H, b, warm = _frame(beta1, beta2, sampling)
    m = level_blocks(beta1, beta2, s)
    med = np.asarray(blocks.median, dtype=float)
    shape = med.shape[1:]
    judged = np.broadcast_to(med.shape[0] >= judged_blocks(beta1, beta2, s), shape).copy()
    diverged = np.asarray(blocks.bad, dtype=bool).any(axis=0) & judged
    r, resolved = block_rises(med, beta1, beta2, s, floor) if shared is None else shared
    hits = r >= s.rise
    spiky = hits.any(axis=0) & judged & ~diverged
    undetermined = (~resolved).any(axis=0) & judged & ~diverged & ~spiky
    quiet = judged & ~diverged & ~spiky & ~undetermined
    at = np.argmax(hits, axis=0) if r.shape[0] else np.zeros(shape, np.int64)
    first = np.where(hits.any(axis=0), start + (warm + m + at) * b, -1)
    return {
        "spiky": spiky,
        "undetermined": undetermined,
        "diverged": diverged,
        "quiet": quiet,
        "judged": judged,
        "status": np.select(
            [~judged, diverged, spiky, undetermined],
            ["not judged", "diverged", "spiky", "undetermined"],
            default="quiet",
        ),
        "n_spikes": _events(hits).sum(axis=0) if r.shape[0] else np.zeros(shape, np.int64),
        "max_rise": r.max(axis=0) if r.shape[0] else np.full(shape, -math.inf),
        "first_spike": np.where(spiky, first, -1),
        "horizon": H,
        "block": b,
        "level_blocks": m,
    }


def detect(
    log_loss,
    beta1: float,
    beta2: float,
    sampling: Sampling = DEFAULT,
    floor: float = FLOAT64_FLOOR,
    ceiling: float = math.inf,
) -> dict:
    r"""Judge a stored per-step curve (or a batch ``(T, ...)`` sharing $\beta_1, \beta_2$): its
    `block_statistics()` at the sampling's `block_size()`, then `detect_blocks()`.

    Parameters
    ----------
    log_loss : array_like
        The per-step ``log10`` loss, shape ``(T, ...)``.
    beta1 : float
        Adam's first-moment decay, in ``[0, 1)``.
    beta2 : float
        Adam's second-moment decay, in ``[0, 1)``.
    sampling : Sampling
        The detector's set-up constants (`DEFAULT`: the declared ones).
    floor : float
        The log10 of the smallest resolved loss (`FLOAT64_FLOOR`, `FLOAT32_FLOOR`, or the
        caller's own).
    ceiling : float
        The log10 loss above which a run counts as diverged; above ``floor``.

    Returns
    -------
    dict
        `detect_blocks()`'s result.

    Raises
    ------
    InputError
        When ``floor >= ceiling``, ``log_loss`` has no time axis, a beta lies outside
        ``[0, 1)`` or ``sampling`` is out of range.
    """
    if not floor < ceiling:
        raise InputError(f"floor={floor}, ceiling={ceiling}: allowed: floor < ceiling")
    if np.ndim(log_loss) < 1:
        raise InputError("log_loss must have a time axis")
    b = int(block_size(beta1, beta2, sampling))
    return detect_blocks(
        block_statistics(log_loss, b, floor, ceiling), beta1, beta2, sampling, floor
    )


class OnlineSpikeDetector:
    """The detector of the module doc fed one sample at a time (a training loop's loss).

    A sample taken every ``stride`` steps stands for its ``stride`` steps (held over them), so
    fed ``ell`` it judges ``np.repeat(ell, stride)`` exactly as `detect()` does.
    ``update(log10_loss)`` takes the next sample; when a block of `block_size()` steps
    closes after the warm-up horizon and the level's window, it returns ``{"block", "step",
    "sample", "rise", "resolved", "spike"}`` of the block just closed (``rise``: its median
    minus the settled level, ``-inf`` over a level at the floor; ``spike``: the block starts a
    spike event, so the events returned count `detect()`'s ``n_spikes``; ``holds``: it
    holds a spike), and ``None`` otherwise (the block with the largest rise where one sample
    closes several). `verdict()` is `detect_blocks()` on the blocks so far, so fed a
    whole series it returns what `detect()` returns on it (tests). Memory: one block of
    steps and four numbers per block. A spike is known when its block closes, at most one
    block (and ``stride`` steps) after it rose.
    """

    def __init__(
        self,
        beta1: float,
        beta2: float,
        *,
        sampling: Sampling = DEFAULT,
        stride: int = 1,
        floor: float = FLOAT64_FLOOR,
        ceiling: float = math.inf,
    ):
        if not floor < ceiling:
            raise InputError(f"floor={floor}, ceiling={ceiling}: allowed: floor < ceiling")
        if int(stride) != stride or stride < 1:
            raise InputError(f"stride={stride!r} is not allowed; use an integer >= 1")
        self.beta1, self.beta2 = float(beta1), float(beta2)
        self.sampling = sampling.checked()
        self.horizon = int(horizon(beta1, beta2))
        self.block = int(block_size(beta1, beta2, self.sampling))
        self.window = level_blocks(self.beta1, self.beta2, self.sampling)
        self._warm = math.ceil(self.horizon / self.block - 1e-9)
        self.stride, self.floor, self.ceiling = int(stride), float(floor), float(ceiling)
        self.samples = 0
        self.steps = 0
        self._buf = np.empty(self.block)
        self._fill = 0
        self._bad = False
        self._stats: tuple[list, list, list, list] = ([], [], [], [])
        self._hit = False

    def update(self, log10_loss: float) -> dict | None:
        """Take one sample; the record of a block it closes (class doc), else ``None``."""
        x = float(log10_loss)
        bad = not x < math.inf or x > self.ceiling
        value = float(clip(x, self.floor))
        best: dict | None = None
        left = self.stride
        while left:
            take = min(left, self.block - self._fill)
            self._buf[self._fill : self._fill + take] = value
            self._fill += take
            self.steps += take
            left -= take
            self._bad |= bad
            if self._fill == self.block:
                rec = self._close()
                if rec is not None and (best is None or rec["rise"] > best["rise"]):
                    best = rec
        self.samples += 1
        return best

    def _close(self) -> dict | None:
        median, maximum, minimum, bad = self._stats
        median.append(float(lower_median(self._buf)))
        maximum.append(float(self._buf.max()))
        minimum.append(float(self._buf.min()))
        bad.append(self._bad)
        self._fill, self._bad = 0, False
        k = len(median) - 1
        if k - self._warm < self.window:
            return None
        window = np.asarray(median[k - self.window : k])
        level = float(np.partition(window, self.window // 2)[self.window // 2])
        resolved = level > self.floor
        rise = median[k] - level if resolved else -math.inf
        holds = rise >= self.sampling.rise
        start, self._hit = holds and not self._hit, holds
        return {
            "block": k,
            "step": self.steps - 1,
            "sample": self.samples,
            "rise": rise,
            "resolved": resolved,
            "holds": holds,
            "spike": start,
        }

    def verdict(self) -> dict:
        """`detect()`'s result on the steps so far (whole blocks; scalars)."""
        blocks = Blocks(*(np.asarray(a) for a in self._stats))
        if not len(self._stats[0]):
            blocks = Blocks(*(np.zeros(0, t) for t in (float, float, float, bool)))
        out = detect_blocks(blocks, self.beta1, self.beta2, self.sampling, self.floor)
        return {
            k: (v.item() if isinstance(v, np.ndarray | np.generic) else v) for k, v in out.items()
        }

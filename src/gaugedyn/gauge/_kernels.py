"""Fused per-row and per-column sums for `._recorder.GaugeRecorder` (numba; imported on
first use).

For a matrix ``x`` (``R x C``) and optionally a second ``y`` of the same shape,
`sums()` returns in one pass over memory

$$
\\text{rows}_{k,i} = \\sum_j p_k(x_{ij}, y_{ij}),\\qquad
\\text{cols}_{k,j} = \\sum_i p_k(x_{ij}, y_{ij}),\\qquad
p = (x^2,\\ x y)\\ (\\text{or } x^2 \\text{ alone}),
$$

the per-unit norms a rescaling group needs of a weight read along its rows (the unit's input
weights) and along its columns (its output weights), and the dot products ``w.g`` on either side.
Each product of two float32 or float64 entries is formed in float64 (exact for float32 inputs)
and summed in float64, the sums reordered to vectorise (round-off only): the results agree with
an exact sum to about ``1e-16`` relative times the number of terms, more closely than torch's
float32 reductions do. Where torch's separate reductions read a shared tensor once per sum (and
write and reread an elementwise product), this reads each input once. `run()` does this
for a whole pass's tensors in one call (`layout()` places their sums in one buffer), so a
recorder hook pays one dispatch per pass.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

FAST = {"reassoc", "contract"}
"""Sums may be reordered and multiply-adds fused (round-off only), so the loops vectorise; no
assumption about nan or inf is made."""


@numba.njit(cache=True, fastmath=FAST)
def _sums_into(x, y, pair, do_cols, rx, rxy, cx, cxy):  # pragma: no cover - compiled
    """Row sums of ``x^2`` into ``rx`` (and of ``x y`` into ``rxy`` if ``pair``), column sums
    into ``cx`` (``cxy``) if ``do_cols``; the branches outside the inner loops. The column sums
    run in arrays of their own, copied out at the end: ``rx``, ``rxy``, ``cx`` and ``cxy`` are
    slices of one buffer, and accumulating into them directly left the compiler to assume they
    might overlap, which kept the paired loop from vectorising."""
    R, C = x.shape
    ax = np.zeros(C if do_cols else 0)
    axy = np.zeros(C if do_cols and pair else 0)
    for i in range(R):
        xi = x[i]
        sxx = 0.0
        sxy = 0.0
        if pair and do_cols:
            yi = y[i]
            for j in range(C):
                a = np.float64(xi[j])
                b = np.float64(yi[j])
                aa = a * a
                ab = a * b
                sxx += aa
                sxy += ab
                ax[j] += aa
                axy[j] += ab
        elif pair:
            yi = y[i]
            for j in range(C):
                a = np.float64(xi[j])
                b = np.float64(yi[j])
                sxx += a * a
                sxy += a * b
        elif do_cols:
            for j in range(C):
                a = np.float64(xi[j])
                aa = a * a
                sxx += aa
                ax[j] += aa
        else:
            for j in range(C):
                a = np.float64(xi[j])
                sxx += a * a
        rx[i] = sxx
        if pair:
            rxy[i] = sxy
    if do_cols:
        cx[:] = ax
        if pair:
            cxy[:] = axy


@numba.njit(cache=True, fastmath=FAST)
def _pass(xs, ys, plan, out):  # pragma: no cover - compiled
    for k in range(len(xs)):
        x = xs[k]
        R, C = x.shape
        pair = plan[k, 0] == 1
        do_cols = plan[k, 1] == 1
        o = plan[k, 2:]
        _sums_into(
            x,
            ys[k],
            pair,
            do_cols,
            out[o[0] : o[0] + R],
            out[o[1] : o[1] + R],
            out[o[2] : o[2] + C],
            out[o[3] : o[3] + C],
        )


def _padded(k: int) -> int:
    """``k`` rounded up to a power of two: the kernel's tuples of matrices are padded to it,
    so it compiles once per power of two rather than once per count."""
    return 1 << (k - 1).bit_length()


def layout(
    shapes: list[tuple[int, int]], pairs: list[bool], cols: list[bool]
) -> tuple[np.ndarray, int]:
    """``(plan, size)`` of one `run()` over matrices of ``shapes``: per matrix ``[pair,
    cols, offset of the row sums of x^2, of x y, of the column sums of x^2, of x y]`` into one
    float64 buffer of ``size`` (an absent sum gets an empty slice at 0); the plan's rows are
    padded with zeros (empty matrices, nothing read) to `_padded()`'s count."""
    plan = np.zeros((_padded(len(shapes)), 6), dtype=np.int64)
    off = 0
    for k, ((R, C), pair, col) in enumerate(zip(shapes, pairs, cols)):
        plan[k, :2] = pair, col
        for j, (n, want) in enumerate(((R, True), (R, pair), (C, col), (C, col and pair))):
            plan[k, 2 + j] = off if want else 0
            off += n if want else 0
    return plan, off


_EMPTY: dict = {}
"""An empty matrix per dtype: what the tuples are padded with."""


def run(
    xs: tuple[np.ndarray, ...], ys: tuple[np.ndarray, ...], plan: np.ndarray, size: int
) -> np.ndarray:
    """The sums of `layout()`'s ``plan`` over the matrices ``xs`` (each with ``ys[k]``,
    read only where the plan pairs it; pass ``xs[k]`` otherwise) in one call: a fresh float64
    buffer of ``size``. ``xs`` and ``ys``: C-contiguous arrays of one dtype (float32 or
    float64), two-dimensional."""
    out = np.empty(size)
    pad = plan.shape[0] - len(xs)
    if pad:
        empty = _EMPTY.get(xs[0].dtype)
        if empty is None:
            empty = _EMPTY[xs[0].dtype] = np.empty((0, 0), dtype=xs[0].dtype)
        xs = xs + (empty,) * pad
        ys = ys + (empty,) * pad
    _pass(xs, ys, plan, out)
    return out


def sums(
    x: torch.Tensor, y: torch.Tensor | None = None, cols: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(rows, cols)``: float64 tensors of shape ``(k, R)`` and ``(k, C)`` (``cols`` ``None``
    unless asked), ``k = 1`` (``x^2``) without ``y``, else ``k = 2`` (``x^2, x y``); see the
    module docstring. ``x`` and ``y``: contiguous, detached CPU matrices of one dtype, float32
    or float64 (read zero-copy through ``numpy()``)."""
    R, C = x.shape
    pair = y is not None
    plan, size = layout([(R, C)], [pair], [cols])
    a = x.numpy()
    out = torch.from_numpy(run((a,), (y.numpy() if y is not None else a,), plan, size))
    o = plan[0, 2:]
    r = torch.stack([out[o[0] : o[0] + R]] + ([out[o[1] : o[1] + R]] if pair else []))
    c = (
        torch.stack([out[o[2] : o[2] + C]] + ([out[o[3] : o[3] + C]] if pair else []))
        if cols
        else None
    )
    return r, c

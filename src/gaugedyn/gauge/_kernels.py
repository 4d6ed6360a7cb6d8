"""Fused per-row and per-column sums for :class:`._recorder.GaugeRecorder` (numba; imported on
first use).

For a matrix ``x`` (``R x C``) and optionally a second ``y`` of the same shape,
:func:`sums` returns in one pass over memory

.. math::

    \\text{rows}_{k,i} = \\sum_j p_k(x_{ij}, y_{ij}),\\qquad
    \\text{cols}_{k,j} = \\sum_i p_k(x_{ij}, y_{ij}),\\qquad
    p = (x^2,\\ x y)\\ (\\text{or } x^2 \\text{ alone}),

the per-unit norms a rescaling group needs of a weight read along its rows (the unit's input
weights) and along its columns (its output weights), and the dot products ``w.g`` on either side.
Each product of two float32 or float64 entries is formed in float64 (exact for float32 inputs)
and summed in float64, the sums reordered to vectorise (round-off only): the results agree with
an exact sum to about ``1e-16`` relative times the number of terms, more closely than torch's
float32 reductions do. Where torch's separate reductions read a shared tensor once per sum (and
write and reread an elementwise product), this reads each input once.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

FAST = {"reassoc", "contract"}
"""Sums may be reordered and multiply-adds fused (round-off only), so the loops vectorise; no
assumption about nan or inf is made."""

@numba.njit(cache=True, fastmath=FAST)
def _square_sums(x, rows, cols, do_cols):  # pragma: no cover - compiled
    R, C = x.shape
    for i in range(R):
        s = 0.0
        if do_cols:
            for j in range(C):
                a = np.float64(x[i, j])
                aa = a * a
                s += aa
                cols[0, j] += aa
        else:
            for j in range(C):
                a = np.float64(x[i, j])
                s += a * a
        rows[0, i] = s


@numba.njit(cache=True, fastmath=FAST)
def _pair_sums(x, y, rows, cols, do_cols):  # pragma: no cover - compiled
    R, C = x.shape
    for i in range(R):
        sxx = 0.0
        sxy = 0.0
        if do_cols:
            for j in range(C):
                a = np.float64(x[i, j])
                b = np.float64(y[i, j])
                aa = a * a
                ab = a * b
                sxx += aa
                sxy += ab
                cols[0, j] += aa
                cols[1, j] += ab
        else:
            for j in range(C):
                a = np.float64(x[i, j])
                b = np.float64(y[i, j])
                sxx += a * a
                sxy += a * b
        rows[0, i] = sxx
        rows[1, i] = sxy


def sums(x: torch.Tensor, y: torch.Tensor | None = None,
         cols: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(rows, cols)``: float64 tensors of shape ``(k, R)`` and ``(k, C)`` (``cols`` ``None``
    unless asked), ``k = 1`` (``x^2``) without ``y``, else ``k = 2`` (``x^2, x y``); see the
    module docstring. ``x`` and ``y``: contiguous, detached CPU matrices of one dtype, float32
    or float64 (read zero-copy through ``numpy()``)."""
    R, C = x.shape
    k = 1 if y is None else 2
    r = np.empty((k, R))
    c = np.zeros((k, C) if cols else (k, 1))
    if y is None:
        _square_sums(x.numpy(), r, c, cols)
    else:
        _pair_sums(x.numpy(), y.numpy(), r, c, cols)
    return torch.from_numpy(r), (torch.from_numpy(c) if cols else None)

"""The numba kernels behind `gaugedyn.adam._stability.simulate_blocks()` (first use only).

The exact 1-D Adam step of `gaugedyn.adam._stability.adam_step()` (stationary or
bias-corrected) with the spike detector's block statistics accumulated over every step
(`gaugedyn.adam._spikes`): per block of ``b`` steps the lower median, the maximum and the
minimum of ``|x|`` (the loss $|x|^n / n$ is increasing in ``|x|``, so its order statistics are
those of ``|x|``) and whether some step was ``nan`` or infinite. Runs come in groups sharing
``(a, c)``, their length and their block; the lanes of a group advance together (independent
dependency chains in one loop, so the processor overlaps them). `series_blocks()` reduces a
given series with the very same block reduction (`close_block()`), so the detector's
known-answer controls run through the code path of the map.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def select(vals, n, k):  # pragma: no cover
    """The ``(k + 1)``-th smallest of ``vals[:n]`` (no ``nan``), found in place by Hoare's
    selection (Wirth's form: partition around the current ``k``-th value, keep the side that holds
    ``k``): expected ``O(n)`` comparisons where a sort takes ``O(n log n)``, and the same value a
    sort puts at ``k`` (an order statistic is a value of the data, so nothing is rounded)."""
    lo, hi = 0, n - 1
    while lo < hi:
        pivot = vals[k]
        i, j = lo, hi
        while i <= j:
            while vals[i] < pivot:
                i += 1
            while pivot < vals[j]:
                j -= 1
            if i <= j:
                vals[i], vals[j] = vals[j], vals[i]
                i += 1
                j -= 1
        if j < k:
            lo = i
        if k < i:
            hi = j
    return vals[k]


@numba.njit(cache=True)
def close_block(buf, n, out, i, j, s, low):  # pragma: no cover
    """Reduce ``buf[:n]`` (one block of one lane, destroyed) into ``out[0..2, i, j, s]``: lower
    median (`select()`), maximum, minimum; ``out[3, i, j, s]`` is 1 when some value was ``nan``
    or ``+inf`` (those then read as ``low``, the bottom of the scale: divergence is judged
    apart)."""
    bad = 0.0
    top = -math.inf
    bottom = math.inf
    for k in range(n):
        v = buf[k]
        if not (v < math.inf):  # nan or +inf
            bad = 1.0
            v = low
            buf[k] = low
        if v > top:
            top = v
        if v < bottom:
            bottom = v
    out[0, i, j, s] = select(buf, n, (n - 1) // 2)
    out[1, i, j, s] = top
    out[2, i, j, s] = bottom
    out[3, i, j, s] = bad


@numba.njit(cache=True, error_model="numpy")
def blocks(x0, m0, v0, a, c, n, lr, eps, steps, size, bias, out):  # pragma: no cover
    """Fill ``out[q, :, g, l, s]`` with the statistics of ``|x_t|`` over block ``s`` (steps
    ``s size[g, q] .. (s + 1) size[g, q] - 1``) of lane ``l`` of group ``g``, for every block size
    ``size[g, q]`` of the group at once (one trajectory, several samplings); returns the blocks
    written per group and size (a last partial block is left out). Division follows numpy, as
    `gaugedyn.adam.simulate_losses()` does: ``0/0`` (``m`` and ``v`` both underflowed to
    zero once ``x`` has) is ``nan``, a diverged step, where numba's default raised
    ``ZeroDivisionError`` and failed the task."""
    Q, _, G, L, S = out.shape
    written = np.zeros((G, Q), dtype=np.int64)
    x, m, v = np.empty(L), np.empty(L), np.empty(L)
    buf = np.empty((Q, L, max(1, np.max(size))))
    k = np.zeros(Q, dtype=np.int64)
    for i in range(G):
        for j in range(L):
            x[j], m[j], v[j] = x0[i, j], m0[i, j], v0[i, j]
        ai, ci = a[i], c[i]
        b1, b2 = 1.0 - ai, 1.0 - ci
        p1, p2 = 1.0, 1.0
        k[:] = 0
        for _ in range(steps[i]):
            # both corrections are exactly 1.0 in float64 once p1, p2 <= 1e-17
            corrected = bias and (p1 > 1e-17 or p2 > 1e-17)
            if corrected:
                p1 *= b1
                p2 *= b2
            for j in range(L):
                xj = x[j]
                if n == 2.0:
                    g = xj
                else:
                    g = math.copysign(abs(xj) ** (n - 1.0), xj)
                mj = b1 * m[j] + ai * g
                vj = b2 * v[j] + ci * g * g
                m[j], v[j] = mj, vj
                if corrected:
                    xj = xj - lr * (mj / (1.0 - p1)) / (math.sqrt(vj / (1.0 - p2)) + eps)
                else:
                    xj = xj - lr * mj / (math.sqrt(vj) + eps)
                x[j] = xj
                for q in range(Q):
                    buf[q, j, k[q]] = abs(xj)
            for q in range(Q):
                k[q] += 1
                if k[q] == size[i, q]:
                    k[q] = 0
                    s = written[i, q]
                    if s < S:
                        for j in range(L):
                            close_block(buf[q, j], size[i, q], out[q], i, j, s, 0.0)
                        written[i, q] = s + 1
    return written


@numba.njit(cache=True)
def series_blocks(values, b, low, out):  # pragma: no cover
    """The block reduction of the map applied to a given series ``values`` (shape ``(T,)``),
    any quantity increasing with the loss (``low``: its bottom): ``out[:, 0, 0, s]`` for block
    ``s``."""
    S = out.shape[3]
    buf = np.empty(b)
    for s in range(S):
        for k in range(b):
            buf[k] = values[s * b + k]
        close_block(buf, b, out, 0, 0, s, low)

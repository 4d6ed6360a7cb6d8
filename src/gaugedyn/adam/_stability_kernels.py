"""The numba kernel behind :func:`gaugedyn.adam._stability.simulate_envelopes` (first use only).

The exact 1-D Adam step of :func:`gaugedyn.adam._stability.adam_step` (stationary or
bias-corrected), its ``|x|`` envelope taken over each ``stride`` steps. Runs come in groups
sharing ``(a, c)`` and their length; the lanes of a group advance together (independent
dependency chains in one loop, so the processor overlaps them).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def envelopes(x0, m0, v0, a, c, n, lr, eps, steps, stride, bias, out):  # pragma: no cover
    """Fill ``out[g, l, s]`` with ``max |x_t|`` over steps ``s stride_g .. (s + 1) stride_g - 1``
    of lane ``l`` of group ``g`` (``nan`` once ``x`` is ``nan``); returns the samples written
    per group."""
    G, L, S = out.shape
    written = np.zeros(G, dtype=np.int64)
    x, m, v = np.empty(L), np.empty(L), np.empty(L)
    peak = np.zeros(L)
    for i in range(G):
        for j in range(L):
            x[j], m[j], v[j], peak[j] = x0[i, j], m0[i, j], v0[i, j], 0.0
        ai, ci = a[i], c[i]
        b1, b2 = 1.0 - ai, 1.0 - ci
        p1, p2 = 1.0, 1.0
        k, s = 0, 0
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
                ax = abs(xj)
                if not ax <= peak[j]:  # also takes nan
                    peak[j] = ax
            k += 1
            if k == stride[i]:
                for j in range(L):
                    out[i, j, s] = peak[j]
                    peak[j] = 0.0
                s += 1
                k = 0
                if s == S:
                    break
        written[i] = s
    return written

"""Distances between two paths that no change of time can alter (clock experiment)."""

from __future__ import annotations

import numpy as np


def resample_path(x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """``n`` points equally spaced in arc length along the polyline ``(x, y)``."""
    P = np.stack([x, y], axis=1)
    seg = np.linalg.norm(np.diff(P, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] == 0.0:
        return np.repeat(P[:1], n, axis=0)
    u = np.linspace(0.0, s[-1], n)
    return np.stack([np.interp(u, s, P[:, 0]), np.interp(u, s, P[:, 1])], axis=1)


def hausdorff(P: np.ndarray, Q: np.ndarray) -> float:
    """Hausdorff distance between two point sets (rows; ``scipy.spatial``)."""
    from scipy.spatial.distance import directed_hausdorff

    return float(max(directed_hausdorff(P, Q)[0], directed_hausdorff(Q, P)[0]))


def frechet(P: np.ndarray, Q: np.ndarray) -> float:
    """Discrete Frechet distance between two polylines (rows in order; Eiter and Mannila's
    dynamic programme, one row of the coupling table at a time)."""
    d = np.linalg.norm(P[:, None, :] - Q[None, :, :], axis=-1)
    row = np.maximum.accumulate(d[0])
    for i in range(1, d.shape[0]):
        prev = row
        row = np.empty(d.shape[1])
        row[0] = max(prev[0], d[i, 0])
        best_prev = np.minimum(prev[1:], prev[:-1])
        for j in range(1, d.shape[1]):
            row[j] = max(d[i, j], min(best_prev[j - 1], row[j - 1]))
    return float(row[-1])

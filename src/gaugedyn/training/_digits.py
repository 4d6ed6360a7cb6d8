"""scikit-learn's digits, the one offline image data set of the package (nothing downloaded).

``load_digits`` returns the 1,797 shipped 8 x 8 images as rows of 64 pixels scaled to
``[0, 1]`` (the 4-bit intensities divided by 16) and their labels ``0..9``, in the order
scikit-learn ships them.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``X`` float64 of shape ``(1797, 64)`` with ``X = pixels / 16``, ``y`` int64
    of shape ``(1797,)``. Cached: the same arrays on every call (do not modify them)."""
    from sklearn.datasets import load_digits as sklearn_digits

    d = sklearn_digits()
    return (d.data / 16.0).astype(np.float64), d.target.astype(np.int64)

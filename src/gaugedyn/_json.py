"""One conversion of results to JSON, with one convention for non-finite numbers.

`plain()` turns numpy scalars and arrays (at any depth of dicts, lists and tuples) into Python
values; `strict()` does the same and writes non-finite floats as the strings ``"nan"``,
``"inf"`` and ``"-inf"``, so every JSON the package writes (``summary.json``, the result store,
``gaugedyn solve`` and ``gaugedyn train``) is strict JSON that keeps NaN apart from infinity.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def plain(x: Any) -> Any:
    """Numpy scalars and arrays to Python values (dict keys to strings), recursively."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def strict(x: Any) -> Any:
    """`plain()`, with non-finite floats as ``"nan"``, ``"inf"``, ``"-inf"``."""
    x = plain(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: strict(v) for k, v in x.items()}
    if isinstance(x, list):
        return [strict(v) for v in x]
    return x


def nulled(x: Any) -> tuple[Any, int]:
    """`plain()`, with every non-finite float as ``None`` (JSON ``null``), and how many
    there were; the writer states what ``null`` means where it uses this."""
    count = 0

    def walk(v: Any) -> Any:
        nonlocal count
        if isinstance(v, float) and not math.isfinite(v):
            count += 1
            return None
        if isinstance(v, dict):
            return {k: walk(w) for k, w in v.items()}
        if isinstance(v, list):
            return [walk(w) for w in v]
        return v

    return walk(plain(x)), count

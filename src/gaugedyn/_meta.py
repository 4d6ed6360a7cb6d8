"""Provenance written into every result: versions, platform and seed derivation."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from importlib import metadata
from typing import Any

import numpy as np

_PACKAGES = ("gaugedyn", "numpy", "scipy", "sympy", "torch", "matplotlib")


def versions() -> dict[str, str]:
    """Versions of Python, the platform and the scientific stack (``"absent"`` if missing)."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def task_seed(root_seed: int, *coordinates: Any) -> np.random.SeedSequence:
    """The seed of one task, derived from the root seed and the task's coordinates.

    The derivation hashes the coordinates (any JSON-serialisable values), so the stream a task
    receives never depends on execution order, executor or number of workers.
    """
    digest = hashlib.sha256(json.dumps(coordinates, sort_keys=True, default=str).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.SeedSequence(entropy=int(root_seed), spawn_key=tuple(words))


def integer_seed(seed: np.random.SeedSequence) -> int:
    """The one integer a ``SeedSequence`` gives the code that needs an integer seed (torch's
    ``manual_seed``, numba kernels, numpy's legacy seeding, the trainer's ``root_seed``): the top
    63 bits of its first 64-bit word, so the integer is non-negative in every signed 64-bit type."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def rng(root_seed: int, *coordinates: Any) -> np.random.Generator:
    """A numpy generator for one task (see :func:`task_seed`)."""
    return np.random.default_rng(task_seed(root_seed, *coordinates))

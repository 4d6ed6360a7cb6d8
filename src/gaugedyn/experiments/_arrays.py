"""``arrays.npz``: every array a run's figures are drawn from, checksummed in ``summary.json``.

The file is a numpy ``.npz`` archive (written with ``numpy.savez_compressed``, read with
``allow_pickle=False``) of numeric arrays named by the experiment's ``analyse``. The summary lists
each array's shape and dtype under ``arrays`` and the archive's SHA-256 under ``arrays_sha256``;
:func:`load_arrays` refuses an archive that does not match it.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np

from .._errors import InputError
from ._folders import ARRAYS, SUMMARY
from ._store import atomic_write
from ._summary import read_summary


def write_arrays(path: Path, arrays: dict[str, np.ndarray], summary: dict) -> None:
    """Write ``arrays`` to ``path`` and record their layout and checksum in ``summary``."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    data = buffer.getvalue()
    atomic_write(path, data)
    summary["arrays"] = {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()}
    summary["arrays_sha256"] = hashlib.sha256(data).hexdigest()


def load_arrays(run: str | Path, summary: dict | None = None) -> dict[str, np.ndarray]:
    """The stored arrays of a run folder, checked against the summary's checksum."""
    run = Path(run)
    summary = summary if summary is not None else read_summary(run)
    try:
        data = (run / ARRAYS).read_bytes()
    except OSError:
        raise InputError(f"{run}: no {ARRAYS} (the run did not complete its tasks)") from None
    if hashlib.sha256(data).hexdigest() != summary.get("arrays_sha256"):
        raise InputError(f"{run / ARRAYS}: does not match the checksum in {SUMMARY}")
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}

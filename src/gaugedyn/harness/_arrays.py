"""``arrays.npz``: every array a run's figures are drawn from, checksummed in ``summary.json``.

The file is a numpy ``.npz`` archive (written with ``numpy.savez_compressed``, read with
``allow_pickle=False``) of the arrays returned by the experiment's ``analyse``. The summary lists
each array's shape and dtype under ``arrays``, the archive's SHA-256 under ``arrays_sha256`` and
the schema version (`SCHEMA`) under ``arrays_schema``; `load_arrays()` refuses an
archive that does not match its checksum.

Schema (version 1). A key is a non-empty string without ``/`` or NUL (each array is one member
of the archive). Three forms have a meaning:

- ``caption_<figure>`` (`CAPTION_PREFIX`, `caption_key()`): the caption of figure
  ``<figure>``, a 0-d string array. Captions that quote measured numbers live with the arrays,
  so that ``plot`` (which sees only the arrays) and a redraw show the same caption;
  `caption_of()` reads one and `captions()` all; a figure listed without a caption gets
  its stored one in the summary;
- ``<group>__<field>`` (`FIELD_SEPARATOR`, `field_key()`, `split_key()`): field
  ``<field>`` of group ``<group>`` (for instance one task of a grid, ``char_gru__lag_share``); a
  group name never contains the separator;
- anything else: a plain array named by the experiment.

Every other value is numeric or boolean (``dtype=object`` is refused). Folders written before the
schema had a version use the same key forms and read unchanged.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._errors import InputError
from ._folders import ARRAYS, SUMMARY, read_summary
from ._store import atomic_write

SCHEMA = 1
CAPTION_PREFIX = "caption_"
FIELD_SEPARATOR = "__"
_KEY = re.compile(r"[^/\0]+")


def caption_key(figure: str) -> str:
    """The key of figure ``figure``'s caption: ``caption_<figure>``.

    Parameters
    ----------
    figure : str
        The figure's name, as `save_figure()` wrote it (no extension).

    Returns
    -------
    str
        The array key under which the figure's caption is stored.
    """
    return f"{CAPTION_PREFIX}{figure}"


def caption_array(text: str) -> np.ndarray:
    """A caption as it is stored: a 0-d string array.

    Parameters
    ----------
    text : str
        The caption (converted with ``str``).

    Returns
    -------
    numpy.ndarray
        A 0-d unicode array holding ``text``, the form the arrays' schema requires of a caption.
    """
    return np.array(str(text))


def caption_of(arrays: Mapping[str, np.ndarray], figure: str) -> str:
    """The caption stored for ``figure`` (``""`` when there is none).

    Parameters
    ----------
    arrays : Mapping[str, numpy.ndarray]
        A run's stored arrays (`load_arrays()`).
    figure : str
        The figure's name.

    Returns
    -------
    str
        The caption text; ``""`` when ``arrays`` holds no caption for ``figure``, or an empty one.
    """
    value = arrays.get(caption_key(figure), "")
    return str(np.asarray(value).item()) if np.size(value) else ""


def captions(arrays: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Every stored caption, by figure name."""
    return {
        k[len(CAPTION_PREFIX) :]: caption_of(arrays, k[len(CAPTION_PREFIX) :])
        for k in arrays
        if k.startswith(CAPTION_PREFIX)
    }


def field_key(group: str, field: str) -> str:
    """The key of ``field`` in ``group``: ``<group>__<field>``.

    Parameters
    ----------
    group : str
        The group's name: non-empty and without the separator ``__``.
    field : str
        The field's name: non-empty.

    Returns
    -------
    str
        ``<group>__<field>``, which `split_key()` splits back.

    Raises
    ------
    ValueError
        When ``group`` or ``field`` is empty or ``group`` holds ``__``.
    """
    if FIELD_SEPARATOR in group or not group or not field:
        raise ValueError(
            f"group {group!r} / field {field!r}: both non-empty, the group "
            f"without {FIELD_SEPARATOR!r}"
        )
    return f"{group}{FIELD_SEPARATOR}{field}"


def split_key(key: str) -> tuple[str | None, str]:
    """``(group, field)`` of a ``<group>__<field>`` key, ``(None, key)`` for any other key."""
    if key.startswith(CAPTION_PREFIX) or FIELD_SEPARATOR not in key.strip("_"):
        return None, key
    group, _, field = key.partition(FIELD_SEPARATOR)
    return (group, field) if group and field else (None, key)


def schema_problems(arrays: Mapping[str, np.ndarray]) -> list[str]:
    """What in ``arrays`` breaks the schema (an empty list when nothing does)."""
    problems = []
    for key, value in arrays.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            problems.append(f"array name {key!r} is empty or holds '/' or NUL")
        elif value.dtype == object:
            problems.append(f"array {key!r} has dtype object; use numbers")
        elif key.startswith(CAPTION_PREFIX) and (value.dtype.kind != "U" or value.ndim != 0):
            problems.append(f"caption {key!r} is not a 0-d string array (use caption_array)")
    return problems


def write_arrays(path: Path, arrays: dict[str, np.ndarray], summary: dict) -> None:
    """Write ``arrays`` to ``path`` and record their layout and checksum in ``summary``."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **cast(dict[str, Any], arrays))
    data = buffer.getvalue()
    atomic_write(path, data)
    summary["arrays"] = {
        k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()
    }
    summary["arrays_sha256"] = hashlib.sha256(data).hexdigest()
    summary["arrays_schema"] = SCHEMA


def load_arrays(run: str | Path, summary: dict | None = None) -> dict[str, np.ndarray]:
    """The stored arrays of a run folder, checked against the summary's checksum.

    Parameters
    ----------
    run : str or Path
        A run folder (holding ``summary.json`` and ``arrays.npz``).
    summary : dict, optional
        The run's summary, when already read; ``None`` reads it from the folder.

    Returns
    -------
    dict of str to numpy.ndarray
        Every stored array by name (loaded without pickles), captions included.

    Raises
    ------
    InputError
        When the folder has no ``arrays.npz`` (the run did not complete its tasks) or its
        SHA-256 differs from the summary's ``arrays_sha256``; reading the summary raises
        `InputError` for a folder without a readable ``summary.json``.
    """
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

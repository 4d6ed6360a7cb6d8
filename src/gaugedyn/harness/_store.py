"""A content-addressed, resumable store of finished tasks.

A task's key is ``sha256(canonical JSON of [experiment name, task, root seed, package version])``.
A record is two files under ``ROOT/<key[:2]>/``: ``<key>.npz`` (the result's arrays) and
``<key>.json`` (metadata: the task, its seed, the npz checksum, values that are not arrays). Each
file is written to a temporary name, flushed to disk and renamed into place, the npz first and the
json last, so the json is the commit mark: a record without it, or whose checksum does not match
on read, is discarded and its task recomputed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._json import plain

FORMAT = 1


class StoreError(TypeError):
    """A task result that cannot be stored (a value neither array-like nor JSON-serialisable)."""


def canonical_json(value: Any) -> str:
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def task_key(experiment: str, task: dict, root_seed: int, version: str | None = None) -> str:
    """The content address of one task: a hash of its full configuration and the version."""
    if version is None:
        from .. import __version__ as version
    payload = canonical_json([experiment, task, int(root_seed), version])
    return hashlib.sha256(payload.encode()).hexdigest()


def atomic_write(path: Path, data: bytes, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename (then fsync the
    folder, so the rename itself is durable, unless ``sync_dir`` is false)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync_dir:
        fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def encode_result(result: dict) -> tuple[bytes, dict]:
    """``(npz bytes, extras)``: array-like values go to the npz, the rest must be JSON."""
    if not isinstance(result, dict):
        raise StoreError(f"run_task returned {type(result).__name__}; expected a dict")
    arrays, names, extras = {}, {}, {}
    for i, (name, value) in enumerate(result.items()):
        if not isinstance(name, str):
            raise StoreError(f"result key {name!r} is not a string")
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            array = None
        if array is not None and array.dtype != object:
            arrays[f"a{i}"] = array
            names[f"a{i}"] = name
            continue
        try:
            extras[name] = json.loads(json.dumps(plain(value)))
        except (TypeError, ValueError):
            raise StoreError(
                f"result {name!r} of type {type(value).__name__} is neither an array nor JSON"
            ) from None
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue(), {"arrays": names, "extras": extras}


def decode_result(npz: bytes, layout: dict) -> dict:
    out: dict[str, Any] = {}
    with np.load(io.BytesIO(npz), allow_pickle=False) as f:
        for stored, name in layout["arrays"].items():
            array = f[stored]
            out[name] = array[()] if array.ndim == 0 else array
    out.update(layout["extras"])
    return out


class ResultStore:
    """Finished tasks under ``root``, addressed by :func:`task_key`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.discarded: list[str] = []

    def _paths(self, key: str) -> tuple[Path, Path]:
        folder = self.root / key[:2]
        return folder / f"{key}.npz", folder / f"{key}.json"

    def __contains__(self, key: str) -> bool:
        return self._paths(key)[1].exists()

    def keys(self) -> Iterator[str]:
        """Keys of committed records (their checksums are checked only on :meth:`load`)."""
        if self.root.is_dir():
            for path in sorted(self.root.glob("??/*.json")):
                yield path.stem

    def meta(self, key: str) -> dict | None:
        try:
            return json.loads(self._paths(key)[1].read_text())
        except (OSError, ValueError):
            return None

    def load(self, key: str) -> dict | None:
        """The stored result, or ``None`` if missing; a corrupt record is discarded."""
        npz_path, json_path = self._paths(key)
        if not json_path.exists():
            return None
        try:
            meta = json.loads(json_path.read_text())
            npz = npz_path.read_bytes()
            if meta.get("format") != FORMAT or meta.get("key") != key:
                raise ValueError("metadata does not describe this key")
            if hashlib.sha256(npz).hexdigest() != meta["sha256"]:
                raise ValueError("checksum mismatch")
            return decode_result(npz, meta["layout"])
        except Exception as err:
            self.discard(key, f"{type(err).__name__}: {err}")
            return None

    def discard(self, key: str, reason: str) -> None:
        print(f"store: discarding corrupt record {key[:12]} ({reason}); recomputing", file=sys.stderr)
        self.discarded.append(key)
        for path in self._paths(key)[::-1]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def save(self, key: str, result: dict, meta: dict) -> None:
        """Store ``result`` atomically (npz, then the json commit mark)."""
        npz, layout = encode_result(result)
        npz_path, json_path = self._paths(key)
        npz_path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "format": FORMAT,
            "key": key,
            "sha256": hashlib.sha256(npz).hexdigest(),
            "stored_at": time.time(),
            "layout": layout,
            **plain(meta),
        }
        atomic_write(npz_path, npz, sync_dir=False)  # the json's folder sync covers both
        atomic_write(json_path, json.dumps(record, sort_keys=True).encode())

    def clean_temporaries(self) -> int:
        """Remove temporary files left by processes that no longer run; return how many."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for path in self.root.glob("??/.*.tmp-*"):
            try:
                pid = int(path.name.rsplit(".tmp-", 1)[1].split("-")[0])
            except (IndexError, ValueError):
                continue
            if not _alive(pid):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
        return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True
